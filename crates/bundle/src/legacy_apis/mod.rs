//! Objects of Kubernetes APIs that no longer exist (rbac v1beta1, policy v1beta1, ...), moved to
//! their current versions where the move is mechanical, and refused otherwise, naming the file,
//! kind and field, so that nothing of the bundle is applied. Objects that name a core kind but
//! no `apiVersion` are given the one version that kind has (see [`implied_api_version`]).

mod implied;
mod ingress;
mod webhooks;

use std::collections::BTreeSet;

pub use implied::{implied_api_version, kinds_defined_by_crds, missing_api_version_reason};

use serde_json::{Map, Value};

use crate::crd::{self, Change, ConvertError, Converted, Recorder};
use crate::load::Manifest;

/// Removed group/versions whose kinds keep the same fields in the current version.
const SAME_FIELDS: &[(&str, &[&str], &str)] = &[
    (
        "rbac.authorization.k8s.io/v1beta1",
        &["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"],
        "rbac.authorization.k8s.io/v1",
    ),
    (
        "rbac.authorization.k8s.io/v1alpha1",
        &["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"],
        "rbac.authorization.k8s.io/v1",
    ),
    (
        "scheduling.k8s.io/v1beta1",
        &["PriorityClass"],
        "scheduling.k8s.io/v1",
    ),
    (
        "scheduling.k8s.io/v1alpha1",
        &["PriorityClass"],
        "scheduling.k8s.io/v1",
    ),
    (
        "networking.k8s.io/v1beta1",
        &["IngressClass"],
        "networking.k8s.io/v1",
    ),
    (
        "apiregistration.k8s.io/v1beta1",
        &["APIService"],
        "apiregistration.k8s.io/v1",
    ),
    ("batch/v1beta1", &["CronJob"], "batch/v1"),
    (
        "storage.k8s.io/v1beta1",
        &["StorageClass"],
        "storage.k8s.io/v1",
    ),
    ("node.k8s.io/v1beta1", &["RuntimeClass"], "node.k8s.io/v1"),
    (
        "coordination.k8s.io/v1beta1",
        &["Lease"],
        "coordination.k8s.io/v1",
    ),
];

/// Group/versions the pinned Kubernetes no longer serves. Kinds of these not converted above
/// are refused: their move needs a decision only the bundle's author can make.
const REMOVED: &[&str] = &[
    "rbac.authorization.k8s.io/v1beta1",
    "rbac.authorization.k8s.io/v1alpha1",
    "scheduling.k8s.io/v1beta1",
    "scheduling.k8s.io/v1alpha1",
    "policy/v1beta1",
    "admissionregistration.k8s.io/v1beta1",
    "networking.k8s.io/v1beta1",
    "extensions/v1beta1",
    "apps/v1beta1",
    "apps/v1beta2",
    "apiregistration.k8s.io/v1beta1",
    "batch/v1beta1",
    "batch/v2alpha1",
    "storage.k8s.io/v1beta1",
    "node.k8s.io/v1beta1",
    "coordination.k8s.io/v1beta1",
    "autoscaling/v2beta1",
    "autoscaling/v2beta2",
    "certificates.k8s.io/v1beta1",
    "discovery.k8s.io/v1beta1",
    "events.k8s.io/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1beta2",
    "flowcontrol.apiserver.k8s.io/v1beta3",
];

/// What is being converted, for changes and refusals.
pub(crate) struct Subject<'a> {
    pub(crate) file: &'a str,
    pub(crate) kind: String,
    pub(crate) name: String,
}

impl Subject<'_> {
    pub(crate) fn refuse(&self, path: &str, reason: impl Into<String>) -> ConvertError {
        ConvertError::Manifest {
            file: self.file.to_string(),
            kind: self.kind.clone(),
            name: self.name.clone(),
            path: path.to_string(),
            reason: reason.into(),
        }
    }
}

/// True when the pinned Kubernetes version no longer serves this object's API.
pub fn is_removed_api(object: &Value) -> bool {
    let api = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    REMOVED.contains(&api) || api == crd::API_V1BETA1
}

/// Converts one bundle manifest for the pinned Kubernetes version: CustomResourceDefinitions
/// through [`crd::to_v1`], objects of removed APIs to their current version. Objects of current
/// APIs come back unchanged with no changes.
pub fn convert(object: &Value, file: &str) -> Result<Converted, ConvertError> {
    convert_in_bundle(object, file, &BTreeSet::new())
}

/// [`convert`] for an object of a bundle whose CustomResourceDefinitions define `defined`
/// kinds (which make a kind without `apiVersion` ambiguous).
pub fn convert_in_bundle(
    object: &Value,
    file: &str,
    defined: &BTreeSet<String>,
) -> Result<Converted, ConvertError> {
    if crd::is_crd(object) {
        return crd::to_v1(object);
    }
    let text = |k: &str| {
        object
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let api = text("apiVersion");
    let subject = Subject {
        file,
        kind: text("kind"),
        name: object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("<unnamed>")
            .to_string(),
    };
    if let Some(repaired) = implied::repair(object, &subject, defined) {
        return repaired;
    }
    if !REMOVED.contains(&api.as_str()) {
        return Ok(Converted {
            object: object.clone(),
            changes: Vec::new(),
        });
    }
    let Some(map) = object.as_object() else {
        return Err(subject.refuse("", "not a map"));
    };
    let mut out = map.clone();
    let mut rec = Recorder::new(format!("{}/{}", subject.kind, subject.name));
    let kind = subject.kind.as_str();
    if let Some((_, _, target)) = SAME_FIELDS
        .iter()
        .find(|(from, kinds, _)| *from == api && kinds.contains(&kind))
    {
        set_api(&mut out, target, &mut rec);
    } else {
        match (api.as_str(), kind) {
            ("policy/v1beta1", "PodDisruptionBudget") => {
                pod_disruption_budget(&mut out, &subject, &mut rec)?
            }
            (
                "admissionregistration.k8s.io/v1beta1",
                "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration",
            ) => webhooks::to_v1(&mut out, &subject, &mut rec)?,
            ("networking.k8s.io/v1beta1" | "extensions/v1beta1", "Ingress") => {
                ingress::to_v1(&mut out, &subject, &mut rec)?
            }
            _ => {
                return Err(subject.refuse(
                    "apiVersion",
                    format!("{api} is no longer served and {kind} has no mechanical move to a current version; the bundle must ship a current API"),
                ));
            }
        }
    }
    Ok(Converted {
        object: Value::Object(out),
        changes: rec.changes,
    })
}

/// What windlass applies for a bundle ahead of its ClusterServiceVersion: every other manifest,
/// CustomResourceDefinitions first, each converted for the pinned Kubernetes version.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvertedManifests {
    pub objects: Vec<Manifest>,
    /// Every change, each with the file it was made in.
    pub changes: Vec<(String, Change)>,
}

/// Converts every manifest of a bundle but its ClusterServiceVersion. The first object that
/// cannot be converted refuses the whole bundle, so nothing of it is applied.
pub fn convert_manifests(manifests: &[Manifest]) -> Result<ConvertedManifests, ConvertError> {
    let is_csv = |m: &&Manifest| {
        m.object.get("kind").and_then(Value::as_str) == Some("ClusterServiceVersion")
    };
    let (crds, rest): (Vec<&Manifest>, Vec<&Manifest>) =
        manifests.iter().filter(|m| !is_csv(m)).partition(|m| {
            m.object.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
        });
    let defined = kinds_defined_by_crds(crds.iter().copied());
    let mut out = ConvertedManifests {
        objects: Vec::new(),
        changes: Vec::new(),
    };
    for m in crds.into_iter().chain(rest) {
        let converted =
            convert_in_bundle(&m.object, &m.file, &defined).map_err(|e| with_file(e, &m.file))?;
        out.changes
            .extend(converted.changes.into_iter().map(|c| (m.file.clone(), c)));
        out.objects.push(Manifest {
            file: m.file.clone(),
            object: converted.object,
        });
    }
    Ok(out)
}

/// CRD errors name the CRD; in a bundle the file matters too.
fn with_file(e: ConvertError, file: &str) -> ConvertError {
    match e {
        ConvertError::Crd { crd, path, reason } => ConvertError::Manifest {
            file: file.to_string(),
            kind: "CustomResourceDefinition".into(),
            name: crd,
            path,
            reason,
        },
        ConvertError::NotACrd { api_version, kind } => ConvertError::Manifest {
            file: file.to_string(),
            kind,
            name: String::new(),
            path: "apiVersion".into(),
            reason: format!("{api_version} is not a CustomResourceDefinition version"),
        },
        other => other,
    }
}

pub(crate) fn set_api(object: &mut Map<String, Value>, target: &str, rec: &mut Recorder) {
    object.insert("apiVersion".into(), Value::String(target.into()));
    rec.record(
        "apiVersion",
        format!("set to {target}"),
        "the old version is no longer served; the fields are the same",
    );
}

/// policy/v1beta1 -> v1. The fields are the same but an empty selector changed meaning: it
/// selected no pod in v1beta1 and selects every pod of the namespace in v1.
fn pod_disruption_budget(
    out: &mut Map<String, Value>,
    subject: &Subject<'_>,
    rec: &mut Recorder,
) -> Result<(), ConvertError> {
    let selector = out.get("spec").and_then(|s| s.get("selector"));
    let empty = |k: &str| {
        selector.and_then(|s| s.get(k)).is_none_or(|v| {
            v.as_object().is_some_and(Map::is_empty) || v.as_array().is_some_and(Vec::is_empty)
        })
    };
    if empty("matchLabels") && empty("matchExpressions") {
        return Err(subject.refuse(
            "spec.selector",
            "empty: it selected no pods in policy/v1beta1 but selects every pod of the namespace in policy/v1",
        ));
    }
    set_api(out, "policy/v1", rec);
    Ok(())
}

#[cfg(test)]
mod tests;
