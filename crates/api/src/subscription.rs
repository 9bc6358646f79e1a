//! Subscription: what a user wants installed and kept up to date.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    condition::{Condition, conditions_schema},
    config::{Approval, OperatorConfig, UpgradePolicy},
};

/// A request to install an operator package from a catalog and keep it up to date.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "windlass.dev",
    version = "v1alpha1",
    kind = "Subscription",
    namespaced,
    status = "SubscriptionStatus",
    shortname = "wsub",
    category = "windlass",
    doc = "A request to install an operator package from a catalog and keep it up to date.",
    printcolumn(name = "Package", type_ = "string", json_path = ".spec.package"),
    printcolumn(name = "Channel", type_ = "string", json_path = ".spec.channel"),
    printcolumn(
        name = "Installed",
        type_ = "string",
        json_path = ".status.installedCSV"
    ),
    printcolumn(name = "State", type_ = "string", json_path = ".status.state"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionSpec {
    /// The operator package, as the catalog names it.
    pub package: String,
    /// The channel to follow; the package's default channel when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// Only versions in this range are installed (blang or Masterminds syntax, e.g. `>=1.2 <2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_range: Option<String>,
    /// The CSV to install first instead of the channel head.
    #[serde(
        default,
        rename = "startingCSV",
        skip_serializing_if = "Option::is_none"
    )]
    pub starting_csv: Option<String>,
    /// The Catalog to install from; all catalogs by priority when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<String>,
    #[serde(default)]
    pub approval: Approval,
    /// Compute and keep a plan preview (`windlass plan`) for every revision even when approval
    /// is Automatic; it is recorded, not waited on. Manual approval always previews.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preview: bool,
    /// Namespaces the operator watches. Omitted: all namespaces when the bundle supports
    /// AllNamespaces, otherwise this Subscription's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_namespaces: Option<Vec<String>>,
    /// Overrides for the operator's Deployments.
    #[serde(default, skip_serializing_if = "OperatorConfig::is_empty")]
    pub config: OperatorConfig,
    #[serde(default)]
    pub upgrade_policy: UpgradePolicy,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<RollbackPolicy>,
    /// How many revisions the Blueprint keeps (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_limit: Option<i64>,
    /// What happens to the operator's CRDs when this Subscription is deleted.
    #[serde(default)]
    pub crd_deletion_policy: CrdDeletionPolicy,
}

/// Automatic rollback of failed upgrades.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RollbackPolicy {
    /// Roll back by itself when a new version fails or misses its deadline (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automatic: Option<bool>,
    /// How long a new version has to become healthy (default 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline_seconds: Option<i64>,
}

/// Deleting a Subscription never deletes custom resources; CRDs only when asked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum CrdDeletionPolicy {
    #[default]
    Keep,
    Delete,
}

/// Where a Subscription stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum SubscriptionState {
    AtLatestKnown,
    UpgradeAvailable,
    UpgradePending,
    Upgrading,
    UpgradeFailed,
    RolledBack,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<SubscriptionState>,
    /// The CSV that last Succeeded.
    #[serde(
        default,
        rename = "installedCSV",
        skip_serializing_if = "Option::is_none"
    )]
    pub installed_csv: Option<String>,
    /// The CSV windlass is installing or has installed now.
    #[serde(
        default,
        rename = "currentCSV",
        skip_serializing_if = "Option::is_none"
    )]
    pub current_csv: Option<String>,
    /// The Blueprint this Subscription owns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blueprint: Option<String>,
    /// Subscriptions that need this one (it was created as their dependency).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_by: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "conditions_schema")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}
