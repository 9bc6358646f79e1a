//! Catalogs of a test's own: the sample bundles republished as bundle images in the local
//! registry under package names no other test uses.

use std::{path::Path, time::Duration};

use kube::{Api, Client, api::PostParams};
use serde_json::{Value, json};
use windlass_api::{Catalog, catalog::CatalogPhase};
use windlass_bundle::{
    Limits, from_files, load::read_source, metadata::keys, pack::bundle_layout_tree,
};
use windlass_oci::{self as oci, RegistryOptions};

pub fn plain_http() -> RegistryOptions {
    RegistryOptions {
        plain_http: true,
        ..Default::default()
    }
}

/// Publishes the sample bundle folder `bundles/<path>` (package-manifest layout) as a bundle
/// image of `package` on channel `stable`, after `tweak` has had a chance to change each
/// manifest (as a JSON value). Returns the image reference.
pub async fn publish(package: &str, path: &str, tweak: impl Fn(&mut Value)) -> String {
    let repository = crate::registry().unique_repository(package);
    publish_to(&repository, package, path, tweak).await
}

/// [`publish`] into `repository` (tagged with the bundle's version), so a test can push the
/// same reference again with other content.
pub async fn publish_to(
    repository: &str,
    package: &str,
    path: &str,
    tweak: impl Fn(&mut Value),
) -> String {
    publish_with(&plain_http(), repository, package, path, tweak).await
}

/// [`publish_to`] a registry reached with `options` (credentials, for one that asks).
pub async fn publish_with(
    options: &RegistryOptions,
    repository: &str,
    package: &str,
    path: &str,
    tweak: impl Fn(&mut Value),
) -> String {
    publish_files(options, repository, package, path, tweak, &[]).await
}

/// [`publish_with`], with files added to the bundle folder first (another manifest,
/// `metadata/dependencies.yaml`), each by its path in the folder and its bytes.
pub async fn publish_files(
    options: &RegistryOptions,
    repository: &str,
    package: &str,
    path: &str,
    tweak: impl Fn(&mut Value),
    extra: &[(&str, Vec<u8>)],
) -> String {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../bundles")
        .join(path);
    let (mut tree, source) = read_source(&folder, Limits::default())
        .unwrap_or_else(|e| panic!("reading {}: {e}", folder.display()));
    for (file, bytes) in extra {
        tree.files.insert((*file).to_string(), bytes.clone());
    }
    let original = from_files(&tree, &source).unwrap();
    for manifest in &original.manifests {
        let mut object = manifest.object.clone();
        tweak(&mut object);
        if object != manifest.object {
            tree.files.insert(
                manifest.file.clone(),
                serde_json::to_vec_pretty(&object).unwrap(),
            );
        }
    }
    let mut bundle = from_files(&tree, &source).unwrap();
    bundle.annotations.0.extend([
        (keys::MEDIATYPE.to_string(), keys::REGISTRY_V1.to_string()),
        (keys::MANIFESTS.to_string(), "manifests/".to_string()),
        (keys::METADATA.to_string(), "metadata/".to_string()),
        (keys::PACKAGE.to_string(), package.to_string()),
        (keys::CHANNELS.to_string(), "stable".to_string()),
        (keys::DEFAULT_CHANNEL.to_string(), "stable".to_string()),
    ]);
    let layout = bundle_layout_tree(&bundle, &tree);
    let version = bundle
        .csv
        .version()
        .map(|v| v.to_string())
        .unwrap_or_else(|_| "latest".into());
    let reference = format!("{repository}:{version}");
    oci::push(&layout, &bundle.annotations, &reference, options)
        .await
        .unwrap_or_else(|e| panic!("pushing {reference}: {e}"));
    reference
}

/// A cluster-scoped BundleImages Catalog below the built-in catalog's priority, deleted when
/// the value is dropped.
pub struct TestCatalog {
    pub name: String,
    client: Client,
}

impl TestCatalog {
    pub async fn create(client: &Client, prefix: &str, images: &[String]) -> TestCatalog {
        let name = crate::unique_name(prefix);
        let catalog: Catalog = serde_json::from_value(json!({
            "apiVersion": "windlass.dev/v1alpha1",
            "kind": "Catalog",
            "metadata": { "name": name, "labels": { crate::TEST_NAMESPACE_LABEL: "true" } },
            "spec": {
                "source": { "type": "BundleImages", "bundleImages": images, "plainHTTP": true },
                "priority": -200,
                "pollIntervalSeconds": 5,
            },
        }))
        .unwrap();
        Api::<Catalog>::all(client.clone())
            .create(&PostParams::default(), &catalog)
            .await
            .unwrap_or_else(|e| panic!("creating Catalog {name}: {e}"));
        TestCatalog {
            name,
            client: client.clone(),
        }
    }

    /// [`TestCatalog::create`], then waits until it is Serving.
    pub async fn serving(client: &Client, prefix: &str, images: &[String]) -> TestCatalog {
        let catalog = TestCatalog::create(client, prefix, images).await;
        catalog
            .wait("Serving", |c| phase(c) == Some(CatalogPhase::Serving))
            .await;
        catalog
    }

    pub fn api(&self) -> Api<Catalog> {
        Api::all(self.client.clone())
    }

    /// Waits until the catalog satisfies `ready`.
    pub async fn wait(&self, what: &str, ready: impl Fn(&Catalog) -> bool) -> Catalog {
        crate::lifecycle::wait_object(
            &self.api(),
            &self.name,
            what,
            Duration::from_secs(180),
            ready,
        )
        .await
    }
}

/// The catalog's phase (`None` before it has one).
pub fn phase(catalog: &Catalog) -> Option<CatalogPhase> {
    catalog.status.as_ref().and_then(|s| s.phase)
}

impl Drop for TestCatalog {
    fn drop(&mut self) {
        // Drop cannot await, and the test's client belongs to its (blocked) runtime: ask the
        // apiserver through kubectl, as TestNamespace does.
        let _ = crate::kubectl()
            .args([
                "delete",
                "catalog.windlass.dev",
                &self.name,
                "--wait=false",
                "--ignore-not-found",
            ])
            .output();
    }
}
