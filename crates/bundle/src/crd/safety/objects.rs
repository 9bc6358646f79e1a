//! The existing custom resources under the new schema: each object is decoded as the API server
//! will read it once the new CRD is in place (pruned, nulls dropped, defaulted), then validated
//! against the schema and its `x-kubernetes-validations` rules. A problem the object already has
//! under the live schema is ratcheted: reported, not blocking.

use std::collections::HashSet;

use serde_json::Value;

use super::cel::{RuleFailure, Rules};
use super::decode::decode;
use super::finding::{Violation, ViolationKind};
use super::validate::{FieldError, Validator};
use super::versions::{version_schema, versions_to_check};

/// Reuses compiled patterns and rules across objects and CRDs.
#[derive(Debug, Default)]
pub(crate) struct ObjectChecker {
    validator: Validator,
    rules: Rules,
}

/// What one schema says about one object.
#[derive(Default)]
struct Verdicts {
    pruned: Vec<String>,
    errors: Vec<FieldError>,
    failures: Vec<RuleFailure>,
}

impl Verdicts {
    fn is_clean(&self) -> bool {
        self.pruned.is_empty() && self.errors.is_empty() && self.failures.is_empty()
    }
}

impl ObjectChecker {
    fn judge(&mut self, schema: &Value, object: &Value) -> Verdicts {
        let (decoded, pruned) = decode(schema, object);
        let errors = self.validator.validate_object(schema, &decoded);
        // The API server does not run the rules on an object of the wrong shape.
        let failures = if errors.iter().any(|e| e.kind.skips_rules()) {
            Vec::new()
        } else {
            self.rules.check(schema, &decoded)
        };
        Verdicts {
            pruned,
            errors,
            failures,
        }
    }

    /// Every finding about `existing` when `new` replaces `live`: objects of another group or
    /// kind, or of a version not served by both CRDs, are skipped.
    pub(crate) fn check(
        &mut self,
        crd: &str,
        live: &Value,
        new: &Value,
        existing: &[Value],
    ) -> Vec<Violation> {
        let mut out = Vec::new();
        let versions = versions_to_check(live, new);
        let group = new["spec"]["group"].as_str().unwrap_or_default();
        let kind = new["spec"]["names"]["kind"].as_str();
        for object in existing {
            let Some(version) = object_version(object, group) else {
                continue;
            };
            if !versions.iter().any(|v| v == version) {
                continue;
            }
            if let (Some(kind), Some(object_kind)) = (kind, object["kind"].as_str())
                && kind != object_kind
            {
                continue;
            }
            let Some(schema) = version_schema(new, version) else {
                continue;
            };
            let found = self.judge(schema, object);
            if found.is_clean() {
                continue;
            }
            let before = match version_schema(live, version) {
                Some(old) => self.judge(old, object),
                None => Verdicts::default(),
            };
            let base = Violation {
                object_kind: object["kind"].as_str().or(kind).map(str::to_string),
                object: Some(object_id(object)),
                namespace: object["metadata"]["namespace"]
                    .as_str()
                    .filter(|ns| !ns.is_empty())
                    .map(str::to_string),
                version: Some(version.to_string()),
                ..Violation::new(crd, ViolationKind::InvalidExistingObject, String::new())
            };
            report(&base, found, &before, &mut out);
        }
        out
    }
}

fn report(base: &Violation, found: Verdicts, before: &Verdicts, out: &mut Vec<Violation>) {
    let finding = |kind: ViolationKind, field: &str, message: String, ratcheted: bool| {
        let v = Violation {
            kind,
            verdict: kind.verdict(),
            field: Some(field.to_string()).filter(|f| !f.is_empty()),
            message,
            ..base.clone()
        };
        if ratcheted { v.ratchet() } else { v }
    };
    let old_pruned: HashSet<&String> = before.pruned.iter().collect();
    for path in &found.pruned {
        out.push(finding(
            ViolationKind::ExistingFieldPruned,
            path,
            "is not declared by the new schema and would be pruned (data loss)".into(),
            old_pruned.contains(path),
        ));
    }
    for error in found.errors {
        let ratcheted = before
            .errors
            .iter()
            .any(|e| e.path == error.path && e.message == error.message);
        out.push(finding(
            ViolationKind::InvalidExistingObject,
            &error.path,
            error.message,
            ratcheted,
        ));
    }
    for failure in found.failures {
        let ratcheted = failure.evaluated
            && before
                .failures
                .iter()
                .any(|f| f.evaluated && f.path == failure.path && f.rule == failure.rule);
        let kind = if failure.evaluated {
            ViolationKind::ExistingObjectFailsRule
        } else {
            ViolationKind::RuleNotEvaluated
        };
        let message = format!("{} (rule: {})", failure.message, failure.rule);
        out.push(finding(kind, &failure.path, message, ratcheted));
    }
}

/// The version of `object` when its apiVersion is `<group>/<version>`.
fn object_version<'a>(object: &'a Value, group: &str) -> Option<&'a str> {
    let (object_group, version) = object["apiVersion"].as_str()?.split_once('/')?;
    (object_group == group).then_some(version)
}

pub(crate) fn object_id(object: &Value) -> String {
    let name = object["metadata"]["name"].as_str().unwrap_or("<unnamed>");
    match object["metadata"]["namespace"].as_str() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_string(),
    }
}
