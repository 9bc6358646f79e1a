//! The cluster's ClusterOperators read as the CVO reads them for the ClusterVersion's own
//! conditions: an operator that reports `Degraded=True` or `Available=False` for longer than a
//! grace makes the cluster `Failing` naming it, and `Available=False` makes the release not
//! available (the CVO's `ClusterOperatorDegraded` / `ClusterOperatorNotAvailable`; see the
//! cluster-version-operator's `docs/dev/clusteroperator.md`). The grace exists because
//! operators go Degraded for moments while they roll out.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::Value;
use windlass_api::clusterversion::OperatorSummary;

/// How long an operator may be unhealthy before the cluster is `Failing` unless the spec
/// says otherwise (the CVO waits a comparable while before it reports a degraded operator).
pub const DEFAULT_GRACE_SECONDS: i64 = 600;

fn condition_status(operator: &Value, type_: &str) -> (String, String) {
    operator["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == type_)
        .map(|c| {
            (
                c["status"].as_str().unwrap_or("Unknown").to_string(),
                c["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .unwrap_or_else(|| ("Unknown".into(), String::new()))
}

/// One summary per ClusterOperator, sorted by name; `unhealthy_since` carried over from
/// `previous` while the operator stays unhealthy.
pub fn summarize(
    operators: &[Value],
    previous: &[OperatorSummary],
    now: Timestamp,
) -> Vec<OperatorSummary> {
    let mut summaries: Vec<OperatorSummary> = operators
        .iter()
        .map(|operator| {
            let name = operator["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let (available, available_message) = condition_status(operator, "Available");
            let (degraded, degraded_message) = condition_status(operator, "Degraded");
            let (progressing, _) = condition_status(operator, "Progressing");
            let version = operator["status"]["versions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|v| v["name"] == "operator")
                .and_then(|v| v["version"].as_str())
                .unwrap_or_default()
                .to_string();
            let unhealthy = degraded == "True" || available == "False";
            let message = if degraded == "True" {
                degraded_message
            } else if available == "False" {
                available_message
            } else {
                String::new()
            };
            let unhealthy_since = unhealthy.then(|| {
                previous
                    .iter()
                    .find(|p| p.name == name)
                    .and_then(|p| p.unhealthy_since.clone())
                    .unwrap_or(Time(now))
            });
            OperatorSummary {
                name,
                version,
                available,
                degraded,
                progressing,
                message,
                unhealthy_since,
            }
        })
        .collect();
    summaries.sort_by(|a, b| a.name.cmp(&b.name));
    summaries
}

/// What the operators say about the release.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Healthy,
    /// Unhealthy, but within the grace: named, not failing yet.
    Settling {
        message: String,
    },
    /// `Failing`: the reason (one of the CVO's) and a message naming each operator.
    Failing {
        reason: &'static str,
        message: String,
        not_available: bool,
    },
}

/// The verdict on `summaries` at `now`, with `grace_seconds` of tolerance.
pub fn verdict(summaries: &[OperatorSummary], now: Timestamp, grace_seconds: i64) -> Verdict {
    let unhealthy: Vec<&OperatorSummary> = summaries
        .iter()
        .filter(|s| s.unhealthy_since.is_some())
        .collect();
    if unhealthy.is_empty() {
        return Verdict::Healthy;
    }
    let describe = |s: &OperatorSummary| {
        let what = if s.degraded == "True" {
            "is degraded"
        } else {
            "is not available"
        };
        if s.message.is_empty() {
            format!("Cluster operator {} {what}", s.name)
        } else {
            format!("Cluster operator {} {what}: {}", s.name, s.message)
        }
    };
    let overdue: Vec<&&OperatorSummary> = unhealthy
        .iter()
        .filter(|s| {
            let since = s.unhealthy_since.as_ref().map(|t| t.0).unwrap_or(now);
            now.as_second() - since.as_second() >= grace_seconds
        })
        .collect();
    if overdue.is_empty() {
        return Verdict::Settling {
            message: unhealthy
                .iter()
                .map(|s| describe(s))
                .collect::<Vec<_>>()
                .join("; "),
        };
    }
    let not_available = overdue.iter().any(|s| s.available == "False");
    let reason = match overdue.as_slice() {
        [one] if one.degraded == "True" => "ClusterOperatorDegraded",
        [_] => "ClusterOperatorNotAvailable",
        _ => "ClusterOperatorsDegraded",
    };
    Verdict::Failing {
        reason,
        message: overdue
            .iter()
            .map(|s| describe(s))
            .collect::<Vec<_>>()
            .join("; "),
        not_available,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn operator(name: &str, available: &str, degraded: &str, message: &str) -> Value {
        json!({"metadata": {"name": name}, "status": {
        "versions": [{"name": "operator", "version": "4.2.0"}],
        "conditions": [
            {"type": "Available", "status": available, "message": message},
            {"type": "Degraded", "status": degraded, "message": message},
            {"type": "Progressing", "status": "False"},
        ]}})
    }

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + second).unwrap()
    }

    #[test]
    fn a_degraded_operator_fails_the_cluster_only_after_the_grace_and_is_named() {
        let operators = [
            operator("dns", "True", "True", "pods crash"),
            operator("ingress", "True", "False", ""),
        ];
        let first = summarize(&operators, &[], at(0));
        assert_eq!(first[0].name, "dns");
        assert_eq!(first[0].version, "4.2.0");
        assert!(first[1].unhealthy_since.is_none());
        assert!(matches!(
            verdict(&first, at(0), 60),
            Verdict::Settling { .. }
        ));
        // Read again later: the start of the trouble is kept, so the grace runs out.
        let later = summarize(&operators, &first, at(61));
        assert_eq!(later[0].unhealthy_since, first[0].unhealthy_since);
        match verdict(&later, at(61), 60) {
            Verdict::Failing {
                reason,
                message,
                not_available,
            } => {
                assert_eq!(reason, "ClusterOperatorDegraded");
                assert!(
                    message.contains("Cluster operator dns is degraded: pods crash"),
                    "{message}"
                );
                assert!(!not_available);
            }
            other => panic!("{other:?}"),
        }
        // Healthy again: the clock starts over.
        let healed = summarize(&[operator("dns", "True", "False", "")], &later, at(62));
        assert_eq!(verdict(&healed, at(62), 60), Verdict::Healthy);
        assert!(healed[0].unhealthy_since.is_none());
    }

    #[test]
    fn an_unavailable_operator_is_named_as_such_and_several_are_listed() {
        let down = summarize(
            &[operator("console", "False", "False", "no route")],
            &[],
            at(0),
        );
        match verdict(&down, at(0), 0) {
            Verdict::Failing {
                reason,
                not_available,
                ..
            } => {
                assert_eq!(reason, "ClusterOperatorNotAvailable");
                assert!(not_available);
            }
            other => panic!("{other:?}"),
        }
        let two = summarize(
            &[
                operator("a", "False", "False", ""),
                operator("b", "True", "True", ""),
            ],
            &[],
            at(0),
        );
        match verdict(&two, at(0), 0) {
            Verdict::Failing {
                reason, message, ..
            } => {
                assert_eq!(reason, "ClusterOperatorsDegraded");
                assert!(
                    message.contains("a is not available") && message.contains("b is degraded")
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn missing_conditions_read_as_unknown_not_as_trouble() {
        let quiet = summarize(&[json!({"metadata": {"name": "x"}})], &[], at(0));
        assert_eq!(quiet[0].available, "Unknown");
        assert_eq!(verdict(&quiet, at(0), 0), Verdict::Healthy);
    }
}
