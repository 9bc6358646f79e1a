//! What the tenant-escape tests share: a tenant with their own namespace and policy, the
//! cluster-scoped objects they make, and the reads that prove nothing of an install exists.

use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{Secret, ServiceAccount},
    rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding},
};
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use windlass_api::{
    Blueprint, Catalog, ConditionStatus, InstallPolicy, Package,
    names::{conditions, labels, package_view},
};
use windlass_testkit::{
    TestNamespace,
    lifecycle::{condition, wait_object},
    require_manager, unique_name, wait_until_authorized,
};

use crate::tenancy::{csvs_in, tenant};

pub(crate) const TIMEOUT: Duration = Duration::from_secs(180);

/// The least time an absence is watched for after the condition that proves the controller
/// decided: a reconcile that went on to apply would have applied by then.
pub(crate) const AT_LEAST: Duration = Duration::from_secs(10);

/// The ServiceAccount acme-db's CSV runs its operator as (and names its RBAC after).
pub(crate) const ACME_DB_ACCOUNT: &str = "acme-db-operator";

/// A tenant: the admin's client, their namespace and a client acting as them.
pub(crate) struct Tenant {
    pub(crate) admin: Client,
    pub(crate) ns: TestNamespace,
    pub(crate) user: String,
    pub(crate) client: Client,
}

impl Tenant {
    /// A tenant's namespace (no policy covers it but the test's own) labelled `labels`, and
    /// a user bound to `edit` there.
    pub(crate) async fn new(prefix: &str, labels: &[(&str, &str)]) -> Tenant {
        require_manager();
        let admin = windlass_testkit::client().await;
        let ns = TestNamespace::tenant_with_labels(&admin, prefix, labels).await;
        let (user, client) = tenant(&admin, &ns.name).await;
        Tenant {
            admin,
            ns,
            user,
            client,
        }
    }

    pub(crate) fn namespace(&self) -> &str {
        &self.ns.name
    }

    /// Lets the tenant do anything to windlass's `resource` in their namespace, as a role a
    /// platform team aggregates into `edit` would.
    pub(crate) async fn may_write(&self, resource: &str) {
        let name = format!("writes-{resource}");
        let role: Role = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": self.namespace()},
            "rules": [{"apiGroups": ["windlass.dev"], "resources": [resource], "verbs": ["*"]}],
        }))
        .unwrap();
        Api::<Role>::namespaced(self.admin.clone(), self.namespace())
            .create(&PostParams::default(), &role)
            .await
            .unwrap_or_else(|e| panic!("creating Role {name}: {e}"));
        let binding: RoleBinding = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": self.namespace()},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": self.user}],
        }))
        .unwrap();
        Api::<RoleBinding>::namespaced(self.admin.clone(), self.namespace())
            .create(&PostParams::default(), &binding)
            .await
            .unwrap_or_else(|e| panic!("binding Role {name}: {e}"));
        wait_until_authorized(
            &self.admin,
            &self.user,
            self.namespace(),
            ("windlass.dev", resource, "create"),
        )
        .await;
    }
}

/// An InstallPolicy of the test's own for one namespace, which the test may narrow or delete;
/// deleted when dropped if it is still there.
pub(crate) struct Policy {
    pub(crate) name: String,
    pub(crate) admin: Client,
}

impl Policy {
    pub(crate) async fn create(admin: &Client, namespace: &str, spec: Value) -> Policy {
        let name = unique_name("escapes-policy");
        let mut spec = spec;
        spec["namespaces"] = json!([namespace]);
        let policy: InstallPolicy = serde_json::from_value(json!({
            "apiVersion": "windlass.dev/v1alpha1", "kind": "InstallPolicy",
            "metadata": {"name": name}, "spec": spec,
        }))
        .unwrap();
        Api::<InstallPolicy>::all(admin.clone())
            .create(&PostParams::default(), &policy)
            .await
            .expect("creating the InstallPolicy");
        Policy {
            name,
            admin: admin.clone(),
        }
    }

    pub(crate) fn api(&self) -> Api<InstallPolicy> {
        Api::all(self.admin.clone())
    }

    /// Replaces what the policy grants of cluster-scoped objects, as an admin narrowing it.
    pub(crate) async fn grant_only(&self, cluster_scoped: Value) {
        let patch = json!({"spec": {"clusterScoped": cluster_scoped}});
        self.api()
            .patch(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("narrowing the InstallPolicy");
    }

    pub(crate) async fn delete(&self) {
        self.api()
            .delete(&self.name, &DeleteParams::default())
            .await
            .expect("deleting the InstallPolicy");
    }
}

impl Drop for Policy {
    fn drop(&mut self) {
        // Drop cannot await, and the test's runtime may be gone: kubectl, as TestCatalog does.
        let _ = windlass_testkit::kubectl()
            .args([
                "delete",
                "installpolicy.windlass.dev",
                &self.name,
                "--wait=false",
                "--ignore-not-found",
            ])
            .output();
    }
}

/// A cluster-scoped object the test made, deleted when dropped.
pub(crate) struct ClusterObject {
    pub(crate) kind: &'static str,
    pub(crate) name: String,
}

impl Drop for ClusterObject {
    fn drop(&mut self) {
        let _ = windlass_testkit::kubectl()
            .args([
                "delete",
                self.kind,
                &self.name,
                "--wait=false",
                "--ignore-not-found",
            ])
            .output();
    }
}

pub(crate) fn blueprint_condition<'a>(
    blueprint: &'a Blueprint,
    type_: &str,
) -> Option<&'a windlass_api::Condition> {
    condition(&blueprint.status.as_ref()?.conditions, type_)
}

pub(crate) fn permitted_condition(blueprint: &Blueprint) -> Option<(ConditionStatus, &str, &str)> {
    blueprint_condition(blueprint, conditions::blueprint::INSTALL_PERMITTED)
        .map(|c| (c.status, c.reason.as_str(), c.message.as_str()))
}

/// The names of the ClusterRoles and ClusterRoleBindings windlass made for `namespace`: those
/// a CSV there created and those a Blueprint there applied.
pub(crate) async fn cluster_rbac_for(admin: &Client, namespace: &str) -> Vec<String> {
    let mut found = Vec::new();
    for label in [labels::CSV_NAMESPACE, labels::BLUEPRINT_NAMESPACE] {
        let selector = ListParams::default().labels(&format!("{label}={namespace}"));
        let roles = Api::<ClusterRole>::all(admin.clone())
            .list(&selector)
            .await
            .expect("listing ClusterRoles");
        found.extend(
            roles
                .items
                .iter()
                .map(|r| format!("ClusterRole {}", r.name_any())),
        );
        let bindings = Api::<ClusterRoleBinding>::all(admin.clone())
            .list(&selector)
            .await
            .expect("listing ClusterRoleBindings");
        found.extend(
            bindings
                .items
                .iter()
                .map(|b| format!("ClusterRoleBinding {}", b.name_any())),
        );
    }
    found.sort();
    found.dedup();
    found
}

/// `cluster_rbac_for` with each object's resourceVersion, to tell "kept" from "made again".
pub(crate) async fn cluster_rbac_versions(
    admin: &Client,
    namespace: &str,
) -> BTreeMap<String, String> {
    let selector = ListParams::default().labels(&format!("{}={namespace}", labels::CSV_NAMESPACE));
    let mut found = BTreeMap::new();
    for role in Api::<ClusterRole>::all(admin.clone())
        .list(&selector)
        .await
        .unwrap()
    {
        found.insert(
            format!("ClusterRole {}", role.name_any()),
            role.resource_version().unwrap_or_default(),
        );
    }
    for binding in Api::<ClusterRoleBinding>::all(admin.clone())
        .list(&selector)
        .await
        .unwrap()
    {
        found.insert(
            format!("ClusterRoleBinding {}", binding.name_any()),
            binding.resource_version().unwrap_or_default(),
        );
    }
    found
}

/// The ClusterRole (and ClusterRoleBinding) the CSV controller makes for a CSV's
/// `clusterPermissions` entry: named for the namespace, the CSV and the ServiceAccount, so two
/// namespaces installing one CSV never share one.
pub(crate) fn cluster_permission_name(namespace: &str, csv: &str, account: &str) -> String {
    format!("windlass-{namespace}-{csv}-{account}-cluster")
}

/// Watches for `window` that `check` keeps returning `None`, panicking with what it found.
pub(crate) async fn stays_absent<F, Fut>(what: &str, window: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<String>>,
{
    let until = Instant::now() + window;
    loop {
        if let Some(found) = check().await {
            panic!("{what}: {found}");
        }
        if Instant::now() > until {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Nothing of an install exists in `namespace`: no CSV, no operator ServiceAccount or
/// Deployment, no cluster-scoped RBAC, no revision Secret.
pub(crate) async fn nothing_installed(
    admin: &Client,
    namespace: &str,
    account: &str,
) -> Option<String> {
    let csvs = csvs_in(admin, namespace).await;
    if !csvs.is_empty() {
        return Some(format!("ClusterServiceVersions {csvs:?}"));
    }
    let rbac = cluster_rbac_for(admin, namespace).await;
    if !rbac.is_empty() {
        return Some(format!("{rbac:?}"));
    }
    let deployments = Api::<Deployment>::namespaced(admin.clone(), namespace)
        .list(&ListParams::default())
        .await
        .unwrap();
    if !deployments.items.is_empty() {
        let names: Vec<String> = deployments.iter().map(|d| d.name_any()).collect();
        return Some(format!("Deployments {names:?}"));
    }
    if Api::<ServiceAccount>::namespaced(admin.clone(), namespace)
        .get_opt(account)
        .await
        .unwrap()
        .is_some()
    {
        return Some(format!("ServiceAccount {account}"));
    }
    let revisions = Api::<Secret>::namespaced(admin.clone(), namespace)
        .list(&ListParams::default().labels(labels::REVISION))
        .await
        .unwrap();
    if !revisions.items.is_empty() {
        let names: Vec<String> = revisions.iter().map(|s| s.name_any()).collect();
        return Some(format!("revision Secrets {names:?}"));
    }
    None
}

/// A Blueprint as a tenant writes it by hand: the bundle named outright, no Subscription.
pub(crate) fn hand_written(
    namespace: &str,
    package: &str,
    version: &str,
    catalog: &str,
) -> Blueprint {
    let csv = format!("acme-db.v{version}");
    serde_json::from_value(json!({
        "apiVersion": "windlass.dev/v1alpha1", "kind": "Blueprint",
        "metadata": {"name": "db", "namespace": namespace},
        "spec": {
            "package": package,
            "clusterServiceVersionName": csv,
            "bundle": {"package": package, "clusterServiceVersionName": csv, "version": version, "catalog": catalog},
            "targetNamespaces": [namespace],
        },
    }))
    .expect("a Blueprint")
}

/// A namespace where an admin allows hand-written Blueprints, and its tenant, who may write
/// them.
pub(crate) async fn hand_writing_tenant(prefix: &str) -> Tenant {
    let allowed = (
        labels::HAND_WRITTEN_BLUEPRINTS,
        labels::HAND_WRITTEN_BLUEPRINTS_ALLOWED,
    );
    let tenant = Tenant::new(prefix, &[allowed]).await;
    tenant.may_write("blueprints").await;
    tenant
}

/// The admin's delisting of `versions` of `package` in `catalog`, under a field manager of
/// the test's own; `[]` takes the entry out again.
pub(crate) async fn delist(admin: &Client, catalog: &str, package: &str, versions: &[&str]) {
    let entries = if versions.is_empty() {
        json!([])
    } else {
        json!([{"package": package, "versions": versions, "reason": "loses data (ESC-1)"}])
    };
    let document = json!({
        "apiVersion": "windlass.dev/v1alpha1", "kind": "Catalog",
        "metadata": {"name": catalog}, "spec": {"delisted": entries},
    });
    Api::<Catalog>::all(admin.clone())
        .patch(
            catalog,
            &PatchParams::apply("windlass-e2e-escapes"),
            &Patch::Apply(&document),
        )
        .await
        .expect("editing spec.delisted");
}

/// Waits until the catalog's Package view of `package` says `ready`: the catalog store the
/// Blueprint controller reads has taken the Catalog's change in.
pub(crate) async fn package_view(
    admin: &Client,
    catalog: &str,
    package: &str,
    what: &str,
    ready: fn(&[String]) -> bool,
) {
    let api = Api::<Package>::all(admin.clone());
    wait_object(
        &api,
        &package_view::name(catalog, package),
        what,
        TIMEOUT,
        |p| {
            p.status
                .as_ref()
                .is_some_and(|s| ready(&s.delisted_versions))
        },
    )
    .await;
}
