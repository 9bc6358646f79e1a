//! The CRD upgrade safety rules on real upgrades: every upgrade of the built-in sample
//! operators passes them (so the shipped upgrades are never refused), and on the OperatorHub
//! corpus each finding of each upgrade between consecutive versions names its CRD, version and
//! field; how many would be refused, and by which rule, is printed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use windlass_bundle::crd::safety::{Verdict, Violation, ViolationKind, findings};
use windlass_bundle::legacy_apis::convert_manifests;

/// The CRDs of a bundle folder, converted as windlass applies them, by name.
fn crds(dir: &Path) -> Option<BTreeMap<String, Value>> {
    let bundle = windlass_bundle::load_bundle(dir).ok()?;
    let converted = convert_manifests(&bundle.manifests).ok()?;
    Some(
        converted
            .objects
            .iter()
            .filter(|m| m.kind() == "CustomResourceDefinition")
            .map(|m| (m.name().to_string(), m.object.clone()))
            .collect(),
    )
}

/// `crd` as the API server holds it once applied: its storage version recorded as stored.
fn as_live(crd: &Value) -> Value {
    let mut live = crd.clone();
    let stored: Vec<Value> = crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["storage"] == true)
        .map(|v| v["name"].clone())
        .collect();
    live["status"] = json!({"storedVersions": stored});
    live
}

/// The version folders of a package folder, oldest first (by semver; others left out).
fn versions(package: &Path) -> Vec<PathBuf> {
    let mut found: Vec<(semver::Version, PathBuf)> = std::fs::read_dir(package)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| {
            let name = e
                .file_name()
                .to_string_lossy()
                .trim_start_matches('v')
                .to_string();
            Some((semver::Version::parse(&name).ok()?, e.path()))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, path)| path).collect()
}

/// Every finding of every consecutive upgrade under `root` (a folder of package folders):
/// `(package, from, to, findings)`.
fn upgrades(root: &Path) -> Vec<(String, String, String, Vec<Violation>)> {
    let mut out = Vec::new();
    let mut packages: Vec<PathBuf> = std::fs::read_dir(root)
        .expect("a folder of packages")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    packages.sort();
    for package in packages {
        let versions = versions(&package);
        for pair in versions.windows(2) {
            let (Some(old), Some(new)) = (crds(&pair[0]), crds(&pair[1])) else {
                continue;
            };
            let mut found = Vec::new();
            for (name, new_crd) in &new {
                if let Some(old_crd) = old.get(name) {
                    found.extend(findings(&as_live(old_crd), new_crd, &[]));
                }
            }
            let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
            out.push((name(&package), name(&pair[0]), name(&pair[1]), found));
        }
    }
    out
}

#[test]
fn every_upgrade_of_the_sample_operators_passes_every_rule() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bundles");
    let upgrades = upgrades(&root);
    assert!(
        upgrades.len() >= 4,
        "acme-db and acme-monitor upgrades: {}",
        upgrades.len()
    );
    for (package, from, to, found) in &upgrades {
        let blocking: Vec<String> = found
            .iter()
            .filter(|v| v.verdict == Verdict::Blocks)
            .map(ToString::to_string)
            .collect();
        assert!(
            blocking.is_empty(),
            "{package} {from} -> {to}: {blocking:#?}"
        );
    }
}

#[test]
fn corpus_upgrades_name_what_each_finding_is_about() {
    let Some(root) = windlass_corpus::operatorhub_or_skip() else {
        return;
    };
    let upgrades = upgrades(&root);
    let mut refused = 0;
    let mut by_rule: BTreeMap<&'static str, usize> = BTreeMap::new();
    for (package, from, to, found) in &upgrades {
        for finding in found {
            assert!(
                !finding.crd.is_empty() && !finding.message.is_empty(),
                "{finding:?}"
            );
            if !finding.kind.is_crd_wide() && !finding.kind.is_about_an_object() {
                assert!(
                    finding.version.is_some() && finding.field.is_some(),
                    "{package} {from} -> {to}: a schema finding names its version and field: {finding:?}"
                );
            }
        }
        let blocking: Vec<ViolationKind> = found
            .iter()
            .filter(|v| v.blocks())
            .map(|v| v.kind)
            .collect();
        if !blocking.is_empty() {
            refused += 1;
            for kind in blocking {
                *by_rule.entry(kind.reason()).or_default() += 1;
            }
        }
    }
    println!(
        "{refused} of {} consecutive corpus upgrades that change a CRD would be refused; \
         blocking findings by rule: {by_rule:?}",
        upgrades.len()
    );
    assert!(
        upgrades.len() > 100,
        "the corpus has hundreds of upgrades: {}",
        upgrades.len()
    );
}
