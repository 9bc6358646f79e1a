//! The rules of [`super::compare`] for one node, keyword by keyword.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::{SchemaChange, push};
use crate::crd::change::child;
use crate::crd::safety::finding::ViolationKind;
use crate::crd::safety::json::{is_multiple, json_eq, num_cmp, preview};
use crate::crd::schema::{INT_OR_STRING, is_true, type_of};

/// The type a node accepts, int-or-string included; `any` when untyped.
pub(super) fn effective_type(m: &Map<String, Value>) -> &str {
    if is_true(m, INT_OR_STRING) {
        "int-or-string"
    } else {
        type_of(m).filter(|t| !t.is_empty()).unwrap_or("any")
    }
}

pub(super) fn type_rule(
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    path: &str,
    out: &mut Vec<SchemaChange>,
) {
    let (from, to) = (effective_type(old), effective_type(new));
    if from != to {
        push(
            out,
            ViolationKind::TypeChanged,
            path,
            Some(&Value::String(from.into())),
            Some(&Value::String(to.into())),
            format!("type changes from {from} to {to}; values of the old type become invalid"),
        );
    }
}

pub(super) fn enum_rule(
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    path: &str,
    out: &mut Vec<SchemaChange>,
) {
    let values = |m: &Map<String, Value>| -> Vec<Value> {
        m.get("enum")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let (before, after) = (values(old), values(new));
    if after.is_empty() {
        return;
    }
    if before.is_empty() {
        push(
            out,
            ViolationKind::EnumAdded,
            path,
            None,
            new.get("enum"),
            format!(
                "an enum ({}) is added where any value was allowed",
                list(&after)
            ),
        );
        return;
    }
    let removed: Vec<Value> = before
        .iter()
        .filter(|b| !after.iter().any(|a| json_eq(a, b)))
        .cloned()
        .collect();
    if !removed.is_empty() {
        push(
            out,
            ViolationKind::EnumValuesRemoved,
            path,
            old.get("enum"),
            new.get("enum"),
            format!(
                "enum value(s) {} are removed; objects holding them become invalid",
                list(&removed)
            ),
        );
    }
}

pub(super) fn list(values: &[Value]) -> String {
    values.iter().map(preview).collect::<Vec<_>>().join(", ")
}

pub(super) fn default_rule(
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    path: &str,
    out: &mut Vec<SchemaChange>,
) {
    let (before, after) = (old.get("default"), new.get("default"));
    let (kind, message) = match (before, after) {
        (None, Some(a)) => (
            ViolationKind::DefaultAdded,
            format!(
                "a default ({}) is added; objects that leave the field unset will read as that value",
                preview(a)
            ),
        ),
        (Some(b), None) => (
            ViolationKind::DefaultRemoved,
            format!(
                "the default ({}) is removed; objects written without the field no longer get it",
                preview(b)
            ),
        ),
        (Some(b), Some(a)) if !json_eq(a, b) => (
            ViolationKind::DefaultChanged,
            format!(
                "the default changes from {} to {}; objects that leave the field unset change meaning",
                preview(b),
                preview(a)
            ),
        ),
        _ => return,
    };
    push(out, kind, path, before, after, message);
}

#[derive(Clone, Copy)]
pub(super) enum Bound {
    Maximum,
    Minimum,
}

pub(super) fn bound_rule(
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    path: &str,
    bound: Bound,
    out: &mut Vec<SchemaChange>,
) {
    let (key, exclusive, kind, tighter) = match bound {
        Bound::Maximum => (
            "maximum",
            "exclusiveMaximum",
            ViolationKind::MaximumTightened,
            Ordering::Less,
        ),
        Bound::Minimum => (
            "minimum",
            "exclusiveMinimum",
            ViolationKind::MinimumTightened,
            Ordering::Greater,
        ),
    };
    let Some(after) = new.get(key).filter(|v| v.is_number()) else {
        return;
    };
    let before = old.get(key).filter(|v| v.is_number());
    let message = match before {
        None => format!("a {key} of {after} is added"),
        Some(before) => match num_cmp(after, before) {
            Some(o) if o == tighter => format!("{key} tightens from {before} to {after}"),
            Some(Ordering::Equal) if is_true(new, exclusive) && !is_true(old, exclusive) => {
                format!("{key} {after} becomes exclusive")
            }
            _ => return,
        },
    };
    let shown_bound = |m: &Map<String, Value>| -> Option<Value> {
        let v = m.get(key).filter(|v| v.is_number())?;
        Some(if is_true(m, exclusive) {
            Value::String(format!("{v} (exclusive)"))
        } else {
            v.clone()
        })
    };
    push(
        out,
        kind,
        path,
        shown_bound(old).as_ref(),
        shown_bound(new).as_ref(),
        format!("{message}; values outside it become invalid"),
    );
}

pub(super) fn count(m: &Map<String, Value>, key: &str) -> Option<u64> {
    let v = m.get(key)?;
    v.as_u64()
        .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
}

pub(super) fn count_rule(
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    path: &str,
    key: &str,
    kind: ViolationKind,
    upper: bool,
    out: &mut Vec<SchemaChange>,
) {
    let Some(after) = count(new, key) else { return };
    let message = match count(old, key) {
        // A lower bound of 0 says nothing.
        None if !upper && after == 0 => return,
        None => format!("a {key} of {after} is added"),
        Some(before) if (upper && after < before) || (!upper && after > before) => {
            format!("{key} tightens from {before} to {after}")
        }
        Some(_) => return,
    };
    push(
        out,
        kind,
        path,
        old.get(key),
        new.get(key),
        format!("{message}; values outside it become invalid"),
    );
}

pub(super) fn pattern_and_format(
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    path: &str,
    out: &mut Vec<SchemaChange>,
) {
    fn text<'m>(m: &'m Map<String, Value>, k: &str) -> Option<&'m str> {
        m.get(k).and_then(Value::as_str).filter(|s| !s.is_empty())
    }
    if let Some(after) = text(new, "pattern")
        && text(old, "pattern") != Some(after)
    {
        let message = match text(old, "pattern") {
            None => format!("a pattern {after} is added"),
            Some(before) => format!("the pattern changes from {before} to {after}"),
        };
        push(
            out,
            ViolationKind::PatternChanged,
            path,
            old.get("pattern"),
            new.get("pattern"),
            format!("{message}; values that do not match become invalid"),
        );
    }
    // Only string formats are checked by the API server; int32 and friends are documentation.
    if effective_type(new) == "string"
        && let Some(after) = text(new, "format")
        && text(old, "format") != Some(after)
    {
        let message = match text(old, "format") {
            None => format!("a format {after} is added"),
            Some(before) => format!("the format changes from {before} to {after}"),
        };
        push(
            out,
            ViolationKind::FormatChanged,
            path,
            old.get("format"),
            new.get("format"),
            format!("{message}; values that do not conform become invalid"),
        );
    }
}

pub(super) fn multiple_of_rule(
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    path: &str,
    out: &mut Vec<SchemaChange>,
) {
    let Some(after) = new.get("multipleOf").filter(|v| v.is_number()) else {
        return;
    };
    let message = match old.get("multipleOf").filter(|v| v.is_number()) {
        None => format!("values must now be multiples of {after}"),
        // Multiples of the old step stay valid only when the old step is a multiple of the new.
        Some(before) if !is_multiple(before, after) => {
            format!("multipleOf changes from {before} to {after}")
        }
        Some(_) => return,
    };
    push(
        out,
        ViolationKind::MultipleOfChanged,
        path,
        old.get("multipleOf"),
        Some(after),
        format!("{message}; other values become invalid"),
    );
}

pub(super) fn rules_rule(
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    path: &str,
    out: &mut Vec<SchemaChange>,
) {
    let rules = |m: &Map<String, Value>| -> Vec<Value> {
        m.get("x-kubernetes-validations")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let before = rules(old);
    for rule in rules(new) {
        if before.iter().any(|b| json_eq(b, &rule)) {
            continue;
        }
        let source = rule
            .get("rule")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
            .to_string();
        push(
            out,
            ViolationKind::ValidationRulesChanged,
            path,
            None,
            Some(&rule),
            format!(
                "validation rule {source:?} is added or changed; existing objects are checked \
                 against it, values written later may be refused"
            ),
        );
    }
}

pub(super) fn required_rule(
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    path: &str,
    out: &mut Vec<SchemaChange>,
) {
    let names = |m: &Map<String, Value>| -> BTreeSet<String> {
        m.get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    let before = names(old);
    let properties = new.get("properties").and_then(Value::as_object);
    for name in names(new).difference(&before) {
        // A default fills the field in before validation, for old objects and new writes alike.
        if properties
            .and_then(|p| p.get(name))
            .is_some_and(|p| p.get("default").is_some())
        {
            continue;
        }
        push(
            out,
            ViolationKind::RequiredFieldAdded,
            &child(path, name),
            None,
            Some(&Value::String(name.clone())),
            "becomes required; objects without it become invalid".into(),
        );
    }
}
