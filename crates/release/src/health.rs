//! Whether an applied payload object is healthy: what a run level waits for before the next
//! level starts. Judged from the live object alone, as the CVO does; a windlass Subscription
//! also from the Blueprint it owns ([`subscription_health`]).

use serde_json::Value;
use windlass_api::{
    Blueprint, ConditionStatus, Subscription, SubscriptionSpec,
    blueprint::BlueprintPhase,
    condition::find,
    names::conditions::{
        blueprint as blueprint_conditions, subscription as subscription_conditions,
    },
};

use crate::manifest::Action;
use crate::progress::WaitReason;

/// What a live object says about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Health {
    Ready,
    /// Not yet; nothing says it will not get there.
    Waiting(WaitReason),
    /// It reports that it failed (a Job's `Failed`, a rollout past its progress deadline).
    Failed(String),
}

fn condition<'a>(live: &'a Value, type_: &str) -> Option<&'a Value> {
    live["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

fn is_true(live: &Value, type_: &str) -> bool {
    condition(live, type_).is_some_and(|c| c["status"] == "True")
}

fn int(value: &Value) -> i64 {
    value.as_i64().unwrap_or(0)
}

/// Whether the controller has seen the latest spec (`observedGeneration` caught up).
fn observed(live: &Value) -> bool {
    int(&live["status"]["observedGeneration"]) >= int(&live["metadata"]["generation"])
}

/// The health of `live` (the object as read after applying; `None` when it does not exist)
/// for a manifest applied with `action`. `payload_version` is what ClusterOperators must report.
pub fn health(kind: &str, action: Action, live: Option<&Value>, payload_version: &str) -> Health {
    if action == Action::Delete {
        return match live {
            None => Health::Ready,
            Some(_) => Health::Waiting(WaitReason::Deleted),
        };
    }
    let Some(live) = live else {
        return Health::Waiting(WaitReason::Available);
    };
    match kind {
        "CustomResourceDefinition" => {
            if is_true(live, "Established") {
                Health::Ready
            } else if let Some(c) =
                condition(live, "NamesAccepted").filter(|c| c["status"] == "False")
            {
                Health::Failed(format!(
                    "its names are not accepted: {}",
                    c["message"].as_str().unwrap_or_default()
                ))
            } else {
                Health::Waiting(WaitReason::Established)
            }
        }
        "Deployment" => {
            let desired = live["spec"]["replicas"].as_i64().unwrap_or(1);
            let status = &live["status"];
            let updated = int(&status["updatedReplicas"]);
            if let Some(c) = condition(live, "Progressing")
                .filter(|c| c["status"] == "False" && c["reason"] == "ProgressDeadlineExceeded")
            {
                return Health::Failed(format!(
                    "its rollout exceeded its progress deadline: {}",
                    c["message"].as_str().unwrap_or_default()
                ));
            }
            let rolled_out = observed(live)
                && updated == desired
                && int(&status["replicas"]) == desired
                && int(&status["availableReplicas"]) >= desired;
            rollout(
                rolled_out,
                updated.min(int(&status["availableReplicas"])),
                desired,
            )
        }
        "StatefulSet" => {
            let desired = live["spec"]["replicas"].as_i64().unwrap_or(1);
            let status = &live["status"];
            let updated = int(&status["updatedReplicas"]);
            let rolled_out = observed(live)
                && updated == desired
                && int(&status["readyReplicas"]) >= desired
                && status["currentRevision"] == status["updateRevision"];
            rollout(
                rolled_out,
                updated.min(int(&status["readyReplicas"])),
                desired,
            )
        }
        "DaemonSet" => {
            let status = &live["status"];
            let desired = int(&status["desiredNumberScheduled"]);
            let updated = int(&status["updatedNumberScheduled"]);
            let rolled_out =
                observed(live) && updated == desired && int(&status["numberAvailable"]) >= desired;
            rollout(
                rolled_out,
                updated.min(int(&status["numberAvailable"])),
                desired,
            )
        }
        "Job" => {
            if is_true(live, "Complete") {
                Health::Ready
            } else if let Some(c) = condition(live, "Failed").filter(|c| c["status"] == "True") {
                Health::Failed(format!(
                    "it failed: {}",
                    c["message"].as_str().unwrap_or_default()
                ))
            } else {
                Health::Waiting(WaitReason::Complete)
            }
        }
        "APIService" => {
            if is_true(live, "Available") {
                Health::Ready
            } else {
                Health::Waiting(WaitReason::Available)
            }
        }
        "ClusterOperator" => {
            if !is_true(live, "Available") {
                return Health::Waiting(WaitReason::Available);
            }
            let at_version = live["status"]["versions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|v| v["name"] == "operator" && v["version"] == payload_version);
            if at_version {
                Health::Ready
            } else {
                Health::Waiting(WaitReason::AtVersion {
                    version: payload_version.to_string(),
                })
            }
        }
        _ => Health::Ready,
    }
}

/// The API group of windlass's own kinds: a `Subscription` of this group is a windlass
/// Subscription (OLM's is `operators.coreos.com`).
pub const WINDLASS_GROUP: &str = "windlass.dev";

/// The exact version a Subscription is pinned to: its `spec.versionRange` when that names one
/// version (`1.0.1`, `=1.0.1`, `v1.0.1`); `None` for a range or no range.
pub fn pinned_version(subscription: &SubscriptionSpec) -> Option<semver::Version> {
    let range = subscription.version_range.as_deref()?.trim();
    let exact = range.trim_start_matches('=').trim().trim_start_matches('v');
    semver::Version::parse(exact).ok()
}

fn same_version(a: &str, b: &semver::Version) -> bool {
    semver::Version::parse(a.trim().trim_start_matches('v')).is_ok_and(|a| a == *b)
}

/// The health of a windlass Subscription shipped in a payload: ready once the Subscription
/// controller has seen its spec and its Blueprint (`blueprint`, read by the name in the
/// Subscription's status) Succeeded at the pinned version ([`pinned_version`]), with the
/// Subscription reporting `Installed=True`. An unpinned Subscription is ready at whatever
/// version it installed. A Blueprint that failed, rolled back or refuses to move (its
/// `RollbackAllowed=False`) is a failure, named with its own words; a resolution that fails
/// is waited on (the catalogs may still be loading), and the level deadline then names it.
pub fn subscription_health(live: Option<&Value>, blueprint: Option<&Value>) -> Health {
    let waiting = |version: Option<&semver::Version>, now: String| {
        Health::Waiting(WaitReason::OperatorAt {
            version: version.map(ToString::to_string),
            now,
        })
    };
    let Some(live) = live else {
        return waiting(None, "the Subscription does not exist yet".into());
    };
    let subscription: Subscription = match serde_json::from_value(live.clone()) {
        Ok(subscription) => subscription,
        Err(e) => return Health::Failed(format!("it is not a windlass Subscription: {e}")),
    };
    let pin = pinned_version(&subscription.spec);
    let pin = pin.as_ref();
    let status = subscription.status.clone().unwrap_or_default();
    if status.observed_generation < subscription.metadata.generation {
        return waiting(
            pin,
            "the Subscription controller has not seen its latest spec".into(),
        );
    }
    if let Some(failed) = find(
        &status.conditions,
        subscription_conditions::RESOLUTION_SUCCEEDED,
    )
    .filter(|c| c.status == ConditionStatus::False)
    {
        return waiting(pin, format!("resolution failed: {}", failed.message));
    }
    let installed = find(&status.conditions, subscription_conditions::INSTALLED);
    let installed_says = installed.map(|c| c.message.clone()).unwrap_or_default();
    let Some(blueprint) = blueprint else {
        return waiting(pin, "it has no Blueprint yet".into());
    };
    let blueprint: Blueprint = match serde_json::from_value(blueprint.clone()) {
        Ok(blueprint) => blueprint,
        Err(e) => return Health::Failed(format!("its Blueprint cannot be read: {e}")),
    };
    let name = blueprint.metadata.name.clone().unwrap_or_default();
    let progress = blueprint.status.clone().unwrap_or_default();
    // A rehearsal that predicts a failing rollback refuses nothing that is asked now.
    if let Some(refused) = find(&progress.conditions, blueprint_conditions::ROLLBACK_ALLOWED)
        .filter(|c| {
            c.status == ConditionStatus::False
                && c.reason != windlass_api::names::reasons::blueprint::REHEARSAL_FAILED
        })
    {
        return Health::Failed(format!(
            "its Blueprint {name} refuses the move ({}): {}",
            refused.reason, refused.message
        ));
    }
    let version = progress.version.clone().unwrap_or_default();
    let at_pin = pin.is_none_or(|pin| same_version(&version, pin));
    let seen = progress.observed_generation >= blueprint.metadata.generation;
    match progress.phase {
        Some(BlueprintPhase::Succeeded)
            if at_pin && seen && installed.is_some_and(|c| c.status == ConditionStatus::True) =>
        {
            Health::Ready
        }
        Some(phase @ (BlueprintPhase::Failed | BlueprintPhase::RolledBack)) if seen => {
            Health::Failed(format!(
                "its Blueprint {name} is {phase:?} at {version}: {installed_says}"
            ))
        }
        phase => waiting(
            pin,
            match phase {
                Some(phase) => format!("Blueprint {name} is {phase:?} at {version}"),
                None => format!("Blueprint {name} has not started"),
            },
        ),
    }
}

fn rollout(rolled_out: bool, updated: i64, desired: i64) -> Health {
    if rolled_out {
        Health::Ready
    } else {
        Health::Waiting(WaitReason::RollOut { updated, desired })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_deployment_is_ready_once_every_replica_is_updated_and_available() {
        let mut live = json!({
            "metadata": {"generation": 2},
            "spec": {"replicas": 2},
            "status": {"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2},
        });
        // The controller has not seen generation 2 yet.
        assert!(matches!(
            health("Deployment", Action::Apply, Some(&live), "1"),
            Health::Waiting(_)
        ));
        live["status"]["observedGeneration"] = json!(2);
        assert_eq!(
            health("Deployment", Action::Apply, Some(&live), "1"),
            Health::Ready
        );
        live["status"]["availableReplicas"] = json!(1);
        assert_eq!(
            health("Deployment", Action::Apply, Some(&live), "1"),
            Health::Waiting(WaitReason::RollOut {
                updated: 1,
                desired: 2
            })
        );
        live["status"]["conditions"] = json!([{"type": "Progressing", "status": "False",
            "reason": "ProgressDeadlineExceeded", "message": "ReplicaSet \"x\" has timed out progressing."}]);
        assert!(
            matches!(health("Deployment", Action::Apply, Some(&live), "1"), Health::Failed(m) if m.contains("timed out"))
        );
    }

    #[test]
    fn crds_jobs_and_cluster_operators_report_their_own_conditions() {
        let crd = json!({"status": {"conditions": [{"type": "Established", "status": "True"}]}});
        assert_eq!(
            health("CustomResourceDefinition", Action::Apply, Some(&crd), "1"),
            Health::Ready
        );
        let job = json!({"status": {"conditions": [{"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}]}});
        assert!(
            matches!(health("Job", Action::Apply, Some(&job), "1"), Health::Failed(m) if m.contains("Backoff"))
        );
        let operator = json!({"status": {
            "conditions": [{"type": "Available", "status": "True"}],
            "versions": [{"name": "operator", "version": "4.1.0"}]}});
        assert_eq!(
            health("ClusterOperator", Action::Apply, Some(&operator), "4.1.1"),
            Health::Waiting(WaitReason::AtVersion {
                version: "4.1.1".into()
            })
        );
        assert_eq!(
            health("ClusterOperator", Action::Apply, Some(&operator), "4.1.0"),
            Health::Ready
        );
        assert_eq!(
            health("ConfigMap", Action::Apply, Some(&json!({})), "1"),
            Health::Ready
        );
    }

    fn subscription(version_range: &str, observed: i64, conditions: Value) -> Value {
        json!({
            "apiVersion": "windlass.dev/v1alpha1", "kind": "Subscription",
            "metadata": {"name": "db", "namespace": "ops", "generation": 2},
            "spec": {"package": "acme-db", "versionRange": version_range},
            "status": {"observedGeneration": observed, "blueprint": "db", "conditions": conditions},
        })
    }

    fn blueprint(phase: &str, version: &str, conditions: Value) -> Value {
        json!({
            "apiVersion": "windlass.dev/v1alpha1", "kind": "Blueprint",
            "metadata": {"name": "db", "namespace": "ops", "generation": 3},
            "spec": {"package": "acme-db", "clusterServiceVersionName": format!("acme-db.v{version}")},
            "status": {"phase": phase, "version": version, "observedGeneration": 3,
                "conditions": conditions},
        })
    }

    fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Value {
        json!({"type": type_, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": "2026-01-01T00:00:00Z"})
    }

    #[test]
    fn a_subscription_is_healthy_once_its_blueprint_succeeded_at_the_pinned_version() {
        let installed = json!([condition(
            "Installed",
            "True",
            "Succeeded",
            "acme-db.v1.0.1 is installed"
        )]);
        let upgrading = json!([condition(
            "Installed",
            "False",
            "Installing",
            "installing acme-db.v1.0.1"
        )]);
        let unresolved = json!([condition(
            "ResolutionSucceeded",
            "False",
            "ConstraintsNotSatisfiable",
            "no version in range"
        )]);
        let refused = json!([condition(
            "RollbackAllowed",
            "False",
            "RollbackCrossesVersion",
            "crosses a minor version"
        )]);
        let ready = |h: &Health| *h == Health::Ready;
        let waits = |part: &'static str| move |h: &Health| matches!(h, Health::Waiting(r) if r.to_string().contains(part));
        let fails = |part: &'static str| move |h: &Health| matches!(h, Health::Failed(m) if m.contains(part));
        type Check = Box<dyn Fn(&Health) -> bool>;
        let table: Vec<(&str, Value, Option<Value>, Check)> = vec![
            (
                "at the pin",
                subscription("1.0.1", 2, installed.clone()),
                Some(blueprint("Succeeded", "1.0.1", json!([]))),
                Box::new(ready),
            ),
            (
                "pinned with = and v",
                subscription("=v1.0.1", 2, installed.clone()),
                Some(blueprint("Succeeded", "v1.0.1", json!([]))),
                Box::new(ready),
            ),
            (
                "still at the old version (a rollback not started yet)",
                subscription("1.0.0", 2, installed.clone()),
                Some(blueprint("Succeeded", "1.0.1", json!([]))),
                Box::new(waits(
                    "to run version 1.0.0 (Blueprint db is Succeeded at 1.0.1)",
                )),
            ),
            (
                "the new spec not seen yet: the old Installed=True says nothing",
                subscription("1.0.1", 1, installed.clone()),
                Some(blueprint("Succeeded", "1.0.1", json!([]))),
                Box::new(waits("has not seen its latest spec")),
            ),
            (
                "installing",
                subscription("1.0.1", 2, upgrading.clone()),
                Some(blueprint("Installing", "1.0.1", json!([]))),
                Box::new(waits("Blueprint db is Installing at 1.0.1")),
            ),
            (
                "a range is not a pin",
                subscription(">=1.0.0", 2, installed.clone()),
                Some(blueprint("Succeeded", "1.0.1", json!([]))),
                Box::new(ready),
            ),
            (
                "resolution failing is waited on, with its message",
                subscription("1.0.1", 2, unresolved),
                None,
                Box::new(waits("resolution failed: no version in range")),
            ),
            (
                "no Blueprint yet",
                subscription("1.0.1", 2, json!([])),
                None,
                Box::new(waits("no Blueprint yet")),
            ),
            (
                "the operator failed at the pin",
                subscription("1.0.1", 2, upgrading.clone()),
                Some(blueprint("Failed", "1.0.1", json!([]))),
                Box::new(fails(
                    "Blueprint db is Failed at 1.0.1: installing acme-db.v1.0.1",
                )),
            ),
            (
                "rolled back by the Blueprint",
                subscription("1.0.1", 2, upgrading),
                Some(blueprint("RolledBack", "1.0.0", json!([]))),
                Box::new(fails("RolledBack at 1.0.0")),
            ),
            (
                "the Blueprint refuses to go back",
                subscription("1.0.0", 2, installed),
                Some(blueprint("Succeeded", "1.1.0", refused)),
                Box::new(fails(
                    "refuses the move (RollbackCrossesVersion): crosses a minor",
                )),
            ),
        ];
        for (case, live, owned, check) in table {
            let verdict = subscription_health(Some(&live), owned.as_ref());
            assert!(check(&verdict), "{case}: {verdict:?}");
        }
        assert!(matches!(
            subscription_health(None, None),
            Health::Waiting(_)
        ));
        assert!(matches!(
            subscription_health(Some(&json!({"spec": 1})), None),
            Health::Failed(m) if m.contains("not a windlass Subscription")
        ));
    }

    #[test]
    fn a_deleted_manifest_is_done_when_its_object_is_gone() {
        assert_eq!(
            health("ConfigMap", Action::Delete, None, "1"),
            Health::Ready
        );
        assert_eq!(
            health("ConfigMap", Action::Delete, Some(&json!({})), "1"),
            Health::Waiting(WaitReason::Deleted)
        );
    }
}
