//! `allOf`/`anyOf`/`oneOf`/`not` in a structural schema.
//!
//! Kubernetes' structural rules (apiextensions-apiserver `pkg/apiserver/schema/validation.go`):
//! inside a junctor only value validations may appear: no `type`, `description`, `title`,
//! `default`, `nullable`, `additionalProperties` nor any `x-kubernetes-*` extension, and no
//! `metadata` property; every property or items a junctor names must also be declared outside
//! it (`complete.go`). The one exception is the int-or-string pattern
//! `anyOf: [{type: integer}, {type: string}]`, which must be exactly that.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::keywords::{FORBIDDEN_NESTED, JUNCTORS, KNOWN, UNSUPPORTED};
use super::{INT_OR_STRING, PRESERVE, Walker, is_true, type_of};
use crate::crd::change::{child, key};

/// Validations that only ever apply to strings or only to numbers: moving them from one branch
/// of an integer-or-string `anyOf` to the node keeps their meaning.
const TYPE_SPECIFIC: &[&str] = &[
    "pattern",
    "minLength",
    "maxLength",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];

/// The one int-or-string form the structural rules exempt from "no type inside anyOf".
fn int_or_string_pattern() -> Value {
    json!([{"type": "integer"}, {"type": "string"}])
}

enum Outcome {
    Keep,
    Remove,
    RenameToAnyOf,
}

/// Repairs the junctors of one structural node.
pub(super) fn repair(w: &mut Walker<'_>, node: &mut Map<String, Value>, path: &str) {
    int_or_string(w, node, path);
    for j in JUNCTORS {
        let Some(slot) = node.get_mut(*j) else {
            continue;
        };
        if *j == "anyOf" && *slot == int_or_string_pattern() {
            continue;
        }
        let mut value = std::mem::take(slot);
        let jpath = child(path, j);
        match top_junctor(w, j, &mut value, node, path, &jpath) {
            Outcome::Keep => node[*j] = value,
            Outcome::Remove => {
                node.shift_remove(*j);
            }
            Outcome::RenameToAnyOf => rename_to_any_of(w, node, value, &jpath),
        }
    }
}

fn rename_to_any_of(w: &mut Walker<'_>, node: &mut Map<String, Value>, value: Value, jpath: &str) {
    let at = node.keys().position(|k| k == "oneOf").unwrap_or(node.len());
    node.shift_remove("oneOf");
    if node.contains_key("anyOf") {
        w.record(jpath, "removed", "its branches differed only by type, which v1 cannot state there; the node accepts more");
    } else {
        node.shift_insert(at, "anyOf".into(), value);
        w.record(jpath, "turned into anyOf", "its branches differed only by type, which v1 cannot state there; oneOf would now match twice");
    }
}

/// `anyOf`/`oneOf` of exactly an integer and a string branch on an untyped node is v1's
/// int-or-string; rewrite it to the one form v1 accepts and flag the node.
fn int_or_string(w: &mut Walker<'_>, node: &mut Map<String, Value>, path: &str) {
    if node.contains_key("type") {
        return;
    }
    for j in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = node.get(j) else {
            continue;
        };
        let types: Vec<Option<&str>> = branches
            .iter()
            .map(|b| b.as_object().and_then(type_of))
            .collect();
        if !matches!(
            types.as_slice(),
            [Some("integer"), Some("string")] | [Some("string"), Some("integer")]
        ) {
            continue;
        }
        let pattern = int_or_string_pattern();
        if j == "anyOf" && node.get(j) == Some(&pattern) && is_true(node, INT_OR_STRING) {
            return;
        }
        if j == "oneOf" && node.contains_key("anyOf") {
            continue;
        }
        let branches = branches.clone();
        let (moved, dropped) = lift_branch_validations(node, &branches);
        let at = node.keys().position(|k| k == j).unwrap_or(node.len());
        node.shift_remove(j);
        node.shift_insert(at, "anyOf".into(), pattern);
        node.shift_remove(PRESERVE);
        node.insert(INT_OR_STRING.into(), Value::Bool(true));
        w.record(
            path,
            format!("set {INT_OR_STRING}: true"),
            format!("{j} of integer and string is v1's int-or-string"),
        );
        if !moved.is_empty() {
            w.record(
                path,
                format!("moved {} out of {j}", moved.join(", ")),
                "they apply to the same values outside",
            );
        }
        if !dropped.is_empty() {
            w.record(
                &child(path, j),
                format!("dropped {}", dropped.join(", ")),
                "v1 allows nothing else in the int-or-string pattern",
            );
        }
        return;
    }
}

/// Moves the type-specific validations of an int-or-string pair onto the node; returns what
/// moved and what had to be dropped.
fn lift_branch_validations(
    node: &mut Map<String, Value>,
    branches: &[Value],
) -> (Vec<String>, Vec<String>) {
    let mut moved = Vec::new();
    let mut dropped = BTreeSet::new();
    let enums: Vec<&Value> = branches.iter().filter_map(|b| b.get("enum")).collect();
    for b in branches.iter().filter_map(Value::as_object) {
        for (k, v) in b {
            if k == "type" || k == "enum" {
                continue;
            }
            if TYPE_SPECIFIC.contains(&k.as_str()) && !node.contains_key(k) {
                node.insert(k.clone(), v.clone());
                moved.push(k.clone());
            } else if node.get(k) != Some(v) {
                dropped.insert(k.clone());
            }
        }
    }
    // An enum in one branch only limits that type; only the union of both branches is exact.
    if enums.len() == 2 && !node.contains_key("enum") {
        let union: Vec<Value> = enums
            .iter()
            .filter_map(|e| e.as_array())
            .flatten()
            .cloned()
            .collect();
        node.insert("enum".into(), Value::Array(union));
        moved.push("enum".into());
    } else if !enums.is_empty() {
        dropped.insert("enum".into());
    }
    (moved, dropped.into_iter().collect())
}

/// A junctor directly on a structural node: types move to the node where that keeps the
/// meaning, the rest is cleaned by `nested`.
fn top_junctor(
    w: &mut Walker<'_>,
    j: &str,
    value: &mut Value,
    node: &mut Map<String, Value>,
    path: &str,
    jpath: &str,
) -> Outcome {
    if j == "not" {
        let Some(b) = value.as_object_mut() else {
            w.record(jpath, "removed", "not a schema");
            return Outcome::Remove;
        };
        if b.contains_key("type") {
            w.record(
                jpath,
                "removed",
                "v1 cannot negate a type; the node accepts more",
            );
            return Outcome::Remove;
        }
        return nested_single(w, b, node, jpath, path);
    }
    let Some(branches) = value.as_array_mut() else {
        w.record(jpath, "removed", "not a list of schemas");
        return Outcome::Remove;
    };
    if branches.iter().any(|b| !b.is_object()) {
        w.record(jpath, "removed", "a branch is not a schema");
        return Outcome::Remove;
    }
    let types: Vec<Option<String>> = branches
        .iter()
        .map(|b| b.as_object().and_then(type_of).map(str::to_string))
        .collect();
    let distinct: BTreeSet<&String> = types.iter().flatten().collect();
    let mut discriminated = false;
    if !distinct.is_empty() {
        let typeless = !node.contains_key("type") && !is_true(node, INT_OR_STRING);
        let all_typed = types.iter().all(Option::is_some);
        if typeless && distinct.len() == 1 && (j == "allOf" || all_typed) {
            let t = distinct
                .iter()
                .next()
                .map(|s| s.to_string())
                .unwrap_or_default();
            node.insert("type".into(), Value::String(t.clone()));
            w.record(
                &child(path, "type"),
                format!("set to {t}"),
                format!("moved out of {j}, where v1 forbids a type"),
            );
        } else if typeless && j != "allOf" && !is_true(node, PRESERVE) {
            node.insert(PRESERVE.into(), Value::Bool(true));
            w.record(
                path,
                format!("set {PRESERVE}: true (any value)"),
                format!("the {j} branches allow several types, which v1 cannot state"),
            );
        }
        discriminated = j == "oneOf" && distinct.len() > 1;
    }
    nested_list(w, j, branches, node, jpath, path, discriminated)
}

fn nested_single(
    w: &mut Walker<'_>,
    b: &mut Map<String, Value>,
    s: &mut Map<String, Value>,
    jpath: &str,
    spath: &str,
) -> Outcome {
    strip(w, b, jpath);
    nested(w, b, s, jpath, spath);
    if b.is_empty() {
        w.record(jpath, "removed", "nothing v1 allows was left in it");
        return Outcome::Remove;
    }
    Outcome::Keep
}

fn nested_list(
    w: &mut Walker<'_>,
    j: &str,
    branches: &mut Vec<Value>,
    s: &mut Map<String, Value>,
    jpath: &str,
    spath: &str,
    discriminated: bool,
) -> Outcome {
    let mut typed = false;
    for (i, b) in branches.iter_mut().enumerate() {
        let Some(b) = b.as_object_mut() else { continue };
        typed |= b.contains_key("type");
        strip(w, b, &format!("{jpath}[{i}]"));
        nested(w, b, s, &format!("{jpath}[{i}]"), spath);
    }
    if j == "allOf" {
        branches.retain(|b| b.as_object().is_some_and(|m| !m.is_empty()));
        if branches.is_empty() {
            w.record(jpath, "removed", "nothing v1 allows was left in it");
            return Outcome::Remove;
        }
    } else if branches
        .iter()
        .any(|b| b.as_object().is_some_and(Map::is_empty))
    {
        // One branch now accepts anything, so the whole alternative does.
        w.record(
            jpath,
            "removed",
            "a branch was left with nothing v1 allows, so it accepts any value",
        );
        return Outcome::Remove;
    }
    if j == "oneOf" && (discriminated || typed) {
        return Outcome::RenameToAnyOf;
    }
    Outcome::Keep
}

/// Removes from a branch what v1 forbids inside junctors; one change per branch.
fn strip(w: &mut Walker<'_>, b: &mut Map<String, Value>, bpath: &str) {
    let removed: Vec<String> = b
        .keys()
        .filter(|k| {
            let k = k.as_str();
            FORBIDDEN_NESTED.contains(&k) || UNSUPPORTED.contains(&k) || !KNOWN.contains(&k)
        })
        .cloned()
        .collect();
    for k in &removed {
        b.shift_remove(k);
    }
    let unique = is_true(b, "uniqueItems");
    if unique {
        b.shift_remove("uniqueItems");
    }
    if !removed.is_empty() || unique {
        let mut list = removed;
        if unique {
            list.push("uniqueItems".into());
        }
        w.record(
            bpath,
            format!("removed {}", list.join(", ")),
            "v1 allows only value validations inside allOf/anyOf/oneOf/not",
        );
    }
}

/// Cleans a branch `b` whose structural counterpart is `s`: properties and items it names are
/// declared in `s` too, and its own junctors are cleaned the same way.
fn nested(
    w: &mut Walker<'_>,
    b: &mut Map<String, Value>,
    s: &mut Map<String, Value>,
    bpath: &str,
    spath: &str,
) {
    nested_properties(w, b, s, bpath, spath);
    nested_items(w, b, s, bpath, spath);
    for j in JUNCTORS {
        let Some(slot) = b.get_mut(*j) else { continue };
        let mut value = std::mem::take(slot);
        let jpath = child(bpath, j);
        let outcome = if j == &"not" {
            match value.as_object_mut() {
                Some(inner) => nested_single(w, inner, s, &jpath, spath),
                None => Outcome::Remove,
            }
        } else {
            match value.as_array_mut() {
                Some(list) if list.iter().all(Value::is_object) => {
                    nested_list(w, j, list, s, &jpath, spath, false)
                }
                _ => Outcome::Remove,
            }
        };
        match outcome {
            Outcome::Keep => b[*j] = value,
            Outcome::Remove => {
                b.shift_remove(*j);
            }
            Outcome::RenameToAnyOf => rename_to_any_of(w, b, value, &jpath),
        }
    }
}

fn nested_properties(
    w: &mut Walker<'_>,
    b: &mut Map<String, Value>,
    s: &mut Map<String, Value>,
    bpath: &str,
    spath: &str,
) {
    let Some(props) = b.get_mut("properties") else {
        return;
    };
    let Some(props) = props.as_object_mut() else {
        b.shift_remove("properties");
        w.record(
            &child(bpath, "properties"),
            "removed",
            "not a map of schemas",
        );
        return;
    };
    let names: Vec<String> = props.keys().cloned().collect();
    for name in names {
        let bp_path = key(bpath, "properties", &name);
        let sp_path = key(spath, "properties", &name);
        if name == "metadata" {
            props.shift_remove(&name);
            w.record(
                &bp_path,
                "removed",
                "v1 forbids metadata inside allOf/anyOf/oneOf/not",
            );
            continue;
        }
        let declared = s.get("properties").and_then(|p| p.get(&name)).is_some();
        if !declared {
            let map_like = matches!(
                s.get("additionalProperties"),
                Some(Value::Object(_)) | Some(Value::Bool(true))
            );
            let scalar = type_of(s).is_some_and(|t| t != "object") || is_true(s, INT_OR_STRING);
            if map_like || scalar {
                props.shift_remove(&name);
                w.record(
                    &bp_path,
                    "removed",
                    "v1 cannot declare this property outside the junctor; the node accepts more",
                );
                continue;
            }
            let outer = s
                .entry("properties")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(outer) = outer.as_object_mut() {
                outer.insert(name.clone(), json!({ PRESERVE: true }));
            }
            w.record(
                &sp_path,
                "added (any value)",
                "v1 requires every property a junctor names to be declared outside it",
            );
        }
        let bp = props.get_mut(&name).map(|v| {
            if v.is_null() {
                *v = Value::Object(Map::new());
            }
            v
        });
        let Some(Value::Object(bp)) = bp else {
            props.shift_remove(&name);
            w.record(&bp_path, "removed", "not a schema");
            continue;
        };
        strip(w, bp, &bp_path);
        let Some(Value::Object(sp)) = s.get_mut("properties").and_then(|p| p.get_mut(&name)) else {
            continue;
        };
        nested(w, bp, sp, &bp_path, &sp_path);
    }
    if props.is_empty() {
        b.shift_remove("properties");
    }
}

fn nested_items(
    w: &mut Walker<'_>,
    b: &mut Map<String, Value>,
    s: &mut Map<String, Value>,
    bpath: &str,
    spath: &str,
) {
    let Some(items) = b.get_mut("items") else {
        return;
    };
    let ipath = child(bpath, "items");
    let scalar = type_of(s).is_some_and(|t| t != "array") || is_true(s, INT_OR_STRING);
    if !items.is_object() || scalar {
        b.shift_remove("items");
        w.record(
            &ipath,
            "removed",
            "v1 cannot declare these items outside the junctor; the node accepts more",
        );
        return;
    }
    if !s.contains_key("items") {
        s.insert("items".into(), json!({ PRESERVE: true }));
        w.record(
            &child(spath, "items"),
            "added (any value)",
            "v1 requires items a junctor names to be declared outside it",
        );
    }
    let (Some(Value::Object(bi)), Some(Value::Object(si))) =
        (b.get_mut("items"), s.get_mut("items"))
    else {
        return;
    };
    strip(w, bi, &ipath);
    nested(w, bi, si, &ipath, &child(spath, "items"));
    if bi.is_empty() {
        b.shift_remove("items");
    }
}
