//! A registry that asks for credentials (Debian's docker-registry with htpasswd auth, started
//! by the test) and an outage that is that registry process stopped and started again, with
//! the Catalog's spec unchanged throughout.

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::{ByteString, api::core::v1::Secret};
use kube::{
    Api,
    api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams},
};
use serde_json::json;
use windlass_api::{Catalog, blueprint::BlueprintPhase, catalog::CatalogPhase};
use windlass_testkit::{
    TestNamespace,
    catalogs::{phase as catalog_phase, publish_with},
    lifecycle::{condition, is_at, subscribe, wait_blueprint, wait_object},
    registries::RegistryProcess,
    require_manager, unique_name, wait_until,
};

const TIMEOUT: Duration = Duration::from_secs(180);
const USER: &str = "e2e-puller";

fn serving_message(catalog: &Catalog) -> String {
    catalog
        .status
        .as_ref()
        .and_then(|s| condition(&s.conditions, "Serving"))
        .map(|c| c.message.clone())
        .unwrap_or_default()
}

/// Given a bundle in a registry that asks for credentials, a Catalog without a pull secret is
/// refused with the registry's 401 named; with the pull secret in the manager's namespace it
/// serves and acme-db installs from it. When the registry process stops, the Catalog becomes
/// Unreachable naming the registry while the install keeps running; when the process starts
/// again, the Catalog serves again, its spec never touched.
#[tokio::test]
async fn a_private_registry_needs_its_credentials_and_survives_an_outage() {
    require_manager();
    let admin = windlass_testkit::client().await;
    let password = unique_name("pw");
    let mut registry = RegistryProcess::with_credentials(USER, &password);
    let package = unique_name("acme-db-private");
    let options = registry.options();
    let repository = format!("{}/{}", registry.addr, unique_name("acme/db"));
    let image = publish_with(&options, &repository, &package, "acme-db/1.0.0", |_| {}).await;

    let catalogs = Api::<Catalog>::all(admin.clone());
    let name = unique_name("private");
    let catalog: Catalog = serde_json::from_value(json!({
        "apiVersion": "windlass.dev/v1alpha1", "kind": "Catalog",
        "metadata": {"name": name, "labels": {"windlass.dev/test": "true"}},
        "spec": {
            "source": {"type": "BundleImages", "bundleImages": [image], "plainHTTP": true},
            "priority": -200,
            "pollIntervalSeconds": 5,
        },
    }))
    .unwrap();
    catalogs
        .create(&PostParams::default(), &catalog)
        .await
        .unwrap();
    let refused = wait_object(
        &catalogs,
        &name,
        "refused without credentials",
        TIMEOUT,
        |c| serving_message(c).contains("401"),
    )
    .await;
    assert!(
        serving_message(&refused).contains(&registry.addr),
        "{}",
        serving_message(&refused)
    );

    // The pull secret lives in the manager's namespace, where only admins write.
    let manager_namespace =
        windlass_testkit::manager::namespace().expect("the manager's namespace");
    let secret_name = unique_name("private-registry");
    let config =
        json!({"auths": {registry.addr.clone(): {"username": USER, "password": password}}});
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(secret_name.clone()),
            ..Default::default()
        },
        type_: Some("kubernetes.io/dockerconfigjson".into()),
        data: Some(BTreeMap::from([(
            ".dockerconfigjson".to_string(),
            ByteString(serde_json::to_vec(&config).unwrap()),
        )])),
        ..Default::default()
    };
    let secrets = Api::<Secret>::namespaced(admin.clone(), &manager_namespace);
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let with_secret = json!({"spec": {"source": {"pullSecret": secret_name}}});
    catalogs
        .patch(&name, &PatchParams::default(), &Patch::Merge(&with_secret))
        .await
        .unwrap();
    let serving = wait_object(&catalogs, &name, "Serving", TIMEOUT, |c| {
        catalog_phase(c) == Some(CatalogPhase::Serving)
    })
    .await;
    let generation = serving.metadata.generation;

    let ns = TestNamespace::create(&admin, "private").await;
    subscribe(
        &admin,
        &ns.name,
        "db",
        json!({"package": package, "catalog": name, "targetNamespaces": [ns.name]}),
    )
    .await;
    wait_blueprint(&admin, &ns.name, "db", "1.0.0 Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.0")
    })
    .await;

    registry.stop();
    let down = wait_object(&catalogs, &name, "Unreachable", TIMEOUT, |c| {
        catalog_phase(c) == Some(CatalogPhase::Unreachable)
    })
    .await;
    assert!(
        serving_message(&down).contains(&registry.addr),
        "names the registry: {}",
        serving_message(&down)
    );
    let blueprint =
        wait_blueprint(&admin, &ns.name, "db", "still Succeeded", TIMEOUT, |_| true).await;
    assert!(is_at(&blueprint, BlueprintPhase::Succeeded, "1.0.0"));

    registry.run();
    let back = wait_object(&catalogs, &name, "Serving again", TIMEOUT, |c| {
        catalog_phase(c) == Some(CatalogPhase::Serving)
    })
    .await;
    assert_eq!(
        back.metadata.generation, generation,
        "the spec was never touched"
    );

    let _ = catalogs.delete(&name, &DeleteParams::default()).await;
    let _ = secrets.delete(&secret_name, &DeleteParams::default()).await;
    wait_until("the Catalog to go", TIMEOUT, || async {
        matches!(catalogs.get_opt(&name).await, Ok(None))
    })
    .await;
}
