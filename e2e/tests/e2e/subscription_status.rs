//! What a Subscription reports, with the manager that `make e2e` runs: nothing written once it
//! has settled, and catalog trouble named on the Subscriptions it affects.

use std::time::Duration;

use crate::blueprint_lifecycle::own_crd_group;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use windlass_api::names::conditions;
use windlass_api::{
    Blueprint, ClusterServiceVersion, ConditionStatus, CsvPhase, Subscription,
    blueprint::BlueprintPhase, subscription::SubscriptionState,
};
use windlass_testkit::{
    TestNamespace,
    catalogs::{TestCatalog, publish},
    lifecycle::{condition, is_at, subscribe, wait_blueprint, wait_object, wait_subscription},
    manager::{self, reconciles},
    require_manager, unique_name, wait_until,
};

const TIMEOUT: Duration = Duration::from_secs(180);

fn state(sub: &Subscription) -> Option<SubscriptionState> {
    sub.status.as_ref().and_then(|s| s.state)
}

/// The manager's completed writes to objects in `namespace`, from the apiserver's audit log,
/// each as `verb resource/name[/subresource]` so a failure says what was written.
fn writes_in(namespace: &str) -> Vec<String> {
    manager::writes_in(namespace)
        .iter()
        .map(|event| {
            let object = &event["objectRef"];
            let mut written = format!(
                "{} {}/{}",
                event["verb"].as_str().unwrap_or("?"),
                object["resource"].as_str().unwrap_or("?"),
                object["name"].as_str().unwrap_or("")
            );
            if let Some(sub) = object["subresource"].as_str() {
                written.push('/');
                written.push_str(sub);
            }
            written
        })
        .collect()
}

/// Given acme-db 1.1.0 installed and at the latest version its channel offers, when each object
/// the manager owns is reconciled again (an annotation nudges its Subscription, Blueprint and
/// CSV, as any resync would), then nothing in the namespace is written: status is compared
/// before it is written and the Blueprint is applied only when its intent changed. The
/// reconciles are counted on the manager's /metrics, so the window sees what it rules out.
#[tokio::test]
async fn a_settled_subscription_makes_no_writes() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "settled").await;
    let client = ns.client().clone();
    // A package and CRD of its own: other tests install acme-db's bundles under other package
    // names, and their changes to a shared CRD would be real changes in this window.
    let package = unique_name("acme-db-settled");
    let group = format!("{package}.windlass.dev");
    let image = publish(&package, "acme-db/1.1.0", own_crd_group(&group)).await;
    let test_catalog = TestCatalog::serving(&client, "settled", std::slice::from_ref(&image)).await;
    subscribe(
        &client,
        &ns.name,
        "db",
        json!({ "package": package, "catalog": test_catalog.name, "targetNamespaces": [ns.name] }),
    )
    .await;
    wait_subscription(&client, &ns.name, "db", "AtLatestKnown", TIMEOUT, |s| {
        state(s) == Some(SubscriptionState::AtLatestKnown)
    })
    .await;
    let blueprint = wait_blueprint(&client, &ns.name, "db", "Succeeded", TIMEOUT, |b| {
        b.status.as_ref().and_then(|s| s.phase) == Some(BlueprintPhase::Succeeded)
    })
    .await;
    let csv_name = blueprint.spec.cluster_service_version_name.clone();
    let csvs = Api::<ClusterServiceVersion>::namespaced(client.clone(), &ns.name);
    wait_object(&csvs, &csv_name, "Succeeded", TIMEOUT, |c| {
        c.status.as_ref().and_then(|s| s.phase) == Some(CsvPhase::Succeeded)
    })
    .await;
    // Let the last status writes and Events of the install land in the audit log.
    let mut settled = writes_in(&ns.name).len();
    wait_until("the install's last writes", TIMEOUT, || {
        let now = writes_in(&ns.name).len();
        let quiet = now == settled;
        settled = now;
        async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            quiet
        }
    })
    .await;

    let before = writes_in(&ns.name).len();
    let counted = ["subscription", "blueprint", "clusterserviceversion"];
    let reconciles_before: Vec<f64> = counted
        .iter()
        .map(|c| reconciles(c).expect("the manager's /metrics answers"))
        .collect();
    let nudge = json!({"metadata": {"annotations": {"e2e.windlass.dev/nudge": unique_name("n")}}});
    let params = PatchParams::default();
    Api::<Subscription>::namespaced(client.clone(), &ns.name)
        .patch("db", &params, &Patch::Merge(&nudge))
        .await
        .unwrap();
    Api::<Blueprint>::namespaced(client.clone(), &ns.name)
        .patch("db", &params, &Patch::Merge(&nudge))
        .await
        .unwrap();
    csvs.patch(&csv_name, &params, &Patch::Merge(&nudge))
        .await
        .unwrap();
    wait_until(
        "the manager to reconcile each nudged object",
        TIMEOUT,
        || {
            let again = counted
                .iter()
                .zip(&reconciles_before)
                .all(|(c, before)| reconciles(c).is_some_and(|now| now > *before));
            async move { again }
        },
    )
    .await;
    // The writes a reconcile makes land within moments of it.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let after = writes_in(&ns.name);
    assert!(
        after.len() == before,
        "writes in {} while nothing changed: {:?}",
        ns.name,
        after.get(before..).unwrap_or_default()
    );
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
    // A CRD of its own: acme-db's is another package's (the settled test installs acme-db
    // alongside), and two packages never share one.
    let group = format!("{package}.windlass.dev");
    let image = publish(&package, "acme-db/1.0.0", own_crd_group(&group)).await;
    let test_catalog = TestCatalog::serving(&client, "down", std::slice::from_ref(&image)).await;
    let catalog = test_catalog.name.clone();
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
            .and_then(|st| {
                condition(
                    &st.conditions,
                    conditions::subscription::CATALOG_SOURCES_UNHEALTHY,
                )
            })
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
        conditions::subscription::CATALOG_SOURCES_UNHEALTHY,
        TIMEOUT,
        |s| healthy(s) == Some(ConditionStatus::True),
    )
    .await;
    let status = sub.status.as_ref().unwrap();
    let unhealthy = condition(
        &status.conditions,
        conditions::subscription::CATALOG_SOURCES_UNHEALTHY,
    )
    .unwrap();
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
