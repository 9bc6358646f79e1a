//! Going back between the sample releases of `e2e/releases`: a rollback within the minor is
//! applied from the payload stored in the cluster (no registry request, even after a manager
//! restart), one across a minor is refused until forced, one past an irreversible level is
//! refused, and automatic rollback undoes a failing update only before such a level.

use std::path::{Path, PathBuf};

use k8s_openapi::api::apps::v1::Deployment;
use kube::{Api, api::DeleteParams};
use serde_json::json;
use windlass_api::{
    ClusterVersion,
    clusterversion::{CLUSTER_VERSION_NAME, UpdateState},
    condition::find,
    names::{conditions::cluster_version as types, reasons::cluster_version as reasons},
};
use windlass_testkit::{lifecycle::wait_object, require_manager};

use crate::cluster_versions::{
    ONE_AT_A_TIME, TIMEOUT, audit_lines, completed_at, level_of_objects, push_releases, reach,
    refused_with, release_account, set_spec, start_afresh, upgrade, written_levels,
};
use crate::release_payloads::{release_new, releases};

fn history_of(version: &ClusterVersion) -> Vec<(String, UpdateState)> {
    version
        .status
        .as_ref()
        .map(|s| {
            s.history
                .iter()
                .map(|h| (h.version.clone(), h.state))
                .collect()
        })
        .unwrap_or_default()
}

/// Given 4.1.0 and then 4.1.1 applied, when the ClusterVersion asks for 4.1.0 again (by
/// digest, after a manager restart), then the cluster goes back from the payload stored in the
/// cluster without a registry request; after 4.2.0 (which starts the irreversible level 40) a
/// rollback to 4.1.0 is refused even forced; with automatic rollback on, the broken 4.2.1
/// (failing at level 30, before level 40) goes back to 4.2.0 by itself and is held back, while
/// the broken 4.2.2 (failing at level 50, after it started level 40) stays, saying why.
#[tokio::test]
async fn releases_roll_back_from_stored_payloads_until_an_irreversible_level() {
    require_manager();
    let _turn = ONE_AT_A_TIME.lock().await;
    let admin = windlass_testkit::client().await;
    release_account(&admin).await;
    let repository = windlass_testkit::registry().unique_repository("rollback");
    let (tags, digests) = push_releases(
        &repository,
        &[
            ("4.1.0", "4.1.0"),
            ("4.1.1", "4.1.1"),
            ("4.2.0", "4.2.0"),
            ("4.2.1-broken", "4.2.1"),
            ("4.2.2-broken-late", "4.2.2"),
        ],
    );
    let versions = Api::<ClusterVersion>::all(admin.clone());
    start_afresh(&versions).await;
    set_spec(
        &versions,
        json!({"levelDeadlineSeconds": 15, "rollback": {"automatic": true}}),
    )
    .await;
    upgrade(&tags["4.1.0"], true);
    reach(&versions, "4.1.0").await;
    upgrade(&tags["4.1.1"], true);
    reach(&versions, "4.1.1").await;

    // Back within the minor, from the copy stored in the cluster: no registry request.
    crate::manager_kills::restart_manager();
    let requests = windlass_testkit::registry_requests(&repository).len();
    assert!(
        requests > 0,
        "the registry's log shows the pushes and pulls so far"
    );
    upgrade(&digests["4.1.0"], false);
    let back = reach(&versions, "4.1.0").await;
    assert_eq!(
        windlass_testkit::registry_requests(&repository).len(),
        requests,
        "the rollback pulled nothing"
    );
    let entry = &back.status.as_ref().unwrap().history[0];
    assert_eq!(entry.accepted_risks, "rollback from 4.1.1");
    assert_eq!(
        history_of(&back),
        [
            ("4.1.0".to_string(), UpdateState::Completed),
            ("4.1.1".to_string(), UpdateState::Completed),
            ("4.1.0".to_string(), UpdateState::Completed),
        ]
    );

    // 4.2.0, a minor update, starts the irreversible level 40: going back past it is refused,
    // forced or not. Its writes land level by level, as the API server recorded them.
    let start = audit_lines();
    upgrade(&tags["4.2.0"], true);
    let at_420 = reach(&versions, "4.2.0").await;
    let (levels_420, names) = level_of_objects("4.2.0");
    let account = format!(
        "system:serviceaccount:{}:windlass-release",
        windlass_testkit::manager::namespace().unwrap_or_default()
    );
    let order = written_levels(start, &account, &levels_420);
    assert!(
        order.len() >= 3 && order.windows(2).all(|w| w[0] <= w[1]),
        "the minor update's writes by level ({names:?}): {order:?}"
    );
    assert_eq!(
        at_420.status.as_ref().unwrap().history[0].crossed_irreversible,
        ["40"]
    );
    upgrade(&digests["4.1.0"], true);
    let (refused, message) =
        refused_with(&versions, "rollback refused", reasons::ROLLBACK_REFUSED).await;
    let message = &message;
    assert!(
        message.contains("irreversible") && message.contains("40"),
        "{message}"
    );
    assert_eq!(
        refused
            .status
            .as_ref()
            .unwrap()
            .desired
            .as_ref()
            .unwrap()
            .version,
        "4.2.0"
    );

    // Broken before the irreversible level: back to 4.2.0 by itself, 4.2.1 held back.
    upgrade(&tags["4.2.1"], true);
    let rolled_back = wait_object(
        &versions,
        CLUSTER_VERSION_NAME,
        "rolled back to 4.2.0",
        TIMEOUT,
        |v| completed_at(v, "4.2.0") && history_of(v).len() == 6,
    )
    .await;
    let status = rolled_back.status.as_ref().unwrap();
    assert!(
        status.history[0]
            .accepted_risks
            .starts_with("automatic rollback: 4.2.1 failed at level 30"),
        "{}",
        status.history[0].accepted_risks
    );
    assert_eq!(status.history[1].version, "4.2.1");
    assert_eq!(status.history[1].state, UpdateState::Partial);
    assert_eq!(
        status.held_back.as_ref().map(|h| h.version.as_str()),
        Some("4.2.1")
    );

    // Broken after it: no way back, and the condition says so.
    upgrade(&tags["4.2.2"], true);
    let stuck = wait_object(
        &versions,
        CLUSTER_VERSION_NAME,
        "4.2.2 failing without rollback",
        TIMEOUT,
        |v| {
            v.status
                .as_ref()
                .and_then(|s| find(&s.conditions, types::FAILING))
                .is_some_and(|c| c.message.contains("automatic rollback refused"))
        },
    )
    .await;
    let status = stuck.status.as_ref().unwrap();
    let failing = &find(&status.conditions, types::FAILING).unwrap().message;
    assert!(
        failing.contains("level 50") && failing.contains("irreversible"),
        "{failing}"
    );
    assert_eq!(status.desired.as_ref().unwrap().version, "4.2.2");
    assert!(status.held_back.is_none());

    versions
        .delete(CLUSTER_VERSION_NAME, &DeleteParams::default())
        .await
        .expect("deleting the ClusterVersion");
}

/// A copy of sample release `dir` renumbered from `from` to `to` throughout (metadata, the
/// image list's name, the version its objects carry), in a new temporary directory.
pub(crate) fn renumbered(dir: &str, from: &str, to: &str) -> PathBuf {
    fn copy(source: &Path, target: &Path, from: &str, to: &str) {
        std::fs::create_dir_all(target).unwrap();
        for entry in std::fs::read_dir(source).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let into = target.join(entry.file_name());
            if path.is_dir() {
                copy(&path, &into, from, to);
            } else {
                let text = std::fs::read_to_string(&path).unwrap();
                std::fs::write(into, text.replace(from, to)).unwrap();
            }
        }
    }
    let target = std::env::temp_dir().join(windlass_testkit::unique_name("release"));
    copy(&releases().join(dir), &target, from, to);
    target
}

/// Given 4.0.0 (the 4.1.0 sample renumbered) and then the minor update 4.1.0 applied, when the
/// ClusterVersion asks for 4.0.0 again, then the rollback is refused because it crosses a minor
/// (`RollbackRefused`, saying that force lets it through) and nothing changes; forced, the
/// cluster goes back from the stored payload (the Deployments run 4.0.0 again) and history
/// records the forced rollback.
#[tokio::test]
async fn a_rollback_across_a_minor_is_refused_until_forced() {
    require_manager();
    let _turn = ONE_AT_A_TIME.lock().await;
    let admin = windlass_testkit::client().await;
    release_account(&admin).await;
    let repository = windlass_testkit::registry().unique_repository("rollback-minor");
    let dir = renumbered("4.1.0", "4.1.0", "4.0.0");
    let at_400 = format!(
        "{repository}@{}",
        release_new(&dir, "4.0.0", &format!("{repository}:4.0.0"))
    );
    let _ = std::fs::remove_dir_all(&dir);
    let (tags, _) = push_releases(&repository, &[("4.1.0", "4.1.0")]);
    let versions = Api::<ClusterVersion>::all(admin.clone());
    start_afresh(&versions).await;
    upgrade(&at_400, true);
    reach(&versions, "4.0.0").await;
    upgrade(&tags["4.1.0"], true);
    reach(&versions, "4.1.0").await;

    upgrade(&at_400, false);
    let (refused, message) = refused_with(
        &versions,
        "rollback across a minor",
        reasons::ROLLBACK_REFUSED,
    )
    .await;
    assert!(
        message.contains("changes the major or minor version") && message.contains("force"),
        "{message}"
    );
    let status = refused.status.as_ref().unwrap();
    assert_eq!(status.desired.as_ref().unwrap().version, "4.1.0");
    assert_eq!(
        history_of(&refused)[0],
        ("4.1.0".to_string(), UpdateState::Completed)
    );

    upgrade(&at_400, true);
    let back = reach(&versions, "4.0.0").await;
    let entry = &back.status.as_ref().unwrap().history[0];
    assert!(
        entry
            .accepted_risks
            .starts_with("Forced rollback: going from 4.1.0 back to 4.0.0"),
        "{}",
        entry.accepted_risks
    );
    let dns = Api::<Deployment>::namespaced(admin.clone(), "platform-dns")
        .get("dns-operator")
        .await
        .expect("the dns operator");
    let env =
        serde_json::to_value(&dns).unwrap()["spec"]["template"]["spec"]["containers"][0]["env"]
            .clone();
    assert!(
        env.to_string().contains("\"4.0.0\""),
        "the Deployment runs 4.0.0 again: {env}"
    );

    versions
        .delete(CLUSTER_VERSION_NAME, &DeleteParams::default())
        .await
        .expect("deleting the ClusterVersion");
}
