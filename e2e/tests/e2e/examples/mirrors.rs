//! The ImageMirrorSet example. Its mirrors name a registry that does not exist here: the check
//! points them at a repository prefix of its own in the local registry and applies every other
//! field as written, then installs a bundle whose images the example's sources name.

use k8s_openapi::api::apps::v1::Deployment;
use kube::{Api, Client, api::Patch};
use serde_json::{Value, json};
use windlass_api::{
    Catalog, ImageMirrorSet, ImageRewrite, blueprint::BlueprintPhase, catalog::CatalogPhase,
};
use windlass_testkit::{
    TEST_NAMESPACE_LABEL, TestNamespace,
    catalogs::publish_to,
    kubectl,
    lifecycle::{is_at, subscribe, wait_blueprint, wait_object},
    unique_name,
};

use super::{CatalogCleanup, TIMEOUT, apply_params};

/// The registry the example's mirrors name.
const EXAMPLE_MIRROR_REGISTRY: &str = "registry.example.com/mirror";

/// Removes the cluster-scoped set, also when the check fails.
struct SetCleanup(String);

impl Drop for SetCleanup {
    fn drop(&mut self) {
        let _ = kubectl()
            .args(["delete", "imagemirrorset.windlass.dev", &self.0])
            .args(["--ignore-not-found", "--wait=false"])
            .output();
    }
}

/// Given the ImageMirrorSet example applied as written (its mirror registry replaced by the
/// local one), a bundle that names its operator and sidecar images under the example's two
/// sources and is listed in a Catalog under the first source, installs: the bundle is pulled
/// from the mirror, the Deployment runs each image from its rule's first mirror, and the
/// Blueprint's revision records each rewrite under the set's name.
pub async fn check_image_mirror_set(client: &Client, document: Value) {
    let example: ImageMirrorSet = serde_json::from_value(document.clone())
        .unwrap_or_else(|e| panic!("not an ImageMirrorSet windlass reads: {e}"));
    assert!(
        example.spec.mirrors.len() >= 2,
        "the example shows at least two sources"
    );
    let local = windlass_testkit::registry().unique_repository("examples/mirror");
    let name = unique_name(example.metadata.name.as_deref().expect("a name"));
    let mut object = document;
    object["metadata"]["name"] = json!(name);
    object["metadata"]["labels"][TEST_NAMESPACE_LABEL] = json!("true");
    for rule in object["spec"]["mirrors"].as_array_mut().unwrap() {
        for mirror in rule["mirrors"].as_array_mut().unwrap() {
            let text = mirror.as_str().unwrap().to_string();
            *mirror = json!(text.replacen(EXAMPLE_MIRROR_REGISTRY, &local, 1));
        }
    }
    let _set = SetCleanup(name.clone());
    Api::<ImageMirrorSet>::all(client.clone())
        .patch(&name, &apply_params(), &Patch::Apply(&object))
        .await
        .unwrap_or_else(|e| panic!("the API server refused ImageMirrorSet {name}: {e}"));
    let applied: ImageMirrorSet = serde_json::from_value(object).unwrap();

    // Images under each source; the bundle lives only where the first rule sends its name.
    let package = unique_name("example-mirrors");
    let sources: Vec<&str> = example
        .spec
        .mirrors
        .iter()
        .map(|r| r.source.as_str())
        .collect();
    let operator = format!("{}/{package}-operator:1.0.0", sources[0]);
    let sidecar = format!("{}/{package}-proxy:0.9", sources[1]);
    let mirrored = |image: &str, rule: usize| {
        image.replacen(
            &applied.spec.mirrors[rule].source,
            &applied.spec.mirrors[rule].mirrors[0],
            1,
        )
    };
    let bundle_name = format!("{}/{package}-bundle", sources[0]);
    let (operator_image, sidecar_image) = (operator.clone(), sidecar.clone());
    publish_to(
        &mirrored(&bundle_name, 0),
        &package,
        "acme-db/1.0.0",
        move |object| {
            if object["kind"] != "ClusterServiceVersion" {
                return;
            }
            let pod = &mut object["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]
                ["spec"];
            pod["containers"][0]["image"] = json!(operator_image);
            pod["containers"]
                .as_array_mut()
                .unwrap()
                .push(json!({"name": "proxy", "image": sidecar_image}));
        },
    )
    .await;
    let bundle = format!("{bundle_name}:1.0.0");

    let catalog_name = unique_name("example-mirrors");
    let _catalogs = CatalogCleanup {
        catalogs: vec![catalog_name.clone()],
        secrets: Vec::new(),
    };
    let catalog = json!({
        "apiVersion": "windlass.dev/v1alpha1", "kind": "Catalog",
        "metadata": {"name": catalog_name, "labels": {TEST_NAMESPACE_LABEL: "true"}},
        "spec": {
            "source": {"type": "BundleImages", "bundleImages": [bundle], "plainHTTP": true},
            "priority": -200,
            "pollIntervalSeconds": 5,
        },
    });
    let catalogs = Api::<Catalog>::all(client.clone());
    catalogs
        .patch(&catalog_name, &apply_params(), &Patch::Apply(&catalog))
        .await
        .unwrap();
    wait_object(
        &catalogs,
        &catalog_name,
        "Serving through the mirror",
        TIMEOUT,
        |c| c.status.as_ref().and_then(|s| s.phase) == Some(CatalogPhase::Serving),
    )
    .await;

    let ns = TestNamespace::create(client, "example-mirrors").await;
    subscribe(
        client,
        &ns.name,
        "db",
        json!({"package": package, "catalog": catalog_name, "targetNamespaces": [ns.name]}),
    )
    .await;
    let blueprint = wait_blueprint(client, &ns.name, "db", "1.0.0 Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.0")
    })
    .await;
    let deployment = Api::<Deployment>::namespaced(client.clone(), &ns.name)
        .get("acme-db-operator")
        .await
        .unwrap();
    let images: Vec<String> = deployment
        .spec
        .template
        .spec
        .unwrap()
        .containers
        .iter()
        .filter_map(|c| c.image.clone())
        .collect();
    assert_eq!(images, [mirrored(&operator, 0), mirrored(&sidecar, 1)]);
    let history = &blueprint.status.unwrap().history;
    let rewrites: Vec<ImageRewrite> = history[0].image_rewrites.clone();
    let rewrite = |image: &str, mirror: String| ImageRewrite {
        image: image.to_string(),
        mirror,
        mirror_set: name.clone(),
    };
    assert_eq!(rewrites.len(), 3, "{rewrites:?}");
    assert!(
        rewrites[0]
            .image
            .starts_with(&format!("{bundle_name}@sha256:"))
            && rewrites[0].mirror_set == name,
        "the bundle image was pulled from the mirror: {rewrites:?}"
    );
    assert!(
        rewrites.contains(&rewrite(&operator, mirrored(&operator, 0))),
        "{rewrites:?}"
    );
    assert!(
        rewrites.contains(&rewrite(&sidecar, mirrored(&sidecar, 1))),
        "{rewrites:?}"
    );
}
