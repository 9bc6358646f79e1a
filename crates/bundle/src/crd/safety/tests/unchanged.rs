//! The "is anything changing?" comparison that decides whether the safety check runs at all: a
//! new CRD that only leaves keys out changes the live one, because the forced apply removes them.

use serde_json::{Value, json};

use crate::crd::safety::{check, single_version_crd, unchanged};

fn crd(spec: Value) -> Value {
    single_version_crd(
        "things.example.com",
        "example.com",
        "Thing",
        json!({"type": "object", "properties": {"spec": spec}}),
    )
}

/// `crd` as the API server returns it: the values it fills in by itself added.
fn as_served(crd: &Value) -> Value {
    let mut live = crd.clone();
    live["spec"]["conversion"] = json!({"strategy": "None"});
    live["spec"]["names"]["singular"] = json!("thing");
    live["spec"]["names"]["listKind"] = json!("ThingList");
    live["metadata"]["uid"] = json!("1234");
    live["status"]["acceptedNames"] = json!({"kind": "Thing", "plural": "things"});
    live
}

#[test]
fn omitted_keys_are_changes() {
    let with_field = |field: Value| crd(json!({"type": "object", "properties": {"x": field}}));
    let int_or_string = json!([{"type": "integer"}, {"type": "string"}]);
    let cases = [
        (
            "nullable",
            json!({"type": "string", "nullable": true}),
            json!({"type": "string"}),
        ),
        (
            "default",
            json!({"type": "string", "default": "a"}),
            json!({"type": "string"}),
        ),
        (
            "x-kubernetes-preserve-unknown-fields",
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            json!({"type": "object"}),
        ),
        (
            "x-kubernetes-int-or-string",
            json!({"x-kubernetes-int-or-string": true, "anyOf": int_or_string}),
            json!({"anyOf": int_or_string}),
        ),
    ];
    for (key, live_field, new_field) in cases {
        let live = as_served(&with_field(live_field));
        let new = with_field(new_field);
        // The old comparison (every key of the new CRD is in the live one) took this as no change.
        assert!(windlass_subset(&new["spec"], &live["spec"]), "{key}");
        assert!(!unchanged(&live, &new), "{key}: omitting it is a change");
        assert!(unchanged(&live, &with_field_again(&live)), "{key}");
    }
}

#[test]
fn an_omitted_preserve_unknown_fields_now_reaches_the_check() {
    let live = as_served(&crd(json!({"type": "object", "properties": {
        "x": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})));
    let new = crd(json!({"type": "object", "properties": {"x": {"type": "object"}}}));
    let objects = [json!({"apiVersion": "example.com/v1", "kind": "Thing",
                          "metadata": {"name": "a", "namespace": "n"},
                          "spec": {"x": {"kept": "until now"}}})];
    assert!(!unchanged(&live, &new));
    let blocking = check(&live, &new, &objects);
    assert_eq!(blocking.len(), 1, "{blocking:#?}");
    assert_eq!(blocking[0].field.as_deref(), Some("spec.x.kept"));
}

/// The live CRD written again as it is (what a re-apply of the same bundle sends).
fn with_field_again(live: &Value) -> Value {
    let mut again = live.clone();
    if let Some(meta) = again["metadata"].as_object_mut() {
        meta.shift_remove("uid");
    }
    again
}

#[test]
fn what_the_api_server_fills_in_is_not_a_change() {
    let new =
        crd(json!({"type": "object", "properties": {"x": {"type": "integer", "maximum": 10}}}));
    let mut live = as_served(&new);
    // Numbers come back as floats through typed clients, and `false` flags are not stored.
    live["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["x"]["maximum"] = json!(10.0);
    let mut new_with_false = new.clone();
    new_with_false["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["x"]["nullable"] = json!(false);
    assert!(unchanged(&live, &new));
    assert!(unchanged(&live, &new_with_false));
    // A conversion strategy the new CRD does not state but which is not the default stays a
    // change.
    live["spec"]["conversion"] = json!({"strategy": "Webhook"});
    assert!(!unchanged(&live, &new));
}

/// The comparison the Blueprint controller used before: every key of `desired` has an equal
/// value in `actual`.
fn windlass_subset(desired: &Value, actual: &Value) -> bool {
    match (desired, actual) {
        (Value::Object(want), Value::Object(have)) => want
            .iter()
            .all(|(k, v)| have.get(k).is_some_and(|h| windlass_subset(v, h))),
        (Value::Array(want), Value::Array(have)) => {
            want.len() == have.len() && want.iter().zip(have).all(|(w, h)| windlass_subset(w, h))
        }
        _ => desired == actual,
    }
}
