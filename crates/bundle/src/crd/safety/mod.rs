//! CRD upgrade safety: may a live CustomResourceDefinition be replaced by a new one?
//!
//! OLM v0's rules, on plain JSON (`apiextensions.k8s.io/v1`, the new CRD already converted):
//! - a version listed in the live CRD's `status.storedVersions` must still be in the new
//!   `spec.versions` (otherwise objects stored in it can no longer be read: data loss);
//! - `spec.scope` must not change (the API server refuses it anyway; saying why is kinder);
//! - every existing custom resource whose version is served by both the old and the new CRD must
//!   be valid under the new version's `openAPIV3Schema` ("updated validation is too restrictive").
//!
//! Pure code: the caller lists the custom resources and passes them in. The schema validator is
//! in [`validate`].

use std::fmt;

use serde_json::Value;

mod format;
pub mod validate;

pub use validate::{FieldError, validate};

/// Which rule a [`Violation`] breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ViolationKind {
    /// A version in the live `status.storedVersions` is missing from the new `spec.versions`.
    StoredVersionRemoved,
    /// `spec.scope` differs between the live and the new CRD.
    ScopeChanged,
    /// An existing custom resource fails the new schema of its version.
    InvalidExistingObject,
}

impl ViolationKind {
    /// CamelCase, usable as a condition or Event reason.
    pub fn reason(self) -> &'static str {
        match self {
            ViolationKind::StoredVersionRemoved => "StoredVersionRemoved",
            ViolationKind::ScopeChanged => "ScopeChanged",
            ViolationKind::InvalidExistingObject => "InvalidExistingObject",
        }
    }
}

/// One reason the new CRD must not replace the live one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The CRD's name, for example `databases.acme.windlass.dev`.
    pub crd: String,
    pub kind: ViolationKind,
    /// The custom resource's kind (`Database`), for [`ViolationKind::InvalidExistingObject`].
    pub object_kind: Option<String>,
    /// `namespace/name` (or `name` when cluster-scoped) of the custom resource.
    pub object: Option<String>,
    /// The API version (`v1`) concerned.
    pub version: Option<String>,
    /// Field path inside the custom resource, like `spec.replicas` or `spec.items[0].name`.
    pub field: Option<String>,
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ViolationKind::InvalidExistingObject => {
                write!(
                    f,
                    "{}: existing {} {}",
                    self.crd,
                    self.object_kind.as_deref().unwrap_or("object"),
                    self.object.as_deref().unwrap_or("<unnamed>")
                )?;
                if let Some(version) = &self.version {
                    write!(f, " ({version})")?;
                }
                write!(
                    f,
                    " is invalid under the new schema: {}: {}",
                    self.field.as_deref().unwrap_or("<root>"),
                    self.message
                )
            }
            ViolationKind::StoredVersionRemoved | ViolationKind::ScopeChanged => {
                write!(f, "{}: {}", self.crd, self.message)
            }
        }
    }
}

/// Every reason replacing `live` with `new` is unsafe; empty when it is safe. `existing` are the
/// custom resources as read from the API server (their `apiVersion` tells the version); objects
/// of another group or kind, or of a version not served by both CRDs, are not checked. A `live`
/// that is not an object (no CRD yet) makes creation, which is always safe.
pub fn check(live: &Value, new: &Value, existing: &[Value]) -> Vec<Violation> {
    let crd = crd_name(new, live);
    let mut violations = Vec::new();
    if !live.is_object() {
        return violations;
    }
    let new_versions = defined_versions(new);
    for stored in stored_versions(live) {
        if !new_versions.contains(&stored) {
            violations.push(Violation {
                crd: crd.clone(),
                kind: ViolationKind::StoredVersionRemoved,
                object_kind: None,
                object: None,
                version: Some(stored.clone()),
                field: None,
                message: format!(
                    "version {stored} is listed in status.storedVersions but the new definition \
                     drops it; objects stored as {stored} would become unreadable (migrate them \
                     and remove {stored} from status.storedVersions first)"
                ),
            });
        }
    }
    let (old_scope, new_scope) = (scope(live), scope(new));
    if old_scope != new_scope {
        violations.push(Violation {
            crd: crd.clone(),
            kind: ViolationKind::ScopeChanged,
            object_kind: None,
            object: None,
            version: None,
            field: Some("spec.scope".to_string()),
            message: format!(
                "scope would change from {old_scope} to {new_scope}; a CRD's scope cannot change"
            ),
        });
    }
    let versions = versions_to_check(live, new);
    let group = new["spec"]["group"].as_str().unwrap_or_default();
    let kind = new["spec"]["names"]["kind"].as_str();
    let mut validator = validate::Validator::new();
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
        for error in validator.validate_object(schema, object) {
            violations.push(Violation {
                crd: crd.clone(),
                kind: ViolationKind::InvalidExistingObject,
                object_kind: object["kind"].as_str().or(kind).map(str::to_string),
                object: Some(object_id(object)),
                version: Some(version.to_string()),
                field: Some(error.path).filter(|p| !p.is_empty()),
                message: error.message,
            });
        }
    }
    violations
}

/// Names of the versions with `served: true`, in definition order.
pub fn served_versions(crd: &Value) -> Vec<String> {
    versions(crd)
        .filter(|v| v["served"].as_bool() == Some(true))
        .filter_map(|v| v["name"].as_str().map(str::to_string))
        .collect()
}

/// `status.storedVersions` (empty when the CRD has no status yet).
pub fn stored_versions(crd: &Value) -> Vec<String> {
    crd["status"]["storedVersions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

/// Versions served by both CRDs, in the new CRD's order: the versions whose existing objects
/// [`check`] validates.
pub fn versions_to_check(live: &Value, new: &Value) -> Vec<String> {
    let old = served_versions(live);
    served_versions(new)
        .into_iter()
        .filter(|v| old.contains(v))
        .collect()
}

/// One line for a condition message: the first `max` violations and how many more there are.
pub fn summary(violations: &[Violation], max: usize) -> String {
    let mut out = violations
        .iter()
        .take(max.max(1))
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    let rest = violations.len().saturating_sub(max.max(1));
    if rest > 0 {
        out.push_str(&format!(" (and {rest} more)"));
    }
    out
}

fn versions(crd: &Value) -> impl Iterator<Item = &Value> {
    crd["spec"]["versions"].as_array().into_iter().flatten()
}

fn defined_versions(crd: &Value) -> Vec<String> {
    let mut names: Vec<String> = versions(crd)
        .filter_map(|v| v["name"].as_str().map(str::to_string))
        .collect();
    // apiextensions v1beta1's single `spec.version`, in case a caller passes one unconverted.
    if let Some(v) = crd["spec"]["version"].as_str() {
        names.push(v.to_string());
    }
    names
}

fn crd_name(new: &Value, live: &Value) -> String {
    new["metadata"]["name"]
        .as_str()
        .or(live["metadata"]["name"].as_str())
        .unwrap_or("<unnamed CRD>")
        .to_string()
}

fn scope(crd: &Value) -> &str {
    crd["spec"]["scope"]
        .as_str()
        .filter(|s| !s.is_empty())
        .unwrap_or("Namespaced")
}

/// The new CRD's schema of `version`: per-version, or the v1beta1 top-level one.
fn version_schema<'a>(crd: &'a Value, version: &str) -> Option<&'a Value> {
    let entry = versions(crd).find(|v| v["name"].as_str() == Some(version))?;
    let own = &entry["schema"]["openAPIV3Schema"];
    let shared = &crd["spec"]["validation"]["openAPIV3Schema"];
    [own, shared].into_iter().find(|s| s.is_object())
}

/// The version of `object` when its apiVersion is `<group>/<version>`.
fn object_version<'a>(object: &'a Value, group: &str) -> Option<&'a str> {
    let (object_group, version) = object["apiVersion"].as_str()?.split_once('/')?;
    (object_group == group).then_some(version)
}

fn object_id(object: &Value) -> String {
    let name = object["metadata"]["name"].as_str().unwrap_or("<unnamed>");
    match object["metadata"]["namespace"].as_str() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_string(),
    }
}

#[cfg(test)]
mod tests;
