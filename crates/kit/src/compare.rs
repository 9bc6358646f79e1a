//! "Is the cluster already what we would write?": the one comparison every controller makes
//! before an apply, so a reconcile that changes nothing writes nothing.
//!
//! Two questions, both needed:
//! 1. does the live object carry every field of the desired one, with the same value
//!    ([`is_subset`])? Fields the server adds (defaults, status) do not count;
//! 2. does the desired object still hold every field windlass applied last time (read from the
//!    live object's `managedFields`)? If not, applying would remove those fields, so the apply
//!    is needed even though (1) holds: a label dropped from a bundle is removed, not left behind.

use serde_json::{Map, Value};
use windlass_api::FIELD_MANAGER;

/// Whether applying `desired` over `live` would change nothing.
pub fn up_to_date(desired: &Value, live: &Value) -> bool {
    is_subset(desired, live) && still_owns_nothing_more(desired, live)
}

/// Whether every field of `desired` has the same value in `actual`: maps key by key, lists
/// element-wise and of equal length, numbers by value (`1` equals `1.0`). A desired `null`,
/// empty list or empty map matches an absent field, as server-side apply treats them.
pub fn is_subset(desired: &Value, actual: &Value) -> bool {
    match (desired, actual) {
        (Value::Object(want), Value::Object(have)) => {
            want.iter().all(|(key, value)| match have.get(key) {
                Some(found) => is_subset(value, found) || (is_empty(value) && is_empty(found)),
                None => is_empty(value),
            })
        }
        (Value::Array(want), Value::Array(have)) => {
            want.len() == have.len() && want.iter().zip(have).all(|(w, h)| is_subset(w, h))
        }
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        _ => desired == actual,
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        _ => false,
    }
}

/// Whether every field windlass's last apply set (the `Apply` entry of [`FIELD_MANAGER`] in
/// `managedFields`, main resource only) is still in `desired`. List members (`k:`, `v:`,
/// `i:` keys) are left to [`is_subset`], which compares lists whole.
fn still_owns_nothing_more(desired: &Value, live: &Value) -> bool {
    let entries = live
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array);
    let Some(entries) = entries else {
        return true;
    };
    entries
        .iter()
        .filter(|entry| {
            entry["manager"] == FIELD_MANAGER
                && entry["operation"] == "Apply"
                && entry
                    .get("subresource")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
        })
        .filter_map(|entry| entry.get("fieldsV1").and_then(Value::as_object))
        .all(|owned| keeps(owned, desired))
}

fn keeps(owned: &Map<String, Value>, desired: &Value) -> bool {
    owned.iter().all(|(key, below)| {
        let Some(field) = key.strip_prefix("f:") else {
            return true;
        };
        match desired.get(field) {
            None | Some(Value::Null) => false,
            Some(child @ Value::Object(_)) => below.as_object().is_none_or(|b| keeps(b, child)),
            Some(_) => true,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn server_defaults_do_not_count_but_changes_do() {
        let desired = json!({"spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "a", "image": "x"}]}}}});
        let actual = json!({"spec": {"replicas": 1, "revisionHistoryLimit": 10, "template": {"spec": {
            "containers": [{"name": "a", "image": "x", "imagePullPolicy": "IfNotPresent"}], "dnsPolicy": "ClusterFirst"}}}});
        assert!(is_subset(&desired, &actual));
        assert!(!is_subset(&json!({"spec": {"replicas": 2}}), &actual));
        let extra_container =
            json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}}});
        assert!(!is_subset(&extra_container, &actual));
    }

    #[test]
    fn null_and_empty_collections_match_an_absent_field() {
        let live = json!({"spec": {"package": "db"}});
        for empty in [json!(null), json!([]), json!({})] {
            assert!(is_subset(
                &json!({"spec": {"package": "db", "x": empty}}),
                &live
            ));
            let live_empty = json!({"spec": {"package": "db", "x": empty}});
            assert!(is_subset(
                &json!({"spec": {"package": "db", "x": []}}),
                &live_empty
            ));
        }
        assert!(!is_subset(&json!({"spec": {"x": [1]}}), &live));
        assert!(!is_subset(&json!({"spec": {"x": 0}}), &live));
    }

    #[test]
    fn numbers_compare_by_value() {
        assert!(is_subset(&json!({"n": 1}), &json!({"n": 1.0})));
        assert!(!is_subset(&json!({"n": 1}), &json!({"n": 2})));
    }

    fn live_with_owned(fields: Value) -> Value {
        json!({
            "metadata": {"name": "x", "labels": {"a": "1", "b": "2"}, "managedFields": [
                {"manager": "windlass", "operation": "Apply", "fieldsV1": fields},
                // Someone else's fields never make our apply necessary.
                {"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:metadata": {"f:labels": {"f:c": {}}}}},
                // Nor do our status writes.
                {"manager": "windlass", "operation": "Apply", "subresource": "status", "fieldsV1": {"f:status": {}}},
            ]},
            "spec": {"replicas": 1, "containers": [{"name": "a"}]},
        })
    }

    #[test]
    fn a_field_we_applied_before_and_no_longer_want_needs_an_apply() {
        let owned = json!({"f:metadata": {"f:labels": {"f:a": {}, "f:b": {}}}, "f:spec": {"f:replicas": {}}});
        let live = live_with_owned(owned);
        let both = json!({"metadata": {"name": "x", "labels": {"a": "1", "b": "2"}}, "spec": {"replicas": 1}});
        assert!(up_to_date(&both, &live));
        let label_dropped =
            json!({"metadata": {"name": "x", "labels": {"a": "1"}}, "spec": {"replicas": 1}});
        assert!(is_subset(&label_dropped, &live));
        assert!(!up_to_date(&label_dropped, &live));
        let field_dropped =
            json!({"metadata": {"name": "x", "labels": {"a": "1", "b": "2"}}, "spec": {}});
        assert!(!up_to_date(&field_dropped, &live));
    }

    #[test]
    fn list_members_are_left_to_the_whole_list_comparison() {
        let owned =
            json!({"f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}}}}});
        let live = live_with_owned(owned);
        let desired = json!({"spec": {"containers": [{"name": "a"}]}});
        assert!(up_to_date(&desired, &live));
        let renamed = json!({"spec": {"containers": [{"name": "b"}]}});
        assert!(!up_to_date(&renamed, &live));
    }

    #[test]
    fn an_object_without_managed_fields_is_compared_by_value_alone() {
        let live = json!({"spec": {"a": 1}});
        assert!(up_to_date(&json!({"spec": {"a": 1}}), &live));
        assert!(!up_to_date(&json!({"spec": {"a": 2}}), &live));
    }
}
