use serde_json::{Value, json};

use super::*;
use crate::model::{Bundle, Gvk, Property};

fn bundle(package: &str, version: &str, extra: Vec<Property>) -> Bundle {
    let mut properties = vec![Property::Package {
        package_name: package.into(),
        version: version.into(),
    }];
    properties.extend(extra);
    Bundle {
        name: format!("{package}.v{version}"),
        package: package.into(),
        version: semver::Version::parse(version).unwrap(),
        image: None,
        properties,
        related_images: Vec::new(),
    }
}

fn gvk(group: &str, version: &str, kind: &str) -> Gvk {
    Gvk {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
    }
}

fn parse(value: Value) -> Constraint {
    Constraint::parse(&value).unwrap_or_else(|e| panic!("{value}: {e}"))
}

#[test]
fn every_predicate_kind_parses_and_renders() {
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"failureMessage": "needs db", "package": {"packageName": "acme-db", "versionRange": ">=1.1.0 <2.0.0"}}),
            "package acme-db >=1.1.0 <2.0.0",
        ),
        (
            json!({"gvk": {"group": "acme.windlass.dev", "version": "v1", "kind": "Database"}}),
            "gvk acme.windlass.dev/v1 Database",
        ),
        (
            json!({"gvk": {"version": "v1", "kind": "ConfigMap"}}),
            "gvk v1/ConfigMap",
        ),
        (
            json!({"cel": {"rule": "properties.exists(p, p.type == 'certified')"}}),
            "cel{properties.exists(p, p.type == 'certified')}",
        ),
        (
            json!({"all": {"constraints": [
                {"package": {"packageName": "a", "versionRange": "1.x"}},
                {"not": {"constraints": [{"package": {"packageName": "a", "versionRange": "1.2.0"}}]}}
            ]}}),
            "all{package a 1.x, not{package a 1.2.0}}",
        ),
        (
            json!({"any": {"constraints": [
                {"gvk": {"group": "g", "version": "v1", "kind": "A"}},
                {"gvk": {"group": "g", "version": "v1beta1", "kind": "A"}}
            ]}}),
            "any{gvk g/v1 A, gvk g/v1beta1 A}",
        ),
    ];
    for (value, shown) in cases {
        let c = parse(value.clone());
        assert_eq!(c.to_string(), shown, "{value}");
    }
    let c = parse(
        json!({"failureMessage": "needs db", "gvk": {"group": "g", "version": "v1", "kind": "K"}}),
    );
    assert_eq!(c.failure_message.as_deref(), Some("needs db"));
    let blank =
        parse(json!({"failureMessage": "  ", "gvk": {"group": "g", "version": "v1", "kind": "K"}}));
    assert_eq!(blank.failure_message, None);
}

#[test]
fn invalid_constraints_name_the_field() {
    let long_rule = "true || ".repeat(MAX_CONSTRAINT_BYTES / 8) + "true";
    let cases: Vec<(Value, &str)> = vec![
        (json!("package"), "must be a mapping, found a string"),
        (
            json!({"failureMessage": "x", "arbitrary": {"key": "value"}}),
            "arbitrary: unknown key \"arbitrary\"",
        ),
        (json!({"failureMessage": "x"}), "names no predicate"),
        (
            json!({"gvk": {"group": "g", "version": "v1", "kind": "K"}, "package": {"packageName": "p", "versionRange": "1.x"}}),
            "names package and gvk; give exactly one",
        ),
        (
            json!({"none": {"constraints": [{"gvk": {"group": "g", "version": "v1", "kind": "K"}}]}}),
            "none: `none` is deprecated",
        ),
        (
            json!({"failureMessage": 3, "gvk": {"group": "g", "version": "v1", "kind": "K"}}),
            "failureMessage: must be a string, found a number",
        ),
        (
            json!({"package": {"packageName": "p"}}),
            "package.versionRange: is missing",
        ),
        (
            json!({"package": {"packageName": "p", "versionRange": ">=1.0.0 <<2"}}),
            "package.versionRange: the range \">=1.0.0 <<2\" cannot be read",
        ),
        (
            json!({"package": {"packageName": "", "versionRange": "1.x"}}),
            "package.packageName: is empty",
        ),
        (
            json!({"package": {"packageName": "p", "version": "1.x"}}),
            "package.version: unknown key",
        ),
        (
            json!({"gvk": {"group": "g", "kind": "K"}}),
            "gvk.version: is missing",
        ),
        (json!({"gvk": "g/v1/K"}), "gvk: must be a mapping"),
        (
            json!({"cel": {"rule": "properties.exists(p, "}}),
            "cel.rule: the CEL rule does not compile",
        ),
        (json!({"cel": {}}), "cel.rule: is missing"),
        (
            json!({"cel": {"rule": "bundle.name == 'x'"}}),
            "undeclared reference to 'bundle'",
        ),
        (
            json!({"cel": {"rule": "nosuch(properties)"}}),
            "undeclared reference to 'nosuch'",
        ),
        (
            json!({"cel": {"rule": "properties.nosuch()"}}),
            "undeclared reference to method 'nosuch'",
        ),
        (
            json!({"cel": {"rule": "properties.size()"}}),
            "the rule must have type bool",
        ),
        (
            json!({"cel": {"rule": "properties[0].value"}}),
            "the rule must have type bool",
        ),
        (
            json!({"cel": {"rule": "properties.map(p, p.type == 'x')"}}),
            "the rule must have type bool",
        ),
        (
            json!({"all": {"constraints": []}}),
            "all.constraints: lists no constraint",
        ),
        (json!({"any": {}}), "any.constraints: is missing"),
        (
            json!({"not": {"constraints": {"gvk": {}}}}),
            "not.constraints: must be a list of constraints, found a mapping",
        ),
        (
            json!({"all": {"constraints": [
                {"gvk": {"group": "g", "version": "v1", "kind": "K"}},
                {"any": {"constraints": [{"package": {"packageName": "p", "versionRange": "nope"}}]}}
            ]}}),
            "all.constraints[1].any.constraints[0].package.versionRange: the range \"nope\"",
        ),
        (
            json!({"cel": {"rule": long_rule}}),
            "bytes of JSON; OLM refuses constraints over 131072",
        ),
    ];
    for (value, want) in cases {
        match Constraint::parse(&value) {
            Ok(c) => panic!("{value} parsed as {c}; wanted an error containing {want:?}"),
            Err(e) => assert!(
                e.to_string().contains(want),
                "error for {value}:\n  {e}\nshould contain {want:?}"
            ),
        }
    }
}

#[test]
fn nesting_is_bounded() {
    let mut value = json!({"gvk": {"group": "g", "version": "v1", "kind": "K"}});
    for _ in 0..=MAX_DEPTH {
        value = json!({"not": {"constraints": [value]}});
    }
    let e = Constraint::parse(&value).unwrap_err();
    assert_eq!(e.problem, ConstraintProblem::TooDeep);
}

#[test]
fn predicates_match_one_candidate() {
    let db_110 = bundle(
        "acme-db",
        "1.1.0",
        vec![Property::Gvk(gvk("acme.windlass.dev", "v1", "Database"))],
    );
    let db_100 = bundle("acme-db", "1.0.0", vec![]);
    let db_rc = bundle("acme-db", "1.2.0-rc.1", vec![]);
    let other = bundle(
        "other",
        "1.1.0",
        vec![Property::Other {
            type_: "certified".into(),
            value: crate::model::RawJson::from_value(&json!("true")),
        }],
    );
    let db = json!({"package": {"packageName": "acme-db", "versionRange": ">=1.1.0"}});
    let api = json!({"gvk": {"group": "acme.windlass.dev", "version": "v1", "kind": "Database"}});
    let certified = json!({"cel": {"rule": "properties.exists(p, p.type == 'certified' && p.value == 'true')"}});
    // (constraint, [db 1.1.0, db 1.0.0, db 1.2.0-rc.1, other 1.1.0])
    let cases: Vec<(Value, [bool; 4])> = vec![
        (db.clone(), [true, false, false, false]),
        (api.clone(), [true, false, false, false]),
        (certified.clone(), [false, false, false, true]),
        (
            json!({"package": {"packageName": "acme-db", "versionRange": ">=1.2.0-rc.0"}}),
            [false, false, true, false],
        ),
        (
            json!({"all": {"constraints": [db, api]}}),
            [true, false, false, false],
        ),
        (
            json!({"any": {"constraints": [
                {"package": {"packageName": "acme-db", "versionRange": "1.0.0"}}, certified
            ]}}),
            [false, true, false, true],
        ),
        // `not` negates the predicate for the same candidate: none of the members may hold.
        (
            json!({"not": {"constraints": [
                {"package": {"packageName": "acme-db", "versionRange": "1.0.0"}},
                {"package": {"packageName": "other", "versionRange": "*"}}
            ]}}),
            [true, false, true, false],
        ),
        (
            json!({"all": {"constraints": [
                {"package": {"packageName": "acme-db", "versionRange": "*"}},
                {"not": {"constraints": [{"package": {"packageName": "acme-db", "versionRange": "1.0.0"}}]}}
            ]}}),
            [true, false, false, false],
        ),
        (
            json!({"cel": {"rule": "properties.exists(p, p.type == 'olm.package' && semver_compare(p.value.version, '1.0.5') > 0)"}}),
            [true, false, true, true],
        ),
        (
            json!({"cel": {"rule": "properties.exists(p, p.type == 'olm.package' && p.value.packageName.startsWith('acme-'))"}}),
            [true, true, true, false],
        ),
        (
            json!({"cel": {"rule": "properties.all(p, p.type != 'olm.gvk')"}}),
            [false, true, true, true],
        ),
        // A rule that fails while evaluating (no such key) does not match.
        (
            json!({"cel": {"rule": "properties[0].value.nosuch == 'x'"}}),
            [false, false, false, false],
        ),
        (
            json!({"cel": {"rule": "size(properties) == 2"}}),
            [true, false, false, true],
        ),
    ];
    let candidates = [&db_110, &db_100, &db_rc, &other];
    for (value, want) in cases {
        let c = parse(value.clone());
        let got: Vec<bool> = candidates
            .iter()
            .map(|b| c.matches(&Candidate::new(b)))
            .collect();
        assert_eq!(got, want, "{c}");
    }
}

#[test]
fn cel_rules_see_properties_as_olm_gives_them() {
    let b = bundle(
        "p",
        "1.0.0",
        vec![Property::Other {
            type_: "acme.windlass.dev/limits".into(),
            value: crate::model::RawJson::from_value(
                &json!({"replicas": 3, "zones": ["a", "b"], "tls": true, "note": null}),
            ),
        }],
    );
    let properties = CelProperties::of(&b);
    let cases = [
        ("properties.size() == 2", true),
        ("properties[0].type == 'olm.package'", true),
        ("properties[0].value.packageName == 'p'", true),
        ("properties[1].value.replicas == 3.0", true),
        // numbers arrive as doubles (JSON decoded the way Go does)
        ("type(properties[1].value.replicas) == double", true),
        ("properties[1].value.zones.exists(z, z == 'b')", true),
        ("'b' in properties[1].value.zones", true),
        ("properties[1].value.tls", false),
        ("properties[1].value.tls == true", true),
        ("has(properties[1].value.note)", true),
        ("!has(properties[1].value.nosuch)", true),
        ("properties.exists_one(p, p.type == 'olm.package')", true),
        (
            "properties.filter(p, p.type == 'olm.package').size() == 1",
            true,
        ),
        ("properties[0].value.version.matches('^1\\\\.')", true),
        ("true ? properties.size() > 1 : false", true),
    ];
    for (rule, want) in cases {
        match CelRule::compile(rule) {
            Ok(compiled) => assert_eq!(compiled.evaluate(&properties), Ok(want), "{rule}"),
            // `properties[1].value.tls` is dyn, which OLM's checker refuses as a rule's type.
            Err(e) => assert!(!want && e.contains("must have type bool"), "{rule}: {e}"),
        }
    }
}

#[test]
fn semver_compare_reads_versions_tolerantly_and_orders_by_precedence() {
    let cases: Vec<(&str, &str, Result<i64, ()>)> = vec![
        ("1.0.0", "1.0.0", Ok(0)),
        ("1.0.0", "1.0.1", Ok(-1)),
        ("2.0.0", "1.9.9", Ok(1)),
        ("v1.2.3", "1.2.3", Ok(0)),
        (" 1.2.3 ", "1.2.3", Ok(0)),
        ("1.2", "1.2.0", Ok(0)),
        ("1", "1.0.0", Ok(0)),
        ("1.02.3", "1.2.3", Ok(0)),
        ("1.0.0-alpha", "1.0.0", Ok(-1)),
        ("1.0.0-alpha", "1.0.0-alpha.1", Ok(-1)),
        ("1.0.0-alpha.beta", "1.0.0-beta", Ok(-1)),
        ("1.0.0-rc.1", "1.0.0-beta.11", Ok(1)),
        ("1.0.0+build.1", "1.0.0+build.2", Ok(0)),
        ("V1.0.0", "1.0.0", Err(())),
        ("1.2-rc.1", "1.2.0", Err(())),
        ("latest", "1.0.0", Err(())),
        ("", "1.0.0", Err(())),
    ];
    for (a, b, want) in cases {
        let got = semver_compare(a, b).map_err(|_| ());
        assert_eq!(got, want, "semver_compare({a:?}, {b:?})");
    }
    // and from a rule, with numbers printed as Go prints them
    let props = CelProperties::of(&bundle("p", "1.0.0", vec![]));
    let cases = [
        ("semver_compare('1.2.3', 'v1.2.3') == 0", Ok(true)),
        ("semver_compare('1.10.0', '1.9.0') == 1", Ok(true)),
        ("semver_compare(2, '2.0.0') == 0", Ok(true)),
        ("semver_compare(1.5, '1.5.0') == 0", Ok(true)),
        ("semver_compare(0.00001, '0.1.0') == 0", Err(())),
        ("semver_compare('x', '1.0.0') == 0", Err(())),
        ("semver_compare(true, '1.0.0') == 0", Err(())),
    ];
    for (rule, want) in cases {
        let got = CelRule::compile(rule)
            .unwrap()
            .evaluate(&props)
            .map_err(|_| ());
        assert_eq!(got, want, "{rule}");
    }
}

#[test]
fn constraint_values_are_found_on_bundles() {
    let b = bundle(
        "p",
        "1.0.0",
        vec![
            Property::Other {
                type_: CONSTRAINT_TYPE.into(),
                value: crate::model::RawJson::from_value(
                    &json!({"gvk": {"group": "g", "version": "v1", "kind": "K"}}),
                ),
            },
            Property::Other {
                type_: "olm.csv.metadata".into(),
                value: crate::model::RawJson::from_value(&json!({})),
            },
        ],
    );
    let values: Vec<Value> = b.constraint_values().collect();
    assert_eq!(values.len(), 1);
    assert!(
        parse(values[0].clone())
            .to_string()
            .starts_with("gvk g/v1 K")
    );
}

#[test]
fn go_prints_floats_as_olm_sees_them() {
    for (f, want) in [
        (1.5, "1.5"),
        (2.0, "2"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (1e21, "1e+21"),
        (1.5e22, "1.5e+22"),
    ] {
        assert_eq!(cel::go_float_text(f), want);
    }
}
