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
        name = "Held Back",
        type_ = "integer",
        json_path = ".status.heldBackCount"
    ),
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
    /// Packages, or versions of them, this catalog no longer offers for new installs. What is
    /// installed keeps running (its Subscription says `Delisted`) and gets no upgrades until
    /// the entry is removed. One entry per package.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "delisted_schema")]
    pub delisted: Vec<DelistedPackage>,
}

/// A package, or some of its versions, taken off the catalog.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DelistedPackage {
    /// The package, as the catalog names it.
    pub package: String,
    /// The versions to delist (`1.0.1`); none delists the whole package.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<String>,
    /// Why, for the people whose Subscriptions it stops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A list-map keyed by package: server-side apply merges entries by package, so the CLI and
/// a GitOps tool can each own their own entries.
fn delisted_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut schema = generator.subschema_for::<Vec<DelistedPackage>>();
    schema.insert("x-kubernetes-list-type".into(), "map".into());
    schema.insert(
        "x-kubernetes-list-map-keys".into(),
        serde_json::json!(["package"]),
    );
    schema
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
    /// Versions the catalog has but does not offer because they fail lint (at most 50 are
    /// listed; `heldBackCount` counts them all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held_back: Vec<HeldBackVersion>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_back_count: Option<i64>,
    /// What else is wrong with the content or with `spec.delisted` (a file that could not be
    /// read, a missing default channel, a delisted version the catalog does not have).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
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

/// A version held back by the listing gate, with the lint errors that hold it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeldBackVersion {
    pub package: String,
    /// The CSV name (or its folder, when the CSV could not be read).
    pub bundle: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Where it was read: a bundle image, a folder or a catalog file.
    pub source: String,
    /// Each lint error, naming its file and field.
    pub findings: Vec<String>,
}
