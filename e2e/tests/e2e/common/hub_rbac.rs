//! RBAC for the hub tests: people with fewer rights than the admin, granted through the API
//! server and removed when dropped, so the hub (acting as them) is refused what they may not do.

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::{
    Api, Client,
    api::{DeleteParams, PostParams},
};
use serde_json::json;
use windlass_testkit::{unique_name, wait_until_authorized, wait_until_refused};

/// Roles that let `user` read Catalogs and a namespace's Subscriptions and Blueprints, and
/// nothing more; removed when dropped.
pub struct ReadOnly {
    name: String,
}

impl ReadOnly {
    pub async fn grant(admin: &Client, user: &str, namespace: &str) -> ReadOnly {
        let name = unique_name("hub-read-only");
        grant_catalog_access(admin, &name, user, &["get", "list", "watch"]).await;
        grant_namespace_reader(
            admin,
            namespace,
            "hub-read-only",
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}),
            &["get", "list", "watch"],
        )
        .await;
        wait_until_authorized(
            admin,
            user,
            namespace,
            ("windlass.dev", "subscriptions", "list"),
        )
        .await;
        wait_until_authorized(admin, user, "", ("windlass.dev", "catalogs", "list")).await;
        ReadOnly { name }
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        remove_cluster_role(&self.name);
    }
}

/// A ClusterRole that lets `user` patch Catalogs (delist and relist), bound until
/// [`CatalogEditor::revoke`] or drop.
pub struct CatalogEditor {
    name: String,
}

impl CatalogEditor {
    pub async fn grant(admin: &Client, user: &str) -> CatalogEditor {
        let name = unique_name("hub-catalog-editor");
        grant_catalog_access(admin, &name, user, &["get", "list", "watch", "patch"]).await;
        wait_until_authorized(admin, user, "", ("windlass.dev", "catalogs", "patch")).await;
        CatalogEditor { name }
    }

    /// Unbinds the role and waits until the API server no longer lets `user` patch Catalogs.
    pub async fn revoke(&self, admin: &Client, user: &str) {
        Api::<ClusterRoleBinding>::all(admin.clone())
            .delete(&self.name, &DeleteParams::default())
            .await
            .unwrap();
        wait_until_refused(admin, user, "", ("windlass.dev", "catalogs", "patch")).await;
    }
}

impl Drop for CatalogEditor {
    fn drop(&mut self) {
        remove_cluster_role(&self.name);
    }
}

/// A ClusterRole `name` allowing `verbs` on Catalogs, bound to `user`.
async fn grant_catalog_access(admin: &Client, name: &str, user: &str, verbs: &[&str]) {
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [{"apiGroups": ["windlass.dev"], "resources": ["catalogs"], "verbs": verbs}],
    });
    create(Api::<ClusterRole>::all(admin.clone()), role).await;
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    });
    create(Api::<ClusterRoleBinding>::all(admin.clone()), binding).await;
}

/// Removes what [`grant_catalog_access`] made, without waiting (a drop cannot await).
fn remove_cluster_role(name: &str) {
    for kind in ["clusterrolebinding", "clusterrole"] {
        let _ = windlass_testkit::kubectl()
            .args(["delete", kind, name, "--ignore-not-found", "--wait=false"])
            .output();
    }
}

/// A Role `name` in `namespace` allowing `verbs` on Subscriptions and Blueprints, bound to
/// `subject` (an RBAC subject: a user or a ServiceAccount).
pub async fn grant_namespace_reader(
    admin: &Client,
    namespace: &str,
    name: &str,
    subject: serde_json::Value,
    verbs: &[&str],
) {
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": name},
        "rules": [{"apiGroups": ["windlass.dev"], "resources": ["subscriptions", "blueprints"], "verbs": verbs}],
    });
    create(Api::<Role>::namespaced(admin.clone(), namespace), role).await;
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [subject],
    });
    create(
        Api::<RoleBinding>::namespaced(admin.clone(), namespace),
        binding,
    )
    .await;
}

/// Creates `object` (given as JSON) through `api`; a refusal fails the test.
async fn create<K>(api: Api<K>, object: serde_json::Value)
where
    K: kube::Resource
        + Clone
        + k8s_openapi::serde::de::DeserializeOwned
        + k8s_openapi::serde::Serialize
        + std::fmt::Debug,
{
    api.create(
        &PostParams::default(),
        &serde_json::from_value(object).unwrap(),
    )
    .await
    .unwrap();
}
