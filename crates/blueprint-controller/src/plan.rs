//! The brain of the Blueprint controller: from what the cluster says now (the Blueprint, its
//! stored revisions, its ClusterServiceVersions, the Blueprints it depends on) decide the one
//! next thing to do and the status that describes it. Pure: no cluster access, no clock.
//!
//! Every decision is re-derived from durable state, never from memory, so the controller may be
//! killed at any moment and pick up where it was:
//! - a revision starts by recording it in `status.history` first and then bumping
//!   `spec.revision` (a bookkeeping patch); a record ahead of `spec.revision` means the patch
//!   did not land, and it is redone before anything else;
//! - a revision's content is stored in its Secret before anything of it is applied;
//! - a CSV's status counts for a revision only when the CSV carries that revision's annotation
//!   and has observed its own generation;
//! - a rollback revision names the revision it restores (`restoredFrom`), and a target that was
//!   rolled back is held back (`status.heldBack`) until the intent changes.
//!
//! Some facts are expensive or need content the plan chooses (the CRD safety check of the
//! revision about to be applied, whether a rollback source can still run, the preview of a
//! plan a person is to approve); the plan asks for them with [`Action::Check`] and the
//! reconciler decides again with the fact filled in.

mod approval;
mod history;
mod intent;
mod outcome;
mod progress;
mod report;

use std::time::Duration;
use windlass_api::names::reasons;

use k8s_openapi::jiff::Timestamp;
use windlass_api::{
    BlueprintSpec, BlueprintStatus, CsvPhase,
    blueprint::{BlueprintPhase, PlanPreview},
    config::OperatorConfig,
};

use windlass_bundle::crd::safety::Assessment;

pub use report::Notice;

/// Everything the plan looks at.
#[derive(Clone, Debug)]
pub struct Input<'a> {
    /// The Blueprint's name, for messages.
    pub name: &'a str,
    pub generation: i64,
    pub spec: &'a BlueprintSpec,
    pub status: &'a BlueprintStatus,
    /// The revision Secrets that exist.
    pub stored: &'a [StoredRevision],
    /// The windlass ClusterServiceVersions this Blueprint created.
    pub csvs: &'a [ObservedCsv],
    /// The Blueprints of `spec.dependencies`, by package.
    pub dependencies: &'a [DependencyState],
    pub facts: &'a Facts,
    pub now: Timestamp,
}

/// One revision Secret, as far as the plan needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredRevision {
    pub revision: i64,
    pub csv_name: String,
    pub version: String,
    /// Decoded only for the current revision: what it was installed with.
    pub settings: Option<Settings>,
}

/// What a revision installs besides the bundle's name: compared with the spec to tell whether
/// the intent changed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Settings {
    pub digest: Option<String>,
    pub config: OperatorConfig,
    pub target_namespaces: Option<Vec<String>>,
}

/// A windlass ClusterServiceVersion of this Blueprint.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObservedCsv {
    pub name: String,
    /// The revision that last applied it (its `windlass.dev/revision` annotation).
    pub revision: Option<i64>,
    pub generation: Option<i64>,
    pub observed_generation: Option<i64>,
    pub phase: Option<CsvPhase>,
    pub reason: String,
    pub message: String,
    pub install_start: Option<Timestamp>,
    pub supersedes: Option<String>,
    /// It has a deletion timestamp.
    pub deleting: bool,
}

/// Where a dependency stands.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DependencyState {
    pub package: String,
    /// `None` when no Blueprint in the namespace installs the package yet.
    pub phase: Option<BlueprintPhase>,
    pub version: Option<String>,
}

/// Facts gathered on request ([`Action::Check`]).
#[derive(Clone, Debug, Default)]
pub struct Facts {
    pub validation: Option<Validation>,
    /// Whether the stored revision can be restored: its Secret reads, and the live CRDs still
    /// serve every API version its CSV owns.
    pub rollback_source: Option<(i64, Result<(), Refusal>)>,
    /// The digest of the current revision's plan (`windlass_preview::Binding`), known once its
    /// content was loaded: recorded on the revision, and compared with what runs to tell
    /// whether Manual approval has anything to approve.
    pub plan_digest: Option<String>,
    /// The preview of the current revision's plan, computed (or found stored) on request.
    pub preview: Option<PlanPreview>,
    /// The operand snapshot of an upgrade (by revision), taken or found before it applies.
    pub snapshot: Option<(i64, Result<Snapshotted, Refusal>)>,
    /// What a rollback (by revision) did with the operands: a summary, or why it could not.
    pub restore: Option<(i64, Result<String, Refusal>)>,
    /// A rehearsed rollback away from an upgrade (by revision): would it apply, and why not.
    pub rehearsal: Option<(i64, Result<String, Refusal>)>,
}

/// An upgrade's operands are kept (or an admin let it go without).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshotted {
    pub reason: &'static str,
    pub message: String,
}

/// The validate stage's verdict on the current revision's content.
#[derive(Clone, Debug, PartialEq)]
pub enum Validation {
    /// Safe to apply. `kept_crds`: CRDs a rollback leaves at their newer live definition.
    /// `verified_by`: the keys whose signatures on the bundle image counted.
    /// `image_rewrites`: what the ImageMirrorSets changed (the bundle's pull, the
    /// Deployments' images).
    /// `withdrawn`: the revision runs, and the policy that permitted it stopped granting some
    /// of its cluster-scoped objects, which the apply removes (why, for the condition).
    /// `findings`: what would block or break the upgrade (`UpgradeReady`), each to be
    /// accepted by name before it starts.
    Ready {
        kept_crds: Vec<String>,
        verified_by: Vec<String>,
        image_rewrites: Vec<windlass_api::ImageRewrite>,
        withdrawn: Option<Refusal>,
        findings: Vec<windlass_preview::readiness::Finding>,
    },
    /// The content cannot be read now (catalog not served, registry down, Secret unreadable).
    Unavailable(String),
    /// The bundle cannot be installed as shipped (for example an API with no mechanical move).
    Invalid(String),
    /// Replacing the live CRDs would lose data or invalidate existing objects: the findings as
    /// a reader of the Blueprint's namespace may see them (objects elsewhere only counted).
    UnsafeCrds(Assessment),
    /// The content is not what a trusted publisher shipped: a stored revision fails its seal
    /// (written by someone other than windlass), or the bundle image's signatures do not meet
    /// the TrustPolicies.
    Untrusted(Refusal),
    /// The namespace's InstallPolicies do not permit this install (install mode, target
    /// namespaces, catalog, package or cluster-scoped objects).
    Refused(Refusal),
}

/// Why something may not go ahead, in condition form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub reason: &'static str,
    pub message: String,
}

/// The plan's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub action: Action,
    /// The whole status as it should be after this step.
    pub status: BlueprintStatus,
    /// Bookkeeping to merge-patch into the spec after the status is written.
    pub bookkeeping: Option<Bookkeeping>,
    /// Revision Secrets to delete (beyond the history limit, never the protected ones).
    pub prune_revisions: Vec<i64>,
    /// Events worth telling a person, from the difference between the old and new status.
    pub notes: Vec<Notice>,
    pub requeue: Duration,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Write the status (and bookkeeping); nothing to apply.
    Record,
    /// Gather this fact and decide again; nothing is written this round.
    Check(Need),
    /// Apply the current revision, then write the status.
    Apply(ApplyPlan),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Need {
    /// Read the content of the current revision and run the validate stage on it.
    Validate(ContentRequest),
    /// Check that this stored revision can be restored.
    RollbackSource { revision: i64 },
    /// Preview the plan of the current revision (its content was validated in this round).
    Preview(Box<PreviewRequest>),
    /// Snapshot the custom resources of the CSV of revision `base` (which runs) before
    /// revision `revision` applies; one already taken for `revision` stands.
    Snapshot { revision: i64, base: i64 },
    /// Put the custom resources back to the snapshot taken while revision `base` ran, now that
    /// the rollback `revision` runs `base`'s CSV again (idempotent: only differing specs are
    /// written).
    RestoreOperands { revision: i64, base: i64 },
    /// Rehearse a rollback from revision `revision` to `base`: check `base` could run on the
    /// live CRDs and dry-run its operand restore.
    Rehearse { revision: i64, base: i64 },
}

/// What a plan preview compares and tells.
#[derive(Clone, Debug, PartialEq)]
pub struct PreviewRequest {
    /// What the apply stage would do with the revision.
    pub apply: ApplyPlan,
    pub kind: windlass_preview::PlanKind,
    /// The version whose objects run now (the newest revision before this one that started
    /// applying), when one does.
    pub running: Option<RunningRevision>,
    /// The newest revision before this one: what changed is told against its plan.
    pub previous: Option<i64>,
    /// The revision's reason, first of the reasons the plan gives.
    pub reason: String,
    /// List the live objects edited out of band since the running revision applied them (a
    /// rollback overwrites them).
    pub drift: bool,
}

/// A revision whose objects are live.
#[derive(Clone, Debug, PartialEq)]
pub struct RunningRevision {
    pub revision: i64,
    pub csv_name: String,
    pub version: String,
}

/// Which content a revision installs and how its CRDs are treated.
#[derive(Clone, Debug, PartialEq)]
pub struct ContentRequest {
    pub revision: i64,
    pub csv_name: String,
    /// Where the content comes from when the revision's own Secret does not exist yet.
    pub source: Source,
    pub crds: CrdPolicy,
    /// The revision started applying: its objects run, so a policy that stopped granting part
    /// of it withdraws that part (or holds it) instead of refusing it.
    pub running: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// The catalog, pinned by digest; the spec's settings go with it.
    Catalog {
        catalog: Option<String>,
        csv_name: String,
        digest: Option<String>,
    },
    /// A stored revision (a rollback reads only Secrets), with the settings it was installed with.
    Stored { revision: i64 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrdPolicy {
    /// Apply the bundle's CRDs (after the safety check).
    Apply,
    /// A rollback: CRDs that exist stay at their newer definition; missing ones are created.
    KeepLive,
}

/// What applying the current revision involves besides its content.
#[derive(Clone, Debug, PartialEq)]
pub struct ApplyPlan {
    pub content: ContentRequest,
    /// `spec.supersedes` of the revision's CSV.
    pub supersedes: Option<String>,
    /// CSVs whose `spec.supersedes` names the revision's CSV: cleared first, so no two CSVs
    /// supersede each other.
    pub clear_supersedes: Vec<String>,
    /// CSVs of this Blueprint that neither run nor hand over anything any more.
    pub delete_csvs: Vec<String>,
}

/// The spec fields the Blueprint controller owns (a JSON merge patch, never an apply, so the
/// Subscription's apply never removes them).
pub use windlass_api::BlueprintBookkeeping as Bookkeeping;

/// Decides the next step (see the module documentation for the rules), then renders the
/// status that describes it.
pub fn decide(input: &Input<'_>) -> Decision {
    report::render(input, plan(input))
}

/// What to do next, from the input alone.
fn plan(input: &Input<'_>) -> outcome::Outcome {
    if let Some(newest) = history::unlanded(input) {
        return history::redo_bookkeeping(input, &newest);
    }
    let mut changes = outcome::Changes::default();
    let current = history::current(input);
    match intent::resolve(input, current.as_ref()) {
        intent::Intent::Waiting(refusal) => return progress::waiting_for_target(changes, refusal),
        intent::Intent::Start(start) => match progress::admit(input, &start) {
            progress::Admission::Go => return progress::begin(input, changes, start, None),
            progress::Admission::Check(need) => return outcome::Outcome::Check(need),
            // A refused rollback keeps what runs.
            progress::Admission::Refused(refusal) => {
                progress::refuse_rollback(&mut changes, refusal);
            }
        },
        intent::Intent::Refuse(refusal) => progress::refuse_rollback(&mut changes, refusal),
        intent::Intent::Continue { held } => {
            progress::clear_settled_refusal(input, &mut changes);
            if !held {
                // The spec moved on from the target that was held back.
                changes.held_back = outcome::HeldBackChange::Clear;
            }
        }
    }
    match current {
        Some(current) => progress::execute(input, changes, current),
        // Continue and Refuse only come with a current revision.
        None => progress::waiting_for_target(
            changes,
            Refusal {
                reason: reasons::blueprint::NO_REVISION,
                message: "no revision recorded yet".into(),
            },
        ),
    }
}

impl Input<'_> {
    /// The newest stored revision of `csv_name` numbered below `before`.
    fn newest_stored(&self, csv_name: &str, before: i64) -> Option<&StoredRevision> {
        self.stored
            .iter()
            .filter(|s| s.csv_name == csv_name && s.revision < before)
            .max_by_key(|s| s.revision)
    }
}

#[cfg(test)]
mod tests;
