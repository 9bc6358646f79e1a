//! Whether a conditional update's risks apply to this cluster, and whether the update is then
//! recommended. Pure: the caller runs the PromQL queries ([`promql_queries`]) against a
//! Prometheus-compatible `/api/v1/query` ([`QueryRequest`]) and hands the answers in.
//!
//! The rules are the CVO's: a risk's matching rules are tried in order, unknown types skipped;
//! the first rule that can be evaluated decides; `Always` matches; a `PromQL` rule matches when
//! its query returns one sample of value 1, does not when 0, and fails to evaluate otherwise.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::graph::{ConditionalUpdate, Risk};

/// `GET /api/v1/query?query=...[&time=...]` of the Prometheus HTTP API.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryRequest {
    pub query: String,
    /// Evaluation time (RFC 3339 or Unix seconds); the server's now when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
}

impl QueryRequest {
    pub fn new(query: &str) -> QueryRequest {
        QueryRequest {
            query: query.into(),
            time: None,
        }
    }

    /// Path and query string to append to the endpoint's base URL.
    pub fn path_and_query(&self) -> String {
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("query", &self.query);
        if let Some(time) = &self.time {
            form.append_pair("time", time);
        }
        format!("/api/v1/query?{}", form.finish())
    }
}

/// The response body of `/api/v1/query`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryResponse {
    /// `success` or `error`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<QueryData>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryData {
    /// `vector`, `matrix`, `scalar` or `string`.
    pub result_type: String,
    pub result: serde_json::Value,
}

impl QueryResponse {
    pub fn parse(bytes: &[u8]) -> Result<QueryResponse, String> {
        serde_json::from_slice(bytes).map_err(|e| format!("not a Prometheus query response: {e}"))
    }

    /// A `success` response with a vector of `(labels, value)` samples, for tests and servers.
    pub fn vector(samples: &[(&[(&str, &str)], f64)]) -> QueryResponse {
        let result = samples
            .iter()
            .map(|(labels, value)| {
                let metric: serde_json::Map<String, serde_json::Value> = labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
                    .collect();
                serde_json::json!({ "metric": metric, "value": [0, value.to_string()] })
            })
            .collect();
        QueryResponse {
            status: "success".into(),
            data: Some(QueryData {
                result_type: "vector".into(),
                result: serde_json::Value::Array(result),
            }),
            error_type: None,
            error: None,
            warnings: Vec::new(),
        }
    }

    /// Whether the single sample says the cluster matches (1) or not (0).
    pub fn matches(&self) -> Result<bool, String> {
        if self.status != "success" {
            return Err(format!(
                "query failed: {}: {}",
                self.error_type.as_deref().unwrap_or("error"),
                self.error.as_deref().unwrap_or("no message")
            ));
        }
        let data = self.data.as_ref().ok_or("the response has no data")?;
        if data.result_type != "vector" {
            return Err(format!(
                "invalid PromQL result type {}, not vector",
                data.result_type
            ));
        }
        let samples = data
            .result
            .as_array()
            .ok_or("the vector result is not a list")?;
        if samples.len() != 1 {
            return Err(format!(
                "invalid PromQL result length: must be one, but is {}",
                samples.len()
            ));
        }
        let value = samples[0]["value"][1]
            .as_str()
            .and_then(|v| v.parse::<f64>().ok())
            .ok_or("the sample has no numeric value")?;
        if value == 0.0 {
            Ok(false)
        } else if value == 1.0 {
            Ok(true)
        } else {
            Err(format!("invalid PromQL result (must be 0 or 1): {value}"))
        }
    }
}

/// What the caller got for each query: the response, or why there is none (transport error).
pub type QueryResults = BTreeMap<String, Result<QueryResponse, String>>;

/// Every PromQL query the risks of these updates need, each once.
pub fn promql_queries<'a>(
    updates: impl IntoIterator<Item = &'a ConditionalUpdate>,
) -> BTreeSet<String> {
    updates
        .into_iter()
        .flat_map(|u| &u.risks)
        .flat_map(|r| &r.matching_rules)
        .filter(|rule| rule.type_ == "PromQL")
        .filter_map(|rule| rule.promql.as_ref().map(|p| p.promql.clone()))
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

/// Whether one risk applies: the `Applies` condition of the CVO's risk status.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RiskEvaluation {
    pub name: String,
    pub status: ConditionStatus,
    /// `Match`, `NotMatch` or `EvaluationFailed`.
    pub reason: String,
    pub message: String,
}

pub fn evaluate_risk(risk: &Risk, results: &QueryResults) -> RiskEvaluation {
    let outcome = |status, reason: &str, message: String| RiskEvaluation {
        name: risk.name.clone(),
        status,
        reason: reason.into(),
        message,
    };
    let mut failures = Vec::new();
    for rule in &risk.matching_rules {
        let matched = match (rule.type_.as_str(), &rule.promql) {
            ("Always", _) => Ok(true),
            ("PromQL", Some(promql)) => match results.get(&promql.promql) {
                None => Err(format!("query {:?} was not run", promql.promql)),
                Some(Err(why)) => Err(format!("executing PromQL query: {why}")),
                Some(Ok(response)) => response.matches(),
            },
            _ => continue,
        };
        match matched {
            Ok(true) => {
                return outcome(
                    ConditionStatus::True,
                    MATCH,
                    format!(
                        "The update is exposed to risk {}: {}",
                        risk.name, risk.message
                    ),
                );
            }
            Ok(false) => {
                return outcome(
                    ConditionStatus::False,
                    NOT_MATCH,
                    format!("The cluster is not exposed to risk {}", risk.name),
                );
            }
            Err(why) => failures.push(why),
        }
    }
    if failures.is_empty() {
        return outcome(
            ConditionStatus::False,
            NOT_MATCH,
            format!("No rule of risk {} matches this cluster", risk.name),
        );
    }
    outcome(
        ConditionStatus::Unknown,
        FAILED,
        format!(
            "Could not evaluate exposure to update risk {} ({})\n  {} description: {}\n  {} URL: {}",
            risk.name,
            failures.join("; "),
            risk.name,
            risk.message,
            risk.name,
            risk.url
        ),
    )
}

/// The `Recommended` condition of a conditional update.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Recommendation {
    pub status: ConditionStatus,
    pub reason: String,
    pub message: String,
    /// Risks that apply, or could not be evaluated, and were accepted (`acceptRisks`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted: Vec<String>,
}

use windlass_api::names::reasons::conditional_update::{
    ALL_EXPOSED_RISKS_ACCEPTED as ACCEPTED, EVALUATION_FAILED as FAILED,
    EXPOSED_TO_RISKS as EXPOSED, MATCH, MULTIPLE_REASONS as MULTIPLE,
    NOT_EXPOSED_TO_RISKS as NOT_EXPOSED, NOT_MATCH,
};

fn merge_status(now: ConditionStatus, want: ConditionStatus) -> ConditionStatus {
    use ConditionStatus::*;
    match (now, want) {
        (False, _) | (_, False) => False,
        (Unknown, _) | (_, Unknown) => Unknown,
        _ => want,
    }
}

fn merge_reason(now: &str, want: &str) -> String {
    let take_want = now == NOT_EXPOSED
        || (now == ACCEPTED && want != NOT_EXPOSED)
        || (now == FAILED && want == EXPOSED)
        || now == want;
    let keep_now = want == NOT_EXPOSED
        || (now == FAILED && want == ACCEPTED)
        || (now == EXPOSED && (want == ACCEPTED || want == FAILED));
    if take_want {
        want.into()
    } else if keep_now {
        now.into()
    } else {
        MULTIPLE.into()
    }
}

/// A risk name used as a condition reason when it has a reason's shape.
fn is_reason(name: &str) -> bool {
    let bytes = name.as_bytes();
    let inner = |b: &u8| b.is_ascii_alphanumeric() || b"_,:".contains(b);
    !bytes.is_empty()
        && bytes[0].is_ascii_alphabetic()
        && bytes.iter().all(inner)
        && (bytes.len() == 1
            || bytes[bytes.len() - 1].is_ascii_alphanumeric()
            || bytes[bytes.len() - 1] == b'_')
}

/// Combines the evaluations of an update's risks with the risks the admin accepted.
pub fn recommend(
    update: &ConditionalUpdate,
    evaluations: &BTreeMap<String, RiskEvaluation>,
    accepted_risks: &BTreeSet<String>,
) -> Recommendation {
    let mut status = ConditionStatus::True;
    let mut reason = NOT_EXPOSED.to_string();
    let mut message =
        "The update is recommended, because none of the conditional update risks apply to this cluster.".to_string();
    let mut problems = Vec::new();
    let mut accepted = Vec::new();
    for risk in &update.risks {
        let (risk_status, risk_message) = match evaluations.get(&risk.name) {
            Some(e) => (e.status, e.message.clone()),
            None => (
                ConditionStatus::Unknown,
                format!("risk {} was not evaluated", risk.name),
            ),
        };
        match risk_status {
            // Accepting a risk by name accepts it whether it applies or could not be told.
            ConditionStatus::True | ConditionStatus::Unknown
                if accepted_risks.contains(&risk.name) =>
            {
                status = merge_status(status, ConditionStatus::True);
                reason = merge_reason(&reason, ACCEPTED);
                message = "The update is recommended, because either risk does not apply to this cluster or it is accepted by cluster admins.".into();
                accepted.push(risk.name.clone());
            }
            ConditionStatus::Unknown => {
                status = merge_status(status, ConditionStatus::Unknown);
                reason = merge_reason(&reason, FAILED);
                problems.push(risk_message);
            }
            ConditionStatus::True => {
                status = merge_status(status, ConditionStatus::False);
                let want = if is_reason(&risk.name) {
                    risk.name.as_str()
                } else {
                    EXPOSED
                };
                reason = merge_reason(&reason, want);
                problems.push(format!("{} {}", risk.message, risk.url));
            }
            ConditionStatus::False => {}
        }
    }
    if !problems.is_empty() {
        message = problems.join("\n\n");
    }
    Recommendation {
        status,
        reason,
        message,
        accepted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{ClusterCondition, PromQlCondition, Release};

    fn promql(query: &str) -> ClusterCondition {
        ClusterCondition {
            type_: "PromQL".into(),
            promql: Some(PromQlCondition {
                promql: query.into(),
            }),
        }
    }

    fn always() -> ClusterCondition {
        ClusterCondition {
            type_: "Always".into(),
            promql: None,
        }
    }

    fn risk(name: &str, rules: Vec<ClusterCondition>) -> Risk {
        Risk {
            url: format!("https://example.com/{name}"),
            name: name.into(),
            message: format!("{name} hurts"),
            matching_rules: rules,
        }
    }

    #[test]
    fn requests_are_url_encoded() {
        let request = QueryRequest {
            query: "group(up{job=\"etcd\"}) == 1".into(),
            time: Some("2026-01-01T00:00:00Z".into()),
        };
        assert_eq!(
            request.path_and_query(),
            "/api/v1/query?query=group%28up%7Bjob%3D%22etcd%22%7D%29+%3D%3D+1&time=2026-01-01T00%3A00%3A00Z"
        );
    }

    #[test]
    fn responses_decide_by_their_single_sample() {
        let table: Vec<(QueryResponse, Result<bool, &str>)> = vec![
            (QueryResponse::vector(&[(&[], 1.0)]), Ok(true)),
            (QueryResponse::vector(&[(&[("a", "b")], 0.0)]), Ok(false)),
            (QueryResponse::vector(&[]), Err("must be one, but is 0")),
            (
                QueryResponse::vector(&[(&[], 1.0), (&[], 1.0)]),
                Err("must be one, but is 2"),
            ),
            (QueryResponse::vector(&[(&[], 0.5)]), Err("must be 0 or 1")),
            (
                QueryResponse::parse(
                    br#"{"status":"error","errorType":"bad_data","error":"parse error"}"#,
                )
                .unwrap(),
                Err("bad_data: parse error"),
            ),
            (
                QueryResponse::parse(
                    br#"{"status":"success","data":{"resultType":"scalar","result":[0,"1"]}}"#,
                )
                .unwrap(),
                Err("scalar, not vector"),
            ),
        ];
        for (response, expected) in table {
            let got = response.matches();
            match (&expected, &got) {
                (Ok(a), Ok(b)) if a == b => {}
                (Err(part), Err(message)) if message.contains(part) => {}
                _ => panic!("{response:?}: expected {expected:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn the_first_rule_that_evaluates_decides() {
        let ok = |v: f64| Ok(QueryResponse::vector(&[(&[], v)]));
        let results: QueryResults = [
            ("yes".to_string(), ok(1.0)),
            ("no".to_string(), ok(0.0)),
            ("down".to_string(), Err("connection refused".to_string())),
        ]
        .into();
        let unknown = ClusterCondition {
            type_: "Mystery".into(),
            promql: None,
        };
        let table = [
            (vec![always()], ConditionStatus::True, MATCH),
            (vec![promql("yes")], ConditionStatus::True, MATCH),
            (
                vec![promql("no"), always()],
                ConditionStatus::False,
                NOT_MATCH,
            ),
            (
                vec![promql("down"), promql("no")],
                ConditionStatus::False,
                NOT_MATCH,
            ),
            (
                vec![unknown.clone(), promql("yes")],
                ConditionStatus::True,
                MATCH,
            ),
            (vec![promql("down")], ConditionStatus::Unknown, FAILED),
            (vec![promql("never-run")], ConditionStatus::Unknown, FAILED),
            (vec![unknown], ConditionStatus::False, NOT_MATCH),
        ];
        for (rules, status, reason) in table {
            let evaluation = evaluate_risk(&risk("R", rules.clone()), &results);
            assert_eq!(
                (evaluation.status, evaluation.reason.as_str()),
                (status, reason),
                "{rules:?}"
            );
        }
        let failed = evaluate_risk(&risk("R", vec![promql("down")]), &results);
        assert!(
            failed.message.contains("connection refused"),
            "{}",
            failed.message
        );
    }

    #[test]
    fn recommendation_combines_risks_as_the_cvo_does() {
        let update = |names: &[&str]| ConditionalUpdate {
            release: Release {
                version: semver::Version::new(4, 2, 0),
                image: "r@sha256:b0".into(),
                url: None,
                channels: vec![],
            },
            risks: names.iter().map(|n| risk(n, vec![always()])).collect(),
        };
        let evaluation = |name: &str, status| {
            (
                name.to_string(),
                RiskEvaluation {
                    name: name.into(),
                    status,
                    reason: String::new(),
                    message: format!("{name} could not be evaluated"),
                },
            )
        };
        use ConditionStatus::*;
        let evaluations: BTreeMap<String, RiskEvaluation> = [
            evaluation("Applies", True),
            evaluation("AlsoApplies", True),
            evaluation("Fine", False),
            evaluation("Broken", Unknown),
            evaluation("not a reason!", True),
        ]
        .into();
        let none = BTreeSet::new();
        let accepted: BTreeSet<String> = ["Applies".to_string()].into();
        let broken_accepted: BTreeSet<String> = ["Broken".to_string()].into();
        let table: Vec<(Vec<&str>, &BTreeSet<String>, ConditionStatus, &str)> = vec![
            (vec![], &none, True, NOT_EXPOSED),
            (vec!["Fine"], &none, True, NOT_EXPOSED),
            (vec!["Applies"], &none, False, "Applies"),
            (vec!["Applies"], &accepted, True, ACCEPTED),
            (vec!["Applies", "Fine"], &accepted, True, ACCEPTED),
            (vec!["Applies", "AlsoApplies"], &none, False, MULTIPLE),
            (
                vec!["Applies", "AlsoApplies"],
                &accepted,
                False,
                "AlsoApplies",
            ),
            (vec!["Broken"], &none, Unknown, FAILED),
            (vec!["Broken"], &broken_accepted, True, ACCEPTED),
            (
                vec!["Broken", "Applies"],
                &broken_accepted,
                False,
                "Applies",
            ),
            (vec!["Broken", "Applies"], &none, False, MULTIPLE),
            (vec!["not a reason!"], &none, False, EXPOSED),
            (vec!["Broken", "not a reason!"], &none, False, EXPOSED),
            (vec!["Missing"], &none, Unknown, FAILED),
        ];
        for (names, accepted, status, reason) in table {
            let r = recommend(&update(&names), &evaluations, accepted);
            assert_eq!(
                (r.status, r.reason.as_str()),
                (status, reason),
                "{names:?} accepted {accepted:?}"
            );
        }
        let r = recommend(&update(&["Applies"]), &evaluations, &none);
        assert_eq!(r.message, "Applies hurts https://example.com/Applies");
        let r = recommend(&update(&["Applies"]), &evaluations, &accepted);
        assert_eq!(r.accepted, vec!["Applies"]);
    }

    #[test]
    fn queries_are_collected_once() {
        let u = ConditionalUpdate {
            release: Release {
                version: semver::Version::new(1, 0, 0),
                image: "i".into(),
                url: None,
                channels: vec![],
            },
            risks: vec![
                risk("A", vec![promql("q1"), always()]),
                risk("B", vec![promql("q1"), promql("q2")]),
            ],
        };
        assert_eq!(
            promql_queries([&u]).into_iter().collect::<Vec<_>>(),
            vec!["q1", "q2"]
        );
    }
}
