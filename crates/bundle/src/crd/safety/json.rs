//! JSON values as schemas compare them: numbers by value (`1` equals `1.0`), and short
//! previews for messages.

use std::cmp::Ordering;

use serde_json::Value;

pub(crate) fn is_integer(value: &Value) -> bool {
    value.is_i64()
        || value.is_u64()
        || value
            .as_f64()
            .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

pub(crate) fn describe(value: &Value) -> String {
    let kind = match value {
        Value::Null => return "null".into(),
        Value::Bool(_) => "boolean",
        Value::Number(_) if is_integer(value) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => return "array".into(),
        Value::Object(_) => return "object".into(),
    };
    format!("{kind} {}", preview(value))
}

/// The value as JSON, cut short for messages.
pub(crate) fn preview(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 64 {
        text
    } else {
        format!("{}...", text.chars().take(61).collect::<String>())
    }
}

enum Num {
    Int(i128),
    Float(f64),
}

fn num(value: &Value) -> Option<Num> {
    if let Some(i) = value.as_i64() {
        Some(Num::Int(i.into()))
    } else if let Some(u) = value.as_u64() {
        Some(Num::Int(u.into()))
    } else {
        value.as_f64().map(Num::Float)
    }
}

pub(crate) fn num_cmp(a: &Value, b: &Value) -> Option<Ordering> {
    match (num(a)?, num(b)?) {
        (Num::Int(x), Num::Int(y)) => Some(x.cmp(&y)),
        (Num::Int(x), Num::Float(y)) => (x as f64).partial_cmp(&y),
        (Num::Float(x), Num::Int(y)) => x.partial_cmp(&(y as f64)),
        (Num::Float(x), Num::Float(y)) => x.partial_cmp(&y),
    }
}

pub(crate) fn is_multiple(value: &Value, step: &Value) -> bool {
    match (num(value), num(step)) {
        (Some(Num::Int(v)), Some(Num::Int(s))) if s > 0 => v % s == 0,
        (Some(v), Some(s)) => {
            let as_f = |n: Num| match n {
                Num::Int(i) => i as f64,
                Num::Float(f) => f,
            };
            let (v, s) = (as_f(v), as_f(s));
            if s <= 0.0 || !s.is_finite() || !v.is_finite() {
                return true;
            }
            let q = v / s;
            (q - q.round()).abs() <= 1e-9 * q.abs().max(1.0)
        }
        _ => true,
    }
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => num_cmp(a, b) == Some(Ordering::Equal),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|other| json_eq(v, other)))
        }
        _ => a == b,
    }
}
