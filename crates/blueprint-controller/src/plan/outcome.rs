//! What one decision decided, as data: the deciding modules build it from the [`Input`] alone
//! and the report turns it into a status once. Keeping the two apart means every rule can be
//! read without following status edits, and the status is assembled in exactly one place.
//!
//! [`Input`]: super::Input

use std::time::Duration;

use windlass_api::blueprint::{BlueprintPhase, HeldBack, PlanPreview, RevisionRecord};

use super::{ApplyPlan, Bookkeeping, Need};

/// The planner's verdict for one round.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Outcome {
    /// Gather this fact and decide again; nothing is written this round, so whatever was
    /// concluded on the way is dropped with it.
    Check(Need),
    /// Write the status this describes (after applying, when the update says so). Boxed: it
    /// dwarfs a check.
    Write(Box<StatusUpdate>),
}

/// Everything a written round changes, relative to the status it started from.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct StatusUpdate {
    /// The current revision to apply before the status is written; `None` records only.
    pub apply: Option<ApplyPlan>,
    /// Phase, version and plan stage; `None` leaves them as they are (a bookkeeping redo).
    pub standing: Option<Standing>,
    pub changes: Changes,
    /// Bookkeeping to merge-patch into the spec after the status is written.
    pub bookkeeping: Option<Bookkeeping>,
    pub requeue: Duration,
}

/// Where the Blueprint stands after this round.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Standing {
    pub phase: BlueprintPhase,
    /// The version the status shows (`None` while nothing is targeted).
    pub version: Option<String>,
    pub stage: Stage,
}

/// Where the current revision stands, for the plan steps.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Stage {
    NoRevision,
    /// Just recorded; nothing looked at yet.
    Recorded,
    Dependencies(String),
    /// Waiting for a person to approve the plan: what to approve and how.
    Approval(String),
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

/// Edits to the conditions, the history and the held-back target, in the order they were
/// decided. Order matters: a condition set twice keeps the transition time of the first.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Changes {
    pub conditions: Vec<ConditionChange>,
    /// Records replacing the recorded revision of the same number, in order.
    pub updated_records: Vec<RevisionRecord>,
    /// A revision recorded this round; it becomes the newest entry.
    pub new_record: Option<RevisionRecord>,
    pub held_back: HeldBackChange,
    pub preview: PreviewChange,
}

/// One edit of a Blueprint condition; types come from `windlass_api::names::conditions`.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum ConditionChange {
    Set {
        type_: &'static str,
        ok: bool,
        reason: &'static str,
        message: String,
    },
    Remove(&'static str),
}

/// What becomes of `status.preview`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) enum PreviewChange {
    #[default]
    Keep,
    /// A new revision starts: the plan shown was another revision's.
    Clear,
    Show(PlanPreview),
}

/// What becomes of `status.heldBack`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) enum HeldBackChange {
    #[default]
    Keep,
    Clear,
    Hold(HeldBack),
}

impl Changes {
    pub fn set_condition(
        &mut self,
        type_: &'static str,
        ok: bool,
        reason: &'static str,
        message: impl Into<String>,
    ) {
        self.conditions.push(ConditionChange::Set {
            type_,
            ok,
            reason,
            message: message.into(),
        });
    }

    pub fn remove_condition(&mut self, type_: &'static str) {
        self.conditions.push(ConditionChange::Remove(type_));
    }

    /// Whether this round sets condition `type_` already.
    pub fn sets(&self, type_: &str) -> bool {
        self.conditions
            .iter()
            .any(|c| matches!(c, ConditionChange::Set { type_: t, .. } if *t == type_))
    }

    pub fn update_record(&mut self, record: RevisionRecord) {
        self.updated_records.push(record);
    }

    pub fn record_new(&mut self, record: RevisionRecord) {
        self.new_record = Some(record);
    }

    /// `history` (newest first) with this round's record changes applied: what the status will
    /// hold before the history limit. Deciding later in a round reads it, so a revision failed
    /// a moment ago is seen as failed.
    pub fn apply_to_history(&self, history: &[RevisionRecord]) -> Vec<RevisionRecord> {
        let mut history = history.to_vec();
        for record in &self.updated_records {
            if let Some(recorded) = history.iter_mut().find(|r| r.revision == record.revision) {
                *recorded = record.clone();
            }
        }
        if let Some(record) = &self.new_record {
            history.insert(0, record.clone());
        }
        history
    }

    /// Ends the round showing `standing`, applying `apply` first when given.
    pub fn show(self, standing: Standing, apply: Option<ApplyPlan>, requeue: Duration) -> Outcome {
        Outcome::Write(Box::new(StatusUpdate {
            apply,
            standing: Some(standing),
            changes: self,
            bookkeeping: None,
            requeue,
        }))
    }
}

impl Standing {
    pub fn new(phase: BlueprintPhase, version: Option<&str>, stage: Stage) -> Standing {
        Standing {
            phase,
            version: version.map(str::to_string),
            stage,
        }
    }
}
