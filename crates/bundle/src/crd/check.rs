//! An independent check that a schema is one Kubernetes accepts as structural, mirroring
//! apiextensions-apiserver's rules (`pkg/apiserver/schema/validation.go`, `complete.go` and the
//! keyword checks of `pkg/apis/apiextensions/validation`). The converter runs it on its own
//! output, so a CRD it cannot repair is refused with the exact path instead of failing on apply.

use serde_json::{Map, Value, json};

use super::change::{child, key};
use super::schema::keywords::{FORBIDDEN_NESTED, JUNCTORS, KNOWN, TYPES, UNSUPPORTED};
use super::schema::{INT_OR_STRING, PRESERVE, is_true, type_of};

/// One reason a schema is not structural.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub path: String,
    pub reason: String,
}

/// Every structural-schema problem in `schema` (the `openAPIV3Schema` of one version).
pub fn structural_problems(schema: &Value, path: &str) -> Vec<Problem> {
    let mut out = Vec::new();
    node(schema, path, Level::Root, &mut out);
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Field,
    Item,
}

fn problem(out: &mut Vec<Problem>, path: &str, reason: &str) {
    out.push(Problem {
        path: path.to_string(),
        reason: reason.to_string(),
    });
}

fn keywords(m: &Map<String, Value>, path: &str, out: &mut Vec<Problem>) {
    for k in m.keys() {
        if !KNOWN.contains(&k.as_str()) {
            problem(out, &child(path, k), "unknown keyword");
        } else if UNSUPPORTED.contains(&k.as_str()) {
            problem(out, &child(path, k), "not supported");
        }
    }
    if is_true(m, "uniqueItems") {
        problem(out, &child(path, "uniqueItems"), "cannot be true");
    }
    if m.get(PRESERVE).is_some_and(|v| v != &Value::Bool(true)) {
        problem(out, &child(path, PRESERVE), "must be true or undefined");
    }
    if let Some(t) = m.get("type")
        && !t.as_str().is_some_and(|t| TYPES.contains(&t))
    {
        problem(out, &child(path, "type"), "not an OpenAPI type");
    }
    if m.get("items").is_some_and(|i| !i.is_object()) {
        problem(out, &child(path, "items"), "must be a single schema");
    }
}

fn node(v: &Value, path: &str, level: Level, out: &mut Vec<Problem>) {
    let Some(m) = v.as_object() else {
        problem(out, path, "not a schema object");
        return;
    };
    keywords(m, path, out);
    let int_or_string = is_true(m, INT_OR_STRING);
    let preserve = is_true(m, PRESERVE);
    if level == Level::Root {
        root(m, path, out);
    } else if !m.contains_key("type") && !int_or_string && !preserve {
        problem(
            out,
            &child(path, "type"),
            "must not be empty for specified fields and items",
        );
    }
    if type_of(m) == Some("array") && !m.contains_key("items") {
        problem(out, &child(path, "items"), "must be specified for an array");
    }
    if int_or_string && preserve {
        problem(
            out,
            &child(path, PRESERVE),
            "must be false if x-kubernetes-int-or-string is true",
        );
    }
    if m.contains_key("properties")
        && matches!(m.get("additionalProperties"), Some(ap) if ap != &Value::Bool(true))
    {
        problem(
            out,
            &child(path, "additionalProperties"),
            "properties and additionalProperties are mutually exclusive",
        );
    }
    junctors(m, path, out);
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        for (name, p) in props {
            if level == Level::Root && name == "metadata" {
                continue;
            }
            node(p, &key(path, "properties", name), Level::Field, out);
        }
    }
    if let Some(items) = m.get("items").filter(|i| i.is_object()) {
        node(items, &child(path, "items"), Level::Item, out);
    }
    if let Some(ap) = m.get("additionalProperties").filter(|a| a.is_object()) {
        node(ap, &child(path, "additionalProperties"), Level::Field, out);
    }
}

fn root(m: &Map<String, Value>, path: &str, out: &mut Vec<Problem>) {
    if type_of(m) != Some("object") {
        problem(out, &child(path, "type"), "must be object at the root");
    }
    for k in [
        "additionalProperties",
        INT_OR_STRING,
        "x-kubernetes-embedded-resource",
    ] {
        if m.contains_key(k) {
            problem(out, &child(path, k), "must not be used at the root");
        }
    }
    if is_true(m, "nullable") {
        problem(out, &child(path, "nullable"), "cannot be true at the root");
    }
    let Some(props) = m.get("properties").and_then(Value::as_object) else {
        return;
    };
    for name in ["kind", "apiVersion"] {
        if let Some(p) = props.get(name)
            && p.get("type").and_then(Value::as_str) != Some("string")
        {
            problem(
                out,
                &key(path, "properties", name),
                "must be of type string",
            );
        }
    }
    if let Some(meta) = props.get("metadata") {
        let at = key(path, "properties", "metadata");
        let Some(mm) = meta.as_object() else {
            problem(out, &at, "not a schema object");
            return;
        };
        if type_of(mm) != Some("object") {
            problem(out, &child(&at, "type"), "must be object");
        }
        let only_names = mm
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(|p| p.keys().all(|k| k == "name" || k == "generateName"));
        if !only_names || mm.keys().any(|k| k != "type" && k != "properties") {
            problem(
                out,
                &at,
                "must not specify anything other than name and generateName",
            );
        }
        for (name, p) in mm
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if p.get("default").is_some() {
                problem(
                    out,
                    &child(&key(&at, "properties", name), "default"),
                    "must not be set in top-level metadata",
                );
            }
        }
    }
}

/// The exact int-or-string shapes the structural rules exempt.
fn int_or_string_any_of(v: Option<&Value>) -> bool {
    v == Some(&json!([{"type": "integer"}, {"type": "string"}]))
}

fn junctors(s: &Map<String, Value>, path: &str, out: &mut Vec<Problem>) {
    let skip_any_of = int_or_string_any_of(s.get("anyOf"));
    let skip_first_all_of = s
        .get("allOf")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .is_some_and(|first| int_or_string_any_of(first.get("anyOf")));
    for j in JUNCTORS {
        let Some(v) = s.get(*j) else { continue };
        let jpath = child(path, j);
        if *j == "anyOf" && skip_any_of {
            continue;
        }
        match v {
            Value::Object(b) if *j == "not" => nested(b, Some(s), &jpath, out, false),
            Value::Array(list) if *j != "not" => {
                for (i, b) in list.iter().enumerate() {
                    let bpath = format!("{jpath}[{i}]");
                    match b.as_object() {
                        Some(b) => nested(
                            b,
                            Some(s),
                            &bpath,
                            out,
                            *j == "allOf" && i == 0 && skip_first_all_of,
                        ),
                        None => problem(out, &bpath, "not a schema object"),
                    }
                }
            }
            _ => problem(out, &jpath, "wrong shape"),
        }
    }
}

/// A value validation under a junctor, against its structural counterpart `s` (None when the
/// counterpart is missing, which is itself the problem).
fn nested(
    b: &Map<String, Value>,
    s: Option<&Map<String, Value>>,
    path: &str,
    out: &mut Vec<Problem>,
    skip_any_of: bool,
) {
    keywords(b, path, out);
    for k in FORBIDDEN_NESTED {
        if b.contains_key(*k) {
            problem(
                out,
                &child(path, k),
                "must be undefined inside allOf/anyOf/oneOf/not to be structural",
            );
        }
    }
    if let Some(props) = b.get("properties").and_then(Value::as_object) {
        for (name, p) in props {
            let ppath = key(path, "properties", name);
            if name == "metadata" {
                problem(out, &ppath, "must not be specified in a nested context");
            }
            let counterpart = s
                .and_then(|s| s.get("properties"))
                .and_then(|p| p.get(name))
                .and_then(Value::as_object);
            if counterpart.is_none() {
                problem(
                    out,
                    &ppath,
                    "must also be specified outside allOf/anyOf/oneOf/not",
                );
            }
            if let Some(p) = p.as_object() {
                nested(p, counterpart, &ppath, out, false);
            }
        }
    }
    if let Some(items) = b.get("items").and_then(Value::as_object) {
        let counterpart = s.and_then(|s| s.get("items")).and_then(Value::as_object);
        if counterpart.is_none() {
            problem(
                out,
                &child(path, "items"),
                "must also be specified outside allOf/anyOf/oneOf/not",
            );
        }
        nested(items, counterpart, &child(path, "items"), out, false);
    }
    for j in JUNCTORS {
        if *j == "anyOf" && skip_any_of {
            continue;
        }
        match b.get(*j) {
            None => {}
            Some(Value::Object(inner)) if *j == "not" => {
                nested(inner, s, &child(path, j), out, false)
            }
            Some(Value::Array(list)) if *j != "not" => {
                for (i, inner) in list.iter().enumerate() {
                    if let Some(inner) = inner.as_object() {
                        nested(inner, s, &format!("{}[{i}]", child(path, j)), out, false);
                    }
                }
            }
            Some(_) => problem(out, &child(path, j), "wrong shape"),
        }
    }
}
