use serde_json::json;
use windlass_api::{Blueprint, ClusterVersion, Subscription, fleet::SubscriptionTarget};

use super::*;

fn target() -> SubscriptionTarget {
    SubscriptionTarget {
        namespace: "db".into(),
        spec: serde_json::from_value(json!({"package": "acme-db", "channel": "candidate"}))
            .unwrap(),
        version: Some("1.1.0".into()),
        ..SubscriptionTarget::default()
    }
}

fn subscription(approval: &str, state: &str) -> Subscription {
    serde_json::from_value(json!({
        "apiVersion": "windlass.dev/v1alpha1", "kind": "Subscription",
        "metadata": {"name": "acme-db", "namespace": "db", "generation": 2},
        "spec": {"package": "acme-db", "channel": "candidate", "approval": approval},
        "status": {"state": state, "installedCSV": "acme-db.v1.1.0", "observedGeneration": 2},
    }))
    .unwrap()
}

fn blueprint(phase: &str, version: &str, generation: i64, extra: serde_json::Value) -> Blueprint {
    let mut status = json!({
        "phase": phase, "version": version, "observedGeneration": 3,
        "conditions": [{"type": "Ready", "status": "False", "reason": "AutomaticRollback",
                        "message": "acme-db.v1.1.1 failed: CrashLoopBackOff; rolled back to acme-db.v1.1.0"}],
    });
    status
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    serde_json::from_value(json!({
        "apiVersion": "windlass.dev/v1alpha1", "kind": "Blueprint",
        "metadata": {"name": "acme-db", "namespace": "db", "generation": generation},
        "spec": {"package": "acme-db", "clusterServiceVersionName": "acme-db.v1.1.0"},
        "status": status,
    }))
    .unwrap()
}

#[test]
fn a_member_at_the_version_is_healthy() {
    let v = subscription_view(
        &target(),
        Some(&subscription("Automatic", "AtLatestKnown")),
        Some(&blueprint("Succeeded", "1.1.0", 3, json!({}))),
    );
    assert_eq!(v.applied, Applied::AsTemplate);
    assert_eq!(v.health, Health::Healthy);
    assert_eq!(v.running.as_deref(), Some("acme-db.v1.1.0"));
    let older = subscription_view(
        &target(),
        Some(&subscription("Automatic", "Upgrading")),
        Some(&blueprint("Succeeded", "1.0.0", 3, json!({}))),
    );
    assert_eq!(older.health, Health::Progressing("runs 1.0.0".into()));
}

#[test]
fn a_rollback_in_the_member_is_a_failure_in_its_words() {
    let v = subscription_view(
        &target(),
        Some(&subscription("Automatic", "RolledBack")),
        Some(&blueprint("RolledBack", "1.1.0", 3, json!({}))),
    );
    assert_eq!(
        v.health,
        Health::Failed(
            "rolled back: acme-db.v1.1.1 failed: CrashLoopBackOff; rolled back to acme-db.v1.1.0"
                .into()
        )
    );
}

#[test]
fn what_a_member_has_not_acted_on_yet_is_progress_not_failure() {
    // The Blueprint's status is of generation 3; it is at 4 now.
    let v = subscription_view(
        &target(),
        Some(&subscription("Automatic", "RolledBack")),
        Some(&blueprint("RolledBack", "1.1.0", 4, json!({}))),
    );
    assert!(matches!(v.health, Health::Progressing(_)), "{:?}", v.health);
    let none = subscription_view(&target(), None, None);
    assert_eq!(none.applied, Applied::No);
}

#[test]
fn a_manual_member_shows_its_plan() {
    let digest = format!("sha256:{}", "ab".repeat(32));
    let v = subscription_view(
        &target(),
        Some(&subscription("Manual", "UpgradePending")),
        Some(&blueprint(
            "RequiresApproval",
            "1.0.0",
            3,
            json!({"preview": {"revision": 2, "digest": digest, "summary": "1.0.0 -> 1.1.0",
                               "secret": "acme-db-plan-2", "checksum": "sha256:00"}}),
        )),
    );
    assert_eq!(v.applied, Applied::Manual);
    assert_eq!(
        v.health,
        Health::AwaitingApproval {
            digest,
            summary: "1.0.0 -> 1.1.0".into()
        }
    );
    let other: Subscription = serde_json::from_value(json!({
        "apiVersion": "windlass.dev/v1alpha1", "kind": "Subscription",
        "metadata": {"name": "acme-db", "namespace": "db"},
        "spec": {"package": "acme-db", "channel": "stable"},
    }))
    .unwrap();
    assert_eq!(
        subscription_view(&target(), Some(&other), None).applied,
        Applied::No
    );
}

#[test]
fn the_applied_subscription_is_the_template_with_approval_forced_while_manual() {
    let body = subscription_body(&target(), true);
    assert_eq!(
        body["metadata"],
        json!({"name": "acme-db", "namespace": "db"})
    );
    assert_eq!(body["spec"]["approval"], "Manual");
    assert_eq!(
        subscription_body(&target(), false)["spec"]["approval"],
        "Automatic"
    );
}

#[test]
fn a_cluster_version_is_judged_by_its_conditions() {
    let t = ClusterVersionTarget {
        version: "4.2.0".into(),
        image: None,
    };
    let cv = |status: serde_json::Value| -> ClusterVersion {
        serde_json::from_value(json!({
            "apiVersion": "windlass.dev/v1alpha1", "kind": "ClusterVersion",
            "metadata": {"name": "version", "generation": 5},
            "spec": {"desiredUpdate": {"version": "4.2.0"}},
            "status": status,
        }))
        .unwrap()
    };
    let healthy = cv(json!({
        "observedGeneration": 5,
        "desired": {"version": "4.2.0", "image": "r@sha256:00", "verified": true},
        "conditions": [
            {"type": "Available", "status": "True", "reason": "Done"},
            {"type": "Progressing", "status": "False", "reason": "Done"},
        ],
    }));
    assert_eq!(
        cluster_version_view(&t, Some(&healthy)).health,
        Health::Healthy
    );
    let failing = cv(json!({
        "observedGeneration": 5,
        "conditions": [{"type": "Failing", "status": "True", "reason": "LevelDeadline", "message": "level 20 waits for dns"}],
    }));
    assert_eq!(
        cluster_version_view(&t, Some(&failing)).health,
        Health::Failed("level 20 waits for dns".into())
    );
    assert_eq!(
        cluster_version_patch(&t, true)["spec"]["approval"],
        "Manual"
    );
}
