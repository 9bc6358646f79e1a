//! Catalog: a source of operator bundles (cluster-scoped).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::condition::{Condition, conditions_schema};

/// A catalog of operator bundles: a file-based-catalog image, a list of bundle images, or the
/// catalog built into the manager.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "windlass.dev",
    version = "v1alpha1",
    kind = "Catalog",
    status = "CatalogStatus",
    shortname = "wcat",
    category = "windlass",
    doc = "A catalog of operator bundles: a file-based-catalog image, a list of bundle images, or the built-in catalog.",
    printcolumn(name = "Type", type_ = "string", json_path = ".spec.source.type"),
    printcolumn(name = "Priority", type_ = "integer", json_path = ".spec.priority"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Packages", type_ = "integer", json_path = ".status.packages"),
    printcolumn(name = "Verified", type_ = "boolean", json_path = ".status.verified"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct CatalogSpec {
    pub source: CatalogSource,
    /// Higher wins when several catalogs offer the same package (default 0).
    #[serde(default)]
    pub priority: i32,
    /// How often image sources are polled for new content (default 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_seconds: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publisher: Option<String>,
}

/// Where a catalog's content comes from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogSource {
    #[serde(rename = "type")]
    pub type_: CatalogSourceType,
    /// The file-based-catalog image, for type Image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Bundle images, for type BundleImages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bundle_images: Vec<String>,
    /// Talk plain HTTP to the registry (local and test registries).
    #[serde(default, rename = "plainHTTP")]
    pub plain_http: bool,
    /// A `kubernetes.io/dockerconfigjson` Secret in the manager's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_secret: Option<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum CatalogSourceType {
    /// The sample catalog compiled into the manager.
    #[default]
    BuiltIn,
    Image,
    BundleImages,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum CatalogPhase {
    Pending,
    /// Content is current.
    Serving,
    /// The last poll failed; the last good content is still served.
    Unreachable,
    /// The image's signatures do not meet the TrustPolicies; only content that still does
    /// stays served.
    Refused,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<CatalogPhase>,
    /// The digest the served content was pulled at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_digest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packages: Option<i64>,
    /// Whether the served content's image met the TrustPolicies with valid signatures
    /// (false when no rule covers it or an unsigned image is only reported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified: Option<bool>,
    /// The keys whose signatures on the served image counted (`<policy>/<key>`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verified_by: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_poll_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_successful_poll_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "conditions_schema")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}
