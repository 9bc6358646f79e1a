//! A custom resource's JSON as the CEL values Kubernetes gives `self`: the schema decides the
//! types (`number` is always a double; `date-time` strings are timestamps, `duration` strings
//! durations, `byte` strings bytes), declared property names are escaped the way Kubernetes
//! escapes them (`namespace` is `__namespace__`, `a-b` is `a__dash__b`), and a resource root
//! shows only `apiVersion`, `kind`, `metadata.name` and `metadata.generateName` besides its
//! declared properties.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine;
use cel::Value as Cel;
use cel::objects::{Key, Map as CelMap};
use serde_json::{Map, Value};

use crate::crd::schema::{INT_OR_STRING, PRESERVE, is_true, type_of};

/// CEL's reserved words; a property of that name is reached as `__word__`.
const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
];

/// The name a property is reached by in CEL, or None when Kubernetes cannot escape it (such a
/// property is invisible to rules).
pub(crate) fn escape(name: &str) -> Option<String> {
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let escaped = name
        .replace("__", "__underscores__")
        .replace('.', "__dot__")
        .replace('-', "__dash__")
        .replace('/', "__slash__");
    let mut chars = escaped.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    (first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')).then_some(escaped)
}

fn map(entries: HashMap<Key, Cel>) -> Cel {
    Cel::Map(CelMap {
        map: Arc::new(entries),
    })
}

fn string_key(key: &str) -> Key {
    Key::String(Arc::new(key.to_string()))
}

/// `value` under `schema` (None: no schema, as below `x-kubernetes-preserve-unknown-fields`).
/// `resource`: `value` is the root of a resource or an embedded resource.
pub(crate) fn to_cel(value: &Value, schema: Option<&Map<String, Value>>, resource: bool) -> Cel {
    let Some(s) = schema else {
        return untyped(value);
    };
    let resource = resource || is_true(s, "x-kubernetes-embedded-resource");
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => {
            if type_of(s) == Some("number") {
                Cel::Float(n.as_f64().unwrap_or(f64::NAN))
            } else {
                number(n)
            }
        }
        Value::String(text) => string(text, s),
        Value::Array(items) => {
            let item_schema = s.get("items").and_then(Value::as_object);
            Cel::List(Arc::new(
                items
                    .iter()
                    .map(|i| to_cel(i, item_schema, false))
                    .collect(),
            ))
        }
        Value::Object(fields) => object(fields, s, resource),
    }
}

fn object(fields: &Map<String, Value>, s: &Map<String, Value>, resource: bool) -> Cel {
    let properties = s.get("properties").and_then(Value::as_object);
    let mut out = HashMap::new();
    if let Some(properties) = properties {
        for (name, child) in fields {
            if resource && matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            let (Some(child_schema), Some(escaped)) = (properties.get(name), escape(name)) else {
                continue;
            };
            out.insert(
                string_key(&escaped),
                to_cel(child, child_schema.as_object(), false),
            );
        }
    } else if let Some(extra) = s.get("additionalProperties") {
        let extra = extra.as_object();
        for (name, child) in fields {
            if resource && matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            out.insert(string_key(name), to_cel(child, extra, false));
        }
    } else if is_true(s, PRESERVE) {
        for (name, child) in fields {
            if resource && matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            out.insert(string_key(name), untyped(child));
        }
    }
    if resource {
        for key in ["apiVersion", "kind"] {
            if let Some(Value::String(text)) = fields.get(key) {
                out.insert(string_key(key), Cel::String(Arc::new(text.clone())));
            }
        }
        if let Some(Value::Object(meta)) = fields.get("metadata") {
            let mut shown = HashMap::new();
            for key in ["name", "generateName"] {
                if let Some(Value::String(text)) = meta.get(key) {
                    shown.insert(string_key(key), Cel::String(Arc::new(text.clone())));
                }
            }
            out.insert(string_key("metadata"), map(shown));
        }
    }
    map(out)
}

fn string(text: &str, s: &Map<String, Value>) -> Cel {
    if is_true(s, INT_OR_STRING) {
        return Cel::String(Arc::new(text.to_string()));
    }
    let typed = match s.get("format").and_then(Value::as_str) {
        Some("date-time") => chrono::DateTime::parse_from_rfc3339(text)
            .ok()
            .map(Cel::Timestamp),
        Some("date") => chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map(|t| Cel::Timestamp(t.and_utc().fixed_offset())),
        Some("duration") => go_duration(text).map(Cel::Duration),
        Some("byte") => base64::engine::general_purpose::STANDARD
            .decode(text)
            .ok()
            .map(|b| Cel::Bytes(Arc::new(b))),
        _ => None,
    };
    typed.unwrap_or_else(|| Cel::String(Arc::new(text.to_string())))
}

fn number(n: &serde_json::Number) -> Cel {
    if let Some(i) = n.as_i64() {
        Cel::Int(i)
    } else if let Some(u) = n.as_u64() {
        Cel::UInt(u)
    } else {
        Cel::Float(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// A value below `x-kubernetes-preserve-unknown-fields`: typed by its JSON only.
fn untyped(value: &Value) -> Cel {
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => number(n),
        Value::String(text) => Cel::String(Arc::new(text.clone())),
        Value::Array(items) => Cel::List(Arc::new(items.iter().map(untyped).collect())),
        Value::Object(fields) => map(fields
            .iter()
            .map(|(k, v)| (string_key(k), untyped(v)))
            .collect()),
    }
}

/// Go's duration syntax (`1h30m`, `300ms`, `-1.5s`, `0`), as Kubernetes parses `duration`
/// strings.
pub(crate) fn go_duration(text: &str) -> Option<chrono::Duration> {
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Some(chrono::Duration::zero());
    }
    if rest.is_empty() {
        return None;
    }
    let mut nanos: f64 = 0.0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|n| *n > 0)?;
        let value: f64 = rest[..number_len].parse().ok()?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        nanos += value * scale;
        rest = &rest[unit_len..];
    }
    let nanos = if negative { -nanos } else { nanos };
    (nanos.abs() < 9.2e18).then(|| chrono::Duration::nanoseconds(nanos as i64))
}

#[cfg(test)]
mod tests {
    use super::{escape, go_duration};

    #[test]
    fn escapes_as_kubernetes_does() {
        let cases = [
            ("replicas", Some("replicas")),
            ("namespace", Some("__namespace__")),
            ("if", Some("__if__")),
            ("x-y", Some("x__dash__y")),
            ("a.b/c", Some("a__dot__b__slash__c")),
            ("__x", Some("__underscores__x")),
            ("1abc", None),
            ("a b", None),
        ];
        for (name, want) in cases {
            assert_eq!(escape(name).as_deref(), want, "{name}");
        }
    }

    #[test]
    fn go_durations() {
        let secs = |t: &str| go_duration(t).map(|d| d.num_milliseconds());
        assert_eq!(secs("1h30m"), Some(5_400_000));
        assert_eq!(secs("300ms"), Some(300));
        assert_eq!(secs("-1.5s"), Some(-1500));
        assert_eq!(secs("0"), Some(0));
        assert_eq!(secs("1d"), None);
        assert_eq!(secs("h"), None);
        assert_eq!(secs(""), None);
    }
}
