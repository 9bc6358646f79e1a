//! Bundle images in the local registry: a real corpus bundle pushed by windlass is a real OCI
//! image (skopeo reads its manifest and bundle labels), and pulling it back gives the same
//! files and the same bundle.

use std::path::Path;

use windlass_bundle::metadata::keys;
use windlass_bundle::{Limits, from_files, load::read_source, pack::bundle_layout_tree};
use windlass_oci::{self as oci, RegistryOptions};
use windlass_testkit::{run_ok, unique_name};

fn options() -> RegistryOptions {
    RegistryOptions {
        plain_http: true,
        ..Default::default()
    }
}

/// Pushes a bundle folder and checks the image from the outside with skopeo, then pulls it.
async fn round_trip(folder: &Path, expected_package: &str) {
    let registry = windlass_testkit::registry();
    let reference = format!("{}:v1", registry.unique_repository("e2e/bundle"));
    let (tree, source) = read_source(folder, Limits::default()).unwrap();
    let bundle = from_files(&tree, &source).unwrap();
    let layout = bundle_layout_tree(&bundle, &tree);
    let pushed = oci::push(&layout, &bundle.annotations, &reference, &options())
        .await
        .unwrap();

    let inspect: serde_json::Value =
        serde_json::from_str(&run_ok(std::process::Command::new("skopeo").args([
            "inspect",
            "--tls-verify=false",
            &format!("docker://{reference}"),
        ])))
        .unwrap();
    assert_eq!(inspect["Digest"], pushed.digest.as_str());
    let labels = &inspect["Labels"];
    assert_eq!(labels[keys::MEDIATYPE], "registry+v1");
    assert_eq!(labels[keys::MANIFESTS], "manifests/");
    assert_eq!(labels[keys::METADATA], "metadata/");
    assert_eq!(labels[keys::PACKAGE], expected_package);
    assert!(
        labels[keys::CHANNELS]
            .as_str()
            .is_some_and(|c| !c.is_empty()),
        "{labels}"
    );
    let raw: serde_json::Value =
        serde_json::from_str(&run_ok(std::process::Command::new("skopeo").args([
            "inspect",
            "--raw",
            "--tls-verify=false",
            &format!("docker://{reference}"),
        ])))
        .unwrap();
    assert_eq!(
        raw["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    assert_eq!(
        raw["config"]["mediaType"],
        "application/vnd.oci.image.config.v1+json"
    );
    assert_eq!(
        raw["layers"][0]["mediaType"],
        "application/vnd.oci.image.layer.v1.tar+gzip"
    );

    let (pulled_bundle, pulled) = oci::pull_bundle(&reference, &options()).await.unwrap();
    assert_eq!(pulled.digest, pushed.digest);
    assert_eq!(
        pulled.files, layout,
        "the image holds exactly the bundle's files"
    );
    assert_eq!(pulled_bundle.csv, bundle.csv);
    assert_eq!(pulled_bundle.manifests.len(), bundle.manifests.len());
    assert_eq!(pulled_bundle.package(), Some(expected_package));
}

#[tokio::test]
async fn a_bundle_layout_corpus_bundle_round_trips_through_the_registry() {
    let Some(corpus) = windlass_corpus::operatorhub_or_skip() else {
        return;
    };
    round_trip(&corpus.join("flux/0.16.1"), "flux").await;
}

#[tokio::test]
async fn a_package_manifest_version_folder_is_pushed_in_bundle_layout() {
    let Some(corpus) = windlass_corpus::operatorhub_or_skip() else {
        return;
    };
    round_trip(&corpus.join("etcd/0.9.4"), "etcd").await;
}

#[tokio::test]
async fn pulling_a_tag_that_does_not_exist_says_not_found() {
    let registry = windlass_testkit::registry();
    let reference = format!("{}/{}:missing", registry.addr, unique_name("e2e/none"));
    let error = oci::pull(&reference, &options()).await.unwrap_err();
    assert!(matches!(error, oci::OciError::NotFound { .. }), "{error}");
}

#[tokio::test]
async fn a_catalog_pushed_as_an_image_reads_back_as_the_same_catalog() {
    use windlass_catalog::fbc::{CONFIGS_LABEL, image_tree, read_tree};
    let Some(corpus) = windlass_corpus::operatorhub_or_skip() else {
        return;
    };
    let registry = windlass_testkit::registry();
    let reference = format!("{}:latest", registry.unique_repository("e2e/catalog"));
    let catalog = windlass_catalog::load_catalog(&corpus.join("etcd")).unwrap();
    let labels = [(CONFIGS_LABEL.to_string(), "/configs".to_string())].into();
    let pushed = oci::push_image(
        &image_tree(&catalog).unwrap(),
        &labels,
        &reference,
        &options(),
    )
    .await
    .unwrap();

    let inspect: serde_json::Value =
        serde_json::from_str(&run_ok(std::process::Command::new("skopeo").args([
            "inspect",
            "--tls-verify=false",
            &format!("docker://{reference}"),
        ])))
        .unwrap();
    assert_eq!(inspect["Digest"], pushed.digest.as_str());
    assert_eq!(inspect["Labels"][CONFIGS_LABEL], "/configs");

    let pulled = oci::pull(&reference, &options()).await.unwrap();
    let back = read_tree(&pulled.files, &pulled.labels[CONFIGS_LABEL], &reference).unwrap();
    assert_eq!(back.catalog, catalog);
}
