//! The built-in catalog served through the store: bundles read once, then from the cache by
//! digest.

use std::{collections::BTreeMap, sync::Arc};

use windlass_catalog_store::{
    BundleContent, BundleLocation, CatalogStore, ServedCatalog, StoreError,
};
use windlass_oci::RegistryOptions;

use super::BuiltinCatalog;

fn builtin_store(builtin: &BuiltinCatalog, name: &str) -> Arc<CatalogStore> {
    let store = CatalogStore::new();
    store.serve(ServedCatalog {
        name: name.into(),
        priority: 0,
        digest: builtin.digest.clone(),
        catalog: builtin.catalog.clone(),
        bundles: builtin.bundles.clone(),
        registry: RegistryOptions::default(),
        credentials: BTreeMap::new(),
        verification: None,
        listing: Default::default(),
        pulled_from: None,
    });
    store
}

fn directory_digest(builtin: &BuiltinCatalog, csv: &str) -> String {
    builtin.bundles[csv].digest().unwrap().to_string()
}

#[tokio::test]
async fn a_bundle_is_read_once_then_served_from_the_cache_by_digest() {
    let builtin = BuiltinCatalog::materialize().unwrap();
    let store = builtin_store(&builtin, "builtin");
    let expected = directory_digest(&builtin, "acme-db.v1.0.1");

    let content = store
        .bundle("builtin", "acme-db.v1.0.1", None)
        .await
        .unwrap();
    assert_eq!(content.digest, expected);
    assert_eq!(content.package, "acme-db");
    assert_eq!(content.version, semver::Version::new(1, 0, 1));
    assert_eq!(content.image, None);
    assert!(!content.bundle.manifests.is_empty());

    // The folder is gone; the cache still answers, with and without the digest.
    drop(builtin);
    let again = store
        .bundle("builtin", "acme-db.v1.0.1", None)
        .await
        .unwrap();
    assert!(Arc::ptr_eq(&content, &again));
    let pinned = store
        .bundle("builtin", "acme-db.v1.0.1", Some(&expected))
        .await
        .unwrap();
    assert!(Arc::ptr_eq(&content, &pinned));
}

#[tokio::test]
async fn a_digest_that_no_longer_matches_is_refused() {
    let builtin = BuiltinCatalog::materialize().unwrap();
    let store = builtin_store(&builtin, "builtin");
    let stale = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
    let error = store
        .bundle("builtin", "acme-db.v1.1.0", Some(stale))
        .await
        .unwrap_err();
    match error {
        StoreError::DigestChanged {
            csv_name,
            expected,
            actual,
        } => {
            assert_eq!(csv_name, "acme-db.v1.1.0");
            assert_eq!(expected, stale);
            assert_eq!(actual, directory_digest(&builtin, "acme-db.v1.1.0"));
        }
        other => panic!("expected DigestChanged, got {other}"),
    }
    // Another bundle's digest is not an answer for this one.
    let other = directory_digest(&builtin, "acme-db.v1.0.0");
    store
        .bundle("builtin", "acme-db.v1.0.0", None)
        .await
        .unwrap();
    assert!(matches!(
        store
            .bundle("builtin", "acme-db.v1.1.0", Some(&other))
            .await,
        Err(StoreError::DigestChanged { .. })
    ));
}

#[tokio::test]
async fn unknown_catalogs_and_bundles_are_errors() {
    let builtin = BuiltinCatalog::materialize().unwrap();
    let store = builtin_store(&builtin, "builtin");
    assert!(matches!(
        store.bundle("nope", "acme-db.v1.0.0", None).await,
        Err(StoreError::UnknownCatalog(_))
    ));
    assert!(matches!(
        store.bundle("builtin", "acme-db.v9.0.0", None).await,
        Err(StoreError::UnknownBundle { .. })
    ));
}

#[tokio::test]
async fn an_image_pinned_by_a_known_digest_is_not_pulled_again() {
    let builtin = BuiltinCatalog::materialize().unwrap();
    let BundleLocation::Directory { path, .. } = &builtin.bundles["acme-gateway.v0.1.0"] else {
        unreachable!()
    };
    let bundle = windlass_bundle::load_bundle(path).unwrap();
    let digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
    // Nothing listens on port 1: a pull would fail.
    let reference = format!("127.0.0.1:1/acme/gateway@{digest}");
    let store = CatalogStore::new();
    store.remember(BundleContent {
        package: "acme-gateway".into(),
        csv_name: "acme-gateway.v0.1.0".into(),
        version: semver::Version::new(0, 1, 0),
        digest: digest.into(),
        image: Some(reference.clone()),
        pulled_from: None,
        bundle,
    });
    let mut catalog = ServedCatalog {
        name: "images".into(),
        priority: 0,
        digest: "sha256:c".into(),
        catalog: builtin.catalog.clone(),
        bundles: Default::default(),
        registry: RegistryOptions::default(),
        credentials: BTreeMap::new(),
        verification: None,
        listing: Default::default(),
        pulled_from: None,
    };
    std::sync::Arc::make_mut(&mut catalog.bundles).insert(
        "acme-gateway.v0.1.0".into(),
        BundleLocation::Image {
            reference: reference.clone(),
        },
    );
    // An unpinned image would need a pull, which fails and names the image.
    std::sync::Arc::make_mut(&mut catalog.bundles).insert(
        "acme-db.v1.0.0".into(),
        BundleLocation::Image {
            reference: "127.0.0.1:1/acme/db:1.0.0".into(),
        },
    );
    store.serve(catalog);
    let content = store
        .bundle("images", "acme-gateway.v0.1.0", None)
        .await
        .unwrap();
    assert_eq!(content.digest, digest);
    let error = store
        .bundle("images", "acme-db.v1.0.0", None)
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("127.0.0.1:1/acme/db:1.0.0"),
        "{error}"
    );
}
