//! Schema-to-schema comparison of one version's `openAPIV3Schema`, old against new, node by node
//! along the structural spine (properties, items, `additionalProperties`), as OLM v1's crdify
//! does: every change that can make a value valid before invalid after is reported. Loosening
//! changes (a raised maximum, an enum value added, a pattern removed) are not. A change this
//! module does not analyse is reported as [`ViolationKind::OtherSchemaChange`], so nothing
//! unknown passes silently (crdify's "unhandled changes" rule).

mod rules;

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use rules::{
    Bound, bound_rule, count_rule, default_rule, effective_type, enum_rule, multiple_of_rule,
    pattern_and_format, required_rule, rules_rule, type_rule,
};

use super::finding::ViolationKind;
use super::json::{json_eq, preview};
use crate::crd::change::{child, element};
use crate::crd::schema::{INT_OR_STRING, PRESERVE, is_true};

/// One change between two schemas.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SchemaChange {
    pub(crate) kind: ViolationKind,
    /// Schema path in field notation: `spec.items[*].name`, `spec.labels[*]`; empty for the root.
    pub(crate) path: String,
    pub(crate) old: Option<Value>,
    pub(crate) new: Option<Value>,
    pub(crate) message: String,
}

/// Keywords that only document a schema.
const DOCUMENTATION: &[&str] = &["description", "title", "example", "externalDocs"];

/// Keywords compared by a rule of their own, or walked as children.
const HANDLED: &[&str] = &[
    "type",
    INT_OR_STRING,
    "enum",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "maxItems",
    "minItems",
    "maxProperties",
    "minProperties",
    "pattern",
    "format",
    "multipleOf",
    "nullable",
    PRESERVE,
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
    "required",
    "properties",
    "items",
    "additionalProperties",
];

/// Every tightening change from `old` to `new` (two `openAPIV3Schema`s).
pub(crate) fn compare(old: &Value, new: &Value) -> Vec<SchemaChange> {
    let mut out = Vec::new();
    let empty = Map::new();
    node(
        old.as_object().unwrap_or(&empty),
        new.as_object().unwrap_or(&empty),
        "",
        &mut out,
    );
    out
}

fn push(
    out: &mut Vec<SchemaChange>,
    kind: ViolationKind,
    path: &str,
    old: Option<&Value>,
    new: Option<&Value>,
    message: String,
) {
    out.push(SchemaChange {
        kind,
        path: path.to_string(),
        old: old.cloned(),
        new: new.cloned(),
        message,
    });
}

fn node(
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    path: &str,
    out: &mut Vec<SchemaChange>,
) {
    type_rule(old, new, path, out);
    enum_rule(old, new, path, out);
    default_rule(old, new, path, out);
    bound_rule(old, new, path, Bound::Maximum, out);
    bound_rule(old, new, path, Bound::Minimum, out);
    for (key, kind, upper) in [
        ("maxLength", ViolationKind::MaxLengthTightened, true),
        ("minLength", ViolationKind::MinLengthTightened, false),
        ("maxItems", ViolationKind::MaxItemsTightened, true),
        ("minItems", ViolationKind::MinItemsTightened, false),
        ("maxProperties", ViolationKind::MaxPropertiesTightened, true),
        (
            "minProperties",
            ViolationKind::MinPropertiesTightened,
            false,
        ),
    ] {
        count_rule(old, new, path, key, kind, upper, out);
    }
    pattern_and_format(old, new, path, out);
    multiple_of_rule(old, new, path, out);
    if is_true(old, "nullable") && !is_true(new, "nullable") {
        push(
            out,
            ViolationKind::NullableRemoved,
            path,
            Some(&Value::Bool(true)),
            new.get("nullable"),
            "is no longer nullable; null values stored there are dropped when read".into(),
        );
    }
    if is_true(old, PRESERVE) && !is_true(new, PRESERVE) {
        push(
            out,
            ViolationKind::UnknownFieldsNoLongerPreserved,
            path,
            old.get(PRESERVE),
            new.get(PRESERVE),
            "no longer preserves unknown fields; fields the schema does not declare will be \
             pruned from stored objects"
                .into(),
        );
    }
    for key in [
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
    ] {
        if !same(old.get(key), new.get(key)) {
            push(
                out,
                ViolationKind::ListTypeChanged,
                path,
                old.get(key),
                new.get(key),
                format!(
                    "{key} changes from {} to {}; server-side apply merges the field differently",
                    shown(old.get(key)),
                    shown(new.get(key))
                ),
            );
        }
    }
    rules_rule(old, new, path, out);
    required_rule(old, new, path, out);
    other_keywords(old, new, path, out);
    children(old, new, path, out);
}

fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => json_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

fn shown(v: Option<&Value>) -> String {
    v.map_or_else(|| "nothing".to_string(), preview)
}

fn other_keywords(
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    path: &str,
    out: &mut Vec<SchemaChange>,
) {
    let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    let mut changed = Vec::new();
    for key in keys {
        if DOCUMENTATION.contains(&key.as_str()) || HANDLED.contains(&key.as_str()) {
            continue;
        }
        let (before, after) = (old.get(key), new.get(key));
        let removed_junctor =
            after.is_none() && matches!(key.as_str(), "allOf" | "anyOf" | "oneOf" | "not");
        if !removed_junctor && !same(before, after) {
            changed.push(key.clone());
        }
    }
    if !changed.is_empty() {
        push(
            out,
            ViolationKind::OtherSchemaChange,
            path,
            None,
            None,
            format!(
                "{} change(s); windlass does not analyse this change, so it is refused",
                changed.join(", ")
            ),
        );
    }
}

fn children(
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    path: &str,
    out: &mut Vec<SchemaChange>,
) {
    let empty = Map::new();
    let props = |m: &Map<String, Value>| m.get("properties").and_then(Value::as_object).cloned();
    if let Some(before) = props(old) {
        let after = props(new).unwrap_or_default();
        for (name, old_child) in &before {
            let at = child(path, name);
            match after.get(name) {
                Some(new_child) => node(
                    old_child.as_object().unwrap_or(&empty),
                    new_child.as_object().unwrap_or(&empty),
                    &at,
                    out,
                ),
                None => push(
                    out,
                    ViolationKind::FieldRemoved,
                    &at,
                    Some(&Value::String(
                        effective_type(old_child.as_object().unwrap_or(&empty)).into(),
                    )),
                    None,
                    "is removed from the schema; values stored there are pruned (data loss)".into(),
                ),
            }
        }
    }
    if let (Some(a), Some(b)) = (
        old.get("items").and_then(Value::as_object),
        new.get("items").and_then(Value::as_object),
    ) {
        node(a, b, &element(path, "*"), out);
    }
    let extra = |m: &Map<String, Value>| m.get("additionalProperties").cloned();
    match (extra(old), extra(new)) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => node(&a, &b, &element(path, "*"), out),
        (Some(Value::Object(_)) | Some(Value::Bool(true)), after)
            if !matches!(after, Some(Value::Object(_)) | Some(Value::Bool(true)))
                && !is_true(new, PRESERVE) =>
        {
            push(
                out,
                ViolationKind::FieldRemoved,
                &element(path, "*"),
                old.get("additionalProperties"),
                new.get("additionalProperties"),
                "map entries are no longer allowed; their values are pruned (data loss)".into(),
            )
        }
        (before, Some(Value::Bool(false))) if before != Some(Value::Bool(false)) => push(
            out,
            ViolationKind::OtherSchemaChange,
            path,
            before.as_ref(),
            Some(&Value::Bool(false)),
            "additionalProperties becomes false; objects with undeclared fields are refused".into(),
        ),
        _ => {}
    }
}
