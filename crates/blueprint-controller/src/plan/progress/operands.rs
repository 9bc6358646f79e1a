//! The operator's custom resources around an upgrade: snapshotted before an upgrade applies,
//! put back once a rollback's CSV runs, and a rollback rehearsed while an upgrade stands.

use windlass_api::{
    blueprint::RevisionRecord,
    names::{conditions, reasons},
};

use super::super::{Input, Need, history, outcome::Changes};

/// Where an upgrade stands with its snapshot.
pub(super) enum Snapshot {
    /// Nothing to keep (a first install, a rollback, the same CSV again), or kept.
    Ready,
    Ask(Need),
    /// The snapshot cannot be kept; the upgrade waits (the condition says why and what to do).
    Blocked(String),
}

/// Before revision `record` first applies: an upgrade from another CSV keeps the operands of
/// the one that runs.
pub(super) fn before_upgrade(
    input: &Input<'_>,
    changes: &mut Changes,
    record: &RevisionRecord,
) -> Snapshot {
    let Some(base) = history::last_completed(input, record.revision) else {
        return Snapshot::Ready;
    };
    if record.restored_from.is_some()
        || base.csv_name == record.cluster_service_version_name
        || !history::is_stored(input, base.revision)
    {
        return Snapshot::Ready;
    }
    match &input.facts.snapshot {
        Some((revision, result)) if *revision == record.revision => match result {
            Ok(taken) => {
                changes.set_condition(
                    conditions::blueprint::OPERANDS_SNAPSHOTTED,
                    true,
                    taken.reason,
                    taken.message.clone(),
                );
                Snapshot::Ready
            }
            Err(refusal) => {
                changes.set_condition(
                    conditions::blueprint::OPERANDS_SNAPSHOTTED,
                    false,
                    refusal.reason,
                    refusal.message.clone(),
                );
                Snapshot::Blocked(refusal.message.clone())
            }
        },
        _ => Snapshot::Ask(Need::Snapshot {
            revision: record.revision,
            base: base.revision,
        }),
    }
}

/// Once a rollback's CSV Succeeded: the operands go back to the snapshot taken while the
/// revision it restores ran. `None`: done, the condition says what happened.
pub(super) fn after_rollback(
    input: &Input<'_>,
    changes: &mut Changes,
    record: &RevisionRecord,
) -> Option<Need> {
    let base = record.restored_from?;
    match &input.facts.restore {
        Some((revision, result)) if *revision == record.revision => {
            match result {
                Ok(summary) => changes.set_condition(
                    conditions::blueprint::OPERANDS_RESTORED,
                    true,
                    reasons::blueprint::OPERANDS_RESTORED,
                    summary.clone(),
                ),
                Err(refusal) => changes.set_condition(
                    conditions::blueprint::OPERANDS_RESTORED,
                    false,
                    refusal.reason,
                    refusal.message.clone(),
                ),
            }
            None
        }
        _ => Some(Need::RestoreOperands {
            revision: record.revision,
            base,
        }),
    }
}

/// While an upgrade that Completed runs: would a rollback to the revision before it apply?
/// `None`: answered, in `RollbackAllowed`.
pub(super) fn rehearse(
    input: &Input<'_>,
    changes: &mut Changes,
    record: &RevisionRecord,
) -> Option<Need> {
    // A rollback asked for and refused this round says why itself.
    if record.restored_from.is_some() || changes.sets(conditions::blueprint::ROLLBACK_ALLOWED) {
        return None;
    }
    let base = history::last_completed(input, record.revision)?;
    if base.csv_name == record.cluster_service_version_name
        || !history::is_stored(input, base.revision)
    {
        return None;
    }
    match &input.facts.rehearsal {
        Some((revision, result)) if *revision == record.revision => {
            match result {
                Ok(message) => changes.set_condition(
                    conditions::blueprint::ROLLBACK_ALLOWED,
                    true,
                    reasons::blueprint::REHEARSAL_PASSED,
                    message.clone(),
                ),
                Err(refusal) => changes.set_condition(
                    conditions::blueprint::ROLLBACK_ALLOWED,
                    false,
                    refusal.reason,
                    refusal.message.clone(),
                ),
            }
            None
        }
        _ => Some(Need::Rehearse {
            revision: record.revision,
            base: base.revision,
        }),
    }
}
