//! Whether an operator's Deployments are healthy, and if not, what a person should read.
//! Pure: the caller reads the Deployments and their pods.

use k8s_openapi::api::{apps::v1::Deployment, core::v1::Pod};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Health {
    /// Rolled out at its current generation and Available.
    Healthy,
    /// Still rolling out; nothing is known to be wrong yet.
    Progressing(String),
    /// Something is wrong now (a pod crash-loops, an image cannot be pulled, ...).
    Unhealthy(String),
}

/// Container waiting reasons that mean the pod will not become ready without a change.
const BROKEN_WAITING_REASONS: [&str; 7] = [
    "CrashLoopBackOff",
    "ImagePullBackOff",
    "ErrImagePull",
    "CreateContainerConfigError",
    "CreateContainerError",
    "InvalidImageName",
    "RunContainerError",
];

/// The health of one Deployment given the pods its selector matches.
pub fn deployment_health(deployment: &Deployment, pods: &[Pod]) -> Health {
    if let Some(settled) = health_by_status(deployment) {
        return settled;
    }
    let name = deployment.metadata.name.as_deref().unwrap_or_default();
    let no_status = Default::default();
    let status = deployment.status.as_ref().unwrap_or(&no_status);
    let wanted = deployment.spec.replicas.unwrap_or(1);
    let updated = status.updated_replicas.unwrap_or_default();
    let available = status.available_replicas.unwrap_or_default();
    if let Some(problem) = pods.iter().find_map(pod_problem) {
        return Health::Unhealthy(format!("deployment {name}: {problem}"));
    }
    if let Some(condition) = status.conditions.iter().flatten().find(|c| {
        c.type_.as_deref() == Some("Progressing")
            && c.reason.as_deref() == Some("ProgressDeadlineExceeded")
    }) {
        return Health::Unhealthy(format!(
            "deployment {name}: {}",
            condition.message.clone().unwrap_or_default()
        ));
    }
    Health::Progressing(format!(
        "deployment {name}: {available} of {wanted} replicas available, {updated} updated"
    ))
}

/// The health a Deployment's own status decides, its pods aside: still waiting for the rollout
/// of its generation to start (as right after an apply: its pods are not of that generation
/// yet), or rolled out and Available (as a settled operator is seen on every later reconcile:
/// no pod can change that). `None` while it rolls out: then its pods and its progress deadline
/// tell whether something is wrong, and only then are they worth reading.
pub fn health_by_status(deployment: &Deployment) -> Option<Health> {
    let name = deployment.metadata.name.as_deref().unwrap_or_default();
    let Some(status) = &deployment.status else {
        return Some(Health::Progressing(format!(
            "deployment {name} has no status yet"
        )));
    };
    let generation = deployment.metadata.generation.unwrap_or_default();
    if status.observed_generation.unwrap_or_default() < generation {
        return Some(Health::Progressing(format!(
            "deployment {name}: waiting for the rollout of generation {generation} to start"
        )));
    }
    let wanted = deployment.spec.replicas.unwrap_or(1);
    let updated = status.updated_replicas.unwrap_or_default();
    let available = status.available_replicas.unwrap_or_default();
    let total = status.replicas.unwrap_or_default();
    let available_condition = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_.as_deref() == Some("Available"))
        .is_some_and(|c| c.status.as_deref() == Some("True"));
    (updated >= wanted && available >= wanted && total == updated && available_condition)
        .then_some(Health::Healthy)
}

/// A short description of what is wrong with a pod, if anything is known to be.
pub fn pod_problem(pod: &Pod) -> Option<String> {
    let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
    let status = pod.status.as_ref()?;
    for container in status.container_statuses.iter().flatten() {
        let Some(waiting) = container.state.as_ref().and_then(|s| s.waiting.as_ref()) else {
            continue;
        };
        let reason = waiting.reason.as_deref().unwrap_or_default();
        if BROKEN_WAITING_REASONS.contains(&reason) {
            let mut text = format!("pod {pod_name} container {} is {reason}", container.name);
            if container.restart_count > 0 {
                text.push_str(&format!(" ({} restarts)", container.restart_count));
            }
            let last = container
                .last_state
                .as_ref()
                .and_then(|s| s.terminated.as_ref());
            if let Some(message) = last
                .and_then(|t| t.message.as_deref())
                .or(waiting.message.as_deref())
            {
                text.push_str(&format!(": {message}"));
            }
            return Some(text);
        }
    }
    if status.phase.as_deref() == Some("Failed") {
        return Some(format!(
            "pod {pod_name} failed: {}",
            status.message.clone().unwrap_or_default()
        ));
    }
    None
}

/// Combines the health of several Deployments: any unhealthy wins, then any progressing.
pub fn combine(healths: impl IntoIterator<Item = Health>) -> Health {
    let mut progressing = Vec::new();
    for health in healths {
        match health {
            Health::Unhealthy(message) => return Health::Unhealthy(message),
            Health::Progressing(message) => progressing.push(message),
            Health::Healthy => {}
        }
    }
    if progressing.is_empty() {
        Health::Healthy
    } else {
        Health::Progressing(progressing.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(status: serde_json::Value) -> Deployment {
        serde_json::from_value(
            json!({"metadata": {"name": "op", "generation": 2}, "spec": {"replicas": 1,
            "selector": {}, "template": {}}, "status": status}),
        )
        .unwrap()
    }

    fn crash_looping_pod() -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "op-1"}, "status": {"phase": "Running", "containerStatuses": [{
            "name": "main", "image": "x", "imageID": "", "ready": false, "restartCount": 3,
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}},
            "lastState": {"terminated": {"exitCode": 128, "message": "exec: \"/windlass-broken\": no such file or directory"}}}]}}))
        .unwrap()
    }

    #[test]
    fn available_at_the_current_generation_is_healthy() {
        let d = deployment(
            json!({"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1,
            "conditions": [{"type": "Available", "status": "True"}]}),
        );
        assert_eq!(deployment_health(&d, &[]), Health::Healthy);
    }

    #[test]
    fn an_old_generation_is_still_progressing_even_if_available() {
        let d = deployment(
            json!({"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1,
            "conditions": [{"type": "Available", "status": "True"}]}),
        );
        assert!(matches!(deployment_health(&d, &[]), Health::Progressing(_)));
    }

    #[test]
    fn old_replicas_still_running_mean_the_rollout_is_not_done() {
        let d = deployment(
            json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 1, "availableReplicas": 1,
            "conditions": [{"type": "Available", "status": "True"}]}),
        );
        assert!(matches!(deployment_health(&d, &[]), Health::Progressing(_)));
    }

    #[test]
    fn a_crash_looping_pod_makes_it_unhealthy_with_the_pod_state_in_the_message() {
        let d = deployment(
            json!({"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 0,
            "conditions": [{"type": "Available", "status": "False"}]}),
        );
        let Health::Unhealthy(message) = deployment_health(&d, &[crash_looping_pod()]) else {
            panic!()
        };
        assert!(
            message.contains("pod op-1 container main is CrashLoopBackOff (3 restarts)"),
            "{message}"
        );
        assert!(message.contains("/windlass-broken"), "{message}");
    }

    #[test]
    fn pods_matter_only_while_the_deployment_rolls_out() {
        let available = deployment(
            json!({"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1,
            "conditions": [{"type": "Available", "status": "True"}]}),
        );
        assert_eq!(health_by_status(&available), Some(Health::Healthy));
        // What skipping the read leaves out: a pod cannot make an Available Deployment unhealthy.
        assert_eq!(
            deployment_health(&available, &[crash_looping_pod()]),
            Health::Healthy
        );
        let unavailable = deployment(
            json!({"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 0,
            "conditions": [{"type": "Available", "status": "False"}]}),
        );
        assert_eq!(health_by_status(&unavailable), None);
        // Before its rollout started, a Deployment's pods are not of its generation yet.
        let not_observed = deployment(json!({"observedGeneration": 1}));
        assert!(matches!(
            health_by_status(&not_observed),
            Some(Health::Progressing(_))
        ));
        assert_eq!(
            deployment_health(&not_observed, &[crash_looping_pod()]),
            deployment_health(&not_observed, &[])
        );
    }

    #[test]
    fn combining_prefers_unhealthy_then_progressing() {
        assert_eq!(combine([Health::Healthy, Health::Healthy]), Health::Healthy);
        assert!(matches!(
            combine([Health::Healthy, Health::Progressing("p".into())]),
            Health::Progressing(_)
        ));
        assert_eq!(
            combine([
                Health::Progressing("p".into()),
                Health::Unhealthy("u".into())
            ]),
            Health::Unhealthy("u".into())
        );
    }
}
