//! The OLM ClusterServiceVersion as a typed model.
//!
//! Every struct keeps the fields it does not know in `extra`, so a CSV read and written again
//! carries everything its author wrote. Lists and maps that bundles leave as `null` read as empty.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// Reads `null` (or a missing field) as the type's default.
fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Reads a scalar as a string: YAML writers leave `version: 1.0` or `replaces: 2` unquoted.
fn scalar_string<'de, D>(deserializer: D) -> Result<Option<String>, D::Error>
where
    D: Deserializer<'de>,
{
    match Option::<Value>::deserialize(deserializer)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(Value::Bool(b)) => Ok(Some(b.to_string())),
        Some(other) => Err(serde::de::Error::custom(format!(
            "expected a string, found {}",
            kind_of(&other)
        ))),
    }
}

/// Annotations and labels are string maps; scalars of other types are kept as their text.
fn string_map<'de, D>(deserializer: D) -> Result<BTreeMap<String, String>, D::Error>
where
    D: Deserializer<'de>,
{
    let map = Option::<BTreeMap<String, Value>>::deserialize(deserializer)?.unwrap_or_default();
    map.into_iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k, s)),
            Value::Null => Ok((k, String::new())),
            Value::Number(n) => Ok((k, n.to_string())),
            Value::Bool(b) => Ok((k, b.to_string())),
            other => Err(serde::de::Error::custom(format!(
                "value of `{k}` must be a string, found {}",
                kind_of(&other)
            ))),
        })
        .collect()
}

pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterServiceVersion {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default, deserialize_with = "nullable")]
    pub metadata: ObjectMeta,
    #[serde(default, deserialize_with = "nullable")]
    pub spec: CsvSpec,
    /// `status` and anything else at the top level.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "string_map"
    )]
    pub annotations: BTreeMap<String, String>,
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "string_map"
    )]
    pub labels: BTreeMap<String, String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CsvSpec {
    /// As written; [`ClusterServiceVersion::version`] parses it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "scalar_string"
    )]
    pub version: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "scalar_string"
    )]
    pub replaces: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub skips: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "scalar_string"
    )]
    pub min_kube_version: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "scalar_string"
    )]
    pub display_name: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "scalar_string"
    )]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<Provider>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "scalar_string"
    )]
    pub maturity: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub icon: Vec<Icon>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install: Option<InstallStrategy>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub install_modes: Vec<InstallMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub customresourcedefinitions: Option<CustomResourceDefinitions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apiservicedefinitions: Option<ApiServiceDefinitions>,
    #[serde(
        default,
        rename = "nativeAPIs",
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub native_apis: Vec<GroupVersionKind>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub webhookdefinitions: Vec<Value>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub related_images: Vec<RelatedImage>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Provider {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "scalar_string"
    )]
    pub name: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "scalar_string"
    )]
    pub url: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Icon {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "scalar_string"
    )]
    pub base64data: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "scalar_string"
    )]
    pub mediatype: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InstallStrategy {
    #[serde(default, deserialize_with = "nullable")]
    pub strategy: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<DeploymentStrategy>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentStrategy {
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub deployments: Vec<DeploymentSpec>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub permissions: Vec<Permissions>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub cluster_permissions: Vec<Permissions>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeploymentSpec {
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    /// An apps/v1 DeploymentSpec, kept as written: windlass applies it as is.
    #[serde(default)]
    pub spec: Value,
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "string_map"
    )]
    pub label: BTreeMap<String, String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl DeploymentSpec {
    /// Every container image of the pod template (init containers included).
    pub fn images(&self) -> Vec<&str> {
        let pod = &self.spec["template"]["spec"];
        ["initContainers", "containers"]
            .iter()
            .filter_map(|key| pod[*key].as_array())
            .flatten()
            .filter_map(|c| c["image"].as_str())
            .collect()
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Permissions {
    #[serde(default, deserialize_with = "nullable")]
    pub service_account_name: String,
    /// rbac/v1 PolicyRules, kept as written.
    #[serde(default, deserialize_with = "nullable")]
    pub rules: Vec<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InstallMode {
    #[serde(rename = "type", default, deserialize_with = "nullable")]
    pub type_: String,
    #[serde(default, deserialize_with = "lenient_bool")]
    pub supported: bool,
}

/// `supported: "true"` occurs in hand-written CSVs; OLM's decoder takes it too.
fn lenient_bool<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    match Option::<Value>::deserialize(deserializer)? {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(b),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(true),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(false),
        Some(other) => Err(serde::de::Error::custom(format!(
            "expected true or false, found {}",
            kind_of(&other)
        ))),
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CustomResourceDefinitions {
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub owned: Vec<CrdDescription>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub required: Vec<CrdDescription>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrdDescription {
    /// `<plural>.<group>`.
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    #[serde(default, deserialize_with = "nullable")]
    pub version: String,
    #[serde(default, deserialize_with = "nullable")]
    pub kind: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "scalar_string"
    )]
    pub display_name: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "scalar_string"
    )]
    pub description: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CrdDescription {
    /// The API group: everything after the first dot of the name.
    pub fn group(&self) -> &str {
        self.name
            .split_once('.')
            .map(|(_, g)| g)
            .unwrap_or_default()
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ApiServiceDefinitions {
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub owned: Vec<ApiServiceDescription>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub required: Vec<ApiServiceDescription>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ApiServiceDescription {
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    #[serde(default, deserialize_with = "nullable")]
    pub group: String,
    #[serde(default, deserialize_with = "nullable")]
    pub version: String,
    #[serde(default, deserialize_with = "nullable")]
    pub kind: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupVersionKind {
    #[serde(default, deserialize_with = "nullable")]
    pub group: String,
    #[serde(default, deserialize_with = "nullable")]
    pub version: String,
    #[serde(default, deserialize_with = "nullable")]
    pub kind: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelatedImage {
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    #[serde(default, deserialize_with = "nullable")]
    pub image: String,
}

/// A CSV field that is missing or not what OLM expects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct CsvFieldError {
    /// JSON path of the field, for example `spec.install.spec.deployments[0].name`.
    pub field: String,
    pub message: String,
}

/// The annotation carrying a bundle's skip range.
pub const SKIP_RANGE_ANNOTATION: &str = "olm.skipRange";

impl ClusterServiceVersion {
    /// Reads a CSV object; a type mismatch names the field's path.
    pub fn from_value(value: &Value) -> Result<Self, CsvFieldError> {
        serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            CsvFieldError {
                field: if path == "." {
                    "(document)".into()
                } else {
                    path
                },
                message: e.into_inner().to_string(),
            }
        })
    }

    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// `spec.version` as semver (a leading `v` is accepted, as OLM's decoder does).
    pub fn version(&self) -> Result<semver::Version, CsvFieldError> {
        let raw = self.spec.version.as_deref().ok_or_else(|| CsvFieldError {
            field: "spec.version".into(),
            message: "is missing".into(),
        })?;
        let trimmed = raw.trim();
        semver::Version::parse(trimmed.strip_prefix('v').unwrap_or(trimmed)).map_err(|e| {
            CsvFieldError {
                field: "spec.version".into(),
                message: format!("`{raw}` is not a semantic version: {e}"),
            }
        })
    }

    pub fn skip_range(&self) -> Option<&str> {
        self.metadata
            .annotations
            .get(SKIP_RANGE_ANNOTATION)
            .map(String::as_str)
            .filter(|s| !s.trim().is_empty())
    }

    pub fn owned_crds(&self) -> &[CrdDescription] {
        self.spec
            .customresourcedefinitions
            .as_ref()
            .map(|c| c.owned.as_slice())
            .unwrap_or_default()
    }

    pub fn required_crds(&self) -> &[CrdDescription] {
        self.spec
            .customresourcedefinitions
            .as_ref()
            .map(|c| c.required.as_slice())
            .unwrap_or_default()
    }

    pub fn owned_apiservices(&self) -> &[ApiServiceDescription] {
        self.spec
            .apiservicedefinitions
            .as_ref()
            .map(|c| c.owned.as_slice())
            .unwrap_or_default()
    }

    pub fn required_apiservices(&self) -> &[ApiServiceDescription] {
        self.spec
            .apiservicedefinitions
            .as_ref()
            .map(|c| c.required.as_slice())
            .unwrap_or_default()
    }

    pub fn deployments(&self) -> &[DeploymentSpec] {
        self.spec
            .install
            .as_ref()
            .and_then(|i| i.spec.as_ref())
            .map(|s| s.deployments.as_slice())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests;
