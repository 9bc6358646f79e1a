//! The v1beta1 -> v1 moves and defaults, one smallest CRD per rule.

use serde_json::{Value, json};

use super::{ConvertError, to_v1};

fn v1beta1(spec: Value) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"}, "spec": spec})
}

fn names() -> Value {
    json!({"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"})
}

fn converted(spec: Value) -> (Value, Vec<String>) {
    let c = to_v1(&v1beta1(spec)).expect("converts");
    let again = to_v1(&c.object).expect("converts again");
    assert_eq!(again.object, c.object, "not idempotent");
    assert!(
        again.changes.is_empty(),
        "second pass changed {:?}",
        again.changes
    );
    (
        c.object,
        c.changes
            .iter()
            .map(|c| format!("{}: {}", c.path, c.what))
            .collect(),
    )
}

#[test]
fn single_version_with_top_level_fields_moves_into_versions() {
    let (got, changes) = converted(json!({
        "group": "example.com", "names": names(), "scope": "Namespaced", "version": "v1alpha1",
        "preserveUnknownFields": false,
        "validation": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}},
        "subresources": {"status": {}},
        "additionalPrinterColumns": [{"name": "Age", "type": "date", "JSONPath": ".metadata.creationTimestamp"}],
    }));
    let want = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"}, "spec": {
        "group": "example.com", "names": names(), "scope": "Namespaced",
        "versions": [{"name": "v1alpha1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}},
            "subresources": {"status": {}},
            "additionalPrinterColumns": [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]}]}});
    assert_eq!(got, want);
    assert_eq!(
        changes,
        vec![
            "apiVersion: set to apiextensions.k8s.io/v1",
            "spec.preserveUnknownFields: removed",
            "spec.additionalPrinterColumns: JSONPath renamed to jsonPath",
            "spec.version: moved to spec.versions",
        ]
    );
}

#[test]
fn per_version_values_win_over_top_level_ones() {
    let (got, _) = converted(json!({
        "group": "example.com", "names": names(), "scope": "Cluster", "preserveUnknownFields": false,
        "versions": [
            {"name": "v1", "served": true, "storage": true,
             "schema": {"openAPIV3Schema": {"type": "object", "properties": {"own": {"type": "string"}}}}},
            {"name": "v2", "served": true, "storage": false},
        ],
        "validation": {"openAPIV3Schema": {"type": "object", "properties": {"top": {"type": "string"}}}},
    }));
    let own = got
        .pointer("/spec/versions/0/schema/openAPIV3Schema/properties")
        .unwrap();
    let top = got
        .pointer("/spec/versions/1/schema/openAPIV3Schema/properties")
        .unwrap();
    assert_eq!(own, &json!({"own": {"type": "string"}}));
    assert_eq!(top, &json!({"top": {"type": "string"}}));
}

#[test]
fn empty_scope_is_namespaced_and_missing_schema_is_open() {
    let (got, changes) =
        converted(json!({"group": "example.com", "names": names(), "scope": "", "version": "v1"}));
    assert_eq!(got.pointer("/spec/scope"), Some(&json!("Namespaced")));
    assert_eq!(
        got.pointer("/spec/versions/0/schema/openAPIV3Schema"),
        Some(&json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}))
    );
    assert!(
        changes.contains(&"spec.scope: set to Namespaced".to_string()),
        "{changes:?}"
    );
}

#[test]
fn pruning_stays_off_when_v1beta1_had_it_off() {
    // preserveUnknownFields unset means true in v1beta1: nothing was ever pruned.
    let (got, _) = converted(
        json!({"group": "example.com", "names": names(), "scope": "Namespaced", "version": "v1",
        "validation": {"openAPIV3Schema": {"properties": {"spec": {"properties": {"size": {"type": "integer"}}}}}}}),
    );
    let schema = got
        .pointer("/spec/versions/0/schema/openAPIV3Schema")
        .unwrap();
    assert_eq!(
        schema,
        &json!({"properties": {"spec": {"properties": {"size": {"type": "integer"}}, "type": "object",
        "x-kubernetes-preserve-unknown-fields": true}}, "type": "object", "x-kubernetes-preserve-unknown-fields": true})
    );
}

#[test]
fn conversion_webhook_moves_under_webhook() {
    let (got, _) = converted(
        json!({"group": "example.com", "names": names(), "scope": "Namespaced",
        "preserveUnknownFields": false,
        "versions": [{"name": "v1", "served": true, "storage": true}, {"name": "v2", "served": true, "storage": false}],
        "conversion": {"strategy": "Webhook", "webhookClientConfig": {"service": {"namespace": "ns", "name": "hook", "path": "/convert"}}}}),
    );
    assert_eq!(
        got.pointer("/spec/conversion"),
        Some(&json!({"strategy": "Webhook", "webhook": {
        "clientConfig": {"service": {"namespace": "ns", "name": "hook", "path": "/convert"}},
        "conversionReviewVersions": ["v1beta1"]}}))
    );
}

#[test]
fn exactly_one_storage_version() {
    let table = [
        (
            json!([{"name": "a", "served": true}, {"name": "b", "served": true}]),
            Some("b"),
            [false, true],
        ),
        (
            json!([{"name": "a", "served": true}, {"name": "b", "served": true}]),
            None,
            [true, false],
        ),
        (
            json!([{"name": "a", "served": true, "storage": true}, {"name": "b", "served": true, "storage": true}]),
            Some("b"),
            [false, true],
        ),
    ];
    for (versions, version, want) in table {
        let mut spec = json!({"group": "example.com", "names": names(), "scope": "Namespaced", "versions": versions});
        if let Some(v) = version {
            spec["version"] = json!(v);
        }
        let (got, _) = converted(spec);
        let storage: Vec<bool> = (0..2)
            .map(|i| got["spec"]["versions"][i]["storage"] == json!(true))
            .collect();
        assert_eq!(storage, want, "spec.version {version:?}");
    }
}

#[test]
fn a_valid_v1_crd_comes_back_unchanged() {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"}, "spec": {"group": "example.com", "names": names(), "scope": "Namespaced",
        "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object",
            "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}});
    let c = to_v1(&crd).expect("converts");
    assert_eq!(c.object, crd);
    assert!(c.changes.is_empty());
    assert_eq!(
        serde_json::to_string(&c.object).unwrap(),
        serde_json::to_string(&crd).unwrap()
    );
}

#[test]
fn v1_with_preserve_unknown_fields_true_keeps_unknown_fields_through_the_schema() {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"}, "spec": {"group": "example.com", "names": names(), "scope": "Namespaced",
        "preserveUnknownFields": true,
        "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
    let c = to_v1(&crd).expect("converts");
    assert_eq!(
        c.object.pointer("/spec/preserveUnknownFields"),
        Some(&json!(false))
    );
    assert_eq!(
        c.object.pointer("/spec/versions/0/schema/openAPIV3Schema"),
        Some(&json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}))
    );
}

#[test]
fn what_cannot_be_converted_is_refused_with_crd_and_path() {
    let err = to_v1(&v1beta1(json!({"group": "example.com", "names": names(), "version": "v1",
        "validation": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {"size": 3}}}}}})))
    .expect_err("refused");
    assert_eq!(
        err,
        ConvertError::Crd {
            crd: "widgets.example.com".into(),
            path: "spec.validation.openAPIV3Schema.properties[spec].properties[size]".into(),
            reason: "a schema must be an object".into(),
        }
    );
    assert!(err.to_string().contains("widgets.example.com"));

    let err =
        to_v1(&v1beta1(json!({"group": "example.com", "names": names()}))).expect_err("refused");
    assert!(
        matches!(err, ConvertError::Crd { ref path, .. } if path == "spec.versions"),
        "{err}"
    );

    let err = to_v1(&json!({"apiVersion": "v1", "kind": "ConfigMap"})).expect_err("refused");
    assert!(matches!(err, ConvertError::NotACrd { .. }));
}

#[test]
fn protected_groups_get_the_unapproved_annotation() {
    let mut spec = json!({"group": "charts.helm.k8s.io", "names": names(), "scope": "Namespaced", "version": "v1"});
    let (got, changes) = converted(spec.clone());
    assert_eq!(
        got.pointer("/metadata/annotations/api-approved.kubernetes.io")
            .and_then(Value::as_str)
            .map(|v| v.starts_with("unapproved")),
        Some(true)
    );
    assert!(
        changes
            .iter()
            .any(|c| c.starts_with("metadata.annotations[api-approved.kubernetes.io]")),
        "{changes:?}"
    );
    spec["group"] = json!("k8s.io.example.com");
    let (got, _) = converted(spec);
    assert_eq!(got.pointer("/metadata/annotations"), None);
}
