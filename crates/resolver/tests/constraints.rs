//! `olm.constraint` end to end on catalogs read from disk (a file-based catalog, a bundle-layout
//! package and a package-manifest one, see `tests/data/constraints/README.md`): what reading and lint report about unusable
//! constraints, and what resolution makes of the rest.

use std::path::{Path, PathBuf};

use windlass_catalog::lint::{Level, lint_loaded};
use windlass_catalog::load::{IssueKind, Loaded, read_catalogs};
use windlass_resolver::{Policy, Request, Resolver, Subscription, semver::Version};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/constraints")
}

fn read() -> Loaded {
    read_catalogs(&[data().join("fbc"), data().join("bundles")]).unwrap()
}

fn sub(package: &str, range: Option<&str>) -> Subscription {
    Subscription {
        package: package.into(),
        channel: None,
        range: range.map(|r| r.parse().unwrap()),
        policy: Policy::Olm,
    }
}

fn resolve(loaded: &Loaded, subscription: Subscription) -> Result<Vec<String>, String> {
    let resolver = Resolver::new(&loaded.catalog);
    resolver
        .resolve(&Request {
            installed: vec![],
            subscriptions: vec![subscription],
        })
        .map(|plan| {
            plan.steps
                .iter()
                .map(|s| format!("{} {}", s.bundle, s.version))
                .collect()
        })
        .map_err(|why| why.to_string())
}

#[test]
fn reading_names_each_unusable_constraint_with_its_file() {
    let loaded = read();
    let mut found: Vec<(String, String)> = loaded
        .issues
        .iter()
        .filter(|i| i.kind == IssueKind::BadConstraint)
        .map(|i| {
            let file = Path::new(&i.file)
                .strip_prefix(data())
                .unwrap()
                .display()
                .to_string();
            (file, i.message.clone())
        })
        .collect();
    found.sort();
    assert_eq!(found.len(), 2, "{found:#?}");
    assert_eq!(
        found[0].0,
        "bundles/acme-proxy/0.2.0/metadata/properties.yaml"
    );
    assert!(
        found[0]
            .1
            .starts_with("properties[0].value.package.channel: unknown key \"channel\""),
        "{}",
        found[0].1
    );
    assert!(found[0].1.contains("(bundle acme-proxy.v0.2.0)"));
    assert_eq!(found[1].0, "fbc/catalog.yaml");
    assert!(
        found[1].1.starts_with(
            "olm.bundle acme-backup.v0.2.0: properties[1].value.cel.rule: the CEL rule does not compile"
        ),
        "{}",
        found[1].1
    );
    // the bundles stay in the catalog: nothing is lost, resolution refuses them
    assert!(loaded.issues.iter().all(|i| !i.loses_content()));
    assert!(
        loaded.catalog.packages["acme-backup"]
            .bundles
            .contains_key("acme-backup.v0.2.0")
    );
}

#[test]
fn lint_reports_unusable_constraints_as_errors() {
    let report = lint_loaded(&read());
    let errors: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.check == "constraint")
        .collect();
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert!(errors.iter().all(|f| f.level == Level::Error));
    let folder = errors
        .iter()
        .find(|f| {
            f.file
                .ends_with("acme-proxy/0.2.0/metadata/properties.yaml")
        })
        .expect("the folder bundle's finding");
    assert_eq!(
        folder.field.as_deref(),
        Some("properties[0].value.package.channel")
    );
    let fbc = errors
        .iter()
        .find(|f| f.file.ends_with("fbc/catalog.yaml"))
        .expect("the file-based catalog's finding");
    assert!(
        fbc.message.contains("acme-backup.v0.2.0"),
        "{}",
        fbc.message
    );
    assert!(report.has_errors());
}

#[test]
fn resolution_follows_every_kind_of_constraint() {
    let loaded = read();
    let cases: Vec<(Subscription, Vec<&str>)> = vec![
        // 2.0.0 asks for an API nobody owns: 1.0.0, whose CEL rule acme-db 1.1.0 meets
        (
            sub("acme-monitor", None),
            vec!["acme-db.v1.1.0 1.1.0", "acme-monitor.v1.0.0 1.0.0"],
        ),
        // 0.2.0's rule does not compile: 0.1.0, which needs the TLS-capable acme-db
        (
            sub("acme-backup", None),
            vec!["acme-db.v1.1.0 1.1.0", "acme-backup.v0.1.0 0.1.0"],
        ),
        // from dependencies.yaml: any acme-db but 1.0.0
        (
            sub("acme-proxy", None),
            vec!["acme-db.v1.1.0 1.1.0", "acme-proxy.v0.1.0 0.1.0"],
        ),
        // a package-manifest bundle's dependencies.yaml: an owner of Database v1
        (
            sub("acme-relay", None),
            vec!["acme-db.v1.1.0 1.1.0", "acme-relay.v0.1.0 0.1.0"],
        ),
    ];
    for (subscription, want) in cases {
        let package = subscription.package.clone();
        assert_eq!(resolve(&loaded, subscription).unwrap(), want, "{package}");
    }
    // with acme-db 1.0.0 kept, acme-proxy cannot be installed, and says why
    let resolver = Resolver::new(&loaded.catalog);
    let why = resolver
        .resolve(&Request {
            installed: vec![windlass_resolver::Installed {
                package: "acme-db".into(),
                version: Version::new(1, 0, 0),
                bundle: None,
            }],
            subscriptions: vec![sub("acme-proxy", None)],
        })
        .unwrap_err()
        .to_string();
    assert!(
        why.contains(
            "acme-proxy.v0.1.0 (acme-proxy 0.1.0) needs: acme-proxy cannot speak to acme-db 1.0.0 \
             (olm.constraint all{package acme-db >=1.0.0, not{package acme-db 1.0.0}}); every candidate is ruled out:"
        ) && why.contains("- acme-db.v1.1.0 (acme-db 1.1.0): acme-db is already at 1.0.0 for installed package acme-db"),
        "{why}"
    );
}

#[test]
fn explanations_quote_the_failure_message() {
    let loaded = read();
    let why = resolve(&loaded, sub("acme-monitor", Some(">=2.0.0"))).unwrap_err();
    assert!(
        why.contains(
            "acme-monitor.v2.0.0 (acme-monitor 2.0.0) needs: acme-monitor 2.0.0 watches Database v2, which acme-db 2.0.0 brings \
             (olm.constraint any{gvk acme.windlass.dev/v2 Database, package acme-db >=2.0.0}): no bundle in the catalog satisfies it; \
             candidates considered: acme-db.v1.1.0 (acme-db 1.1.0), acme-db.v1.0.0 (acme-db 1.0.0)"
        ),
        "{why}"
    );
    let why = resolve(&loaded, sub("acme-backup", Some("0.2.0"))).unwrap_err();
    assert!(
        why.contains("acme-backup.v0.2.0 (acme-backup 0.2.0) needs: backups travel over TLS (olm.constraint {")
            && why
                .contains("the constraint cannot be used (cel.rule: the CEL rule does not compile"),
        "{why}"
    );
}
