//! What the mocked API server serves: a fixed table of built-in and windlass resources, plus
//! whatever the CustomResourceDefinitions it holds define (as a real API server starts serving
//! a CRD's group once it is created). Discovery documents are built from the same table.

use serde_json::{Value, json};

/// One resource the server serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    pub group: String,
    pub version: String,
    pub plural: String,
    pub kind: String,
    pub namespaced: bool,
}

impl Resource {
    fn new(api_version: &str, plural: &str, kind: &str, namespaced: bool) -> Resource {
        let (group, version) = split_api_version(api_version);
        Resource {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            kind: kind.into(),
            namespaced,
        }
    }

    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// `("apps", "v1")` from `apps/v1`, `("", "v1")` from `v1`.
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.split_once('/').unwrap_or(("", api_version))
}

/// The kinds a windlass manager touches, as a Kubernetes 1.3x server serves them.
pub fn built_in() -> Vec<Resource> {
    let r = Resource::new;
    vec![
        r("v1", "namespaces", "Namespace", false),
        r("v1", "secrets", "Secret", true),
        r("v1", "configmaps", "ConfigMap", true),
        r("v1", "serviceaccounts", "ServiceAccount", true),
        r("v1", "services", "Service", true),
        r("v1", "events", "Event", true),
        r("events.k8s.io/v1", "events", "Event", true),
        r("apps/v1", "deployments", "Deployment", true),
        r("rbac.authorization.k8s.io/v1", "roles", "Role", true),
        r(
            "rbac.authorization.k8s.io/v1",
            "rolebindings",
            "RoleBinding",
            true,
        ),
        r(
            "rbac.authorization.k8s.io/v1",
            "clusterroles",
            "ClusterRole",
            false,
        ),
        r(
            "rbac.authorization.k8s.io/v1",
            "clusterrolebindings",
            "ClusterRoleBinding",
            false,
        ),
        r(
            "apiextensions.k8s.io/v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            false,
        ),
        r("windlass.dev/v1alpha1", "blueprints", "Blueprint", true),
        r(
            "windlass.dev/v1alpha1",
            "subscriptions",
            "Subscription",
            true,
        ),
        r(
            "windlass.dev/v1alpha1",
            "clusterserviceversions",
            "ClusterServiceVersion",
            true,
        ),
        r(
            "windlass.dev/v1alpha1",
            "installpolicies",
            "InstallPolicy",
            false,
        ),
        r(
            "windlass.dev/v1alpha1",
            "trustpolicies",
            "TrustPolicy",
            false,
        ),
        r("windlass.dev/v1alpha1", "catalogs", "Catalog", false),
    ]
}

/// The resources a stored CRD serves, one per served version.
pub fn served_by_crd(crd: &Value) -> Vec<Resource> {
    let text = |pointer: &str| crd.pointer(pointer).and_then(Value::as_str).unwrap_or("");
    let group = text("/spec/group");
    let plural = text("/spec/names/plural");
    let kind = text("/spec/names/kind");
    let namespaced = text("/spec/scope") == "Namespaced";
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v["served"].as_bool().unwrap_or(false))
        .filter_map(|v| v["name"].as_str())
        .map(|version| Resource {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            kind: kind.into(),
            namespaced,
        })
        .collect()
}

/// The APIResourceList of one group version, as `GET /api/v1` or `GET /apis/<group>/<version>`
/// returns it.
pub fn discovery_document(api_version: &str, resources: &[Resource]) -> Value {
    let entries: Vec<Value> = resources
        .iter()
        .filter(|r| r.api_version() == api_version)
        .flat_map(|r| {
            let main = json!({
                "name": r.plural,
                "singularName": r.kind.to_lowercase(),
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": ["create", "delete", "deletecollection", "get", "list", "patch",
                          "update", "watch"],
            });
            let status = json!({
                "name": format!("{}/status", r.plural),
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": ["get", "patch", "update"],
            });
            [main, status]
        })
        .collect();
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": api_version,
        "resources": entries,
    })
}
