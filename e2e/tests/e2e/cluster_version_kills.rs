//! The manager SIGKILLed again and again while ClusterVersion updates run, at random moments:
//! each new manager resumes from `status.levels`, every update completes once, and no update
//! writes any object twice (read from the API server's audit log).

use std::{
    collections::BTreeMap,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use kube::Api;
use windlass_api::{
    ClusterVersion,
    clusterversion::{CLUSTER_VERSION_NAME, LevelState, UpdateState},
};
use windlass_testkit::require_manager;

use crate::cluster_versions::{
    ONE_AT_A_TIME, audit_lines, completed_at, push_releases, reach, release_account,
    release_writes_by_object, start_afresh, upgrade,
};
use crate::manager_kills::{kill_manager, restart_manager};

/// Kills that must land while an update is under way.
const KILLS_DURING_UPDATES: usize = 10;

/// Where the update to `target` stands, for the kill report: the level in progress, or `None`
/// once it completed.
fn moment(version: &ClusterVersion, target: &str) -> Option<String> {
    if completed_at(version, target) {
        return None;
    }
    let level = version
        .status
        .as_ref()
        .and_then(|s| s.progress.as_ref())
        .map(|p| format!("level {}", p.level))
        .unwrap_or_else(|| "starting".into());
    Some(format!("to {target}, {level}"))
}

/// Given 4.1.0 running, when the cluster is moved between 4.1.1 and 4.1.0 (an update, then a
/// rollback from the stored payload, and again) while the manager is SIGKILLed at random moments
/// (each new manager lives 50 to 450 ms after it is ready), then every update completes once:
/// one Completed history entry per update asked for, in order, and every level done.
#[tokio::test]
async fn updates_complete_once_through_repeated_manager_kills() {
    require_manager();
    let _turn = ONE_AT_A_TIME.lock().await;
    let admin = windlass_testkit::client().await;
    release_account(&admin).await;
    let repository = windlass_testkit::registry().unique_repository("kills");
    let (_, digests) = push_releases(&repository, &[("4.1.0", "4.1.0"), ("4.1.1", "4.1.1")]);
    let versions = Api::<ClusterVersion>::all(admin.clone());
    start_afresh(&versions).await;
    upgrade(&digests["4.1.0"], true);
    reach(&versions, "4.1.0").await;

    let mut seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut next_pause = move || {
        // xorshift: the pauses only need to differ, not to be good random numbers.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        Duration::from_millis(50 + seed % 400)
    };
    let mut asked = vec!["4.1.0"];
    let mut target = "4.1.1";
    // Where in the audit log each update was asked for: its writes follow, until the next.
    let mut windows = vec![audit_lines()];
    upgrade(&digests[target], true);
    asked.push(target);
    let mut landed: BTreeMap<String, usize> = BTreeMap::new();
    let mut during = 0;
    for _ in 0..60 {
        if during >= KILLS_DURING_UPDATES {
            break;
        }
        tokio::time::sleep(next_pause()).await;
        let before = versions.get(CLUSTER_VERSION_NAME).await.unwrap();
        let Some(when) = moment(&before, target) else {
            target = if target == "4.1.1" { "4.1.0" } else { "4.1.1" };
            windows.push(audit_lines());
            upgrade(&digests[target], true);
            asked.push(target);
            continue;
        };
        if kill_manager() {
            during += 1;
            *landed.entry(when).or_default() += 1;
        }
        restart_manager();
    }
    eprintln!(
        "kills during updates, by where the update stood: {landed:?}; updates asked: {asked:?}"
    );
    assert!(
        during >= KILLS_DURING_UPDATES,
        "only {during} kills landed during updates: {landed:?}"
    );

    let done = reach(&versions, target).await;
    let status = done.status.as_ref().unwrap();
    let history: Vec<(String, UpdateState)> = status
        .history
        .iter()
        .map(|h| (h.version.clone(), h.state))
        .collect();
    let expected: Vec<(String, UpdateState)> = asked
        .iter()
        .rev()
        .map(|v| (v.to_string(), UpdateState::Completed))
        .collect();
    assert_eq!(
        history, expected,
        "one Completed history entry per update asked for, none failed or repeated"
    );
    let not_done: Vec<&str> = status
        .levels
        .iter()
        .filter(|l| l.state != LevelState::Done)
        .map(|l| l.name.as_str())
        .collect();
    assert!(not_done.is_empty(), "levels not done: {not_done:?}");

    // Each update wrote each object at most once, however often its manager was killed: a
    // resumed manager finds what it applied already equal and leaves it.
    windows.push(audit_lines());
    let mut writes_seen = 0;
    for (update, window) in windows.windows(2).enumerate() {
        let writes = release_writes_by_object(window[0], window[1]);
        writes_seen += writes.len();
        let repeated: Vec<_> = writes.iter().filter(|(_, count)| **count > 1).collect();
        assert!(
            repeated.is_empty(),
            "update {} (to {}) wrote these objects more than once: {repeated:?}",
            update + 1,
            asked[update + 1]
        );
    }
    assert!(writes_seen > 0, "the updates' writes are in the audit log");
}
