//! Which revision Secrets the history limit lets go.

use windlass_api::blueprint::{RevisionOutcome, RevisionRecord};

use super::Input;

/// Revision Secrets beyond the history limit, never the current one, the one
/// `spec.oldClusterServiceVersionName` names, or the one an automatic rollback would restore.
/// `history` is the status as written this round, so a revision recorded now is protected.
pub(super) fn prunable(input: &Input<'_>, history: &[RevisionRecord], limit: i64) -> Vec<i64> {
    let current = input
        .spec
        .revision
        .max(history.first().map_or(0, |r| r.revision));
    let mut protected = vec![current];
    if let Some(old) = input.spec.old_cluster_service_version_name.as_deref()
        && let Some(s) = input.newest_stored(old, i64::MAX)
    {
        protected.push(s.revision);
    }
    // A rollback in progress may not have copied its source's content yet.
    if let Some(source) = history
        .iter()
        .find(|r| r.revision == current)
        .and_then(|r| r.restored_from)
    {
        protected.push(source);
    }
    if let Some(candidate) = history
        .iter()
        .find(|r| r.revision < current && r.outcome == RevisionOutcome::Completed)
    {
        protected.push(candidate.revision);
    }
    let stored: Vec<i64> = input.stored.iter().map(|s| s.revision).collect();
    crate::revision::prune(&stored, limit, &protected)
}
