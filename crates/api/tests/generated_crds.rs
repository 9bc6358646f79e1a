//! The CRD YAML checked in under `config/` must be what the Rust types generate.

use std::path::Path;

#[test]
fn checked_in_crds_match_the_api_types() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for dir in ["config/crd", "config/helm/windlass/crds"] {
        for (file, yaml) in windlass_api::crd_files().unwrap() {
            let path = root.join(dir).join(&file);
            let on_disk = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}; run `make crds`", path.display()));
            assert!(
                on_disk == yaml,
                "{} is stale; run `make crds` and commit the result",
                path.display()
            );
        }
    }
}

#[test]
fn short_names_and_category_never_collide_with_olm() {
    const OLM_SHORT_NAMES: [&str; 7] = ["csv", "csvs", "sub", "subs", "ip", "catsrc", "og"];
    for crd in windlass_api::crds() {
        let names = &crd.spec.names;
        for short in names.short_names.iter().flatten() {
            assert!(
                !OLM_SHORT_NAMES.contains(&short.as_str()),
                "{short} collides with OLM"
            );
        }
        assert_eq!(
            names.categories.as_deref(),
            Some(&["windlass".to_string()][..])
        );
        assert_eq!(crd.spec.group, windlass_api::GROUP);
    }
}
