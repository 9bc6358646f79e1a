//! Whether an applied payload object is healthy: what a run level waits for before the next
//! level starts. Judged from the live object alone, as the CVO does.

use serde_json::Value;

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
