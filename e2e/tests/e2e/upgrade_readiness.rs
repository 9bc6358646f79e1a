//! `UpgradeReady`: before an upgrade starts, what would block or break it, each finding held
//! until a person accepts it by name, and the acceptance recorded in the history.

use std::time::Duration;

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use serde_json::json;
use windlass_api::{
    Blueprint, ConditionStatus, Subscription,
    blueprint::BlueprintPhase,
    names::{conditions, reasons},
};
use windlass_testkit::{
    TestNamespace,
    lifecycle::{condition, is_at, subscribe, wait_blueprint},
    require_manager,
};

const TIMEOUT: Duration = Duration::from_secs(180);

/// Given acme-db 1.0.0 running under a PodDisruptionBudget that allows no eviction of its
/// operator, when the Subscription moves to 1.0.1, then the upgrade waits before anything of
/// it applies with `UpgradeReady=False` naming the budget and how to accept it; once the
/// namespace's user accepts that finding by name the upgrade runs, and its history entry
/// records what was accepted.
#[tokio::test]
async fn an_upgrade_under_a_budget_that_allows_no_eviction_waits_for_its_acceptance() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "readiness").await;
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
        }),
    )
    .await;
    wait_blueprint(&client, &ns.name, "db", "1.0.0 Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.0")
    })
    .await;
    let pdbs = Api::<PodDisruptionBudget>::namespaced(client.clone(), &ns.name);
    let pdb: PodDisruptionBudget = serde_json::from_value(json!({
        "metadata": {"name": "operator-pdb"},
        "spec": {"maxUnavailable": 0,
                 "selector": {"matchLabels": {"app.kubernetes.io/name": "acme-db-operator"}}},
    }))
    .unwrap();
    pdbs.create(&PostParams::default(), &pdb).await.unwrap();
    // The disruption controller works out what the budget allows from the live pods.
    windlass_testkit::wait_until("the budget to allow no disruption", TIMEOUT, || {
        let pdbs = pdbs.clone();
        async move {
            pdbs.get("operator-pdb")
                .await
                .ok()
                .and_then(|p| p.status)
                .is_some_and(|s| {
                    s.observed_generation.is_some()
                        && s.disruptions_allowed == Some(0)
                        && s.expected_pods == Some(1)
                })
        }
    })
    .await;

    Api::<Subscription>::namespaced(client.clone(), &ns.name)
        .patch(
            "db",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"versionRange": "<1.1.0"}})),
        )
        .await
        .unwrap();
    let finding = format!("PodDisruptionBudget/{}/operator-pdb", ns.name);
    let held = wait_blueprint(
        &client,
        &ns.name,
        "db",
        "UpgradeReady=False",
        TIMEOUT,
        |b| {
            b.status
                .as_ref()
                .and_then(|s| condition(&s.conditions, conditions::blueprint::UPGRADE_READY))
                .is_some_and(|c| {
                    c.status == ConditionStatus::False
                        && c.reason == reasons::blueprint::FINDINGS_NOT_ACCEPTED
                })
        },
    )
    .await;
    let ready = condition(
        &held.status.as_ref().unwrap().conditions,
        conditions::blueprint::UPGRADE_READY,
    )
    .unwrap();
    println!("UpgradeReady: {}", ready.message);
    assert!(
        ready.message.contains(&format!("{finding:?}")),
        "{}",
        ready.message
    );
    assert!(
        is_at(&held, BlueprintPhase::Pending, "1.0.0"),
        "1.0.0 still runs"
    );
    let history = &held.status.as_ref().unwrap().history;
    assert!(
        history
            .iter()
            .all(|r| r.version != "1.0.1" || r.started_time.is_none()),
        "nothing of 1.0.1 applied"
    );

    // A name nothing reports is refused; the namespace's user accepts the finding by name.
    let windlass = || {
        let mut command = std::process::Command::new(windlass_testkit::windlass_binary());
        command.env("KUBECONFIG", windlass_testkit::kubeconfig_path());
        command
    };
    let wrong = windlass()
        .args([
            "approve",
            "db",
            "-n",
            &ns.name,
            "--accept",
            "PodDisruptionBudget/elsewhere/x",
        ])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&wrong.stderr);
    assert!(!wrong.status.success(), "an unknown finding is refused");
    assert!(
        said.contains("reports no UpgradeReady finding named \"PodDisruptionBudget/elsewhere/x\""),
        "{said}"
    );
    assert!(
        Api::<Blueprint>::namespaced(client.clone(), &ns.name)
            .get("db")
            .await
            .unwrap()
            .spec
            .accepted_findings
            .is_empty(),
        "nothing accepted"
    );
    windlass_testkit::run_ok(
        windlass().args(["approve", "db", "-n", &ns.name, "--accept", &finding]),
    );
    let upgraded = wait_blueprint(&client, &ns.name, "db", "1.0.1 Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.1")
    })
    .await;
    let status = upgraded.status.as_ref().unwrap();
    let record = status
        .history
        .iter()
        .find(|r| r.version == "1.0.1")
        .unwrap();
    assert_eq!(
        record.accepted_findings,
        std::slice::from_ref(&finding),
        "recorded in the history"
    );
    let ready = condition(&status.conditions, conditions::blueprint::UPGRADE_READY).unwrap();
    assert_eq!(ready.status, ConditionStatus::True);
    assert!(ready.message.contains(&finding), "{}", ready.message);
}
