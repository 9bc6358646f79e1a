//! `olm.constraint` requirements: each predicate kind, composition, explanations.

use serde_json::json;

use super::*;
use crate::synthetic::{CatalogBuilder, GROUP};

fn sub(package: &str) -> Subscription {
    Subscription {
        package: package.into(),
        channel: None,
        range: None,
        policy: Policy::Olm,
    }
}

fn with_range(package: &str, range: &str) -> Subscription {
    Subscription {
        range: Some(VersionRange::parse(range).unwrap()),
        ..sub(package)
    }
}

fn request(subscriptions: Vec<Subscription>) -> Request {
    Request {
        installed: vec![],
        subscriptions,
    }
}

/// The chosen bundles, dependencies first.
fn chosen(b: &CatalogBuilder, subscriptions: Vec<Subscription>) -> Vec<String> {
    match resolve(&b.build(), &request(subscriptions)) {
        Ok(plan) => plan.steps.iter().map(|s| s.bundle.clone()).collect(),
        Err(why) => panic!("{why}"),
    }
}

fn explained(b: &CatalogBuilder, subscriptions: Vec<Subscription>) -> String {
    match resolve(&b.build(), &request(subscriptions)) {
        Ok(plan) => panic!("resolved: {:?}", plan.steps),
        Err(why) => why.to_string(),
    }
}

fn package(name: &str, range: &str) -> serde_json::Value {
    json!({"package": {"packageName": name, "versionRange": range}})
}

fn api(kind: &str) -> serde_json::Value {
    json!({"gvk": {"group": GROUP, "version": "v1", "kind": kind}})
}

/// db 1.0.0 -> 1.1.0 -> 2.0.0 (the head), 1.1.0 and 2.0.0 owning `Tls`; `certified` 0.1.0
/// carries a `certified` property.
fn catalog() -> CatalogBuilder {
    let mut b = CatalogBuilder::new();
    b.bundle("db", "1.0.0");
    b.bundle("db", "1.1.0").replaces("1.0.0").owns("Tls");
    b.bundle("db", "2.0.0").replaces("1.1.0").owns("Tls");
    b.bundle("certified", "0.1.0")
        .property("certified", json!("true"));
    b
}

#[test]
fn each_predicate_kind_brings_a_bundle_that_satisfies_it() {
    let cases: Vec<(serde_json::Value, Vec<&str>)> = vec![
        (package("db", "<2.0.0"), vec!["db.v1.1.0", "app.v1.0.0"]),
        (api("Tls"), vec!["db.v2.0.0", "app.v1.0.0"]),
        (
            json!({"cel": {"rule": "properties.exists(p, p.type == 'certified' && p.value == 'true')"}}),
            vec!["certified.v0.1.0", "app.v1.0.0"],
        ),
        (
            json!({"cel": {"rule": "properties.exists(p, p.type == 'olm.package' && p.value.packageName == 'db' && semver_compare(p.value.version, '1.1.0') <= 0)"}}),
            vec!["db.v1.1.0", "app.v1.0.0"],
        ),
        // every member for the same bundle: a db owning Tls below 2.0.0
        (
            json!({"all": {"constraints": [package("db", "*"), api("Tls"), {"not": {"constraints": [package("db", "2.0.0")]}}]}}),
            vec!["db.v1.1.0", "app.v1.0.0"],
        ),
        // the first member nobody satisfies, the second brings db 1.0.0
        (
            json!({"any": {"constraints": [package("nosuch", "*"), package("db", "1.0.0")]}}),
            vec!["db.v1.0.0", "app.v1.0.0"],
        ),
    ];
    for (constraint, want) in cases {
        let mut b = catalog();
        b.bundle("app", "1.0.0").constraint(constraint.clone());
        assert_eq!(chosen(&b, vec![sub("app")]), want, "{constraint}");
    }
}

#[test]
fn not_negates_the_predicate_for_one_candidate_and_forbids_nothing() {
    // `not` alone is met by the bundle carrying it (it is no package db), so nothing is added
    // and nothing is kept out: db 2.0.0 may still be installed next to it.
    let mut b = catalog();
    b.bundle("app", "1.0.0")
        .constraint(json!({"not": {"constraints": [package("db", "*")]}}));
    assert_eq!(chosen(&b, vec![sub("app")]), vec!["app.v1.0.0"]);
    assert_eq!(
        chosen(&b, vec![sub("app"), sub("db")]),
        vec!["app.v1.0.0", "db.v2.0.0"]
    );
    // A bundle that itself matches what it negates needs another bundle that does not.
    let mut b = catalog();
    b.bundle("app", "1.0.0")
        .owns("Tls")
        .constraint(json!({"not": {"constraints": [api("Tls")]}}));
    assert_eq!(
        chosen(&b, vec![sub("app")]),
        vec!["certified.v0.1.0", "app.v1.0.0"]
    );
}

#[test]
fn a_constraint_is_met_by_what_is_already_chosen_or_installed() {
    let mut b = catalog();
    b.bundle("app", "1.0.0")
        .constraint(package("db", ">=1.0.0"));
    // db subscribed to on its own: app's constraint takes the same bundle
    assert_eq!(
        chosen(&b, vec![sub("db"), sub("app")]),
        vec!["db.v2.0.0", "app.v1.0.0"]
    );
    // installed db 1.0.0 satisfies it and stays
    let plan = resolve(
        &b.build(),
        &Request {
            installed: vec![Installed {
                package: "db".into(),
                version: Version::new(1, 0, 0),
                bundle: None,
            }],
            subscriptions: vec![sub("app")],
        },
    )
    .unwrap();
    let steps: Vec<(&str, &Action)> = plan
        .steps
        .iter()
        .map(|s| (s.bundle.as_str(), &s.action))
        .collect();
    assert_eq!(
        steps,
        vec![
            ("db.v1.0.0", &Action::Keep),
            ("app.v1.0.0", &Action::Install)
        ]
    );
    assert_eq!(plan.steps[1].depends_on, vec!["db.v1.0.0"]);
    assert_eq!(
        plan.steps[0].required_by,
        vec!["app.v1.0.0 (app 1.0.0)", "installed package db"]
    );
}

#[test]
fn the_search_backtracks_when_a_constraint_conflicts() {
    // app 2.0.0 wants db below 2.0.0, but the subscription pins db 2.0.0: app 1.0.0 it is.
    let mut b = catalog();
    b.bundle("app", "1.0.0").constraint(api("Tls"));
    b.bundle("app", "2.0.0")
        .replaces("1.0.0")
        .constraint(package("db", "<2.0.0"));
    assert_eq!(
        chosen(&b, vec![with_range("db", "2.0.0"), sub("app")]),
        vec!["db.v2.0.0", "app.v1.0.0"]
    );
}

#[test]
fn explanations_use_the_failure_message_and_list_the_candidates() {
    let mut b = catalog();
    b.bundle("acme-monitor", "2.0.0").constraint(json!({
        "failureMessage": "an acme-db with TLS, 3.0.0 or newer",
        "any": {"constraints": [package("db", ">=3.0.0"), json!({"gvk": {"group": GROUP, "version": "v2", "kind": "Tls"}})]}
    }));
    let text = explained(&b, vec![sub("acme-monitor")]);
    assert_eq!(
        text,
        "cannot resolve subscription to acme-monitor\n  \
         subscription to acme-monitor needs a bundle of acme-monitor from its default channel; every candidate is ruled out:\n  \
         - acme-monitor.v2.0.0 (acme-monitor 2.0.0) needs: an acme-db with TLS, 3.0.0 or newer \
         (olm.constraint any{package db >=3.0.0, gvk test.windlass.dev/v2 Tls}): no bundle in the catalog satisfies it; \
         candidates considered: db.v2.0.0 (db 2.0.0), db.v1.1.0 (db 1.1.0), db.v1.0.0 (db 1.0.0)"
    );
    // candidates that exist but are ruled out are listed with the reason
    let mut b = catalog();
    b.bundle("app", "1.0.0").constraint(json!({
        "failureMessage": "a db below 2.0.0",
        "package": {"packageName": "db", "versionRange": "<2.0.0"}
    }));
    let text = explained(&b, vec![with_range("db", "2.0.0"), sub("app")]);
    assert!(
        text.contains(
            "app.v1.0.0 (app 1.0.0) needs: a db below 2.0.0 (olm.constraint package db <2.0.0); every candidate is ruled out:"
        ) && text.contains("- db.v1.1.0 (db 1.1.0): db is already at 2.0.0 for subscription to db (versions 2.0.0)"),
        "{text}"
    );
    let why = resolve(
        &b.build(),
        &request(vec![with_range("db", "2.0.0"), sub("app")]),
    )
    .unwrap_err();
    let json = serde_json::to_value(&why).unwrap();
    let requirement = &json["cause"]["rejected"][0]["because"]["cause"]["requirement"];
    assert_eq!(requirement["type"], "constraint");
    assert_eq!(requirement["message"], "a db below 2.0.0");
    assert_eq!(requirement["constraint"], "package db <2.0.0");
    // without a message, the constraint alone; a CEL rule matching nothing weighs every bundle
    let mut b = catalog();
    b.bundle("app", "1.0.0")
        .constraint(json!({"cel": {"rule": "properties.exists(p, p.type == 'nosuch')"}}));
    let text = explained(&b, vec![sub("app")]);
    assert!(
        text.contains(
            "app.v1.0.0 (app 1.0.0) needs olm.constraint cel{properties.exists(p, p.type == 'nosuch')}: \
             no bundle in the catalog satisfies it; candidates considered: app.v1.0.0 (app 1.0.0), \
             certified.v0.1.0 (certified 0.1.0), db.v2.0.0 (db 2.0.0), db.v1.1.0 (db 1.1.0), db.v1.0.0 (db 1.0.0)"
        ),
        "{text}"
    );
}

#[test]
fn a_bundle_with_an_unusable_constraint_is_refused_with_the_reason() {
    let mut b = catalog();
    b.bundle("app", "1.0.0");
    b.bundle("app", "2.0.0")
        .replaces("1.0.0")
        .constraint(json!({"cel": {"rule": "properties.exists(p, "}}));
    // the older version without it is chosen instead
    assert_eq!(chosen(&b, vec![sub("app")]), vec!["app.v1.0.0"]);
    let text = explained(&b, vec![with_range("app", "2.0.0")]);
    assert!(
        text.contains(r#"app.v2.0.0 (app 2.0.0) needs olm.constraint {"cel":{"rule":"properties.exists(p, "}}: the constraint cannot be used (cel.rule: the CEL rule does not compile: "#),
        "{text}"
    );
    assert!(text.ends_with("so this bundle is never chosen"), "{text}");
    for bad in [
        json!({"gvk": {"group": "g", "version": "v1", "kind": "K"}, "package": {"packageName": "db", "versionRange": "*"}}),
        json!({"package": {"packageName": "db", "versionRange": ">>1"}}),
        json!({"package": {"packageName": "db", "versionRange": "1.x"}, "extra": true}),
    ] {
        let mut b = catalog();
        b.bundle("app", "1.0.0").constraint(bad.clone());
        let text = explained(&b, vec![sub("app")]);
        assert!(
            text.contains("the constraint cannot be used ("),
            "{bad}: {text}"
        );
    }
}

#[test]
fn constraints_of_dependencies_are_followed() {
    // app needs db by package; db 2.0.0 needs (by a CEL rule) something certified.
    let mut b = CatalogBuilder::new();
    b.bundle("app", "1.0.0").needs("db", "*");
    b.bundle("db", "1.0.0");
    b.bundle("db", "2.0.0")
        .replaces("1.0.0")
        .constraint(json!({"cel": {"rule": "properties.exists(p, p.type == 'certified')"}}));
    b.bundle("certified", "0.1.0")
        .property("certified", json!("true"));
    assert_eq!(
        chosen(&b, vec![sub("app")]),
        vec!["certified.v0.1.0", "db.v2.0.0", "app.v1.0.0"]
    );
}

#[test]
fn one_resolver_answers_threads_at_once() {
    // Constraint candidates are filled on first use; threads racing to fill them agree.
    let mut b = catalog();
    b.bundle("app", "1.0.0").constraint(
        json!({"cel": {"rule": "properties.exists(p, p.type == 'olm.gvk' && p.value.kind == 'Tls')"}}),
    );
    let catalog = b.build();
    let resolver = Resolver::new(&catalog);
    let request = request(vec![sub("app")]);
    let answers: Vec<Vec<String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    let plan = resolver.resolve(&request).unwrap();
                    plan.steps.iter().map(|s| s.bundle.clone()).collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for answer in answers {
        assert_eq!(answer, vec!["db.v2.0.0", "app.v1.0.0"]);
    }
}

#[test]
fn not_inside_all_picks_an_older_provider_as_olm_does() {
    // foo 1.0.0 owns K0 only; 1.1.0 and 1.2.0 also own K1 or K2. `all{gvk K0, not{K1, K2}}`
    // asks for a bundle owning K0 and neither of the others: foo 1.0.0, not the head.
    let mut b = CatalogBuilder::new();
    b.bundle("foo", "1.0.0").owns("K0");
    b.bundle("foo", "1.1.0")
        .replaces("1.0.0")
        .owns("K0")
        .owns("K1");
    b.bundle("foo", "1.2.0")
        .replaces("1.1.0")
        .owns("K0")
        .owns("K2");
    b.bundle("bar", "1.0.0").constraint(json!({
        "all": {"constraints": [api("K0"), {"not": {"constraints": [api("K1"), api("K2")]}}]}
    }));
    assert_eq!(
        chosen(&b, vec![sub("bar")]),
        vec!["foo.v1.0.0", "bar.v1.0.0"]
    );
}
