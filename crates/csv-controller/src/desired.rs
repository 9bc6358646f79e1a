//! What a CSV's install strategy means in Kubernetes objects: ServiceAccounts, RBAC and
//! Deployments. Pure: plain values in, JSON objects out.

use std::collections::BTreeSet;
use windlass_api::names::annotations;

use serde_json::{Value, json};
use windlass_api::{OperatorConfig, policy::ClusterScopedGrant};
use windlass_bundle::csv::{ClusterServiceVersion as OlmCsv, Permissions};

use crate::names;
use windlass_api::names::labels;

/// Everything the builders need to know about one CSV.
pub struct InstallContext<'a> {
    pub csv_name: &'a str,
    pub namespace: &'a str,
    /// The ownerReference to the windlass CSV, put on every object in its namespace.
    pub owner: Value,
    pub definition: &'a OlmCsv,
    /// Empty means all namespaces.
    pub target_namespaces: &'a [String],
    pub config: &'a OperatorConfig,
    /// Images the Deployments run from a mirror instead of where the bundle names them.
    pub image_rewrites: &'a [windlass_mirror::Rewrite],
    /// The cluster-scoped objects the install may have (its sealed `spec.grant`): cluster-wide
    /// RBAC only with ClusterPermissions, webhook configurations only with Webhooks.
    pub grants: &'a [ClusterScopedGrant],
}

/// One object to apply. `owned` objects live in the CSV's namespace and are garbage-collected
/// through their ownerReference; the rest are cleaned up by the CSV's finalizer.
#[derive(Clone, Debug, PartialEq)]
pub struct DesiredObject {
    pub object: Value,
    pub owned: bool,
}

impl DesiredObject {
    pub fn kind(&self) -> &str {
        self.object["kind"].as_str().unwrap_or_default()
    }
    pub fn name(&self) -> &str {
        self.object["metadata"]["name"].as_str().unwrap_or_default()
    }
    pub fn namespace(&self) -> Option<&str> {
        self.object["metadata"]["namespace"].as_str()
    }
}

impl InstallContext<'_> {
    pub fn granted(&self, grant: ClusterScopedGrant) -> bool {
        self.grants.contains(&grant)
    }

    pub fn all_namespaces(&self) -> bool {
        self.target_namespaces.is_empty() || self.target_namespaces.iter().all(|n| n.is_empty())
    }

    /// Labels every object carries so it can be found (and removed) by its CSV.
    pub fn labels(&self) -> Value {
        json!({
            labels::MANAGED_BY: labels::MANAGED_BY_VALUE,
            labels::CSV: names::label_value(self.csv_name),
            labels::CSV_NAMESPACE: names::label_value(self.namespace),
        })
    }

    fn metadata(&self, name: &str, namespace: Option<&str>) -> Value {
        let mut meta = json!({"name": name, "labels": self.labels()});
        if let Some(ns) = namespace {
            meta["namespace"] = json!(ns);
            if ns == self.namespace {
                meta["ownerReferences"] = json!([self.owner.clone()]);
            }
        }
        meta
    }

    fn object(
        &self,
        api_version: &str,
        kind: &str,
        name: &str,
        namespace: Option<&str>,
        body: Value,
    ) -> DesiredObject {
        let mut object = json!({"apiVersion": api_version, "kind": kind, "metadata": self.metadata(name, namespace)});
        if let (Value::Object(target), Value::Object(fields)) = (&mut object, body) {
            target.extend(fields);
        }
        DesiredObject {
            owned: namespace == Some(self.namespace),
            object,
        }
    }

    /// The namespaces namespaced permissions are granted in: the targets and the operator's own.
    fn permission_namespaces(&self) -> BTreeSet<&str> {
        let mut namespaces: BTreeSet<&str> =
            self.target_namespaces.iter().map(String::as_str).collect();
        namespaces.insert(self.namespace);
        namespaces
    }
}

/// Every object of the install strategy, in apply order: ServiceAccounts, RBAC, Deployments.
pub fn build(ctx: &InstallContext<'_>) -> Vec<DesiredObject> {
    let mut objects = service_accounts(ctx);
    let strategy = ctx
        .definition
        .spec
        .install
        .as_ref()
        .and_then(|i| i.spec.as_ref());
    if let Some(strategy) = strategy {
        for permission in &strategy.permissions {
            objects.extend(namespaced_permission(ctx, permission));
        }
        // Not granted (or withdrawn): none is made, and the prune removes what was.
        if ctx.granted(ClusterScopedGrant::ClusterPermissions) {
            for permission in &strategy.cluster_permissions {
                objects.extend(cluster_permission(ctx, permission, "cluster"));
            }
        }
    }
    objects.extend(deployments(ctx));
    objects
}

fn service_accounts(ctx: &InstallContext<'_>) -> Vec<DesiredObject> {
    let Some(strategy) = ctx
        .definition
        .spec
        .install
        .as_ref()
        .and_then(|i| i.spec.as_ref())
    else {
        return Vec::new();
    };
    let mut names: BTreeSet<&str> = strategy
        .permissions
        .iter()
        .chain(&strategy.cluster_permissions)
        .map(|p| p.service_account_name.as_str())
        .collect();
    for deployment in &strategy.deployments {
        if let Some(sa) = deployment.spec["template"]["spec"]["serviceAccountName"].as_str() {
            names.insert(sa);
        }
    }
    names
        .into_iter()
        .filter(|n| !n.is_empty() && *n != "default")
        .map(|name| ctx.object("v1", "ServiceAccount", name, Some(ctx.namespace), json!({})))
        .collect()
}

fn subject(ctx: &InstallContext<'_>, service_account: &str) -> Value {
    json!([{"kind": "ServiceAccount", "name": service_account, "namespace": ctx.namespace}])
}

/// `permissions`: a Role and RoleBinding in each namespace the operator serves; for an
/// AllNamespaces install a ClusterRole and ClusterRoleBinding, as OLM grants them.
fn namespaced_permission(ctx: &InstallContext<'_>, permission: &Permissions) -> Vec<DesiredObject> {
    if ctx.all_namespaces() {
        if !ctx.granted(ClusterScopedGrant::ClusterPermissions) {
            return Vec::new();
        }
        return cluster_permission(ctx, permission, "all");
    }
    let sa = permission.service_account_name.as_str();
    let name = names::object_name(&[ctx.csv_name, sa]);
    ctx.permission_namespaces()
        .into_iter()
        .flat_map(|ns| {
            [
                ctx.object("rbac.authorization.k8s.io/v1", "Role", &name, Some(ns), json!({"rules": permission.rules})),
                ctx.object(
                    "rbac.authorization.k8s.io/v1",
                    "RoleBinding",
                    &name,
                    Some(ns),
                    json!({
                        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                        "subjects": subject(ctx, sa),
                    }),
                ),
            ]
        })
        .collect()
}

fn cluster_permission(
    ctx: &InstallContext<'_>,
    permission: &Permissions,
    flavour: &str,
) -> Vec<DesiredObject> {
    let sa = permission.service_account_name.as_str();
    // Cluster-scoped names must not collide between namespaces installing the same CSV.
    let name = names::object_name(&["windlass", ctx.namespace, ctx.csv_name, sa, flavour]);
    vec![
        ctx.object("rbac.authorization.k8s.io/v1", "ClusterRole", &name, None, json!({"rules": permission.rules})),
        ctx.object(
            "rbac.authorization.k8s.io/v1",
            "ClusterRoleBinding",
            &name,
            None,
            json!({
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                "subjects": subject(ctx, sa),
            }),
        ),
    ]
}

fn deployments(ctx: &InstallContext<'_>) -> Vec<DesiredObject> {
    let targets = if ctx.all_namespaces() {
        String::new()
    } else {
        ctx.target_namespaces.join(",")
    };
    ctx.definition
        .deployments()
        .iter()
        .map(|deployment| {
            let mut spec = deployment.spec.clone();
            // The bundle's own images only: what a Subscription's config adds is left as it
            // is written.
            windlass_mirror::pod::rewrite_pod(&mut spec["template"]["spec"], ctx.image_rewrites);
            let template = &mut spec["template"];
            let annotations = &mut template["metadata"]["annotations"];
            if !annotations.is_object() {
                *annotations = json!({});
            }
            annotations[annotations::OLM_TARGET_NAMESPACES] = json!(targets);
            annotations[annotations::OLM_OPERATOR_NAMESPACE] = json!(ctx.namespace);
            let mut pod_metadata = template["metadata"].take();
            apply_config(&mut template["spec"], &mut pod_metadata, ctx.config);
            template["metadata"] = pod_metadata;
            let mut object = ctx.object(
                "apps/v1",
                "Deployment",
                &deployment.name,
                Some(ctx.namespace),
                json!({"spec": spec}),
            );
            for (key, value) in &deployment.label {
                object.object["metadata"]["labels"][key] = json!(value);
            }
            object
        })
        .collect()
}

/// Applies a Subscription's operator config to a pod template, the way OLM does: env vars and
/// volumes (mounts) are merged by name, the rest replaces what the bundle set.
pub fn apply_config(pod_spec: &mut Value, pod_metadata: &mut Value, config: &OperatorConfig) {
    if config.is_empty() {
        return;
    }
    if let Some(containers) = pod_spec["containers"].as_array_mut() {
        for container in containers {
            merge_by_name(&mut container["env"], config.env.iter().map(to_value));
            merge_by_name(
                &mut container["volumeMounts"],
                config.volume_mounts.iter().map(to_value),
            );
            if let Some(resources) = &config.resources {
                container["resources"] = to_value(resources);
            }
        }
    }
    merge_by_name(
        &mut pod_spec["volumes"],
        config.volumes.iter().map(to_value),
    );
    if !config.node_selector.is_empty() {
        pod_spec["nodeSelector"] = json!(config.node_selector);
    }
    if !config.tolerations.is_empty() {
        pod_spec["tolerations"] =
            json!(config.tolerations.iter().map(to_value).collect::<Vec<_>>());
    }
    if let Some(affinity) = &config.affinity {
        pod_spec["affinity"] = to_value(affinity);
    }
    if !config.annotations.is_empty() {
        if !pod_metadata["annotations"].is_object() {
            pod_metadata["annotations"] = json!({});
        }
        for (key, value) in &config.annotations {
            pod_metadata["annotations"][key] = json!(value);
        }
    }
}

fn to_value<T: serde::Serialize>(value: &T) -> Value {
    // k8s-openapi types always serialise; a failure would be a bug in them, not bad input.
    serde_json::to_value(value).unwrap_or_default()
}

fn merge_by_name(list: &mut Value, additions: impl Iterator<Item = Value>) {
    let additions: Vec<Value> = additions.collect();
    if additions.is_empty() {
        return;
    }
    if !list.is_array() {
        *list = json!([]);
    }
    let items = list.as_array_mut().expect("made an array above");
    for addition in additions {
        match items
            .iter_mut()
            .find(|item| item["name"] == addition["name"])
        {
            Some(existing) => *existing = addition,
            None => items.push(addition),
        }
    }
}

#[cfg(test)]
#[path = "desired_tests.rs"]
mod tests;
