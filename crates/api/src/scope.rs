//! InstallScope: what operators installed in one namespace may do, as windlass computes it from
//! the InstallPolicies (namespaced, written by the manager, read by anyone who may read the
//! namespace's windlass objects).
//!
//! One object per namespace, named [`INSTALL_SCOPE_NAME`], kept for every namespace that has a
//! Subscription or that an InstallPolicy selects. Editing it changes nothing: windlass decides
//! every install from the policies themselves and writes this view back.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::policy::{ClusterScopedGrant, InstallModeType};

/// The name of the one InstallScope in each namespace.
pub const INSTALL_SCOPE_NAME: &str = "windlass";

/// What operators installed in this namespace may do (written by windlass from the
/// InstallPolicies; read-only).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "windlass.dev",
    version = "v1alpha1",
    kind = "InstallScope",
    namespaced,
    shortname = "wscope",
    category = "windlass",
    status = "InstallScopeStatus",
    doc = "What operators installed in this namespace may do, as windlass computes it from the InstallPolicies (written by windlass; read-only).",
    printcolumn(
        name = "Policies",
        type_ = "string",
        json_path = ".status.policySummary"
    ),
    printcolumn(name = "Install As", type_ = "string", json_path = ".status.installAs"),
    printcolumn(
        name = "Install Modes",
        type_ = "string",
        json_path = ".status.installModeSummary"
    ),
    printcolumn(
        name = "Cluster Scoped",
        type_ = "string",
        json_path = ".status.clusterScopedSummary"
    ),
    printcolumn(
        name = "Summary",
        type_ = "string",
        json_path = ".status.summary",
        priority = "1"
    )
)]
// Braces, not a unit struct: serde writes a unit struct as `null`, and `spec` must be `{}`.
#[allow(clippy::empty_structs_with_brackets)]
pub struct InstallScopeSpec {}

/// What the namespace may do: each way an install can be permitted, and their union in words.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallScopeStatus {
    /// The InstallPolicies that select the namespace, by name (the order they are tried in),
    /// comma-separated; `none` without one.
    #[serde(default)]
    pub policy_summary: String,
    /// Whom installs here act as (`ServiceAccount NAME`, the manager for trusted namespaces;
    /// both, with the policies, when they differ).
    #[serde(default)]
    pub install_as: String,
    /// Every install mode some grant allows, comma-separated.
    #[serde(default)]
    pub install_mode_summary: String,
    /// Every cluster-scoped grant some policy makes, comma-separated; `none` without one.
    #[serde(default)]
    pub cluster_scoped_summary: String,
    /// The grants in one sentence each.
    #[serde(default)]
    pub summary: String,
    /// Each way an install may be permitted, in the order windlass tries them: each selecting
    /// policy, then what every namespace may do without one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<InstallGrant>,
}

/// What one policy (or the baseline) lets an install in the namespace do.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallGrant {
    /// The InstallPolicy; absent for what every namespace may do without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// Whom such an install acts as.
    pub install_as: String,
    /// Catalogs it may come from (empty: any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub catalogs: Vec<String>,
    /// Packages it may be (empty: any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<String>,
    /// Install modes it may use (OwnNamespace always).
    pub install_modes: Vec<InstallModeType>,
    /// Namespaces besides its own an operator may watch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_namespaces: Vec<String>,
    /// Cluster-scoped objects the manager may create for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_scoped: Vec<ClusterScopedGrant>,
}
