//! Subscriptions install and upgrade operators from the built-in catalog, with the manager that
//! `make e2e` runs: dependencies first, upgrades along a channel, manual approval.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::{Api, ResourceExt, api::ListParams};
use serde_json::json;
use windlass_api::names::revision_secret;
use windlass_api::{
    ClusterServiceVersion, Subscription,
    blueprint::{BlueprintPhase, RevisionOutcome},
    subscription::SubscriptionState,
};
use windlass_testkit::{
    TestNamespace,
    lifecycle::{approve, is_at, phase, subscribe, wait_blueprint, wait_subscription},
    require_manager,
};

const TIMEOUT: Duration = Duration::from_secs(180);

/// Given the built-in catalog, when a user subscribes to acme-monitor (which needs acme-db),
/// then windlass creates a Subscription for acme-db marked as a dependency, installs acme-db
/// before acme-monitor, and both reach Succeeded at the default channel heads.
#[tokio::test]
async fn subscribing_to_acme_monitor_installs_acme_db_first() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "deps").await;
    let client = ns.client().clone();
    subscribe(
        &client,
        &ns.name,
        "acme-monitor",
        json!({ "package": "acme-monitor", "targetNamespaces": [ns.name] }),
    )
    .await;

    let monitor = wait_blueprint(
        &client,
        &ns.name,
        "acme-monitor",
        "acme-monitor Succeeded",
        TIMEOUT,
        |b| is_at(b, BlueprintPhase::Succeeded, "0.2.0"),
    )
    .await;
    let db = wait_blueprint(
        &client,
        &ns.name,
        "acme-db",
        "acme-db Succeeded",
        TIMEOUT,
        |b| is_at(b, BlueprintPhase::Succeeded, "1.1.0"),
    )
    .await;
    assert_eq!(
        monitor
            .spec
            .dependencies
            .iter()
            .map(|d| d.package.as_str())
            .collect::<Vec<_>>(),
        ["acme-db"],
        "the dependency closure is recorded on the requester's Blueprint"
    );

    let subs = Api::<Subscription>::namespaced(client.clone(), &ns.name);
    let dependency = subs.get("acme-db").await.unwrap();
    assert_eq!(
        dependency
            .labels()
            .get("windlass.dev/dependency")
            .map(String::as_str),
        Some("true")
    );
    assert!(
        dependency
            .owner_references()
            .iter()
            .any(|o| o.kind == "Subscription" && o.name == "acme-monitor"),
        "the dependency is owned by its requester: {:?}",
        dependency.owner_references()
    );
    let dependency = wait_subscription(
        &client,
        &ns.name,
        "acme-db",
        "requiredBy acme-monitor",
        TIMEOUT,
        |s| {
            s.status
                .as_ref()
                .is_some_and(|st| st.required_by.iter().any(|r| r == "acme-monitor"))
        },
    )
    .await;
    assert_eq!(
        dependency.status.as_ref().unwrap().installed_csv.as_deref(),
        Some("acme-db.v1.1.0")
    );

    // Installed in order: acme-db's revision completed before acme-monitor's CSV was created.
    let db_done = db.status.as_ref().unwrap().history[0]
        .completion_time
        .clone()
        .expect("a completed revision has a completion time");
    let csvs = Api::<ClusterServiceVersion>::namespaced(client.clone(), &ns.name);
    let monitor_csv = csvs.get("acme-monitor.v0.2.0").await.unwrap();
    let monitor_created = monitor_csv.metadata.creation_timestamp.clone().unwrap();
    assert!(
        monitor_created.0 >= db_done.0,
        "acme-monitor's CSV ({:?}) was created before acme-db completed ({:?})",
        monitor_created.0,
        db_done.0
    );
    let sub = wait_subscription(
        &client,
        &ns.name,
        "acme-monitor",
        "AtLatestKnown",
        TIMEOUT,
        |s| s.status.as_ref().and_then(|st| st.state) == Some(SubscriptionState::AtLatestKnown),
    )
    .await;
    assert_eq!(
        sub.status.unwrap().installed_csv.as_deref(),
        Some("acme-monitor.v0.2.0")
    );
}

/// Given acme-db installed at 1.0.0 on channel candidate with automatic approval, windlass
/// upgrades along the channel's edges (the skipRange of 1.1.0 jumps over 1.0.1) and rolls the
/// operator's Deployment in place.
#[tokio::test]
async fn automatic_upgrade_follows_the_channel_and_rolls_the_deployment_in_place() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "upgrade").await;
    let client = ns.client().clone();
    subscribe(
        &client,
        &ns.name,
        "db",
        json!({
            "package": "acme-db",
            "channel": "candidate",
            "startingCSV": "acme-db.v1.0.0",
            "targetNamespaces": [ns.name],
        }),
    )
    .await;
    let deployments = Api::<Deployment>::namespaced(client.clone(), &ns.name);
    // The first Deployment, at 1.0.0: remember its uid.
    let first = windlass_testkit::wait_for("the acme-db Deployment", TIMEOUT, || async {
        deployments
            .get_opt("acme-db-operator")
            .await
            .ok()
            .flatten()
            .ok_or_else(|| "absent".to_string())
    })
    .await;
    let blueprint = wait_blueprint(&client, &ns.name, "db", "upgraded to 1.1.0", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.1.0")
    })
    .await;
    let history = &blueprint.status.as_ref().unwrap().history;
    let versions: Vec<(&str, RevisionOutcome)> = history
        .iter()
        .map(|r| (r.version.as_str(), r.outcome))
        .collect();
    assert_eq!(
        versions,
        [
            ("1.1.0", RevisionOutcome::Completed),
            ("1.0.0", RevisionOutcome::Completed)
        ],
        "newest first, one hop over 1.0.1 thanks to the skipRange"
    );
    assert_eq!(blueprint.spec.old_version.as_deref(), Some("1.0.0"));
    assert_eq!(
        blueprint.spec.old_cluster_service_version_name.as_deref(),
        Some("acme-db.v1.0.0")
    );
    let now = deployments.get("acme-db-operator").await.unwrap();
    assert_eq!(
        now.uid(),
        first.uid(),
        "the Deployment was rolled in place, not recreated"
    );
    // The old CSV is gone once the new one Succeeded.
    let csvs = Api::<ClusterServiceVersion>::namespaced(client.clone(), &ns.name);
    windlass_testkit::wait_until("acme-db.v1.0.0 deleted", TIMEOUT, || async {
        csvs.get_opt("acme-db.v1.0.0")
            .await
            .ok()
            .flatten()
            .is_none()
    })
    .await;
    // One revision Secret per revision.
    let secrets = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), &ns.name)
        .list(&ListParams::default().labels("windlass.dev/blueprint=db"))
        .await
        .unwrap();
    let mut names: Vec<String> = secrets.items.iter().map(|s| s.name_any()).collect();
    names.sort();
    // One revision Secret per revision, and the upgrade's snapshot of the Databases that ran
    // before it (none here, still recorded) next to its revision.
    assert_eq!(names, ["db.r1", "db.r2", "db.r2.operands.0"]);
    for secret in &secrets.items {
        let expected = if secret.name_any().contains(".operands.") {
            windlass_api::names::operands_secret::TYPE
        } else {
            revision_secret::TYPE
        };
        assert_eq!(
            secret.type_.as_deref(),
            Some(expected),
            "{}",
            secret.name_any()
        );
    }
}

/// Given approval Manual, the Blueprint waits in RequiresApproval with nothing installed until
/// a person sets `approved: true`.
#[tokio::test]
async fn manual_approval_waits_for_a_person() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "approval").await;
    let client = ns.client().clone();
    subscribe(
        &client,
        &ns.name,
        "db",
        json!({
            "package": "acme-db",
            "approval": "Manual",
            "startingCSV": "acme-db.v1.0.1",
            "targetNamespaces": [ns.name],
        }),
    )
    .await;
    wait_blueprint(&client, &ns.name, "db", "RequiresApproval", TIMEOUT, |b| {
        phase(b) == Some(BlueprintPhase::RequiresApproval)
    })
    .await;
    let sub = wait_subscription(&client, &ns.name, "db", "UpgradePending", TIMEOUT, |s| {
        s.status.as_ref().and_then(|st| st.state) == Some(SubscriptionState::UpgradePending)
    })
    .await;
    assert_eq!(
        sub.status.unwrap().current_csv.as_deref(),
        Some("acme-db.v1.0.1")
    );
    // Nothing is installed while it waits.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let csvs = Api::<ClusterServiceVersion>::namespaced(client.clone(), &ns.name);
    assert!(
        csvs.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );

    approve(&client, &ns.name, "db").await;
    // From history, not the phase: Succeeded lasts only until the next upgrade is resolved.
    wait_blueprint(&client, &ns.name, "db", "1.0.1 Completed", TIMEOUT, |b| {
        b.status
            .iter()
            .flat_map(|s| &s.history)
            .any(|r| r.version == "1.0.1" && r.outcome == RevisionOutcome::Completed)
    })
    .await;
    // The next upgrade (to 1.1.0) waits for approval again: approval is per revision.
    let next = wait_blueprint(
        &client,
        &ns.name,
        "db",
        "the upgrade waits for approval",
        TIMEOUT,
        |b| {
            phase(b) == Some(BlueprintPhase::RequiresApproval)
                && b.spec.cluster_service_version_name == "acme-db.v1.1.0"
        },
    )
    .await;
    assert!(
        !next.spec.approved,
        "approval does not carry over to the next revision"
    );
}
