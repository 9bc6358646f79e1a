//! ClusterVersion: which release of the platform the cluster should run (cluster-scoped, one
//! object named [`CLUSTER_VERSION_NAME`], written by cluster admins), and where the update to
//! it stands.
//!
//! windlass moves the cluster to `spec.desiredUpdate` level by level, as the OpenShift Cluster
//! Version Operator does: every run level of the release payload is applied and healthy before
//! the next starts, and `status` says which level and component are being applied and what
//! they wait for.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::condition::Condition;

/// The name of the one ClusterVersion.
pub const CLUSTER_VERSION_NAME: &str = "version";

/// Which release the cluster should run.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "windlass.dev",
    version = "v1alpha1",
    kind = "ClusterVersion",
    shortname = "wcv",
    category = "windlass",
    status = "ClusterVersionStatus",
    doc = "Which release of the platform the cluster should run, and where the update to it stands (one object, named version).",
    printcolumn(
        name = "Version",
        type_ = "string",
        json_path = ".status.desired.version"
    ),
    printcolumn(
        name = "Available",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Available\")].status"
    ),
    printcolumn(
        name = "Progressing",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Progressing\")].status"
    ),
    printcolumn(
        name = "Since",
        type_ = "date",
        json_path = ".status.conditions[?(@.type==\"Progressing\")].lastTransitionTime"
    ),
    printcolumn(
        name = "Status",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Progressing\")].message"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterVersionSpec {
    /// The release to move to. Without it windlass changes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_update: Option<DesiredUpdate>,
    /// How long one run level may take to become healthy before the update is reported
    /// failing at it (default 600). The update keeps trying; it never skips a level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level_deadline_seconds: Option<i64>,
    /// Pull payloads over plain HTTP (a registry on loopback, for tests and demos).
    #[serde(default, rename = "plainHTTP")]
    pub plain_http: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<ReleaseRollback>,
    /// A Cincinnati update service (`windlass release graph serve`, or OpenShift's), asked
    /// `GET upstream?channel=&version=&arch=` for the releases the cluster may move to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// The channel to ask the update service about (`stable-4.2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// How often the update service is asked again and the `PromQL` risks of conditional
    /// updates are evaluated again (default 300). A change of `upstream`, `channel` or
    /// `prometheus` asks at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 10))]
    pub update_check_interval_seconds: Option<i64>,
    /// The Prometheus-compatible query API (Prometheus, Thanos Querier, ...) that `PromQL`
    /// risks of conditional updates are evaluated against. Without it such risks cannot be
    /// evaluated, and an update carrying one is not recommended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus: Option<PrometheusEndpoint>,
    /// Payload objects windlass leaves alone (as the CVO's `spec.overrides`): one with
    /// `unmanaged: true` is neither applied, waited on, nor put back when it drifts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<ComponentOverride>,
    /// Which optional components the cluster runs, as OpenShift's
    /// `spec.capabilities`: manifests annotated `capability.openshift.io/name` are applied only
    /// when every capability they name is enabled. Without it every capability is enabled.
    /// An enabled capability stays enabled through later updates and spec changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<CapabilitiesSpec>,
    /// The cluster profile manifests are chosen for (`include.release.openshift.io/<profile>`);
    /// `self-managed-high-availability` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub profile: Option<String>,
    /// How long a ClusterOperator may report `Degraded=True` or `Available=False` before the
    /// cluster is `Failing` naming it (default 600): operators go degraded for moments while
    /// they roll out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub operator_grace_seconds: Option<i64>,
    /// `Manual`: an update starts only once `spec.desiredUpdate.approvedPlan` names the digest
    /// of the plan windlass previewed for it (`status.plan`: what each level creates, changes
    /// and deletes). `Automatic` (the default): it starts once its checks pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ReleaseApproval>,
    /// HTTP signature stores in the CVO's layout (`<url>/sha256=<hex>/signature-<n>`), asked
    /// for OpenPGP signatures by the keys of the manager namespace's verification ConfigMaps
    /// (annotated `release.openshift.io/verification-config-map`). Set, they replace the
    /// stores those ConfigMaps name, as OpenShift's `spec.signatureStores` does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signature_stores: Vec<SignatureStoreSpec>,
}

/// One HTTP signature store.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignatureStoreSpec {
    /// `https://` (or `http://` on loopback) base URL of the store.
    pub url: String,
    /// A ConfigMap of the manager's namespace with the PEM CA bundle of an `https` store (data
    /// key `ca.crt` unless `key` names another); without it the system's roots are trusted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_config_map: Option<DataKeyRef>,
}

/// Whether an update waits for a person to approve its plan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ReleaseApproval {
    #[default]
    Automatic,
    Manual,
}

/// What an update does to the cluster, level by level, as previewed before it started.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReleasePlan {
    pub version: String,
    pub image: String,
    /// What an approval names: the digest of the image and of every level's changes.
    pub digest: String,
    /// Whether `spec.desiredUpdate.approvedPlan` names this digest.
    #[serde(default)]
    pub approved: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<LevelPlan>,
}

/// One level's changes: objects by `Kind namespace/name`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LevelPlan {
    pub name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub create: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub change: Vec<ObjectChange>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delete: Vec<String>,
    #[serde(default)]
    pub unchanged: i64,
}

/// An object an update changes, and the fields it changes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectChange {
    pub object: String,
    pub fields: Vec<String>,
}

/// The pre-update readiness report of one release.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseReadiness {
    pub version: String,
    pub image: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<ReadinessFinding>,
}

/// One thing that would block or break an update.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadinessFinding {
    /// What `acceptRisks` names to accept it (`PodDisruptionBudget/<ns>/<name>`,
    /// `CriticalAlert/<alert>`, `APINoLongerServed/<crd>/<version>`,
    /// `ClusterOperatorUpgradeable-<name>`, `AdminAckRequired`).
    pub name: String,
    /// `DisruptionBudget`, `CriticalAlert`, `ApiNoLongerServed`, `NotUpgradeable`, ...
    pub kind: String,
    pub message: String,
    /// Whether `acceptRisks` accepts it.
    #[serde(default)]
    pub accepted: bool,
}

/// The capabilities asked for: a named baseline set plus more by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CapabilitiesSpec {
    /// `None`, `v4.11` ... `vCurrent` (OpenShift's sets); `vCurrent` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_capability_set: Option<String>,
    /// Capabilities enabled on top of the baseline set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_enabled_capabilities: Vec<String>,
}

/// The capabilities in effect.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CapabilitiesStatus {
    /// Enabled now: never shrinks, whatever the spec later says.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub enabled_capabilities: Vec<String>,
    /// Every capability windlass knows by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub known_capabilities: Vec<String>,
}

/// One ClusterOperator of the cluster, as the verdict on the release read it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorSummary {
    pub name: String,
    /// The `operator` version the ClusterOperator reports.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// `True`, `False` or `Unknown` (also when the condition is missing).
    pub available: String,
    pub degraded: String,
    pub progressing: String,
    /// The message of the condition that is not as it should be, if any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Since when the operator has been Degraded=True or Available=False.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unhealthy_since: Option<Time>,
}

/// Where `PromQL` risks are evaluated: `GET <url>/api/v1/query?query=...` of the Prometheus
/// HTTP API. The ConfigMap and Secret it names live in the manager's namespace, which only
/// cluster admins write.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrometheusEndpoint {
    /// The base URL of the query API, for example
    /// `https://thanos-querier.openshift-monitoring.svc:9091` or
    /// `http://prometheus-operated.monitoring.svc:9090`.
    pub url: String,
    /// A ConfigMap holding the PEM CA bundle that signed the endpoint's certificate (data key
    /// `ca.crt` unless `key` names another). Only these CAs are trusted then; without it, the
    /// system's root certificates are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_config_map: Option<DataKeyRef>,
    /// A Secret holding a bearer token sent with every query (data key `token` unless `key`
    /// names another), for example the token Secret of a ServiceAccount allowed to read
    /// metrics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_secret: Option<DataKeyRef>,
    /// How long one query may take before it counts as failed (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 300))]
    pub timeout_seconds: Option<i64>,
}

/// One data key of a ConfigMap or Secret in the manager's namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DataKeyRef {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

impl DataKeyRef {
    /// `key`, or `default` when it names none.
    pub fn data_key<'a>(&'a self, default: &'a str) -> &'a str {
        self.key
            .as_deref()
            .filter(|k| !k.is_empty())
            .unwrap_or(default)
    }
}

/// One payload object, by group, kind, namespace and name, and whether windlass manages it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComponentOverride {
    /// The API group (empty for the core group).
    #[serde(default)]
    pub group: String,
    pub kind: String,
    /// Empty for cluster-scoped objects.
    #[serde(default)]
    pub namespace: String,
    pub name: String,
    /// Leave the object to people: windlass stops applying it.
    #[serde(default)]
    pub unmanaged: bool,
}

/// Going back when an update fails.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseRollback {
    /// Go back to the release before a failing update by itself, unless the update has started
    /// a level its payload marks irreversible.
    #[serde(default)]
    pub automatic: bool,
}

/// The release an update moves to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DesiredUpdate {
    /// The release payload image. A tag is resolved to its digest once and the digest is
    /// recorded; the update then applies that digest only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// The version the payload must say it is (checked against its release metadata).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Apply even what verification or preconditions refused: recorded in history (a
    /// payload that did not verify as `verified: false`).
    #[serde(default)]
    pub force: bool,
    /// Preconditions to let through by name (`ClusterOperatorUpgradeable-<name>`), recorded
    /// in history.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accept_risks: Vec<String>,
    /// With `spec.approval: Manual`: the digest of the plan (`status.plan.digest`) a person
    /// approved. A plan that changed since (the cluster moved) needs approving again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_plan: Option<String>,
}

/// Where the cluster stands.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterVersionStatus {
    /// The release the cluster is moving to or runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired: Option<Release>,
    /// Each run level of the update to `desired`, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<LevelStatus>,
    /// What the update is applying or waiting for now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<UpdateProgress>,
    /// A release that failed and was rolled back automatically; it is not tried again until
    /// the ClusterVersion's spec changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_back: Option<HeldBackRelease>,
    /// Newest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<UpdateHistory>,
    /// How long each run level took in the last completed updates, which estimates how long
    /// the next update's levels take.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub level_durations: Vec<LevelDurations>,
    /// What the update service recommends from the current release, newest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub available_updates: Vec<AvailableRelease>,
    /// Updates recommended only where their risks do not apply (or are accepted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditional_updates: Vec<ConditionalRelease>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<CapabilitiesStatus>,
    /// What the cluster said about the last update asked for before it started: each finding
    /// by the name `spec.desiredUpdate.acceptRisks` accepts it by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readiness: Option<ReleaseReadiness>,
    /// With `spec.approval: Manual`: the plan of the last update asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<ReleasePlan>,
    /// The cluster's ClusterOperators (where the cluster serves that API), whose health is part
    /// of the release's `Available` and `Failing`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operators: Vec<OperatorSummary>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::condition::conditions_schema")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// A release, by digest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Release {
    pub version: String,
    /// The payload image, by digest.
    pub image: String,
    /// Whether its signatures were verified.
    pub verified: bool,
    /// The keys (`<TrustPolicy>/<key>`) whose valid signatures counted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verified_by: Vec<String>,
    /// The image as `spec.desiredUpdate.image` named it (a tag is pinned once).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub requested: String,
    /// The digest of the manifests the plan applies.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manifest_digest: String,
}

/// A release rolled back from, and the spec generation it was asked for in.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeldBackRelease {
    pub image: String,
    pub version: String,
    pub generation: i64,
    pub reason: String,
    /// The release gone back to.
    pub rollback_to: String,
}

/// The state of one run level in the current update.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum LevelState {
    Pending,
    /// Applied, waiting to be healthy.
    Progressing,
    Done,
    /// Not healthy within the deadline (still retried).
    Failing,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LevelStatus {
    /// `manifests/00` for the updater's own levels, else the run level (`10`), `-` for the
    /// files without one.
    pub name: String,
    pub state: LevelState,
    pub manifests: i64,
    /// The components applied in it, comma-separated.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub components: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// The durations of one run level (`manifests/00`, `10`, ...) in the last completed updates.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LevelDurations {
    pub level: String,
    /// How many manifests the level had the last time.
    pub manifests: i64,
    /// Seconds, oldest first (the last few updates).
    pub seconds: Vec<i64>,
}

/// What the update does right now.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateProgress {
    /// The level being applied, and its position among all levels (1-based).
    pub level: String,
    pub position: i64,
    pub levels: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub component: String,
    /// The object it waits for (`Deployment platform-dns/dns-operator`) and what for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub waiting_for: String,
    /// Since when the level has been applied and waiting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<Time>,
    /// When the update should be done, judging by how long its levels took in earlier updates
    /// (absent until an update has completed on this cluster).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_completion_time: Option<Time>,
}

/// The CVO's history states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum UpdateState {
    Completed,
    Partial,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateHistory {
    pub state: UpdateState,
    pub version: String,
    pub image: String,
    pub verified: bool,
    pub started_time: Time,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// What was overridden to start it (`force`), or why it was a rollback.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub accepted_risks: String,
    /// The irreversible run levels this update started: going back past it is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub crossed_irreversible: Vec<String>,
}

/// A release the update graph offers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AvailableRelease {
    pub version: String,
    /// By digest.
    pub image: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub channels: Vec<String>,
}

/// A conditional update: the release, its risks, and whether it is recommended here.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConditionalRelease {
    pub release: AvailableRelease,
    pub risks: Vec<UpdateRisk>,
    /// The `Recommended` condition.
    #[schemars(schema_with = "crate::condition::conditions_schema")]
    pub conditions: Vec<Condition>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateRisk {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub url: String,
    /// How the update service says to tell whether the risk applies here, as it sent them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matching_rules: Vec<RiskMatchingRule>,
    /// `Applies`: whether the risk applies to this cluster (`Unknown` when it could not be
    /// evaluated, with the reason).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::condition::conditions_schema")]
    pub conditions: Vec<Condition>,
}

/// One of a risk's matching rules: `Always`, or `PromQL` with its query.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RiskMatchingRule {
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(default, rename = "promql", skip_serializing_if = "Option::is_none")]
    pub promql: Option<PromQlRule>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PromQlRule {
    /// The query: one sample of value 1 means the risk applies, 0 that it does not.
    pub promql: String,
}
