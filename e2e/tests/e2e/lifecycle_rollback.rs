//! Rollbacks with the manager that `make e2e` runs: automatic after a failed upgrade (from the
//! revision stored in the cluster), manual through the Blueprint and the CLI, and the rule that
//! refuses a manual rollback across a minor version unless forced.

use std::{process::Command, time::Duration};

use kube::{
    Api,
    api::{Patch, PatchParams},
};
use serde_json::json;
use windlass_api::names::conditions;
use windlass_api::{
    Blueprint, ClusterServiceVersion, ConditionStatus, CsvPhase,
    blueprint::{BlueprintPhase, RevisionOutcome},
    subscription::SubscriptionState,
};
use windlass_testkit::{
    TestNamespace,
    lifecycle::{condition, is_at, phase, subscribe, wait_blueprint, wait_subscription},
    require_manager, run_ok,
};

const TIMEOUT: Duration = Duration::from_secs(180);

fn windlass() -> Command {
    let mut command = Command::new(windlass_testkit::windlass_binary());
    command.env("KUBECONFIG", windlass_testkit::kubeconfig_path());
    command
}

fn state(sub: &windlass_api::Subscription) -> Option<SubscriptionState> {
    sub.status.as_ref().and_then(|s| s.state)
}

/// Given acme-db 1.1.0 running on channel stable, when windlass upgrades to the broken 1.1.1
/// (its pods crash-loop), then after the progress deadline it restores 1.1.0 from the revision
/// it stored, records why, and does not try 1.1.1 again while nothing changes.
#[tokio::test]
async fn a_failed_upgrade_rolls_back_by_itself_and_is_not_retried() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "autorollback").await;
    let client = ns.client().clone();
    subscribe(
        &client,
        &ns.name,
        "db",
        json!({
            "package": "acme-db",
            "channel": "stable",
            "startingCSV": "acme-db.v1.1.0",
            "targetNamespaces": [ns.name],
            "rollback": { "automatic": true, "progressDeadlineSeconds": 20 },
        }),
    )
    .await;
    wait_blueprint(&client, &ns.name, "db", "trying 1.1.1", TIMEOUT, |b| {
        b.spec.cluster_service_version_name == "acme-db.v1.1.1"
    })
    .await;
    let failed_at = std::time::Instant::now();
    let blueprint = wait_blueprint(
        &client,
        &ns.name,
        "db",
        "RolledBack to 1.1.0",
        TIMEOUT,
        |b| is_at(b, BlueprintPhase::RolledBack, "1.1.0"),
    )
    .await;
    println!(
        "1.1.1 targeted -> 1.1.0 Succeeded again after {:?}",
        failed_at.elapsed()
    );
    let status = blueprint.status.as_ref().unwrap();
    let failed = status
        .history
        .iter()
        .find(|r| r.version == "1.1.1")
        .expect("the failed revision is in the history");
    assert_eq!(failed.outcome, RevisionOutcome::RolledBack);
    assert!(
        failed.reason.contains("acme-db-operator") || failed.reason.contains("deadline"),
        "the reason says what failed: {}",
        failed.reason
    );
    assert_eq!(status.history[0].version, "1.1.0");
    assert_eq!(status.history[0].outcome, RevisionOutcome::Completed);

    let sub = wait_subscription(&client, &ns.name, "db", "RolledBack", TIMEOUT, |s| {
        state(s) == Some(SubscriptionState::RolledBack)
    })
    .await;
    assert_eq!(
        sub.status.as_ref().unwrap().installed_csv.as_deref(),
        Some("acme-db.v1.1.0")
    );

    // No flapping: 1.1.1 is not tried again while the catalog and the user change nothing.
    let revision = blueprint.spec.revision;
    tokio::time::sleep(Duration::from_secs(30)).await;
    let later = Api::<Blueprint>::namespaced(client.clone(), &ns.name)
        .get("db")
        .await
        .unwrap();
    assert_eq!(later.spec.revision, revision, "no new revision started");
    assert_eq!(phase(&later), Some(BlueprintPhase::RolledBack));
    let csvs = Api::<ClusterServiceVersion>::namespaced(client.clone(), &ns.name);
    assert!(
        csvs.get_opt("acme-db.v1.1.1").await.unwrap().is_none(),
        "the failed CSV is gone"
    );
    let running = csvs.get("acme-db.v1.1.0").await.unwrap();
    assert_eq!(
        running.status.and_then(|s| s.phase),
        Some(CsvPhase::Succeeded)
    );
}

/// Given acme-db upgraded from 1.0.0 to 1.0.1, a person sets the Blueprint's target back to
/// the old CSV: windlass installs 1.0.0 again from its stored revision, and the Subscription
/// says the target is pinned by a person instead of moving it forward again. `windlass resume`
/// hands it back; `windlass rollback` does the same rollback from the CLI.
#[tokio::test]
async fn manual_rollback_through_the_blueprint_and_the_cli() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "manualrollback").await;
    let client = ns.client().clone();
    subscribe(
        &client,
        &ns.name,
        "db",
        json!({
            "package": "acme-db",
            "channel": "stable",
            "versionRange": "<1.1.0",
            "startingCSV": "acme-db.v1.0.0",
            "targetNamespaces": [ns.name],
        }),
    )
    .await;
    let blueprint = wait_blueprint(&client, &ns.name, "db", "1.0.1 Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.1")
    })
    .await;
    assert_eq!(
        blueprint.spec.old_cluster_service_version_name.as_deref(),
        Some("acme-db.v1.0.0")
    );

    // By hand: kubectl patch, as a person would.
    let blueprints = Api::<Blueprint>::namespaced(client.clone(), &ns.name);
    blueprints
        .patch(
            "db",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "clusterServiceVersionName": "acme-db.v1.0.0" } })),
        )
        .await
        .unwrap();
    wait_blueprint(&client, &ns.name, "db", "back at 1.0.0", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.0")
    })
    .await;
    let sub = wait_subscription(
        &client,
        &ns.name,
        "db",
        conditions::subscription::TARGET_PINNED,
        TIMEOUT,
        |s| {
            s.status
                .as_ref()
                .and_then(|st| condition(&st.conditions, conditions::subscription::TARGET_PINNED))
                .is_some_and(|c| c.status == ConditionStatus::True)
        },
    )
    .await;
    let pinned = condition(
        &sub.status.as_ref().unwrap().conditions,
        conditions::subscription::TARGET_PINNED,
    )
    .unwrap();
    assert!(
        pinned.message.contains("acme-db.v1.0.0"),
        "{}",
        pinned.message
    );
    // The Subscription does not move the target forward while a person holds it.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        blueprints
            .get("db")
            .await
            .unwrap()
            .spec
            .cluster_service_version_name,
        "acme-db.v1.0.0"
    );

    // Hand it back: the channel brings 1.0.1 again.
    run_ok(windlass().args(["resume", "db", "-n", &ns.name]));
    wait_blueprint(&client, &ns.name, "db", "1.0.1 again", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.1")
    })
    .await;

    // The CLI rollback: same move, waits for the outcome.
    let out = run_ok(windlass().args([
        "rollback",
        "db",
        "-n",
        &ns.name,
        "--wait",
        "--timeout",
        "180",
    ]));
    assert!(out.contains("acme-db.v1.0.0"), "{out}");
    let blueprint = wait_blueprint(&client, &ns.name, "db", "1.0.0 via the CLI", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.0")
    })
    .await;
    assert!(
        blueprint.status.unwrap().history.len() >= 4,
        "install, upgrade, rollback, upgrade, rollback are all recorded"
    );
}

/// A manual rollback from 1.1.0 to 1.0.1 crosses a minor version: refused with a condition that
/// says why, then allowed with `force`, and the forced move is recorded in the history.
#[tokio::test]
async fn a_rollback_across_a_minor_version_is_refused_unless_forced() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "forcedrollback").await;
    let client = ns.client().clone();
    subscribe(
        &client,
        &ns.name,
        "db",
        json!({
            "package": "acme-db",
            "channel": "candidate",
            "startingCSV": "acme-db.v1.0.1",
            "targetNamespaces": [ns.name],
        }),
    )
    .await;
    wait_blueprint(&client, &ns.name, "db", "1.1.0 Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.1.0")
    })
    .await;

    let refused = windlass()
        .args(["rollback", "db", "-n", &ns.name])
        .output()
        .unwrap();
    assert!(
        refused.status.success(),
        "setting the target succeeds; the controller decides"
    );
    let blueprint = wait_blueprint(
        &client,
        &ns.name,
        "db",
        "RollbackAllowed=False",
        TIMEOUT,
        |b| {
            b.status
                .as_ref()
                .and_then(|s| condition(&s.conditions, conditions::blueprint::ROLLBACK_ALLOWED))
                .is_some_and(|c| c.status == ConditionStatus::False)
        },
    )
    .await;
    let why = condition(
        &blueprint.status.as_ref().unwrap().conditions,
        conditions::blueprint::ROLLBACK_ALLOWED,
    )
    .unwrap();
    assert!(
        why.message.contains("force"),
        "the refusal says how to proceed: {}",
        why.message
    );
    assert_eq!(
        blueprint.status.as_ref().unwrap().version.as_deref(),
        Some("1.1.0"),
        "1.1.0 keeps running"
    );

    run_ok(windlass().args([
        "rollback",
        "db",
        "-n",
        &ns.name,
        "--force",
        "--wait",
        "--timeout",
        "180",
    ]));
    let blueprint = wait_blueprint(&client, &ns.name, "db", "forced to 1.0.1", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.1")
    })
    .await;
    let newest = &blueprint.status.as_ref().unwrap().history[0];
    assert_eq!(newest.version, "1.0.1");
    assert!(
        newest.forced,
        "a forced rollback is recorded as forced: {newest:?}"
    );
}
