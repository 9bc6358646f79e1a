//! Blueprint: the resolved, recorded plan for one package, with its revision history.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    condition::{Condition, conditions_schema},
    config::{Approval, OperatorConfig},
    subscription::CrdDeletionPolicy,
};

/// The plan for one operator package: which CSV should be installed (`clusterServiceVersionName`),
/// what ran before it (`oldVersion`), the dependency closure, and every revision applied.
/// Setting `clusterServiceVersionName` back to `oldClusterServiceVersionName` is a manual
/// rollback.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "windlass.dev",
    version = "v1alpha1",
    kind = "Blueprint",
    namespaced,
    status = "BlueprintStatus",
    shortname = "bp",
    category = "windlass",
    doc = "The resolved, recorded plan for one operator package: target CSV, old version, dependencies and revision history.",
    printcolumn(name = "Package", type_ = "string", json_path = ".spec.package"),
    printcolumn(name = "Version", type_ = "string", json_path = ".status.version"),
    printcolumn(name = "Old Version", type_ = "string", json_path = ".spec.oldVersion"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    printcolumn(
        name = "Catalog",
        type_ = "string",
        json_path = ".spec.bundle.catalog",
        priority = "1"
    ),
    printcolumn(
        name = "Approval",
        type_ = "string",
        json_path = ".spec.approval",
        priority = "1"
    ),
    printcolumn(
        name = "Revision",
        type_ = "integer",
        json_path = ".spec.revision",
        priority = "1"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct BlueprintSpec {
    pub package: String,
    /// The target: the CSV that should be installed.
    #[serde(rename = "clusterServiceVersionName")]
    pub cluster_service_version_name: String,
    /// Where the target's bundle comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<ResolvedBundle>,
    /// The semver version of the last revision that Succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_version: Option<String>,
    /// The CSV name of the last revision that Succeeded.
    #[serde(
        default,
        rename = "oldClusterServiceVersionName",
        skip_serializing_if = "Option::is_none"
    )]
    pub old_cluster_service_version_name: Option<String>,
    /// Counts the plans this Blueprint has carried; each new target is a new revision. Set by
    /// the Blueprint controller.
    // Left out when zero (and `approved`, `force` when false) so that an apply built from this
    // type never takes these fields over from the controller or from people.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub revision: i64,
    #[serde(default)]
    pub approval: Approval,
    /// With Manual approval, the plan waits in RequiresApproval until this is true; reset when
    /// a new revision starts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approved: bool,
    /// Allow a rollback the rules refuse (across a minor or major version); recorded in history.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
    /// Bundles this one needs, installed first, in dependency order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<ResolvedBundle>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_namespaces: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "OperatorConfig::is_empty")]
    pub config: OperatorConfig,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline_seconds: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automatic_rollback: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_limit: Option<i64>,
    /// What happens to the CRDs this Blueprint applied when it is deleted (copied from the
    /// Subscription). Custom resources are never deleted.
    #[serde(default)]
    pub crd_deletion_policy: CrdDeletionPolicy,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// One bundle the resolver chose, pinned to where it came from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedBundle {
    pub package: String,
    #[serde(rename = "clusterServiceVersionName")]
    pub cluster_service_version_name: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Content digest (`sha256:...`) the bundle was resolved at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum BlueprintPhase {
    Pending,
    RequiresApproval,
    Installing,
    Succeeded,
    Failed,
    RollingBack,
    RolledBack,
}

/// One step of plan execution, in order: CRDs, other objects, the CSV.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanStep {
    pub name: String,
    /// `Pending`, `InProgress`, `Done`, `Blocked` or `Failed`.
    pub status: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RevisionOutcome {
    InProgress,
    Completed,
    Failed,
    /// Failed, then undone by the rollback revision that followed it.
    RolledBack,
    /// Replaced by a newer target before it completed.
    Superseded,
}

/// One revision as `status.history` lists it; its content is stored in the cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevisionRecord {
    pub revision: i64,
    pub version: String,
    #[serde(rename = "clusterServiceVersionName")]
    pub cluster_service_version_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// When windlass began applying it (empty while it waits for dependencies or approval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    pub outcome: RevisionOutcome,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// True when the rules refused this move and `force` allowed it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forced: bool,
    /// Set on a rollback: the earlier revision whose stored content this one re-installs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored_from: Option<i64>,
}

/// A target that failed and was rolled back automatically. It is not tried again until the
/// bundle's digest changes or someone changes the Blueprint (a `metadata.generation` above
/// `generation`), so a broken version does not flap between install and rollback.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeldBack {
    #[serde(rename = "clusterServiceVersionName")]
    pub cluster_service_version_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// The Blueprint's generation once the rollback was recorded.
    pub generation: i64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlueprintStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<BlueprintPhase>,
    /// The version of the CSV now installed or being installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan: Vec<PlanStep>,
    /// Newest first, pruned to the history limit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<RevisionRecord>,
    /// The target that failed and is not retried while the Blueprint's intent is unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_back: Option<HeldBack>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "conditions_schema")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}
