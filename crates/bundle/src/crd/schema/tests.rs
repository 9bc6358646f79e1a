//! One smallest schema per repair rule: what goes in, what must come out, and that the result
//! passes the structural check and is a fixed point.

use serde_json::{Value, json};

use super::repair;
use crate::crd::Recorder;
use crate::crd::check::structural_problems;

fn run(schema: &Value, keep_unknown: bool) -> (Value, Vec<String>) {
    let mut out = schema.clone();
    let mut rec = Recorder::new("t");
    repair(&mut out, "s", keep_unknown, &mut rec).expect("repairable");
    (
        out,
        rec.changes
            .iter()
            .map(|c| format!("{}: {}", c.path, c.what))
            .collect(),
    )
}

/// (rule, input, expected output). Each input is the smallest schema that needs the rule.
fn cases() -> Vec<(&'static str, Value, Value)> {
    vec![
        (
            "properties imply object",
            json!({"type": "object", "properties": {"a": {"properties": {"b": {"type": "string"}}}}}),
            json!({"type": "object", "properties": {"a": {"properties": {"b": {"type": "string"}}, "type": "object"}}}),
        ),
        (
            "items imply array",
            json!({"type": "object", "properties": {"a": {"items": {"type": "string"}}}}),
            json!({"type": "object", "properties": {"a": {"items": {"type": "string"}, "type": "array"}}}),
        ),
        (
            "additionalProperties imply object",
            json!({"type": "object", "properties": {"a": {"additionalProperties": {"type": "string"}}}}),
            json!({"type": "object", "properties": {"a": {"additionalProperties": {"type": "string"}, "type": "object"}}}),
        ),
        (
            "root gets object",
            json!({"properties": {"a": {"type": "string"}}}),
            json!({"properties": {"a": {"type": "string"}}, "type": "object"}),
        ),
        (
            "anyOf integer|string is int-or-string",
            json!({"type": "object", "properties": {"a": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}}),
            json!({"type": "object", "properties": {"a": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true}}}),
        ),
        (
            "reversed anyOf string|integer is reordered",
            json!({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}),
            json!({"type": "object", "properties": {"a": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true}}}),
        ),
        (
            "oneOf integer|string becomes anyOf",
            json!({"type": "object", "properties": {"a": {"oneOf": [{"type": "integer"}, {"type": "string"}]}}}),
            json!({"type": "object", "properties": {"a": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true}}}),
        ),
        (
            "string pattern of an int-or-string moves out",
            json!({"type": "object", "properties": {"a": {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^[0-9]+%$"}]}}}),
            json!({"type": "object", "properties": {"a": {"anyOf": [{"type": "integer"}, {"type": "string"}], "pattern": "^[0-9]+%$", "x-kubernetes-int-or-string": true}}}),
        ),
        (
            "untyped port is int-or-string",
            json!({"type": "object", "properties": {"port": {"description": "number or name"}}}),
            json!({"type": "object", "properties": {"port": {"description": "number or name", "x-kubernetes-int-or-string": true}}}),
        ),
        (
            "untyped quantity is int-or-string",
            json!({"type": "object", "properties": {"limits": {"type": "object", "additionalProperties": {}}}}),
            json!({"type": "object", "properties": {"limits": {"type": "object", "additionalProperties": {"x-kubernetes-int-or-string": true}}}}),
        ),
        (
            "other untyped field accepts any value",
            json!({"type": "object", "properties": {"a": {"description": "anything"}}}),
            json!({"type": "object", "properties": {"a": {"description": "anything", "x-kubernetes-preserve-unknown-fields": true}}}),
        ),
        (
            "null schema accepts any value",
            json!({"type": "object", "properties": {"a": null}}),
            json!({"type": "object", "properties": {"a": {"x-kubernetes-preserve-unknown-fields": true}}}),
        ),
        (
            "enum of strings gives string",
            json!({"type": "object", "properties": {"a": {"enum": ["x", "y"]}}}),
            json!({"type": "object", "properties": {"a": {"enum": ["x", "y"], "type": "string"}}}),
        ),
        (
            "misspelt type is read",
            json!({"type": "object", "properties": {"a": {"type": "int32"}, "b": {"type": "string, quote"}}}),
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}),
        ),
        (
            "uniqueItems true goes",
            json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}}}),
            json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}}),
        ),
        (
            "$ref goes",
            json!({"type": "object", "properties": {"a": {"type": "object", "$ref": "#/definitions/x"}}}),
            json!({"type": "object", "properties": {"a": {"type": "object"}}}),
        ),
        (
            "unknown keywords go",
            json!({"type": "object", "properties": {"a": {"type": "string", "javaType": "X", "allowEmptyValue": true}}}),
            json!({"type": "object", "properties": {"a": {"type": "string"}}}),
        ),
        (
            "preserve false goes",
            json!({"type": "object", "properties": {"a": {"type": "object", "x-kubernetes-preserve-unknown-fields": false}}}),
            json!({"type": "object", "properties": {"a": {"type": "object"}}}),
        ),
        (
            "array gets items",
            json!({"type": "object", "properties": {"a": {"type": "array"}}}),
            json!({"type": "object", "properties": {"a": {"type": "array", "items": {"x-kubernetes-preserve-unknown-fields": true}}}}),
        ),
        (
            "items list becomes one schema",
            json!({"type": "object", "properties": {"a": {"type": "array", "items": [{"type": "string"}]}}}),
            json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}}),
        ),
        (
            "properties beat additionalProperties",
            json!({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}, "additionalProperties": {"type": "string"}}}}),
            json!({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}}}),
        ),
        (
            "metadata schema goes",
            json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}}),
            json!({"type": "object", "properties": {}}),
        ),
        (
            "metadata name restriction stays, its default goes",
            json!({"type": "object", "properties": {"metadata": {"description": "m", "properties": {"name": {"type": "string", "maxLength": 63, "default": "x"}}}}}),
            json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 63}}}}}),
        ),
        (
            "kind is a string",
            json!({"type": "object", "properties": {"kind": {"description": "k"}}}),
            json!({"type": "object", "properties": {"kind": {"description": "k", "type": "string"}}}),
        ),
        (
            "type moves out of allOf",
            json!({"type": "object", "properties": {"a": {"allOf": [{"type": "string", "minLength": 1}]}}}),
            json!({"type": "object", "properties": {"a": {"allOf": [{"minLength": 1}], "type": "string"}}}),
        ),
        (
            "description goes from anyOf",
            json!({"type": "object", "required": [], "anyOf": [{"required": ["a"], "description": "x"}, {"required": ["b"]}], "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}),
            json!({"type": "object", "required": [], "anyOf": [{"required": ["a"]}, {"required": ["b"]}], "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}),
        ),
        (
            "several types in anyOf accept any value",
            json!({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "object"}]}}}),
            json!({"type": "object", "properties": {"a": {"x-kubernetes-preserve-unknown-fields": true}}}),
        ),
        (
            "property named only in a junctor is declared outside",
            json!({"type": "object", "properties": {"a": {"type": "object", "anyOf": [{"properties": {"b": {"minLength": 1}}}, {"required": ["c"]}]}}}),
            json!({"type": "object", "properties": {"a": {"type": "object", "anyOf": [{"properties": {"b": {"minLength": 1}}}, {"required": ["c"]}], "properties": {"b": {"x-kubernetes-preserve-unknown-fields": true}}}}}),
        ),
        (
            "negated type goes",
            json!({"type": "object", "properties": {"a": {"type": "string", "not": {"type": "integer"}}}}),
            json!({"type": "object", "properties": {"a": {"type": "string"}}}),
        ),
        (
            "typed oneOf becomes anyOf",
            json!({"type": "object", "properties": {"a": {"type": "object", "oneOf": [{"type": "object", "required": ["x"]}, {"type": "object", "required": ["y"]}]}}}),
            json!({"type": "object", "properties": {"a": {"type": "object", "anyOf": [{"required": ["x"]}, {"required": ["y"]}]}}}),
        ),
    ]
}

#[test]
fn each_rule_repairs_its_smallest_schema() {
    for (rule, input, want) in cases() {
        let (got, changes) = run(&input, false);
        assert_eq!(got, want, "{rule}: changes {changes:?}");
        assert!(!changes.is_empty(), "{rule}: a repair must be recorded");
        assert_eq!(
            structural_problems(&got, "s"),
            vec![],
            "{rule}: output must be structural"
        );
        let (again, changes) = run(&got, false);
        assert_eq!(again, got, "{rule}: not idempotent");
        assert!(
            changes.is_empty(),
            "{rule}: second pass changed {changes:?}"
        );
    }
}

#[test]
fn each_input_fails_the_structural_check() {
    // Guards the table itself: every case must need its repair.
    let mut clean = Vec::new();
    for (rule, input, _) in cases() {
        if structural_problems(&input, "s").is_empty() {
            clean.push(rule);
        }
    }
    // These are structural as given; their repair is about meaning (misspelt type) or tidiness.
    assert_eq!(clean, Vec::<&str>::new());
}

#[test]
fn structural_schema_is_left_alone() {
    let schema = json!({
        "type": "object",
        "properties": {
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": {
                "port": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true},
                "tags": {"type": "array", "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}
            }, "required": ["port"]},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }
    });
    let (got, changes) = run(&schema, false);
    assert_eq!(got, schema);
    assert!(changes.is_empty(), "{changes:?}");
}

#[test]
fn keeping_unknown_fields_marks_every_object_node_once() {
    let schema = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"a": {"type": "object"}, "m": {"type": "object", "additionalProperties": {"type": "string"}}}},
    }});
    let (got, changes) = run(&schema, true);
    let want = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "a": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "m": {"type": "object", "additionalProperties": {"type": "string"}}},
            "x-kubernetes-preserve-unknown-fields": true},
    }, "x-kubernetes-preserve-unknown-fields": true});
    assert_eq!(got, want);
    assert_eq!(
        changes,
        vec!["s: set x-kubernetes-preserve-unknown-fields: true on 3 object node(s)"]
    );
}

#[test]
fn a_non_object_root_is_refused_with_its_path() {
    let mut schema = json!({"type": "array", "items": {"type": "string"}});
    let mut rec = Recorder::new("t");
    let err = repair(&mut schema, "s", false, &mut rec).expect_err("refused");
    assert_eq!(err.path, "s.type");
}

#[test]
fn a_schema_that_is_not_a_map_is_refused_with_its_path() {
    let mut schema = json!({"type": "object", "properties": {"a": "string"}});
    let mut rec = Recorder::new("t");
    let err = repair(&mut schema, "s", false, &mut rec).expect_err("refused");
    assert_eq!(err.path, "s.properties[a]");
}
