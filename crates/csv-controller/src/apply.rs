//! Writing objects: server-side apply under windlass's one field manager, skipped when the
//! cluster already holds what we would write, so a reconcile that changes nothing writes nothing.

use kube::{
    Api, Client,
    api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams},
    core::{ApiResource, GroupVersionKind},
};
use serde_json::Value;

/// The kinds an install strategy creates, with their plural and scope.
const KINDS: &[(&str, &str, &str, bool)] = &[
    ("v1", "ServiceAccount", "serviceaccounts", true),
    ("v1", "Service", "services", true),
    ("v1", "Secret", "secrets", true),
    ("apps/v1", "Deployment", "deployments", true),
    ("rbac.authorization.k8s.io/v1", "Role", "roles", true),
    (
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        "rolebindings",
        true,
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "clusterroles",
        false,
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
    ),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        false,
    ),
    (
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        false,
    ),
];

/// Kinds that are not owned through ownerReferences and so are found by label for cleanup.
pub const EXTERNAL_KINDS: &[&str] = &[
    "Role",
    "RoleBinding",
    "ClusterRole",
    "ClusterRoleBinding",
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
];

pub fn resource(api_version: &str, kind: &str) -> Option<(ApiResource, bool)> {
    let (_, _, plural, namespaced) = KINDS
        .iter()
        .find(|(v, k, _, _)| *v == api_version && *k == kind)?;
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    Some((ApiResource::from_gvk_with_plural(&gvk, plural), *namespaced))
}

pub fn resource_for_kind(kind: &str) -> Option<(ApiResource, bool)> {
    let (api_version, kind, _, _) = KINDS.iter().find(|(_, k, _, _)| *k == kind)?;
    resource(api_version, kind)
}

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("windlass does not install objects of kind {0}")]
    Unsupported(String),
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

fn api(
    client: &Client,
    api_version: &str,
    kind: &str,
    namespace: Option<&str>,
) -> Result<Api<DynamicObject>, ApplyError> {
    let (resource, namespaced) = resource(api_version, kind)
        .ok_or_else(|| ApplyError::Unsupported(format!("{api_version}/{kind}")))?;
    Ok(match (namespaced, namespace) {
        (true, Some(ns)) => Api::namespaced_with(client.clone(), ns, &resource),
        _ => Api::all_with(client.clone(), &resource),
    })
}

/// True when every field of `desired` has the same value in `actual` (lists element-wise and
/// of equal length); fields the server adds (defaults, status) do not count.
pub fn is_subset(desired: &Value, actual: &Value) -> bool {
    match (desired, actual) {
        (Value::Object(want), Value::Object(have)) => want.iter().all(|(k, v)| {
            have.get(k).is_some_and(|h| is_subset(v, h)) || (v.is_null() && !have.contains_key(k))
        }),
        (Value::Array(want), Value::Array(have)) => {
            want.len() == have.len() && want.iter().zip(have).all(|(w, h)| is_subset(w, h))
        }
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        _ => desired == actual,
    }
}

/// Applies `object` unless the cluster already matches it. Returns whether it wrote.
pub async fn apply(
    client: &Client,
    object: &Value,
    field_manager: &str,
) -> Result<bool, ApplyError> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let namespace = object["metadata"]["namespace"].as_str();
    let api = api(client, api_version, kind, namespace)?;
    if let Some(existing) = api.get_opt(name).await? {
        let existing = serde_json::to_value(&existing).unwrap_or_default();
        if is_subset(object, &existing) {
            return Ok(false);
        }
    }
    api.patch(
        name,
        &PatchParams::apply(field_manager).force(),
        &Patch::Apply(object),
    )
    .await?;
    Ok(true)
}

/// Objects of `kind` carrying all `labels`, in any namespace.
pub async fn list_labelled(
    client: &Client,
    kind: &str,
    labels: &str,
) -> Result<Vec<DynamicObject>, kube::Error> {
    let Some((resource, _)) = resource_for_kind(kind) else {
        return Ok(Vec::new());
    };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    Ok(api.list(&ListParams::default().labels(labels)).await?.items)
}

pub async fn delete(
    client: &Client,
    kind: &str,
    namespace: Option<&str>,
    name: &str,
) -> Result<(), kube::Error> {
    let Some((resource, namespaced)) = resource_for_kind(kind) else {
        return Ok(());
    };
    let api: Api<DynamicObject> = match (namespaced, namespace) {
        (true, Some(ns)) => Api::namespaced_with(client.clone(), ns, &resource),
        _ => Api::all_with(client.clone(), &resource),
    };
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn server_defaults_do_not_break_the_subset_but_changes_do() {
        let desired = json!({"spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "a", "image": "x"}]}}}});
        let actual = json!({"spec": {"replicas": 1, "revisionHistoryLimit": 10, "template": {"spec": {
            "containers": [{"name": "a", "image": "x", "imagePullPolicy": "IfNotPresent"}], "dnsPolicy": "ClusterFirst"}}}});
        assert!(is_subset(&desired, &actual));
        let changed = json!({"spec": {"replicas": 2}});
        assert!(!is_subset(&changed, &actual));
        let extra_container =
            json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}}});
        assert!(!is_subset(&extra_container, &actual));
    }

    #[test]
    fn every_external_kind_is_known() {
        for kind in EXTERNAL_KINDS {
            assert!(resource_for_kind(kind).is_some(), "{kind}");
        }
    }
}
