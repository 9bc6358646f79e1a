//! Update readiness: what would block or break an update before anyone approves it, in one
//! vocabulary (an operator's upgrade here; a release's pre-update report uses the same
//! findings). Each finding has a stable name an approval accepts it by
//! (`spec.acceptedFindings`), so accepting one never waves through another.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What kind of problem a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum FindingKind {
    /// The new version asks for a newer Kubernetes than the cluster runs.
    KubeVersion,
    /// A PodDisruptionBudget allows no eviction of the pods the update replaces.
    DisruptionBudget,
    /// The new version stops serving an API version that live objects are read through.
    ApiNoLongerServed,
    /// A component reports `Upgradeable=False` (a ClusterOperator), or an admin gate waits for
    /// its acknowledgement.
    NotUpgradeable,
    /// A critical alert is firing.
    CriticalAlert,
    /// A check that could not be made (its source did not answer): shown so nobody reads
    /// silence as health, never holding an update by itself.
    NotEvaluated,
}

/// One thing that would block or break the update.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// What an approval names to accept it: `MinKubeVersion`,
    /// `PodDisruptionBudget/<namespace>/<name>`, `APINoLongerServed/<crd>/<version>`.
    pub name: String,
    pub kind: FindingKind,
    pub message: String,
}

/// `"1.37.2"`, `"v1.21"`, `"1.30.0-rc.1"`: major, minor and patch (missing parts are 0).
fn version(text: &str) -> Option<(u64, u64, u64)> {
    let text = text.trim().trim_start_matches('v');
    let core = text.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u64>());
    let major = parts.next()?.ok()?;
    let minor = parts.next().unwrap_or(Ok(0)).ok()?;
    let patch = parts.next().unwrap_or(Ok(0)).ok()?;
    Some((major, minor, patch))
}

/// The new version's `minKubeVersion` against the cluster's version.
pub fn kube_version(min: Option<&str>, cluster: &str) -> Option<Finding> {
    let min = min.filter(|m| !m.trim().is_empty())?;
    let (Some(wanted), Some(running)) = (version(min), version(cluster)) else {
        return None;
    };
    (wanted > running).then(|| Finding {
        name: "MinKubeVersion".into(),
        kind: FindingKind::KubeVersion,
        message: format!(
            "the new version needs Kubernetes {min} or later; the cluster runs {cluster}"
        ),
    })
}

/// Whether a label selector (`matchLabels`, `matchExpressions`) selects `labels`; an empty
/// selector selects everything, as a PodDisruptionBudget's does.
pub fn selects(selector: &Value, labels: &BTreeMap<String, String>) -> bool {
    let matched = selector["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| labels.get(k).map(String::as_str) == v.as_str());
    let expressions = selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|e| {
            let key = e["key"].as_str().unwrap_or_default();
            let values: Vec<&str> = e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let value = labels.get(key).map(String::as_str);
            match e["operator"].as_str() {
                Some("In") => value.is_some_and(|v| values.contains(&v)),
                Some("NotIn") => value.is_none_or(|v| !values.contains(&v)),
                Some("Exists") => value.is_some(),
                Some("DoesNotExist") => value.is_none(),
                _ => false,
            }
        });
    matched && expressions
}

/// The PodDisruptionBudgets (as listed) that select pods labelled `pod_labels` and allow no
/// disruption now: the update's rollout could not evict them (a drain during it would hang).
pub fn disruption_budgets(pdbs: &[Value], pod_labels: &BTreeMap<String, String>) -> Vec<Finding> {
    pdbs.iter()
        .filter(|pdb| selects(&pdb["spec"]["selector"], pod_labels))
        .filter(|pdb| pdb["status"]["disruptionsAllowed"].as_i64() == Some(0))
        .map(|pdb| {
            let namespace = pdb["metadata"]["namespace"].as_str().unwrap_or_default();
            let name = pdb["metadata"]["name"].as_str().unwrap_or_default();
            Finding {
                name: format!("PodDisruptionBudget/{namespace}/{name}"),
                kind: FindingKind::DisruptionBudget,
                message: format!(
                    "PodDisruptionBudget {namespace}/{name} allows no disruption of the \
                     operator's pods now, so they cannot be evicted while the update rolls out"
                ),
            }
        })
        .collect()
}

/// The versions `live` serves that `new` does not, while `objects` custom resources exist.
pub fn apis_no_longer_served(live: &Value, new: &Value, objects: usize) -> Vec<Finding> {
    if objects == 0 {
        return Vec::new();
    }
    let served = |crd: &Value| -> Vec<String> {
        crd["spec"]["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|v| v["served"].as_bool().unwrap_or(false))
            .filter_map(|v| v["name"].as_str().map(str::to_string))
            .collect()
    };
    let after = served(new);
    let name = live["metadata"]["name"].as_str().unwrap_or_default();
    served(live)
        .into_iter()
        .filter(|v| !after.contains(v))
        .map(|version| Finding {
            name: format!("APINoLongerServed/{name}/{version}"),
            kind: FindingKind::ApiNoLongerServed,
            message: format!(
                "the new version stops serving {name} {version} while {objects} custom \
                 resource(s) exist; clients and manifests that use {version} stop working"
            ),
        })
        .collect()
}

/// A component that is not upgradeable, under the name `acceptRisks` lets it through by.
pub fn not_upgradeable(name: &str, component: &str, reason: &str, message: &str) -> Finding {
    Finding {
        name: name.to_string(),
        kind: FindingKind::NotUpgradeable,
        message: format!("{component} is not upgradeable ({reason}): {message}"),
    }
}

/// One finding per critical alert firing, from a Prometheus vector of `ALERTS` samples
/// (`alertname`, and `namespace` where the alert has one); an alert firing in several series
/// is one finding.
pub fn critical_alerts(samples: &Value) -> Vec<Finding> {
    let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for sample in samples.as_array().into_iter().flatten() {
        let metric = &sample["metric"];
        let Some(alert) = metric["alertname"].as_str() else {
            continue;
        };
        let series = found.entry(alert.to_string()).or_default();
        if let Some(namespace) = metric["namespace"].as_str() {
            series.push(namespace.to_string());
        }
    }
    found
        .into_iter()
        .map(|(alert, namespaces)| Finding {
            name: format!("CriticalAlert/{alert}"),
            kind: FindingKind::CriticalAlert,
            message: if namespaces.is_empty() {
                format!("the critical alert {alert} is firing")
            } else {
                format!(
                    "the critical alert {alert} is firing (in {})",
                    namespaces.join(", ")
                )
            },
        })
        .collect()
}

/// The findings `accepted` (names) does not accept.
pub fn unaccepted<'a>(findings: &'a [Finding], accepted: &[String]) -> Vec<&'a Finding> {
    findings
        .iter()
        .filter(|f| !accepted.iter().any(|a| a == &f.name))
        .collect()
}

/// One paragraph: each finding's message and the name that accepts it.
pub fn summary(findings: &[&Finding]) -> String {
    findings
        .iter()
        .map(|f| format!("{} (accept as {:?})", f.message, f.name))
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_critical_alert_is_one_finding_naming_where_it_fires() {
        let samples = json!([
            {"metric": {"alertname": "KubeAPIErrorBudgetBurn", "severity": "critical"}, "value": [0, "1"]},
            {"metric": {"alertname": "etcdMembersDown", "namespace": "platform-etcd"}, "value": [0, "1"]},
            {"metric": {"alertname": "etcdMembersDown", "namespace": "platform-etcd-2"}, "value": [0, "1"]},
            {"metric": {"severity": "critical"}, "value": [0, "1"]},
        ]);
        let found = critical_alerts(&samples);
        assert_eq!(found.len(), 2);
        assert_eq!(found[1].name, "CriticalAlert/etcdMembersDown");
        assert!(
            found[1].message.contains("platform-etcd, platform-etcd-2"),
            "{}",
            found[1].message
        );
        assert!(critical_alerts(&json!([])).is_empty());
    }

    fn labels() -> BTreeMap<String, String> {
        BTreeMap::from([(
            "app.kubernetes.io/name".to_string(),
            "acme-db-operator".to_string(),
        )])
    }

    #[test]
    fn a_newer_kubernetes_than_the_cluster_runs_is_a_finding() {
        let found = kube_version(Some("1.38.0"), "v1.37.2").unwrap();
        assert_eq!(found.name, "MinKubeVersion");
        assert!(found.message.contains("1.38.0"), "{}", found.message);
        assert_eq!(kube_version(Some("1.25.0"), "1.37.2"), None);
        assert_eq!(kube_version(Some("v1.37"), "1.37.2"), None);
        assert_eq!(kube_version(None, "1.37.2"), None);
        assert_eq!(kube_version(Some("not a version"), "1.37.2"), None);
    }

    #[test]
    fn only_budgets_that_select_the_pods_and_allow_nothing_are_findings() {
        let pdb = |name: &str, selector: Value, allowed: i64| {
            json!({"metadata": {"name": name, "namespace": "team-a"},
                   "spec": {"selector": selector}, "status": {"disruptionsAllowed": allowed}})
        };
        let pdbs = [
            pdb(
                "strict",
                json!({"matchLabels": {"app.kubernetes.io/name": "acme-db-operator"}}),
                0,
            ),
            pdb(
                "loose",
                json!({"matchLabels": {"app.kubernetes.io/name": "acme-db-operator"}}),
                1,
            ),
            pdb("others", json!({"matchLabels": {"app": "web"}}), 0),
            pdb(
                "by-expression",
                json!({"matchExpressions": [
                {"key": "app.kubernetes.io/name", "operator": "In", "values": ["acme-db-operator"]}]}),
                0,
            ),
            pdb(
                "excluding",
                json!({"matchExpressions": [
                {"key": "app.kubernetes.io/name", "operator": "NotIn", "values": ["acme-db-operator"]}]}),
                0,
            ),
        ];
        let found: Vec<String> = disruption_budgets(&pdbs, &labels())
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(
            found,
            [
                "PodDisruptionBudget/team-a/strict",
                "PodDisruptionBudget/team-a/by-expression"
            ]
        );
    }

    #[test]
    fn a_served_version_dropped_while_objects_exist_is_a_finding() {
        let crd = |versions: Value| json!({"metadata": {"name": "caches.acme.windlass.dev"}, "spec": {"versions": versions}});
        let live = crd(json!([{"name": "v1", "served": true}, {"name": "v2", "served": true}]));
        let new = crd(json!([{"name": "v1", "served": false}, {"name": "v2", "served": true}]));
        let found = apis_no_longer_served(&live, &new, 3);
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].name,
            "APINoLongerServed/caches.acme.windlass.dev/v1"
        );
        assert!(
            apis_no_longer_served(&live, &new, 0).is_empty(),
            "no object uses it"
        );
        assert!(apis_no_longer_served(&live, &live, 3).is_empty());
    }

    #[test]
    fn accepting_names_one_finding_and_not_another() {
        let findings = vec![
            kube_version(Some("1.99"), "1.37.2").unwrap(),
            Finding {
                name: "PodDisruptionBudget/team-a/strict".into(),
                kind: FindingKind::DisruptionBudget,
                message: "no eviction".into(),
            },
        ];
        let left = unaccepted(&findings, &["MinKubeVersion".to_string()]);
        assert_eq!(left.len(), 1);
        assert_eq!(
            summary(&left),
            "no eviction (accept as \"PodDisruptionBudget/team-a/strict\")"
        );
    }
}
