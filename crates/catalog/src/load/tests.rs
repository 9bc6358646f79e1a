use std::path::Path;

use super::*;
use crate::validate::{channel_heads, validate_channel};

pub(crate) fn csv(name: &str, version: &str, replaces: Option<&str>, skips: &[&str]) -> String {
    let mut s = format!(
        "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: {name}\nspec:\n  version: {version}\n  description: about {name}\n  customresourcedefinitions:\n    owned:\n    - {{name: widgets.demo.example.com, version: v1, kind: Widget}}\n"
    );
    if let Some(r) = replaces {
        s.push_str(&format!("  replaces: {r}\n"));
    }
    if !skips.is_empty() {
        s.push_str(&format!("  skips: [{}]\n", skips.join(", ")));
    }
    s
}

fn write(root: &Path, path: &str, text: &str) {
    let full = root.join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, text).unwrap();
}

/// A package-manifest package: 1.0.0 <- 1.1.0 <- 1.2.0 (skips 1.1.5), plus a pruned tail.
pub(crate) fn package_manifest(root: &Path) {
    write(
        root,
        "demo/demo.package.yaml",
        "packageName: demo\ndefaultChannel: stable\nchannels:\n- {name: stable, currentCSV: demo.v1.2.0}\n- {name: old, currentCSV: demo.v1.0.0}\n",
    );
    write(
        root,
        "demo/1.0.0/csv.yaml",
        &csv("demo.v1.0.0", "1.0.0", Some("demo.v0.9.0"), &[]),
    );
    write(
        root,
        "demo/1.1.0/csv.yaml",
        &csv("demo.v1.1.0", "1.1.0", Some("demo.v1.0.0"), &[]),
    );
    write(
        root,
        "demo/1.1.5/csv.yaml",
        &csv("demo.v1.1.5", "1.1.5", Some("demo.v1.1.0"), &[]),
    );
    write(
        root,
        "demo/1.2.0/csv.yaml",
        &csv(
            "demo.v1.2.0",
            "1.2.0",
            Some("demo.v1.1.0"),
            &["demo.v1.1.5"],
        ),
    );
}

pub(crate) fn bundle_layout(root: &Path) {
    for (v, replaces, channels) in [
        ("2.0.0", None, "alpha"),
        ("2.1.0", Some("other.v2.0.0"), "alpha,beta"),
    ] {
        write(
            root,
            &format!("other/{v}/manifests/csv.yaml"),
            &csv(&format!("other.v{v}"), v, replaces, &[]),
        );
        write(
            root,
            &format!("other/{v}/metadata/annotations.yaml"),
            &format!(
                "annotations:\n  operators.operatorframework.io.bundle.package.v1: other\n  operators.operatorframework.io.bundle.channels.v1: {channels}\n  operators.operatorframework.io.bundle.channel.default.v1: alpha\n"
            ),
        );
    }
    write(
        root,
        "other/2.1.0/metadata/dependencies.yaml",
        "dependencies:\n- type: olm.package\n  value: {packageName: demo, version: '>=1.0.0'}\n",
    );
}

#[test]
fn reads_a_directory_of_both_layouts() {
    let dir = tempfile::tempdir().unwrap();
    package_manifest(dir.path());
    bundle_layout(dir.path());
    let loaded = read_catalog(dir.path()).unwrap();
    assert!(loaded.issues.is_empty(), "{:?}", loaded.issues);
    let demo = &loaded.catalog.packages["demo"];
    assert_eq!(demo.bundles.len(), 4);
    assert_eq!(demo.default_channel.as_deref(), Some("stable"));
    assert_eq!(demo.description.as_deref(), Some("about demo.v1.2.0"));
    let stable = &demo.channels["stable"];
    let names: Vec<&str> = stable.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        vec!["demo.v1.2.0", "demo.v1.1.0", "demo.v1.0.0", "demo.v1.1.5"]
    );
    assert_eq!(channel_heads(stable), vec!["demo.v1.2.0"]);
    assert!(
        validate_channel(demo, stable)
            .iter()
            .all(|p| p.severity() == Severity::Warning)
    );
    assert_eq!(demo.channels["old"].entries.len(), 1);

    let other = &loaded.catalog.packages["other"];
    assert_eq!(other.channels["alpha"].entries.len(), 2);
    assert_eq!(other.channels["beta"].entries.len(), 1);
    assert_eq!(other.default_channel.as_deref(), Some("alpha"));
    assert_eq!(
        other.bundles["other.v2.1.0"]
            .required_packages()
            .collect::<Vec<_>>(),
        vec![("demo", ">=1.0.0")]
    );
    assert_eq!(loaded.bundles.len(), 6);
    // Strict loading of the same folder succeeds, and a single package folder reads alone.
    assert_eq!(load_catalog(dir.path()).unwrap(), loaded.catalog);
    assert_eq!(
        load_catalog(&dir.path().join("other"))
            .unwrap()
            .packages
            .len(),
        1
    );
    assert_eq!(
        load_catalog(&dir.path().join("other/2.0.0"))
            .unwrap()
            .packages["other"]
            .bundles
            .len(),
        1
    );
}

#[test]
fn problems_are_collected_and_the_strict_reader_refuses_them() {
    let dir = tempfile::tempdir().unwrap();
    package_manifest(dir.path());
    write(
        dir.path(),
        "demo/demo.package.yaml",
        "packageName: demo\nchannels:\n- {name: stable, currentCSV: demo.v9.9.9}\n",
    );
    write(
        dir.path(),
        "demo/1.3.0/csv.yaml",
        &csv("demo.v1.3.0", "one-point-three", None, &[]),
    );
    write(dir.path(), "demo/1.4.0/csv.yaml", "kind: [broken\n");
    write(
        dir.path(),
        "demo/1.2.0-copy/csv.yaml",
        &csv("demo.v1.2.0", "1.2.0", None, &[]),
    );
    let loaded = read_catalog(dir.path()).unwrap();
    let kinds: Vec<IssueKind> = loaded.issues.iter().map(|i| i.kind).collect();
    for expected in [
        IssueKind::MissingCurrentCsv,
        IssueKind::BadVersion,
        IssueKind::UnreadableBundle,
        IssueKind::DuplicateBundle,
        IssueKind::NoChannel,
    ] {
        assert!(
            kinds.contains(&expected),
            "{expected:?} missing from {kinds:?}"
        );
    }
    let broken = loaded
        .issues
        .iter()
        .find(|i| i.kind == IssueKind::UnreadableBundle)
        .unwrap();
    assert!(broken.message.contains("csv.yaml:1"), "{}", broken.message);
    assert!(matches!(
        load_catalog(dir.path()),
        Err(LoadError::Incomplete { .. })
    ));
}

#[test]
fn merging_refuses_a_package_defined_twice() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    package_manifest(a.path());
    package_manifest(b.path());
    bundle_layout(b.path());
    assert!(matches!(
        load_catalogs(&[a.path().into(), b.path().into()]),
        Err(LoadError::PackageTwice { .. })
    ));
    let c = tempfile::tempdir().unwrap();
    bundle_layout(c.path());
    assert_eq!(
        load_catalogs(&[a.path().into(), c.path().into()])
            .unwrap()
            .packages
            .len(),
        2
    );
}

#[test]
fn an_empty_folder_is_not_a_catalog() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        read_catalog(dir.path()),
        Err(LoadError::NotACatalog { .. })
    ));
}

#[test]
fn semver_mode_packages_get_replaces_edges_from_version_order() {
    let dir = tempfile::tempdir().unwrap();
    bundle_layout(dir.path());
    write(
        dir.path(),
        "other/1.5.0/manifests/csv.yaml",
        &csv("other.v1.5.0", "1.5.0", None, &[]),
    );
    write(
        dir.path(),
        "other/1.5.0/metadata/annotations.yaml",
        "annotations:\n  operators.operatorframework.io.bundle.package.v1: other\n  operators.operatorframework.io.bundle.channels.v1: alpha\n",
    );
    let before = read_catalog(dir.path()).unwrap();
    assert_eq!(
        channel_heads(&before.catalog.packages["other"].channels["alpha"]).len(),
        2,
        "1.5.0 is a second head in replaces mode"
    );
    write(dir.path(), "other/ci.yaml", "updateGraph: semver-mode\n");
    let after = read_catalog(dir.path()).unwrap();
    let alpha = &after.catalog.packages["other"].channels["alpha"];
    assert_eq!(channel_heads(alpha), vec!["other.v2.1.0"]);
    let edges: Vec<(&str, Option<&str>)> = alpha
        .entries
        .iter()
        .map(|e| (e.name.as_str(), e.replaces.as_deref()))
        .collect();
    assert_eq!(
        edges,
        vec![
            ("other.v2.1.0", Some("other.v2.0.0")),
            ("other.v2.0.0", Some("other.v1.5.0")),
            ("other.v1.5.0", None)
        ]
    );
}

#[test]
fn a_bundle_that_cannot_be_read_costs_only_itself_and_its_channel_goes_on_without_it() {
    let dir = tempfile::tempdir().unwrap();
    package_manifest(dir.path());
    bundle_layout(dir.path());
    // demo's stable head (1.2.0) gains a document that is no Kubernetes object.
    write(
        dir.path(),
        "demo/1.2.0/extra.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: Deployment\nmetadata: {name: b}\n",
    );
    // other 2.0.0 ships a Service without apiVersion: repaired, so nothing is lost.
    write(
        dir.path(),
        "other/2.0.0/manifests/svc.yaml",
        "kind: Service\nmetadata: {name: s}\n",
    );
    let loaded = read_catalog(dir.path()).unwrap();
    let lost: Vec<&LoadIssue> = loaded.issues.iter().filter(|i| i.loses_content()).collect();
    let [issue] = lost.as_slice() else {
        panic!("{:?}", loaded.issues)
    };
    assert_eq!(issue.kind, IssueKind::UnreadableBundle);
    assert_eq!(issue.package.as_deref(), Some("demo"));
    assert_eq!(issue.bundle.as_deref(), Some("demo.v1.2.0"));
    assert_eq!(
        issue.file,
        dir.path()
            .join("demo/1.2.0/extra.yaml")
            .display()
            .to_string()
    );
    assert_eq!(issue.document, Some(2));
    assert!(
        issue.message.contains("Deployment has no apiVersion"),
        "{issue}"
    );

    let demo = &loaded.catalog.packages["demo"];
    assert_eq!(
        demo.bundles.keys().collect::<Vec<_>>(),
        vec!["demo.v1.0.0", "demo.v1.1.0", "demo.v1.1.5"]
    );
    // The channel goes on from what the left-out head replaced and skipped.
    let stable = &demo.channels["stable"];
    assert_eq!(channel_heads(stable), vec!["demo.v1.1.5"]);
    assert!(
        loaded
            .issues
            .iter()
            .any(|i| i.kind == IssueKind::HeadLeftOut && i.message.contains("channel stable")),
        "{:?}",
        loaded.issues
    );
    assert_eq!(loaded.catalog.packages["other"].bundles.len(), 2);
    // The strict reader still refuses such a catalog.
    assert!(matches!(
        load_catalog(dir.path()),
        Err(LoadError::Incomplete { .. })
    ));
}
