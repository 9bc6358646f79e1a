//! Blueprint: the resolved, recorded plan for one package, with its revision history.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    condition::{Condition, conditions_schema},
    config::{Approval, OperatorConfig},
    subscription::CrdDeletionPolicy,
};

/// The plan for one operator package: which CSV should be installed (`clusterServiceVersionName`),
/// what ran before it (`oldVersion`), the dependency closure, and every revision applied.
/// Setting `clusterServiceVersionName` back to `oldClusterServiceVersionName` is a manual
/// rollback.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "windlass.dev",
    version = "v1alpha1",
    kind = "Blueprint",
    namespaced,
    status = "BlueprintStatus",
    shortname = "bp",
    category = "windlass",
    doc = "The resolved, recorded plan for one operator package: target CSV, old version, dependencies and revision history.",
    printcolumn(name = "Package", type_ = "string", json_path = ".spec.package"),
    printcolumn(name = "Version", type_ = "string", json_path = ".status.version"),
    printcolumn(name = "Old Version", type_ = "string", json_path = ".spec.oldVersion"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    printcolumn(
        name = "Catalog",
        type_ = "string",
        json_path = ".spec.bundle.catalog",
        priority = "1"
    ),
    printcolumn(
        name = "Approval",
        type_ = "string",
        json_path = ".spec.approval",
        priority = "1"
    ),
    printcolumn(
        name = "Revision",
        type_ = "integer",
        json_path = ".spec.revision",
        priority = "1"
    ),
    printcolumn(
        name = "Plan",
        type_ = "string",
        json_path = ".status.preview.digest",
        priority = "1"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct BlueprintSpec {
    pub package: String,
    /// The target: the CSV that should be installed.
    #[serde(rename = "clusterServiceVersionName")]
    pub cluster_service_version_name: String,
    /// Where the target's bundle comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<ResolvedBundle>,
    /// The semver version of the last revision that Succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_version: Option<String>,
    /// The CSV name of the last revision that Succeeded.
    #[serde(
        default,
        rename = "oldClusterServiceVersionName",
        skip_serializing_if = "Option::is_none"
    )]
    pub old_cluster_service_version_name: Option<String>,
    /// Counts the plans this Blueprint has carried; each new target is a new revision. Set by
    /// the Blueprint controller.
    // Left out when zero (and `approved`, `force` when false) so that an apply built from this
    // type never takes these fields over from the controller or from people.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub revision: i64,
    #[serde(default)]
    pub approval: Approval,
    /// With Manual approval, the plan waits in RequiresApproval until it is approved; reset when
    /// a new revision starts. `true` alone approves the plan `status.preview` showed when the
    /// controller first saw it (recorded in `status.preview.approved`); a plan that changes
    /// after that waits again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approved: bool,
    /// Approves exactly this plan (`status.preview.digest`, `sha256:...`): the revision is
    /// applied only while its plan has this digest. Takes precedence over `approved`; reset
    /// when a new revision starts. `windlass approve` sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_plan: Option<String>,
    /// Compute and keep a plan preview for every revision even when approval is Automatic
    /// (it is then recorded, not waited on). Manual approval always previews.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preview: bool,
    /// Allow a rollback the rules refuse (across a minor or major version); recorded in history.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
    /// The `UpgradeReady` findings a person accepts by name (`MinKubeVersion`,
    /// `PodDisruptionBudget/<namespace>/<name>`, `APINoLongerServed/<crd>/<version>`): the
    /// upgrade goes ahead despite them, and its history entry records them. Reset when a new
    /// revision starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_findings: Vec<String>,
    /// Bundles this one needs, installed first, in dependency order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<ResolvedBundle>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_namespaces: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "OperatorConfig::is_empty")]
    pub config: OperatorConfig,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline_seconds: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automatic_rollback: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_limit: Option<i64>,
    /// What happens to the CRDs this Blueprint applied when it is deleted (copied from the
    /// Subscription). Custom resources are never deleted.
    #[serde(default)]
    pub crd_deletion_policy: CrdDeletionPolicy,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// One bundle the resolver chose, pinned to where it came from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedBundle {
    pub package: String,
    #[serde(rename = "clusterServiceVersionName")]
    pub cluster_service_version_name: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Content digest (`sha256:...`) the bundle was resolved at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum BlueprintPhase {
    Pending,
    RequiresApproval,
    Installing,
    Succeeded,
    Failed,
    RollingBack,
    RolledBack,
}

/// One step of plan execution, in order: CRDs, other objects, the CSV.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanStep {
    pub name: String,
    /// `Pending`, `InProgress`, `Done`, `Blocked` or `Failed`.
    pub status: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RevisionOutcome {
    InProgress,
    Completed,
    Failed,
    /// Failed, then undone by the rollback revision that followed it.
    RolledBack,
    /// Replaced by a newer target before it completed.
    Superseded,
}

/// One revision as `status.history` lists it; its content is stored in the cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevisionRecord {
    pub revision: i64,
    pub version: String,
    #[serde(rename = "clusterServiceVersionName")]
    pub cluster_service_version_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// When windlass began applying it (empty while it waits for dependencies or approval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    pub outcome: RevisionOutcome,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// True when the rules refused this move and `force` allowed it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forced: bool,
    /// The TrustPolicy keys (`<policy>/<key>`) whose signatures on the bundle image counted
    /// when its content was first read; empty when no rule covers it, it was unsigned and only
    /// reported, or it comes from the built-in catalog.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verified_by: Vec<String>,
    /// Set on a rollback: the earlier revision whose stored content this one re-installs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored_from: Option<i64>,
    /// What the ImageMirrorSets changed for this revision: the bundle image when it was
    /// pulled from a mirror, and each image its Deployments run from one. Decided when the
    /// revision's content is first read, kept with it, and the same on every apply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_rewrites: Vec<crate::mirror::ImageRewrite>,
    /// The digest of the plan this revision applies: its content, install settings and the
    /// identity it is installed as (recorded when it starts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    /// The plan digest a person approved, when Manual approval let this revision run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_plan: Option<String>,
    /// The `UpgradeReady` findings a person accepted for this revision to run, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_findings: Vec<String>,
}

/// The plan of the newest revision, as a person approving it needs to find it: its digest
/// and a short summary. The whole plan (every object's field-level diff, the RBAC and images
/// that change, the CRD verdicts, out-of-band edits a rollback overwrites) is kept in a sealed
/// Secret next to the revision's own (`windlass plan` prints it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanPreview {
    /// The revision this plan is for.
    pub revision: i64,
    /// `sha256:...` over what the revision applies and as whom; what approving names.
    pub digest: String,
    /// One paragraph: the move, objects created, changed and deleted, RBAC gained and lost,
    /// images and CRDs that change, and anything refused.
    pub summary: String,
    /// What changed since the plan before it (an earlier revision's, or this revision's
    /// plan shown earlier).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub changes: String,
    /// The Secret (in this namespace) holding the whole plan.
    pub secret: String,
    /// `sha256:...` of the stored plan document, so a reader can tell it is the plan windlass
    /// computed.
    pub checksum: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub computed_time: Option<Time>,
    /// The plan digest a bare `spec.approved: true` was bound to when the controller saw it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved: Option<String>,
}

/// A target that failed and was rolled back automatically. It is not tried again until the
/// bundle's digest changes or someone changes the Blueprint (a `metadata.generation` above
/// `generation`), so a broken version does not flap between install and rollback.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeldBack {
    #[serde(rename = "clusterServiceVersionName")]
    pub cluster_service_version_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// The Blueprint's generation once the rollback was recorded.
    pub generation: i64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlueprintStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<BlueprintPhase>,
    /// The version of the CSV now installed or being installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan: Vec<PlanStep>,
    /// Newest first, pruned to the history limit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<RevisionRecord>,
    /// The target that failed and is not retried while the Blueprint's intent is unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_back: Option<HeldBack>,
    /// The plan of the newest revision, when one was computed (Manual approval, or
    /// `spec.preview`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<PlanPreview>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "conditions_schema")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// The part of a Blueprint's spec its Subscription owns: what the Subscription controller
/// server-side applies (as `spec`) and compares before applying. The Blueprint controller's
/// [`BlueprintBookkeeping`] and a person's `approved` / `force` are not here, so an apply can
/// neither reset nor claim them. Empty values are left out, as the live object shows them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlueprintIntent {
    pub package: String,
    /// Left out while a person pins the target, so the apply neither changes it nor takes it
    /// back.
    #[serde(
        default,
        rename = "clusterServiceVersionName",
        skip_serializing_if = "Option::is_none"
    )]
    pub cluster_service_version_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<ResolvedBundle>,
    pub approval: Approval,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<ResolvedBundle>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_namespaces: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "OperatorConfig::is_empty")]
    pub config: OperatorConfig,
    /// Left out when false, as the live object shows it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preview: bool,
    pub progress_deadline_seconds: i64,
    pub automatic_rollback: bool,
    pub history_limit: i64,
    pub crd_deletion_policy: CrdDeletionPolicy,
}

impl BlueprintIntent {
    /// The intent a live Blueprint carries, for comparison with the desired one. An empty
    /// `targetNamespaces` list reads as absent, as the apply sends it. `with_target` false
    /// leaves the target out (it is not the Subscription's while a person pins it).
    pub fn of(spec: &BlueprintSpec, with_target: bool) -> BlueprintIntent {
        BlueprintIntent {
            package: spec.package.clone(),
            cluster_service_version_name: with_target
                .then(|| spec.cluster_service_version_name.clone()),
            bundle: spec.bundle.clone(),
            approval: spec.approval,
            dependencies: spec.dependencies.clone(),
            target_namespaces: spec
                .target_namespaces
                .clone()
                .filter(|namespaces| !namespaces.is_empty()),
            config: spec.config.clone(),
            preview: spec.preview,
            progress_deadline_seconds: spec
                .progress_deadline_seconds
                .unwrap_or(crate::config::DEFAULT_PROGRESS_DEADLINE_SECONDS),
            automatic_rollback: spec.automatic_rollback.unwrap_or(true),
            history_limit: spec
                .history_limit
                .unwrap_or(crate::config::DEFAULT_HISTORY_LIMIT),
            crd_deletion_policy: spec.crd_deletion_policy,
        }
    }
}

/// What the Blueprint controller records in its own spec as revisions start and complete,
/// sent as a merge patch: `None` clears a field (it serialises as `null`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlueprintBookkeeping {
    pub revision: i64,
    pub old_version: Option<String>,
    #[serde(rename = "oldClusterServiceVersionName")]
    pub old_cluster_service_version_name: Option<String>,
    /// `Some(false)` when a new revision resets a person's approval; otherwise not sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved: Option<bool>,
    /// `Some(None)` (sent as `null`) clears an approved plan digest with the approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[allow(clippy::option_option)]
    pub approved_plan: Option<Option<String>>,
    /// `Some(None)` (sent as `null`) clears the findings a person accepted, with the approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[allow(clippy::option_option)]
    pub accepted_findings: Option<Option<Vec<String>>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_intent_of_a_live_spec_reads_as_the_apply_sends_it() {
        let spec = BlueprintSpec {
            package: "db".into(),
            cluster_service_version_name: "db.v1".into(),
            target_namespaces: Some(Vec::new()),
            revision: 3,
            approved: true,
            ..BlueprintSpec::default()
        };
        let intent = BlueprintIntent::of(&spec, true);
        assert_eq!(
            intent.cluster_service_version_name.as_deref(),
            Some("db.v1")
        );
        assert_eq!(intent.target_namespaces, None);
        assert_eq!(intent.progress_deadline_seconds, 600);
        assert!(intent.automatic_rollback);
        let json = serde_json::to_value(&intent).unwrap();
        // Neither the controller's bookkeeping nor a person's approval is ever sent.
        assert!(json.get("revision").is_none() && json.get("approved").is_none());
        assert!(json.get("targetNamespaces").is_none() && json.get("config").is_none());
        assert_eq!(
            BlueprintIntent::of(&spec, false).cluster_service_version_name,
            None
        );
    }

    #[test]
    fn bookkeeping_clears_with_null_and_resets_approval_only_when_asked() {
        let patch = serde_json::to_value(BlueprintBookkeeping {
            revision: 2,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            patch,
            serde_json::json!({"revision": 2, "oldVersion": null, "oldClusterServiceVersionName": null})
        );
        let reset = serde_json::to_value(BlueprintBookkeeping {
            approved: Some(false),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(reset["approved"], false);
    }
}
