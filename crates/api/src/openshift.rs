//! OpenShift's `config.openshift.io/v1` ClusterVersion, as the ClusterVersion controller reads it
//! when the manager runs with `--release-api=openshift`. The cluster serves it from OpenShift's
//! own CRD (`config/openshift`, copied from the pinned `github.com/openshift/api` module), so the
//! schema is OpenShift's; these types read the spec fields windlass acts on and leave the rest.
//! The status is written as JSON in OpenShift's shape by the controller's adapter.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::clusterversion::{CapabilitiesSpec, ComponentOverride};

/// The API group and version of OpenShift's ClusterVersion and ClusterOperator.
pub const API_VERSION: &str = "config.openshift.io/v1";

/// OpenShift's ClusterVersion spec, as far as windlass acts on it.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "config.openshift.io",
    version = "v1",
    kind = "ClusterVersion",
    status = "serde_json::Value",
    doc = "OpenShift's ClusterVersion (served from OpenShift's own CRD, never from this type)."
)]
#[serde(rename_all = "camelCase")]
pub struct OpenShiftClusterVersionSpec {
    #[serde(default, rename = "clusterID")]
    pub cluster_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_update: Option<OpenShiftDesiredUpdate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<CapabilitiesSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<ComponentOverride>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signature_stores: Vec<SignatureStore>,
}

/// `spec.desiredUpdate` in OpenShift's words.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenShiftDesiredUpdate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default)]
    pub force: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accept_risks: Vec<AcceptRisk>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AcceptRisk {
    pub name: String,
}

/// An HTTP signature store (`<url>/sha256=<digest>/signature-<n>`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignatureStore {
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<ConfigMapName>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigMapName {
    pub name: String,
}
