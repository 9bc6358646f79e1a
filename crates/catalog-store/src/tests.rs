use windlass_catalog::{Package, model::Bundle};

use super::*;

/// A catalog offering `packages`, each with one bundle `<package>.<catalog>` so tests can
/// tell which catalog a package came from.
fn served(name: &str, priority: i32, digest: &str, packages: &[&str]) -> ServedCatalog {
    let mut catalog = Catalog::default();
    for package in packages {
        let csv = format!("{package}.{name}");
        let bundle = Bundle {
            name: csv.clone(),
            package: (*package).into(),
            version: semver::Version::new(1, 0, 0),
            image: None,
            properties: Vec::new(),
            related_images: Vec::new(),
        };
        catalog.packages.insert(
            package.to_string(),
            Package {
                name: package.to_string(),
                bundles: [(csv, bundle)].into(),
                ..Default::default()
            },
        );
    }
    ServedCatalog {
        name: name.into(),
        priority,
        digest: digest.into(),
        catalog,
        bundles: BTreeMap::new(),
        registry: RegistryOptions::default(),
        credentials: BTreeMap::new(),
        verification: None,
        pulled_from: None,
    }
}

fn origin(selection: &Selection, package: &str) -> String {
    selection.origin[package].name.clone()
}

#[test]
fn the_highest_priority_catalog_wins_each_package_whole() {
    let store = CatalogStore::new();
    store.serve(served("community", 0, "sha256:a", &["db", "cache"]));
    store.serve(served("vendor", 10, "sha256:b", &["db"]));
    store.serve(served(
        "builtin",
        -100,
        "sha256:c",
        &["db", "cache", "gateway"],
    ));
    let selection = store.select(None).unwrap();
    assert_eq!(origin(&selection, "db"), "vendor");
    assert_eq!(origin(&selection, "cache"), "community");
    assert_eq!(origin(&selection, "gateway"), "builtin");
    // The package is the winner's, bundles and all, never a mix.
    let db = &selection.catalog.packages["db"];
    assert_eq!(db.bundles.keys().collect::<Vec<_>>(), ["db.vendor"]);
    assert_eq!(selection.catalog.packages.len(), 3);
}

#[test]
fn equal_priorities_are_broken_by_catalog_name() {
    let store = CatalogStore::new();
    // Served in the "wrong" order on purpose: the result must not depend on it.
    store.serve(served("zeta", 5, "sha256:z", &["db"]));
    store.serve(served("alpha", 5, "sha256:a", &["db"]));
    store.serve(served("mid", 5, "sha256:m", &["db"]));
    assert_eq!(origin(&store.select(None).unwrap(), "db"), "alpha");
    // A higher priority still beats a smaller name.
    store.serve(served("zeta", 6, "sha256:z", &["db"]));
    assert_eq!(origin(&store.select(None).unwrap(), "db"), "zeta");
}

#[test]
fn only_selects_one_catalog_whatever_its_priority() {
    let store = CatalogStore::new();
    store.serve(served("vendor", 10, "sha256:b", &["db"]));
    store.serve(served("builtin", -100, "sha256:c", &["db", "gateway"]));
    let selection = store.select(Some("builtin")).unwrap();
    assert_eq!(origin(&selection, "db"), "builtin");
    assert_eq!(selection.catalog.packages.len(), 2);
    assert!(matches!(
        store.select(Some("missing")),
        Err(StoreError::UnknownCatalog(name)) if name == "missing"
    ));
}

#[test]
fn selecting_from_an_empty_store_says_so() {
    assert!(matches!(
        CatalogStore::new().select(None),
        Err(StoreError::NoCatalogs)
    ));
}

#[test]
fn subscribers_hear_of_new_content_but_not_of_the_same_content_again() {
    let store = CatalogStore::new();
    let mut changes = store.changes();
    store.serve(served("a", 0, "sha256:1", &["db"]));
    assert!(changes.has_changed().unwrap(), "a new catalog");
    changes.mark_unchanged();

    store.serve(served("a", 0, "sha256:1", &["db"]));
    assert!(!changes.has_changed().unwrap(), "same digest and priority");

    store.serve(served("a", 0, "sha256:2", &["db"]));
    assert!(changes.has_changed().unwrap(), "new digest");
    changes.mark_unchanged();

    store.serve(served("a", 3, "sha256:2", &["db"]));
    assert!(changes.has_changed().unwrap(), "new priority");
    changes.mark_unchanged();

    store.remove("unknown");
    assert!(!changes.has_changed().unwrap(), "removing nothing");
    store.remove("a");
    assert!(changes.has_changed().unwrap(), "removed");
    assert!(store.get("a").is_none());
    assert!(store.names().is_empty());
}

#[test]
fn credentials_go_only_to_their_registry() {
    let mut catalog = served("private", 0, "sha256:p", &[]);
    let auth = Auth::Basic {
        username: "u".into(),
        password: "p".into(),
    };
    catalog
        .credentials
        .insert("127.0.0.1:5000".into(), auth.clone());
    catalog.registry.plain_http = true;
    let options = catalog.registry_for("127.0.0.1:5000/acme/db@sha256:00");
    assert_eq!(options.auth, auth);
    assert!(options.plain_http);
    assert_eq!(
        catalog.registry_for("quay.io/acme/db:1").auth,
        Auth::Anonymous
    );
}

fn acme_db(digest: &str) -> BundleContent {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bundles/acme-db/1.0.0");
    let bundle = windlass_bundle::load_bundle(&path).unwrap();
    BundleContent {
        package: "acme-db".into(),
        csv_name: bundle.csv.name().to_string(),
        version: semver::Version::new(1, 0, 0),
        digest: digest.into(),
        image: None,
        pulled_from: None,
        bundle,
    }
}

fn serving_at(digest: &str) -> ServedCatalog {
    let mut catalog = served("builtin", 0, digest, &[]);
    catalog.bundles.insert(
        "acme-db.v1.0.0".into(),
        BundleLocation::Directory {
            path: "/nowhere".into(),
            digest: digest.into(),
        },
    );
    catalog
}

#[tokio::test]
async fn a_republished_bundle_is_seen_although_the_old_digest_is_cached() {
    let store = CatalogStore::new();
    store.remember(acme_db("sha256:old"));
    store.serve(serving_at("sha256:old"));
    let same = store
        .bundle("builtin", "acme-db.v1.0.0", Some("sha256:old"))
        .await
        .unwrap();
    assert_eq!(same.digest, "sha256:old");

    // The catalog now serves other content under the same CSV name.
    store.remember(acme_db("sha256:new"));
    store.serve(serving_at("sha256:new"));
    match store
        .bundle("builtin", "acme-db.v1.0.0", Some("sha256:old"))
        .await
    {
        Err(StoreError::DigestChanged { actual, .. }) => assert_eq!(actual, "sha256:new"),
        other => panic!("the republished bundle went unnoticed: {other:?}"),
    }

    // A catalog that is not served (unreachable, not loaded) leaves what was resolved usable.
    let offline = CatalogStore::new();
    offline.remember(acme_db("sha256:old"));
    let kept = offline
        .bundle("builtin", "acme-db.v1.0.0", Some("sha256:old"))
        .await
        .unwrap();
    assert_eq!(kept.digest, "sha256:old");
}
