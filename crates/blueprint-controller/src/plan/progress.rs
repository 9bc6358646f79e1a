//! Moving the current revision along: record a new one, wait for what it needs, apply it,
//! judge its CSV against the progress deadline, and roll back when it fails.

use std::time::Duration;
use windlass_api::names::{conditions, reasons};

use k8s_openapi::{
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::{SignedDuration, Timestamp},
};
use windlass_api::{
    CsvPhase,
    blueprint::{BlueprintPhase, HeldBack, RevisionOutcome, RevisionRecord},
    condition::ConditionStatus,
    config::DEFAULT_PROGRESS_DEADLINE_SECONDS,
};
use windlass_resolver::rollback::{RollbackReason, RollbackRequest, check_rollback};

use super::{
    ApplyPlan, ContentRequest, CrdPolicy, Input, Need, ObservedCsv, Refusal, Source, Validation,
    approval::{self, Gate},
    history,
    intent::{self, Start, StartKind},
    outcome::{Changes, HeldBackChange, Outcome, PreviewChange, Stage, Standing, StatusUpdate},
};
use windlass_bundle::crd::safety as crd_safety;

mod operands;
mod readiness;
mod validation;
mod verdict;

use validation::{not_permitted, unsafe_crds, untrusted, validated};
use verdict::{Verdict, describe_csv, judge, reporting_csv, until};

/// Right after a write of our own: its watch event usually comes first anyway.
const SOON: Duration = Duration::from_secs(1);
/// Waiting on something a watch reports (dependencies); a safety net only.
const WAITING: Duration = Duration::from_secs(60);
/// Waiting on something no watch reports (catalog content, existing custom resources).
const RETRY: Duration = Duration::from_secs(30);
/// Waiting for a person.
const APPROVAL: Duration = Duration::from_secs(300);
/// Longest gap between looks while a CSV installs (its changes wake us sooner).
const PROGRESS: Duration = Duration::from_secs(60);
/// Re-applying a settled revision repairs drift.
const STEADY: Duration = Duration::from_secs(600);

/// Whether a new revision may be recorded now.
pub(super) enum Admission {
    Go,
    /// Find out first whether the rollback's source can run.
    Check(Need),
    Refused(Refusal),
}

/// A rollback is recorded only once its source is known to be restorable.
pub(super) fn admit(input: &Input<'_>, start: &Start) -> Admission {
    let StartKind::Restore { from, .. } = start.kind else {
        return Admission::Go;
    };
    match &input.facts.rollback_source {
        Some((revision, Ok(()))) if *revision == from => Admission::Go,
        Some((revision, Err(refusal))) if *revision == from => Admission::Refused(refusal.clone()),
        _ => Admission::Check(Need::RollbackSource { revision: from }),
    }
}

/// Nothing to install: the Blueprint waits, saying why.
pub(super) fn waiting_for_target(mut changes: Changes, refusal: Refusal) -> Outcome {
    changes.set_condition(
        conditions::blueprint::READY,
        false,
        refusal.reason,
        refusal.message,
    );
    let standing = Standing::new(BlueprintPhase::Pending, None, Stage::NoRevision);
    changes.show(standing, None, WAITING)
}

/// Once the spec no longer asks for a refused rollback, the refusal is history.
pub(super) fn clear_settled_refusal(input: &Input<'_>, changes: &mut Changes) {
    let refused = input.status.conditions.iter().any(|c| {
        c.type_ == conditions::blueprint::ROLLBACK_ALLOWED && c.status == ConditionStatus::False
    });
    if refused {
        changes.remove_condition(conditions::blueprint::ROLLBACK_ALLOWED);
    }
}

/// Records a new revision (admitted): the status first, then the bookkeeping patch.
pub(super) fn begin(
    input: &Input<'_>,
    mut changes: Changes,
    start: Start,
    held: Option<HeldBack>,
) -> Outcome {
    let restored_from = match start.kind {
        StartKind::Restore { from, .. } => Some(from),
        StartKind::Catalog => None,
    };
    let revision = history::next_revision(input);
    let now = Time(input.now);
    let newest = changes
        .apply_to_history(&input.status.history)
        .into_iter()
        .next();
    if let Some(mut previous) = newest
        && previous.outcome == RevisionOutcome::InProgress
    {
        previous.outcome = RevisionOutcome::Superseded;
        previous.completion_time = Some(now);
        previous.reason = format!("superseded by revision {revision}: {}", start.reason);
        changes.update_record(previous);
    }
    let record = RevisionRecord {
        revision,
        version: start.version.clone(),
        cluster_service_version_name: start.csv_name.clone(),
        digest: start.digest.clone(),
        started_time: None,
        completion_time: None,
        outcome: RevisionOutcome::InProgress,
        reason: start.reason.clone(),
        forced: start.forced,
        restored_from,
        verified_by: Vec::new(),
        image_rewrites: Vec::new(),
        plan: None,
        approved_plan: None,
        accepted_findings: Vec::new(),
    };
    changes.record_new(record.clone());
    // A plan shown, and an approval given, were another revision's.
    changes.preview = PreviewChange::Clear;
    changes.remove_condition(conditions::blueprint::PLAN_APPROVED);
    changes.held_back = match held {
        Some(held) => HeldBackChange::Hold(held),
        None => HeldBackChange::Clear,
    };
    let phase = match start.kind {
        StartKind::Restore { automatic, .. } => {
            let reason = match (start.forced, automatic) {
                (true, _) => reasons::blueprint::FORCED,
                (false, true) => reasons::blueprint::AUTOMATIC_ROLLBACK,
                (false, false) => reasons::blueprint::ALLOWED,
            };
            changes.set_condition(
                conditions::blueprint::ROLLBACK_ALLOWED,
                true,
                reason,
                start.reason.clone(),
            );
            BlueprintPhase::RollingBack
        }
        StartKind::Catalog => {
            changes.remove_condition(conditions::blueprint::ROLLBACK_ALLOWED);
            changes.remove_condition(conditions::blueprint::CRDS_KEPT);
            changes.remove_condition(conditions::blueprint::OPERANDS_SNAPSHOTTED);
            changes.remove_condition(conditions::blueprint::OPERANDS_RESTORED);
            changes.remove_condition(conditions::blueprint::UPGRADE_READY);
            BlueprintPhase::Pending
        }
    };
    let shown = match start.kind {
        StartKind::Restore { .. } => start.version.clone(),
        StartKind::Catalog => shown_version(input, &record),
    };
    let history = changes.apply_to_history(&input.status.history);
    let bookkeeping = history::bookkeeping_for(input, &history, &record);
    Outcome::Write(Box::new(StatusUpdate {
        apply: None,
        standing: Some(Standing::new(phase, Some(&shown), Stage::Recorded)),
        changes,
        bookkeeping: Some(bookkeeping),
        requeue: SOON,
    }))
}

/// Carries the current revision one step further.
pub(super) fn execute(input: &Input<'_>, changes: Changes, current: RevisionRecord) -> Outcome {
    match current.outcome {
        RevisionOutcome::InProgress => in_progress(input, changes, current),
        RevisionOutcome::Completed => completed(input, changes, current),
        RevisionOutcome::Failed => failed(input, changes, current),
        // Only a hand-edited spec.revision points at one of these; nothing runs for it.
        RevisionOutcome::RolledBack | RevisionOutcome::Superseded => {
            let why = current.reason.clone();
            stay_failed(input, changes, &current, &why, None)
        }
    }
}

fn in_progress(input: &Input<'_>, mut changes: Changes, current: RevisionRecord) -> Outcome {
    let restoring = current.restored_from.is_some();
    let version_text = current.version.clone();
    let version = Some(version_text.as_str());
    // Until something of it is applied, what runs is still the version before it.
    let waiting_text = shown_version(input, &current);
    let waiting = Some(waiting_text.as_str());
    // A rollback goes back to something that ran here: it waits for no dependency.
    if current.started_time.is_none()
        && !restoring
        && let Some(why) = waiting_for_dependencies(input)
    {
        let standing = Standing::new(BlueprintPhase::Pending, waiting, Stage::Dependencies(why));
        return changes.show(standing, None, WAITING);
    }
    let Some(validation) = &input.facts.validation else {
        return Outcome::Check(Need::Validate(content_request(input, &current)));
    };
    let started = current.started_time.is_some();
    match validation {
        Validation::Invalid(message) => {
            let why = format!("the bundle cannot be installed: {message}");
            return fail(input, changes, current, &why);
        }
        Validation::Unavailable(message) if !started => {
            let message = format!("bundle content unavailable: {message}");
            let standing = Standing::new(BlueprintPhase::Pending, waiting, Stage::Content(message));
            return changes.show(standing, None, RETRY);
        }
        Validation::UnsafeCrds(violations) if !started => {
            // Whoever is asked to approve sees the plan and its CRD verdict either way.
            let request = approval::request(input, &current, apply_plan(input, &current));
            if let Some(need) = approval::preview_blocked(input, &current, request, &mut changes) {
                return Outcome::Check(need);
            }
            let summary = unsafe_crds(&mut changes, violations);
            let standing = Standing::new(BlueprintPhase::Pending, waiting, Stage::Blocked(summary));
            return changes.show(standing, None, RETRY);
        }
        // Never failed (a failure could roll back): held until an admin looks.
        Validation::Untrusted(refusal) if !started => {
            untrusted(&mut changes, refusal);
            let stage = Stage::Blocked(refusal.message.clone());
            let standing = Standing::new(BlueprintPhase::Pending, waiting, stage);
            return changes.show(standing, None, RETRY);
        }
        Validation::Refused(refusal) if !started => {
            not_permitted(&mut changes, refusal);
            let stage = Stage::Blocked(refusal.message.clone());
            let standing = Standing::new(BlueprintPhase::Pending, waiting, stage);
            return changes.show(standing, None, RETRY);
        }
        _ => {}
    }
    let mut approved = None;
    let mut accepted = Vec::new();
    if !started {
        match readiness::judge(input, &mut changes, validation, &current) {
            readiness::Readiness::Go(names) => accepted = names,
            readiness::Readiness::Held(message) => {
                let standing =
                    Standing::new(BlueprintPhase::Pending, waiting, Stage::Blocked(message));
                return changes.show(standing, None, RETRY);
            }
        }
        let request = approval::request(input, &current, apply_plan(input, &current));
        match approval::gate(input, &current, request, &mut changes) {
            Gate::Preview(request) => return Outcome::Check(Need::Preview(request)),
            Gate::Wait(refusal) => {
                let stage = Stage::Approval(refusal.message);
                let standing = Standing::new(BlueprintPhase::RequiresApproval, waiting, stage);
                return changes.show(standing, None, APPROVAL);
            }
            Gate::Go { approved: by } => approved = by,
        }
        // Approved: what the running version's custom resources are is kept first.
        match operands::before_upgrade(input, &mut changes, &current) {
            operands::Snapshot::Ready => {}
            operands::Snapshot::Ask(need) => return Outcome::Check(need),
            operands::Snapshot::Blocked(message) => {
                let standing =
                    Standing::new(BlueprintPhase::Pending, waiting, Stage::Blocked(message));
                return changes.show(standing, None, RETRY);
            }
        }
    }
    let (apply, crds) = validated(&mut changes, validation, restoring);
    let mut record = current;
    if record.started_time.is_none() {
        record.started_time = Some(Time(input.now));
        record.plan = input.facts.plan_digest.clone();
        record.approved_plan = approved;
        record.accepted_findings = accepted;
        if let Validation::Ready {
            verified_by,
            image_rewrites,
            ..
        } = validation
        {
            record.verified_by = verified_by.clone();
            record.image_rewrites = image_rewrites.clone();
        }
        changes.update_record(record.clone());
    }
    let apply = apply.then(|| apply_plan(input, &record));
    match judge(input, &record) {
        Verdict::Succeeded(csv) => {
            let asked = operands::after_rollback(input, &mut changes, &record)
                .or_else(|| operands::rehearse(input, &mut changes, &record));
            if let Some(need) = asked {
                return Outcome::Check(need);
            }
            complete(input, &mut changes, &record);
            let phase = settled_phase(input, &record);
            let standing = Standing::new(phase, version, Stage::Done { crds, csv });
            changes.show(standing, apply, STEADY)
        }
        Verdict::Failed(why) => fail(input, changes, record, &why),
        Verdict::Running { message, deadline } => {
            // The install ServiceAccount may not create what the CSV needs: the API server's
            // refusal, as the CSV reports it, names what it lacks.
            if let Some(csv) = reporting_csv(input, &record)
                .filter(|c| c.reason == reasons::csv::INSTALL_FORBIDDEN)
            {
                changes.set_condition(
                    conditions::blueprint::INSTALL_PERMITTED,
                    false,
                    reasons::policy::INSTALL_FORBIDDEN,
                    csv.message.clone(),
                );
            }
            let phase = if restoring {
                BlueprintPhase::RollingBack
            } else {
                BlueprintPhase::Installing
            };
            let standing = Standing::new(phase, version, Stage::Applying { crds, csv: message });
            let requeue = until(deadline, input.now).min(PROGRESS);
            changes.show(standing, apply, requeue)
        }
    }
}

/// A settled revision is re-applied now and then, which repairs drift.
fn completed(input: &Input<'_>, mut changes: Changes, current: RevisionRecord) -> Outcome {
    let Some(validation) = &input.facts.validation else {
        return Outcome::Check(Need::Validate(content_request(input, &current)));
    };
    let restoring = current.restored_from.is_some();
    if let Some(need) = operands::rehearse(input, &mut changes, &current) {
        return Outcome::Check(need);
    }
    let (apply, crds) = validated(&mut changes, validation, restoring);
    let phase = settled_phase(input, &current);
    let csv = describe_csv(input, &current);
    let standing = Standing::new(phase, Some(&current.version), Stage::Done { crds, csv });
    let apply = apply.then(|| apply_plan(input, &current));
    changes.show(standing, apply, STEADY)
}

/// A revision that failed earlier: it recovers if its CSV Succeeded after all, otherwise the
/// rollback rules are looked at again (a person may have turned automatic rollback on).
fn failed(input: &Input<'_>, mut changes: Changes, current: RevisionRecord) -> Outcome {
    if current.started_time.is_some()
        && reporting_csv(input, &current).and_then(|c| c.phase) == Some(CsvPhase::Succeeded)
    {
        let mut record = current;
        record.reason = format!(
            "{}; recovered: {} Succeeded after all",
            record.reason, record.cluster_service_version_name
        );
        complete(input, &mut changes, &record);
        let csv = describe_csv(input, &record);
        let standing = Standing::new(
            settled_phase(input, &record),
            Some(&record.version),
            Stage::Done {
                crds: String::new(),
                csv,
            },
        );
        return changes.show(standing, None, SOON);
    }
    let why = current.reason.clone();
    after_failure(input, changes, current, &why)
}

fn fail(input: &Input<'_>, mut changes: Changes, mut record: RevisionRecord, why: &str) -> Outcome {
    record.outcome = RevisionOutcome::Failed;
    record.completion_time = Some(Time(input.now));
    record.reason = format!("{}: {why}", record.reason);
    changes.update_record(record.clone());
    after_failure(input, changes, record, why)
}

/// Rolls back to the last revision that Completed when the rules allow it; a rollback that
/// fails itself is never rolled back again.
fn after_failure(
    input: &Input<'_>,
    changes: Changes,
    failed: RevisionRecord,
    why: &str,
) -> Outcome {
    if !input.spec.automatic_rollback.unwrap_or(true) || failed.restored_from.is_some() {
        return stay_failed(input, changes, &failed, why, None);
    }
    let Some(candidate) = history::last_completed(input, failed.revision) else {
        return stay_failed(input, changes, &failed, why, None);
    };
    if !history::is_stored(input, candidate.revision) {
        let refusal = intent::content_missing(input, &candidate);
        return stay_failed(input, changes, &failed, why, Some(refusal));
    }
    if let Err(refusal) = automatic_rule(input, &failed, &candidate) {
        return stay_failed(input, changes, &failed, why, Some(refusal));
    }
    let start = Start {
        csv_name: candidate.csv_name.clone(),
        version: candidate.version.clone(),
        digest: candidate.digest.clone(),
        kind: StartKind::Restore {
            from: candidate.revision,
            automatic: true,
        },
        reason: format!("automatic rollback from {}: {why}", failed.version),
        forced: false,
    };
    // The bookkeeping patch that records the rollback bumps the generation by one; only a
    // change beyond that retries the failed target.
    let held = HeldBack {
        cluster_service_version_name: failed.cluster_service_version_name.clone(),
        digest: failed.digest.clone(),
        generation: input.generation + 1,
    };
    match admit(input, &start) {
        Admission::Go => begin(input, changes, start, Some(held)),
        Admission::Check(need) => Outcome::Check(need),
        Admission::Refused(refusal) => stay_failed(input, changes, &failed, why, Some(refusal)),
    }
}

fn stay_failed(
    input: &Input<'_>,
    mut changes: Changes,
    failed: &RevisionRecord,
    why: &str,
    refusal: Option<Refusal>,
) -> Outcome {
    if let Some(refusal) = refusal {
        refuse_rollback(&mut changes, refusal);
    }
    let started = failed.started_time.is_some();
    let stage = Stage::Failed {
        started,
        message: why.to_string(),
    };
    let version = if started {
        failed.version.clone()
    } else {
        shown_version(input, failed)
    };
    let standing = Standing::new(BlueprintPhase::Failed, Some(&version), stage);
    changes.show(standing, None, STEADY)
}

/// A rollback the rules refuse: say why, keep what runs.
pub(super) fn refuse_rollback(changes: &mut Changes, refusal: Refusal) {
    changes.set_condition(
        conditions::blueprint::ROLLBACK_ALLOWED,
        false,
        refusal.reason,
        refusal.message,
    );
}

/// The version a revision that has not applied anything yet shows: the one that runs (the
/// last that Completed), or its own when nothing ran before.
fn shown_version(input: &Input<'_>, record: &RevisionRecord) -> String {
    history::last_completed(input, record.revision)
        .map_or_else(|| record.version.clone(), |c| c.version)
}

/// A restored revision that runs what the spec asks for (a person's rollback) has simply
/// Succeeded; one that runs an earlier version because the target failed is RolledBack.
fn settled_phase(input: &Input<'_>, record: &RevisionRecord) -> BlueprintPhase {
    let spec = input.spec;
    let target = match (spec.cluster_service_version_name.as_str(), &spec.bundle) {
        ("", Some(bundle)) => bundle.cluster_service_version_name.as_str(),
        (target, _) => target,
    };
    if record.restored_from.is_some() && target != record.cluster_service_version_name {
        BlueprintPhase::RolledBack
    } else {
        BlueprintPhase::Succeeded
    }
}

/// Undoing an upgrade that never Succeeded is allowed across any distance; the
/// rule still insists the target ran here before. Same version: only settings are restored.
fn automatic_rule(
    input: &Input<'_>,
    failed: &RevisionRecord,
    candidate: &history::Candidate,
) -> Result<(), Refusal> {
    let (Some(installed), Some(target)) = (
        intent::parse(&failed.version),
        intent::parse(&candidate.version),
    ) else {
        return Ok(());
    };
    if installed == target {
        return Ok(());
    }
    let previously: Vec<semver::Version> = history::previously_installed(input)
        .iter()
        .filter_map(|v| intent::parse(v))
        .collect();
    check_rollback(&RollbackRequest {
        installed: &installed,
        target: &target,
        previously_installed: &previously,
        reason: RollbackReason::Automatic,
        force: false,
    })
    .map(|_| ())
    .map_err(|refused| Refusal {
        reason: refused.reason(),
        message: refused.to_string(),
    })
}

fn complete(input: &Input<'_>, changes: &mut Changes, record: &RevisionRecord) {
    let mut done = record.clone();
    done.outcome = RevisionOutcome::Completed;
    done.completion_time = Some(Time(input.now));
    changes.update_record(done.clone());
    if done.restored_from.is_none() {
        return;
    }
    // The revision this rollback undid is the one just before it.
    let undone = changes
        .apply_to_history(&input.status.history)
        .into_iter()
        .find(|r| r.revision < done.revision)
        .filter(|r| r.outcome == RevisionOutcome::Failed);
    if let Some(mut undone) = undone {
        undone.outcome = RevisionOutcome::RolledBack;
        undone.reason = format!(
            "{}; rolled back to {} by revision {}",
            undone.reason, done.version, done.revision
        );
        changes.update_record(undone);
    }
}

fn content_request(input: &Input<'_>, record: &RevisionRecord) -> ContentRequest {
    let csv_name = record.cluster_service_version_name.clone();
    let (source, crds) = match record.restored_from {
        Some(from) => (Source::Stored { revision: from }, CrdPolicy::KeepLive),
        None => (
            Source::Catalog {
                catalog: input
                    .spec
                    .bundle
                    .as_ref()
                    .filter(|b| b.cluster_service_version_name == csv_name)
                    .and_then(|b| b.catalog.clone()),
                csv_name: csv_name.clone(),
                digest: record.digest.clone(),
            },
            CrdPolicy::Apply,
        ),
    };
    ContentRequest {
        revision: record.revision,
        csv_name,
        source,
        crds,
        running: record.started_time.is_some(),
    }
}

fn apply_plan(input: &Input<'_>, record: &RevisionRecord) -> ApplyPlan {
    let handover = history::handover(input.csvs, &record.cluster_service_version_name);
    ApplyPlan {
        content: content_request(input, record),
        supersedes: handover.supersedes,
        clear_supersedes: handover.clear_supersedes,
        delete_csvs: handover.delete,
    }
}

fn waiting_for_dependencies(input: &Input<'_>) -> Option<String> {
    let waiting: Vec<String> = input
        .spec
        .dependencies
        .iter()
        .filter_map(|dep| {
            let state = input.dependencies.iter().find(|d| d.package == dep.package);
            match state.and_then(|s| s.phase) {
                Some(BlueprintPhase::Succeeded | BlueprintPhase::RolledBack) => None,
                Some(phase) => Some(format!("{} ({phase:?})", dep.package)),
                None => Some(format!("{} (not installed yet)", dep.package)),
            }
        })
        .collect();
    (!waiting.is_empty()).then(|| format!("waiting for {}", waiting.join(", ")))
}
