//! A validator for the structural-schema subset of OpenAPI v3 that Kubernetes uses for custom
//! resources: value validation only. Unknown fields are ignored (the API server prunes them; that
//! is not an error), `metadata` is left to the API server except `metadata.name`, unknown formats
//! are accepted, and every error is collected with its field path, never only the first.
//!
//! Where the API server's behaviour is hard to reproduce exactly (regular-expression dialect,
//! `date-time` layouts) this validator leans towards accepting: a false alarm would block an
//! upgrade for nothing. `x-kubernetes-validations` (CEL) rules are evaluated by
//! [`super::cel`], pruning and defaulting by [`super::decode`].

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;

use regex::{Regex, RegexBuilder};
use serde_json::{Map, Value};

use crate::crd::change::{child, element};
use crate::crd::schema::{INT_OR_STRING, is_true as flag};

use super::json::{describe, is_integer, is_multiple, json_eq, num_cmp, preview};

/// One reason a value fails its schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// Kubernetes field path: `spec.replicas`, `spec.items[0]`, `spec.labels[app]`; empty for the
    /// value itself.
    pub path: String,
    pub kind: FieldErrorKind,
    pub message: String,
}

/// The kind of a [`FieldError`], as the API server classifies it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldErrorKind {
    /// Wrong type (`TypeInvalid`).
    Type,
    /// A required field is missing (`Required`).
    Required,
    /// Not one of the enum values (`NotSupported`).
    Enum,
    /// Longer than `maxLength` (`TooLong`).
    TooLong,
    /// More than `maxItems` or `maxProperties` (`TooMany`).
    TooMany,
    /// A key `additionalProperties: false` forbids (`Forbidden`).
    Forbidden,
    /// Any other violated constraint (`Invalid`).
    Invalid,
}

impl FieldErrorKind {
    /// The API server does not evaluate `x-kubernetes-validations` rules on an object that
    /// has one of these errors: the rules would see a shape they were not written for.
    pub fn skips_rules(self) -> bool {
        matches!(
            self,
            FieldErrorKind::Type
                | FieldErrorKind::Required
                | FieldErrorKind::Enum
                | FieldErrorKind::TooLong
                | FieldErrorKind::TooMany
        )
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "<root>"
        } else {
            &self.path
        };
        write!(f, "{path}: {}", self.message)
    }
}

/// Every error of `value` under `schema` (paths relative to `value`).
pub fn validate(schema: &Value, value: &Value) -> Vec<FieldError> {
    Validator::new().validate(schema, value)
}

/// A validator that remembers compiled `pattern`s between calls.
#[derive(Debug, Default)]
pub struct Validator {
    patterns: HashMap<String, Option<Regex>>,
}

impl Validator {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every error of `value` under `schema` (paths relative to `value`).
    pub fn validate(&mut self, schema: &Value, value: &Value) -> Vec<FieldError> {
        let mut errors = Vec::new();
        self.walk(schema, value, "", false, &mut errors);
        errors
    }

    /// Every error of a whole custom resource under its version's `openAPIV3Schema`:
    /// `metadata` is checked only for `name`.
    pub fn validate_object(&mut self, schema: &Value, object: &Value) -> Vec<FieldError> {
        let mut errors = Vec::new();
        self.walk(schema, object, "", true, &mut errors);
        errors
    }

    /// `resource`: `value` is a whole resource (the root, or an embedded resource), whose
    /// `metadata` the API server validates itself.
    fn walk(
        &mut self,
        schema: &Value,
        value: &Value,
        path: &str,
        resource: bool,
        errors: &mut Vec<FieldError>,
    ) {
        let Some(s) = schema.as_object() else {
            return;
        };
        let mut fail = |kind, message: String| errors.push(error(path, kind, message));
        let int_or_string = flag(s, INT_OR_STRING);
        let ty = s
            .get("type")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty());
        if value.is_null() {
            // Kept when nullable; replaced by the default when there is one.
            if flag(s, "nullable") || s.contains_key("default") {
                return;
            }
            if int_or_string || ty.is_some() {
                fail(
                    FieldErrorKind::Type,
                    format!(
                        "must be of type {}, got null",
                        if int_or_string {
                            "integer or string"
                        } else {
                            ty.unwrap_or_default()
                        }
                    ),
                );
                return;
            }
        }
        if int_or_string {
            if !(is_integer(value) || value.is_string()) {
                fail(
                    FieldErrorKind::Type,
                    format!("must be an integer or a string, got {}", describe(value)),
                );
                return;
            }
        } else if let Some(ty) = ty
            && !type_matches(ty, value)
        {
            fail(
                FieldErrorKind::Type,
                format!("must be of type {ty}, got {}", describe(value)),
            );
            return;
        }
        if let Some(allowed) = s.get("enum").and_then(Value::as_array)
            && !allowed.iter().any(|a| json_eq(a, value))
        {
            let list: Vec<String> = allowed.iter().map(preview).collect();
            fail(
                FieldErrorKind::Enum,
                format!("must be one of {}, got {}", list.join(", "), preview(value)),
            );
        }
        match value {
            Value::Number(_) => number_checks(s, value, &mut fail),
            Value::String(text) => self.string_checks(s, text, &mut fail),
            Value::Array(items) => {
                count_checks(s, items.len(), "minItems", "maxItems", "items", &mut fail);
                if let Some(item_schema) = s.get("items").filter(|i| i.is_object()) {
                    for (i, item) in items.iter().enumerate() {
                        let item_path = element(path, &i.to_string());
                        self.walk(item_schema, item, &item_path, false, errors);
                    }
                }
                list_type_checks(s, items, path, errors);
            }
            Value::Object(map) => self.object_checks(s, map, path, resource, errors),
            Value::Bool(_) | Value::Null => {}
        }
        self.junctors(s, value, path, resource, errors);
    }

    fn object_checks(
        &mut self,
        s: &Map<String, Value>,
        map: &Map<String, Value>,
        path: &str,
        resource: bool,
        errors: &mut Vec<FieldError>,
    ) {
        let mut fail = |kind, message: String| errors.push(error(path, kind, message));
        count_checks(
            s,
            map.len(),
            "minProperties",
            "maxProperties",
            "properties",
            &mut fail,
        );
        let properties = s.get("properties").and_then(Value::as_object);
        let resource = resource || flag(s, "x-kubernetes-embedded-resource");
        if flag(s, "x-kubernetes-embedded-resource") {
            for key in ["apiVersion", "kind"] {
                if map
                    .get(key)
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    errors.push(error(
                        &child(path, key),
                        FieldErrorKind::Required,
                        "is required (embedded resource)".into(),
                    ));
                }
            }
        }
        for key in s
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if resource && key == "metadata" || map.contains_key(key) {
                continue;
            }
            // The API server fills in a missing field that has a default when it reads the
            // object, so the object as read is valid.
            let defaulted = properties
                .and_then(|p| p.get(key))
                .is_some_and(|p| p.get("default").is_some());
            if !defaulted {
                errors.push(error(
                    &child(path, key),
                    FieldErrorKind::Required,
                    "is required".into(),
                ));
            }
        }
        let forbids_others = s.get("additionalProperties") == Some(&Value::Bool(false));
        for (key, value) in map {
            let child_path = child(path, key);
            if let Some(child_schema) = properties.and_then(|p| p.get(key)) {
                if resource && key == "metadata" {
                    let name_schema = &child_schema["properties"]["name"];
                    if let Some(name) = value.get("name") {
                        let name_path = child(&child_path, "name");
                        self.walk(name_schema, name, &name_path, false, errors);
                    }
                } else {
                    self.walk(child_schema, value, &child_path, false, errors);
                }
            } else if let Some(extra) = s.get("additionalProperties").filter(|a| a.is_object()) {
                self.walk(extra, value, &element(path, key), false, errors);
            } else if forbids_others && !(resource && RESOURCE_FIELDS.contains(&key.as_str())) {
                // Pruning keeps such a key (it knows no schema to prune by); validation refuses it.
                errors.push(error(
                    &child_path,
                    FieldErrorKind::Forbidden,
                    "is a forbidden property (additionalProperties: false)".into(),
                ));
            }
        }
    }

    fn string_checks(
        &mut self,
        s: &Map<String, Value>,
        text: &str,
        fail: &mut impl FnMut(FieldErrorKind, String),
    ) {
        let length = text.chars().count();
        if let Some(min) = uint(s, "minLength")
            && (length as u64) < min
        {
            fail(
                FieldErrorKind::Invalid,
                format!("must be at least {min} characters long, got {length}"),
            );
        }
        if let Some(max) = uint(s, "maxLength")
            && (length as u64) > max
        {
            fail(
                FieldErrorKind::TooLong,
                format!("must be at most {max} characters long, got {length}"),
            );
        }
        if let Some(pattern) = s.get("pattern").and_then(Value::as_str)
            && let Some(re) = self.regex(pattern)
            && !re.is_match(text)
        {
            fail(
                FieldErrorKind::Invalid,
                format!(
                    "must match the pattern {pattern}, got {}",
                    preview(&Value::String(text.into()))
                ),
            );
        }
        if let Some(format) = s.get("format").and_then(Value::as_str)
            && let Some(false) = super::format::check(format, text)
        {
            fail(
                FieldErrorKind::Invalid,
                format!(
                    "must be a valid {format}, got {}",
                    preview(&Value::String(text.into()))
                ),
            );
        }
    }

    fn junctors(
        &mut self,
        s: &Map<String, Value>,
        value: &Value,
        path: &str,
        resource: bool,
        errors: &mut Vec<FieldError>,
    ) {
        for sub in schemas(s, "allOf") {
            self.walk(sub, value, path, resource, errors);
        }
        let any_of = schemas(s, "anyOf");
        if !any_of.is_empty() {
            let mut first = Vec::new();
            let mut matched = false;
            for sub in any_of {
                let found = self.sub_errors(sub, value, path, resource);
                if found.is_empty() {
                    matched = true;
                    break;
                }
                if first.is_empty() {
                    first = found;
                }
            }
            if !matched {
                errors.push(error(
                    path,
                    FieldErrorKind::Invalid,
                    format!(
                        "must match at least one of the anyOf schemas ({})",
                        join(&first)
                    ),
                ));
            }
        }
        let one_of = schemas(s, "oneOf");
        if !one_of.is_empty() {
            let matches = one_of
                .iter()
                .filter(|sub| self.sub_errors(sub, value, path, resource).is_empty())
                .count();
            if matches != 1 {
                errors.push(error(
                    path,
                    FieldErrorKind::Invalid,
                    format!("must match exactly one of the oneOf schemas, matches {matches}"),
                ));
            }
        }
        if let Some(not) = s.get("not").filter(|n| n.is_object())
            && self.sub_errors(not, value, path, resource).is_empty()
        {
            errors.push(error(
                path,
                FieldErrorKind::Invalid,
                "must not match the schema in not".into(),
            ));
        }
    }

    fn sub_errors(
        &mut self,
        schema: &Value,
        value: &Value,
        path: &str,
        resource: bool,
    ) -> Vec<FieldError> {
        let mut errors = Vec::new();
        self.walk(schema, value, path, resource, &mut errors);
        errors
    }

    fn regex(&mut self, pattern: &str) -> Option<&Regex> {
        self.patterns
            .entry(pattern.to_string())
            .or_insert_with(|| {
                // A pattern the regex engine cannot take was refused by the API server when the
                // CRD was written, or uses a construct we read differently: no verdict.
                RegexBuilder::new(pattern)
                    .size_limit(1 << 20)
                    .dfa_size_limit(1 << 20)
                    .build()
                    .ok()
            })
            .as_ref()
    }
}

fn number_checks(
    s: &Map<String, Value>,
    value: &Value,
    fail: &mut impl FnMut(FieldErrorKind, String),
) {
    let exclusive = |key| flag(s, key);
    if let Some(max) = s.get("maximum").filter(|m| m.is_number()) {
        let order = num_cmp(value, max);
        if exclusive("exclusiveMaximum") && order != Some(Ordering::Less) {
            fail(
                FieldErrorKind::Invalid,
                format!("must be < {max}, got {value}"),
            );
        } else if order == Some(Ordering::Greater) {
            fail(
                FieldErrorKind::Invalid,
                format!("must be <= {max}, got {value}"),
            );
        }
    }
    if let Some(min) = s.get("minimum").filter(|m| m.is_number()) {
        let order = num_cmp(value, min);
        if exclusive("exclusiveMinimum") && order != Some(Ordering::Greater) {
            fail(
                FieldErrorKind::Invalid,
                format!("must be > {min}, got {value}"),
            );
        } else if order == Some(Ordering::Less) {
            fail(
                FieldErrorKind::Invalid,
                format!("must be >= {min}, got {value}"),
            );
        }
    }
    if let Some(step) = s.get("multipleOf").filter(|m| m.is_number())
        && !is_multiple(value, step)
    {
        fail(
            FieldErrorKind::Invalid,
            format!("must be a multiple of {step}, got {value}"),
        );
    }
}

fn count_checks(
    s: &Map<String, Value>,
    count: usize,
    min_key: &str,
    max_key: &str,
    what: &str,
    fail: &mut impl FnMut(FieldErrorKind, String),
) {
    let count = count as u64;
    if let Some(min) = uint(s, min_key)
        && count < min
    {
        fail(
            FieldErrorKind::Invalid,
            format!("must have at least {min} {what}, got {count}"),
        );
    }
    if let Some(max) = uint(s, max_key)
        && count > max
    {
        fail(
            FieldErrorKind::TooMany,
            format!("must have at most {max} {what}, got {count}"),
        );
    }
}

/// `x-kubernetes-list-type`: `set` items and `map` keys must be unique.
fn list_type_checks(
    s: &Map<String, Value>,
    items: &[Value],
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => {
            for (i, item) in items.iter().enumerate() {
                if items[..i].iter().any(|earlier| json_eq(earlier, item)) {
                    errors.push(error(
                        &element(path, &i.to_string()),
                        FieldErrorKind::Invalid,
                        format!("duplicate value {} in a list of type set", preview(item)),
                    ));
                }
            }
        }
        Some("map") => {
            let keys: Vec<&str> = s
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if keys.is_empty() {
                return;
            }
            let key_of = |item: &Value| -> Option<Vec<Value>> {
                keys.iter().map(|k| item.get(*k).cloned()).collect()
            };
            for (i, item) in items.iter().enumerate() {
                let Some(key) = key_of(item) else { continue };
                let duplicate = items[..i].iter().any(|earlier| {
                    key_of(earlier).is_some_and(|k| k.iter().zip(&key).all(|(a, b)| json_eq(a, b)))
                });
                if duplicate {
                    let shown: Vec<String> = keys
                        .iter()
                        .zip(&key)
                        .map(|(k, v)| format!("{k}={}", preview(v)))
                        .collect();
                    errors.push(error(
                        &element(path, &i.to_string()),
                        FieldErrorKind::Invalid,
                        format!(
                            "duplicate entry with key {} in a list of type map",
                            shown.join(",")
                        ),
                    ));
                }
            }
        }
        _ => {}
    }
}

fn schemas<'a>(s: &'a Map<String, Value>, key: &str) -> Vec<&'a Value> {
    s.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter(|v| v.is_object()).collect())
        .unwrap_or_default()
}

fn error(path: &str, kind: FieldErrorKind, message: String) -> FieldError {
    FieldError {
        path: path.to_string(),
        kind,
        message,
    }
}

/// A resource's own fields, which `additionalProperties: false` does not forbid.
const RESOURCE_FIELDS: &[&str] = &["apiVersion", "kind", "metadata"];

fn join(errors: &[FieldError]) -> String {
    let mut shown: Vec<String> = errors.iter().take(3).map(ToString::to_string).collect();
    if errors.len() > 3 {
        shown.push(format!("and {} more", errors.len() - 3));
    }
    shown.join("; ")
}

fn uint(s: &Map<String, Value>, key: &str) -> Option<u64> {
    let v = s.get(key)?;
    v.as_u64()
        .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
}

fn type_matches(ty: &str, value: &Value) -> bool {
    match ty {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "integer" => is_integer(value),
        "number" => value.is_number(),
        // Not a structural type: the API server refused the CRD; no verdict here.
        _ => true,
    }
}
