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
        catalog: Arc::new(catalog),
        bundles: Arc::default(),
        registry: RegistryOptions::default(),
        credentials: BTreeMap::new(),
        verification: None,
        listing: ListingState::default(),
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

/// A catalog of package `db` in versions 1.0.0, 1.0.1 and 1.1.0 on channel `stable`.
fn versions(name: &str, priority: i32) -> ServedCatalog {
    let mut served = served(name, priority, &format!("sha256:{name}"), &[]);
    let mut package = Package {
        name: "db".into(),
        default_channel: Some("stable".into()),
        ..Default::default()
    };
    let mut entries = Vec::new();
    let mut previous: Option<String> = None;
    for version in ["1.0.0", "1.0.1", "1.1.0"] {
        let csv = format!("db.v{version}");
        package.bundles.insert(
            csv.clone(),
            Bundle {
                name: csv.clone(),
                package: "db".into(),
                version: semver::Version::parse(version).unwrap(),
                image: None,
                properties: Vec::new(),
                related_images: Vec::new(),
            },
        );
        entries.push(windlass_catalog::ChannelEntry {
            name: csv.as_str().into(),
            replaces: previous.as_deref().map(Into::into),
            ..Default::default()
        });
        previous = Some(csv);
    }
    package.channels.insert(
        "stable".into(),
        windlass_catalog::Channel {
            name: "stable".into(),
            package: "db".into(),
            entries,
        },
    );
    Arc::make_mut(&mut served.catalog)
        .packages
        .insert("db".into(), package);
    served
}

fn delist(served: &mut ServedCatalog, versions: &[&str], reason: &str) {
    let versions: Vec<String> = versions.iter().map(|v| v.to_string()).collect();
    served.listing.delisting = Delisting::from_entries([("db", versions.as_slice(), reason)]).0;
}

#[test]
fn delisted_versions_and_packages_are_left_out_of_selections() {
    let store = CatalogStore::new();
    let mut vendor = versions("vendor", 10);
    delist(&mut vendor, &["1.0.1"], "CVE-1");
    store.serve(vendor.clone());
    let selection = store.select(None).unwrap();
    let db = &selection.catalog.packages["db"];
    assert_eq!(
        db.bundles.keys().collect::<Vec<_>>(),
        ["db.v1.0.0", "db.v1.1.0"]
    );
    assert_eq!(
        selection.delisted["db"].describe("db"),
        "version 1.0.1 of package db is delisted by catalog vendor (CVE-1)"
    );
    // What is served still has every version: installs of 1.0.1 read their bundle from it.
    assert_eq!(
        store.get("vendor").unwrap().catalog.packages["db"]
            .bundles
            .len(),
        3
    );

    // Delisted whole, and no other catalog offers it.
    delist(&mut vendor, &[], "end of support");
    store.serve(vendor.clone());
    let selection = store.select(None).unwrap();
    assert!(!selection.catalog.packages.contains_key("db"));
    assert_eq!(
        selection.delisted["db"].describe("db"),
        "package db is delisted by catalog vendor (end of support)"
    );
    assert!(
        store
            .select(Some("vendor"))
            .unwrap()
            .delisted
            .contains_key("db")
    );

    // Another catalog offers it: that one serves it, and nothing is delisted.
    store.serve(versions("community", 0));
    let selection = store.select(None).unwrap();
    assert_eq!(origin(&selection, "db"), "community");
    assert!(selection.delisted.is_empty());
}

#[test]
fn a_changed_delisting_is_news_to_subscribers() {
    let store = CatalogStore::new();
    let mut vendor = versions("vendor", 10);
    store.serve(vendor.clone());
    let mut changes = store.changes();
    changes.mark_unchanged();
    store.serve(vendor.clone());
    assert!(
        !changes.has_changed().unwrap(),
        "the same content is no news"
    );
    delist(&mut vendor, &["1.0.1"], "");
    store.serve(vendor);
    assert!(changes.has_changed().unwrap());
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
    Arc::make_mut(&mut catalog.bundles).insert(
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

    // A catalog that is not served (unreachable, not loaded) leaves what it served usable.
    let offline = CatalogStore::new();
    offline.keep(acme_db("sha256:old"), Some("builtin"));
    let kept = offline
        .bundle("builtin", "acme-db.v1.0.0", Some("sha256:old"))
        .await
        .unwrap();
    assert_eq!(kept.digest, "sha256:old");
}

/// A served catalog whose `acme-db.v1.0.0` lives at an image `reference`.
fn serving_image(name: &str, reference: &str) -> ServedCatalog {
    let mut catalog = served(name, 0, "sha256:catalog", &["acme-db"]);
    Arc::make_mut(&mut catalog.bundles).insert(
        "acme-db.v1.0.0".into(),
        BundleLocation::Image {
            reference: reference.into(),
        },
    );
    catalog
}

#[tokio::test]
async fn cached_content_counts_only_for_the_catalog_that_served_it() {
    let store = CatalogStore::new();
    // `vendor` served this digest; `allowed` is a catalog a tenant may install from.
    store.keep(acme_db("sha256:vendor"), Some("vendor"));
    store.serve(serving_image("vendor", "127.0.0.1:1/acme/db@sha256:vendor"));

    // Not served at all: only content it served itself is returned.
    match store
        .bundle("allowed", "acme-db.v1.0.0", Some("sha256:vendor"))
        .await
    {
        Err(StoreError::UnknownCatalog(name)) => assert_eq!(name, "allowed"),
        other => panic!("another catalog's content was handed out: {other:?}"),
    }

    // Served, under a tag: the digest another catalog served does not stand for its tag. The
    // registry on port 1 refuses, so this reads nothing and fails instead.
    store.serve(serving_image("allowed", "127.0.0.1:1/allowed/db:1.0.0"));
    match store
        .bundle("allowed", "acme-db.v1.0.0", Some("sha256:vendor"))
        .await
    {
        Err(StoreError::Fetch { location, .. }) => {
            assert_eq!(location, "127.0.0.1:1/allowed/db:1.0.0")
        }
        other => panic!("another catalog's content was handed out: {other:?}"),
    }
    // What vendor serves is still vendor's.
    let vendors = store
        .bundle("vendor", "acme-db.v1.0.0", Some("sha256:vendor"))
        .await
        .unwrap();
    assert_eq!(vendors.digest, "sha256:vendor");

    // Served without the bundle: nothing, whatever the cache holds.
    let mut empty = served("allowed", 0, "sha256:empty", &[]);
    Arc::make_mut(&mut empty.bundles).clear();
    store.serve(empty);
    assert!(matches!(
        store
            .bundle("allowed", "acme-db.v1.0.0", Some("sha256:vendor"))
            .await,
        Err(StoreError::UnknownBundle { .. })
    ));
}

#[tokio::test]
async fn content_read_for_a_tag_is_reused_only_by_the_catalog_it_was_read_for() {
    let store = CatalogStore::new();
    store.keep(acme_db("sha256:tagged"), Some("vendor"));
    store.serve(serving_image("vendor", "127.0.0.1:1/acme/db:1.0.0"));
    let hit = store
        .bundle("vendor", "acme-db.v1.0.0", Some("sha256:tagged"))
        .await
        .unwrap();
    assert_eq!(hit.digest, "sha256:tagged");
    // Resolving the digest for that tag asks nothing of the registry either.
    assert_eq!(
        store
            .digest_of("vendor", "acme-db.v1.0.0", Some("sha256:tagged"))
            .await
            .unwrap(),
        "sha256:tagged"
    );
}

#[tokio::test]
async fn a_pinned_location_gives_its_digest_without_reading_the_bundle() {
    let store = CatalogStore::new();
    store.serve(serving_at("sha256:pinned"));
    assert_eq!(
        store
            .digest_of("builtin", "acme-db.v1.0.0", None)
            .await
            .unwrap(),
        "sha256:pinned"
    );
    assert_eq!(store.cache_usage(), (0, 0), "nothing was read");
}

#[test]
fn an_offer_names_the_package_version_and_what_delists_it() {
    let store = CatalogStore::new();
    let mut vendor = served("vendor", 0, "sha256:v", &["acme-db"]);
    let entries = [("acme-db", &["1.0.0".to_string()][..], "ACME-1")];
    vendor.listing.delisting = windlass_catalog::listing::Delisting::from_entries(entries).0;
    store.serve(vendor);
    let offer = store.offer(Some("vendor"), "acme-db.vendor").unwrap();
    assert_eq!(offer.package, "acme-db");
    assert_eq!(offer.version, semver::Version::new(1, 0, 0));
    assert_eq!(
        offer.delisted,
        Some(OfferDelisted {
            whole_package: false,
            message: "version 1.0.0 of package acme-db is delisted by catalog vendor (ACME-1)"
                .into()
        })
    );
    assert!(matches!(
        store.offer(Some("other"), "acme-db.vendor"),
        Err(StoreError::UnknownCatalog(_))
    ));
    assert_eq!(
        store.offer(None, "acme-db.vendor").unwrap().catalog,
        "vendor"
    );
}

#[test]
fn the_content_cache_keeps_its_byte_budget_dropping_the_least_recently_used() {
    let one = content_bytes(&acme_db("sha256:x"));
    assert!(one > 1000, "a real bundle is estimated at {one} bytes");
    // Room for three bundles, not four.
    let store = CatalogStore::with_cache_budget(one * 3 + one / 2);
    for digest in ["sha256:a", "sha256:b", "sha256:c"] {
        store.remember(acme_db(digest));
    }
    assert_eq!(store.cache_usage(), (one * 3, 3));
    // Reading `a` makes `b` the least recently used, so `b` is what the fourth one evicts.
    assert!(store.cached("sha256:a").is_some());
    store.remember(acme_db("sha256:d"));
    assert!(store.cached("sha256:b").is_none());
    for kept in ["sha256:a", "sha256:c", "sha256:d"] {
        assert!(store.cached(kept).is_some(), "{kept} was evicted");
    }
    assert_eq!(store.cache_usage(), (one * 3, 3));
    // The same digest again replaces its entry instead of counting twice.
    store.remember(acme_db("sha256:d"));
    assert_eq!(store.cache_usage(), (one * 3, 3));
}

#[test]
fn content_larger_than_the_whole_budget_is_handed_out_but_not_kept() {
    let store = CatalogStore::with_cache_budget(1000);
    let content = store.remember(acme_db("sha256:big"));
    assert_eq!(content.digest, "sha256:big");
    assert!(store.cached("sha256:big").is_none());
    assert_eq!(store.cache_usage(), (0, 0));
}

#[tokio::test]
async fn evicted_content_is_read_again_from_where_the_catalog_says_it_lives() {
    let one = content_bytes(&acme_db("sha256:x"));
    let store = CatalogStore::with_cache_budget(one + one / 2);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bundles/acme-db/1.0.0");
    let mut served = served("builtin", 0, "sha256:catalog", &[]);
    Arc::make_mut(&mut served.bundles).insert(
        "acme-db.v1.0.0".into(),
        BundleLocation::Directory {
            path: dir,
            digest: "sha256:dir".into(),
        },
    );
    store.serve(served);
    let first = store
        .bundle("builtin", "acme-db.v1.0.0", None)
        .await
        .unwrap();
    assert_eq!(first.digest, "sha256:dir");
    // Another bundle takes the only place; the next read loads the folder again.
    store.remember(acme_db("sha256:other"));
    assert!(store.cached("sha256:dir").is_none());
    let again = store
        .bundle("builtin", "acme-db.v1.0.0", Some("sha256:dir"))
        .await
        .unwrap();
    assert_eq!(again.csv_name, "acme-db.v1.0.0");
    assert!(!Arc::ptr_eq(&first, &again));
}

#[test]
fn resolutions_share_the_served_catalogs_instead_of_copying_them() {
    let store = CatalogStore::new();
    store.serve(served("community", 0, "sha256:a", &["db", "cache"]));
    let community = store.get("community").unwrap();
    // One catalog serving everything: the selection is that catalog itself.
    let alone = store.select(None).unwrap();
    assert!(Arc::ptr_eq(&alone.catalog, &community.catalog));
    assert!(Arc::ptr_eq(
        &store.select(Some("community")).unwrap().catalog,
        &community.catalog
    ));

    // Two catalogs: merged once, and the merge is shared until what they serve changes.
    store.serve(served("builtin", -100, "sha256:b", &["db", "gateway"]));
    let first = store.select(None).unwrap();
    let second = store.select(None).unwrap();
    assert!(Arc::ptr_eq(&first.catalog, &second.catalog));
    assert_eq!(
        first.catalog.packages.keys().collect::<Vec<_>>(),
        ["cache", "db", "gateway"]
    );
    assert_eq!(origin(&first, "db"), "community");
    // An unchanged poll serves the same content again under a new entry: still shared.
    let again = ServedCatalog {
        credentials: [("r.example".to_string(), windlass_oci::Auth::Anonymous)].into(),
        ..(*community).clone()
    };
    store.serve(again);
    let after_poll = store.select(None).unwrap();
    assert!(Arc::ptr_eq(&first.catalog, &after_poll.catalog));
    assert!(
        after_poll.origin["db"]
            .credentials
            .contains_key("r.example")
    );
    // New content, or a new priority, makes a new merge.
    store.serve(served("community", 0, "sha256:c", &["db"]));
    let changed = store.select(None).unwrap();
    assert!(!Arc::ptr_eq(&first.catalog, &changed.catalog));
    assert_eq!(origin(&changed, "db"), "community");
    assert!(!changed.catalog.packages.contains_key("cache"));
    store.serve(served("builtin", 100, "sha256:b", &["db", "gateway"]));
    assert_eq!(origin(&store.select(None).unwrap(), "db"), "builtin");
}

#[test]
fn bundle_locations_come_from_catalog_images_unless_listed() {
    let mut served = served("images", 0, "sha256:a", &["db"]);
    Arc::make_mut(&mut served.catalog)
        .packages
        .get_mut("db")
        .unwrap()
        .bundles
        .get_mut("db.images")
        .unwrap()
        .image = Some("r.example/db@sha256:1".into());
    assert_eq!(
        served.location("db.images"),
        Some(BundleLocation::Image {
            reference: "r.example/db@sha256:1".into()
        })
    );
    assert_eq!(served.without_location().count(), 0);
    assert_eq!(served.location("db.other"), None);
    Arc::make_mut(&mut served.bundles).insert(
        "db.images".into(),
        BundleLocation::Directory {
            path: "/bundles/db".into(),
            digest: "sha256:d".into(),
        },
    );
    assert!(matches!(
        served.location("db.images"),
        Some(BundleLocation::Directory { .. })
    ));
}
