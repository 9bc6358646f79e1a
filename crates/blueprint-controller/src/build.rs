//! The build stage: the objects a revision applies, from its stored content. Pure: what the
//! cluster says (a live CRD, an object's scope) is passed in.

use std::collections::BTreeMap;
use windlass_api::names::{annotations, labels};

use serde_json::{Map, Value, json};
use windlass_api::{ClusterServiceVersion, ClusterServiceVersionSpec};
use windlass_bundle::Manifest;

use crate::{names, revision::RevisionContent};

/// Who owns what a Blueprint applies, and how it is labelled.
#[derive(Clone, Debug, PartialEq)]
pub struct Owner {
    pub name: String,
    pub namespace: String,
    pub uid: String,
}

impl Owner {
    /// A controller ownerReference to the Blueprint: namespaced objects go with it.
    pub fn reference(&self) -> Value {
        json!({
            "apiVersion": "windlass.dev/v1alpha1",
            "kind": "Blueprint",
            "name": self.name,
            "uid": self.uid,
            "controller": true,
            "blockOwnerDeletion": true,
        })
    }

    pub fn labels(&self) -> BTreeMap<String, String> {
        names::object_labels(&self.name, &self.namespace)
    }
}

/// Server-populated metadata that must not be sent back in an apply.
const SERVER_FIELDS: &[&str] = &[
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "managedFields",
    "generation",
    "selfLink",
    "deletionTimestamp",
];

/// A bundle manifest as applied: labelled; namespaced objects placed in the Blueprint's
/// namespace (a bundle's namespace is a placeholder, as for OLM) and owned by the Blueprint;
/// cluster-scoped ones only labelled (the finalizer finds them by label).
pub fn object(manifest: &Value, namespaced: bool, owner: &Owner) -> Value {
    let mut object = manifest.clone();
    if let Some(map) = object.as_object_mut() {
        map.remove("status");
    }
    let metadata = metadata_mut(&mut object);
    for field in SERVER_FIELDS {
        metadata.remove(*field);
    }
    let labels = metadata
        .entry("labels")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .map(std::mem::take)
        .unwrap_or_default();
    let mut labels: Map<String, Value> = labels;
    for (k, v) in owner.labels() {
        labels.insert(k, Value::String(v));
    }
    metadata.insert("labels".into(), Value::Object(labels));
    if namespaced {
        metadata.insert("namespace".into(), Value::String(owner.namespace.clone()));
        metadata.insert("ownerReferences".into(), json!([owner.reference()]));
    } else {
        metadata.remove("namespace");
    }
    object
}

/// A CRD as applied. When the CSV controller set up a conversion webhook on the live CRD and
/// the bundle's CRD asks for none (or `None`), the bundle's setting is left out so the
/// webhook stays (the CSV controller owns `spec.conversion` then).
pub fn crd(manifest: &Value, live: Option<&Value>, owner: &Owner, from: &BundleId<'_>) -> Value {
    let mut crd = object(manifest, false, owner);
    // Shared by every Blueprint of the package in every namespace: a label naming one of them
    // would be rewritten by each in turn, so only the managed-by label stays.
    if let Some(labels) = crd["metadata"]["labels"].as_object_mut() {
        labels.remove(labels::BLUEPRINT);
        labels.remove(labels::BLUEPRINT_NAMESPACE);
    }
    // Which bundle wrote this definition, so an older bundle never replaces a newer one.
    let annotations = crd["metadata"]
        .as_object_mut()
        .map(|m| m.entry("annotations").or_insert_with(|| json!({})));
    if let Some(Value::Object(annotations)) = annotations {
        annotations.insert(annotations::CRD_PACKAGE.into(), json!(from.package));
        annotations.insert(annotations::CRD_VERSION.into(), json!(from.version));
    }
    let live_webhook = live
        .and_then(|l| l.pointer("/spec/conversion/strategy"))
        .and_then(Value::as_str)
        == Some("Webhook");
    let shipped = crd
        .pointer("/spec/conversion/strategy")
        .and_then(Value::as_str)
        .unwrap_or("None");
    if live_webhook
        && shipped == "None"
        && let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut)
    {
        spec.remove("conversion");
    }
    crd
}

/// A bundle, for the CRD annotations above.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BundleId<'a> {
    pub package: &'a str,
    pub version: &'a str,
}

/// Whether the live CRD was written by a newer version of the same package. CRDs are shared
/// by every namespace; an install of an older version (in another namespace, or a rollback)
/// must not take a newer definition away from what runs on it, so the newer one stays.
pub fn live_crd_is_newer(live: &Value, from: &BundleId<'_>) -> bool {
    let annotations = &live["metadata"]["annotations"];
    let same_package = annotations[annotations::CRD_PACKAGE].as_str() == Some(from.package);
    let live_version = annotations[annotations::CRD_VERSION]
        .as_str()
        .and_then(|v| semver::Version::parse(v).ok());
    let ours = semver::Version::parse(from.version).ok();
    same_package && matches!((live_version, ours), (Some(live), Some(ours)) if live > ours)
}

/// What the CSV needs besides the content.
#[derive(Clone, Debug, PartialEq)]
pub struct CsvSettings<'a> {
    pub owner: &'a Owner,
    pub revision: i64,
    pub supersedes: Option<String>,
    pub progress_deadline_seconds: Option<i64>,
    /// The legacy conversion's change list, one line each.
    pub conversions: Vec<String>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("revision {revision} holds no ClusterServiceVersion (operators.coreos.com) manifest")]
pub struct NoCsv {
    pub revision: i64,
}

/// The windlass ClusterServiceVersion of a revision: named after the bundle's CSV, carrying
/// its definition unchanged, owned by the Blueprint, annotated with the revision.
pub fn csv(content: &RevisionContent, settings: &CsvSettings<'_>) -> Result<Value, NoCsv> {
    let shipped = crate::revision::csv_object(content).ok_or(NoCsv {
        revision: content.revision,
    })?;
    let mut definition = Map::new();
    let mut definition_meta = Map::new();
    for key in ["annotations", "labels"] {
        if let Some(v) = shipped.pointer(&format!("/metadata/{key}"))
            && !v.is_null()
        {
            definition_meta.insert(key.into(), v.clone());
        }
    }
    definition.insert("metadata".into(), Value::Object(definition_meta));
    definition.insert("spec".into(), shipped["spec"].clone());
    let spec = ClusterServiceVersionSpec {
        definition: Value::Object(definition),
        target_namespaces: target_namespaces(content, shipped, &settings.owner.namespace),
        config: content.config.clone(),
        supersedes: settings.supersedes.clone(),
        progress_deadline_seconds: settings.progress_deadline_seconds,
        conversions: settings.conversions.clone(),
    };
    let mut csv = ClusterServiceVersion::new(&content.cluster_service_version_name, spec);
    csv.metadata.namespace = Some(settings.owner.namespace.clone());
    csv.metadata.labels = Some(settings.owner.labels());
    csv.metadata.annotations = Some(BTreeMap::from([(
        annotations::REVISION.to_string(),
        settings.revision.to_string(),
    )]));
    let mut value = serde_json::to_value(&csv).unwrap_or_default();
    metadata_mut(&mut value).insert(
        "ownerReferences".into(),
        json!([settings.owner.reference()]),
    );
    Ok(value)
}

/// As the Subscription says; when it says nothing, all namespaces if the operator supports
/// that, otherwise its own namespace.
fn target_namespaces(content: &RevisionContent, shipped: &Value, namespace: &str) -> Vec<String> {
    if let Some(targets) = &content.target_namespaces {
        return targets.clone();
    }
    let all_namespaces = shipped["spec"]["installModes"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|m| m["type"] == "AllNamespaces" && m["supported"] == true);
    if all_namespaces {
        Vec::new()
    } else {
        vec![namespace.to_string()]
    }
}

/// `apiVersion/Kind` of every manifest but the CSV, sorted and unique, for the revision
/// Secret's kinds annotation.
pub fn kinds(manifests: &[Manifest]) -> Vec<String> {
    let mut kinds: Vec<String> = manifests
        .iter()
        .filter(|m| m.kind() != "ClusterServiceVersion")
        .map(|m| format!("{}/{}", m.api_version(), m.kind()))
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

/// The names of the CRDs among `manifests`, sorted.
pub fn crd_names(manifests: &[Manifest]) -> Vec<String> {
    let mut names: Vec<String> = manifests
        .iter()
        .filter(|m| m.kind() == "CustomResourceDefinition")
        .map(|m| m.name().to_string())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The inverse of the kinds annotation: `(apiVersion, kind)` pairs.
pub fn parse_kinds(annotation: &str) -> Vec<(String, String)> {
    annotation
        .split(',')
        .filter_map(|k| {
            let (api_version, kind) = k.trim().rsplit_once('/')?;
            Some((api_version.to_string(), kind.to_string()))
        })
        .collect()
}

/// True when every field of `desired` has the same value in `actual` (lists element-wise and
/// of equal length): the live object already says what we would write.
pub fn is_subset(desired: &Value, actual: &Value) -> bool {
    match (desired, actual) {
        (Value::Object(want), Value::Object(have)) => want
            .iter()
            .all(|(k, v)| have.get(k).is_some_and(|h| is_subset(v, h))),
        (Value::Array(want), Value::Array(have)) => {
            want.len() == have.len() && want.iter().zip(have).all(|(w, h)| is_subset(w, h))
        }
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        _ => desired == actual,
    }
}

fn metadata_mut(object: &mut Value) -> &mut Map<String, Value> {
    if !object["metadata"].is_object() {
        object["metadata"] = json!({});
    }
    object["metadata"]
        .as_object_mut()
        .expect("metadata was just made an object")
}

#[cfg(test)]
#[path = "build_tests.rs"]
mod tests;
