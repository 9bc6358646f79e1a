//! Repair of one `openAPIV3Schema` into a structural schema, following the rules of
//! apiextensions-apiserver (`pkg/apiserver/schema/validation.go` for structurality,
//! `pkg/apis/apiextensions/validation` for the keywords v1 refuses).
//!
//! The walk visits the structural part of the schema (root, `properties`, `items`,
//! `additionalProperties`); `junctors` handles what hangs below `allOf`/`anyOf`/`oneOf`/`not`.
//! Every repair is the loosest change that makes the node acceptable: a v1beta1 object that was
//! valid must stay valid, so when the exact meaning cannot be kept the node accepts more.

mod junctors;
pub(crate) mod keywords;

use serde_json::{Map, Value};

use super::change::{Recorder, child, key};
use keywords::{INT_OR_STRING_FIELDS, KNOWN, QUANTITY_MAPS, TYPES, UNSUPPORTED};

pub(crate) const PRESERVE: &str = "x-kubernetes-preserve-unknown-fields";
pub(crate) const INT_OR_STRING: &str = "x-kubernetes-int-or-string";

/// A schema node that cannot be read as a schema at all.
#[derive(Debug)]
pub(crate) struct Unrepairable {
    pub(crate) path: String,
    pub(crate) reason: String,
}

/// Where a node sits in the structural part of the schema; the rules differ per place.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    /// A property (or a value of `additionalProperties`), with its name when it has one.
    Field,
    Item,
}

#[derive(Clone, Copy)]
struct Place<'n> {
    level: Level,
    /// The property name, for the int-or-string heuristics.
    name: Option<&'n str>,
    /// True for the values of a resource-quantity map (`limits`, `requests`, ...).
    quantity: bool,
}

/// Repairs `schema` in place. `keep_unknown` is true when the CRD disabled pruning (v1beta1's
/// default): every object node then keeps unknown fields, as before.
pub(crate) fn repair(
    schema: &mut Value,
    path: &str,
    keep_unknown: bool,
    rec: &mut Recorder,
) -> Result<(), Unrepairable> {
    let mut walker = Walker {
        rec,
        keep_unknown,
        marks: 0,
    };
    walker.node(
        schema,
        path,
        Place {
            level: Level::Root,
            name: None,
            quantity: false,
        },
    )?;
    if walker.marks > 0 {
        let what = format!("set {PRESERVE}: true on {} object node(s)", walker.marks);
        walker.rec.record(
            path,
            what,
            "v1beta1 kept unknown fields everywhere (preserveUnknownFields); v1 keeps them only where marked",
        );
    }
    Ok(())
}

pub(crate) struct Walker<'r> {
    rec: &'r mut Recorder,
    keep_unknown: bool,
    marks: usize,
}

pub(crate) fn type_of(m: &Map<String, Value>) -> Option<&str> {
    m.get("type").and_then(Value::as_str)
}

pub(crate) fn is_true(m: &Map<String, Value>, k: &str) -> bool {
    m.get(k) == Some(&Value::Bool(true))
}

impl Walker<'_> {
    pub(crate) fn record(&mut self, path: &str, what: impl Into<String>, why: impl Into<String>) {
        self.rec.record(path, what, why);
    }

    fn node(&mut self, v: &mut Value, path: &str, place: Place<'_>) -> Result<(), Unrepairable> {
        if v.is_null() {
            // `foo:` with nothing below reads as an empty schema, as the API server decodes it.
            *v = Value::Object(Map::new());
        }
        let Some(m) = v.as_object_mut() else {
            return Err(Unrepairable {
                path: path.to_string(),
                reason: "a schema must be an object".into(),
            });
        };
        self.clean_keywords(m, path, place.level == Level::Root);
        if place.level == Level::Root {
            self.root(m, path)?;
        }
        junctors::repair(self, m, path);
        self.infer_type(m, path, place);
        if type_of(m) == Some("array") && !m.contains_key("items") {
            // Structural rule: an array must say what its items are.
            m.insert("items".into(), Value::Object(Map::new()));
            self.record(
                path,
                "added items (any value)",
                "v1 requires items for every array",
            );
        }
        if m.contains_key("properties")
            && matches!(m.get("additionalProperties"), Some(ap) if ap != &Value::Bool(true))
        {
            m.shift_remove("additionalProperties");
            self.record(
                path,
                "removed additionalProperties",
                "v1 forbids properties and additionalProperties together",
            );
        }
        self.children(m, path, place)?;
        self.mark_unknown_kept(m);
        Ok(())
    }

    /// Drops what v1 refuses or ignores in any schema node.
    fn clean_keywords(&mut self, m: &mut Map<String, Value>, path: &str, root: bool) {
        let unknown: Vec<String> = m
            .keys()
            .filter(|k| !KNOWN.contains(&k.as_str()))
            .cloned()
            .collect();
        if !unknown.is_empty() {
            for k in &unknown {
                m.shift_remove(k);
            }
            self.record(
                path,
                format!("removed unknown keyword(s) {}", unknown.join(", ")),
                "not part of a CRD schema; the API server never acted on them",
            );
        }
        for k in UNSUPPORTED {
            if m.shift_remove(*k).is_some() {
                self.record(
                    &child(path, k),
                    "removed",
                    "apiextensions does not support this keyword",
                );
            }
        }
        if is_true(m, "uniqueItems") {
            m.shift_remove("uniqueItems");
            self.record(
                &child(path, "uniqueItems"),
                "removed",
                "v1 forbids uniqueItems: true (quadratic cost)",
            );
        }
        if m.get(PRESERVE).is_some_and(|p| p != &Value::Bool(true)) {
            m.shift_remove(PRESERVE);
            self.record(
                &child(path, PRESERVE),
                "removed",
                "v1 accepts only true or no value",
            );
        }
        if m.get(INT_OR_STRING).is_some_and(|p| !p.is_boolean()) {
            m.shift_remove(INT_OR_STRING);
            self.record(&child(path, INT_OR_STRING), "removed", "not a boolean");
        }
        if root && is_true(m, "nullable") {
            m.shift_remove("nullable");
            self.record(
                &child(path, "nullable"),
                "removed",
                "v1 forbids nullable at the root",
            );
        }
        if let Some(items) = m.get_mut("items")
            && let Some(list) = items.as_array_mut()
        {
            // v1 takes one schema for all items; a one-element list says the same thing.
            let single = if list.len() == 1 { list.pop() } else { None };
            *items = single.unwrap_or_else(|| Value::Object(Map::new()));
            self.record(
                &child(path, "items"),
                "list of schemas replaced by one schema",
                "v1 requires items to be a single schema",
            );
        }
        self.clean_type(m, path);
        if is_true(m, INT_OR_STRING) && is_true(m, PRESERVE) {
            m.shift_remove(PRESERVE);
            self.record(
                &child(path, PRESERVE),
                "removed",
                "v1 forbids it together with x-kubernetes-int-or-string",
            );
        }
        if is_true(m, INT_OR_STRING) && m.contains_key("type") {
            m.shift_remove("type");
            self.record(
                &child(path, "type"),
                "removed",
                "an int-or-string field carries no type in v1",
            );
        }
    }

    fn clean_type(&mut self, m: &mut Map<String, Value>, path: &str) {
        let Some(t) = m.get("type").cloned() else {
            return;
        };
        let text = t.as_str().unwrap_or_default();
        if TYPES.contains(&text) {
            return;
        }
        let p = child(path, "type");
        match keywords::normalise_type(text) {
            Some(fixed) => {
                self.record(
                    &p,
                    format!("{t} read as {fixed}"),
                    "not an OpenAPI type; v1 requires one",
                );
                m.insert("type".into(), Value::String(fixed.into()));
            }
            None => {
                let null = text == "null";
                m.shift_remove("type");
                if null && !is_true(m, "nullable") {
                    m.insert("nullable".into(), Value::Bool(true));
                }
                self.record(
                    &p,
                    format!("removed {t}"),
                    "not an OpenAPI type; the field accepts any value as before",
                );
            }
        }
    }

    /// Rules that hold only at the root of a resource schema.
    fn root(&mut self, m: &mut Map<String, Value>, path: &str) -> Result<(), Unrepairable> {
        match type_of(m) {
            None => {
                m.shift_remove("type");
                m.insert("type".into(), Value::String("object".into()));
                self.record(
                    &child(path, "type"),
                    "set to object",
                    "v1 requires an object type at the root",
                );
            }
            Some("object") => {}
            Some(other) => {
                return Err(Unrepairable {
                    path: child(path, "type"),
                    reason: format!("the root of a resource must be an object, not {other}"),
                });
            }
        }
        for k in [
            "x-kubernetes-int-or-string",
            "x-kubernetes-embedded-resource",
        ] {
            if m.shift_remove(k).is_some() {
                self.record(&child(path, k), "removed", "v1 forbids it at the root");
            }
        }
        if m.shift_remove("additionalProperties").is_some() {
            self.record(
                &child(path, "additionalProperties"),
                "removed",
                "v1 forbids additionalProperties at the root",
            );
        }
        if let Some(props) = m.get_mut("properties").and_then(Value::as_object_mut) {
            for name in ["kind", "apiVersion"] {
                let Some(Value::Object(p)) = props.get_mut(name) else {
                    continue;
                };
                if type_of(p) != Some("string") {
                    p.insert("type".into(), Value::String("string".into()));
                    let at = key(path, "properties", name);
                    self.record(
                        &child(&at, "type"),
                        "set to string",
                        "v1 requires kind and apiVersion to be strings",
                    );
                }
            }
            if let Some(meta) = props.get_mut("metadata") {
                let at = key(path, "properties", "metadata");
                if metadata_schema(meta, &at, self) {
                    props.shift_remove("metadata");
                }
            }
        }
        Ok(())
    }

    /// Gives an untyped node the type its content implies, or failing that marks it as accepting
    /// any value (what an untyped v1beta1 node did).
    fn infer_type(&mut self, m: &mut Map<String, Value>, path: &str, place: Place<'_>) {
        if m.contains_key("type") || is_true(m, INT_OR_STRING) || is_true(m, PRESERVE) {
            return;
        }
        let has = |k: &str| m.contains_key(k);
        let object = has("properties")
            || has("additionalProperties")
            || has("minProperties")
            || has("maxProperties");
        let inferred = if object {
            Some(("object", "its properties make it an object"))
        } else if has("items") {
            Some(("array", "its items make it an array"))
        } else {
            enum_type(m).map(|t| (t, "every enum value has this type"))
        };
        if let Some((t, why)) = inferred {
            m.insert("type".into(), Value::String(t.into()));
            self.record(
                &child(path, "type"),
                format!("set to {t}"),
                format!("v1 requires a type; {why}"),
            );
            return;
        }
        let int_or_string = place.quantity
            || m.get("format").and_then(Value::as_str) == Some("int-or-string")
            || place
                .name
                .is_some_and(|n| INT_OR_STRING_FIELDS.contains(&n));
        if int_or_string {
            m.insert(INT_OR_STRING.into(), Value::Bool(true));
            self.record(
                path,
                format!("set {INT_OR_STRING}: true"),
                "an untyped port, budget or quantity is a number or a string",
            );
        } else {
            m.insert(PRESERVE.into(), Value::Bool(true));
            self.record(
                path,
                format!("set {PRESERVE}: true (any value)"),
                "untyped: v1beta1 accepted any value here",
            );
        }
    }

    fn children(
        &mut self,
        m: &mut Map<String, Value>,
        path: &str,
        place: Place<'_>,
    ) -> Result<(), Unrepairable> {
        if let Some(props) = m.get_mut("properties") {
            let Some(props) = props.as_object_mut() else {
                return Err(Unrepairable {
                    path: child(path, "properties"),
                    reason: "properties must be a map".into(),
                });
            };
            for (name, p) in props.iter_mut() {
                // The root's metadata schema was settled by `root`; v1 validates it separately.
                if place.level == Level::Root && name == "metadata" {
                    continue;
                }
                self.node(
                    p,
                    &key(path, "properties", name),
                    Place {
                        level: Level::Field,
                        name: Some(name),
                        quantity: false,
                    },
                )?;
            }
        }
        if let Some(items) = m.get_mut("items") {
            self.node(
                items,
                &child(path, "items"),
                Place {
                    level: Level::Item,
                    name: None,
                    quantity: false,
                },
            )?;
        }
        if let Some(ap) = m.get_mut("additionalProperties")
            && !ap.is_boolean()
        {
            let quantity = place.name.is_some_and(|n| QUANTITY_MAPS.contains(&n));
            self.node(
                ap,
                &child(path, "additionalProperties"),
                Place {
                    level: Level::Field,
                    name: None,
                    quantity,
                },
            )?;
        }
        Ok(())
    }

    /// Keeps v1beta1's "nothing is pruned" on every object node that would otherwise drop keys.
    fn mark_unknown_kept(&mut self, m: &mut Map<String, Value>) {
        if !self.keep_unknown || type_of(m) != Some("object") || is_true(m, PRESERVE) {
            return;
        }
        // A map (additionalProperties schema) keeps every key already; `false` allows none.
        if matches!(
            m.get("additionalProperties"),
            Some(Value::Object(_) | Value::Bool(false))
        ) {
            return;
        }
        m.insert(PRESERVE.into(), Value::Bool(true));
        self.marks += 1;
    }
}

/// v1 lets the root schema say nothing about `metadata` but restrictions on `name` and
/// `generateName` (structural rule on metadata). Returns true when the whole node must go;
/// otherwise trims it to what is allowed.
fn metadata_schema(meta: &mut Value, path: &str, w: &mut Walker<'_>) -> bool {
    let why = "v1 allows a metadata schema only for name and generateName";
    let Some(m) = meta.as_object_mut() else {
        return true_with(w, path, why);
    };
    if allowed_metadata(m) {
        return false;
    }
    let props = m.get("properties").and_then(Value::as_object);
    let kept: Map<String, Value> = props
        .map(|p| {
            p.iter()
                .filter(|(k, _)| *k == "name" || *k == "generateName")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    if kept.is_empty() {
        return true_with(w, path, why);
    }
    let mut trimmed = Map::new();
    trimmed.insert("type".into(), Value::String("object".into()));
    let mut kept = kept;
    for (name, p) in kept.iter_mut() {
        // Defaults are forbidden in top-level metadata; anything else about the name stays.
        if let Some(pm) = p.as_object_mut()
            && pm.shift_remove("default").is_some()
        {
            w.record(
                &child(&key(path, "properties", name), "default"),
                "removed",
                "v1 forbids defaults in metadata",
            );
        }
    }
    trimmed.insert("properties".into(), Value::Object(kept));
    if *m != trimmed {
        *m = trimmed;
        w.record(path, "reduced to name and generateName", why);
    }
    false
}

/// `type: object` plus restrictions on name and generateName, and nothing else.
fn allowed_metadata(m: &Map<String, Value>) -> bool {
    let names_only = |p: &Value| {
        p.as_object().is_some_and(|p| {
            p.iter()
                .all(|(k, v)| (k == "name" || k == "generateName") && v.get("default").is_none())
        })
    };
    type_of(m) == Some("object")
        && m.iter()
            .all(|(k, v)| k == "type" || (k == "properties" && names_only(v)))
}

fn true_with(w: &mut Walker<'_>, path: &str, why: &str) -> bool {
    w.record(path, "removed", why);
    true
}

/// The one JSON type shared by every enum value, if there is one.
fn enum_type(m: &Map<String, Value>) -> Option<&'static str> {
    let values = m.get("enum")?.as_array()?;
    let first = values.first()?;
    let t = match first {
        Value::String(_) => "string",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        _ => return None,
    };
    let same = values.iter().all(|v| match t {
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "integer" => v.is_i64() || v.is_u64(),
        _ => v.is_number(),
    });
    same.then_some(t)
}

#[cfg(test)]
mod tests;
