//! Lifecycle scenarios that need a catalog of their own, published as bundle images in the
//! local registry: rollback after the old version left the catalog, an unsafe CRD change
//! blocked, a catalog that becomes unreachable, and a bundle republished under the same name.
//!
//! Each test publishes the sample acme-db bundles under a package name of its own and a
//! priority below the built-in catalog's, so no other test ever resolves against it.

use std::time::Duration;

use kube::{
    Api,
    api::{DynamicObject, Patch, PatchParams, PostParams},
    core::{ApiResource, GroupVersionKind},
};
use serde_json::json;
use windlass_api::names::conditions;
use windlass_api::{Blueprint, ConditionStatus, blueprint::BlueprintPhase, catalog::CatalogPhase};
use windlass_testkit::{
    TestNamespace,
    catalogs::{TestCatalog, phase as catalog_phase, publish, publish_to},
    lifecycle::{condition, is_at, subscribe, wait_blueprint},
    require_manager, unique_name,
};

const TIMEOUT: Duration = Duration::from_secs(180);

/// Given 1.0.0 then 1.0.1 installed from a catalog, and 1.0.0 since removed from that catalog,
/// a rollback to 1.0.0 still works: windlass restores it from the revision it stored.
#[tokio::test]
async fn rollback_works_after_the_old_version_left_the_catalog() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "delisted").await;
    let client = ns.client().clone();
    let package = unique_name("acme-db-delisted");
    let old = publish(&package, "acme-db/1.0.0", |_| {}).await;
    let new = publish(&package, "acme-db/1.0.1", |_| {}).await;
    let test_catalog = TestCatalog::serving(&client, "delisted", &[old.clone(), new.clone()]).await;
    let catalog = test_catalog.name.clone();

    subscribe(
        &client,
        &ns.name,
        "db",
        json!({
            "package": package, "catalog": catalog, "startingCSV": "acme-db.v1.0.0",
            "targetNamespaces": [ns.name],
        }),
    )
    .await;
    wait_blueprint(&client, &ns.name, "db", "1.0.1 Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.1")
    })
    .await;

    // Delist 1.0.0.
    let before = test_catalog.api().get(&catalog).await.unwrap();
    let digest = before.status.and_then(|s| s.resolved_digest);
    test_catalog
        .api()
        .patch(
            &catalog,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "source": { "bundleImages": [new] } } })),
        )
        .await
        .unwrap();
    test_catalog
        .wait("serving without 1.0.0", |c| {
            catalog_phase(c) == Some(CatalogPhase::Serving)
                && c.status.as_ref().and_then(|s| s.resolved_digest.clone()) != digest
        })
        .await;

    Api::<Blueprint>::namespaced(client.clone(), &ns.name)
        .patch(
            "db",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "clusterServiceVersionName": "acme-db.v1.0.0" } })),
        )
        .await
        .unwrap();
    wait_blueprint(
        &client,
        &ns.name,
        "db",
        "1.0.0 restored from the cluster",
        TIMEOUT,
        |b| is_at(b, BlueprintPhase::Succeeded, "1.0.0"),
    )
    .await;
}

/// Given acme-db 1.0.0 and a Database with 3 replicas, an upgrade whose CRD allows at most 2
/// replicas is blocked before anything is applied, with a condition naming the object and the
/// field; the running version stays.
#[tokio::test]
async fn an_unsafe_crd_change_blocks_the_upgrade() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "unsafecrd").await;
    let client = ns.client().clone();
    let package = unique_name("acme-db-unsafe");
    let old = publish(&package, "acme-db/1.0.0", |_| {}).await;
    let tighter =
        publish(&package, "acme-db/1.0.1", |object| {
            if object["kind"] == "CustomResourceDefinition" {
                for version in object["spec"]["versions"]
                    .as_array_mut()
                    .into_iter()
                    .flatten()
                {
                    let replicas = &mut version["schema"]["openAPIV3Schema"]["properties"]["spec"]
                        ["properties"]["replicas"];
                    if replicas.is_object() {
                        replicas["maximum"] = json!(2);
                    }
                }
            }
        })
        .await;
    let test_catalog = TestCatalog::serving(&client, "unsafe", std::slice::from_ref(&old)).await;
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

    let gvk = GroupVersionKind::gvk("acme.windlass.dev", "v1", "Database");
    let databases = Api::<DynamicObject>::namespaced_with(
        client.clone(),
        &ns.name,
        &ApiResource::from_gvk(&gvk),
    );
    let database: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "acme.windlass.dev/v1", "kind": "Database",
        "metadata": { "name": "big" },
        "spec": { "engine": "postgres", "replicas": 3 },
    }))
    .unwrap();
    databases
        .create(&PostParams::default(), &database)
        .await
        .unwrap();

    // The catalog now offers the tighter 1.0.1.
    let with_tighter = json!({ "spec": { "source": { "bundleImages": [old, tighter] } } });
    test_catalog
        .api()
        .patch(
            &catalog,
            &PatchParams::default(),
            &Patch::Merge(with_tighter),
        )
        .await
        .unwrap();
    let blueprint = wait_blueprint(
        &client,
        &ns.name,
        "db",
        "CRDUpgradeSafe=False",
        TIMEOUT,
        |b| {
            b.status
                .as_ref()
                .and_then(|s| condition(&s.conditions, conditions::blueprint::CRD_UPGRADE_SAFE))
                .is_some_and(|c| c.status == ConditionStatus::False)
        },
    )
    .await;
    let unsafe_ = condition(
        &blueprint.status.as_ref().unwrap().conditions,
        conditions::blueprint::CRD_UPGRADE_SAFE,
    )
    .unwrap();
    println!("blocked: {}", unsafe_.message);
    assert!(
        unsafe_.message.contains(&format!("{}/big", ns.name)),
        "names the object: {}",
        unsafe_.message
    );
    assert!(
        unsafe_.message.contains("replicas"),
        "names the field: {}",
        unsafe_.message
    );
    assert_eq!(
        blueprint.status.as_ref().unwrap().version.as_deref(),
        Some("1.0.0"),
        "1.0.0 keeps running"
    );
    let crd = Api::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>::all(client.clone())
        .get("databases.acme.windlass.dev")
        .await
        .unwrap();
    let text = serde_json::to_string(&crd).unwrap();
    assert!(
        !text.contains("\"maximum\":2"),
        "the tighter CRD was not applied"
    );
}

/// A catalog whose registry stops answering keeps serving what it last read: it says
/// Unreachable with the error, and Subscriptions still resolve and install from it.
#[tokio::test]
async fn an_unreachable_catalog_keeps_serving_its_last_content() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "unreachable").await;
    let client = ns.client().clone();
    let package = unique_name("acme-db-unreachable");
    let image = publish(&package, "acme-db/1.0.0", |_| {}).await;
    let test_catalog =
        TestCatalog::create(&client, "unreachable", std::slice::from_ref(&image)).await;
    let catalog = test_catalog.name.clone();
    let serving = test_catalog
        .wait("Serving", |c| {
            catalog_phase(c) == Some(CatalogPhase::Serving)
        })
        .await;
    assert_eq!(serving.status.as_ref().unwrap().packages, Some(1));

    // Nothing listens on port 1.
    let dead = format!("127.0.0.1:1/acme/{package}:1.0.0");
    test_catalog
        .api()
        .patch(
            &catalog,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "source": { "bundleImages": [image, dead] } } })),
        )
        .await
        .unwrap();
    let unreachable = test_catalog
        .wait("Unreachable", |c| {
            catalog_phase(c) == Some(CatalogPhase::Unreachable)
        })
        .await;
    let status = unreachable.status.as_ref().unwrap();
    assert_eq!(
        status.packages,
        Some(1),
        "the last content is still counted as served"
    );
    let serving = condition(&status.conditions, "Serving").expect("a Serving condition");
    assert!(
        serving.message.contains("127.0.0.1:1"),
        "names what failed: {}",
        serving.message
    );

    subscribe(
        &client,
        &ns.name,
        "db",
        json!({ "package": package, "catalog": catalog, "targetNamespaces": [ns.name] }),
    )
    .await;
    wait_blueprint(
        &client,
        &ns.name,
        "db",
        "installed from the last good content",
        TIMEOUT,
        |b| is_at(b, BlueprintPhase::Succeeded, "1.0.0"),
    )
    .await;
}

/// Given acme-db installed from a bundle image, when the image's tag is pushed again with other
/// content under the same CSV name (a republished bundle), then windlass notices it at the
/// catalog's next poll, although it holds the old content in its cache, and installs the new
/// content as a new revision.
#[tokio::test]
async fn a_republished_bundle_is_installed_as_a_new_revision() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "republished").await;
    let client = ns.client().clone();
    let package = unique_name("acme-db-republished");
    let repository = windlass_testkit::registry().unique_repository(&package);
    let image = publish_to(&repository, &package, "acme-db/1.0.0", |_| {}).await;
    let test_catalog =
        TestCatalog::serving(&client, "republished", std::slice::from_ref(&image)).await;
    subscribe(
        &client,
        &ns.name,
        "db",
        json!({ "package": package, "catalog": test_catalog.name, "targetNamespaces": [ns.name] }),
    )
    .await;
    let digest = |b: &Blueprint| b.spec.bundle.as_ref().and_then(|r| r.digest.clone());
    let first = wait_blueprint(&client, &ns.name, "db", "1.0.0 Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.0")
    })
    .await;
    let first_digest = digest(&first).expect("the Blueprint pins the bundle's digest");

    let republished = publish_to(&repository, &package, "acme-db/1.0.0", |object| {
        if object["kind"] == "ClusterServiceVersion" {
            object["metadata"]["annotations"]["description"] = json!("republished");
        }
    })
    .await;
    assert_eq!(republished, image, "the same tag, pushed again");
    let second = wait_blueprint(
        &client,
        &ns.name,
        "db",
        "the republished content Succeeded",
        TIMEOUT,
        |b| {
            digest(b).is_some_and(|d| d != first_digest)
                && is_at(b, BlueprintPhase::Succeeded, "1.0.0")
                && b.spec.revision > first.spec.revision
        },
    )
    .await;
    let csv = Api::<windlass_api::ClusterServiceVersion>::namespaced(client.clone(), &ns.name)
        .get(&second.spec.cluster_service_version_name)
        .await
        .unwrap();
    assert_eq!(
        csv.spec.definition.to_value()["metadata"]["annotations"]["description"],
        "republished"
    );
}
