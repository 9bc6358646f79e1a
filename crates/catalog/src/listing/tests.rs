use std::collections::BTreeSet;

use windlass_bundle::{FileTree, from_files};

use super::*;
use crate::fbc::read_tree;
use crate::load::read_images;
use crate::model::{Channel, ChannelEntry, Package};
use crate::provider::ProviderType;

fn v(text: &str) -> semver::Version {
    semver::Version::parse(text).unwrap()
}

/// `"b<a"` = b replaces a; `"c<a~x"`: c replaces a and skips x.
fn channel(spec: &[&str]) -> Channel {
    let entries = spec
        .iter()
        .map(|s| {
            let (head, skips) = match s.split_once('~') {
                Some((h, k)) => (h, k.split(',').map(Into::into).collect()),
                None => (*s, Vec::new()),
            };
            let (name, replaces) = match head.split_once('<') {
                Some((n, r)) => (n, Some(r.into())),
                None => (head, None),
            };
            ChannelEntry {
                name: name.into(),
                replaces,
                skips,
                skip_range: None,
            }
        })
        .collect();
    Channel {
        name: "stable".into(),
        package: "p".into(),
        entries,
    }
}

fn shape(channel: &Channel) -> Vec<String> {
    channel
        .entries
        .iter()
        .map(|e| {
            let mut s = e.name.to_string();
            if let Some(r) = &e.replaces {
                s.push_str(&format!("<{r}"));
            }
            if !e.skips.is_empty() {
                let skips: Vec<&str> = e.skips.iter().map(|s| s.as_str()).collect();
                s.push_str(&format!("~{}", skips.join(",")));
            }
            s
        })
        .collect()
}

#[test]
fn splicing_keeps_every_remaining_entry_reachable() {
    let cases: &[(&[&str], &[&str], &[&str])] = &[
        // The middle goes: its successor replaces its predecessor and skips it.
        (&["a", "b<a", "c<b"], &["b"], &["a", "c<a~b"]),
        // The head goes: what it replaced is the head.
        (&["a", "b<a", "c<b"], &["c"], &["a", "b<a"]),
        // A run of removed entries, and what they skipped, pass to the next one kept.
        (
            &["a", "b<a~x", "c<b", "d<c", "x"],
            &["b", "c"],
            &["a", "d<a~c,b,x", "x"],
        ),
        // The tail goes: its successor now starts the chain.
        (&["a", "b<a"], &["a"], &["b~a"]),
    ];
    for (before, removed, after) in cases {
        let mut c = channel(before);
        let names: BTreeSet<String> = removed.iter().map(|s| s.to_string()).collect();
        splice::splice(&mut c, &names);
        assert_eq!(shape(&c), *after, "{before:?} without {removed:?}");
        let package = Package {
            name: "p".into(),
            ..Default::default()
        };
        let errors: Vec<_> = crate::validate::validate_channel(&package, &c)
            .into_iter()
            .filter(|p| p.severity() == crate::validate::Severity::Error)
            .collect();
        assert!(
            errors.is_empty(),
            "{before:?} without {removed:?}: {errors:?}"
        );
    }
}

const CSV: &str = r#"apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: demo.vVERSION
  annotations: {provider: '{"en":"Acme","zh":"阿克米"}', provider-type: community, provider-url: "https://acme.example"}
spec:
  version: VERSION
  REPLACES
  displayName: Demo
  description: A demo.
  installModes: [{type: AllNamespaces, supported: true}]
  install:
    strategy: deployment
    spec:
      deployments:
      - name: demo
        spec: {template: {spec: {containers: [{name: m, image: "example.com/demo:1"}]}}}
  relatedImages: [{name: m, image: "example.com/demo:1"}]
"#;

const ANNOTATIONS: &str = "annotations:\n  operators.operatorframework.io.bundle.package.v1: demo\n  operators.operatorframework.io.bundle.channels.v1: stable\n  operators.operatorframework.io.bundle.channel.default.v1: stable\n";

/// A bundle image of package `demo` at `version`, replacing `replaces`, with `edit` applied
/// to its CSV text.
fn bundle(
    version: &str,
    replaces: Option<&str>,
    edit: impl Fn(String) -> String,
) -> (windlass_bundle::Bundle, String) {
    bundle_in("demo", version, replaces, edit)
}

/// [`bundle`], its annotations naming `package` (the CSV is still `demo.v<version>`).
fn bundle_in(
    package: &str,
    version: &str,
    replaces: Option<&str>,
    edit: impl Fn(String) -> String,
) -> (windlass_bundle::Bundle, String) {
    let csv = CSV.replace("VERSION", version).replace(
        "REPLACES",
        &replaces
            .map(|r| format!("replaces: demo.v{r}"))
            .unwrap_or_default(),
    );
    let tree = FileTree {
        files: [
            ("manifests/csv.yaml".to_string(), edit(csv).into_bytes()),
            (
                "metadata/annotations.yaml".to_string(),
                ANNOTATIONS
                    .replace("package.v1: demo", &format!("package.v1: {package}"))
                    .into_bytes(),
            ),
        ]
        .into(),
    };
    let image = format!("registry.example/{package}-bundle:{version}");
    (from_files(&tree, &image).unwrap(), image)
}

#[test]
fn a_version_that_fails_lint_is_held_back_and_the_rest_is_offered() {
    let images = vec![
        bundle("1.0.0", None, |c| c),
        // No install strategy: nothing says how to run it.
        bundle("1.1.0", Some("1.0.0"), |c| {
            let start = c.find("  install:").unwrap();
            let end = c.find("  relatedImages").unwrap();
            format!("{}{}", &c[..start], &c[end..])
        }),
        bundle("1.2.0", Some("1.1.0"), |c| c),
    ];
    let listing = gate(read_images(images).unwrap());
    let demo = &listing.catalog.packages["demo"];
    assert_eq!(
        demo.bundles.keys().collect::<Vec<_>>(),
        ["demo.v1.0.0", "demo.v1.2.0"]
    );
    // 1.2.0 now upgrades straight from 1.0.0, and passes over the held-back version.
    assert_eq!(
        shape(&demo.channels["stable"]),
        ["demo.v1.0.0", "demo.v1.2.0<demo.v1.0.0~demo.v1.1.0"]
    );
    assert_eq!(listing.held_back.len(), 1, "{:#?}", listing.held_back);
    let held = &listing.held_back[0];
    assert_eq!(
        (
            held.package.as_str(),
            held.bundle.as_str(),
            held.version.as_ref()
        ),
        ("demo", "demo.v1.1.0", Some(&v("1.1.0")))
    );
    assert_eq!(held.source, "registry.example/demo-bundle:1.1.0");
    assert!(
        held.findings
            .iter()
            .any(|f| f.starts_with("error[csv-required-field]") && f.contains("(spec.install)")),
        "{:#?}",
        held.findings
    );
    assert!(listing.problems.is_empty(), "{:#?}", listing.problems);
    // The provider comes from the newest bundle's annotations.
    let provider = demo.provider.as_ref().unwrap();
    assert_eq!(provider.name.as_deref(), Some("Acme"));
    assert_eq!(provider.type_, ProviderType::Community);
}

#[test]
fn a_csv_offered_twice_keeps_the_first_and_names_both_sources() {
    let (first, first_image) = bundle("1.0.0", None, |c| c);
    let (second, _) = bundle("1.0.0", None, |c| c.replace("A demo.", "Another demo."));
    let second_image = "registry.example/other-bundle:1.0.0".to_string();
    let listing = gate(read_images(vec![(first, first_image), (second, second_image)]).unwrap());
    assert_eq!(listing.catalog.packages["demo"].bundles.len(), 1);
    assert_eq!(
        listing.catalog.packages["demo"].bundles["demo.v1.0.0"]
            .image
            .as_deref(),
        Some("registry.example/demo-bundle:1.0.0"),
        "the first copy stays"
    );
    let held = &listing.held_back;
    assert_eq!(held.len(), 1, "{held:#?}");
    let finding = &held[0].findings[0];
    assert!(
        finding.contains("already added from registry.example/demo-bundle:1.0.0")
            && finding.contains("this copy from registry.example/other-bundle:1.0.0"),
        "{finding}"
    );
}

#[test]
fn one_version_under_two_csv_names_keeps_the_one_read_first() {
    let (a, a_image) = bundle("1.0.0", None, |c| c);
    let (b, b_image) = bundle("1.0.0", None, |c| {
        c.replace("name: demo.v1.0.0", "name: demo.v1.0.0-again")
    });
    let listing = gate(read_images(vec![(b, b_image), (a, a_image)]).unwrap());
    let demo = &listing.catalog.packages["demo"];
    assert_eq!(
        demo.bundles.keys().collect::<Vec<_>>(),
        ["demo.v1.0.0-again"]
    );
    assert_eq!(listing.held_back[0].bundle, "demo.v1.0.0");
    assert!(
        listing.held_back[0].findings[0].starts_with("error[already-added]"),
        "{:?}",
        listing.held_back[0].findings
    );
}

fn fbc(text: &str) -> crate::load::Loaded {
    let tree = FileTree {
        files: [("catalog.yaml".to_string(), text.as_bytes().to_vec())].into(),
    };
    read_tree(&tree, "", "r/catalog:1").unwrap()
}

fn fbc_package(entries: &str, versions: &[&str]) -> String {
    let mut text = format!(
        "schema: olm.package\nname: p\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: p\nname: stable\nentries:\n{entries}\n"
    );
    for version in versions {
        text.push_str(&format!(
            "---\nschema: olm.bundle\nname: p.v{version}\npackage: p\nimage: r/p:{version}\nproperties:\n- {{type: olm.package, value: {{packageName: p, version: {version}}}}}\n"
        ));
    }
    text
}

#[test]
fn channel_problems_hold_back_the_versions_they_name() {
    // A skip range that cannot be read.
    let text = fbc_package(
        "- {name: p.v1.0.0}\n- {name: p.v1.1.0, replaces: p.v1.0.0, skipRange: '>=banana'}",
        &["1.0.0", "1.1.0"],
    );
    let listing = gate(fbc(&text));
    assert_eq!(
        listing.catalog.packages["p"]
            .bundles
            .keys()
            .collect::<Vec<_>>(),
        ["p.v1.0.0"]
    );
    assert_eq!(listing.held_back[0].bundle, "p.v1.1.0");
    assert!(listing.held_back[0].findings[0].contains("olm.skipRange"));

    // A stranded entry: neither on the chain from the head nor skipped.
    let text = fbc_package(
        "- {name: p.v1.0.0}\n- {name: p.v1.1.0, replaces: p.v1.0.0}\n- {name: p.v0.9.0, replaces: p.v0.8.0, skips: [p.v1.1.0]}",
        &["1.0.0", "1.1.0", "0.9.0"],
    );
    let listing = gate(fbc(&text));
    let held: Vec<&str> = listing
        .held_back
        .iter()
        .map(|h| h.bundle.as_str())
        .collect();
    // 0.9.0 skips the head, so the head is 0.9.0 and 1.0.0/1.1.0 are no longer reached? No:
    // 1.1.0 is skipped, 1.0.0 is stranded.
    assert!(!held.is_empty(), "{listing:#?}");
    for channel in listing
        .catalog
        .packages
        .values()
        .flat_map(|p| p.channels.values())
    {
        let errors: Vec<_> = crate::validate::validate_channel(
            &listing.catalog.packages[channel.package.as_str()],
            channel,
        )
        .into_iter()
        .filter(|p| p.severity() == crate::validate::Severity::Error)
        .collect();
        assert!(errors.is_empty(), "{errors:?}");
    }
}

#[test]
fn a_second_head_is_held_back_when_the_channel_was_offered_before() {
    let before = gate(fbc(&fbc_package(
        "- {name: p.v1.0.0}\n- {name: p.v1.1.0, replaces: p.v1.0.0}",
        &["1.0.0", "1.1.0"],
    )))
    .catalog;
    // 2.0.0 forgot its `replaces`: two heads.
    let text = fbc_package(
        "- {name: p.v1.0.0}\n- {name: p.v1.1.0, replaces: p.v1.0.0}\n- {name: p.v2.0.0}",
        &["1.0.0", "1.1.0", "2.0.0"],
    );
    let listing = gate_with(fbc(&text), Some(&before));
    assert_eq!(
        listing.catalog.packages["p"]
            .bundles
            .keys()
            .collect::<Vec<_>>(),
        ["p.v1.0.0", "p.v1.1.0"]
    );
    assert_eq!(listing.held_back.len(), 1);
    assert_eq!(listing.held_back[0].bundle, "p.v2.0.0");
    assert!(listing.held_back[0].findings[0].contains("several channel heads"));

    // Read for the first time, nothing tells which head is new: the channel is not offered.
    let listing = gate(fbc(&text));
    assert!(listing.catalog.packages.is_empty(), "{listing:#?}");
    assert_eq!(listing.held_back.len(), 3);
}

#[test]
fn what_cost_content_without_naming_a_version_is_a_problem() {
    let text = format!(
        "{}---\nname: no-schema\n",
        fbc_package("- {name: p.v1.0.0}", &["1.0.0"])
    );
    let listing = gate(fbc(&text));
    assert_eq!(listing.catalog.packages["p"].bundles.len(), 1);
    assert!(listing.held_back.is_empty());
    assert_eq!(listing.problems.len(), 1, "{:?}", listing.problems);
    assert!(listing.problems[0].contains("has no `schema`"));
}

#[test]
fn delisting_reads_versions_and_reports_what_it_cannot() {
    let versions = vec!["1.0.1".to_string(), "v1.1.0".to_string(), "one".to_string()];
    let none: Vec<String> = Vec::new();
    let bad = vec!["x".to_string()];
    let (delisting, problems) = Delisting::from_entries([
        ("a", versions.as_slice(), "CVE-1"),
        ("b", none.as_slice(), "end of support"),
        ("c", bad.as_slice(), ""),
    ]);
    assert_eq!(
        delisting.entry("a").unwrap().versions,
        BTreeSet::from([v("1.0.1"), v("1.1.0")])
    );
    assert!(delisting.whole("b").is_some());
    // An entry whose versions are all unreadable delists nothing (not the whole package).
    assert!(delisting.entry("c").is_none());
    assert_eq!(
        problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
        [
            "spec.delisted[package=a].versions[2]: \"one\" is not a semantic version (unexpected character 'o' while parsing major version number); ignored",
            "spec.delisted[package=c].versions[0]: \"x\" is not a semantic version (unexpected character 'x' while parsing major version number); ignored",
        ]
    );
    assert_eq!(
        delisting.covering("a", &v("1.0.1")).unwrap().to_string(),
        "version 1.0.1 of package a is delisted (CVE-1)"
    );
    assert_eq!(delisting.covering("a", &v("1.0.0")), None);
    assert_eq!(
        delisting.covering("b", &v("9.9.9")).unwrap().to_string(),
        "package b is delisted (end of support)"
    );
}

#[test]
fn delisted_versions_leave_what_new_installs_can_choose() {
    let catalog = gate(fbc(&fbc_package(
        "- {name: p.v1.0.0}\n- {name: p.v1.0.1, replaces: p.v1.0.0}\n- {name: p.v1.1.0, replaces: p.v1.0.1}",
        &["1.0.0", "1.0.1", "1.1.0"],
    )))
    .catalog;
    let package = &catalog.packages["p"];
    let some = vec!["1.0.1".to_string(), "3.0.0".to_string()];
    let none: Vec<String> = Vec::new();
    let (delisting, _) = Delisting::from_entries([
        ("p", some.as_slice(), "broken upgrade"),
        ("ghost", none.as_slice(), ""),
    ]);
    let listed = delisting.listed(package).unwrap();
    assert_eq!(
        listed.bundles.keys().collect::<Vec<_>>(),
        ["p.v1.0.0", "p.v1.1.0"]
    );
    assert_eq!(
        shape(&listed.channels["stable"]),
        ["p.v1.0.0", "p.v1.1.0<p.v1.0.0~p.v1.0.1"]
    );
    assert_eq!(
        delisting
            .unmatched(&catalog)
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        [
            "spec.delisted[package=ghost]: the catalog offers no package ghost",
            "spec.delisted[package=p].versions: package p has no version 3.0.0",
        ]
    );

    let summary = summarize(package, delisting.entry("p"));
    assert!(summary.listed);
    assert_eq!(summary.versions, [v("1.1.0"), v("1.0.0")]);
    assert_eq!(summary.delisted_versions, [v("1.0.1")]);
    assert_eq!(summary.latest_version, Some(v("1.1.0")));
    assert_eq!(summary.delisted_reason.as_deref(), Some("broken upgrade"));

    // The head delisted: new installs get what it replaced.
    let head = vec!["1.1.0".to_string()];
    let (delisting, _) = Delisting::from_entries([("p", head.as_slice(), "")]);
    let summary = summarize(package, delisting.entry("p"));
    assert_eq!(summary.latest_version, Some(v("1.0.1")));
    assert_eq!(summary.channels[0].head.as_deref(), Some("p.v1.0.1"));
    assert_eq!(summary.delisted_reason, None);

    // The whole package: nothing to install, every version shown as delisted.
    let (delisting, _) = Delisting::from_entries([("p", none.as_slice(), "retired")]);
    assert_eq!(delisting.listed(package), None);
    let summary = summarize(package, delisting.entry("p"));
    assert!(!summary.listed);
    assert!(summary.versions.is_empty());
    assert_eq!(summary.delisted_versions.len(), 3);
    assert_eq!(summary.latest_version, None);
    assert_eq!(summary.channels[0].head, None);
}

#[test]
fn a_package_blob_provider_property_and_opm_csv_metadata_are_read() {
    let with_property = "schema: olm.package\nname: p\ndefaultChannel: stable\nproperties:\n- {type: windlass.provider, value: {name: Acme, names: {en: Acme, zh: 阿克米}, type: platform, url: 'https://acme.example'}}\n---\nschema: olm.channel\npackage: p\nname: stable\nentries: [{name: p.v1.0.0}]\n---\nschema: olm.bundle\nname: p.v1.0.0\npackage: p\nimage: r/p:1\nproperties:\n- {type: olm.package, value: {packageName: p, version: 1.0.0}}\n";
    let provider = gate(fbc(with_property)).catalog.packages["p"]
        .provider
        .clone()
        .unwrap();
    assert_eq!(provider.type_, ProviderType::Platform);
    assert_eq!(provider.names["zh"], "阿克米");

    let from_opm = fbc_package("- {name: p.v1.0.0}", &[])
        + "---\nschema: olm.bundle\nname: p.v1.0.0\npackage: p\nimage: r/p:1\nproperties:\n- {type: olm.package, value: {packageName: p, version: 1.0.0}}\n- {type: olm.csv.metadata, value: {annotations: {provider-type: certified}, provider: {name: Red Hat, url: 'https://redhat.com'}}}\n";
    let provider = gate(fbc(&from_opm)).catalog.packages["p"]
        .provider
        .clone()
        .unwrap();
    assert_eq!(provider.name.as_deref(), Some("Red Hat"));
    assert_eq!(provider.type_, ProviderType::Certified);

    // Rendered back, the provider is a property of the package blob.
    let mut catalog = gate(fbc(with_property)).catalog;
    let blobs = crate::fbc::render(&catalog);
    assert_eq!(blobs[0]["properties"][0]["type"], "windlass.provider");
    assert_eq!(blobs[0]["properties"][0]["value"]["type"], "platform");
    catalog.packages.get_mut("p").unwrap().provider = None;
    assert!(crate::fbc::render(&catalog)[0].get("properties").is_none());
}

/// Package `name` with one bundle named `csv` at `version` in its `stable` channel.
fn fbc_package_with(name: &str, csv: &str, version: &str) -> String {
    format!(
        "schema: olm.package\nname: {name}\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: {name}\nname: stable\nentries: [{{name: {csv}}}]\n---\nschema: olm.bundle\nname: {csv}\npackage: {name}\nimage: r/{name}:{version}\nproperties:\n- {{type: olm.package, value: {{packageName: {name}, version: {version}}}}}\n"
    )
}

#[test]
fn a_csv_name_in_two_packages_is_offered_by_one_only() {
    let text = format!(
        "{}---\n{}---\n{}",
        fbc_package_with("zeta", "shared.v1.0.0", "1.0.0"),
        fbc_package_with("alpha", "shared.v1.0.0", "2.0.0"),
        fbc_package_with("other", "other.v1.0.0", "1.0.0"),
    );
    // Read for the first time: the first package by name keeps the name.
    let listing = gate(fbc(&text));
    let offered = |listing: &Listing| -> Vec<(String, Vec<String>)> {
        listing
            .catalog
            .packages
            .iter()
            .map(|(name, p)| (name.clone(), p.bundles.keys().cloned().collect()))
            .collect()
    };
    assert_eq!(
        offered(&listing),
        [
            ("alpha".to_string(), vec!["shared.v1.0.0".to_string()]),
            ("other".to_string(), vec!["other.v1.0.0".to_string()]),
        ]
    );
    assert_eq!(listing.held_back.len(), 1, "{:#?}", listing.held_back);
    let held = &listing.held_back[0];
    assert_eq!(
        (
            held.package.as_str(),
            held.bundle.as_str(),
            held.version.as_ref()
        ),
        ("zeta", "shared.v1.0.0", Some(&v("1.0.0")))
    );
    assert!(
        held.findings[0].starts_with("error[already-added]")
            && held.findings[0].contains("already offered by package alpha")
            && held.findings[0].contains("package zeta's shared.v1.0.0 is refused"),
        "{:?}",
        held.findings
    );

    // What a package offered before, it keeps: a package added later cannot take the name.
    let before = gate(fbc(&format!(
        "{}---\n{}",
        fbc_package_with("zeta", "shared.v1.0.0", "1.0.0"),
        fbc_package_with("other", "other.v1.0.0", "1.0.0"),
    )))
    .catalog;
    let listing = gate_with(fbc(&text), Some(&before));
    assert_eq!(
        offered(&listing),
        [
            ("other".to_string(), vec!["other.v1.0.0".to_string()]),
            ("zeta".to_string(), vec!["shared.v1.0.0".to_string()]),
        ]
    );
    assert_eq!(listing.held_back[0].package, "alpha");
}

#[test]
fn bundle_images_of_two_packages_with_one_csv_name_keep_the_one_read_first() {
    let (demo, demo_image) = bundle("1.0.0", None, |c| c);
    // Another package's bundle that reuses demo's CSV name.
    let (copy, copy_image) = bundle_in("impostor", "1.0.0", None, |c| c);
    let listing = gate(read_images(vec![(copy, copy_image.clone()), (demo, demo_image)]).unwrap());
    assert!(listing.catalog.packages.contains_key("impostor"));
    assert!(
        !listing.catalog.packages.contains_key("demo"),
        "{listing:#?}"
    );
    let held = &listing.held_back[0];
    assert_eq!(held.package, "demo");
    assert_eq!(held.source, "registry.example/demo-bundle:1.0.0");
    assert!(
        held.findings[0].contains(&format!(
            "already offered by package impostor from {copy_image}"
        )),
        "{:?}",
        held.findings
    );
}
