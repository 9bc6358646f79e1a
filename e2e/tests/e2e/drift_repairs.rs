//! Readable drift: each time windlass puts back a field someone changed by hand it says which
//! object and field, what it found, what it restored and which field manager had changed it;
//! the fields a Subscription's `spec.config.ignoreDifferences` names are left to people.

use std::time::Duration;

use k8s_openapi::api::{apps::v1::Deployment, core::v1::Event};
use kube::{
    Api,
    api::{ListParams, Patch, PatchParams},
};
use serde_json::json;
use windlass_api::{blueprint::BlueprintPhase, names::reasons};
use windlass_testkit::{
    TestNamespace,
    lifecycle::{is_at, subscribe, wait_blueprint},
    require_manager,
};

const TIMEOUT: Duration = Duration::from_secs(180);

/// Given acme-db 1.0.0 installed with `ignoreDifferences` on the operator Deployment's
/// `/spec/replicas`, when a person scales it and another edits its CPU limit, then windlass
/// puts the CPU limit back and tells it in a `DriftRepaired` Event (field, found, restored,
/// who), and the replicas the person chose stay: the same apply that repaired the limit left
/// them.
#[tokio::test]
async fn a_repaired_edit_is_told_by_field_and_manager_and_ignored_fields_stay() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "drift").await;
    let client = ns.client().clone();
    subscribe(
        &client,
        &ns.name,
        "db",
        json!({
            "package": "acme-db",
            "channel": "stable",
            "versionRange": "<1.0.1",
            "startingCSV": "acme-db.v1.0.0",
            "targetNamespaces": [ns.name],
            "config": {"ignoreDifferences": [
                {"group": "apps", "kind": "Deployment", "name": "acme-db-operator",
                 "jsonPointers": ["/spec/replicas"]},
            ]},
        }),
    )
    .await;
    wait_blueprint(&client, &ns.name, "db", "1.0.0 Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.0")
    })
    .await;
    let deployments = Api::<Deployment>::namespaced(client.clone(), &ns.name);
    let edit = |manager: &'static str, patch: serde_json::Value| {
        let deployments = deployments.clone();
        async move {
            let params = PatchParams {
                field_manager: Some(manager.into()),
                ..PatchParams::default()
            };
            deployments
                .patch("acme-db-operator", &params, &Patch::Strategic(patch))
                .await
                .unwrap_or_else(|e| panic!("{manager}: {e}"));
        }
    };
    edit("kubectl-scale", json!({"spec": {"replicas": 3}})).await;
    edit(
        "kubectl-edit",
        json!({"spec": {"template": {"spec": {"containers": [
            {"name": "operator", "resources": {"limits": {"cpu": "500m"}}}]}}}}),
    )
    .await;

    let events = Api::<Event>::namespaced(client.clone(), &ns.name);
    let repaired = windlass_testkit::wait_for("a DriftRepaired Event", TIMEOUT, || {
        let events = events.clone();
        async move {
            let listed = events
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?;
            listed
                .items
                .into_iter()
                .find(|e| e.reason.as_deref() == Some(reasons::drift::REPAIRED))
                .ok_or_else(|| "none yet".to_string())
        }
    })
    .await;
    let message = repaired.message.clone().unwrap_or_default();
    println!("DriftRepaired: {message}");
    assert_eq!(repaired.type_.as_deref(), Some("Warning"));
    assert!(
        message.contains("Deployment")
            && message.contains("acme-db-operator")
            && message.contains("(changed by kubectl-edit)")
            && message.contains(
                "spec.template.spec.containers[name=operator].resources.limits.cpu: found \"500m\", restored \"100m\""
            ),
        "{message}"
    );
    assert!(
        !message.contains("replicas"),
        "replicas are left to people: {message}"
    );
    // `windlass status` shows it with the rest of the install.
    let status = windlass_testkit::run_ok(
        std::process::Command::new(windlass_testkit::windlass_binary())
            .env("KUBECONFIG", windlass_testkit::kubeconfig_path())
            .args(["status", "db", "-n", &ns.name]),
    );
    assert!(
        status.contains(&format!("Blueprint {}/db: Succeeded at 1.0.0", ns.name))
            && status.contains("Edits windlass put back (newest first):")
            && status.contains(&message),
        "{status}"
    );
    let live = serde_json::to_value(deployments.get("acme-db-operator").await.unwrap()).unwrap();
    assert_eq!(live["spec"]["replicas"], 3, "the person's replicas stand");
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"], "100m",
        "the CPU limit is back"
    );
}
