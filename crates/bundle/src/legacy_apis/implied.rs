//! Manifests that name a kind but no `apiVersion`. Where only one API serves the kind (the
//! core kinds below) the version can only be that one, and the manifest is applied with it,
//! the change recorded like any other conversion. Anything else is refused: guessing a group
//! would apply something the author may not have meant.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::load::Manifest;

/// Kinds served by the core API (`v1`) and by no other built-in API.
const CORE_V1_KINDS: &[&str] = &[
    "ConfigMap",
    "Endpoints",
    "LimitRange",
    "PersistentVolumeClaim",
    "Pod",
    "ReplicationController",
    "ResourceQuota",
    "Secret",
    "Service",
    "ServiceAccount",
];

/// The kinds the bundle's own CustomResourceDefinitions define: a bundle may define a
/// `Service` of its own (Knative does), and then a bare `Service` is ambiguous.
pub fn kinds_defined_by_crds<'m>(
    manifests: impl Iterator<Item = &'m Manifest>,
) -> BTreeSet<String> {
    manifests
        .filter(|m| m.kind() == "CustomResourceDefinition")
        .filter_map(|m| m.object.pointer("/spec/names/kind").and_then(Value::as_str))
        .map(String::from)
        .collect()
}

/// The `apiVersion` a manifest of `kind` without one must mean, if only one API serves it.
pub fn implied_api_version(kind: &str, defined: &BTreeSet<String>) -> Option<&'static str> {
    (CORE_V1_KINDS.contains(&kind) && !defined.contains(kind)).then_some("v1")
}

/// Why a manifest of `kind` without `apiVersion` cannot be repaired.
pub fn missing_api_version_reason(kind: &str, defined: &BTreeSet<String>) -> String {
    if defined.contains(kind) {
        format!(
            "{kind} has no apiVersion, and the bundle defines a {kind} of its own besides the built-in one: which is meant cannot be told"
        )
    } else {
        format!(
            "{kind} has no apiVersion, and {kind} is not a kind only one API serves: the bundle must name its apiVersion"
        )
    }
}

/// Sets the implied `apiVersion`, recording the change; `None` when the object has one.
pub(super) fn repair(
    object: &Value,
    subject: &super::Subject<'_>,
    defined: &BTreeSet<String>,
) -> Option<Result<super::Converted, super::ConvertError>> {
    if !matches!(object.get("apiVersion"), None | Some(Value::Null)) {
        return None;
    }
    let Some(api_version) = implied_api_version(&subject.kind, defined) else {
        return Some(Err(subject.refuse(
            "apiVersion",
            missing_api_version_reason(&subject.kind, defined),
        )));
    };
    let mut out = object.as_object().cloned().unwrap_or_default();
    // apiVersion first, where people look for it.
    let mut repaired = serde_json::Map::with_capacity(out.len() + 1);
    repaired.insert("apiVersion".into(), Value::String(api_version.into()));
    out.remove("apiVersion");
    repaired.extend(out);
    let mut rec = crate::crd::Recorder::new(format!("{}/{}", subject.kind, subject.name));
    rec.record(
        "apiVersion",
        format!("set to {api_version}"),
        format!(
            "missing; only the core API serves {}, so {api_version} is the only version it can mean",
            subject.kind
        ),
    );
    Some(Ok(super::Converted {
        object: Value::Object(repaired),
        changes: rec.changes,
    }))
}
