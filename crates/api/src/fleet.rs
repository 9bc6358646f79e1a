//! Fleets: one change rolled out over many clusters. The hub cluster holds the member clusters'
//! credentials (kubeconfig Secrets in the manager's namespace labelled
//! [`crate::names::labels::FLEET_MEMBER`]), a `Fleet` selecting some of them by label, and
//! `Rollout`s: what to roll out over a Fleet, in which waves, gated on each wave's health.
//!
//! Both kinds are cluster-scoped: they act with the members' credentials, so only those who
//! may write cluster-scoped objects in the hub may create them. Members run their own windlass
//! and keep reconciling on their own; the hub only writes a Subscription (or a ClusterVersion's
//! desired update) into each member, approves the plans a person approved, and rolls back.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::condition::{Condition, conditions_schema};
use crate::subscription::SubscriptionSpec;

/// Member clusters chosen by the labels of their kubeconfig Secrets.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "windlass.dev",
    version = "v1alpha1",
    kind = "Fleet",
    shortname = "wfleet",
    category = "windlass",
    status = "FleetStatus",
    doc = "Member clusters chosen by the labels of their kubeconfig Secrets in the hub's manager namespace.",
    printcolumn(name = "Members", type_ = "integer", json_path = ".status.memberCount"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct FleetSpec {
    /// Selects member Secrets by their labels; empty selects every member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetStatus {
    #[serde(default)]
    pub member_count: i64,
    /// The selected members' names, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "conditions_schema")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// One change rolled out over a Fleet in waves, each gated on the health of the one before.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "windlass.dev",
    version = "v1alpha1",
    kind = "Rollout",
    shortname = "wro",
    category = "windlass",
    status = "RolloutStatus",
    doc = "One change (a Subscription or a release) rolled out over a Fleet's clusters in waves, halted everywhere at the first failure.",
    printcolumn(name = "Fleet", type_ = "string", json_path = ".spec.fleet"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Wave", type_ = "string", json_path = ".status.currentWave"),
    printcolumn(name = "Done", type_ = "integer", json_path = ".status.done"),
    printcolumn(name = "In Flight", type_ = "integer", json_path = ".status.inFlight"),
    printcolumn(name = "Failed", type_ = "integer", json_path = ".status.failed"),
    printcolumn(name = "Total", type_ = "integer", json_path = ".status.total"),
    printcolumn(
        name = "Message",
        type_ = "string",
        json_path = ".status.message",
        priority = "1"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct RolloutSpec {
    /// The Fleet whose members this rolls out to.
    pub fleet: String,
    /// What each member is to run.
    pub target: RolloutTarget,
    /// The waves, in order. A member falls in the first wave that takes it; members no wave
    /// takes are left alone (and listed).
    pub waves: Vec<Wave>,
    /// How long a wave may take to become healthy before the rollout fails at it (default 1800).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wave_deadline_seconds: Option<i64>,
    /// Plans a person approved, per wave, by the wave's digest (`windlass fleet approve`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<WaveApproval>,
    /// Stop here: nothing more is written to any member (a person's halt; resumable by
    /// setting it false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// Roll back every member this rollout changed to what it ran before, each from its own
    /// stored revision (`windlass fleet rollback`). Nothing new is rolled out after it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rollback: bool,
    /// With `rollback`: go back even where a member's own rollback rules refuse (across a
    /// minor version), as `windlass rollback --force` does; recorded in each member as forced.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force_rollback: bool,
}

/// Exactly one of `subscription` or `clusterVersion`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutTarget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription: Option<SubscriptionTarget>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_version: Option<ClusterVersionTarget>,
}

/// A Subscription written into every member, and the version it must reach there.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionTarget {
    /// The member namespace (it must exist there).
    pub namespace: String,
    /// The Subscription's name (default: the package).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub spec: SubscriptionSpec,
    /// The version a member must run to count as done (`1.1.0`). Without it: whatever the
    /// Subscription resolves to, Succeeded and at the latest it knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// The release every member's ClusterVersion moves to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterVersionTarget {
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

/// One wave: which members, how many at once, and how long to watch them after.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Wave {
    pub name: String,
    /// Members whose Secret labels match (of those no earlier wave took).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Or this share of the whole fleet (rounded up), taken in name order from those no
    /// earlier wave took. Neither: every member left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent: Option<i64>,
    /// Members changed at once (default: all of the wave).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<i64>,
    /// How long the whole wave must stay healthy before the next starts (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak_seconds: Option<i64>,
    /// `Manual`: the wave's plans (each member's own preview) wait for a person's approval of
    /// the wave's digest. Default: Manual for the first wave, Automatic after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<WaveApprovalMode>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum WaveApprovalMode {
    Automatic,
    Manual,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaveApproval {
    pub wave: String,
    /// `sha256:...`: the wave's digest as `status.waves[].planDigest` showed it.
    pub plan: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RolloutPhase {
    /// A wave is being rolled out or soaks.
    Progressing,
    /// A wave's plans wait for approval.
    AwaitingApproval,
    /// Every wave is done and healthy.
    Completed,
    /// A member failed, rolled back or stayed unhealthy past the deadline; nothing more is
    /// rolled out.
    Halted,
    Paused,
    /// Rolling the changed members back.
    RollingBack,
    RolledBack,
    /// The spec cannot be acted on (see the message).
    Invalid,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<RolloutPhase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_wave: Option<String>,
    #[serde(default)]
    pub total: i64,
    #[serde(default)]
    pub done: i64,
    #[serde(default)]
    pub in_flight: i64,
    #[serde(default)]
    pub failed: i64,
    /// One line: where the rollout stands, or which member stopped it and why.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waves: Vec<WaveStatus>,
    /// Every member of the Fleet, in wave order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<MemberStatus>,
    /// Members of the Fleet no wave takes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unassigned: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "conditions_schema")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaveStatus {
    pub name: String,
    /// `Waiting`, `AwaitingApproval`, `InProgress`, `Soaking`, `Done` or `Failed`.
    pub state: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<String>,
    /// `sha256:...` over every member's plan digest in this wave (approval names it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_digest: Option<String>,
    /// The digest the wave was approved by; members are approved only for the plans it
    /// covered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_plan: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_time: Option<Time>,
    /// When every member of the wave was last seen healthy together (the soak counts from it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthy_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberStatus {
    pub name: String,
    pub wave: String,
    /// `Pending`, `AwaitingApproval`, `InProgress`, `Done`, `Failed`, `Unreachable`,
    /// `RollingBack`, `RolledBack` or `Untouched`.
    pub state: String,
    /// What the member itself says (its condition text), or why it could not be read.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// What it ran before this rollout changed it (a CSV name, or a release version): where a
    /// fleet rollback returns it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
    /// The version it runs now, as it reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<String>,
    /// Its own plan: revision, digest and summary (Manual waves).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<MemberPlan>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_seen_time: Option<Time>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberPlan {
    pub digest: String,
    /// Covered by the wave's approval.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approved: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub summary: String,
}
