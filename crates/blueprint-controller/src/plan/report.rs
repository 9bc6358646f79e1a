//! Turning a decision into status, once: phase, plan steps, conditions, the history limit and
//! pruning, and the Events a person would want to see (derived from what changed, so a
//! reconcile that changes nothing says nothing).

use std::time::Duration;
use windlass_api::names::reasons;
use windlass_api::names::{conditions, steps};

use windlass_api::{
    BlueprintStatus, CsvPhase,
    blueprint::{BlueprintPhase, PlanStep, RevisionOutcome},
    condition::{Condition, ConditionStatus, set_condition},
    config::DEFAULT_HISTORY_LIMIT,
};

use super::{
    Action, Decision, Input,
    outcome::{ConditionChange, HeldBackChange, Outcome, PreviewChange, Stage, StatusUpdate},
};

mod retention;

pub use windlass_kit::Notice;

/// The decision `outcome` describes, with the status it leaves behind.
pub(super) fn render(input: &Input<'_>, outcome: Outcome) -> Decision {
    match outcome {
        // Nothing is written, so nothing changes and nothing is said.
        Outcome::Check(need) => Decision {
            action: Action::Check(need),
            status: input.status.clone(),
            bookkeeping: None,
            prune_revisions: Vec::new(),
            notes: Vec::new(),
            requeue: Duration::ZERO,
        },
        Outcome::Write(update) => write(input, *update),
    }
}

fn write(input: &Input<'_>, update: StatusUpdate) -> Decision {
    let StatusUpdate {
        apply,
        standing,
        changes,
        bookkeeping,
        requeue,
    } = update;
    let mut status = input.status.clone();
    let mut history = changes.apply_to_history(&input.status.history);
    for change in changes.conditions {
        match change {
            ConditionChange::Set {
                type_,
                ok,
                reason,
                message,
            } => set(input, &mut status, type_, ok, reason, &message),
            ConditionChange::Remove(type_) => status.conditions.retain(|c| c.type_ != type_),
        }
    }
    match changes.held_back {
        HeldBackChange::Keep => {}
        HeldBackChange::Clear => status.held_back = None,
        HeldBackChange::Hold(held) => status.held_back = Some(held),
    }
    match changes.preview {
        PreviewChange::Keep => {}
        PreviewChange::Clear => status.preview = None,
        PreviewChange::Show(preview) => status.preview = Some(preview),
    }
    // For the Ready condition while not ready; a round that leaves the stage alone has none.
    let mut not_ready_summary = String::new();
    if let Some(standing) = standing {
        status.phase = Some(standing.phase);
        status.version = standing.version;
        not_ready_summary = summary(&standing.stage);
        status.plan = plan_steps(input, &standing.stage);
    }
    let limit = input
        .spec
        .history_limit
        .unwrap_or(DEFAULT_HISTORY_LIMIT)
        .max(1);
    history.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    status.history = history;
    // Without a plan (nothing targeted) the decision sets Ready itself, with its reason.
    if status.phase.is_some() && !status.plan.is_empty() {
        let (ok, reason, message) = readiness(input, &status, &not_ready_summary);
        set(
            input,
            &mut status,
            conditions::blueprint::READY,
            ok,
            &reason,
            &message,
        );
    }
    status.observed_generation = Some(input.generation);
    let prune_revisions = retention::prunable(input, &status.history, limit);
    let notes = notes(input.status, &status);
    Decision {
        action: apply.map_or(Action::Record, Action::Apply),
        status,
        bookkeeping,
        prune_revisions,
        notes,
        requeue,
    }
}

fn set(
    input: &Input<'_>,
    status: &mut BlueprintStatus,
    type_: &str,
    ok: bool,
    reason: &str,
    message: &str,
) {
    let condition_status = if ok {
        ConditionStatus::True
    } else {
        ConditionStatus::False
    };
    set_condition(
        &mut status.conditions,
        Condition::new(type_, condition_status, reason, message).observed(Some(input.generation)),
        input.now,
    );
}

/// The Ready condition: true once the newest revision settled and its CSV Succeeded.
fn readiness(
    input: &Input<'_>,
    status: &BlueprintStatus,
    not_ready_summary: &str,
) -> (bool, String, String) {
    let phase = status.phase.unwrap_or(BlueprintPhase::Pending);
    let newest = status.history.first();
    if !matches!(
        phase,
        BlueprintPhase::Succeeded | BlueprintPhase::RolledBack
    ) {
        return (false, format!("{phase:?}"), not_ready_summary.to_string());
    }
    let Some(record) = newest else {
        return (false, format!("{phase:?}"), not_ready_summary.to_string());
    };
    let csv = input
        .csvs
        .iter()
        .find(|c| c.name == record.cluster_service_version_name);
    match csv.and_then(|c| c.phase) {
        Some(CsvPhase::Succeeded) => {
            let mut message = format!(
                "{} {} is installed",
                record.cluster_service_version_name, record.version
            );
            if let Some(held) = &status.held_back {
                message.push_str(&format!(
                    "; {} is held back after a failed upgrade until its bundle or this \
                     Blueprint changes",
                    held.cluster_service_version_name
                ));
            }
            (true, format!("{phase:?}"), message)
        }
        other => (
            false,
            reasons::blueprint::CLUSTER_SERVICE_VERSION_NOT_SUCCEEDED.into(),
            format!(
                "{} is {}: {}",
                record.cluster_service_version_name,
                other.map_or("missing".to_string(), |p| format!("{p:?}")),
                csv.map_or("", |c| c.message.as_str())
            ),
        ),
    }
}

fn summary(stage: &Stage) -> String {
    match stage {
        Stage::NoRevision => String::new(),
        Stage::Recorded => "recorded; starting".into(),
        Stage::Dependencies(m) | Stage::Content(m) | Stage::Blocked(m) => m.clone(),
        Stage::Approval(m) => m.clone(),
        Stage::Applying { csv, .. } | Stage::Done { csv, .. } => csv.clone(),
        Stage::Failed { message, .. } => message.clone(),
    }
}

fn step(name: &str, status: &str, message: impl Into<String>) -> PlanStep {
    PlanStep {
        name: name.into(),
        status: status.into(),
        message: message.into(),
    }
}

fn plan_steps(input: &Input<'_>, stage: &Stage) -> Vec<PlanStep> {
    let deps = dependencies_message(input);
    let (d, c, o, v) = match stage {
        Stage::NoRevision => return Vec::new(),
        Stage::Recorded => (
            step(steps::DEPENDENCIES, "Pending", ""),
            step(steps::CRDS, "Pending", ""),
            step(steps::OBJECTS, "Pending", ""),
            step(steps::CLUSTER_SERVICE_VERSION, "Pending", ""),
        ),
        Stage::Dependencies(m) => (
            step(steps::DEPENDENCIES, "InProgress", m.as_str()),
            step(steps::CRDS, "Pending", ""),
            step(steps::OBJECTS, "Pending", ""),
            step(steps::CLUSTER_SERVICE_VERSION, "Pending", ""),
        ),
        Stage::Approval(_) | Stage::Content(_) => (
            step(steps::DEPENDENCIES, "Done", deps),
            step(steps::CRDS, "Pending", summary(stage)),
            step(steps::OBJECTS, "Pending", ""),
            step(steps::CLUSTER_SERVICE_VERSION, "Pending", ""),
        ),
        Stage::Blocked(m) => (
            step(steps::DEPENDENCIES, "Done", deps),
            step(steps::CRDS, "Blocked", m.as_str()),
            step(steps::OBJECTS, "Pending", ""),
            step(steps::CLUSTER_SERVICE_VERSION, "Pending", ""),
        ),
        Stage::Applying { crds, csv } => (
            step(steps::DEPENDENCIES, "Done", deps),
            step(steps::CRDS, "Done", crds.as_str()),
            step(steps::OBJECTS, "Done", ""),
            step(steps::CLUSTER_SERVICE_VERSION, "InProgress", csv.as_str()),
        ),
        Stage::Done { crds, csv } => (
            step(steps::DEPENDENCIES, "Done", deps),
            step(steps::CRDS, "Done", crds.as_str()),
            step(steps::OBJECTS, "Done", ""),
            step(steps::CLUSTER_SERVICE_VERSION, "Done", csv.as_str()),
        ),
        Stage::Failed {
            started: false,
            message,
        } => (
            step(steps::DEPENDENCIES, "Done", deps),
            step(steps::CRDS, "Failed", message.as_str()),
            step(steps::OBJECTS, "Pending", ""),
            step(steps::CLUSTER_SERVICE_VERSION, "Pending", ""),
        ),
        Stage::Failed {
            started: true,
            message,
        } => (
            step(steps::DEPENDENCIES, "Done", deps),
            step(steps::CRDS, "Done", ""),
            step(steps::OBJECTS, "Done", ""),
            step(steps::CLUSTER_SERVICE_VERSION, "Failed", message.as_str()),
        ),
    };
    vec![d, c, o, v]
}

fn dependencies_message(input: &Input<'_>) -> String {
    if input.spec.dependencies.is_empty() {
        return "none".into();
    }
    input
        .spec
        .dependencies
        .iter()
        .map(|dep| {
            let state = input.dependencies.iter().find(|d| d.package == dep.package);
            match state.and_then(|s| s.phase) {
                Some(phase) => format!(
                    "{} {} {phase:?}",
                    dep.package,
                    state.and_then(|s| s.version.as_deref()).unwrap_or("")
                ),
                None => format!("{} not installed", dep.package),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Events from the difference between the status before and after. A phase reached in the
/// same write as the current revision starts or ends is told in that revision's Event (one
/// Event, not two, for the same moment): every Event is a write the API server pays for.
fn notes(old: &BlueprintStatus, new: &BlueprintStatus) -> Vec<Notice> {
    let mut notes = Vec::new();
    let revision = new.history.first().map_or(0, |r| r.revision);
    let scoped = |what: &str| format!("Revision{revision}.{what}");
    let mut current_revision_note = None;
    for record in new.history.iter().rev() {
        let before = old.history.iter().find(|r| r.revision == record.revision);
        let action = format!("Revision{}", record.revision);
        let what = format!(
            "revision {} ({} {})",
            record.revision, record.cluster_service_version_name, record.version
        );
        let told = match before {
            None => note(
                false,
                "RevisionStarted",
                action,
                format!("{what}: {}", record.reason),
            ),
            Some(b) if b.outcome != record.outcome => note(
                matches!(record.outcome, RevisionOutcome::Failed),
                &format!("Revision{:?}", record.outcome),
                action,
                format!("{what} {:?}: {}", record.outcome, record.reason),
            ),
            Some(_) => continue,
        };
        if record.revision == revision {
            current_revision_note = Some(notes.len());
        }
        notes.push(told);
    }
    for step in &new.plan {
        let before = old.plan.iter().find(|s| s.name == step.name);
        let status_changed = before.is_none_or(|b| b.status != step.status);
        let message_changed = before.is_some_and(|b| b.message != step.message);
        let bad = matches!(step.status.as_str(), "Blocked" | "Failed");
        // A step that goes well is told by the revision and phase Events and kept in the
        // status; an Event per step of every install would be most of a busy cluster's
        // writes. A step that is stuck or failed is news, and so is a new reason for it.
        if bad && (status_changed || message_changed) {
            let message = if step.message.is_empty() {
                format!("{}: {}", step.name, step.status)
            } else {
                format!("{}: {}: {}", step.name, step.status, step.message)
            };
            notes.push(note(
                bad,
                &format!("Step{}", step.status),
                scoped(&step.name),
                message,
            ));
        }
    }
    if old.phase != new.phase
        && let Some(phase) = new.phase
    {
        let told = format!(
            "phase {phase:?}{}",
            new.version
                .as_deref()
                .map(|v| format!(" at {v}"))
                .unwrap_or_default()
        );
        match current_revision_note.map(|i| &mut notes[i]) {
            Some(revision_note) => {
                revision_note.warning |= phase == BlueprintPhase::Failed;
                revision_note.message = format!("{}; {told}", revision_note.message);
            }
            None => notes.push(note(
                phase == BlueprintPhase::Failed,
                &format!("{phase:?}"),
                scoped("Phase"),
                told,
            )),
        }
    }
    for condition in &new.conditions {
        let guarded = [
            conditions::blueprint::CRD_UPGRADE_SAFE,
            conditions::blueprint::ROLLBACK_ALLOWED,
            conditions::blueprint::CRDS_KEPT,
            conditions::blueprint::CONTENT_TRUSTED,
            conditions::blueprint::INSTALL_PERMITTED,
            conditions::blueprint::PLAN_APPROVED,
            conditions::blueprint::OPERANDS_SNAPSHOTTED,
            conditions::blueprint::OPERANDS_RESTORED,
        ];
        if !guarded.contains(&condition.type_.as_str()) {
            continue;
        }
        let before = old.conditions.iter().find(|c| c.type_ == condition.type_);
        let changed = before.is_none_or(|b| {
            b.status != condition.status
                || b.reason != condition.reason
                || b.message != condition.message
        });
        let worth_saying = condition.status == ConditionStatus::False
            || condition.type_ == conditions::blueprint::CRDS_KEPT
            || condition.type_ == conditions::blueprint::PLAN_APPROVED
            || condition.type_ == conditions::blueprint::OPERANDS_SNAPSHOTTED
            || condition.type_ == conditions::blueprint::OPERANDS_RESTORED;
        // Waiting for a person is the normal course of Manual approval, not a problem.
        let warning = condition.status == ConditionStatus::False
            && condition.reason != reasons::blueprint::AWAITING_APPROVAL;
        if changed && worth_saying {
            notes.push(note(
                warning,
                &condition.reason,
                scoped(&condition.type_),
                condition.message.clone(),
            ));
        }
    }
    notes
}

fn note(warning: bool, reason: &str, action: String, message: String) -> Notice {
    Notice {
        warning,
        reason: reason.to_string(),
        action,
        message,
    }
}
