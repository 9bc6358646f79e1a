//! `x-kubernetes-validations` rules, evaluated on an existing custom resource as the API server
//! evaluates them when the object is created: `self` is the value of the schema node that holds
//! the rule (null values are not checked), transition rules (those that read `oldSelf`) are left
//! out unless `optionalOldSelf` is set, in which case `oldSelf` is `optional.none()`. A failed
//! rule reports its `message`, its `messageExpression`, or `failed rule: <rule>`, at the node's
//! path plus the rule's `fieldPath`.
//!
//! Differences from the API server, all towards saying "not evaluated" rather than guessing: no
//! cost budget, no static type check (an expression the API server would refuse at CRD write
//! time fails here at evaluation), and only the Kubernetes libraries in [`library`]; a rule that
//! does not compile or calls an unimplemented function is reported as not evaluated.

mod library;
mod quantity;
mod value;

use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::OptionalValue;
use cel::{Context, Env, ExecutionError, Program, Value as Cel};
use serde_json::{Map, Value};

use crate::crd::change::{child, element};
use crate::crd::schema::is_true;

/// One rule that did not pass on one value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RuleFailure {
    /// Field path in the object (`spec.replicas`), empty for the root.
    pub(crate) path: String,
    /// The rule as written.
    pub(crate) rule: String,
    pub(crate) message: String,
    /// False when the rule could not be checked (it does not compile, or calls a function
    /// windlass does not implement): `message` says why.
    pub(crate) evaluated: bool,
}

/// The evaluation environment and the rules compiled so far.
pub(crate) struct Rules {
    env: Arc<Env>,
    compiled: HashMap<String, Result<Arc<Program>, String>>,
    /// Whether the schema node at an address holds rules below it, for the schema of the
    /// current [`Rules::check`] call.
    below: HashMap<usize, bool>,
}

impl std::fmt::Debug for Rules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rules")
            .field("compiled", &self.compiled.len())
            .finish()
    }
}

impl Default for Rules {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether `schema` holds any rule, anywhere below.
pub(crate) fn has_rules(schema: &Value) -> bool {
    match schema {
        Value::Object(m) => m.contains_key("x-kubernetes-validations") || m.values().any(has_rules),
        Value::Array(items) => items.iter().any(has_rules),
        _ => false,
    }
}

impl Rules {
    pub(crate) fn new() -> Self {
        let mut env = Env::stdlib();
        // The extensions are written for this environment; a clash would be a programming
        // error caught by every test.
        env.add_extension(cel::extensions::strings)
            .expect("the strings extension registers");
        env.add_extension(cel::extensions::lists)
            .expect("the lists extension registers");
        env.add_extension(library::extension)
            .expect("the Kubernetes library registers");
        Rules {
            env: Arc::new(env),
            compiled: HashMap::new(),
            below: HashMap::new(),
        }
    }

    /// Every rule of `schema` (a version's `openAPIV3Schema`) that `object` (already decoded
    /// under that schema) does not pass.
    pub(crate) fn check(&mut self, schema: &Value, object: &Value) -> Vec<RuleFailure> {
        let mut out = Vec::new();
        self.below.clear();
        if self.has_rules(schema) {
            self.walk(schema.as_object(), object, "", true, &mut out);
        }
        self.below.clear();
        out
    }

    fn walk(
        &mut self,
        s: Option<&Map<String, Value>>,
        value: &Value,
        path: &str,
        resource: bool,
        out: &mut Vec<RuleFailure>,
    ) {
        let Some(s) = s else { return };
        if value.is_null() {
            return;
        }
        let resource = resource || is_true(s, "x-kubernetes-embedded-resource");
        let mut rules: Vec<&Value> = rules_of(s).collect();
        for nested in s
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(nested) = nested.as_object() {
                rules.extend(rules_of(nested));
            }
        }
        if !rules.is_empty() {
            let this = value::to_cel(value, Some(s), resource);
            for rule in rules {
                if let Some(failure) = self.evaluate(rule, &this, path) {
                    out.push(failure);
                }
            }
        }
        match value {
            Value::Object(fields) => {
                let properties = s.get("properties").and_then(Value::as_object);
                let extra = s.get("additionalProperties").filter(|a| a.is_object());
                for (key, v) in fields {
                    if resource && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                        continue;
                    }
                    if let Some(p) = properties.and_then(|p| p.get(key)) {
                        if self.has_rules(p) {
                            self.walk(p.as_object(), v, &child(path, key), false, out);
                        }
                    } else if let Some(extra) = extra
                        && properties.is_none()
                        && self.has_rules(extra)
                    {
                        self.walk(extra.as_object(), v, &element(path, key), false, out);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = s.get("items").filter(|i| self.has_rules(i)) {
                    for (i, v) in items.iter().enumerate() {
                        let at = element(path, &i.to_string());
                        self.walk(item_schema.as_object(), v, &at, false, out);
                    }
                }
            }
            _ => {}
        }
    }

    fn has_rules(&mut self, node: &Value) -> bool {
        let address = node as *const Value as usize;
        if let Some(known) = self.below.get(&address) {
            return *known;
        }
        let found = has_rules(node);
        self.below.insert(address, found);
        found
    }

    fn program(&mut self, source: &str) -> Result<Arc<Program>, String> {
        if let Some(compiled) = self.compiled.get(source) {
            return compiled.clone();
        }
        let compiled = self
            .env
            .compile(source)
            .map(Arc::new)
            .map_err(|e| e.to_string().replace('\n', " "));
        self.compiled.insert(source.to_string(), compiled.clone());
        compiled
    }

    /// The failure of one rule on `this`, or None when it passes or is not evaluated on
    /// creation.
    fn evaluate(&mut self, rule: &Value, this: &Cel, path: &str) -> Option<RuleFailure> {
        let source = rule.get("rule").and_then(Value::as_str)?.trim().to_string();
        let path = match rule.get("fieldPath").and_then(Value::as_str) {
            Some(field_path) => join_field_path(path, field_path),
            None => path.to_string(),
        };
        let failure = |message: String, evaluated: bool| {
            Some(RuleFailure {
                path: path.clone(),
                rule: source.clone(),
                message,
                evaluated,
            })
        };
        let program = match self.program(&source) {
            Ok(program) => program,
            Err(e) => return failure(format!("the rule does not compile: {e}"), false),
        };
        let references = program.references();
        let uses_old_self = references.has_variable("oldSelf");
        let optional_old_self = rule.get("optionalOldSelf").and_then(Value::as_bool) == Some(true);
        if uses_old_self && !optional_old_self {
            // A transition rule: nothing to compare with when the object is created.
            return None;
        }
        let functions: Vec<String> = references
            .functions()
            .iter()
            .map(|f| f.to_string())
            .collect();
        let mut context = Context::with_env(Arc::clone(&self.env));
        context.add_variable_from_value("self", this.clone());
        if uses_old_self {
            context
                .add_variable_from_value("oldSelf", Cel::Opaque(Arc::new(OptionalValue::none())));
        }
        match program.execute(&context) {
            Ok(Cel::Bool(true)) => None,
            Ok(Cel::Bool(false)) => failure(self.message(rule, &context, &source), true),
            Ok(other) => failure(format!("the rule returned {other:?}, not a boolean"), true),
            Err(ExecutionError::UndeclaredReference(name)) if functions.contains(&name) => failure(
                format!("the rule calls {name}, which windlass does not implement"),
                false,
            ),
            Err(e) => failure(
                format!("{e} evaluating rule: {}", error_subject(rule, &source)),
                true,
            ),
        }
    }

    /// The message a failed rule reports.
    fn message(&mut self, rule: &Value, context: &Context<'_, '_>, source: &str) -> String {
        if let Some(expression) = rule.get("messageExpression").and_then(Value::as_str)
            && let Ok(program) = self.program(expression)
            && let Ok(Cel::String(text)) = program.execute(context)
            && !text.trim().is_empty()
            && !text.contains('\n')
        {
            return text.trim().to_string();
        }
        match rule.get("message").and_then(Value::as_str).map(str::trim) {
            Some(message) if !message.is_empty() => message.to_string(),
            _ => format!("failed rule: {source}"),
        }
    }
}

fn rules_of(s: &Map<String, Value>) -> impl Iterator<Item = &Value> {
    s.get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// What an evaluation error names the rule by: its message when it has one.
fn error_subject<'a>(rule: &'a Value, source: &'a str) -> &'a str {
    rule.get("message")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .unwrap_or(source)
}

/// `path` plus a rule's `fieldPath` (`.spec.x`, `.labels['a.b']`), in the validator's notation.
fn join_field_path(path: &str, field_path: &str) -> String {
    let mut out = path.to_string();
    let mut rest = field_path.trim();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            out = child(&out, &r[..end]);
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix("['") {
            let Some(end) = r.find("']") else { break };
            out = element(&out, &r[..end]);
            rest = &r[end + 2..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = r.find(']') else { break };
            out = element(&out, &r[..end]);
            rest = &r[end + 1..];
        } else {
            out = child(&out, rest);
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::join_field_path;

    #[test]
    fn field_paths_join_in_kubernetes_notation() {
        assert_eq!(join_field_path("spec", ".replicas"), "spec.replicas");
        assert_eq!(join_field_path("", ".spec.a"), "spec.a");
        assert_eq!(
            join_field_path("spec", ".labels['a.b']"),
            "spec.labels[a.b]"
        );
        assert_eq!(join_field_path("spec", ".list[2].x"), "spec.list[2].x");
    }
}
