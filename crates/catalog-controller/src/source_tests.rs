use windlass_api::CatalogSpec;

use super::*;

fn tree(files: &[(&str, &str)]) -> FileTree {
    FileTree {
        files: files
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .collect(),
    }
}

const FBC_YAML: &str = r#"
schema: olm.package
name: acme-db
defaultChannel: stable
---
schema: olm.channel
package: acme-db
name: stable
entries:
  - name: acme-db.v1.0.0
  - name: acme-db.v1.0.1
    replaces: acme-db.v1.0.0
---
schema: olm.bundle
name: acme-db.v1.0.0
package: acme-db
image: 127.0.0.1:5000/acme/db@sha256:aaaa
properties:
  - type: olm.package
    value: {packageName: acme-db, version: 1.0.0}
---
schema: olm.bundle
name: acme-db.v1.0.1
package: acme-db
properties:
  - type: olm.package
    value: {packageName: acme-db, version: 1.0.1}
"#;

#[test]
fn a_file_based_catalog_is_read_from_the_folder_its_label_names() {
    let files = tree(&[
        ("catalog/acme-db/index.yaml", FBC_YAML),
        ("etc/other.yaml", "not: a catalog"),
    ]);
    let labels = [(CONFIGS_LABEL.to_string(), "/catalog".to_string())].into();
    let content = read_fbc(files.clone(), &labels, "r/catalog:1", None).unwrap();
    let db = &content.catalog.packages["acme-db"];
    assert_eq!(db.default_channel.as_deref(), Some("stable"));
    assert_eq!(db.channels["stable"].entries.len(), 2);
    assert_eq!(
        content.location("acme-db.v1.0.0").unwrap(),
        BundleLocation::Image {
            reference: "127.0.0.1:5000/acme/db@sha256:aaaa".into()
        }
    );
    // Listed, but without an image it cannot be installed; the caller says so.
    assert!(content.location("acme-db.v1.0.1").is_none());
    assert_eq!(content.without_image, ["acme-db.v1.0.1"]);
}

#[test]
fn without_the_label_configs_or_the_whole_tree_is_read() {
    let in_configs = tree(&[("configs/acme-db/catalog.yaml", FBC_YAML)]);
    let content = read_fbc(in_configs.clone(), &BTreeMap::new(), "r/c:1", None).unwrap();
    assert_eq!(content.catalog.packages.len(), 1);
    let at_root = tree(&[("index.yaml", FBC_YAML)]);
    let content = read_fbc(at_root.clone(), &BTreeMap::new(), "r/c:1", None).unwrap();
    assert_eq!(content.catalog.packages.len(), 1);
}

#[test]
fn what_windlass_catalog_push_writes_reads_back_with_its_images() {
    // The same shape `windlass catalog push` writes: configs/<package>/catalog.json.
    let builtin = crate::builtin::BuiltinCatalog::materialize().unwrap();
    let mut catalog = (*builtin.catalog).clone();
    for bundle in catalog
        .packages
        .values_mut()
        .flat_map(|p| p.bundles.values_mut())
    {
        bundle.image = Some(format!("127.0.0.1:5000/bundles/{}:latest", bundle.name));
    }
    let files = windlass_catalog::fbc::image_tree(&catalog).unwrap();
    let labels = [(CONFIGS_LABEL.to_string(), "/configs".to_string())].into();
    let content = read_fbc(files.clone(), &labels, "r/catalog:1", None).unwrap();
    assert_eq!(
        content.catalog.packages.keys().collect::<Vec<_>>(),
        ["acme-cache", "acme-db", "acme-gateway", "acme-monitor"]
    );
    assert_eq!(
        content
            .catalog
            .packages
            .values()
            .flat_map(|p| p.bundles.keys())
            .filter(|name| content.location(name).is_some())
            .count(),
        10
    );
    assert!(content.without_image.is_empty());
    assert_eq!(
        content.location("acme-monitor.v0.2.0").unwrap(),
        BundleLocation::Image {
            reference: "127.0.0.1:5000/bundles/acme-monitor.v0.2.0:latest".into()
        }
    );
    for (name, package) in &catalog.packages {
        let read = &content.catalog.packages[name];
        assert_eq!(read.default_channel, package.default_channel, "{name}");
        assert_eq!(read.channels, package.channels, "{name}");
        assert_eq!(
            read.bundles.keys().collect::<Vec<_>>(),
            package.bundles.keys().collect::<Vec<_>>()
        );
    }
}

#[test]
fn broken_catalog_content_is_refused_naming_the_image() {
    let labels = BTreeMap::new();
    let cases = [
        ("no packages", tree(&[("README.md", "hello")])),
        (
            "bad json",
            tree(&[("configs/a/catalog.json", "{\"schema\": ")]),
        ),
        (
            "bundle without a version",
            tree(&[(
                "configs/a/catalog.yaml",
                "schema: olm.bundle\nname: a.v1\npackage: a\nimage: r/a:1\n",
            )]),
        ),
        (
            "blob without a schema",
            tree(&[("configs/a/catalog.yaml", "name: a\n")]),
        ),
    ];
    for (case, files) in cases {
        let error = read_fbc(files.clone(), &labels, "r/broken:1", None).unwrap_err();
        assert!(
            matches!(error, SourceError::Invalid { .. }),
            "{case}: {error}"
        );
        assert_eq!(error.reason(), "InvalidContent", "{case}");
        assert!(error.to_string().contains("r/broken:1"), "{case}: {error}");
    }
}

#[test]
fn a_bundle_that_fails_the_gate_is_held_back_and_the_rest_served() {
    let broken = format!(
        "{FBC_YAML}---\nschema: olm.bundle\nname: acme-db.v1.0.2\npackage: acme-db\nimage: r/db:2\nproperties:\n  - type: olm.package\n    value: {{packageName: acme-db, version: banana}}\n"
    );
    let files = tree(&[("configs/acme-db/catalog.yaml", broken.as_str())]);
    let content = read_fbc(files, &BTreeMap::new(), "r/catalog:2", None).unwrap();
    assert_eq!(content.catalog.packages["acme-db"].bundles.len(), 2);
    let held = &content.listing.held_back;
    assert_eq!(held.len(), 1, "{held:#?}");
    assert_eq!(held[0].bundle, "acme-db.v1.0.2");
    assert!(
        held[0].findings[0].contains("olm.package version is not semver"),
        "{:?}",
        held[0].findings
    );
    assert!(
        held[0]
            .source
            .contains("r/catalog:2/configs/acme-db/catalog.yaml"),
        "{}",
        held[0].source
    );
}

#[test]
fn pulled_images_are_pinned_by_digest() {
    assert_eq!(
        pinned("127.0.0.1:5000/acme/db-bundle:1.0.0", "sha256:abc"),
        "127.0.0.1:5000/acme/db-bundle@sha256:abc"
    );
    assert_eq!(
        pinned("127.0.0.1:5000/acme/db@sha256:old", "sha256:new"),
        "127.0.0.1:5000/acme/db@sha256:new"
    );
    let location = BundleLocation::Image {
        reference: pinned("r.example/a:1", "sha256:abc"),
    };
    assert_eq!(location.digest(), Some("sha256:abc"));
    assert_eq!(
        BundleLocation::Image {
            reference: "r.example/a:1".into()
        }
        .digest(),
        None
    );
}

#[test]
fn the_bundle_images_digest_ignores_list_order() {
    let a = digest_of_digests(["sha256:1", "sha256:2"]);
    assert_eq!(a, digest_of_digests(["sha256:2", "sha256:1"]));
    assert_ne!(a, digest_of_digests(["sha256:1", "sha256:3"]));
    assert_ne!(a, digest_of_digests(["sha256:1"]));
    assert!(a.starts_with("sha256:") && a.len() == 71);
}

fn spec(source: CatalogSource, priority: i32) -> CatalogSpec {
    CatalogSpec {
        source,
        priority,
        ..Default::default()
    }
}

#[tokio::test]
async fn the_builtin_source_serves_the_embedded_catalog() {
    let reader = Reader::new();
    let store = CatalogStore::new();
    let served = reader
        .poll(
            "builtin",
            &spec(CatalogSource::default(), -100),
            &Credentials::new(),
            &store,
        )
        .await
        .unwrap();
    assert_eq!(served.priority, -100);
    assert_eq!(served.catalog.packages.len(), 4);
    assert_eq!(served.bundle_count(), 10);
    assert_eq!(served.digest, reader.builtin().await.unwrap().digest);
    // One folder for the reader's lifetime.
    assert_eq!(
        reader.builtin().await.unwrap().path(),
        reader.builtin().await.unwrap().path()
    );
}

#[tokio::test]
async fn a_failed_poll_keeps_the_last_good_content_at_the_new_priority() {
    let reader = Reader::new();
    let store = CatalogStore::new();
    let good = reader
        .poll(
            "cat",
            &spec(CatalogSource::default(), 0),
            &Credentials::new(),
            &store,
        )
        .await
        .unwrap();
    // The spec now points at a registry nothing listens on.
    let unreachable = CatalogSource {
        type_: CatalogSourceType::Image,
        image: Some("127.0.0.1:1/catalog:latest".into()),
        plain_http: true,
        ..Default::default()
    };
    let error = reader
        .poll("cat", &spec(unreachable, 7), &Credentials::new(), &store)
        .await
        .unwrap_err();
    assert_eq!(error.reason(), "PullFailed");
    assert_eq!(error.metric_label(), "pull");
    assert!(
        error.to_string().contains("127.0.0.1:1/catalog:latest"),
        "{error}"
    );
    let kept = store.get("cat").unwrap();
    assert_eq!(kept.digest, good.digest);
    assert_eq!(kept.catalog, good.catalog);
    assert_eq!(kept.priority, 7);
}

#[tokio::test]
async fn specs_without_images_are_refused() {
    let reader = Reader::new();
    let store = CatalogStore::new();
    let image = CatalogSource {
        type_: CatalogSourceType::Image,
        image: Some(" ".into()),
        ..Default::default()
    };
    let bundles = CatalogSource {
        type_: CatalogSourceType::BundleImages,
        ..Default::default()
    };
    for source in [image, bundles] {
        let error = reader
            .read("cat", &source, &Credentials::new(), &store)
            .await
            .unwrap_err();
        assert_eq!(error.reason(), "InvalidSpec", "{error}");
        assert_eq!(error.metric_label(), "invalid_spec");
    }
    assert!(store.names().is_empty(), "nothing served");
}
