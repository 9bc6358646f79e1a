//! Catalog and bundle images checked against TrustPolicies by the running manager: a catalog
//! image is served only when the keys its rule names have signed it, and keeps serving its last
//! verified content when the tag moves to something unsigned; an unchanged, verified catalog
//! costs one manifest request per poll; a bundle image signed by the wrong key blocks its
//! install until the right key signs it.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
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
use windlass_catalog::fbc::{CONFIGS_LABEL, image_tree};
use windlass_oci as oci;
use windlass_testkit::{
    TestNamespace,
    catalogs::{TestCatalog, phase, plain_http, publish_to},
    lifecycle::{condition, is_at, subscribe, wait_blueprint, wait_object},
    require_manager, unique_name,
};

use crate::blueprint_lifecycle::own_crd_group;
use crate::signatures::{Keys, cosign_sign};

const TIMEOUT: Duration = Duration::from_secs(120);

/// A TrustPolicy with keys `alpha` and `beta` (public keys in a ConfigMap in the manager's
/// namespace) and one rule, removed when dropped.
struct Policy {
    admin: Client,
    name: String,
    namespace: String,
}

impl Policy {
    async fn create(admin: &Client, keys: &Keys, rule: serde_json::Value) -> Policy {
        let namespace = windlass_testkit::manager::namespace().expect("the manager's namespace");
        let name = unique_name("e2e-signed");
        let mut data = serde_json::Map::new();
        for key in ["alpha", "beta"] {
            let pem = std::fs::read_to_string(keys.path(&format!("{key}.pub"))).unwrap();
            data.insert(format!("{key}.pub"), json!(pem));
        }
        let config_map: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": name}, "data": data})).unwrap();
        Api::<ConfigMap>::namespaced(admin.clone(), &namespace)
            .create(&PostParams::default(), &config_map)
            .await
            .expect("the key ConfigMap");
        let key = |key: &str| json!({"name": key, "configMap": {"name": name, "key": format!("{key}.pub")}});
        let policy = json!({
            "apiVersion": "windlass.dev/v1alpha1", "kind": "TrustPolicy",
            "metadata": {"name": name},
            "spec": {"keys": [key("alpha"), key("beta")], "rules": [rule]},
        });
        Api::<windlass_api::TrustPolicy>::all(admin.clone())
            .patch(
                &name,
                &PatchParams::apply("windlass-e2e"),
                &Patch::Apply(&policy),
            )
            .await
            .expect("the TrustPolicy");
        Policy {
            admin: admin.clone(),
            name,
            namespace,
        }
    }

    /// The name a key has in verdicts and status (`<policy>/<key>`).
    fn key(&self, key: &str) -> String {
        format!("{}/{key}", self.name)
    }
}

impl Drop for Policy {
    fn drop(&mut self) {
        let (admin, name, namespace) = (
            self.admin.clone(),
            self.name.clone(),
            self.namespace.clone(),
        );
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let _ = Api::<windlass_api::TrustPolicy>::all(admin.clone())
                    .delete(&name, &DeleteParams::default())
                    .await;
                let _ = Api::<ConfigMap>::namespaced(admin, &namespace)
                    .delete(&name, &DeleteParams::default())
                    .await;
            });
        }
    }
}

/// Pushes a file-based catalog of the bundle images `bundles` to `reference`; its digest.
pub(crate) async fn push_catalog(reference: &str, bundles: &[String]) -> String {
    let mut images = Vec::new();
    for image in bundles {
        let (bundle, _) = oci::pull_bundle(image, &plain_http()).await.unwrap();
        images.push((bundle, image.clone()));
    }
    let loaded = windlass_catalog::load::read_images(images).unwrap();
    let labels = [(CONFIGS_LABEL.to_string(), "/configs".to_string())].into();
    oci::push_image(
        &image_tree(&loaded.catalog).unwrap(),
        &labels,
        reference,
        &plain_http(),
    )
    .await
    .unwrap()
    .digest
}

pub(crate) fn serving_message(catalog: &Catalog) -> String {
    catalog
        .status
        .as_ref()
        .and_then(|s| condition(&s.conditions, conditions::catalog::SERVING))
        .map(|c| format!("{}: {}", c.reason, c.message))
        .unwrap_or_default()
}

/// Given a rule that needs keys alpha and beta on the test's catalog repository, when the
/// catalog image is signed by alpha only, then it is not served and says beta is missing; once
/// beta signs it is served, verified by both; unchanged polls then ask the registry only for the
/// manifest; when the tag moves to unsigned content, that is refused and the verified content
/// stays served.
#[tokio::test]
async fn a_catalog_image_is_served_only_once_every_required_key_signed_it() {
    require_manager();
    let admin = windlass_testkit::client().await;
    let registry = windlass_testkit::registry();
    let package = unique_name("acme-db-signedcat");
    let group = format!("{package}.windlass.dev");
    let bundles = registry.unique_repository(&package);
    let first = publish_to(&bundles, &package, "acme-db/1.0.0", own_crd_group(&group)).await;
    let repository = registry.unique_repository("signed-catalog");
    let reference = format!("{repository}:latest");
    let digest = push_catalog(&reference, std::slice::from_ref(&first)).await;

    let keys = Keys::generate(&["alpha", "beta"]);
    let policy = Policy::create(
        &admin,
        &keys,
        json!({"name": "catalogs", "classes": ["Catalog"], "images": [repository], "keys": ["alpha", "beta"]}),
    )
    .await;
    cosign_sign(&keys, "alpha", &format!("{repository}@{digest}"), true);

    let name = unique_name("e2e-signed");
    let catalogs = Api::<Catalog>::all(admin.clone());
    let catalog: Catalog = serde_json::from_value(json!({
        "apiVersion": "windlass.dev/v1alpha1", "kind": "Catalog",
        "metadata": {"name": name, "labels": {windlass_testkit::TEST_NAMESPACE_LABEL: "true"}},
        "spec": {
            "source": {"type": "Image", "image": reference, "plainHTTP": true},
            "priority": -200,
            "pollIntervalSeconds": 3,
        },
    }))
    .unwrap();
    catalogs
        .create(&PostParams::default(), &catalog)
        .await
        .unwrap();
    let _cleanup = delete_on_drop(&catalogs, &name);

    let refused = wait_object(&catalogs, &name, "refused", TIMEOUT, |c| {
        phase(c) == Some(CatalogPhase::Refused)
    })
    .await;
    let message = serving_message(&refused);
    assert!(
        message.starts_with(reasons::catalog::VERIFICATION_FAILED)
            && message.contains(&digest)
            && message.contains(&policy.key("beta"))
            && message.contains("nothing is served"),
        "{message}"
    );
    let status = refused.status.as_ref().unwrap();
    assert_eq!(status.packages, None, "nothing of it is served");

    // The second signature, in cosign's legacy format.
    cosign_sign(&keys, "beta", &format!("{repository}@{digest}"), false);
    let served = wait_object(&catalogs, &name, "serving", TIMEOUT, |c| {
        phase(c) == Some(CatalogPhase::Serving)
    })
    .await;
    let status = served.status.as_ref().unwrap();
    assert_eq!(status.resolved_digest.as_deref(), Some(digest.as_str()));
    assert_eq!(status.verified, Some(true));
    assert_eq!(
        status.verified_by,
        [policy.key("alpha"), policy.key("beta")]
    );
    let verified = condition(&status.conditions, conditions::catalog::VERIFIED).unwrap();
    assert_eq!(verified.status, ConditionStatus::True);

    // Unchanged and verified: each poll asks for the manifest and nothing else (no signature
    // lookups: the verdict is cached by digest). Six poll intervals.
    let before = windlass_testkit::registry_requests(&repository).len();
    tokio::time::sleep(Duration::from_secs(18)).await;
    let window: Vec<String> = windlass_testkit::registry_requests(&repository)
        .split_off(before)
        .into_iter()
        .collect();
    eprintln!(
        "{} registry requests for the catalog in 18 s of polls every 3 s",
        window.len()
    );
    assert!(
        window.len() >= 3,
        "the catalog was polled in the window: {window:#?}"
    );
    let manifest = format!(
        "/v2/{}/manifests/latest ",
        repository.split_once('/').unwrap().1
    );
    assert!(
        window.iter().all(|line| line.contains(&manifest)),
        "only manifest requests for the tag: {window:#?}"
    );

    // The tag moves to new, unsigned content: refused, and the verified content stays served.
    let second = publish_to(&bundles, &package, "acme-db/1.1.0", own_crd_group(&group)).await;
    let moved = push_catalog(&reference, &[first.clone(), second]).await;
    let kept = wait_object(
        &catalogs,
        &name,
        "the unsigned content refused",
        TIMEOUT,
        |c| phase(c) == Some(CatalogPhase::Refused),
    )
    .await;
    let message = serving_message(&kept);
    assert!(
        message.contains(&moved)
            && message.contains("unsigned")
            && message.contains("still serving"),
        "{message}"
    );
    let status = kept.status.as_ref().unwrap();
    assert_eq!(status.resolved_digest.as_deref(), Some(digest.as_str()));
    assert_eq!(status.packages, Some(1));
    assert_eq!(status.verified, Some(true));
}

/// Deletes the Catalog when the test ends, passed or failed.
fn delete_on_drop(catalogs: &Api<Catalog>, name: &str) -> impl Drop {
    struct Delete(Api<Catalog>, String);
    impl Drop for Delete {
        fn drop(&mut self) {
            let (api, name) = (self.0.clone(), self.1.clone());
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(async move {
                    let _ = api.delete(&name, &DeleteParams::default()).await;
                });
            }
        }
    }
    Delete(catalogs.clone(), name.to_string())
}

/// Given a rule that bundle images of the test's repository need key alpha, when the bundle
/// image is signed by beta, then its install is held with `ContentTrusted=False` naming the
/// missing key and nothing of it is created; once alpha signs, it installs.
#[tokio::test]
async fn a_bundle_image_signed_by_the_wrong_key_blocks_its_install() {
    require_manager();
    let admin = windlass_testkit::client().await;
    let ns = TestNamespace::create(&admin, "signedbundle").await;
    let client = ns.client().clone();
    let package = unique_name("acme-db-signedbundle");
    let group = format!("{package}.windlass.dev");
    let repository = windlass_testkit::registry().unique_repository(&package);
    let image = publish_to(
        &repository,
        &package,
        "acme-db/1.0.0",
        own_crd_group(&group),
    )
    .await;
    let (_, digest, _) = oci::inspect(&image, &plain_http()).await.unwrap();

    let keys = Keys::generate(&["alpha", "beta"]);
    let policy = Policy::create(
        &admin,
        &keys,
        json!({"name": "bundles", "classes": ["Bundle"], "images": [repository], "keys": ["alpha"]}),
    )
    .await;
    cosign_sign(&keys, "beta", &format!("{repository}@{digest}"), true);

    let catalog = TestCatalog::serving(&client, "signedbundle", std::slice::from_ref(&image)).await;
    subscribe(
        &client,
        &ns.name,
        "db",
        json!({"package": package, "catalog": catalog.name, "targetNamespaces": [ns.name]}),
    )
    .await;
    let trusted = |b: &Blueprint| {
        b.status
            .as_ref()
            .and_then(|s| condition(&s.conditions, conditions::blueprint::CONTENT_TRUSTED))
            .cloned()
    };
    let held = wait_blueprint(
        &client,
        &ns.name,
        "db",
        "held for its signature",
        TIMEOUT,
        |b| trusted(b).is_some_and(|c| c.status == ConditionStatus::False),
    )
    .await;
    let refusal = trusted(&held).unwrap();
    assert_eq!(refusal.reason, reasons::revision::SIGNATURE_REFUSED);
    assert!(
        refusal.message.contains(&digest) && refusal.message.contains(&policy.key("alpha")),
        "the refusal names the digest and the key needed: {}",
        refusal.message
    );
    assert_eq!(
        held.status.as_ref().and_then(|s| s.phase),
        Some(BlueprintPhase::Pending)
    );
    let csvs = Api::<ClusterServiceVersion>::namespaced(client.clone(), &ns.name);
    assert!(
        csvs.list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty(),
        "nothing of the refused bundle is installed"
    );

    cosign_sign(&keys, "alpha", &format!("{repository}@{digest}"), false);
    let installed = wait_blueprint(&client, &ns.name, "db", "1.0.0 Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.0")
    })
    .await;
    assert!(trusted(&installed).is_none(), "the refusal is cleared");
    let history = &installed.status.as_ref().unwrap().history;
    assert_eq!(
        history[0].verified_by,
        [policy.key("alpha")],
        "the revision history names the key whose signature counted"
    );
}
