//! What a page says about one bundle: its display name, descriptions, keywords, provider,
//! install modes, the APIs it owns and needs, and its sample objects.
//!
//! Catalogs carry this in two shapes, and both are read here into one [`BundleMetadata`]:
//! the bundle's ClusterServiceVersion itself (built-in catalogs, bundle images), or the
//! `olm.csv.metadata` property file-based catalogs rendered by opm carry for each bundle
//! (the CSV's spec fields and annotations, without the install strategy). A catalog that has
//! neither for a bundle (a file-based catalog rendered without it) shows what its `olm.package`
//! blob has: the package description and icon.

use serde::Serialize;
use serde_json::{Map, Value, json};
use windlass_bundle::{
    Bundle,
    csv::{ClusterServiceVersion, CrdDescription},
    load::Layout,
};
use windlass_catalog::{Property, lint::provider_display};

/// The property type file-based catalogs carry a bundle's CSV metadata in.
pub const CSV_METADATA_PROPERTY: &str = "olm.csv.metadata";

/// One bundle as the hub shows it. Every string is catalog text: untrusted, escaped or
/// sanitized wherever it is shown.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BundleMetadata {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// The one-line `description` annotation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_description: Option<String>,
    /// `spec.description`: markdown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    pub provider: Provider,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub install_modes: Vec<InstallMode>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub owned_apis: Vec<ApiDescription>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub required_apis: Vec<ApiDescription>,
    /// The `alm-examples` annotation parsed: sample objects for the owned APIs. `None` when
    /// absent; an annotation that is not a JSON list is kept out and named in `problems`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maturity: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_kube_version: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<Link>,
    /// What could not be read, for people (`alm-examples: not a JSON list: ...`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// The provider as a catalog page presents it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Provider {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// One of custom | community | certified | platform.
    #[serde(rename = "type")]
    pub provider_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl Default for Provider {
    fn default() -> Self {
        Provider {
            name: None,
            provider_type: "custom".into(),
            url: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InstallMode {
    #[serde(rename = "type")]
    pub type_: String,
    pub supported: bool,
}

/// An API (CRD or aggregated API) a bundle owns or needs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiDescription {
    /// `<plural>.<group>` for CRDs; the group for API services.
    pub name: String,
    pub group: String,
    pub version: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Link {
    pub name: String,
    pub url: String,
}

impl BundleMetadata {
    /// The metadata of a loaded bundle (its CSV).
    pub fn from_bundle(bundle: &Bundle) -> BundleMetadata {
        from_csv(bundle)
    }

    /// The metadata an `olm.csv.metadata` property carries, if the bundle has one. Its value
    /// has the CSV spec's field names, with the annotations beside them.
    pub fn from_properties(properties: &[Property]) -> Option<BundleMetadata> {
        let value = properties.iter().find_map(|p| match p {
            Property::Other { type_, value } if type_ == CSV_METADATA_PROPERTY => {
                Some(value.to_value())
            }
            _ => None,
        })?;
        Some(from_csv_metadata(&value))
    }

    /// The name to show: the display name, else `fallback` (the package name).
    pub fn title<'a>(&'a self, fallback: &'a str) -> &'a str {
        self.display_name
            .as_deref()
            .filter(|n| !n.trim().is_empty())
            .unwrap_or(fallback)
    }
}

/// Reads an `olm.csv.metadata` value through the CSV model, so both shapes go through one
/// reader (and one provider rule).
fn from_csv_metadata(value: &Value) -> BundleMetadata {
    let Value::Object(fields) = value else {
        return BundleMetadata {
            problems: vec![format!("{CSV_METADATA_PROPERTY} is not a mapping")],
            ..Default::default()
        };
    };
    let mut spec: Map<String, Value> = fields.clone();
    let annotations = spec.remove("annotations").unwrap_or(json!({}));
    let labels = spec.remove("labels").unwrap_or(json!({}));
    // opm names the CRD descriptions `crdDescriptions`; the CSV `customresourcedefinitions`.
    if let Some(crds) = spec.remove("crdDescriptions") {
        spec.insert("customresourcedefinitions".into(), crds);
    }
    let csv = json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": { "name": "", "annotations": annotations, "labels": labels },
        "spec": spec,
    });
    match serde_json::from_value::<ClusterServiceVersion>(csv) {
        Ok(csv) => from_csv(&bundle_of(csv)),
        Err(e) => BundleMetadata {
            problems: vec![format!("{CSV_METADATA_PROPERTY}: {e}")],
            ..Default::default()
        },
    }
}

/// A bundle around a CSV alone, for [`provider_display`], which reads bundles.
fn bundle_of(csv: ClusterServiceVersion) -> Bundle {
    Bundle {
        source: CSV_METADATA_PROPERTY.into(),
        layout: Layout::Bundle,
        csv,
        csv_file: String::new(),
        manifests: Vec::new(),
        annotations: Default::default(),
        dependencies: Vec::new(),
        properties: Vec::new(),
        notes: Vec::new(),
    }
}

fn non_empty(text: Option<&String>) -> Option<String> {
    text.map(|t| t.trim().to_string()).filter(|t| !t.is_empty())
}

fn from_csv(bundle: &Bundle) -> BundleMetadata {
    let csv = &bundle.csv;
    let spec = &csv.spec;
    let annotations = &csv.metadata.annotations;
    let shown = provider_display(bundle);
    let mut problems = Vec::new();
    let examples = match annotations.get("alm-examples").map(|t| t.trim()) {
        None | Some("") => Vec::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Array(items)) => items,
            Ok(_) => {
                problems.push("alm-examples: not a JSON list".into());
                Vec::new()
            }
            Err(e) => {
                problems.push(format!("alm-examples: not JSON: {e}"));
                Vec::new()
            }
        },
    };
    let keywords = spec
        .extra
        .get("keywords")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(|k| k.trim().to_string())
                .filter(|k| !k.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let links = spec
        .extra
        .get("links")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|l| {
                    Some(Link {
                        name: l.get("name")?.as_str()?.to_string(),
                        url: l.get("url")?.as_str()?.to_string(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let crd = |d: &CrdDescription| ApiDescription {
        name: d.name.clone(),
        group: d.group().to_string(),
        version: d.version.clone(),
        kind: d.kind.clone(),
        display_name: non_empty(d.display_name.as_ref()),
        description: non_empty(d.description.as_ref()),
    };
    let api = |a: &windlass_bundle::csv::ApiServiceDescription| ApiDescription {
        name: a.name.clone(),
        group: a.group.clone(),
        version: a.version.clone(),
        kind: a.kind.clone(),
        display_name: a
            .extra
            .get("displayName")
            .and_then(Value::as_str)
            .map(str::to_string),
        description: a
            .extra
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_string),
    };
    let (mut owned_apis, mut required_apis): (Vec<_>, Vec<_>) =
        match &spec.customresourcedefinitions {
            Some(crds) => (
                crds.owned.iter().map(crd).collect(),
                crds.required.iter().map(crd).collect(),
            ),
            None => (Vec::new(), Vec::new()),
        };
    if let Some(apis) = &spec.apiservicedefinitions {
        owned_apis.extend(apis.owned.iter().map(api));
        required_apis.extend(apis.required.iter().map(api));
    }
    BundleMetadata {
        display_name: non_empty(spec.display_name.as_ref()),
        short_description: non_empty(annotations.get("description")),
        description: non_empty(spec.description.as_ref()),
        keywords,
        provider: Provider {
            name: shown.name,
            provider_type: shown.provider_type,
            url: shown.url,
        },
        install_modes: spec
            .install_modes
            .iter()
            .map(|m| InstallMode {
                type_: m.type_.clone(),
                supported: m.supported,
            })
            .collect(),
        owned_apis,
        required_apis,
        examples,
        maturity: non_empty(spec.maturity.as_ref()),
        capabilities: non_empty(annotations.get("capabilities")),
        categories: annotations
            .get("categories")
            .map(|c| {
                c.split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default(),
        min_kube_version: non_empty(spec.min_kube_version.as_ref()),
        links,
        problems,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use windlass_catalog::model::RawJson;

    fn csv_metadata(value: Value) -> Vec<Property> {
        vec![Property::Other {
            type_: CSV_METADATA_PROPERTY.into(),
            value: RawJson::from_value(&value),
        }]
    }

    #[test]
    fn an_opm_csv_metadata_property_reads_like_the_csv() {
        let properties = csv_metadata(json!({
            "displayName": "Etcd",
            "description": "# Etcd\nA *key-value* store",
            "keywords": ["etcd", " key value ", ""],
            "provider": {"name": "CNCF"},
            "annotations": {
                "description": "Create and maintain etcd clusters",
                "provider-type": "Community",
                "alm-examples": "[{\"apiVersion\":\"etcd.database.coreos.com/v1beta2\",\"kind\":\"EtcdCluster\"}]",
                "categories": "Database, Big Data",
                "capabilities": "Full Lifecycle"
            },
            "installModes": [{"type": "OwnNamespace", "supported": true}, {"type": "AllNamespaces", "supported": false}],
            "crdDescriptions": {"owned": [{"name": "etcdclusters.etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdCluster", "displayName": "etcd Cluster", "description": "Represents a cluster"}]},
            "links": [{"name": "Blog", "url": "https://coreos.com/etcd"}],
            "maturity": "alpha"
        }));
        let meta = BundleMetadata::from_properties(&properties).unwrap();
        assert_eq!(meta.title("etcd"), "Etcd");
        assert_eq!(meta.keywords, ["etcd", "key value"]);
        assert_eq!(
            meta.provider,
            Provider {
                name: Some("CNCF".into()),
                provider_type: "community".into(),
                url: None
            }
        );
        assert_eq!(
            meta.short_description.as_deref(),
            Some("Create and maintain etcd clusters")
        );
        assert_eq!(meta.examples.len(), 1);
        assert_eq!(meta.categories, ["Database", "Big Data"]);
        assert_eq!(meta.owned_apis[0].group, "etcd.database.coreos.com");
        assert_eq!(meta.owned_apis[0].kind, "EtcdCluster");
        assert_eq!(meta.install_modes.len(), 2);
        assert_eq!(meta.links[0].url, "https://coreos.com/etcd");
        assert!(meta.problems.is_empty(), "{:?}", meta.problems);
    }

    #[test]
    fn broken_examples_and_unknown_provider_types_are_named_not_fatal() {
        let properties = csv_metadata(json!({
            "annotations": {"alm-examples": "{not json", "provider-type": "gold"},
        }));
        let meta = BundleMetadata::from_properties(&properties).unwrap();
        assert_eq!(meta.provider.provider_type, "custom");
        assert!(meta.examples.is_empty());
        assert!(meta.problems[0].starts_with("alm-examples: not JSON"));
        assert_eq!(meta.title("pkg"), "pkg");
    }

    #[test]
    fn bundles_without_the_property_have_no_metadata_from_it() {
        assert_eq!(BundleMetadata::from_properties(&[]), None);
    }

    #[test]
    fn the_sample_bundles_read_from_their_csv() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bundles/acme-db/1.1.0");
        let bundle = windlass_bundle::load_bundle(&dir).unwrap();
        let meta = BundleMetadata::from_bundle(&bundle);
        assert!(meta.display_name.is_some());
        assert!(!meta.owned_apis.is_empty());
    }
}
