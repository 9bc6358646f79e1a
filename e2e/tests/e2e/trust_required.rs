//! A TrustPolicy's `requireSignatures`: catalog and bundle images no rule covers are refused
//! instead of used unverified. Alone in its module because the requirement is cluster-wide
//! (every TrustPolicy applies to every image), and would refuse the unsigned catalogs of any
//! test running beside it. The default it changes is pinned first: an image no rule covers is
//! used, reported as unverified.

use std::time::Duration;

use kube::{
    Api, Client,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use serde_json::json;
use windlass_api::{
    Blueprint, Catalog, ClusterServiceVersion, ConditionStatus,
    blueprint::BlueprintPhase,
    catalog::CatalogPhase,
    names::{conditions, reasons},
};
use windlass_testkit::{
    TestNamespace,
    catalogs::{TestCatalog, phase, publish_to},
    lifecycle::{condition, is_at, subscribe, wait_blueprint, wait_object},
    require_manager, unique_name,
};

use crate::blueprint_lifecycle::own_crd_group;
use crate::signed_catalogs::{push_catalog, serving_message};

const TIMEOUT: Duration = Duration::from_secs(120);

/// An unsigned bundle image of a package of its own, in a repository of its own.
async fn unsigned_bundle(prefix: &str) -> (String, String) {
    let registry = windlass_testkit::registry();
    let package = unique_name(prefix);
    let group = format!("{package}.windlass.dev");
    let repository = registry.unique_repository(&package);
    let image = publish_to(
        &repository,
        &package,
        "acme-db/1.0.0",
        own_crd_group(&group),
    )
    .await;
    (package, image)
}

/// An image Catalog of `bundles`, pushed unsigned to a repository of its own.
async fn unsigned_catalog_image(admin: &Client, bundles: &[String]) -> (String, String) {
    let repository = windlass_testkit::registry().unique_repository("uncovered-catalog");
    let reference = format!("{repository}:latest");
    push_catalog(&reference, bundles).await;
    let name = unique_name("e2e-uncovered");
    let catalog: Catalog = serde_json::from_value(json!({
        "apiVersion": "windlass.dev/v1alpha1", "kind": "Catalog",
        "metadata": {"name": name, "labels": {windlass_testkit::TEST_NAMESPACE_LABEL: "true"}},
        "spec": {
            "source": {"type": "Image", "image": reference, "plainHTTP": true},
            "priority": -300,
            "pollIntervalSeconds": 3,
        },
    }))
    .unwrap();
    Api::<Catalog>::all(admin.clone())
        .create(&PostParams::default(), &catalog)
        .await
        .unwrap();
    (name, repository)
}

fn content_trusted(blueprint: &Blueprint) -> Option<windlass_api::Condition> {
    blueprint
        .status
        .as_ref()
        .and_then(|s| condition(&s.conditions, conditions::blueprint::CONTENT_TRUSTED))
        .cloned()
}

/// Given no TrustPolicy rule covering them, an unsigned catalog image is served and an unsigned
/// bundle installs, both reported unverified (the default, pinned here); when a TrustPolicy
/// requires signatures for `Catalog` and `Bundle`, then another unsigned catalog image is refused
/// with nothing served, and an unsigned bundle is held with nothing installed, each saying
/// signatures are required; deleting the policy lets the held install finish.
#[tokio::test]
async fn required_signatures_refuse_uncovered_catalog_and_bundle_images() {
    require_manager();
    let admin = windlass_testkit::client().await;
    let catalogs = Api::<Catalog>::all(admin.clone());

    // The default: uncovered images are used, unverified.
    let (package, image) = unsigned_bundle("acme-db-uncovered").await;
    let (name, _) = unsigned_catalog_image(&admin, std::slice::from_ref(&image)).await;
    let served = wait_object(&catalogs, &name, "serving unverified", TIMEOUT, |c| {
        phase(c) == Some(CatalogPhase::Serving)
    })
    .await;
    assert_eq!(served.status.as_ref().unwrap().verified, Some(false));
    catalogs
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    let bundles = TestCatalog::serving(&admin, "uncovered", std::slice::from_ref(&image)).await;
    let ns = TestNamespace::create(&admin, "uncovered").await;
    subscribe(
        &admin,
        &ns.name,
        "db",
        json!({"package": package, "catalog": bundles.name, "targetNamespaces": [ns.name]}),
    )
    .await;
    let installed = wait_blueprint(&admin, &ns.name, "db", "1.0.0 Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.0")
    })
    .await;
    let history = &installed.status.as_ref().unwrap().history;
    assert!(history[0].verified_by.is_empty(), "{history:?}");

    // Signatures required.
    let policy_name = unique_name("e2e-require-signatures");
    let policy = json!({
        "apiVersion": "windlass.dev/v1alpha1", "kind": "TrustPolicy",
        "metadata": {"name": policy_name},
        "spec": {"requireSignatures": ["Catalog", "Bundle"]},
    });
    let policies = Api::<windlass_api::TrustPolicy>::all(admin.clone());
    policies
        .patch(
            &policy_name,
            &PatchParams::apply("windlass-e2e"),
            &Patch::Apply(&policy),
        )
        .await
        .expect("the TrustPolicy");
    let removal = DeleteOnDrop(policy_name.clone());
    {
        let (package, image) = unsigned_bundle("acme-db-required").await;
        let (name, repository) = unsigned_catalog_image(&admin, std::slice::from_ref(&image)).await;
        let refused = wait_object(&catalogs, &name, "refused", TIMEOUT, |c| {
            phase(c) == Some(CatalogPhase::Refused)
        })
        .await;
        let message = serving_message(&refused);
        assert!(
            message.starts_with(reasons::catalog::VERIFICATION_FAILED)
                && message.contains("every Catalog image must be signed")
                && message.contains(&repository),
            "{message}"
        );
        assert_eq!(refused.status.as_ref().unwrap().packages, None);
        catalogs
            .delete(&name, &DeleteParams::default())
            .await
            .unwrap();

        // A catalog of bundle images has no catalog image to sign; its bundles are checked.
        let bundles = TestCatalog::serving(&admin, "required", std::slice::from_ref(&image)).await;
        let ns = TestNamespace::create(&admin, "required").await;
        subscribe(
            &admin,
            &ns.name,
            "db",
            json!({"package": package, "catalog": bundles.name, "targetNamespaces": [ns.name]}),
        )
        .await;
        let held = wait_blueprint(&admin, &ns.name, "db", "held unsigned", TIMEOUT, |b| {
            content_trusted(b).is_some_and(|c| c.status == ConditionStatus::False)
        })
        .await;
        let refusal = content_trusted(&held).unwrap();
        assert_eq!(refusal.reason, reasons::revision::SIGNATURE_REFUSED);
        assert!(
            refusal
                .message
                .contains("every Bundle image must be signed"),
            "{}",
            refusal.message
        );
        let csvs = Api::<ClusterServiceVersion>::namespaced(admin.clone(), &ns.name);
        assert!(
            csvs.list(&Default::default())
                .await
                .unwrap()
                .items
                .is_empty()
        );

        policies
            .delete(&policy_name, &DeleteParams::default())
            .await
            .unwrap();
        drop(removal);
        wait_blueprint(&admin, &ns.name, "db", "1.0.0 Succeeded", TIMEOUT, |b| {
            is_at(b, BlueprintPhase::Succeeded, "1.0.0")
        })
        .await;
    }
}

/// Deletes the TrustPolicy when dropped, also when an assertion failed: left behind, it would
/// refuse every unsigned image of the modules after this one.
struct DeleteOnDrop(String);

impl Drop for DeleteOnDrop {
    fn drop(&mut self) {
        let _ = windlass_testkit::kubectl()
            .args([
                "delete",
                "trustpolicies.windlass.dev",
                &self.0,
                "--ignore-not-found",
            ])
            .output();
    }
}
