//! The build stage: the objects a revision applies, from its stored content. Pure: what the
//! cluster says (a live CRD, an object's scope) is passed in.

use std::collections::BTreeMap;
use windlass_api::names::{annotations, finalizers, labels};

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
    // Guarded by the resourceVersion it was judged against (safety, newer or not): a definition
    // another Blueprint wrote since makes the apply fail with a conflict, and it is judged again.
    if let Some(version) = live.and_then(|l| l.pointer("/metadata/resourceVersion"))
        && let Some(meta) = crd.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.insert("resourceVersion".into(), version.clone());
    }
    crd
}

/// The ClusterRole that lets the manager read (get, list) the custom resources of the live CRD
/// `live`, and nothing else; the manager's aggregated ClusterRole picks it up by its label.
/// `None` for a CRD without a group or plural, which the API server would not serve.
pub fn custom_resource_reader(live: &Value) -> Option<Value> {
    let name = live.pointer("/metadata/name")?.as_str()?;
    let group = live
        .pointer("/spec/group")?
        .as_str()
        .filter(|g| !g.is_empty())?;
    let plural = live
        .pointer("/spec/names/plural")?
        .as_str()
        .filter(|p| !p.is_empty())?;
    Some(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": windlass_api::names::custom_resource_reader(name),
            "labels": {
                labels::MANAGED_BY: labels::MANAGED_BY_VALUE,
                labels::AGGREGATE_TO_MANAGER: "true",
            },
        },
        "rules": [{"apiGroups": [group], "resources": [plural], "verbs": ["get", "list"]}],
    }))
}

/// A bundle, for the CRD annotations above.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BundleId<'a> {
    pub package: &'a str,
    pub version: &'a str,
}

/// Who manages a live CRD, as far as taking it over goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CrdOwner {
    /// This package wrote it last, or a cluster admin handed it to this package.
    ThisPackage,
    /// windlass applied it without naming a package (before packages were recorded).
    Unclaimed,
    /// Someone else: another package, Helm, or whoever applied it (from its managed fields).
    Other(String),
}

/// Who manages `live` from the point of view of `package`, which ships a CRD of that name.
pub fn crd_owner(live: &Value, package: &str) -> CrdOwner {
    let meta = &live["metadata"];
    let annotation = |key: &str| meta["annotations"][key].as_str();
    let label = |key: &str| meta["labels"][key].as_str();
    if annotation(annotations::CRD_ADOPT) == Some(package) {
        return CrdOwner::ThisPackage;
    }
    match annotation(annotations::CRD_PACKAGE) {
        Some(owner) if owner == package => return CrdOwner::ThisPackage,
        Some(owner) => return CrdOwner::Other(format!("package {owner}")),
        None => {}
    }
    if label(labels::MANAGED_BY) == Some(labels::MANAGED_BY_VALUE) {
        return CrdOwner::Unclaimed;
    }
    if let Some(release) = annotation("meta.helm.sh/release-name") {
        let namespace = annotation("meta.helm.sh/release-namespace").unwrap_or("?");
        return CrdOwner::Other(format!("Helm release {namespace}/{release}"));
    }
    if let Some(tool) = label(labels::MANAGED_BY) {
        return CrdOwner::Other(tool.to_string());
    }
    let mut managers: Vec<&str> = meta["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|entry| entry["manager"].as_str())
        .filter(|manager| !manager.starts_with("kube-apiserver"))
        .collect();
    managers.sort_unstable();
    managers.dedup();
    if managers.is_empty() {
        CrdOwner::Other("something other than windlass".into())
    } else {
        CrdOwner::Other(format!("field manager {}", managers.join(", ")))
    }
}

/// Who manages a live object a bundle ships (anything but a CRD), as far as applying over it
/// and removing it go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObjectOwner {
    /// This Blueprint applied it, or whoever may edit it handed it to this Blueprint.
    ThisInstall,
    /// Someone else, in words for a condition.
    Other(String),
}

/// Who manages `live`, from the point of view of the Blueprint `owner`. Applying a bundle's
/// object forces windlass's fields over it and labels it as the Blueprint's, which makes the
/// uninstall delete it: only what this Blueprint made, or what it was handed, is applied.
pub fn object_owner(live: &Value, owner: &Owner) -> ObjectOwner {
    let meta = &live["metadata"];
    let annotation = |key: &str| meta["annotations"][key].as_str();
    let label = |key: &str| meta["labels"][key].as_str();
    let handed_to = format!("{}/{}", owner.namespace, owner.name);
    if annotation(annotations::ADOPT) == Some(handed_to.as_str()) {
        return ObjectOwner::ThisInstall;
    }
    let owned_by_uid = meta["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|r| r["uid"].as_str() == Some(owner.uid.as_str()));
    let (blueprint, namespace) = (label(labels::BLUEPRINT), label(labels::BLUEPRINT_NAMESPACE));
    if owned_by_uid
        || (blueprint == Some(names::label_value(&owner.name).as_str())
            && namespace == Some(names::label_value(&owner.namespace).as_str()))
    {
        return ObjectOwner::ThisInstall;
    }
    if let (Some(blueprint), Some(namespace)) = (blueprint, namespace) {
        return ObjectOwner::Other(format!("Blueprint {namespace}/{blueprint}"));
    }
    match crd_owner(live, "") {
        CrdOwner::Other(who) => ObjectOwner::Other(who),
        // Labelled as windlass's but by no Blueprint: not this one's to take.
        _ => ObjectOwner::Other("windlass, for no Blueprint it names".into()),
    }
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

/// Whether the live CRD, written by a newer bundle of another package, already serves
/// everything `ours` defines: moving from `ours` to it would be a safe upgrade (no blocking
/// schema finding, no served version dropped). Such a CRD stays, as [`live_crd_is_newer`]'s
/// does: replacing it would narrow a definition other installs run on.
pub fn live_crd_covers(live: &Value, ours: &Value, from: &BundleId<'_>) -> bool {
    let live_version = live["metadata"]["annotations"][annotations::CRD_VERSION]
        .as_str()
        .and_then(|v| semver::Version::parse(v).ok());
    let newer = matches!(
        (live_version, semver::Version::parse(from.version).ok()),
        (Some(live), Some(ours)) if live > ours
    );
    newer
        && windlass_bundle::crd::safety::findings(ours, live, &[])
            .iter()
            .all(|finding| {
                !finding.blocks()
                    && finding.kind
                        != windlass_bundle::crd::safety::ViolationKind::ServedVersionRemoved
            })
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
    /// The namespaces the operator watches (`[]`: all), as the namespace's policies permit.
    pub target_namespaces: Vec<String>,
    /// The ServiceAccount the CSV controller creates namespaced objects as (`None`: the
    /// manager, in trusted namespaces).
    pub install_service_account: Option<String>,
    /// The authority it is applied under: this Blueprint's revision, the policy generation
    /// that permitted it, the cluster-scoped objects it may have.
    pub grant: windlass_api::csv::CsvGrant,
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
        definition: Value::Object(definition).into(),
        target_namespaces: settings.target_namespaces.clone(),
        config: content.config.clone(),
        supersedes: settings.supersedes.clone(),
        progress_deadline_seconds: settings.progress_deadline_seconds,
        conversions: settings.conversions.clone(),
        install_service_account: settings.install_service_account.clone(),
        image_rewrites: content.image_rewrites.clone(),
        grant: Some(settings.grant.clone()),
    };
    let mut csv = ClusterServiceVersion::new(&content.cluster_service_version_name, spec);
    csv.metadata.namespace = Some(settings.owner.namespace.clone());
    csv.metadata.labels = Some(settings.owner.labels());
    // Born with the CSV controller's finalizer: it starts installing at once instead of first
    // adding it (a write and a round trip per install).
    csv.metadata.finalizers = Some(vec![finalizers::CSV_CLEANUP.to_string()]);
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
