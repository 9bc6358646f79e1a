use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

fn deployment(image: &str, replicas: i64, env: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "op", "namespace": "team-a", "resourceVersion": "7", "generation": 3,
                     "labels": {"app.kubernetes.io/name": "op"},
                     "managedFields": [{"manager": "windlass"}]},
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [
            {"name": "sidecar", "image": "proxy:1"},
            {"name": "operator", "image": image, "env": env},
        ]}}},
        "status": {"readyReplicas": 1},
    })
}

fn paths(changes: &[FieldChange]) -> Vec<&str> {
    changes.iter().map(|c| c.path.as_str()).collect()
}

#[test]
fn a_diff_names_each_changed_field_by_path_and_ignores_server_fields() {
    let live = deployment("op:1", 1, json!([{"name": "A", "value": "1"}]));
    let mut after = deployment(
        "op:2",
        1,
        json!([{"name": "A", "value": "2"}, {"name": "B", "value": "x"}]),
    );
    after["metadata"]["resourceVersion"] = json!("8");
    after["metadata"]["generation"] = json!(4);
    after["status"] = json!({"readyReplicas": 0});
    after["metadata"]["labels"]["app.kubernetes.io/version"] = json!("2");
    let changes = diff(&live, &after);
    assert_eq!(
        paths(&changes),
        [
            r#"metadata.labels["app.kubernetes.io/version"]"#,
            "spec.template.spec.containers[name=operator].image",
            "spec.template.spec.containers[name=operator].env[name=A].value",
            "spec.template.spec.containers[name=operator].env[name=B]",
        ]
    );
    assert_eq!(changes[1].old, Some(json!("op:1")));
    assert_eq!(changes[1].new, Some(json!("op:2")));
    assert_eq!(changes[0].old, None, "added");
    assert_eq!(changes[3].new, Some(json!({"name": "B", "value": "x"})));
}

#[test]
fn equal_objects_have_no_diff_whatever_their_key_order_and_number_forms() {
    let live =
        json!({"kind": "X", "spec": {"a": 1, "b": {"c": [1, 2]}, "gone": null, "empty": {}}});
    let after = json!({"spec": {"b": {"c": [1, 2]}, "a": 1.0, "list": []}, "kind": "X"});
    assert!(diff(&live, &after).is_empty());
}

#[test]
fn lists_without_names_compare_by_index_or_whole() {
    let table = [
        // Same length, objects: by index.
        (
            json!({"r": [{"v": ["get"]}, {"v": ["list"]}]}),
            json!({"r": [{"v": ["get"]}, {"v": ["watch"]}]}),
            vec!["r[1].v"],
        ),
        // Scalars: the whole list.
        (
            json!({"args": ["a", "b"]}),
            json!({"args": ["a", "c"]}),
            vec!["args"],
        ),
        // A length change: the whole list.
        (
            json!({"r": [{"v": 1}]}),
            json!({"r": [{"v": 1}, {"v": 2}]}),
            vec!["r"],
        ),
        // Removed field.
        (
            json!({"spec": {"a": 1, "b": 2}}),
            json!({"spec": {"a": 1}}),
            vec!["spec.b"],
        ),
    ];
    for (live, after, want) in table {
        assert_eq!(paths(&diff(&live, &after)), want, "{live} -> {after}");
    }
}

#[test]
fn secret_values_are_never_shown() {
    let live = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"password": "b2xk"}});
    let after = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "labels": {"a": "b"}},
                       "data": {"password": "bmV3", "token": "dA=="}});
    let changes = diff(&live, &after);
    assert_eq!(
        paths(&changes),
        ["metadata.labels", "data.password", "data.token"]
    );
    assert_eq!(changes[0].new, Some(json!({"a": "b"})), "metadata is shown");
    assert_eq!(changes[1].old, Some(json!(HIDDEN)));
    assert_eq!(changes[1].new, Some(json!(HIDDEN)));
    assert_eq!(changes[2].old, None);
    let text = serde_json::to_string(&changes).unwrap();
    assert!(!text.contains("bmV3") && !text.contains("b2xk") && !text.contains("dA=="));
    let drifted = drift(&after, &live).unwrap();
    assert!(!serde_json::to_string(&drifted).unwrap().contains("b2xk"));
}

#[test]
fn drift_is_only_what_someone_changed_in_fields_windlass_set() {
    let applied = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "op", "namespace": "team-a", "labels": {"a": "1"}},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "operator", "image": "op:1",
            "resources": {"limits": {"cpu": "100m"}}}]}}},
    });
    let mut live = applied.clone();
    // Server defaults, other managers' additions and metadata the server writes are not drift.
    live["metadata"]["uid"] = json!("u");
    live["metadata"]["annotations"] = json!({"deployment.kubernetes.io/revision": "2"});
    live["spec"]["revisionHistoryLimit"] = json!(10);
    live["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = json!("IfNotPresent");
    live["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "injected", "image": "mesh:1"}));
    live["status"] = json!({"replicas": 3});
    assert_eq!(drift(&applied, &live), None);

    live["spec"]["replicas"] = json!(3);
    live["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = json!("500m");
    live["metadata"]["labels"] = json!({});
    live["metadata"]["managedFields"] = json!([
        {"manager": "kubectl-edit", "operation": "Update", "fieldsV1": {"f:spec": {"f:template": {"f:spec": {
            "f:containers": {"k:{\"name\":\"operator\"}": {"f:resources": {"f:limits": {"f:cpu": {}}}}}}}}}},
        {"manager": "kubectl-scale", "operation": "Update", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
    ]);
    let drifted = drift(&applied, &live).unwrap();
    assert_eq!(
        paths(&drifted.fields),
        [
            "metadata.labels.a",
            "spec.replicas",
            "spec.template.spec.containers[name=operator].resources.limits.cpu",
        ]
    );
    assert_eq!(drifted.fields[1].old, Some(json!(1)));
    assert_eq!(drifted.fields[1].new, Some(json!(3)));
    assert_eq!(drifted.fields[0].new, None, "the label is gone");
    assert_eq!(drifted.editors, ["kubectl-edit", "kubectl-scale"]);
    assert_eq!(drifted.object.to_string(), "Deployment team-a/op");

    let mut removed = applied.clone();
    removed["spec"]["template"]["spec"]["containers"] = json!([{"name": "other", "image": "x"}]);
    let drifted = drift(&applied, &removed).unwrap();
    assert_eq!(
        paths(&drifted.fields),
        ["spec.template.spec.containers[name=operator]"]
    );
}

#[test]
fn an_apply_repairs_only_fields_another_manager_owns_now() {
    let desired = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "op", "namespace": "team-a"},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "operator", "image": "op:2"}]}}},
    });
    let mut live = desired.clone();
    // windlass wants a new image (its own field): not a repair.
    live["spec"]["template"]["spec"]["containers"][0]["image"] = json!("op:1");
    live["metadata"]["managedFields"] = json!([
        {"manager": "windlass", "operation": "Apply", "fieldsV1": {"f:spec": {"f:replicas": {},
            "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"operator\"}": {"f:image": {}}}}}}}},
    ]);
    assert_eq!(repaired(&desired, &live), None);
    // kubectl scale took spec.replicas: putting it back is a repair, and says who changed it.
    live["spec"]["replicas"] = json!(4);
    live["metadata"]["managedFields"] = json!([
        {"manager": "windlass", "operation": "Apply", "fieldsV1": {"f:spec": {
            "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"operator\"}": {"f:image": {}}}}}}}},
        {"manager": "kubectl-scale", "operation": "Update", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
    ]);
    let repair = repaired(&desired, &live).unwrap();
    assert_eq!(paths(&repair.fields), ["spec.replicas"]);
    assert_eq!(
        repair.fields[0].old,
        Some(json!(1)),
        "what windlass restores"
    );
    assert_eq!(repair.fields[0].new, Some(json!(4)), "what it found");
    assert_eq!(repair.editors, ["kubectl-scale"]);
}

#[test]
fn a_rollback_overwrites_edits_of_fields_only_the_restored_revision_sets() {
    let configmap = |data: Value| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "settings", "namespace": "team-a", "labels": {"a": "1"}},
               "data": data})
    };
    // 1.0.0 set log-level, 1.0.1 (running) sets log-format only; someone set log-level since.
    let restored = configmap(json!({"log-level": "info", "log-format": "text"}));
    let running = configmap(json!({"log-format": "json"}));
    let mut live = configmap(json!({"log-format": "json", "log-level": "debug"}));
    let managed = |fields: Value| {
        json!([
            {"manager": "windlass", "operation": "Apply", "fieldsV1": {"f:metadata": {"f:labels": {"f:a": {}}}, "f:data": {"f:log-format": {}}}},
            {"manager": "kubectl-edit", "operation": "Update", "fieldsV1": fields},
        ])
    };
    live["metadata"]["managedFields"] = managed(json!({"f:data": {"f:log-level": {}}}));
    let found = overwritten(Some(&running), &restored, &live).unwrap();
    assert_eq!(
        paths(&found.fields),
        ["data.log-level"],
        "log-format is the running revision's own: not someone else's edit"
    );
    assert_eq!(found.fields[0].old, Some(json!("info")));
    assert_eq!(found.fields[0].new, Some(json!("debug")));
    assert_eq!(found.editors, ["kubectl-edit"]);
    assert_eq!(found.object.to_string(), "ConfigMap team-a/settings");

    // Not an edit: the running revision sets the field (re-applying it puts the field back),
    // only windlass wrote it, or nothing holds it now.
    let also_running = configmap(json!({"log-format": "json", "log-level": "warn"}));
    assert_eq!(overwritten(Some(&also_running), &restored, &live), None);
    let mut own = live.clone();
    own["metadata"]["managedFields"] = managed(json!({"f:data": {"f:other": {}}}));
    assert_eq!(overwritten(Some(&running), &restored, &own), None);
    let gone = configmap(json!({"log-format": "json"}));
    assert_eq!(overwritten(Some(&running), &restored, &gone), None);
    // An object the running revision does not ship: every edited field it held counts.
    let found = overwritten(None, &restored, &live).unwrap();
    assert_eq!(paths(&found.fields), ["data.log-level"]);
    assert_eq!(
        overwritten(Some(&running), &restored, &restored.clone()),
        None
    );
}

fn small_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::Bool),
        (0i64..5).prop_map(|n| json!(n)),
        "[a-c]{1,2}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-d]", inner, 1..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    /// No diff exactly when the two are the same, and nothing drifts from itself.
    #[test]
    fn a_diff_is_empty_exactly_for_equal_objects(a in small_json(), b in small_json()) {
        let a = json!({"spec": a});
        let b = json!({"spec": b});
        prop_assert_eq!(diff(&a, &b).is_empty(), same(&a, &b));
        prop_assert!(diff(&a, &a).is_empty());
        prop_assert_eq!(drift(&a, &a), None);
    }

    /// Whatever differs between a live object and the dry run is reported once per path.
    #[test]
    fn diff_paths_are_distinct(a in small_json(), b in small_json()) {
        let changes = diff(&json!({"spec": a}), &json!({"spec": b}));
        let mut seen: Vec<&str> = paths(&changes);
        let count = seen.len();
        seen.sort_unstable();
        seen.dedup();
        prop_assert_eq!(seen.len(), count);
    }
}
