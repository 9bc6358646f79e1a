//! Reading OLM's objects and the live ones they own, and the metadata patch that hands one
//! over.

use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value, json};
use windlass_api::names::{annotations, olm_v0};

/// An object, by what `kubectl` needs to find it, with the resourceVersion it was read at (a
/// take-over patch carries it, so an object changed since is refused rather than overwritten).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectKey {
    pub api_version: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
}

impl ObjectKey {
    pub fn of(object: &Value) -> ObjectKey {
        ObjectKey {
            api_version: text(object, "/apiVersion").to_string(),
            kind: text(object, "/kind").to_string(),
            namespace: object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .map(str::to_string),
            name: text(object, "/metadata/name").to_string(),
            resource_version: text(object, "/metadata/resourceVersion").to_string(),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{} {namespace}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// The string at `pointer`, empty when absent.
pub(crate) fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Whether `reference` (an ownerReference) names an OLM v0 ClusterServiceVersion.
pub(crate) fn is_olm_csv_reference(reference: &Value) -> bool {
    text(reference, "/kind") == "ClusterServiceVersion"
        && text(reference, "/apiVersion").split('/').next() == Some(olm_v0::GROUP)
}

/// Whether `object` names the OLM CSV `csv` (by uid) as an owner, or, for cluster-scoped
/// objects that cannot have a namespaced owner, carries OLM's owner labels for it.
pub fn owned_by(object: &Value, csv: &Value) -> bool {
    let uid = text(csv, "/metadata/uid");
    let by_reference = object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|r| is_olm_csv_reference(r) && !uid.is_empty() && text(r, "/uid") == uid);
    let labels = object.pointer("/metadata/labels");
    let label = |key: &str| labels.and_then(|l| l[key].as_str()).unwrap_or("");
    let by_labels = label(olm_v0::OWNER) == text(csv, "/metadata/name")
        && label(olm_v0::OWNER_NAMESPACE) == text(csv, "/metadata/namespace")
        && label(olm_v0::OWNER_KIND) == "ClusterServiceVersion";
    by_reference || by_labels
}

/// The JSON merge patch that takes `live` over from OLM: its owner references to OLM CSVs and
/// OLM's owner and component labels go, `extra` annotations come, and the resourceVersion it
/// was read at guards the write. Only metadata: nothing that runs changes.
pub(crate) fn take_over_patch(live: &Value, extra: &[(&str, String)]) -> Value {
    let mut metadata = Map::new();
    metadata.insert(
        "resourceVersion".into(),
        json!(text(live, "/metadata/resourceVersion")),
    );
    if let Some(references) = live
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        && references.iter().any(is_olm_csv_reference)
    {
        let kept: Vec<&Value> = references
            .iter()
            .filter(|r| !is_olm_csv_reference(r))
            .collect();
        // A merge patch replaces a list whole; an empty list clears it.
        metadata.insert("ownerReferences".into(), json!(kept));
    }
    let removed: Map<String, Value> = live
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(key, _)| is_olm_label(key))
        .map(|(key, _)| (key.clone(), Value::Null))
        .collect();
    if !removed.is_empty() {
        metadata.insert("labels".into(), Value::Object(removed));
    }
    let added: Map<String, Value> = extra
        .iter()
        .map(|(key, value)| ((*key).to_string(), json!(value)))
        .collect();
    if !added.is_empty() {
        metadata.insert("annotations".into(), Value::Object(added));
    }
    json!({ "metadata": metadata })
}

/// The JSON merge patch that puts back what [`take_over_patch`] changed on `live`: its owner
/// references and labels as they were read, the added annotations removed.
pub(crate) fn undo_patch(live: &Value, extra: &[(&str, String)]) -> Value {
    let mut metadata = Map::new();
    if let Some(references) = live
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        && references.iter().any(is_olm_csv_reference)
    {
        metadata.insert("ownerReferences".into(), json!(references));
    }
    let restored: Map<String, Value> = live
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(key, _)| is_olm_label(key))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    if !restored.is_empty() {
        metadata.insert("labels".into(), Value::Object(restored));
    }
    let removed: Map<String, Value> = extra
        .iter()
        .map(|(key, _)| ((*key).to_string(), Value::Null))
        .collect();
    if !removed.is_empty() {
        metadata.insert("annotations".into(), Value::Object(removed));
    }
    json!({ "metadata": metadata })
}

/// OLM's bookkeeping labels on what it installs (owner, spec hash, Operator API component).
pub(crate) fn is_olm_label(key: &str) -> bool {
    matches!(
        key,
        olm_v0::OWNER | olm_v0::OWNER_KIND | olm_v0::OWNER_NAMESPACE | olm_v0::DEPLOYMENT_SPEC_HASH
    ) || key.starts_with(olm_v0::COMPONENT_LABEL_PREFIX)
}

/// Field managers of `live` other than OLM's, the API server's and windlass's own: whoever
/// edited it since OLM applied it.
pub(crate) fn other_managers(live: &Value) -> Vec<String> {
    let mut managers: Vec<String> = live
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|entry| text(entry, "/subresource").is_empty())
        .map(|entry| text(entry, "/manager").to_string())
        .filter(|manager| {
            !manager.is_empty()
                && !olm_v0::FIELD_MANAGERS.contains(&manager.as_str())
                && !manager.starts_with("kube-")
                && !manager.starts_with("windlass")
        })
        .collect();
    managers.sort();
    managers.dedup();
    managers
}

/// The value of `adopted-from` for the OLM CSV `namespace/csv`.
pub(crate) fn adopted_from_olm(namespace: &str, csv: &str) -> (&'static str, String) {
    (annotations::ADOPTED_FROM, format!("olm:{namespace}/{csv}"))
}

/// A Go duration (`10m`, `1h30m`, `45s`, `1m0s`) in whole seconds; `None` when it does not read.
pub(crate) fn go_duration_seconds(text: &str) -> Option<i64> {
    let mut total = 0f64;
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..unit_end] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            _ => return None,
        };
        total += number * factor;
        rest = &rest[unit_end..];
    }
    Some(total.round() as i64)
}
