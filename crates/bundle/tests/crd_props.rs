//! Properties of the conversion on arbitrary input: it never panics, what it returns is a
//! structural v1 CRD, and converting that again changes nothing (same bytes, no changes).

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use windlass_bundle::crd::{self, check::structural_problems};
use windlass_bundle::legacy_apis;

/// Keys that steer the repair, mixed with names that are only property names.
const KEYS: &[&str] = &[
    "type",
    "properties",
    "items",
    "additionalProperties",
    "anyOf",
    "allOf",
    "oneOf",
    "not",
    "description",
    "default",
    "nullable",
    "enum",
    "format",
    "pattern",
    "required",
    "uniqueItems",
    "$ref",
    "metadata",
    "kind",
    "port",
    "limits",
    "spec",
    "status",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
    "x-kubernetes-embedded-resource",
    "javaType",
];

const TYPES: &[&str] = &[
    "string", "integer", "object", "array", "number", "boolean", "int32", "null", "",
];

fn schema_like() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        "[a-z0-9%^$]{0,5}".prop_map(Value::from),
        prop::sample::select(TYPES).prop_map(|t| json!({ "type": t })),
        Just(json!([{"type": "integer"}, {"type": "string"}])),
        Just(json!([{"type": "string"}, {"type": "integer"}])),
    ];
    leaf.prop_recursive(5, 96, 6, |inner| {
        prop_oneof![
            4 => prop::collection::vec((prop::sample::select(KEYS), inner.clone()), 0..6)
                .prop_map(|kvs| Value::Object(kvs.into_iter().map(|(k, v)| (k.to_string(), v)).collect::<Map<_, _>>())),
            1 => prop::collection::vec(inner, 0..4).prop_map(Value::Array),
        ]
    })
}

fn crd_around(schema: Value, v1: bool, preserve: Option<bool>, versions: usize) -> Value {
    let names = json!({"kind": "Widget", "plural": "widgets"});
    let mut spec = json!({"group": "example.com", "names": names, "scope": "Namespaced"});
    let list: Vec<Value> = (0..versions)
        .map(|i| json!({"name": format!("v{}", i + 1), "served": true, "storage": i == 0}))
        .collect();
    if v1 {
        let list: Vec<Value> = list
            .into_iter()
            .map(|mut v| {
                v["schema"] = json!({ "openAPIV3Schema": schema.clone() });
                v
            })
            .collect();
        spec["versions"] = Value::Array(list);
    } else {
        spec["versions"] = Value::Array(list);
        spec["validation"] = json!({ "openAPIV3Schema": schema });
    }
    if let Some(p) = preserve {
        spec["preserveUnknownFields"] = json!(p);
    }
    let api = if v1 { crd::API_V1 } else { crd::API_V1BETA1 };
    json!({"apiVersion": api, "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.example.com"}, "spec": spec})
}

fn assert_fixed_point(input: &Value) -> Result<(), TestCaseError> {
    let Ok(first) = crd::to_v1(input) else {
        return Ok(());
    };
    for (i, v) in first.object["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let problems = structural_problems(&v["schema"]["openAPIV3Schema"], &format!("v[{i}]"));
        prop_assert!(problems.is_empty(), "not structural: {problems:?}");
    }
    let second = crd::to_v1(&first.object);
    prop_assert!(second.is_ok(), "second conversion failed: {second:?}");
    let second = second.unwrap();
    prop_assert_eq!(
        serde_json::to_string(&second.object).unwrap(),
        serde_json::to_string(&first.object).unwrap()
    );
    prop_assert!(
        second.changes.is_empty(),
        "second pass changed {:?}",
        second.changes
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn v1beta1_conversion_is_idempotent_and_structural(
        schema in schema_like(),
        preserve in prop::option::of(any::<bool>()),
        versions in 1usize..3,
    ) {
        assert_fixed_point(&crd_around(schema, false, preserve, versions))?;
    }

    #[test]
    fn v1_repair_is_idempotent_and_structural(schema in schema_like(), versions in 1usize..3) {
        assert_fixed_point(&crd_around(schema, true, None, versions))?;
    }

    #[test]
    fn arbitrary_objects_never_panic(object in schema_like(), api in prop::sample::select(vec![
        crd::API_V1, crd::API_V1BETA1, "policy/v1beta1", "extensions/v1beta1", "admissionregistration.k8s.io/v1beta1",
    ]), kind in prop::sample::select(vec!["CustomResourceDefinition", "Ingress", "PodDisruptionBudget", "ValidatingWebhookConfiguration"])) {
        let mut object = object;
        if let Some(m) = object.as_object_mut() {
            m.insert("apiVersion".into(), json!(api));
            m.insert("kind".into(), json!(kind));
        }
        let _ = legacy_apis::convert(&object, "f.yaml");
        if let Ok(c) = legacy_apis::convert(&object, "f.yaml") {
            let again = legacy_apis::convert(&c.object, "f.yaml");
            prop_assert!(again.is_ok_and(|a| a.object == c.object && a.changes.is_empty()));
        }
    }

    #[test]
    fn arbitrary_yaml_never_panics(text in "[ -~\n]{0,300}") {
        if let Ok(docs) = windlass_bundle::yaml::parse_documents("f.yaml", &text) {
            for d in docs.documents {
                let _ = crd::to_v1(&d);
                let _ = legacy_apis::convert(&d, "f.yaml");
            }
        }
    }
}
