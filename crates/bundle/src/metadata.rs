//! The bundle's `metadata/` files: annotations, dependencies and properties.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Annotation (and image label) keys of the registry+v1 bundle format.
pub mod keys {
    pub const MEDIATYPE: &str = "operators.operatorframework.io.bundle.mediatype.v1";
    pub const MANIFESTS: &str = "operators.operatorframework.io.bundle.manifests.v1";
    pub const METADATA: &str = "operators.operatorframework.io.bundle.metadata.v1";
    pub const PACKAGE: &str = "operators.operatorframework.io.bundle.package.v1";
    pub const CHANNELS: &str = "operators.operatorframework.io.bundle.channels.v1";
    pub const DEFAULT_CHANNEL: &str = "operators.operatorframework.io.bundle.channel.default.v1";
    pub const REGISTRY_V1: &str = "registry+v1";
}

/// `metadata/annotations.yaml`: a flat string map under `annotations`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Annotations(pub BTreeMap<String, String>);

impl Annotations {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .get(key)
            .map(String::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }

    pub fn package(&self) -> Option<&str> {
        self.get(keys::PACKAGE)
    }

    /// The comma-separated channel list, trimmed, empty names dropped.
    pub fn channels(&self) -> Vec<String> {
        self.get(keys::CHANNELS)
            .map(|s| {
                s.split(',')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn default_channel(&self) -> Option<&str> {
        self.get(keys::DEFAULT_CHANNEL)
    }

    /// Annotations for a bundle built from scratch (the package-manifest layout has none).
    pub fn for_package(package: &str, channels: &[String], default_channel: Option<&str>) -> Self {
        let mut map = BTreeMap::new();
        map.insert(keys::MEDIATYPE.into(), keys::REGISTRY_V1.into());
        map.insert(keys::MANIFESTS.into(), "manifests/".into());
        map.insert(keys::METADATA.into(), "metadata/".into());
        map.insert(keys::PACKAGE.into(), package.into());
        map.insert(keys::CHANNELS.into(), channels.join(","));
        if let Some(default) = default_channel.or(channels.first().map(String::as_str)) {
            map.insert(keys::DEFAULT_CHANNEL.into(), default.into());
        }
        Annotations(map)
    }

    /// Reads the document of `annotations.yaml`.
    pub fn from_document(document: &Value) -> Result<Self, String> {
        let Some(inner) = document.get("annotations") else {
            return if document.is_null() {
                Ok(Self::default())
            } else {
                Err("has no `annotations` mapping".into())
            };
        };
        let Some(map) = inner.as_object() else {
            return if inner.is_null() {
                Ok(Self::default())
            } else {
                Err("`annotations` must be a mapping".into())
            };
        };
        let mut out = BTreeMap::new();
        for (key, value) in map {
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                Value::Null => String::new(),
                _ => return Err(format!("annotations.{key} must be a string")),
            };
            out.insert(key.clone(), text);
        }
        Ok(Annotations(out))
    }
}

/// One entry of `metadata/dependencies.yaml`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value")]
pub enum Dependency {
    /// Another package in a version range (blang/semver syntax).
    #[serde(rename = "olm.package")]
    Package {
        #[serde(rename = "packageName")]
        package_name: String,
        version: String,
    },
    /// An API some installed bundle must provide.
    #[serde(rename = "olm.gvk")]
    Gvk {
        group: String,
        version: String,
        kind: String,
    },
    /// `olm.constraint` and anything newer, kept as written.
    #[serde(untagged)]
    Other {
        #[serde(rename = "type")]
        type_: String,
        value: Value,
    },
}

/// Reads the document of `dependencies.yaml`; errors name the entry's index.
pub fn dependencies_from_document(document: &Value) -> Result<Vec<Dependency>, String> {
    let list = match document.get("dependencies") {
        None | Some(Value::Null) if document.is_null() || document.is_object() => {
            return Ok(Vec::new());
        }
        None => return Err("has no `dependencies` list".into()),
        Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => return Err("`dependencies` must be a list".into()),
    };
    list.iter()
        .enumerate()
        .map(|(i, entry)| {
            let typed: Dependency = serde_json::from_value(entry.clone())
                .map_err(|e| format!("dependencies[{i}]: {e}"))?;
            // A known type with a malformed value falls into `Other`: say so instead.
            if let Dependency::Other { type_, .. } = &typed
                && (type_ == "olm.package" || type_ == "olm.gvk")
            {
                let need = if type_ == "olm.package" {
                    "packageName and version"
                } else {
                    "group, version and kind"
                };
                return Err(format!(
                    "dependencies[{i}]: {type_} needs string fields {need}"
                ));
            }
            Ok(typed)
        })
        .collect()
}

/// Reads the document of `properties.yaml`: `properties: [{type, value}]`, kept verbatim.
pub fn properties_from_document(document: &Value) -> Result<Vec<Value>, String> {
    match document.get("properties") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(list)) => {
            for (i, p) in list.iter().enumerate() {
                if !p.get("type").is_some_and(Value::is_string) {
                    return Err(format!("properties[{i}] needs a string `type`"));
                }
            }
            Ok(list.clone())
        }
        Some(_) => Err("`properties` must be a list".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn annotations_give_package_and_channels() {
        let a = Annotations::from_document(&json!({"annotations": {
            keys::PACKAGE: "etcd", keys::CHANNELS: "alpha, beta,", keys::DEFAULT_CHANNEL: "beta"}}))
        .unwrap();
        assert_eq!(a.package(), Some("etcd"));
        assert_eq!(a.channels(), vec!["alpha", "beta"]);
        assert_eq!(a.default_channel(), Some("beta"));
        assert!(Annotations::from_document(&json!({"annotations": {"k": [1]}})).is_err());
        assert!(Annotations::from_document(&json!({"other": 1})).is_err());
    }

    #[test]
    fn dependencies_are_typed_and_malformed_ones_named() {
        let deps = dependencies_from_document(&json!({"dependencies": [
            {"type": "olm.package", "value": {"packageName": "etcd", "version": ">=0.9.0"}},
            {"type": "olm.gvk", "value": {"group": "g", "version": "v1", "kind": "K"}},
            {"type": "olm.constraint", "value": {"failureMessage": "m", "cel": {"rule": "true"}}}
        ]}))
        .unwrap();
        assert!(
            matches!(&deps[0], Dependency::Package { package_name, .. } if package_name == "etcd")
        );
        assert!(matches!(deps[1], Dependency::Gvk { .. }));
        assert!(matches!(&deps[2], Dependency::Other { type_, .. } if type_ == "olm.constraint"));
        let error = dependencies_from_document(
            &json!({"dependencies": [{"type": "olm.package", "value": {"packageName": "x"}}]}),
        )
        .unwrap_err();
        assert!(error.starts_with("dependencies[0]"), "{error}");
    }
}
