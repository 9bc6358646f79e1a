//! What the adoption tests share: the CLI, and windlass's first upgrade and rollback of an
//! operator it adopted.

use std::{process::Command, time::Duration};

use kube::Client;
use windlass_api::blueprint::BlueprintPhase;
use windlass_testkit::{
    lifecycle::{is_at, wait_blueprint},
    run_ok, windlass_binary,
};

const TIMEOUT: Duration = Duration::from_secs(240);

pub fn windlass() -> Command {
    let mut command = Command::new(windlass_binary());
    command.env("KUBECONFIG", windlass_testkit::kubeconfig_path());
    command
}

/// Under Manual approval, the adopted 1.0.0's Subscription `name` offers the channel's 1.0.1:
/// approved, it rolls out; `windlass rollback`, approved, brings 1.0.0 back.
pub async fn upgrade_then_roll_back(admin: &Client, namespace: &str, name: &str) {
    let awaiting = |csv: &'static str| {
        move |b: &windlass_api::Blueprint| {
            b.spec.cluster_service_version_name == csv
                && b.status.as_ref().and_then(|s| s.phase) == Some(BlueprintPhase::RequiresApproval)
        }
    };
    let approve = || {
        run_ok(windlass().args([
            "approve",
            name,
            "-n",
            namespace,
            "--wait",
            "--timeout",
            "200",
        ]));
    };
    wait_blueprint(
        admin,
        namespace,
        name,
        "1.0.1 awaiting approval",
        TIMEOUT,
        awaiting("acme-db.v1.0.1"),
    )
    .await;
    approve();
    wait_blueprint(admin, namespace, name, "1.0.1 Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.1")
    })
    .await;
    run_ok(windlass().args(["rollback", name, "-n", namespace]));
    wait_blueprint(
        admin,
        namespace,
        name,
        "rollback awaiting approval",
        TIMEOUT,
        awaiting("acme-db.v1.0.0"),
    )
    .await;
    approve();
    wait_blueprint(admin, namespace, name, "back at 1.0.0", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.0")
    })
    .await;
}
