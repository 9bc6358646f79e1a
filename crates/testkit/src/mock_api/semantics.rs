//! The parts of the API server's behaviour the mock reproduces: JSON merge patches, JSON
//! patches, the `managedFields` an apply leaves, and label selectors.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// RFC 7386: `patch` merged into `target` (`null` removes a key).
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let target = target.as_object_mut().expect("made an object above");
    for (key, value) in patch {
        if value.is_null() {
            target.remove(key);
        } else {
            merge_patch(target.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

/// RFC 6902 (`add`, `remove`, `replace`, `test`): the patched document, or why it failed.
pub fn json_patch(target: &Value, operations: &Value) -> Result<Value, String> {
    let mut document = target.clone();
    for operation in operations.as_array().ok_or("a JSON patch is a list")? {
        let op = operation["op"].as_str().unwrap_or_default();
        let path = operation["path"]
            .as_str()
            .ok_or("an operation without path")?;
        let value = operation.get("value").cloned().unwrap_or(Value::Null);
        match op {
            "test" => {
                if document.pointer(path) != Some(&value) {
                    return Err(format!("test operation at {path} failed"));
                }
            }
            "add" | "replace" => set(&mut document, path, value, op == "add")?,
            "remove" => remove(&mut document, path)?,
            other => return Err(format!("unsupported JSON patch operation {other:?}")),
        }
    }
    Ok(document)
}

fn split_pointer(path: &str) -> Result<(&str, String), String> {
    let (parent, last) = path
        .rsplit_once('/')
        .ok_or_else(|| format!("bad path {path}"))?;
    Ok((parent, last.replace("~1", "/").replace("~0", "~")))
}

fn set(document: &mut Value, path: &str, value: Value, add: bool) -> Result<(), String> {
    let (parent, last) = split_pointer(path)?;
    let parent = document
        .pointer_mut(parent)
        .ok_or_else(|| format!("no parent for {path}"))?;
    match parent {
        Value::Object(map) => {
            if !add && !map.contains_key(&last) {
                return Err(format!("replace at {path}: nothing there"));
            }
            map.insert(last, value);
        }
        Value::Array(items) if last == "-" && add => items.push(value),
        Value::Array(items) => {
            let index: usize = last.parse().map_err(|_| format!("bad index in {path}"))?;
            match (add, index < items.len(), index == items.len()) {
                (true, _, true) | (true, true, _) => items.insert(index, value),
                (false, true, _) => items[index] = value,
                _ => return Err(format!("index out of range in {path}")),
            }
        }
        _ => return Err(format!("{path}: parent is not a container")),
    }
    Ok(())
}

fn remove(document: &mut Value, path: &str) -> Result<(), String> {
    let (parent, last) = split_pointer(path)?;
    let removed = match document.pointer_mut(parent) {
        Some(Value::Object(map)) => map.remove(&last).is_some(),
        Some(Value::Array(items)) => match last.parse::<usize>() {
            Ok(index) if index < items.len() => {
                items.remove(index);
                true
            }
            _ => false,
        },
        _ => false,
    };
    if removed {
        Ok(())
    } else {
        Err(format!("remove at {path}: nothing there"))
    }
}

/// The `fieldsV1` an apply of `object` leaves for its manager: every field it set (lists as a
/// whole; the server's keyed list members are not reproduced). The type and identity fields are
/// left out, as the API server leaves them out.
pub fn fields_v1(object: &Value) -> Value {
    let mut fields = owned_fields(object);
    if let Some(map) = fields.as_object_mut() {
        map.remove("f:apiVersion");
        map.remove("f:kind");
        if let Some(Value::Object(meta)) = map.get_mut("f:metadata") {
            for key in ["f:name", "f:namespace", "f:resourceVersion", "f:uid"] {
                meta.remove(key);
            }
        }
    }
    fields
}

fn owned_fields(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (format!("f:{k}"), owned_fields(v)))
                .collect(),
        ),
        _ => Value::Object(Map::new()),
    }
}

/// Whether `labels` satisfies `selector` (`a=b`, `a==b`, `a!=b`, `a`, `!a`, comma-joined).
pub fn matches_selector(labels: &BTreeMap<String, String>, selector: &str) -> bool {
    selector
        .split(',')
        .map(str::trim)
        .filter(|term| !term.is_empty())
        .all(|term| {
            if let Some((key, value)) = term.split_once("!=") {
                labels.get(key.trim()).map(String::as_str) != Some(value.trim())
            } else if let Some((key, value)) = term.split_once('=') {
                let value = value.trim_start_matches('=');
                labels.get(key.trim()).map(String::as_str) == Some(value.trim())
            } else if let Some(key) = term.strip_prefix('!') {
                !labels.contains_key(key.trim())
            } else {
                labels.contains_key(term)
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patches_merge_maps_and_remove_nulls() {
        let mut target = json!({"spec": {"a": 1, "b": 2}, "keep": true});
        merge_patch(&mut target, &json!({"spec": {"a": 3, "b": null, "c": [1]}}));
        assert_eq!(target, json!({"spec": {"a": 3, "c": [1]}, "keep": true}));
    }

    #[test]
    fn json_patches_test_then_change_and_fail_as_a_whole() {
        let target = json!({"metadata": {"finalizers": ["a"]}});
        let added = json_patch(
            &target,
            &json!([{"op": "test", "path": "/metadata/finalizers", "value": ["a"]},
                    {"op": "add", "path": "/metadata/finalizers/-", "value": "b"}]),
        );
        assert_eq!(added, Ok(json!({"metadata": {"finalizers": ["a", "b"]}})));
        let stale = json_patch(
            &target,
            &json!([{"op": "test", "path": "/metadata/finalizers", "value": []}]),
        );
        assert!(stale.is_err());
        assert!(json_patch(&target, &json!([{"op": "remove", "path": "/nope"}])).is_err());
    }

    #[test]
    fn applied_fields_leave_out_identity_and_nulls() {
        let fields = fields_v1(&json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "labels": {"a": "1"}},
            "data": {"k": "v"}, "gone": null, "list": [1, 2],
        }));
        assert_eq!(
            fields,
            json!({"f:metadata": {"f:labels": {"f:a": {}}}, "f:data": {"f:k": {}}, "f:list": {}})
        );
    }

    #[test]
    fn selectors_match_equality_inequality_and_existence() {
        let labels = BTreeMap::from([("a".to_string(), "1".to_string())]);
        assert!(matches_selector(&labels, "a=1"));
        assert!(matches_selector(&labels, "a==1,a"));
        assert!(matches_selector(&labels, "a!=2,!b"));
        assert!(!matches_selector(&labels, "a=2"));
        assert!(!matches_selector(&labels, "b"));
        assert!(!matches_selector(&labels, "!a"));
    }
}
