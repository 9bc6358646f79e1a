//! The pre-update readiness report of a release: a PodDisruptionBudget that allows no eviction
//! of a release component's pods holds the update (`UpdateNotReady`, naming the budget), is
//! listed in status and in `windlass upgrade status`, and once accepted by name the update
//! goes ahead, recorded in history. `windlass upgrade recommend` and `--clear` speak
//! `oc adm upgrade`'s words.

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::{
    Api,
    api::{DeleteParams, Patch, PatchParams},
};
use serde_json::json;
use windlass_api::{
    ClusterVersion, clusterversion::CLUSTER_VERSION_NAME,
    names::reasons::cluster_version as reasons,
};
use windlass_testkit::{lifecycle::wait_object, require_manager, run_ok};

use crate::cluster_versions::{
    ONE_AT_A_TIME, TIMEOUT, TrustSetup, push_releases, reach, refused_with, release_account,
    start_afresh, upgrade,
};
use crate::release_payloads::windlass;
use crate::signatures::Keys;

const BUDGET: &str = "PodDisruptionBudget/platform-dns/dns-operator-strict";

fn windlass_upgrade(args: &[&str]) -> String {
    let mut command = windlass();
    command.arg("upgrade").args(args).arg("--kubeconfig");
    command.arg(windlass_testkit::kubeconfig_path());
    run_ok(&mut command)
}

/// Given 4.1.0 applied and a PodDisruptionBudget over the dns operator's pods that allows no
/// disruption, when 4.1.1 is asked for, then it is refused before anything is applied, naming
/// the budget and how to accept it, and status and `windlass upgrade status` list the finding;
/// accepted by name, 4.1.1 is applied and history records the acceptance.
#[tokio::test]
async fn a_budget_that_allows_no_eviction_holds_a_release_until_accepted() {
    require_manager();
    let _turn = ONE_AT_A_TIME.lock().await;
    let admin = windlass_testkit::client().await;
    release_account(&admin).await;
    let namespace = windlass_testkit::manager::namespace().unwrap();
    let repository = windlass_testkit::registry().unique_repository("readiness");
    let (tags, _) = push_releases(&repository, &[("4.1.0", "4.1.0"), ("4.1.1", "4.1.1")]);
    let keys = Keys::generate(&["release"]);
    let _trust = TrustSetup::create(&admin, &namespace, &keys, "Report").await;
    let versions = Api::<ClusterVersion>::all(admin.clone());
    start_afresh(&versions).await;
    upgrade(&tags["4.1.0"], false);
    reach(&versions, "4.1.0").await;
    let shown = windlass_upgrade(&["recommend"]);
    assert!(shown.contains("No update service"), "{shown}");

    let budgets = Api::<PodDisruptionBudget>::namespaced(admin.clone(), "platform-dns");
    let budget: PodDisruptionBudget = serde_json::from_value(json!({
        "metadata": {"name": "dns-operator-strict"},
        "spec": {"maxUnavailable": 0,
                 "selector": {"matchLabels": {"app.kubernetes.io/name": "dns-operator"}}},
    }))
    .unwrap();
    budgets
        .patch(
            "dns-operator-strict",
            &PatchParams::apply("windlass-e2e").force(),
            &Patch::Apply(&budget),
        )
        .await
        .unwrap();
    wait_object(
        &budgets,
        "dns-operator-strict",
        "the budget observed",
        TIMEOUT,
        |b| {
            b.status.as_ref().is_some_and(|s| {
                s.observed_generation.is_some() && s.disruptions_allowed == Some(0)
            })
        },
    )
    .await;

    upgrade(&tags["4.1.1"], false);
    let (held, message) = refused_with(&versions, "4.1.1 held", reasons::UPDATE_NOT_READY).await;
    assert!(
        message.contains(BUDGET) && message.contains("acceptRisks"),
        "{message}"
    );
    let status = held.status.as_ref().unwrap();
    assert_eq!(
        status.history[0].version, "4.1.0",
        "nothing of 4.1.1 started"
    );
    let readiness = status.readiness.as_ref().expect("the readiness report");
    assert_eq!(readiness.version, "4.1.1");
    let finding = readiness
        .findings
        .iter()
        .find(|f| f.name == BUDGET)
        .expect("the budget's finding");
    assert_eq!(finding.kind, "DisruptionBudget");
    assert!(!finding.accepted);
    let told = windlass_upgrade(&["status"]);
    assert!(
        told.contains(&format!("{BUDGET} [DisruptionBudget]:")),
        "{told}"
    );

    // Asked for but not started: --clear takes the request back.
    let cleared = windlass_upgrade(&["--clear"]);
    assert!(
        cleared.contains("cleared the requested update"),
        "{cleared}"
    );
    let spec = versions.get(CLUSTER_VERSION_NAME).await.unwrap().spec;
    assert!(spec.desired_update.is_none());

    windlass_upgrade(&[
        "--to-image",
        &tags["4.1.1"],
        "--plain-http",
        "--accept-risks",
        BUDGET,
    ]);
    let done = reach(&versions, "4.1.1").await;
    let status = done.status.as_ref().unwrap();
    assert!(
        status.history[0]
            .accepted_risks
            .contains(&format!("Readiness findings accepted: {BUDGET}")),
        "{:?}",
        status.history[0].accepted_risks
    );
    assert!(
        status
            .readiness
            .as_ref()
            .unwrap()
            .findings
            .iter()
            .any(|f| f.name == BUDGET && f.accepted)
    );
    // Once it has started, --clear refuses: going back is a rollback.
    let mut clear = windlass();
    clear
        .args(["upgrade", "--clear", "--kubeconfig"])
        .arg(windlass_testkit::kubeconfig_path());
    let output = clear.output().unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("has started"));
    budgets
        .delete("dns-operator-strict", &DeleteParams::default())
        .await
        .unwrap();
}

/// Given `spec.approval: Manual`, an update waits for its plan to be approved
/// (`AwaitingPlanApproval`) and `windlass upgrade plan` shows what each level creates and
/// changes; approved by digest it starts. When the cluster changes after the plan was read, the
/// approval of the old plan does not start the update: the new plan must be approved.
#[tokio::test]
async fn a_manual_release_starts_only_with_its_current_plan_approved() {
    require_manager();
    let _turn = ONE_AT_A_TIME.lock().await;
    let admin = windlass_testkit::client().await;
    release_account(&admin).await;
    let namespace = windlass_testkit::manager::namespace().unwrap();
    let repository = windlass_testkit::registry().unique_repository("release-plans");
    let (tags, _) = push_releases(&repository, &[("4.1.0", "4.1.0"), ("4.1.1", "4.1.1")]);
    let keys = Keys::generate(&["release"]);
    let _trust = TrustSetup::create(&admin, &namespace, &keys, "Report").await;
    let versions = Api::<ClusterVersion>::all(admin.clone());
    start_afresh(&versions).await;
    // A first install creates everything: nothing an earlier test left.
    crate::cluster_versions::reset_platform(&admin).await;
    crate::cluster_versions::set_spec(&versions, json!({"approval": "Manual"})).await;
    upgrade(&tags["4.1.0"], false);
    let (waiting, message) = refused_with(
        &versions,
        "4.1.0 awaiting approval",
        reasons::AWAITING_PLAN_APPROVAL,
    )
    .await;
    let plan = waiting
        .status
        .as_ref()
        .unwrap()
        .plan
        .clone()
        .unwrap_or_else(|| panic!("no plan: {message}"));
    assert!(message.contains(&plan.digest), "{message}");
    let shown = windlass_upgrade(&["plan"]);
    assert!(
        shown.contains("+ create Deployment platform-dns/dns-operator"),
        "{shown}"
    );
    windlass_upgrade(&["approve", &plan.digest]);
    reach(&versions, "4.1.0").await;

    upgrade(&tags["4.1.1"], false);
    let (waiting, _) = refused_with(
        &versions,
        "4.1.1 awaiting approval",
        reasons::AWAITING_PLAN_APPROVAL,
    )
    .await;
    let first = waiting.status.as_ref().unwrap().plan.clone().unwrap();
    assert_eq!(first.version, "4.1.1");
    let shown = windlass_upgrade(&["plan"]);
    assert!(
        shown.contains("~ change Deployment platform-dns/dns-operator:") && shown.contains("image"),
        "{shown}"
    );
    // The cluster moves after the plan was read: the plan now creates what it changed.
    let config_maps =
        Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(admin.clone(), "platform-updater");
    config_maps
        .delete("release", &DeleteParams::default())
        .await
        .unwrap();
    let moved = wait_object(
        &versions,
        CLUSTER_VERSION_NAME,
        "a new plan",
        TIMEOUT,
        |v| {
            v.status
                .as_ref()
                .and_then(|s| s.plan.as_ref())
                .is_some_and(|p| p.digest != first.digest)
        },
    )
    .await;
    let second = moved.status.as_ref().unwrap().plan.clone().unwrap();
    assert!(second.levels.iter().any(|l| {
        l.create
            .iter()
            .any(|o| o == "ConfigMap platform-updater/release")
    }));
    // The old plan's approval, written straight into the spec, does not start it.
    versions
        .patch(
            CLUSTER_VERSION_NAME,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"desiredUpdate": {"approvedPlan": first.digest}}})),
        )
        .await
        .unwrap();
    let (_, message) = refused_with(
        &versions,
        "the stale approval refused",
        reasons::AWAITING_PLAN_APPROVAL,
    )
    .await;
    wait_object(
        &versions,
        CLUSTER_VERSION_NAME,
        "the stale approval judged",
        TIMEOUT,
        |v| {
            v.status.as_ref().and_then(|s| s.observed_generation) == v.metadata.generation
                && v.status.as_ref().unwrap().history[0].version == "4.1.0"
        },
    )
    .await;
    let judged = versions.get(CLUSTER_VERSION_NAME).await.unwrap();
    let text = judged
        .status
        .as_ref()
        .and_then(|s| windlass_api::condition::find(&s.conditions, "ReleaseAccepted"))
        .map(|c| c.message.clone())
        .unwrap_or(message);
    assert!(text.contains("no longer the plan"), "{text}");
    // The CLI refuses to approve a digest that is not the plan shown.
    let mut stale = windlass();
    stale
        .args(["upgrade", "approve", &first.digest, "--kubeconfig"])
        .arg(windlass_testkit::kubeconfig_path());
    assert!(!stale.output().unwrap().status.success());
    windlass_upgrade(&["approve", &second.digest]);
    let done = reach(&versions, "4.1.1").await;
    assert!(
        done.status
            .as_ref()
            .unwrap()
            .plan
            .as_ref()
            .unwrap()
            .approved
    );
    assert!(config_maps.get_opt("release").await.unwrap().is_some());
    crate::cluster_versions::set_spec(&versions, json!({"approval": "Automatic"})).await;
}
