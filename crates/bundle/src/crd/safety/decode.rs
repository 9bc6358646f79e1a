//! What the API server does to a custom resource before it validates it, on every read and
//! write: prune the fields the structural schema does not declare, drop nulls a non-nullable
//! field without a default cannot hold, and fill in defaults (apiextensions-apiserver's
//! `pruning` and `defaulting` packages). Checking an existing object against a new schema means
//! first decoding it under that schema, as the API server will once the CRD is replaced.

use serde_json::{Map, Value};

use crate::crd::change::{child, element};
use crate::crd::schema::{PRESERVE, is_true};

/// `apiVersion`, `kind` and `metadata` of a resource (the root or an embedded resource) are
/// never pruned here: the API server handles metadata separately.
const RESOURCE_FIELDS: &[&str] = &["apiVersion", "kind", "metadata"];

/// `object` as the API server holds it under `schema` (the version's `openAPIV3Schema`), and the
/// paths of the fields pruning removed, in the validator's notation (`spec.a`, `spec.list[0].b`,
/// `spec.map[key].c`).
pub fn decode(schema: &Value, object: &Value) -> (Value, Vec<String>) {
    let mut object = object.clone();
    let mut pruned = Vec::new();
    prune(&mut object, schema.as_object(), "", true, &mut pruned);
    drop_nulls(&mut object, schema.as_object());
    default(&mut object, schema.as_object());
    (object, pruned)
}

fn embedded(s: &Map<String, Value>) -> bool {
    is_true(s, "x-kubernetes-embedded-resource")
}

fn properties(s: &Map<String, Value>) -> Option<&Map<String, Value>> {
    s.get("properties").and_then(Value::as_object)
}

/// What `additionalProperties` says about the values of unknown keys: `None` when absent (the
/// keys are pruned), `Some(None)` for a boolean (kept, with no schema below), `Some(Some(s))`
/// for a schema.
#[expect(
    clippy::option_option,
    reason = "the inner option is the schema `prune` takes; the outer one says whether keys stay"
)]
fn additional(s: &Map<String, Value>) -> Option<Option<&Map<String, Value>>> {
    match s.get("additionalProperties")? {
        Value::Object(m) => Some(Some(m)),
        Value::Bool(_) => Some(None),
        _ => None,
    }
}

fn items(s: &Map<String, Value>) -> Option<&Map<String, Value>> {
    s.get("items").and_then(Value::as_object)
}

/// `resource`: `value` is the root of a resource, whose type and object metadata stay.
fn prune(
    value: &mut Value,
    s: Option<&Map<String, Value>>,
    path: &str,
    resource: bool,
    out: &mut Vec<String>,
) {
    if let Some(s) = s
        && is_true(s, PRESERVE)
    {
        keep_unknown(value, s, path, resource, out);
        return;
    }
    match value {
        Value::Object(map) => {
            let Some(s) = s else {
                // No schema at all below this point: every key goes.
                for key in map.keys() {
                    out.push(child(path, key));
                }
                map.clear();
                return;
            };
            let resource = resource || embedded(s);
            let mut gone = Vec::new();
            for (key, v) in map.iter_mut() {
                if resource && RESOURCE_FIELDS.contains(&key.as_str()) {
                    continue;
                }
                if let Some(p) = properties(s).and_then(|p| p.get(key)) {
                    prune(v, p.as_object(), &child(path, key), false, out);
                } else if let Some(extra) = additional(s) {
                    prune(v, extra, &element(path, key), false, out);
                } else {
                    out.push(child(path, key));
                    gone.push(key.clone());
                }
            }
            for key in gone {
                map.shift_remove(&key);
            }
        }
        Value::Array(list) => {
            let item_schema = s.and_then(items);
            for (i, v) in list.iter_mut().enumerate() {
                prune(v, item_schema, &element(path, &i.to_string()), false, out);
            }
        }
        _ => {}
    }
}

/// Below `x-kubernetes-preserve-unknown-fields`: unknown keys stay, declared ones are pruned as
/// usual.
fn keep_unknown(
    value: &mut Value,
    s: &Map<String, Value>,
    path: &str,
    resource: bool,
    out: &mut Vec<String>,
) {
    match value {
        Value::Object(map) => {
            let resource = resource || embedded(s);
            for (key, v) in map.iter_mut() {
                if resource && RESOURCE_FIELDS.contains(&key.as_str()) {
                    continue;
                }
                if let Some(p) = properties(s).and_then(|p| p.get(key)) {
                    prune(v, p.as_object(), &child(path, key), false, out);
                } else if let Some(extra) = additional(s) {
                    prune(v, extra, &element(path, key), false, out);
                }
            }
        }
        Value::Array(list) => {
            if let Some(item_schema) = items(s) {
                for (i, v) in list.iter_mut().enumerate() {
                    keep_unknown(v, item_schema, &element(path, &i.to_string()), false, out);
                }
            }
        }
        _ => {}
    }
}

/// The schema of a map's value under `key`.
fn field_schema<'a>(
    s: Option<&'a Map<String, Value>>,
    key: &str,
) -> Option<&'a Map<String, Value>> {
    let s = s?;
    match properties(s).and_then(|p| p.get(key)) {
        Some(p) => p.as_object(),
        None => additional(s).flatten(),
    }
}

fn non_nullable_null(value: &Value, s: Option<&Map<String, Value>>) -> bool {
    value.is_null() && s.is_some_and(|s| !is_true(s, "nullable"))
}

fn drop_nulls(value: &mut Value, s: Option<&Map<String, Value>>) {
    match value {
        Value::Object(map) => {
            let mut gone = Vec::new();
            for (key, v) in map.iter_mut() {
                let schema = field_schema(s, key);
                if non_nullable_null(v, schema)
                    && schema.is_some_and(|s| !s.contains_key("default"))
                {
                    gone.push(key.clone());
                } else {
                    drop_nulls(v, schema);
                }
            }
            for key in gone {
                map.shift_remove(&key);
            }
        }
        Value::Array(list) => {
            let item_schema = s.and_then(items);
            for v in list {
                drop_nulls(v, item_schema);
            }
        }
        _ => {}
    }
}

fn default(value: &mut Value, s: Option<&Map<String, Value>>) {
    let Some(s) = s else { return };
    match value {
        Value::Object(map) => {
            for (key, p) in properties(s).into_iter().flatten() {
                let Some(fallback) = p.get("default") else {
                    continue;
                };
                let missing = map
                    .get(key)
                    .is_none_or(|v| non_nullable_null(v, p.as_object()));
                if missing {
                    map.insert(key.clone(), fallback.clone());
                }
            }
            let extra = additional(s).flatten();
            for (key, v) in map.iter_mut() {
                if let Some(p) = properties(s).and_then(|p| p.get(key)) {
                    default(v, p.as_object());
                } else if let Some(extra) = extra {
                    if non_nullable_null(v, Some(extra))
                        && let Some(fallback) = extra.get("default")
                    {
                        *v = fallback.clone();
                    }
                    default(v, Some(extra));
                }
            }
        }
        Value::Array(list) => {
            let Some(item_schema) = items(s) else { return };
            for v in list {
                if non_nullable_null(v, Some(item_schema))
                    && let Some(fallback) = item_schema.get("default")
                {
                    *v = fallback.clone();
                }
                default(v, Some(item_schema));
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::decode;

    #[test]
    fn prunes_defaults_and_drops_nulls_as_the_api_server_does() {
        let schema = json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {
                    "size": {"type": "integer", "default": 1},
                    "name": {"type": "string"},
                    "note": {"type": "string", "nullable": true},
                    "list": {"type": "array", "items": {"type": "object", "properties": {
                        "a": {"type": "string"}}}},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                             "properties": {"known": {"type": "object", "properties": {}}}},
                    "nested": {"type": "object", "properties": {
                        "on": {"type": "boolean", "default": false}}, "default": {}},
                }},
            },
        });
        let object = json!({
            "apiVersion": "g/v1", "kind": "K", "metadata": {"name": "x", "anything": 1},
            "spec": {
                "name": null, "note": null, "gone": 1,
                "list": [{"a": "1", "b": 2}],
                "labels": {"k": "v"},
                "free": {"kept": {"deep": 1}, "known": {"pruned": 1}},
            },
            "status": {"phase": "Ready"},
        });
        let (decoded, pruned) = decode(&schema, &object);
        assert_eq!(
            pruned,
            [
                "spec.gone",
                "spec.list[0].b",
                "spec.free.known.pruned",
                "status"
            ]
        );
        assert_eq!(
            decoded,
            json!({
                "apiVersion": "g/v1", "kind": "K", "metadata": {"name": "x", "anything": 1},
                "spec": {
                    "note": null,
                    "list": [{"a": "1"}],
                    "labels": {"k": "v"},
                    "free": {"kept": {"deep": 1}, "known": {}},
                    "size": 1,
                    "nested": {"on": false},
                },
            })
        );
    }

    #[test]
    fn embedded_resources_keep_their_type_and_metadata() {
        let schema = json!({"type": "object", "properties": {"template": {
            "type": "object", "x-kubernetes-embedded-resource": true,
            "properties": {"spec": {"type": "object", "properties": {}}}}}});
        let object = json!({"template": {"apiVersion": "v1", "kind": "Pod",
                                         "metadata": {"name": "p"}, "spec": {"x": 1}, "y": 2}});
        let (decoded, pruned) = decode(&schema, &object);
        assert_eq!(pruned, ["template.spec.x", "template.y"]);
        assert_eq!(
            decoded,
            json!({"template": {"apiVersion": "v1", "kind": "Pod",
                                "metadata": {"name": "p"}, "spec": {}}})
        );
    }
}
