//! acme-db's sample bundles published under a package and an API group of a test's own, so a
//! test can change, block or roll back its CRD while other tests run: the CRD, the CSV's owned
//! APIs, its RBAC rules and `alm-examples` all name the test's group instead of
//! `acme.windlass.dev`.

use kube::{
    Api, Client,
    api::{DynamicObject, Patch, PatchParams},
    core::{ApiResource, GroupVersionKind},
};
use serde_json::{Value, json};
use windlass_testkit::{
    catalogs::{plain_http, publish_files},
    registry, unique_name, wait_until_authorized,
};

pub struct Isolated {
    pub package: String,
    pub group: String,
    repository: String,
}

impl Isolated {
    pub fn new(prefix: &str) -> Isolated {
        Isolated {
            package: unique_name(prefix),
            group: format!("{}.e2e.windlass.dev", unique_name(prefix)),
            repository: registry().unique_repository(prefix),
        }
    }

    /// The same package and API group, published into a repository of its own (two bundle
    /// images of one version, say).
    pub fn another_repository(&self) -> Isolated {
        Isolated {
            package: self.package.clone(),
            group: self.group.clone(),
            repository: registry().unique_repository(&self.package),
        }
    }

    /// `object` with every mention of acme-db's API group replaced by this test's.
    pub fn rename(&self, object: &mut Value) {
        let text = serde_json::to_string(object)
            .unwrap()
            .replace("acme.windlass.dev", &self.group);
        *object = serde_json::from_str(&text).unwrap();
    }

    /// Publishes the sample bundle `bundles/<path>` (renamed, then `tweak`ed) as a bundle image
    /// tagged with its version; publishing the same version again replaces it (a republish).
    pub async fn publish(&self, path: &str, tweak: impl Fn(&mut Value)) -> String {
        self.publish_adding(path, tweak, &[]).await
    }

    /// [`Isolated::publish`] with files added to the bundle (renamed too).
    pub async fn publish_adding(
        &self,
        path: &str,
        tweak: impl Fn(&mut Value),
        extra: &[(&str, Value)],
    ) -> String {
        let extra: Vec<(&str, Vec<u8>)> = extra
            .iter()
            .map(|(file, object)| {
                let mut object = object.clone();
                self.rename(&mut object);
                (*file, serde_json::to_vec_pretty(&object).unwrap())
            })
            .collect();
        publish_files(
            &plain_http(),
            &self.repository,
            &self.package,
            path,
            |object| {
                self.rename(object);
                tweak(object);
            },
            &extra,
        )
        .await
    }

    pub fn crd_name(&self) -> String {
        format!("databases.{}", self.group)
    }

    /// The Databases of `namespace`, at `version` of the test's group.
    pub fn databases(&self, client: &Client, namespace: &str, version: &str) -> Api<DynamicObject> {
        let gvk = GroupVersionKind::gvk(&self.group, version, "Database");
        Api::namespaced_with(client.clone(), namespace, &ApiResource::from_gvk(&gvk))
    }

    /// Lets the install ServiceAccount of a tenant's `namespace` grant the operator its custom
    /// resources (it may only grant what it holds), as a platform team would.
    pub async fn grant_installer(&self, admin: &Client, namespace: &str) {
        use k8s_openapi::api::rbac::v1::{ClusterRole, RoleBinding};
        let role = format!("{}-apis", self.package);
        Api::<ClusterRole>::all(admin.clone())
            .patch(
                &role,
                &PatchParams::apply("windlass-e2e").force(),
                &Patch::Apply(json!({
                    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "metadata": {"name": role, "labels": {windlass_testkit::TEST_NAMESPACE_LABEL: "true"}},
                    "rules": [{"apiGroups": [self.group], "resources": ["*"], "verbs": ["*"]}],
                })),
            )
            .await
            .expect("a ClusterRole over the test's API group");
        Api::<RoleBinding>::namespaced(admin.clone(), namespace)
            .patch(
                &role,
                &PatchParams::apply("windlass-e2e").force(),
                &Patch::Apply(json!({
                    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": {"name": role},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                    "subjects": [{"kind": "ServiceAccount", "name": "windlass-installer", "namespace": namespace}],
                })),
            )
            .await
            .expect("binding it to the install account");
        let user = format!("system:serviceaccount:{namespace}:windlass-installer");
        wait_until_authorized(
            admin,
            &user,
            namespace,
            (&self.group, "databases", "update"),
        )
        .await;
    }
}

impl Drop for Isolated {
    fn drop(&mut self) {
        // The CRD is cluster-scoped: it outlives the test's namespace unless removed.
        let crds =
            ["databases", "gateways", "monitors"].map(|plural| format!("{plural}.{}", self.group));
        let _ = windlass_testkit::kubectl()
            .args(["delete", "crd", "--wait=false", "--ignore-not-found"])
            .args(&crds)
            .output();
        let _ = windlass_testkit::kubectl()
            .args([
                "delete",
                "clusterrole",
                &format!("{}-apis", self.package),
                "--ignore-not-found",
            ])
            .output();
    }
}
