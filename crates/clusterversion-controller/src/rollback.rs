//! Going back: the history as the release crate's rollback rules read it, and which release an
//! automatic rollback returns to.

use semver::Version;
use windlass_api::{
    ClusterVersionStatus,
    clusterversion::{UpdateHistory, UpdateState},
};
use windlass_release::{
    history::{self, HistoryEntry},
    policy::{RollbackKind, check_rollback},
};

/// The ClusterVersion's history as `windlass_release::policy::check_rollback` reads it.
pub fn release_history(entries: &[UpdateHistory]) -> Vec<HistoryEntry> {
    entries
        .iter()
        .map(|e| HistoryEntry {
            state: match e.state {
                UpdateState::Completed => history::UpdateState::Completed,
                UpdateState::Partial => history::UpdateState::Partial,
            },
            started_time: e.started_time.0,
            completion_time: e.completion_time.as_ref().map(|t| t.0),
            version: e.version.clone(),
            image: e.image.clone(),
            verified: e.verified,
            accepted_risks: e.accepted_risks.clone(),
            crossed_irreversible: e.crossed_irreversible.clone(),
        })
        .collect()
}

/// Whether moving to `target` goes back from the newest release in history.
pub fn is_downgrade(entries: &[UpdateHistory], target: &Version) -> bool {
    entries
        .first()
        .and_then(|e| Version::parse(&e.version).ok())
        .is_some_and(|current| *target < current)
}

/// The release an automatic rollback returns to: the newest completed one before the update
/// in progress.
pub fn previous_completed(entries: &[UpdateHistory]) -> Option<&UpdateHistory> {
    entries
        .iter()
        .skip(1)
        .find(|e| e.state == UpdateState::Completed)
}

/// The release an automatic rollback of the failing update goes to, or why it may not.
pub fn automatic_target(
    status: &ClusterVersionStatus,
    failure: &str,
) -> Result<UpdateHistory, String> {
    let previous = previous_completed(&status.history)
        .ok_or_else(|| format!("{failure}, and no earlier release completed on this cluster"))?;
    let target = semver::Version::parse(&previous.version).map_err(|e| e.to_string())?;
    check_rollback(
        &release_history(&status.history),
        &target,
        RollbackKind::Automatic,
        false,
    )
    .map(|_| previous.clone())
    .map_err(|refusal| refusal.to_string())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
    use windlass_release::policy::RollbackRefusal;

    use super::*;

    fn entry(version: &str, state: UpdateState, crossed: &[&str]) -> UpdateHistory {
        UpdateHistory {
            state,
            version: version.into(),
            image: format!("registry/release@sha256:{version}"),
            verified: true,
            started_time: Time(Timestamp::UNIX_EPOCH),
            completion_time: None,
            accepted_risks: String::new(),
            crossed_irreversible: crossed.iter().map(|c| c.to_string()).collect(),
        }
    }

    #[test]
    fn a_failing_update_goes_back_only_before_an_irreversible_level() {
        let before = [
            entry("4.2.1", UpdateState::Partial, &[]),
            entry("4.2.0", UpdateState::Completed, &["40"]),
            entry("4.1.1", UpdateState::Completed, &[]),
        ];
        let previous = previous_completed(&before).expect("a release to go back to");
        assert_eq!(previous.version, "4.2.0");
        let target = Version::parse(&previous.version).unwrap();
        assert!(is_downgrade(&before, &target));
        let plan = check_rollback(
            &release_history(&before),
            &target,
            RollbackKind::Automatic,
            false,
        )
        .expect("4.2.1 crossed nothing irreversible");
        assert_eq!(plan.target.image, "registry/release@sha256:4.2.0");

        let after = [
            entry("4.2.2", UpdateState::Partial, &["40"]),
            entry("4.2.0", UpdateState::Completed, &["40"]),
        ];
        let refusal = check_rollback(
            &release_history(&after),
            &target,
            RollbackKind::Automatic,
            false,
        )
        .expect_err("4.2.2 started level 40");
        assert!(
            matches!(refusal, RollbackRefusal::IrreversibleCrossed { .. }),
            "{refusal}"
        );
    }
}
