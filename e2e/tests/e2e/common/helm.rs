//! Helpers of the Helm chart tests (`helm_chart.rs`): where the chart lives, rendering and
//! reading Kubernetes YAML through kubectl, the objects a sample bundle's install creates, and
//! cleaning up a release.

use std::{
    collections::BTreeMap,
    io::Write,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use k8s_openapi::api::{apps::v1::Deployment, core::v1::Container};
use kube::Api;
use serde_json::{Value, json};
use windlass_testkit::{helm, kubectl, wait_for};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("e2e/ has a parent")
        .to_path_buf()
}

pub fn chart_dir() -> String {
    repo_root()
        .join("config/helm/windlass")
        .display()
        .to_string()
}

/// The chart's CRD files (`make crds` writes them); empty until it has run.
pub fn chart_crd_files() -> Vec<PathBuf> {
    let dir = repo_root().join("config/helm/windlass/crds");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// Runs a command with `input` on stdin; panics with its output when it fails.
pub fn run_with_stdin(command: &mut Command, input: &str) -> String {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("running {command:?}: {e}"));
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(input.as_bytes())
        .expect("writing stdin");
    let output = child.wait_with_output().expect("waiting for the command");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{command:?} failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Kubernetes YAML (one or many documents) as JSON objects keyed by `Kind/name`, read by
/// kubectl without sending anything to the apiserver.
pub fn objects_of(yaml: &str) -> BTreeMap<String, Value> {
    let json = run_with_stdin(
        kubectl().args(["create", "--dry-run=client", "-o", "json", "-f", "-"]),
        yaml,
    );
    // One JSON document per object, one after the other (a List only for list input).
    let mut items = Vec::new();
    for value in serde_json::Deserializer::from_str(&json).into_iter::<Value>() {
        let value = value.expect("kubectl prints JSON");
        match value["kind"].as_str() {
            Some("List") => items.extend(value["items"].as_array().cloned().unwrap_or_default()),
            _ => items.push(value),
        }
    }
    items
        .into_iter()
        .map(|item| {
            (
                format!(
                    "{}/{}",
                    item["kind"].as_str().unwrap_or(""),
                    item["metadata"]["name"].as_str().unwrap_or("")
                ),
                item,
            )
        })
        .collect()
}

pub fn container(deployment: &Deployment) -> Container {
    let containers = &deployment.spec.template.spec.as_ref().unwrap().containers;
    assert_eq!(
        containers.len(),
        1,
        "the manager Deployment runs one container"
    );
    containers[0].clone()
}

/// What installing a sample bundle creates, shaped as the CSV controller shapes it (names
/// prefixed so they never meet a real install): ServiceAccounts, Roles and ClusterRoles with the
/// bundle's arbitrary rules and their bindings, Deployments, webhook Services, Secrets and
/// configurations. A `List` for `kubectl apply`.
pub fn install_objects(bundle: &windlass_bundle::Bundle, namespace: &str, prefix: &str) -> Value {
    let csv = &bundle.csv;
    let strategy = csv
        .spec
        .install
        .as_ref()
        .and_then(|i| i.spec.as_ref())
        .expect("a deployment install strategy");
    let rbac = "rbac.authorization.k8s.io/v1";
    let mut items = Vec::new();
    for (i, p) in strategy
        .permissions
        .iter()
        .chain(&strategy.cluster_permissions)
        .enumerate()
    {
        let cluster = i >= strategy.permissions.len();
        let (role, binding) = if cluster {
            ("ClusterRole", "ClusterRoleBinding")
        } else {
            ("Role", "RoleBinding")
        };
        let name = format!("{prefix}-{}-{i}", p.service_account_name);
        let meta = if cluster {
            json!({"name": name})
        } else {
            json!({"name": name, "namespace": namespace})
        };
        let subject = json!({"kind": "ServiceAccount", "name": format!("{prefix}-{}", p.service_account_name), "namespace": namespace});
        items.push(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": subject["name"], "namespace": namespace}}));
        items.push(json!({"apiVersion": rbac, "kind": role, "metadata": meta, "rules": p.rules}));
        items.push(json!({"apiVersion": rbac, "kind": binding, "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role, "name": name}, "subjects": [subject]}));
    }
    for d in &strategy.deployments {
        let name = format!("{prefix}-{}", d.name);
        items.push(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace}, "spec": d.spec}));
    }
    for (i, w) in csv.spec.webhookdefinitions.iter().enumerate() {
        let name = format!("{prefix}-webhook-{i}");
        items.push(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace},
            "spec": {"ports": [{"port": 443, "targetPort": w["containerPort"]}], "selector": {"app": name}}}));
        items.push(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace}, "data": {"ca.crt": ""}}));
        let kind = match w["type"].as_str() {
            Some("ValidatingAdmissionWebhook") => "ValidatingWebhookConfiguration",
            Some("MutatingAdmissionWebhook") => "MutatingWebhookConfiguration",
            _ => continue,
        };
        let hook = json!({"name": w["generateName"], "rules": w["rules"], "failurePolicy": w["failurePolicy"],
            "sideEffects": w["sideEffects"], "admissionReviewVersions": w["admissionReviewVersions"], "objectSelector": w["objectSelector"],
            "clientConfig": {"service": {"name": name, "namespace": namespace, "path": w["webhookPath"]}}});
        items.push(json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name}, "webhooks": [hook]}));
    }
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}

/// Uninstalls a release when dropped, so a failing test leaves no cluster-scoped RBAC behind
/// (its namespace goes with `TestNamespace`, its ClusterRole would not).
pub struct ReleaseGuard<'a> {
    pub release: &'a str,
    pub namespace: &'a str,
}

impl Drop for ReleaseGuard<'_> {
    fn drop(&mut self) {
        let _ = helm()
            .args([
                "uninstall",
                self.release,
                "--namespace",
                self.namespace,
                "--ignore-not-found",
            ])
            .output();
    }
}

/// Waits until `get` finds nothing (a deleted object is gone).
pub async fn wait_gone<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + k8s_openapi::serde::de::DeserializeOwned + std::fmt::Debug,
{
    wait_for(
        &format!("{name} to be deleted"),
        Duration::from_secs(60),
        || async {
            match api.get_opt(name).await {
                Ok(None) => Ok(()),
                Ok(Some(_)) => Err(format!("{name} still exists")),
                Err(e) => Err(e.to_string()),
            }
        },
    )
    .await
}
