//! Variants of a real CRD schema, one per change class of the CRD upgrade safety rules, each
//! aimed at a field the sample objects actually set, so that the change matters to them: a
//! maximum just below a sample's value, an enum without the sample's value, a rule the sample
//! fails, ... Pure: the differential test sends the variants to the API server.

use serde_json::{Map, Value, json};

/// One changed schema of a version.
pub struct Variant {
    /// The change class (`TypeChanged`, `CelRuleFails`, ...).
    pub class: &'static str,
    /// The field the change is aimed at, in field notation.
    pub field: String,
    /// The version's new `openAPIV3Schema`.
    pub schema: Value,
}

/// A schema node the samples reach, with the value the first sample holding it has there.
#[derive(Clone)]
struct Spot {
    /// JSON pointer of the node in the schema.
    pointer: String,
    /// Where the value sits in the object (`spec.size`, `spec.list[0]`).
    field: String,
    value: Value,
    /// The property name and the pointer of the object node holding it, when the node is a
    /// declared property.
    property: Option<(String, String)>,
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn is_true(node: &Value, key: &str) -> bool {
    node.get(key) == Some(&Value::Bool(true))
}

/// Every node the samples reach along the structural spine (no deeper than `depth`).
fn spots(schema: &Value, samples: &[Value]) -> Vec<Spot> {
    let mut out: Vec<Spot> = Vec::new();
    for sample in samples {
        let Some(fields) = sample.as_object() else {
            continue;
        };
        for (key, value) in fields {
            if matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            if schema["properties"].get(key).is_some() {
                let pointer = format!("/properties/{}", escape_pointer(key));
                walk(
                    schema,
                    &pointer,
                    key,
                    value,
                    Some((key.clone(), String::new())),
                    0,
                    &mut out,
                );
            }
        }
    }
    out
}

fn walk(
    root: &Value,
    pointer: &str,
    field: &str,
    value: &Value,
    property: Option<(String, String)>,
    depth: usize,
    out: &mut Vec<Spot>,
) {
    let Some(node) = root.pointer(pointer) else {
        return;
    };
    if depth > 12 || out.iter().any(|s| s.pointer == pointer) {
        return;
    }
    out.push(Spot {
        pointer: pointer.to_string(),
        field: field.to_string(),
        value: value.clone(),
        property,
    });
    match value {
        Value::Object(fields) => {
            for (key, child) in fields {
                if node["properties"].get(key).is_some() {
                    let at = format!("{pointer}/properties/{}", escape_pointer(key));
                    let prop = Some((key.clone(), pointer.to_string()));
                    walk(
                        root,
                        &at,
                        &format!("{field}.{key}"),
                        child,
                        prop,
                        depth + 1,
                        out,
                    );
                } else if node["additionalProperties"].is_object() {
                    let at = format!("{pointer}/additionalProperties");
                    walk(
                        root,
                        &at,
                        &format!("{field}[{key}]"),
                        child,
                        None,
                        depth + 1,
                        out,
                    );
                }
            }
        }
        Value::Array(items) => {
            if let Some(first) = items.first()
                && node["items"].is_object()
            {
                let at = format!("{pointer}/items");
                walk(
                    root,
                    &at,
                    &format!("{field}[0]"),
                    first,
                    None,
                    depth + 1,
                    out,
                );
            }
        }
        _ => {}
    }
}

fn typed(node: &Value) -> &str {
    if is_true(node, "x-kubernetes-int-or-string") {
        return "int-or-string";
    }
    node["type"].as_str().unwrap_or("")
}

/// A plain string field with no constraint that a changed value could trip over.
fn unconstrained_string(node: &Value) -> bool {
    typed(node) == "string"
        && [
            "enum",
            "pattern",
            "format",
            "minLength",
            "maxLength",
            "default",
        ]
        .iter()
        .all(|k| node.get(*k).is_none())
}

/// The parent of the property has no junctors, which would also name the property.
fn removable(schema: &Value, parent: &str) -> bool {
    let parent = schema.pointer(parent).unwrap_or(schema);
    ["allOf", "anyOf", "oneOf", "not"]
        .iter()
        .all(|k| parent.get(*k).is_none())
}

/// A CEL identifier for a property, or None when it needs escaping.
fn identifier(name: &str) -> Option<&str> {
    let reserved = [
        "namespace",
        "in",
        "as",
        "if",
        "for",
        "var",
        "let",
        "null",
        "true",
        "false",
    ];
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !reserved.contains(&name);
    ok.then_some(name)
}

fn cel_string(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

struct Builder<'a> {
    schema: &'a Value,
    out: Vec<Variant>,
}

impl Builder<'_> {
    fn add(&mut self, class: &'static str, field: &str, edit: impl FnOnce(&mut Value) -> bool) {
        let mut schema = self.schema.clone();
        if edit(&mut schema) && schema != *self.schema {
            self.out.push(Variant {
                class,
                field: field.to_string(),
                schema,
            });
        }
    }
}

fn node_mut<'a>(schema: &'a mut Value, pointer: &str) -> &'a mut Map<String, Value> {
    schema
        .pointer_mut(pointer)
        .and_then(Value::as_object_mut)
        .expect("a spot points at a schema object")
}

fn drop_keys(node: &mut Map<String, Value>, keys: &[&str]) {
    for k in keys {
        node.shift_remove(*k);
    }
}

/// One variant per change class that the samples make meaningful, plus the unchanged schema.
pub fn variants(schema: &Value, samples: &[Value]) -> Vec<Variant> {
    let spots = spots(schema, samples);
    let mut b = Builder {
        schema,
        out: vec![Variant {
            class: "Unchanged",
            field: String::new(),
            schema: schema.clone(),
        }],
    };
    let find = |want: &dyn Fn(&Spot, &Value) -> bool| -> Option<Spot> {
        spots
            .iter()
            .find(|s| schema.pointer(&s.pointer).is_some_and(|n| want(s, n)))
            .cloned()
    };
    let string_spot =
        find(&|s, n| typed(n) == "string" && s.value.as_str().is_some_and(|t| !t.is_empty()));
    let number_spot =
        find(&|s, n| matches!(typed(n), "integer" | "number") && s.value.as_i64().is_some());

    if let Some(s) = &string_spot {
        b.add("TypeChanged", &s.field, |v| {
            let n = node_mut(v, &s.pointer);
            drop_keys(
                n,
                &[
                    "enum",
                    "default",
                    "format",
                    "pattern",
                    "maxLength",
                    "minLength",
                ],
            );
            n.insert("type".into(), json!("integer"));
            true
        });
        let length = s.value.as_str().unwrap_or_default().chars().count() as i64;
        b.add("MaxLengthTightened", &s.field, |v| {
            let n = node_mut(v, &s.pointer);
            drop_keys(n, &["default", "minLength", "enum"]);
            n.insert("maxLength".into(), json!(length - 1));
            true
        });
        b.add("MinLengthTightened", &s.field, |v| {
            let n = node_mut(v, &s.pointer);
            drop_keys(n, &["default", "maxLength", "enum"]);
            n.insert("minLength".into(), json!(length + 1));
            true
        });
        b.add("PatternChanged", &s.field, |v| {
            let n = node_mut(v, &s.pointer);
            drop_keys(n, &["default", "enum"]);
            n.insert("pattern".into(), json!("^windlass-never-matches$"));
            true
        });
        b.add("FormatChanged", &s.field, |v| {
            let n = node_mut(v, &s.pointer);
            drop_keys(n, &["default", "enum", "pattern"]);
            n.insert("format".into(), json!("uuid"));
            true
        });
    }
    if let Some(s) = find(&|s, n| {
        typed(n) == "string" && n["enum"].as_array().is_some_and(|e| e.contains(&s.value))
    }) {
        b.add("EnumValuesRemoved", &s.field, |v| {
            let n = node_mut(v, &s.pointer);
            let mut kept: Vec<Value> = n["enum"].as_array().cloned().unwrap_or_default();
            kept.retain(|e| *e != s.value);
            if kept.is_empty() {
                kept.push(json!("windlass-only"));
            }
            n.shift_remove("default");
            n.insert("enum".into(), Value::Array(kept));
            true
        });
    }
    if let Some(s) = find(&|s, n| unconstrained_string(n) && s.value.is_string()) {
        b.add("EnumAdded", &s.field, |v| {
            node_mut(v, &s.pointer).insert("enum".into(), json!(["windlass-only"]));
            true
        });
    }
    if let Some(s) = &number_spot {
        let value = s.value.as_i64().unwrap_or_default();
        b.add("MaximumTightened", &s.field, |v| {
            let n = node_mut(v, &s.pointer);
            drop_keys(n, &["default", "minimum", "exclusiveMaximum", "enum"]);
            n.insert("maximum".into(), json!(value - 1));
            true
        });
        b.add("MaximumTightened(exclusive)", &s.field, |v| {
            let n = node_mut(v, &s.pointer);
            drop_keys(n, &["default", "minimum", "enum"]);
            n.insert("maximum".into(), json!(value));
            n.insert("exclusiveMaximum".into(), json!(true));
            true
        });
        b.add("MinimumTightened", &s.field, |v| {
            let n = node_mut(v, &s.pointer);
            drop_keys(n, &["default", "maximum", "exclusiveMinimum", "enum"]);
            n.insert("minimum".into(), json!(value + 1));
            true
        });
        b.add("MultipleOfChanged", &s.field, |v| {
            let n = node_mut(v, &s.pointer);
            drop_keys(n, &["default", "enum"]);
            n.insert("multipleOf".into(), json!(value.unsigned_abs().max(1) + 1));
            true
        });
    }
    if let Some(s) =
        find(&|s, n| typed(n) == "array" && s.value.as_array().is_some_and(|a| !a.is_empty()))
    {
        let count = s.value.as_array().map_or(0, Vec::len) as i64;
        b.add("MaxItemsTightened", &s.field, |v| {
            let n = node_mut(v, &s.pointer);
            drop_keys(n, &["default", "minItems"]);
            n.insert("maxItems".into(), json!(count - 1));
            true
        });
        b.add("MinItemsTightened", &s.field, |v| {
            let n = node_mut(v, &s.pointer);
            drop_keys(n, &["default", "maxItems"]);
            n.insert("minItems".into(), json!(count + 1));
            true
        });
    }
    if let Some(s) = find(&|s, n| {
        typed(n) == "array"
            && n["items"]["type"].is_string()
            && n.get("x-kubernetes-list-type").is_none()
            && s.value
                .as_array()
                .is_some_and(|a| !a.is_empty() && a.iter().all(|i| !i.is_object()))
    }) {
        b.add("ListTypeChanged", &s.field, |v| {
            let n = node_mut(v, &s.pointer);
            n.insert("x-kubernetes-list-type".into(), json!("set"));
            true
        });
    }
    if let Some(s) =
        find(&|s, n| typed(n) == "object" && s.value.as_object().is_some_and(|o| !o.is_empty()))
    {
        let count = s.value.as_object().map_or(0, Map::len) as i64;
        b.add("MaxPropertiesTightened", &s.field, |v| {
            let n = node_mut(v, &s.pointer);
            drop_keys(n, &["default", "minProperties"]);
            n.insert("maxProperties".into(), json!(count - 1));
            true
        });
        b.add("MinPropertiesTightened", &s.field, |v| {
            let n = node_mut(v, &s.pointer);
            drop_keys(n, &["default", "maxProperties"]);
            n.insert("minProperties".into(), json!(count + 1));
            true
        });
    }
    if let Some(s) = find(&|s, _| {
        s.property
            .as_ref()
            .is_some_and(|(_, parent)| !parent.is_empty() && removable(schema, parent))
    }) {
        let (name, parent) = s.property.clone().expect("found with a property");
        b.add("FieldRemoved", &s.field, |v| {
            let p = node_mut(v, &parent);
            if let Some(props) = p.get_mut("properties").and_then(Value::as_object_mut) {
                props.shift_remove(&name);
            }
            if let Some(required) = p.get_mut("required").and_then(Value::as_array_mut) {
                required.retain(|r| r.as_str() != Some(&name));
            }
            true
        });
    }
    // A declared property a sample leaves unset: required, defaulted, or tested with `has`.
    let unset = spots.iter().find_map(|s| {
        let node = schema.pointer(&s.pointer)?;
        let set = s.value.as_object()?;
        let (name, child) = node["properties"].as_object()?.iter().find(|(k, c)| {
            !set.contains_key(*k) && unconstrained_string(c) && identifier(k).is_some()
        })?;
        Some((s.clone(), name.clone(), child.clone()))
    });
    if let Some((s, name, _)) = &unset {
        let field = format!("{}.{name}", s.field);
        b.add("RequiredFieldAdded", &field, |v| {
            let n = node_mut(v, &s.pointer);
            let required = n.entry("required").or_insert_with(|| json!([]));
            if let Some(list) = required.as_array_mut() {
                list.push(json!(name));
            }
            true
        });
        b.add("DefaultAdded", &field, |v| {
            let n = node_mut(
                v,
                &format!("{}/properties/{}", s.pointer, escape_pointer(name)),
            );
            n.insert("default".into(), json!("windlass-default"));
            true
        });
        b.add("CelRuleFails(has)", &field, |v| {
            add_rule(
                node_mut(v, &s.pointer),
                json!({"rule": format!("has(self.{name})")}),
            );
            true
        });
    }
    if let Some(s) =
        find(&|s, n| is_true(n, "x-kubernetes-preserve-unknown-fields") && s.value.is_object())
    {
        b.add("UnknownFieldsNoLongerPreserved", &s.field, |v| {
            node_mut(v, &s.pointer).shift_remove("x-kubernetes-preserve-unknown-fields");
            true
        });
    }
    if let Some(s) = find(&|s, n| is_true(n, "nullable") && s.value.is_null()) {
        b.add("NullableRemoved", &s.field, |v| {
            node_mut(v, &s.pointer).shift_remove("nullable");
            true
        });
    }
    cel_variants(&mut b, &spots, schema);
    b.out
}

fn add_rule(node: &mut Map<String, Value>, rule: Value) {
    let rules = node
        .entry("x-kubernetes-validations")
        .or_insert_with(|| json!([]));
    if let Some(list) = rules.as_array_mut() {
        list.push(rule);
    }
}

/// Rules on the object node that holds a string property the samples set: one that the first
/// sample passes (and others may not), one that fails with a message expression, one with the
/// string library, one at the root, and one using a library windlass does not implement.
fn cel_variants(b: &mut Builder<'_>, spots: &[Spot], schema: &Value) {
    let holder = spots.iter().find_map(|s| {
        let (name, parent) = s.property.as_ref()?;
        let node = schema.pointer(&s.pointer)?;
        let text = s
            .value
            .as_str()
            .filter(|t| !t.is_empty() && t.len() < 200)?;
        (typed(node) == "string" && identifier(name).is_some() && !parent.is_empty()).then(|| {
            (
                parent.clone(),
                name.clone(),
                text.to_string(),
                s.field.clone(),
            )
        })
    });
    if let Some((parent, name, text, field)) = holder {
        let at = |b: &mut Builder<'_>, class: &'static str, rule: Value| {
            b.add(class, &field, |v| {
                add_rule(node_mut(v, &parent), rule);
                true
            });
        };
        at(
            b,
            "CelRuleEquality",
            json!({"rule": format!("!has(self.{name}) || self.{name} == {}", cel_string(&text))}),
        );
        at(
            b,
            "CelRuleFails(messageExpression)",
            json!({"rule": format!("!has(self.{name}) || size(self.{name}) < {}", text.chars().count()),
                   // A constant: the API server refuses message expressions it estimates as
                   // costly, and a string field below a list of unknown length is.
                   "messageExpression": format!("'{name} is too long for the new schema'")}),
        );
        let first: String = text.chars().take(1).collect();
        at(
            b,
            "CelRuleStringLibrary",
            json!({"rule": format!(
                "!has(self.{name}) || (self.{name}.startsWith({}) && self.{name}.lowerAscii().upperAscii() == self.{name}.upperAscii() && self.{name}.split('').size() >= 1)",
                cel_string(&first)
            )}),
        );
        at(
            b,
            "CelRuleUnimplemented",
            json!({"rule": format!("!has(self.{name}) || isURL(self.{name})")}),
        );
    }
    b.add("CelRuleFails(root)", "metadata.name", |v| {
        if let Some(root) = v.as_object_mut() {
            add_rule(
                root,
                json!({"rule": "self.metadata.name.startsWith('windlass-never')",
                                  "message": "names must start with windlass-never"}),
            );
        }
        true
    });
}
