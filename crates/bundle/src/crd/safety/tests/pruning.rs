//! Fields of existing objects that the new schema would prune: data loss, named per object and
//! field; what the live schema already pruned (or kept as unknown) decides ratcheting.

use serde_json::{Value, json};

use crate::crd::safety::{Verdict, ViolationKind, check, findings, single_version_crd};

fn crd(spec: Value) -> Value {
    single_version_crd(
        "things.example.com",
        "example.com",
        "Thing",
        json!({"type": "object", "properties": {"spec": spec}}),
    )
}

fn thing(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Thing",
           "metadata": {"name": name, "namespace": "team-a", "labels": {"a": "b"}}, "spec": spec})
}

fn pruned(live: &Value, new: &Value, objects: &[Value]) -> Vec<(String, String, Verdict)> {
    findings(live, new, objects)
        .into_iter()
        .filter(|v| v.kind == ViolationKind::ExistingFieldPruned)
        .map(|v| (v.object.unwrap(), v.field.unwrap(), v.verdict))
        .collect()
}

#[test]
fn pruning_table() {
    let two = crd(json!({"type": "object", "properties": {
        "keep": {"type": "string"}, "drop": {"type": "string"}}}));
    let one = crd(json!({"type": "object", "properties": {"keep": {"type": "string"}}}));
    let open = crd(
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                          "properties": {"keep": {"type": "string"}}}),
    );
    let nested = crd(json!({"type": "object", "properties": {
        "list": {"type": "array", "items": {"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"type": "string"}}}},
        "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"type": "string"}}}}}}));
    let nested_smaller = crd(json!({"type": "object", "properties": {
        "list": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
        "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {
            "a": {"type": "string"}}}}}}));
    let full = thing("t1", json!({"keep": "x", "drop": "y"}));
    let kept_only = thing("t2", json!({"keep": "x"}));
    let deep = thing(
        "t3",
        json!({"list": [{"a": "1"}, {"a": "2", "b": "3"}], "map": {"k": {"a": "1", "b": "2"}}}),
    );
    type Case<'a> = (
        &'a str,
        &'a Value,
        &'a Value,
        Vec<Value>,
        Vec<(&'a str, &'a str, Verdict)>,
    );
    let cases: Vec<Case> = vec![
        (
            "field dropped by the new schema",
            &two,
            &one,
            vec![full.clone(), kept_only.clone()],
            vec![("team-a/t1", "spec.drop", Verdict::Blocks)],
        ),
        (
            "field kept by preserve-unknown-fields",
            &two,
            &open,
            vec![full.clone()],
            vec![],
        ),
        (
            "preserve-unknown-fields removed",
            &open,
            &one,
            vec![thing("t4", json!({"keep": "x", "extra": {"n": 1}}))],
            vec![("team-a/t4", "spec.extra", Verdict::Blocks)],
        ),
        ("no field lost", &two, &one, vec![kept_only.clone()], vec![]),
        (
            "inside list items and map values",
            &nested,
            &nested_smaller,
            vec![deep],
            vec![
                ("team-a/t3", "spec.list[1].b", Verdict::Blocks),
                ("team-a/t3", "spec.map[k].b", Verdict::Blocks),
            ],
        ),
        (
            "metadata is never pruned by the schema",
            &one,
            &one,
            vec![thing("t5", json!({"keep": "x"}))],
            vec![],
        ),
        // An object passed in with a field the live schema prunes too (the API server would
        // never return it): not a loss caused by the upgrade.
        (
            "already pruned by the live schema",
            &one,
            &one,
            vec![thing("t6", json!({"keep": "x", "ghost": 1}))],
            vec![("team-a/t6", "spec.ghost", Verdict::Warns)],
        ),
    ];
    for (name, live, new, objects, expected) in cases {
        let expected: Vec<(String, String, Verdict)> = expected
            .into_iter()
            .map(|(o, f, v)| (o.to_string(), f.to_string(), v))
            .collect();
        assert_eq!(pruned(live, new, &objects), expected, "{name}");
    }
}

#[test]
fn pruning_blocks_and_names_object_and_field() {
    let live = crd(json!({"type": "object", "properties": {
        "keep": {"type": "string"}, "drop": {"type": "string"}}}));
    let new = crd(json!({"type": "object", "properties": {"keep": {"type": "string"}}}));
    let blocking = check(&live, &new, &[thing("t1", json!({"drop": "y"}))]);
    assert_eq!(blocking.len(), 1, "{blocking:#?}");
    assert_eq!(
        blocking[0].to_string(),
        "things.example.com: existing Thing team-a/t1 (v1) loses a field under the new schema: \
         spec.drop: is not declared by the new schema and would be pruned (data loss)"
    );
}

#[test]
fn nulls_and_defaults_are_decoded_before_validation() {
    // The new schema makes `size` non-nullable with no default and adds a defaulted required
    // field: the API server drops the null and fills in the default, so the object stays valid.
    let live = crd(json!({"type": "object", "properties": {
        "size": {"type": "integer", "nullable": true}}}));
    let new = crd(
        json!({"type": "object", "required": ["mode"], "properties": {
        "size": {"type": "integer"}, "mode": {"type": "string", "default": "fast"}}}),
    );
    assert_eq!(
        check(&live, &new, &[thing("t1", json!({"size": null}))]),
        vec![]
    );
}
