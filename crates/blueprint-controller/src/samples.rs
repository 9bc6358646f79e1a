//! The sample bundles of the built-in catalog, as the catalog store serves them, for tests.

use std::path::Path;

use windlass_catalog_store::BundleContent;

/// `bundles/acme-db/<version>`, as served with a made-up digest.
pub fn acme_db(version: &str) -> BundleContent {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bundles/acme-db");
    let bundle = windlass_bundle::load_bundle(&dir.join(version)).expect("acme-db loads");
    BundleContent {
        package: "acme-db".into(),
        csv_name: bundle.csv.name().to_string(),
        version: bundle.csv.version().expect("a version"),
        digest: "sha256:abc".into(),
        image: None,
        pulled_from: None,
        bundle,
    }
}
