//! TrustPolicy: which keys must have signed which images before windlass uses them
//! (cluster-scoped, written by cluster admins).
//!
//! Key material lives in ConfigMaps or Secrets in the manager's namespace, where only cluster
//! admins write; a policy names them. Every TrustPolicy's rules apply together: an artifact
//! must satisfy every rule, of any policy, that covers its class and repository. Catalog images
//! are checked before they are served, bundle images before their first install, release
//! payloads before an update starts.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use windlass_trust::{ArtifactClass, TrustRule, TrustedKey};

/// Which keys must have signed which images (cluster admins write these).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "windlass.dev",
    version = "v1alpha1",
    kind = "TrustPolicy",
    shortname = "wtrust",
    category = "windlass",
    doc = "Which keys must have signed which images before windlass uses them (cluster admins write these).",
    printcolumn(name = "Keys", type_ = "string", json_path = ".spec.keys[*].name"),
    printcolumn(name = "Rules", type_ = "string", json_path = ".spec.rules[*].name"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct TrustPolicySpec {
    /// The keys rules may name, each from a ConfigMap or a Secret in the manager's namespace.
    #[serde(default)]
    pub keys: Vec<PolicyKey>,
    /// What each class of image needs (every rule that covers an image must be met).
    #[serde(default)]
    pub rules: Vec<TrustRule>,
    /// Classes of image (`Catalog`, `Bundle`, `Release`, `OperatorImage`) that must be signed
    /// wherever they come from, across every TrustPolicy: one no rule covers is refused, and
    /// `unsigned: Report` lets none through unsigned. Empty (the default): images no rule
    /// covers are used, reported as unverified; covered ones are always verified.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub require_signatures: Vec<ArtifactClass>,
}

/// A key, its validity window, and where its public key (PEM) is.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyKey {
    #[serde(flatten)]
    pub key: TrustedKey,
    /// A ConfigMap in the manager's namespace holding the PEM public key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<KeySource>,
    /// A Secret in the manager's namespace holding the PEM public key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<KeySource>,
}

/// One entry of a ConfigMap or Secret.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct KeySource {
    pub name: String,
    /// The data key holding the PEM (default `cosign.pub`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

impl KeySource {
    pub fn data_key(&self) -> &str {
        self.key.as_deref().unwrap_or("cosign.pub")
    }
}
