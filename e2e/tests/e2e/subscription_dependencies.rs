//! Dependency Subscriptions, with the manager that `make e2e` runs: a Subscription a person
//! made for the dependency is used as it is, and one windlass made goes away with the last
//! Subscription that needed it.

use std::time::Duration;

use kube::{Api, ResourceExt, api::DeleteParams};
use serde_json::json;
use windlass_api::{Blueprint, Subscription, blueprint::BlueprintPhase};
use windlass_testkit::{
    TestNamespace,
    lifecycle::{is_at, subscribe, wait_blueprint, wait_subscription},
    require_manager, wait_until,
};

const TIMEOUT: Duration = Duration::from_secs(180);

fn required_by(sub: &Subscription) -> Vec<String> {
    sub.status
        .as_ref()
        .map(|s| s.required_by.clone())
        .unwrap_or_default()
}

/// Given a person's own Subscription "my-db" for acme-db, when they subscribe to acme-monitor
/// (which needs acme-db), then windlass uses "my-db" for the dependency: it creates no second
/// Subscription, never owns "my-db", and lists acme-monitor in its requiredBy. Deleting
/// acme-monitor leaves "my-db" alone.
#[tokio::test]
async fn a_persons_subscription_for_the_dependency_is_used_and_never_owned() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "owndep").await;
    let client = ns.client().clone();
    subscribe(
        &client,
        &ns.name,
        "my-db",
        json!({ "package": "acme-db", "targetNamespaces": [ns.name] }),
    )
    .await;
    wait_blueprint(
        &client,
        &ns.name,
        "my-db",
        "acme-db Succeeded",
        TIMEOUT,
        |b| is_at(b, BlueprintPhase::Succeeded, "1.1.0"),
    )
    .await;
    subscribe(
        &client,
        &ns.name,
        "acme-monitor",
        json!({ "package": "acme-monitor", "targetNamespaces": [ns.name] }),
    )
    .await;
    wait_blueprint(
        &client,
        &ns.name,
        "acme-monitor",
        "acme-monitor Succeeded",
        TIMEOUT,
        |b| is_at(b, BlueprintPhase::Succeeded, "0.2.0"),
    )
    .await;
    let mine = wait_subscription(
        &client,
        &ns.name,
        "my-db",
        "requiredBy acme-monitor",
        TIMEOUT,
        |s| required_by(s) == ["acme-monitor"],
    )
    .await;
    assert!(
        mine.owner_references().is_empty(),
        "{:?}",
        mine.owner_references()
    );
    let subs = Api::<Subscription>::namespaced(client.clone(), &ns.name);
    assert!(
        subs.get_opt("acme-db").await.unwrap().is_none(),
        "no second Subscription for acme-db"
    );

    subs.delete("acme-monitor", &DeleteParams::default())
        .await
        .unwrap();
    wait_subscription(
        &client,
        &ns.name,
        "my-db",
        "nobody requires it any more",
        TIMEOUT,
        |s| required_by(s).is_empty(),
    )
    .await;
    let blueprints = Api::<Blueprint>::namespaced(client.clone(), &ns.name);
    let still = blueprints.get("my-db").await.unwrap();
    assert!(
        is_at(&still, BlueprintPhase::Succeeded, "1.1.0"),
        "the person's acme-db keeps running"
    );
}

/// Given acme-monitor installed with the acme-db Subscription windlass created for it, when the
/// person deletes acme-monitor, then Kubernetes deletes the acme-db Subscription too (its only
/// owner is gone), and with it acme-db's Blueprint.
#[tokio::test]
async fn a_dependency_goes_with_the_last_subscription_that_needed_it() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "depgc").await;
    let client = ns.client().clone();
    subscribe(
        &client,
        &ns.name,
        "acme-monitor",
        json!({ "package": "acme-monitor", "targetNamespaces": [ns.name] }),
    )
    .await;
    wait_blueprint(
        &client,
        &ns.name,
        "acme-monitor",
        "acme-monitor Succeeded",
        TIMEOUT,
        |b| is_at(b, BlueprintPhase::Succeeded, "0.2.0"),
    )
    .await;
    let subs = Api::<Subscription>::namespaced(client.clone(), &ns.name);
    let dependency = subs.get("acme-db").await.unwrap();
    let owners: Vec<(String, Option<bool>)> = dependency
        .owner_references()
        .iter()
        .map(|o| (o.name.clone(), o.controller))
        .collect();
    assert_eq!(
        owners,
        [("acme-monitor".to_string(), Some(false))],
        "owned, not controlled"
    );

    subs.delete("acme-monitor", &DeleteParams::default())
        .await
        .unwrap();
    let blueprints = Api::<Blueprint>::namespaced(client.clone(), &ns.name);
    wait_until(
        "acme-db's Subscription and Blueprint deleted",
        TIMEOUT,
        || async {
            subs.get_opt("acme-db").await.ok().flatten().is_none()
                && blueprints.get_opt("acme-db").await.ok().flatten().is_none()
        },
    )
    .await;
}
