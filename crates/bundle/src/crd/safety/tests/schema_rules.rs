//! Schema-to-schema rules: the table in `tests/data/crd_safety/schema_changes.yaml`, the
//! CRD-wide rules, served-version pairs with ratcheting, and properties that hold for any schema.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::yaml;
use crate::crd::safety::{Verdict, Violation, ViolationKind, assess, findings, single_version_crd};

fn crd_with_spec(spec: &Value) -> Value {
    single_version_crd(
        "things.example.com",
        "example.com",
        "Thing",
        json!({"type": "object", "properties": {"spec": spec}}),
    )
}

fn reasons(found: &[Violation]) -> Vec<(String, String)> {
    found
        .iter()
        .map(|v| {
            (
                v.kind.reason().to_string(),
                v.field.clone().unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn schema_changes_table() {
    let cases = yaml(include_str!(
        "../../../../tests/data/crd_safety/schema_changes.yaml"
    ));
    let cases = cases.as_array().expect("a list of cases");
    assert!(cases.len() >= 50, "{} cases", cases.len());
    let mut kinds_seen = std::collections::BTreeSet::new();
    for case in cases {
        let name = case["name"].as_str().expect("a name");
        let (old, new) = (crd_with_spec(&case["old"]), crd_with_spec(&case["new"]));
        let found = findings(&old, &new, &[]);
        let expected: Vec<(String, String)> = case["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .map(|f| {
                (
                    f[0].as_str().unwrap().to_string(),
                    f[1].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(reasons(&found), expected, "{name}: {found:#?}");
        for v in &found {
            assert_eq!(v.version.as_deref(), Some("v1"), "{name}");
            assert_eq!(v.verdict, v.kind.verdict(), "{name}: not ratcheted");
            assert!(!v.message.is_empty() && !v.to_string().is_empty());
            kinds_seen.insert(v.kind);
        }
        let blocks = assess(&old, &new, &[], crate::crd::safety::Viewer::Cluster).blocks();
        let expect_block = found.iter().any(|v| v.kind.verdict() == Verdict::Blocks);
        assert_eq!(blocks, expect_block, "{name}");
    }
    // Every schema rule has at least one case.
    use ViolationKind::*;
    for kind in [
        FieldRemoved,
        TypeChanged,
        RequiredFieldAdded,
        DefaultAdded,
        DefaultChanged,
        DefaultRemoved,
        EnumValuesRemoved,
        EnumAdded,
        MaximumTightened,
        MinimumTightened,
        MaxLengthTightened,
        MinLengthTightened,
        MaxItemsTightened,
        MinItemsTightened,
        MaxPropertiesTightened,
        MinPropertiesTightened,
        PatternChanged,
        FormatChanged,
        MultipleOfChanged,
        NullableRemoved,
        UnknownFieldsNoLongerPreserved,
        ListTypeChanged,
        ValidationRulesChanged,
        OtherSchemaChange,
    ] {
        assert!(kinds_seen.contains(&kind), "no case for {kind:?}");
    }
}

#[test]
fn a_finding_says_what_changed_from_what_to_what() {
    let old = crd_with_spec(
        &json!({"type": "object", "properties": {"x": {"type": "integer", "maximum": 10}}}),
    );
    let new = crd_with_spec(
        &json!({"type": "object", "properties": {"x": {"type": "integer", "maximum": 5}}}),
    );
    let found = findings(&old, &new, &[]);
    assert_eq!(found.len(), 1);
    let v = &found[0];
    assert_eq!(v.crd, "things.example.com");
    assert_eq!(
        (v.old.as_deref(), v.new.as_deref()),
        (Some("10"), Some("5"))
    );
    assert_eq!(
        v.to_string(),
        "things.example.com: v1: spec.x: maximum tightens from 10 to 5; values outside it \
         become invalid"
    );
}

fn two_versions(alpha: Value, v1: Value) -> Value {
    let mut crd = crd_with_spec(&v1);
    crd["spec"]["versions"].as_array_mut().unwrap().insert(
        0,
        json!({"name": "v1alpha1", "served": true, "storage": false,
               "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": alpha}}}}),
    );
    crd
}

#[test]
fn served_version_pairs_are_compared_and_ratcheted() {
    let loose = json!({"type": "object", "properties": {"x": {"type": "string"}}});
    let strict = json!({"type": "object", "properties": {"x": {"type": "string", "maxLength": 3}}});
    // The live CRD serves v1alpha1 looser than v1 already; the new one keeps that: ratcheted.
    let live = two_versions(loose.clone(), strict.clone());
    let found = findings(&live, &live.clone(), &[]);
    assert_eq!(
        reasons(&found),
        [("MaxLengthTightened".into(), "spec.x".into())]
    );
    assert!(found[0].ratcheted && found[0].verdict == Verdict::Warns);
    assert_eq!(found[0].version.as_deref(), Some("v1alpha1 -> v1"));
    // A new CRD that adds the looser v1alpha1 next to v1: the pair is new, so it blocks.
    let live = crd_with_spec(&strict);
    let new = two_versions(loose, strict);
    let found = findings(&live, &new, &[]);
    assert_eq!(
        reasons(&found),
        [("MaxLengthTightened".into(), "spec.x".into())]
    );
    assert!(!found[0].ratcheted && found[0].blocks(), "{found:#?}");
    // Webhook conversion may reshape between versions on purpose: pairs are not compared.
    let mut webhook = new.clone();
    webhook["spec"]["conversion"] = json!({"strategy": "Webhook"});
    assert_eq!(findings(&live, &webhook, &[]), vec![]);
}

#[test]
fn crd_wide_rules() {
    let spec = json!({"type": "object"});
    let live = two_versions(spec.clone(), spec.clone());
    let mut unserved = live.clone();
    unserved["spec"]["versions"][0]["served"] = json!(false);
    let dropped = crd_with_spec(&spec);
    let mut stored = live.clone();
    stored["status"]["storedVersions"] = json!(["v1alpha1", "v1"]);
    let mut cluster = live.clone();
    cluster["spec"]["scope"] = json!("Cluster");
    type Case<'a> = (
        &'a str,
        &'a Value,
        &'a Value,
        &'a [(ViolationKind, Verdict)],
    );
    let cases: [Case; 5] = [
        ("nothing changes", &live, &live, &[]),
        (
            "served version no longer served",
            &live,
            &unserved,
            &[(ViolationKind::ServedVersionRemoved, Verdict::Warns)],
        ),
        (
            "served version removed, never stored",
            &live,
            &dropped,
            &[(ViolationKind::ServedVersionRemoved, Verdict::Warns)],
        ),
        (
            "stored version removed",
            &stored,
            &dropped,
            &[(ViolationKind::StoredVersionRemoved, Verdict::Blocks)],
        ),
        (
            "scope changed",
            &live,
            &cluster,
            &[(ViolationKind::ScopeChanged, Verdict::Blocks)],
        ),
    ];
    for (name, old, new, expected) in cases {
        let found: Vec<(ViolationKind, Verdict)> = findings(old, new, &[])
            .iter()
            .map(|v| (v.kind, v.verdict))
            .collect();
        assert_eq!(found, expected, "{name}");
    }
}

/// Structural schemas of a few levels: objects with properties, maps, lists and scalars with
/// the keywords the rules look at.
fn schema() -> impl Strategy<Value = Value> {
    let scalar = prop_oneof![
        (
            proptest::option::of(0u32..10),
            proptest::option::of(0i64..100)
        )
            .prop_map(|(max_len, max)| {
                let mut s = json!({"type": "string"});
                if let Some(m) = max_len {
                    s["maxLength"] = json!(m);
                }
                if let Some(m) = max {
                    s["description"] = json!(format!("at most {m}"));
                }
                s
            }),
        (
            proptest::option::of(-5i64..5),
            proptest::option::of(5i64..50),
            any::<bool>()
        )
            .prop_map(|(min, max, exclusive)| {
                let mut s = json!({"type": "integer"});
                if let Some(m) = min {
                    s["minimum"] = json!(m);
                }
                if let Some(m) = max {
                    s["maximum"] = json!(m);
                    s["exclusiveMaximum"] = json!(exclusive);
                }
                s
            }),
        prop::collection::vec("[a-c]{1,2}", 1..4)
            .prop_map(|values| json!({"type": "string", "enum": values, "default": values[0]})),
        Just(json!({"x-kubernetes-int-or-string": true})),
        Just(json!({"type": "boolean", "nullable": true})),
    ];
    scalar.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::btree_map("[a-e]{1,3}", inner.clone(), 0..4).prop_map(|props| {
                let required: Vec<&String> = props.keys().take(1).collect();
                json!({"type": "object", "properties": props, "required": required})
            }),
            inner
                .clone()
                .prop_map(|items| json!({"type": "array", "items": items, "maxItems": 5})),
            inner.prop_map(|values| json!({"type": "object", "additionalProperties": values})),
        ]
    })
}

/// One step down a schema: a property, list items, or map values.
#[derive(Clone, Debug)]
enum Step {
    Property(String),
    Items,
    Values,
}

/// Every property of `schema`, as the steps that reach it.
fn properties(schema: &Value, at: &[Step], out: &mut Vec<Vec<Step>>) {
    let down = |step: Step, child: &Value, out: &mut Vec<Vec<Step>>| {
        let mut path = at.to_vec();
        let is_property = matches!(step, Step::Property(_));
        path.push(step);
        if is_property {
            out.push(path.clone());
        }
        properties(child, &path, out);
    };
    if let Some(props) = schema["properties"].as_object() {
        for (name, child) in props {
            down(Step::Property(name.clone()), child, out);
        }
    }
    if schema["items"].is_object() {
        down(Step::Items, &schema["items"], out);
    }
    if schema["additionalProperties"].is_object() {
        down(Step::Values, &schema["additionalProperties"], out);
    }
}

/// The steps in field notation: `spec.a[*].b`.
fn field_path(steps: &[Step]) -> String {
    let mut out = String::new();
    for step in steps {
        match step {
            Step::Property(name) if out.is_empty() => out.push_str(name),
            Step::Property(name) => out.push_str(&format!(".{name}")),
            Step::Items | Step::Values => out.push_str("[*]"),
        }
    }
    out
}

/// `schema` without the property the steps reach.
fn without(schema: &Value, steps: &[Step]) -> Value {
    let mut out = schema.clone();
    let (last, parents) = steps.split_last().expect("a property");
    let mut node = &mut out;
    for step in parents {
        node = match step {
            Step::Property(name) => &mut node["properties"][name.as_str()],
            Step::Items => &mut node["items"],
            Step::Values => &mut node["additionalProperties"],
        };
    }
    let Step::Property(name) = last else {
        unreachable!("properties() ends every path at a property")
    };
    node["properties"]
        .as_object_mut()
        .unwrap()
        .shift_remove(name);
    out
}

proptest! {
    #[test]
    fn a_schema_compared_with_itself_has_no_findings(spec in schema()) {
        let crd = crd_with_spec(&spec);
        prop_assert_eq!(findings(&crd, &crd.clone(), &[]), vec![]);
    }

    #[test]
    fn removing_a_property_is_always_found(spec in schema(), pick in any::<prop::sample::Index>()) {
        let root = json!({"type": "object", "properties": {"spec": spec}});
        let mut paths = Vec::new();
        properties(&root, &[], &mut paths);
        paths.retain(|p| p.len() > 1);
        prop_assume!(!paths.is_empty());
        let steps = &paths[pick.index(paths.len())];
        let path = field_path(steps);
        let smaller = without(&root, steps);
        let (old, new) = (
            single_version_crd("things.example.com", "example.com", "Thing", root),
            single_version_crd("things.example.com", "example.com", "Thing", smaller),
        );
        let found = findings(&old, &new, &[]);
        prop_assert!(
            found.iter().any(|v| v.kind == ViolationKind::FieldRemoved
                && v.field.as_deref() == Some(path.as_str())
                && v.blocks()),
            "{} not found in {:#?}", path, found
        );
    }

    #[test]
    fn loosening_every_bound_is_never_blocked(spec in schema()) {
        fn loosen(v: &mut Value) {
            if let Some(m) = v.as_object_mut() {
                for key in ["maxLength", "maxItems", "maximum"] {
                    if let Some(n) = m.get(key).and_then(Value::as_i64) {
                        m.insert(key.into(), json!(n + 1));
                    }
                }
                if let Some(n) = m.get("minimum").and_then(Value::as_i64) {
                    m.insert("minimum".into(), json!(n - 1));
                }
                m.shift_remove("required");
                for child in m.values_mut() {
                    loosen(child);
                }
            }
        }
        let mut looser = spec.clone();
        loosen(&mut looser);
        let found = findings(&crd_with_spec(&spec), &crd_with_spec(&looser), &[]);
        prop_assert!(found.iter().all(|v| !v.blocks()), "{:#?}", found);
    }
}
