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
    /// Fields windlass leaves to people (an autoscaler's replicas, an annotation another tool
    /// writes): on the objects the install writes that a rule matches, the fields its JSON
    /// pointers name are not applied, so an edit of them stands and is never put back. A
    /// value only windlass had set goes back to the API server's default when windlass stops
    /// applying it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore_differences: Vec<IgnoreDifferences>,
}

/// One rule of `ignoreDifferences`, in the shape Argo CD gives them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IgnoreDifferences {
    /// The API group of the objects (`apps`; empty for the core group). Any group when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Their kind, for example `Deployment`.
    pub kind: String,
    /// Only the object of this name; every object of the kind when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// RFC 6901 pointers into the object, for example `/spec/replicas`.
    #[schemars(length(min = 1), inner(regex(pattern = r"^/")))]
    pub json_pointers: Vec<String>,
}

impl OperatorConfig {
    pub fn is_empty(&self) -> bool {
        *self == OperatorConfig::default()
    }

    /// `object` without the fields [`OperatorConfig::ignore_differences`] leaves to people.
    pub fn without_ignored(&self, object: &serde_json::Value) -> serde_json::Value {
        let mut object = object.clone();
        for rule in &self.ignore_differences {
            if !rule.matches(&object) {
                continue;
            }
            for pointer in &rule.json_pointers {
                remove_pointer(&mut object, pointer);
            }
        }
        object
    }
}

impl IgnoreDifferences {
    fn matches(&self, object: &serde_json::Value) -> bool {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
        object["kind"].as_str() == Some(self.kind.as_str())
            && self.group.as_deref().is_none_or(|g| g == group)
            && self
                .name
                .as_deref()
                .is_none_or(|n| object["metadata"]["name"].as_str() == Some(n))
    }
}

/// Removes what `pointer` names (RFC 6901; nothing when it names nothing).
fn remove_pointer(object: &mut serde_json::Value, pointer: &str) {
    let Some(path) = pointer.strip_prefix('/') else {
        return;
    };
    let tokens: Vec<String> = path
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect();
    let Some((last, parents)) = tokens.split_last() else {
        return;
    };
    let mut here = object;
    for token in parents {
        let next = match here {
            serde_json::Value::Object(map) => map.get_mut(token),
            serde_json::Value::Array(items) => {
                token.parse::<usize>().ok().and_then(|i| items.get_mut(i))
            }
            _ => None,
        };
        let Some(next) = next else {
            return;
        };
        here = next;
    }
    match here {
        serde_json::Value::Object(map) => {
            map.remove(last);
        }
        serde_json::Value::Array(items) => {
            if let Some(i) = last.parse::<usize>().ok().filter(|i| *i < items.len()) {
                items.remove(i);
            }
        }
        _ => {}
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ignored_fields_are_left_out_of_the_objects_a_rule_matches_only() {
        let config = OperatorConfig {
            ignore_differences: vec![IgnoreDifferences {
                group: Some("apps".into()),
                kind: "Deployment".into(),
                name: Some("op".into()),
                json_pointers: vec![
                    "/spec/replicas".into(),
                    "/spec/template/metadata/annotations/a~1b".into(),
                    "/spec/template/spec/containers/0/image".into(),
                    "/spec/missing/deeper".into(),
                ],
            }],
            ..OperatorConfig::default()
        };
        let deployment = |name: &str| {
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                   "spec": {"replicas": 1, "template": {"metadata": {"annotations": {"a/b": "x", "c": "y"}},
                            "spec": {"containers": [{"name": "operator", "image": "op:1"}]}}}})
        };
        let kept = config.without_ignored(&deployment("op"));
        assert_eq!(
            kept["spec"],
            json!({"template": {"metadata": {"annotations": {"c": "y"}},
                   "spec": {"containers": [{"name": "operator"}]}}})
        );
        assert_eq!(
            config.without_ignored(&deployment("other")),
            deployment("other")
        );
        let mut configmap = deployment("op");
        configmap["kind"] = json!("ConfigMap");
        configmap["apiVersion"] = json!("v1");
        assert_eq!(config.without_ignored(&configmap), configmap);
    }
}
