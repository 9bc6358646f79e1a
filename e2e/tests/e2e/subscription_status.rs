//! What a Subscription reports, with the manager that `make e2e` runs: nothing written once it
//! has settled, and catalog trouble named on the Subscriptions it affects.

use std::time::Duration;

use kube::api::{Patch, PatchParams};
use serde_json::json;
use windlass_api::{
    ConditionStatus, Subscription, blueprint::BlueprintPhase, catalog::CatalogPhase,
    subscription::SubscriptionState,
};
use windlass_testkit::{
    TestNamespace,
    catalogs::{TestCatalog, phase as catalog_phase, publish},
    lifecycle::{condition, is_at, subscribe, wait_blueprint, wait_subscription},
    manager::audit_log,
    require_manager, unique_name,
};

const TIMEOUT: Duration = Duration::from_secs(180);

fn state(sub: &Subscription) -> Option<SubscriptionState> {
    sub.status.as_ref().and_then(|s| s.state)
}

/// The manager's completed writes to objects in `namespace`, from the apiserver's audit log.
fn writes_in(namespace: &str) -> usize {
    let text = std::fs::read_to_string(audit_log()).unwrap_or_default();
    let scope = format!("\"namespace\":\"{namespace}\"");
    text.lines()
        .filter(|line| {
            line.contains("\"userAgent\":\"windlass-manager/")
                && line.contains("\"stage\":\"ResponseComplete\"")
                && line.contains(&scope)
        })
        .count()
}

/// Given acme-db installed and at the latest version its channel offers, nothing the manager
/// owns in the namespace is written again while nothing changes: status is compared before it
/// is written and the Blueprint is applied only when its intent changed.
#[tokio::test]
async fn a_settled_subscription_makes_no_writes() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "settled").await;
    let client = ns.client().clone();
    subscribe(
        &client,
        &ns.name,
        "db",
        json!({ "package": "acme-db", "targetNamespaces": [ns.name] }),
    )
    .await;
    wait_subscription(&client, &ns.name, "db", "AtLatestKnown", TIMEOUT, |s| {
        state(s) == Some(SubscriptionState::AtLatestKnown)
    })
    .await;
    // Let the last status writes and Events land in the audit log.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let before = writes_in(&ns.name);
    tokio::time::sleep(Duration::from_secs(20)).await;
    let after = writes_in(&ns.name);
    assert_eq!(after, before, "writes in {} while nothing changed", ns.name);
}

/// Given acme-db installed from a catalog of bundle images, when one of the catalog's images
/// can no longer be pulled, then the Subscription says CatalogSourcesUnhealthy=True naming the
/// catalog, and keeps running what it installed.
#[tokio::test]
async fn an_unreachable_catalog_is_named_on_its_subscriptions() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "catalogdown").await;
    let client = ns.client().clone();
    let package = unique_name("acme-db-down");
    let image = publish(&package, "acme-db/1.0.0", |_| {}).await;
    let test_catalog = TestCatalog::create(&client, "down", std::slice::from_ref(&image)).await;
    let catalog = test_catalog.name.clone();
    test_catalog
        .wait("Serving", |c| {
            catalog_phase(c) == Some(CatalogPhase::Serving)
        })
        .await;
    subscribe(
        &client,
        &ns.name,
        "db",
        json!({ "package": package, "catalog": catalog, "targetNamespaces": [ns.name] }),
    )
    .await;
    wait_blueprint(&client, &ns.name, "db", "1.0.0 Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.0")
    })
    .await;
    let healthy = |s: &Subscription| {
        s.status
            .as_ref()
            .and_then(|st| condition(&st.conditions, "CatalogSourcesUnhealthy"))
            .map(|c| c.status)
    };
    wait_subscription(&client, &ns.name, "db", "catalogs healthy", TIMEOUT, |s| {
        healthy(s) == Some(ConditionStatus::False)
    })
    .await;

    // Nothing listens on port 1.
    let dead = format!("127.0.0.1:1/acme/{package}:1.0.1");
    let sources = json!({ "spec": { "source": { "bundleImages": [image, dead] } } });
    test_catalog
        .api()
        .patch(&catalog, &PatchParams::default(), &Patch::Merge(sources))
        .await
        .unwrap();
    let sub = wait_subscription(
        &client,
        &ns.name,
        "db",
        "CatalogSourcesUnhealthy",
        TIMEOUT,
        |s| healthy(s) == Some(ConditionStatus::True),
    )
    .await;
    let status = sub.status.as_ref().unwrap();
    let unhealthy = condition(&status.conditions, "CatalogSourcesUnhealthy").unwrap();
    assert!(
        unhealthy.message.contains(&catalog),
        "{}",
        unhealthy.message
    );
    assert_eq!(
        state(&sub),
        Some(SubscriptionState::AtLatestKnown),
        "what runs keeps running"
    );
    assert_eq!(status.installed_csv.as_deref(), Some("acme-db.v1.0.0"));
}
