//! Deleting the Catalog a package was installed from: the install keeps running and its
//! Subscription says Delisted, naming the removed catalog, once. Nothing storms: no stream of
//! resolution failures or Events, no writes, no reconcile loop, over a window longer than the
//! catalog poll and the Subscription's retry. Its own module, so the manager's reconcile count
//! is this test's alone.

use crate::common::isolated::Isolated;
use std::time::{Duration, Instant};

use k8s_openapi::api::{apps::v1::Deployment, core::v1::Namespace, events::v1::Event};
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams},
};
use serde_json::json;
use windlass_api::{
    Blueprint, ConditionStatus, Subscription,
    blueprint::BlueprintPhase,
    names::{conditions, reasons},
};
use windlass_testkit::{
    TEST_NAMESPACE_LABEL, TestNamespace,
    catalogs::TestCatalog,
    lifecycle::{condition, is_at, subscribe, wait_blueprint, wait_subscription},
    manager, require_manager, wait_until,
};

const TIMEOUT: Duration = Duration::from_secs(180);
/// Longer than the test catalog's poll (5 s) and the Subscription controller's retry (30 s).
const WINDOW: Duration = Duration::from_secs(45);

fn delisted(sub: &Subscription) -> Option<&windlass_api::Condition> {
    condition(
        &sub.status.as_ref()?.conditions,
        conditions::subscription::DELISTED,
    )
}

/// The Events about Subscription `name` in `namespace`, by reason.
async fn subscription_events(client: &Client, namespace: &str, name: &str) -> Vec<(String, i32)> {
    Api::<Event>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| {
            e.regarding.as_ref().is_some_and(|r| {
                r.kind.as_deref() == Some("Subscription") && r.name.as_deref() == Some(name)
            })
        })
        .map(|e| {
            let count = e.deprecated_count.unwrap_or(1)
                + e.series.as_ref().map(|s| s.count - 1).unwrap_or(0);
            (e.reason.unwrap_or_default(), count)
        })
        .collect()
}

/// Other tests' namespaces still being deleted make the manager reconcile; wait for them to
/// go, so the reconcile count below is this test's.
async fn wait_for_quiet(client: &Client, mine: &str) {
    let namespaces = Api::<Namespace>::all(client.clone());
    wait_until(
        "other test namespaces to finish deleting",
        TIMEOUT,
        || async {
            namespaces
                .list(&ListParams::default().labels(&format!("{TEST_NAMESPACE_LABEL}=true")))
                .await
                .map(|list| {
                    list.items.iter().all(|ns| {
                        ns.metadata.name.as_deref() == Some(mine)
                            || ns.metadata.deletion_timestamp.is_none()
                    })
                })
                .unwrap_or(false)
        },
    )
    .await;
}

fn subscription_reconciles() -> f64 {
    manager::reconciles("subscription").expect("the manager's /metrics answers")
}

/// Given acme-db 1.0.0 installed from a catalog of the test's own, when that Catalog is
/// deleted, then the Subscription says Delisted (reason CatalogRemoved, naming the catalog),
/// the operator keeps running, and for a window longer than every poll and retry there is one
/// Delisted Event, no resolution failure Event, no write by the manager in the namespace and no
/// reconcile loop; when the Catalog is created again, upgrades resume.
#[tokio::test]
async fn deleting_the_source_catalog_says_delisted_without_an_error_storm() {
    require_manager();
    let admin = windlass_testkit::client().await;
    let ns = TestNamespace::create(&admin, "catalog-gone").await;
    let client = ns.client().clone();
    // A CRD group of its own: the shared acme-db CRD is not this test's to take over.
    let isolated = Isolated::new("acme-db-gone");
    let package = isolated.package.clone();
    let v100 = isolated.publish("acme-db/1.0.0", |_| {}).await;
    let catalog = TestCatalog::serving(&client, "gone", std::slice::from_ref(&v100)).await;
    let catalog_name = catalog.name.clone();
    subscribe(
        &client,
        &ns.name,
        "db",
        json!({"package": package, "targetNamespaces": [ns.name]}),
    )
    .await;
    wait_blueprint(&client, &ns.name, "db", "1.0.0 Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.0")
    })
    .await;

    Api::<windlass_api::Catalog>::all(client.clone())
        .delete(&catalog_name, &DeleteParams::default())
        .await
        .unwrap();
    let sub = wait_subscription(&client, &ns.name, "db", "Delisted", TIMEOUT, |s| {
        delisted(s).is_some_and(|c| c.status == ConditionStatus::True)
    })
    .await;
    let said = delisted(&sub).unwrap();
    assert_eq!(said.reason, reasons::delisting::CATALOG_REMOVED);
    assert!(
        said.message.starts_with(&format!(
            "catalog {catalog_name}, which acme-db.v1.0.0 was installed from, was deleted"
        )),
        "{}",
        said.message
    );
    let unhealthy = condition(
        &sub.status.as_ref().unwrap().conditions,
        conditions::subscription::CATALOG_SOURCES_UNHEALTHY,
    )
    .unwrap();
    assert_eq!(
        unhealthy.status,
        ConditionStatus::False,
        "{}",
        unhealthy.message
    );

    wait_for_quiet(&admin, &ns.name).await;
    let status_before = sub.status.clone();
    let writes_before = manager::writes_in(&ns.name).len();
    let reconciles_before = subscription_reconciles();
    let started = Instant::now();
    tokio::time::sleep(WINDOW).await;
    let reconciles = subscription_reconciles() - reconciles_before;
    let writes: Vec<serde_json::Value> = manager::writes_in(&ns.name)
        .into_iter()
        .skip(writes_before)
        .collect();
    assert!(
        writes.is_empty(),
        "the manager wrote {} time(s) in {:?} after the catalog went: {:#?}",
        writes.len(),
        started.elapsed(),
        writes
            .iter()
            .map(|w| (&w["verb"], &w["objectRef"]))
            .collect::<Vec<_>>()
    );
    // A loop would reconcile every few seconds; a quiet Subscription is not reconciled at all.
    assert!(
        reconciles <= 3.0,
        "{reconciles} Subscription reconciles in {WINDOW:?} with nothing changing"
    );
    let sub = Api::<Subscription>::namespaced(client.clone(), &ns.name)
        .get("db")
        .await
        .unwrap();
    assert_eq!(
        sub.status, status_before,
        "the status moved although nothing changed"
    );
    let events = subscription_events(&client, &ns.name, "db").await;
    let count = |reason: &str| -> i32 {
        events
            .iter()
            .filter(|(r, _)| r == reason)
            .map(|(_, n)| n)
            .sum()
    };
    assert_eq!(count("Delisted"), 1, "{events:?}");
    assert_eq!(count("ResolutionFailed"), 0, "{events:?}");
    assert_eq!(count("CatalogUnhealthy"), 0, "{events:?}");

    // Still running as installed.
    let blueprint = Api::<Blueprint>::namespaced(client.clone(), &ns.name)
        .get("db")
        .await
        .unwrap();
    assert!(is_at(&blueprint, BlueprintPhase::Succeeded, "1.0.0"));
    let deployments = Api::<Deployment>::namespaced(client.clone(), &ns.name)
        .list(&ListParams::default())
        .await
        .unwrap();
    assert!(
        !deployments.items.is_empty(),
        "the operator's Deployment is gone"
    );

    // The catalog back, with a newer version: no longer delisted, and the upgrade happens.
    let v101 = isolated.publish("acme-db/1.0.1", |_| {}).await;
    let again: windlass_api::Catalog = serde_json::from_value(json!({
        "apiVersion": "windlass.dev/v1alpha1", "kind": "Catalog",
        "metadata": {"name": catalog_name, "labels": {TEST_NAMESPACE_LABEL: "true"}},
        "spec": {"source": {"type": "BundleImages", "bundleImages": [v100, v101], "plainHTTP": true},
                 "priority": -200, "pollIntervalSeconds": 5},
    }))
    .unwrap();
    let catalogs = Api::<windlass_api::Catalog>::all(client.clone());
    wait_until("the deleted Catalog to be gone", TIMEOUT, || async {
        matches!(catalogs.get_opt(&catalog_name).await, Ok(None))
    })
    .await;
    catalogs.create(&Default::default(), &again).await.unwrap();
    wait_blueprint(&client, &ns.name, "db", "upgraded to 1.0.1", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.1")
    })
    .await;
    let sub = Api::<Subscription>::namespaced(client.clone(), &ns.name)
        .get("db")
        .await
        .unwrap();
    let relisted = delisted(&sub).unwrap();
    assert_eq!(
        (relisted.status, relisted.reason.as_str()),
        (ConditionStatus::False, reasons::delisting::LISTED)
    );
    drop(catalog);
}
