//! Turning a decision into status: phase, plan steps, conditions, the history limit, and the
//! Events a person would want to see (derived from what changed, so a reconcile that changes
//! nothing says nothing).

use std::time::Duration;
use windlass_api::names::{conditions, steps};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use windlass_api::{
    BlueprintStatus, CsvPhase,
    blueprint::{BlueprintPhase, PlanStep, RevisionOutcome, RevisionRecord},
    condition::{Condition, ConditionStatus, set_condition},
    config::DEFAULT_HISTORY_LIMIT,
};

use super::{Action, Bookkeeping, Decision, Input, Need, Refusal, history};

pub use windlass_kit::Notice;

/// Where the current revision stands, for the plan steps.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Stage {
    NoRevision,
    /// Just recorded; nothing looked at yet.
    Recorded,
    Dependencies(String),
    Approval,
    /// The content cannot be read yet.
    Content(String),
    /// The CRD safety check refused.
    Blocked(String),
    Applying {
        crds: String,
        csv: String,
    },
    Done {
        crds: String,
        csv: String,
    },
    /// Before anything was applied (`started` false) or after.
    Failed {
        started: bool,
        message: String,
    },
}

/// The status being built for one decision.
pub(super) struct Draft<'a> {
    input: &'a Input<'a>,
    pub status: BlueprintStatus,
    /// For the Ready condition while not ready.
    summary: String,
}

impl<'a> Draft<'a> {
    pub fn new(input: &'a Input<'a>) -> Draft<'a> {
        Draft {
            input,
            status: input.status.clone(),
            summary: String::new(),
        }
    }

    pub fn set_condition(&mut self, type_: &str, ok: bool, reason: &str, message: &str) {
        let status = if ok {
            ConditionStatus::True
        } else {
            ConditionStatus::False
        };
        set_condition(
            &mut self.status.conditions,
            Condition::new(type_, status, reason, message).observed(Some(self.input.generation)),
            self.input.now,
        );
    }

    pub fn remove_condition(&mut self, type_: &str) {
        self.status.conditions.retain(|c| c.type_ != type_);
    }

    pub fn stage(&mut self, phase: BlueprintPhase, version: Option<&str>, stage: Stage) {
        self.status.phase = Some(phase);
        self.status.version = version.map(str::to_string);
        self.summary = summary(&stage);
        self.status.plan = steps(self.input, &stage);
    }

    /// Replaces the record of the same revision.
    pub fn update_record(&mut self, record: &RevisionRecord) {
        if let Some(r) = self
            .status
            .history
            .iter_mut()
            .find(|r| r.revision == record.revision)
        {
            *r = record.clone();
        }
    }

    pub fn push_record(&mut self, record: RevisionRecord) {
        self.status.history.insert(0, record);
    }

    pub fn now(&self) -> Time {
        Time(self.input.now)
    }

    /// A rollback the rules refuse: say why, keep what runs.
    pub fn refuse_rollback(&mut self, refusal: Refusal) {
        self.set_condition(
            conditions::blueprint::ROLLBACK_ALLOWED,
            false,
            refusal.reason,
            &refusal.message,
        );
    }

    /// Once the spec no longer asks for a refused rollback, the refusal is history.
    pub fn clear_settled_refusal(&mut self) {
        let refused = self.status.conditions.iter().any(|c| {
            c.type_ == conditions::blueprint::ROLLBACK_ALLOWED && c.status == ConditionStatus::False
        });
        if refused {
            self.remove_condition(conditions::blueprint::ROLLBACK_ALLOWED);
        }
    }

    /// Gather a fact and come back; nothing is written.
    pub fn check(self, need: Need) -> Decision {
        Decision {
            action: Action::Check(need),
            status: self.input.status.clone(),
            bookkeeping: None,
            prune_revisions: Vec::new(),
            notes: Vec::new(),
            requeue: Duration::ZERO,
        }
    }

    pub fn waiting_for_target(mut self, refusal: Refusal) -> Decision {
        self.stage(BlueprintPhase::Pending, None, Stage::NoRevision);
        self.summary = refusal.message;
        self.status.plan.clear();
        self.set_condition(
            conditions::blueprint::READY,
            false,
            refusal.reason,
            &self.summary.clone(),
        );
        self.finish(Action::Record, None, Duration::from_secs(60))
    }

    pub fn finish(
        mut self,
        action: Action,
        bookkeeping: Option<Bookkeeping>,
        requeue: Duration,
    ) -> Decision {
        let limit = self
            .input
            .spec
            .history_limit
            .unwrap_or(DEFAULT_HISTORY_LIMIT)
            .max(1);
        self.status
            .history
            .truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        if self.status.phase.is_some() && !self.status.plan.is_empty() {
            let (ok, reason, message) = self.readiness();
            self.set_condition(conditions::blueprint::READY, ok, &reason, &message);
        }
        self.status.observed_generation = Some(self.input.generation);
        let prune_revisions = history::prunable(self.input, &self.status.history, limit);
        let notes = notes(self.input.status, &self.status);
        Decision {
            action,
            status: self.status,
            bookkeeping,
            prune_revisions,
            notes,
            requeue,
        }
    }

    fn readiness(&self) -> (bool, String, String) {
        let phase = self.status.phase.unwrap_or(BlueprintPhase::Pending);
        let newest = self.status.history.first();
        if !matches!(
            phase,
            BlueprintPhase::Succeeded | BlueprintPhase::RolledBack
        ) {
            return (false, format!("{phase:?}"), self.summary.clone());
        }
        let Some(record) = newest else {
            return (false, format!("{phase:?}"), self.summary.clone());
        };
        let csv = self
            .input
            .csvs
            .iter()
            .find(|c| c.name == record.cluster_service_version_name);
        match csv.and_then(|c| c.phase) {
            Some(CsvPhase::Succeeded) => {
                let mut message = format!(
                    "{} {} is installed",
                    record.cluster_service_version_name, record.version
                );
                if let Some(held) = &self.status.held_back {
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
                "ClusterServiceVersionNotSucceeded".into(),
                format!(
                    "{} is {}: {}",
                    record.cluster_service_version_name,
                    other.map_or("missing".to_string(), |p| format!("{p:?}")),
                    csv.map_or("", |c| c.message.as_str())
                ),
            ),
        }
    }
}

fn summary(stage: &Stage) -> String {
    match stage {
        Stage::NoRevision => String::new(),
        Stage::Recorded => "recorded; starting".into(),
        Stage::Dependencies(m) | Stage::Content(m) | Stage::Blocked(m) => m.clone(),
        Stage::Approval => "waiting for approval: set spec.approved to true".into(),
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

fn steps(input: &Input<'_>, stage: &Stage) -> Vec<PlanStep> {
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
        Stage::Approval | Stage::Content(_) => (
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

/// Events from the difference between the status before and after.
pub(super) fn notes(old: &BlueprintStatus, new: &BlueprintStatus) -> Vec<Notice> {
    let mut notes = Vec::new();
    let revision = new.history.first().map_or(0, |r| r.revision);
    let scoped = |what: &str| format!("Revision{revision}.{what}");
    for record in new.history.iter().rev() {
        let before = old.history.iter().find(|r| r.revision == record.revision);
        let action = format!("Revision{}", record.revision);
        let what = format!(
            "revision {} ({} {})",
            record.revision, record.cluster_service_version_name, record.version
        );
        match before {
            None => notes.push(note(
                false,
                "RevisionStarted",
                action,
                format!("{what}: {}", record.reason),
            )),
            Some(b) if b.outcome != record.outcome => notes.push(note(
                matches!(record.outcome, RevisionOutcome::Failed),
                &format!("Revision{:?}", record.outcome),
                action,
                format!("{what} {:?}: {}", record.outcome, record.reason),
            )),
            Some(_) => {}
        }
    }
    for step in &new.plan {
        let before = old.plan.iter().find(|s| s.name == step.name);
        let status_changed = before.is_none_or(|b| b.status != step.status);
        let message_changed = before.is_some_and(|b| b.message != step.message);
        let bad = matches!(step.status.as_str(), "Blocked" | "Failed");
        // Progress messages change often; only a new status, or a new reason to be stuck, is
        // worth an Event.
        if step.status != "Pending" && (status_changed || bad && message_changed) {
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
        notes.push(note(
            phase == BlueprintPhase::Failed,
            &format!("{phase:?}"),
            scoped("Phase"),
            format!(
                "phase {phase:?}{}",
                new.version
                    .as_deref()
                    .map(|v| format!(" at {v}"))
                    .unwrap_or_default()
            ),
        ));
    }
    for condition in &new.conditions {
        let guarded = [
            conditions::blueprint::CRD_UPGRADE_SAFE,
            conditions::blueprint::ROLLBACK_ALLOWED,
            conditions::blueprint::CRDS_KEPT,
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
            || condition.type_ == conditions::blueprint::CRDS_KEPT;
        if changed && worth_saying {
            notes.push(note(
                condition.status == ConditionStatus::False,
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
