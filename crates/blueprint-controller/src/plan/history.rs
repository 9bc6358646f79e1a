//! Reading the revision history: the current revision, what ran before it, what a rollback
//! can return to, and which CSV hands over to which.

use windlass_api::blueprint::{RevisionOutcome, RevisionRecord};

use super::{
    Bookkeeping, Input, ObservedCsv,
    outcome::{Changes, HeldBackChange, Outcome, StatusUpdate},
};

/// The record of the revision `spec.revision` names.
pub(super) fn current(input: &Input<'_>) -> Option<RevisionRecord> {
    input
        .status
        .history
        .iter()
        .find(|r| r.revision == input.spec.revision)
        .cloned()
}

/// The number the next revision gets: above every revision ever recorded or stored, so a
/// number is never reused even when history was pruned or a Secret outlived its record.
pub(super) fn next_revision(input: &Input<'_>) -> i64 {
    let recorded = input.status.history.iter().map(|r| r.revision);
    let stored = input.stored.iter().map(|s| s.revision);
    recorded
        .chain(stored)
        .chain([input.spec.revision])
        .max()
        .unwrap_or(0)
        + 1
}

/// A revision is recorded in the status before `spec.revision` is bumped. When the status holds
/// a newer revision than the spec, the bump did not land (a conflict, or the controller was
/// killed between the two writes) and must be redone before anything else is decided.
pub(super) fn unlanded(input: &Input<'_>) -> Option<RevisionRecord> {
    input
        .status
        .history
        .first()
        .filter(|newest| newest.revision > input.spec.revision)
        .cloned()
}

/// Redoes the bookkeeping of a recorded revision.
pub(super) fn redo_bookkeeping(input: &Input<'_>, newest: &RevisionRecord) -> Outcome {
    let bookkeeping = bookkeeping_for(input, &input.status.history, newest);
    let mut changes = Changes::default();
    // The held-back generation must be the one this patch produces, or the patch itself would
    // look like someone changing the Blueprint and retry the failed target.
    if newest.restored_from.is_some()
        && let Some(held) = &input.status.held_back
    {
        let mut held = held.clone();
        held.generation = input.generation + 1;
        changes.held_back = HeldBackChange::Hold(held);
    }
    // Phase and plan stay as they were: nothing new was decided about the revision itself.
    Outcome::Write(Box::new(StatusUpdate {
        apply: None,
        standing: None,
        changes,
        bookkeeping: Some(bookkeeping),
        requeue: std::time::Duration::from_secs(1),
    }))
}

/// The bookkeeping that starts `record`: its number, approval reset, and the version that
/// Succeeded before it with a different CSV (the target a manual rollback goes back to).
pub(super) fn bookkeeping_for(
    input: &Input<'_>,
    history: &[RevisionRecord],
    record: &RevisionRecord,
) -> Bookkeeping {
    let previous = history.iter().find(|r| {
        r.revision < record.revision
            && r.outcome == RevisionOutcome::Completed
            && r.cluster_service_version_name != record.cluster_service_version_name
    });
    let (old_version, old_csv) = match previous {
        Some(r) => (
            Some(r.version.clone()),
            Some(r.cluster_service_version_name.clone()),
        ),
        // History may have been pruned past it; what the spec says still holds if it differs.
        None => match &input.spec.old_cluster_service_version_name {
            Some(csv) if *csv != record.cluster_service_version_name => {
                (input.spec.old_version.clone(), Some(csv.clone()))
            }
            _ => (None, None),
        },
    };
    Bookkeeping {
        revision: record.revision,
        old_version,
        old_cluster_service_version_name: old_csv,
        // Approval is per revision (and per plan), and so is accepting its findings.
        approved: Some(false),
        approved_plan: Some(None),
        accepted_findings: Some(None),
    }
}

/// A revision that ran successfully and can be returned to.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Candidate {
    pub revision: i64,
    pub csv_name: String,
    pub version: String,
    pub digest: Option<String>,
}

/// Versions this installation ran successfully: Completed records plus `spec.oldVersion`
/// (which outlives pruned history).
pub(super) fn previously_installed(input: &Input<'_>) -> Vec<String> {
    let mut versions: Vec<String> = input
        .status
        .history
        .iter()
        .filter(|r| r.outcome == RevisionOutcome::Completed)
        .map(|r| r.version.clone())
        .collect();
    versions.extend(input.spec.old_version.clone());
    versions
}

/// The newest revision before `before` that Completed, whose content a rollback restores.
/// Falls back to the stored revision of `spec.oldClusterServiceVersionName` when history was
/// pruned past it. `None` when nothing ever Succeeded.
pub(super) fn last_completed(input: &Input<'_>, before: i64) -> Option<Candidate> {
    let recorded = input
        .status
        .history
        .iter()
        .find(|r| r.revision < before && r.outcome == RevisionOutcome::Completed)
        .map(|r| Candidate {
            revision: r.revision,
            csv_name: r.cluster_service_version_name.clone(),
            version: r.version.clone(),
            digest: r.digest.clone(),
        });
    recorded.or_else(|| {
        let old = input.spec.old_cluster_service_version_name.as_deref()?;
        input.newest_stored(old, before).map(|s| Candidate {
            revision: s.revision,
            csv_name: s.csv_name.clone(),
            version: s.version.clone(),
            digest: s.settings.as_ref().and_then(|s| s.digest.clone()),
        })
    })
}

/// The newest revision that Completed with this CSV (a manual rollback's source).
pub(super) fn completed_with_csv(input: &Input<'_>, csv_name: &str) -> Option<Candidate> {
    let recorded = input.status.history.iter().find(|r| {
        r.outcome == RevisionOutcome::Completed && r.cluster_service_version_name == csv_name
    });
    match recorded {
        Some(r) => Some(Candidate {
            revision: r.revision,
            csv_name: r.cluster_service_version_name.clone(),
            version: r.version.clone(),
            digest: r.digest.clone(),
        }),
        None if input.spec.old_cluster_service_version_name.as_deref() == Some(csv_name) => {
            input.newest_stored(csv_name, i64::MAX).map(|s| Candidate {
                revision: s.revision,
                csv_name: s.csv_name.clone(),
                version: s.version.clone(),
                digest: s.settings.as_ref().and_then(|s| s.digest.clone()),
            })
        }
        None => None,
    }
}

pub(super) fn is_stored(input: &Input<'_>, revision: i64) -> bool {
    input.stored.iter().any(|s| s.revision == revision)
}

/// How the revision's CSV relates to the other CSVs of this Blueprint.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Handover {
    pub supersedes: Option<String>,
    pub clear_supersedes: Vec<String>,
    pub delete: Vec<String>,
}

/// The CSV applied most recently before this one (by the revision annotation) is the one it
/// takes over from: it holds the running workload, whether it Succeeded (an upgrade) or Failed
/// (a rollback). Older ones hand over nothing and are deleted. Once the predecessor is gone the
/// live `supersedes` is kept as it is, so a finished revision's CSV spec never changes again.
pub(super) fn handover(csvs: &[ObservedCsv], csv_name: &str) -> Handover {
    let mut others: Vec<&ObservedCsv> = csvs
        .iter()
        .filter(|c| c.name != csv_name && !c.deleting)
        .collect();
    others.sort_by(|a, b| {
        b.revision
            .unwrap_or(0)
            .cmp(&a.revision.unwrap_or(0))
            .then(a.name.cmp(&b.name))
    });
    let own = csvs.iter().find(|c| c.name == csv_name);
    let supersedes = match others.first() {
        Some(predecessor) => Some(predecessor.name.clone()),
        None => own.and_then(|c| c.supersedes.clone()),
    };
    Handover {
        supersedes,
        clear_supersedes: others
            .iter()
            .filter(|c| c.supersedes.as_deref() == Some(csv_name))
            .map(|c| c.name.clone())
            .collect(),
        delete: others.iter().skip(1).map(|c| c.name.clone()).collect(),
    }
}
