//! Package: one package of one catalog as people see it on a hub (cluster-scoped, written by
//! the manager, readable by everyone who may view windlass objects).
//!
//! One object per (catalog, package) pair, named by [`crate::names::package_view::name`]. It
//! is a view: installs are decided from the served catalogs, never from these objects, and an
//! edit is put back.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One package a catalog offers: what new installs get, who provides it, and whether it is
/// listed (written by windlass; read-only).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "windlass.dev",
    version = "v1alpha1",
    kind = "Package",
    shortname = "wpkg",
    category = "windlass",
    status = "PackageStatus",
    doc = "One package of one catalog as a hub shows it: default channel, latest version, provider, and whether it is listed (written by windlass; read-only).",
    printcolumn(name = "Package", type_ = "string", json_path = ".status.package"),
    printcolumn(name = "Catalog", type_ = "string", json_path = ".status.catalog"),
    printcolumn(
        name = "Default Channel",
        type_ = "string",
        json_path = ".status.defaultChannel"
    ),
    printcolumn(name = "Latest", type_ = "string", json_path = ".status.latestVersion"),
    printcolumn(
        name = "Provider",
        type_ = "string",
        json_path = ".status.provider.name"
    ),
    printcolumn(
        name = "Provider Type",
        type_ = "string",
        json_path = ".status.provider.type"
    ),
    printcolumn(name = "Listed", type_ = "boolean", json_path = ".status.listed"),
    printcolumn(
        name = "Delisted",
        type_ = "string",
        json_path = ".status.delistedSummary",
        priority = "1"
    ),
    printcolumn(
        name = "Channels",
        type_ = "string",
        json_path = ".status.channelSummary",
        priority = "1"
    )
)]
// Braces, not a unit struct: serde writes a unit struct as `null`, and `spec` must be `{}`.
#[allow(clippy::empty_structs_with_brackets)]
pub struct PackageSpec {}

/// What the catalog offers of the package.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PackageStatus {
    /// The package, as the catalog names it.
    pub package: String,
    /// The Catalog that offers it.
    pub catalog: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_channel: Option<String>,
    /// The version a new install of the default channel gets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<PackageProvider>,
    /// Whether new Subscriptions may install any version of it.
    pub listed: bool,
    /// Each channel and the version a new install of it gets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub channels: Vec<PackageChannel>,
    /// `stable=1.1.0,beta=1.2.0`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub channel_summary: String,
    /// Versions new Subscriptions may install, newest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<String>,
    /// Versions the catalog's admin delisted, newest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delisted_versions: Vec<String>,
    /// `all`, or the delisted versions, comma-separated.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub delisted_summary: String,
    /// Why the admin delisted what is delisted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delisted_reason: Option<String>,
    /// Versions the catalog has but does not offer because they fail lint (the Catalog's
    /// status says why).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held_back: Vec<String>,
}

/// Who provides the package.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PackageProvider {
    /// The name shown (the English one of an internationalised name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The name by language, when the bundle gives one per language.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub names: BTreeMap<String, String>,
    /// `custom`, `community`, `certified` or `platform`.
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// A channel and what a new install of it gets.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PackageChannel {
    pub name: String,
    /// The CSV a new install of the channel gets; absent when every version is delisted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}
