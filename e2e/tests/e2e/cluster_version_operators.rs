//! Operators and the platform under one lifecycle: the sample releases `4.3.0-operators` and
//! `4.3.1-operators` carry, at level 20, a windlass Subscription to the built-in catalog's
//! acme-db pinned to 1.0.0 and 1.0.1. The update waits at that level until the Blueprint runs
//! the pinned version, and rolling the release back moves the operator back with it; when that
//! would cross the operator's minor version (`4.3.2-operators` pins 1.1.0), the Blueprint's own
//! rule refuses until a person forces it, and the release's level says so.

use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    api::{Patch, PatchParams},
    runtime::watcher,
};
use serde_json::json;
use windlass_api::{
    Blueprint, ClusterVersion, Subscription,
    blueprint::BlueprintPhase,
    clusterversion::{CLUSTER_VERSION_NAME, LevelState},
    condition::find,
    names::{conditions::cluster_version as types, reasons::cluster_version as reasons},
};
use windlass_testkit::{
    lifecycle::{is_at, wait_object},
    require_manager,
};

use crate::cluster_versions::{
    ONE_AT_A_TIME, TIMEOUT, completed_at, condition_is, push_releases, reach, release_account,
    remove_trust, start_afresh, upgrade,
};

const NAMESPACE: &str = "platform-operators";

fn operators_release(config_map: Option<ConfigMap>) -> Option<String> {
    config_map?.data?.get("version").cloned()
}

/// Given 4.3.0 applied (acme-db 1.0.0 installed through the payload's Subscription), when the
/// cluster moves to 4.3.1, then the update waits at level 20 naming the Subscription and the
/// version it waits for, level 30 is applied only once the Blueprint Succeeded at 1.0.1, and
/// rolling the release back to 4.3.0 brings the operator back to 1.0.0 from its stored
/// revision; after 4.3.2 (acme-db 1.1.0), going back to 4.3.0 waits on the Blueprint's refusal
/// to cross the operator's minor until it is forced.
#[tokio::test]
async fn a_release_waits_for_its_operators_and_takes_them_back_on_rollback() {
    require_manager();
    let _turn = ONE_AT_A_TIME.lock().await;
    let admin = windlass_testkit::client().await;
    release_account(&admin).await;
    let namespace = windlass_testkit::manager::namespace().unwrap();
    let repository = windlass_testkit::registry().unique_repository("operators");
    let (tags, digests) = push_releases(
        &repository,
        &[
            ("4.3.0-operators", "4.3.0"),
            ("4.3.1-operators", "4.3.1"),
            ("4.3.2-operators", "4.3.2"),
        ],
    );
    let versions = Api::<ClusterVersion>::all(admin.clone());
    start_afresh(&versions).await;
    remove_trust(&admin, &namespace).await;
    // What an earlier run left (its operator, its Blueprint's `force`) would decide for this one.
    windlass_testkit::delete_namespace_and_wait(&admin, NAMESPACE, TIMEOUT).await;
    let blueprints = Api::<Blueprint>::namespaced(admin.clone(), NAMESPACE);
    let subscriptions = Api::<Subscription>::namespaced(admin.clone(), NAMESPACE);
    let config_maps = Api::<ConfigMap>::namespaced(admin.clone(), NAMESPACE);

    upgrade(&tags["4.3.0"], true);
    reach(&versions, "4.3.0").await;
    let blueprint = blueprints.get("acme-db").await.expect("the Blueprint");
    assert!(
        is_at(&blueprint, BlueprintPhase::Succeeded, "1.0.0"),
        "4.3.0 completes with its operator at 1.0.0: {:?}",
        blueprint.status
    );

    // Forward: level 30 waits for the operator at 1.0.1.
    let started = Instant::now();
    upgrade(&tags["4.3.1"], true);
    let mut waited_on_the_operator = None;
    // Every status the updater writes is seen through a watch: the operator may reach 1.0.1
    // faster than any poll interval, and the wait at level 20 lasts only that long.
    let mut changes = std::pin::pin!(watcher::watch_object(
        versions.clone(),
        CLUSTER_VERSION_NAME
    ));
    loop {
        assert!(started.elapsed() < TIMEOUT, "4.3.1 did not complete");
        let version = match tokio::time::timeout(Duration::from_secs(1), changes.next()).await {
            Ok(Some(Ok(Some(version)))) => version,
            Ok(Some(Err(error))) => panic!("watching the ClusterVersion: {error}"),
            Ok(Some(Ok(None))) | Ok(None) | Err(_) => {
                versions.get(CLUSTER_VERSION_NAME).await.unwrap()
            }
        };
        // Read in this order: a level-30 ConfigMap of 4.3.1 seen first means the Blueprint,
        // read after it, must already be at 1.0.1.
        let release = operators_release(config_maps.get_opt("operators-release").await.unwrap());
        let blueprint = blueprints.get("acme-db").await.unwrap();
        if release.as_deref() == Some("4.3.1") {
            assert!(
                is_at(&blueprint, BlueprintPhase::Succeeded, "1.0.1"),
                "level 30 was applied before the operator ran 1.0.1: {:?}",
                blueprint.status
            );
        }
        let status = version.status.as_ref();
        if let Some(progress) = status.and_then(|s| s.progress.as_ref())
            && progress.level == "20"
            && progress
                .waiting_for
                .contains("Subscription platform-operators/acme-db")
        {
            let level_30 = status
                .and_then(|s| s.levels.iter().find(|level| level.name == "30"))
                .map(|level| level.state);
            assert_ne!(
                level_30,
                Some(LevelState::Done),
                "level 30 waits while level 20 does: {:?}",
                status.map(|s| &s.levels)
            );
            waited_on_the_operator = Some(progress.waiting_for.clone());
        }
        if completed_at(&version, "4.3.1") {
            break;
        }
    }
    let waiting_for = waited_on_the_operator.expect("the update was seen waiting at level 20");
    assert!(
        waiting_for.contains("to run version 1.0.1"),
        "it says which version it waits for: {waiting_for}"
    );
    println!("4.3.1 with acme-db 1.0.1 in {:?}", started.elapsed());
    // Back: the older release pins the older operator.
    let started = Instant::now();
    upgrade(&digests["4.3.0"], false);
    let back = reach(&versions, "4.3.0").await;
    println!(
        "rolled back to 4.3.0 with acme-db 1.0.0 in {:?}",
        started.elapsed()
    );
    assert_eq!(
        back.status.as_ref().unwrap().history[0].accepted_risks,
        "rollback from 4.3.1"
    );
    let blueprint = blueprints.get("acme-db").await.unwrap();
    assert!(
        is_at(&blueprint, BlueprintPhase::Succeeded, "1.0.0"),
        "the operator went back with the release: {:?}",
        blueprint.status
    );
    let newest = &blueprint.status.as_ref().unwrap().history[0];
    assert!(
        newest.restored_from.is_some(),
        "1.0.0 came back from its stored revision: {newest:?}"
    );
    let subscription = subscriptions.get("acme-db").await.unwrap();
    assert_eq!(
        subscription
            .status
            .as_ref()
            .and_then(|s| s.installed_csv.as_deref()),
        Some("acme-db.v1.0.0")
    );
    assert_eq!(
        operators_release(config_maps.get_opt("operators-release").await.unwrap()).as_deref(),
        Some("4.3.0")
    );

    rollback_across_an_operator_minor(&versions, &blueprints, &tags["4.3.2"], &digests["4.3.0"])
        .await;

    versions
        .delete(CLUSTER_VERSION_NAME, &Default::default())
        .await
        .expect("deleting the ClusterVersion");
}

/// 4.3.2 pins acme-db 1.1.0; rolling the release back to 4.3.0 (within the release's minor)
/// asks the operator to go back across its own minor, which the Blueprint refuses unless a
/// person forces it: the level fails naming that refusal, and once the Blueprint's `force` is
/// set the operator goes back and the rollback completes.
async fn rollback_across_an_operator_minor(
    versions: &Api<ClusterVersion>,
    blueprints: &Api<Blueprint>,
    newer: &str,
    older: &str,
) {
    upgrade(newer, true);
    reach(versions, "4.3.2").await;
    let blueprint = blueprints.get("acme-db").await.unwrap();
    assert!(
        is_at(&blueprint, BlueprintPhase::Succeeded, "1.1.0"),
        "{:?}",
        blueprint.status
    );
    upgrade(older, false);
    let failing = wait_object(
        versions,
        CLUSTER_VERSION_NAME,
        "level 20 failing on the Blueprint's refusal",
        TIMEOUT,
        |v| condition_is(v, types::FAILING, "True", reasons::LEVEL_FAILING),
    )
    .await;
    let message = &find(&failing.status.as_ref().unwrap().conditions, types::FAILING)
        .unwrap()
        .message;
    assert!(
        message.contains("level 20")
            && message.contains("Subscription platform-operators/acme-db")
            && message.contains("RollbackCrossesVersion"),
        "the condition names the level, the Subscription and the refusal: {message}"
    );
    println!("the release's level says: {message}");
    blueprints
        .patch(
            "acme-db",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"force": true}})),
        )
        .await
        .expect("forcing the Blueprint");
    reach(versions, "4.3.0").await;
    let blueprint = blueprints.get("acme-db").await.unwrap();
    assert!(
        is_at(&blueprint, BlueprintPhase::Succeeded, "1.0.0"),
        "{:?}",
        blueprint.status
    );
    assert!(
        blueprint.status.as_ref().unwrap().history[0].forced,
        "the forced operator rollback is recorded"
    );
    // `force` is a person's one-off: left on, it would let every later move through.
    blueprints
        .patch(
            "acme-db",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"force": false}})),
        )
        .await
        .expect("unforcing the Blueprint");
}
