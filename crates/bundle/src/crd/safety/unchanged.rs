//! Whether writing a CRD changes the live one. The Blueprint controller writes CRDs with a forced
//! server-side apply, which removes every field it wrote before and now leaves out: a new CRD
//! that only omits keys (`nullable`, `default`, `x-kubernetes-preserve-unknown-fields`,
//! `x-kubernetes-int-or-string`, ...) is a change, and needs the safety check like any other.
//! "The live spec contains the new one" is therefore not enough; the two must be equal, once the
//! values the API server fills in by itself are set aside.

use serde_json::{Map, Value};

use super::json::json_eq;

/// Schema keys whose `false` the API server does not store (`omitempty` booleans): `false` and
/// absent mean the same.
const FALSE_IS_ABSENT: &[&str] = &[
    "nullable",
    "uniqueItems",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
];

/// True when replacing `live` (as read from the API server) by `new` leaves its spec as it is.
pub fn unchanged(live: &Value, new: &Value) -> bool {
    let (Some(live_spec), Some(new_spec)) = (live["spec"].as_object(), new["spec"].as_object())
    else {
        return false;
    };
    let mut live_spec = live_spec.clone();
    forget_server_defaults(&mut live_spec, new_spec);
    let (mut a, mut b) = (Value::Object(live_spec), Value::Object(new_spec.clone()));
    drop_false_flags(&mut a);
    drop_false_flags(&mut b);
    json_eq(&a, &b)
}

/// Removes from the live spec what the API server defaulted and `new` does not say: the `None`
/// conversion strategy, the webhook service port 443, the derived singular name and list kind,
/// `preserveUnknownFields: false`.
fn forget_server_defaults(live: &mut Map<String, Value>, new: &Map<String, Value>) {
    if !new.contains_key("conversion")
        && live.get("conversion") == Some(&serde_json::json!({"strategy": "None"}))
    {
        live.shift_remove("conversion");
    }
    let new_port = new
        .get("conversion")
        .and_then(|c| c.pointer("/webhook/clientConfig/service/port"));
    if new_port.is_none()
        && let Some(service) = live
            .get_mut("conversion")
            .and_then(|c| c.pointer_mut("/webhook/clientConfig/service"))
            .and_then(Value::as_object_mut)
        && service.get("port").and_then(Value::as_i64) == Some(443)
    {
        service.shift_remove("port");
    }
    if !new.contains_key("preserveUnknownFields")
        && live.get("preserveUnknownFields") == Some(&Value::Bool(false))
    {
        live.shift_remove("preserveUnknownFields");
    }
    let kind = new
        .get("names")
        .and_then(|n| n.get("kind"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let new_names = new.get("names").and_then(Value::as_object);
    if let Some(names) = live.get_mut("names").and_then(Value::as_object_mut) {
        let derived = [
            ("singular", kind.to_lowercase()),
            ("listKind", format!("{kind}List")),
        ];
        for (key, value) in derived {
            let said = new_names.is_some_and(|n| n.contains_key(key));
            if !said && names.get(key).and_then(Value::as_str) == Some(value.as_str()) {
                names.shift_remove(key);
            }
        }
    }
}

fn drop_false_flags(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|k, v| !(FALSE_IS_ABSENT.contains(&k.as_str()) && v == &Value::Bool(false)));
            for v in map.values_mut() {
                drop_false_flags(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(drop_false_flags),
        _ => {}
    }
}
