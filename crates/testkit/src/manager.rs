//! Observing the manager that `make e2e` runs: its process, its writes and its memory.

use std::path::PathBuf;

use crate::state_dir;

/// The manager's pid, from the pid file `manager-restart.sh` writes.
pub fn pid() -> Option<u32> {
    std::fs::read_to_string(state_dir().join("pids/manager"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The apiserver's audit log (the policy records every write).
pub fn audit_log() -> PathBuf {
    state_dir().join("logs/audit.log")
}

/// How many write requests the manager has made so far, counted in the audit log by its user
/// agent (`windlass-manager/<version>`).
pub fn writes() -> usize {
    let text = std::fs::read_to_string(audit_log()).unwrap_or_default();
    text.lines().filter(|line| is_manager_write(line)).count()
}

/// The manager's writes after the first `skip` ([`writes`] at some earlier moment), counted by
/// verb and resource (`"update blueprints/status"`), for saying what an idle manager wrote.
pub fn writes_after(skip: usize) -> std::collections::BTreeMap<String, usize> {
    let text = std::fs::read_to_string(audit_log()).unwrap_or_default();
    let mut counts = std::collections::BTreeMap::new();
    for event in text
        .lines()
        .filter(|line| is_manager_write(line))
        .skip(skip)
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
    {
        *counts.entry(verb_and_resource(&event)).or_insert(0) += 1;
    }
    counts
}

fn is_manager_write(line: &str) -> bool {
    is_manager_request(line)
        && WRITE_VERBS
            .iter()
            .any(|verb| line.contains(&format!("\"verb\":\"{verb}\"")))
}

const WRITE_VERBS: [&str; 5] = ["create", "update", "patch", "delete", "deletecollection"];

fn is_manager_request(line: &str) -> bool {
    line.contains("\"userAgent\":\"windlass-manager/")
        && line.contains("\"stage\":\"ResponseComplete\"")
}

/// Every request of the manager the audit log holds so far, by verb and resource (`"list
/// secrets"`, `"patch blueprints/status"`), reads included when the control plane logs them
/// (`WINDLASS_AUDIT=requests`; otherwise writes only). A watch counts when it ends.
pub fn requests() -> std::collections::BTreeMap<String, usize> {
    let text = std::fs::read_to_string(audit_log()).unwrap_or_default();
    let mut counts = std::collections::BTreeMap::new();
    for event in text
        .lines()
        .filter(|line| is_manager_request(line))
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
    {
        *counts.entry(verb_and_resource(&event)).or_insert(0) += 1;
    }
    counts
}

fn verb_and_resource(event: &serde_json::Value) -> String {
    let reference = &event["objectRef"];
    let mut resource = reference["resource"].as_str().unwrap_or("?").to_string();
    if let Some(sub) = reference["subresource"].as_str() {
        resource = format!("{resource}/{sub}");
    }
    let verb = event["verb"].as_str().unwrap_or("?");
    format!("{verb} {resource}")
}

/// The manager's completed write requests to objects in `namespace`, as the audit log records
/// them (`verb`, `objectRef`, `responseStatus`, `impersonatedUser`, ...), oldest first.
pub fn writes_in(namespace: &str) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(audit_log()).unwrap_or_default();
    text.lines()
        .filter(|line| line.contains("\"userAgent\":\"windlass-manager/"))
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|event| {
            event["stage"] == "ResponseComplete" && event["objectRef"]["namespace"] == namespace
        })
        .collect()
}

/// A memory figure of the manager in KiB from `/proc/<pid>/status`: `VmRSS` (now) or `VmHWM`
/// (peak since start).
pub fn memory_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid()?)).ok()?;
    status
        .lines()
        .find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The namespace the running manager was given (`--namespace`), read from its command line.
pub fn namespace() -> Option<String> {
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", pid()?)).ok()?;
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    args.iter()
        .position(|a| a == "--namespace")
        .and_then(|i| args.get(i + 1).cloned())
}

/// The manager's `windlass_reconciles_total` for `controller` (e.g. `blueprint`), read from its
/// /metrics endpoint; `None` when the manager does not answer.
pub fn reconciles(controller: &str) -> Option<f64> {
    use std::io::{Read, Write};
    let env = std::fs::read_to_string(state_dir().join("manager.env")).ok()?;
    let address = env
        .lines()
        .find_map(|line| line.strip_prefix("WINDLASS_MANAGER_METRICS="))?;
    let mut stream = std::net::TcpStream::connect(address.trim()).ok()?;
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .ok()?;
    write!(stream, "GET /metrics HTTP/1.0\r\nHost: {address}\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let prefix = format!("windlass_reconciles_total{{controller=\"{controller}\"}} ");
    response
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))?
        .trim()
        .parse()
        .ok()
}

/// Seals `csv` as the manager's Blueprints do, with the sealing key in `manager_namespace`
/// (created if no manager made it yet), read as cluster admin: for tests that write a CSV
/// themselves, standing in for a Blueprint. A CSV is acted on only while a Blueprint owns it,
/// so this makes one (`holder-<csv>`, naming a package no catalog offers, so the Blueprint
/// controller only waits on it), and grants the CSV cluster-wide RBAC and webhooks as an
/// admin's policy would.
pub async fn seal_csv(
    client: &kube::Client,
    manager_namespace: &str,
    csv: &mut windlass_api::ClusterServiceVersion,
) {
    use kube::api::{Api, PostParams};
    use windlass_api::{Blueprint, BlueprintSpec, policy::ClusterScopedGrant};
    let key = windlass_kit::seal_key::load_or_create(client, manager_namespace)
        .await
        .unwrap_or_else(|e| panic!("the manager's sealing key: {e}"));
    let name = csv.metadata.name.clone().unwrap_or_default();
    let namespace = csv.metadata.namespace.clone().unwrap_or_default();
    let holder_name = format!("holder-{name}");
    let blueprints = Api::<Blueprint>::namespaced(client.clone(), &namespace);
    let holder = match blueprints
        .get_opt(&holder_name)
        .await
        .expect("reading Blueprints")
    {
        Some(existing) => existing,
        None => {
            let holder = Blueprint::new(
                &holder_name,
                BlueprintSpec {
                    package: "e2e-holder".into(),
                    cluster_service_version_name: "e2e-holder.v0.0.0".into(),
                    ..BlueprintSpec::default()
                },
            );
            blueprints
                .create(&PostParams::default(), &holder)
                .await
                .expect("creating the Blueprint that holds a test's CSV")
        }
    };
    csv.metadata.owner_references = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "windlass.dev/v1alpha1".into(),
            kind: "Blueprint".into(),
            name: holder_name,
            uid: holder.metadata.uid.clone().unwrap_or_default(),
            controller: Some(true),
            block_owner_deletion: None,
        },
    ]);
    csv.spec.grant = Some(windlass_api::csv::CsvGrant {
        blueprint_uid: holder.metadata.uid.unwrap_or_default(),
        // Not ahead of the Blueprint, which records revision 1 once it starts.
        revision: 0,
        policy: None,
        policy_generation: None,
        cluster_scoped: vec![
            ClusterScopedGrant::ClusterPermissions,
            ClusterScopedGrant::Webhooks,
        ],
    });
    let spec = serde_json::to_value(&csv.spec).expect("a CSV spec serializes");
    let seal = windlass_revisions::csv::seal_spec(&key, &namespace, &name, &spec);
    csv.metadata
        .annotations
        .get_or_insert_default()
        .insert(windlass_api::names::seal::ANNOTATION.to_string(), seal);
}

/// [`seal_csv`] with the key of the manager `make e2e` runs.
pub async fn seal_csv_for_manager(
    client: &kube::Client,
    csv: &mut windlass_api::ClusterServiceVersion,
) {
    let namespace = namespace().expect("the manager runs (require_manager) with --namespace");
    seal_csv(client, &namespace, csv).await;
}
