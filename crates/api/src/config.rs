//! Settings shared by Subscription, Blueprint and ClusterServiceVersion.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, EnvVar, ResourceRequirements, Toleration, Volume, VolumeMount,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Overrides applied to every container of the operator's Deployments, like OLM's
/// `Subscription.spec.config`. Env vars and volumes are added (replacing ones of the same
/// name); resources, nodeSelector, tolerations and affinity replace the bundle's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorConfig {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<Volume>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volume_mounts: Vec<VolumeMount>,
    /// Added to the pod template's annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl OperatorConfig {
    pub fn is_empty(&self) -> bool {
        *self == OperatorConfig::default()
    }
}

/// How a Subscription picks the next version. One vocabulary everywhere (CLI and API).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum UpgradePolicy {
    /// Follow channel edges (`replaces`, `skips`, `olm.skipRange`), one step toward the head.
    #[default]
    Olm,
    /// The highest version reachable along channel edges.
    Semver,
    /// Any version in range, downgrades included.
    Any,
}

/// Who may start an install or upgrade.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Approval {
    #[default]
    Automatic,
    /// The Blueprint waits in RequiresApproval until `spec.approved` is true.
    Manual,
}

/// The default progress deadline: how long a new version has to become healthy.
pub const DEFAULT_PROGRESS_DEADLINE_SECONDS: i64 = 600;
/// The default number of revisions a Blueprint keeps.
pub const DEFAULT_HISTORY_LIMIT: i64 = 10;
