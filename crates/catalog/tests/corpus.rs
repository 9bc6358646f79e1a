//! Every real OperatorHub package renders with no bundle lost, and package-manifest channel
//! heads equal the `currentCSV` their package file declares.
//!
//! Without the corpus (`../shared/corpus` beside the checkout, or `WINDLASS_CORPUS`) they skip
//! and say so; see `windlass_corpus`.

use std::collections::BTreeSet;
use std::path::Path;

use windlass_catalog::load::{IssueKind, read_catalog};
use windlass_catalog::validate::channel_heads;

/// CSV files on disk, found independently of the loader: every YAML file whose text declares
/// `kind: ClusterServiceVersion`.
fn csv_files_on_disk(root: &Path) -> usize {
    let mut count = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                count += text
                    .lines()
                    .filter(|l| l.trim_end() == "kind: ClusterServiceVersion")
                    .count();
            }
        }
    }
    count
}

#[test]
fn every_corpus_package_renders_with_no_bundle_lost() {
    let Some(root) = windlass_corpus::operatorhub_or_skip() else {
        return;
    };
    let loaded = read_catalog(&root).expect("corpus reads");
    let lost: Vec<String> = loaded
        .issues
        .iter()
        .filter(|i| i.loses_content())
        .map(|i| i.to_string())
        .collect();
    assert!(lost.is_empty(), "bundles lost:\n{}", lost.join("\n"));

    let folders = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .count();
    assert_eq!(
        loaded.catalog.packages.len(),
        folders,
        "one package per corpus folder"
    );
    let bundles: usize = loaded
        .catalog
        .packages
        .values()
        .map(|p| p.bundles.len())
        .sum();
    assert_eq!(
        bundles,
        csv_files_on_disk(&root),
        "every CSV on disk is a bundle in the catalog"
    );

    let blobs = windlass_catalog::fbc::render(&loaded.catalog);
    let rendered: BTreeSet<(&str, &str)> = blobs
        .iter()
        .filter(|b| b["schema"] == "olm.bundle")
        .map(|b| (b["package"].as_str().unwrap(), b["name"].as_str().unwrap()))
        .collect();
    assert_eq!(rendered.len(), bundles, "every bundle rendered once");
}

#[test]
fn package_manifest_channel_heads_equal_current_csv() {
    let Some(root) = windlass_corpus::operatorhub_or_skip() else {
        return;
    };
    let loaded = read_catalog(&root).expect("corpus reads");
    let missing: BTreeSet<(String, String)> = loaded
        .issues
        .iter()
        .filter(|i| i.kind == IssueKind::MissingCurrentCsv)
        .map(|i| (i.package.clone().unwrap_or_default(), i.message.clone()))
        .collect();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (name, source) in &loaded.package_sources {
        if !source.to_string_lossy().ends_with(".package.yaml") {
            continue;
        }
        let file = windlass_catalog::load::read_package_file(source).unwrap();
        let package = &loaded.catalog.packages[name];
        for declared in &file.channels {
            // Decision 17: a currentCSV absent from the folder is a lint error, not a head.
            if missing
                .iter()
                .any(|(p, m)| p == name && m.starts_with(&format!("channel {}:", declared.name)))
            {
                continue;
            }
            let heads = channel_heads(&package.channels[&declared.name]);
            checked += 1;
            if heads != vec![declared.current_csv.as_str()] {
                wrong.push(format!(
                    "{name}/{}: heads {heads:?}, currentCSV {}",
                    declared.name, declared.current_csv
                ));
            }
        }
    }
    assert!(checked > 50, "only {checked} channels checked");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
