//! The update service: what the cluster may move to from its release (`status.availableUpdates`,
//! `status.conditionalUpdates`), and the payload a `desiredUpdate.version` names.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use semver::Version;
use tokio::{sync::mpsc, task::JoinHandle};
use windlass_api::{
    ClusterVersion, ClusterVersionStatus, Condition, ConditionStatus,
    clusterversion::{
        AvailableRelease, ConditionalRelease, PromQlRule, RiskMatchingRule, UpdateRisk, UpdateState,
    },
    names::{conditions::cluster_version as types, reasons::cluster_version as reasons},
};
use windlass_release::{
    graph::{Graph, Release, Risk, Updates},
    risk::{self, QueryResults, evaluate_risk, promql_queries, recommend},
};

use crate::{Context, promql};

/// The architecture the update service is asked about: the nodes' (as Go names it, which is
/// what `status.nodeInfo.architecture` reports), `multi` when they differ, this process's own
/// when the cluster has no nodes yet or they cannot be read.
pub async fn cluster_architecture(client: &kube::Client) -> String {
    let nodes = kube::Api::<k8s_openapi::api::core::v1::Node>::all(client.clone());
    let listed = nodes.list(&Default::default()).await;
    let architectures: std::collections::BTreeSet<String> = listed
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|n| n.status?.node_info.map(|i| i.architecture))
        .filter(|a| !a.is_empty())
        .collect();
    architecture_of(&architectures)
}

fn architecture_of(nodes: &std::collections::BTreeSet<String>) -> String {
    match nodes.len() {
        0 => match std::env::consts::ARCH {
            "x86_64" => "amd64".into(),
            "aarch64" => "arm64".into(),
            "powerpc64" => "ppc64le".into(),
            other => other.into(),
        },
        1 => nodes.iter().next().cloned().unwrap_or_default(),
        _ => "multi".into(),
    }
}
/// The biggest graph document read.
const MAX_GRAPH_BYTES: usize = 16 * 1024 * 1024;

/// Asks `upstream` for the graph of `channel` as seen from `version`.
pub async fn retrieve(
    http: &reqwest::Client,
    upstream: &str,
    channel: &str,
    version: &Version,
    arch: &str,
) -> Result<Graph, String> {
    let response = http
        .get(upstream)
        .query(&[
            ("channel", channel),
            ("version", &version.to_string()),
            ("arch", arch),
        ])
        .header("Accept", "application/json")
        .send()
        .await
        .map_err(|e| format!("asking {upstream}: {e}"))?;
    let status = response.status();
    let body = response
        .bytes()
        .await
        .map_err(|e| format!("reading the answer of {upstream}: {e}"))?;
    if !status.is_success() {
        return Err(format!(
            "{upstream} answered {status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(300)])
        ));
    }
    if body.len() > MAX_GRAPH_BYTES {
        return Err(format!(
            "{upstream} sent a graph of {} bytes, more than {MAX_GRAPH_BYTES}",
            body.len()
        ));
    }
    Graph::parse(&body, upstream).map_err(|e| e.to_string())
}

fn listed(release: &Release) -> AvailableRelease {
    AvailableRelease {
        version: release.version.to_string(),
        image: release.image.clone(),
        url: release.url.clone(),
        channels: release.channels.clone(),
    }
}

fn condition_status(status: risk::ConditionStatus) -> ConditionStatus {
    match status {
        risk::ConditionStatus::True => ConditionStatus::True,
        risk::ConditionStatus::False => ConditionStatus::False,
        risk::ConditionStatus::Unknown => ConditionStatus::Unknown,
    }
}

fn listed_risk(risk: &Risk, evaluation: &risk::RiskEvaluation, now: Timestamp) -> UpdateRisk {
    let mut applies = Condition::new(
        types::APPLIES,
        condition_status(evaluation.status),
        &evaluation.reason,
        evaluation.message.clone(),
    );
    applies.last_transition_time = Some(Time(now));
    UpdateRisk {
        name: risk.name.clone(),
        message: risk.message.clone(),
        url: risk.url.clone(),
        matching_rules: risk
            .matching_rules
            .iter()
            .map(|rule| RiskMatchingRule {
                type_: rule.type_.clone(),
                promql: rule.promql.as_ref().map(|p| PromQlRule {
                    promql: p.promql.clone(),
                }),
            })
            .collect(),
        conditions: vec![applies],
    }
}

/// The `PromQL` queries the conditional updates `graph` offers from `current` need, each once.
pub fn queries(graph: &Graph, current: &Version) -> BTreeSet<String> {
    graph
        .updates_from(current)
        .map(|updates| promql_queries(&updates.conditional))
        .unwrap_or_default()
}

/// The updates `graph` offers from `current`, with each conditional update's risks evaluated
/// (`Always` applies; `PromQL` by the answers in `results`) and its recommendation given the
/// risks the admin accepted.
pub fn offered(
    graph: &Graph,
    current: &Version,
    results: &QueryResults,
    accepted: &BTreeSet<String>,
    now: Timestamp,
) -> Result<(Vec<AvailableRelease>, Vec<ConditionalRelease>), String> {
    let Updates {
        available,
        conditional,
        ..
    } = graph.updates_from(current).map_err(|e| e.to_string())?;
    let conditional = conditional
        .iter()
        .map(|update| {
            let evaluations: BTreeMap<String, risk::RiskEvaluation> = update
                .risks
                .iter()
                .map(|r| (r.name.clone(), evaluate_risk(r, results)))
                .collect();
            let recommendation = recommend(update, &evaluations, accepted);
            let mut condition = Condition::new(
                types::RECOMMENDED,
                condition_status(recommendation.status),
                &recommendation.reason,
                recommendation.message,
            );
            condition.last_transition_time = Some(Time(now));
            ConditionalRelease {
                release: listed(&update.release),
                risks: update
                    .risks
                    .iter()
                    .map(|r| listed_risk(r, &evaluations[&r.name], now))
                    .collect(),
                conditions: vec![condition],
            }
        })
        .collect();
    Ok((available.iter().map(listed).collect(), conditional))
}

/// The payload image of `version` among what the graph offers, and the risks of a conditional
/// update that go with it (for history). A conditional update needs its risks not to apply, to
/// be accepted by name, or `force`.
pub fn resolve(
    version: &str,
    available: &[AvailableRelease],
    conditional: &[ConditionalRelease],
    force: bool,
) -> Result<(String, Vec<String>), (&'static str, String)> {
    if let Some(release) = available.iter().find(|r| r.version == version) {
        return Ok((release.image.clone(), Vec::new()));
    }
    if let Some(update) = conditional.iter().find(|u| u.release.version == version) {
        let recommended = update
            .conditions
            .iter()
            .find(|c| c.type_ == types::RECOMMENDED);
        if force || recommended.is_some_and(|c| c.status == ConditionStatus::True) {
            // What was let through: the risks that apply or could not be evaluated.
            let taken = update
                .risks
                .iter()
                .filter(|r| {
                    !r.conditions
                        .iter()
                        .any(|c| c.type_ == types::APPLIES && c.status == ConditionStatus::False)
                })
                .map(|r| r.name.clone())
                .collect();
            return Ok((update.release.image.clone(), taken));
        }
        let unaccepted: Vec<&str> = update
            .risks
            .iter()
            .filter(|r| {
                !r.conditions
                    .iter()
                    .any(|c| c.type_ == types::APPLIES && c.status == ConditionStatus::False)
            })
            .map(|r| r.name.as_str())
            .collect();
        return Err((
            reasons::CONDITIONAL_UPDATE_RISKS,
            format!(
                "the update to {version} is not recommended ({}): {}; to go anyway, list {} in spec.desiredUpdate.acceptRisks (or set force)",
                recommended
                    .map(|c| c.reason.as_str())
                    .unwrap_or("NotEvaluated"),
                recommended
                    .map(|c| c.message.as_str())
                    .unwrap_or("its risks were not evaluated"),
                unaccepted.join(", ")
            ),
        ));
    }
    let mut offered: Vec<&str> = available
        .iter()
        .map(|r| r.version.as_str())
        .chain(conditional.iter().map(|u| u.release.version.as_str()))
        .collect();
    offered.sort();
    Err((
        reasons::VERSION_NOT_FOUND,
        format!(
            "the update service offers no update to {version} from here (it offers: {})",
            if offered.is_empty() {
                "none".to_string()
            } else {
                offered.join(", ")
            }
        ),
    ))
}

/// An update graph as fetched, with the answers to its risks' queries, by what was asked:
/// upstream, channel, the cluster's version and the query endpoint (as configured).
pub type GraphKey = (String, String, String, String);

/// What one poll of the update service brought.
pub struct Retrieved {
    pub at: Instant,
    pub graph: Arc<Graph>,
    pub results: Arc<QueryResults>,
}

/// How often the update service is asked again when `spec.updateCheckIntervalSeconds` is unset.
pub const DEFAULT_CHECK_INTERVAL: Duration = Duration::from_secs(300);
const MIN_CHECK_INTERVAL: Duration = Duration::from_secs(10);

/// How often `version`'s update service is polled (and its risks evaluated).
pub fn check_interval(version: &ClusterVersion) -> Duration {
    version
        .spec
        .update_check_interval_seconds
        .map(|s| Duration::from_secs(s.max(0) as u64).max(MIN_CHECK_INTERVAL))
        .unwrap_or(DEFAULT_CHECK_INTERVAL)
}

/// The updates the configured update service offers from the cluster's release; `None`
/// without an update service or a release to start from. The graph is fetched, and the
/// `PromQL` risks of its conditional updates run against `spec.prometheus`, at most once per
/// [`check_interval`]; the reconcile is woken for the next poll.
pub async fn retrieve_updates(
    ctx: &Context,
    version: &ClusterVersion,
    status: &ClusterVersionStatus,
    accepted: &BTreeSet<String>,
    now: Timestamp,
) -> Option<Result<(Vec<AvailableRelease>, Vec<ConditionalRelease>), String>> {
    let upstream = version.spec.upstream.as_deref().filter(|u| !u.is_empty())?;
    let channel = version.spec.channel.as_deref().filter(|c| !c.is_empty())?;
    let current = status
        .history
        .iter()
        .find(|h| h.state == UpdateState::Completed)
        .map(|h| h.version.clone())?;
    let current = match semver::Version::parse(&current) {
        Ok(v) => v,
        Err(e) => return Some(Err(format!("the cluster's version {current}: {e}"))),
    };
    let interval = check_interval(version);
    let key = (
        upstream.to_string(),
        channel.to_string(),
        current.to_string(),
        serde_json::to_string(&version.spec.prometheus).unwrap_or_default(),
    );
    let cached = {
        let mut graphs = ctx.graphs.lock().expect("graph cache poisoned");
        graphs.retain(|_, r| r.at.elapsed() < interval.max(DEFAULT_CHECK_INTERVAL));
        graphs
            .get(&key)
            .filter(|r| r.at.elapsed() < interval)
            .map(|r| (r.at, r.graph.clone(), r.results.clone()))
    };
    let (at, graph, results) = match cached {
        Some(found) => found,
        None => {
            let at = Instant::now();
            // As the release ServiceAccount: the manager itself never reads nodes.
            let arch = cluster_architecture(ctx.applier.client()).await;
            let graph = match retrieve(&ctx.http, upstream, channel, &current, &arch).await {
                Ok(graph) => Arc::new(graph),
                Err(message) => {
                    ctx.update_checks.wake_at(at + interval);
                    return Some(Err(message));
                }
            };
            let queries = queries(&graph, &current);
            let results = if queries.is_empty() {
                QueryResults::new()
            } else {
                let endpoint = match &version.spec.prometheus {
                    Some(spec) => promql::endpoint(&ctx.shell.client, &ctx.namespace, spec).await,
                    None => Err(promql::NOT_CONFIGURED.to_string()),
                };
                promql::run(&endpoint, queries).await
            };
            let results = Arc::new(results);
            ctx.graphs.lock().expect("graph cache poisoned").insert(
                key,
                Retrieved {
                    at,
                    graph: graph.clone(),
                    results: results.clone(),
                },
            );
            (at, graph, results)
        }
    };
    ctx.update_checks.wake_at(at + interval);
    Some(offered(&graph, &current, &results, accepted, now))
}

/// Wakes the reconcile when the next poll of the update service is due, even when nothing
/// else would (a settled cluster is otherwise looked at every few minutes only).
pub struct CheckTimer {
    wake: mpsc::Sender<()>,
    pending: Mutex<Option<(Instant, JoinHandle<()>)>>,
}

impl CheckTimer {
    pub fn new(wake: mpsc::Sender<()>) -> CheckTimer {
        CheckTimer {
            wake,
            pending: Mutex::default(),
        }
    }

    /// Wakes the reconcile at `at` (replacing the wake-up planned before).
    pub fn wake_at(&self, at: Instant) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((planned, task)) = pending.as_ref() {
            if *planned == at && !task.is_finished() {
                return;
            }
            task.abort();
        }
        let wake = self.wake.clone();
        let task = tokio::spawn(async move {
            tokio::time::sleep_until(at.into()).await;
            // Full: a wake-up is pending already.
            let _ = wake.try_send(());
        });
        *pending = Some((at, task));
    }
}

impl Drop for CheckTimer {
    fn drop(&mut self) {
        if let Some((_, task)) = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            task.abort();
        }
    }
}

/// A recommendation (or a risk's evaluation) that did not change keeps the time it last
/// changed, so an unchanged graph writes nothing.
pub fn keep_transition_times(
    mut updates: Vec<ConditionalRelease>,
    previous: &[ConditionalRelease],
) -> Vec<ConditionalRelease> {
    fn keep(conditions: &mut [Condition], before: &[Condition]) {
        for condition in conditions {
            if let Some(old) = before
                .iter()
                .find(|c| c.type_ == condition.type_ && c.status == condition.status)
            {
                condition.last_transition_time = old.last_transition_time.clone();
            }
        }
    }
    for update in &mut updates {
        let Some(before) = previous
            .iter()
            .find(|p| p.release.version == update.release.version)
        else {
            continue;
        };
        keep(&mut update.conditions, &before.conditions);
        for risk in &mut update.risks {
            if let Some(old) = before.risks.iter().find(|r| r.name == risk.name) {
                keep(&mut risk.conditions, &old.conditions);
            }
        }
    }
    updates
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_graph_is_asked_for_the_nodes_architecture() {
        let one: std::collections::BTreeSet<String> = ["arm64".to_string()].into();
        assert_eq!(architecture_of(&one), "arm64");
        let mixed: std::collections::BTreeSet<String> =
            ["arm64".to_string(), "amd64".to_string()].into();
        assert_eq!(architecture_of(&mixed), "multi");
        assert!(!architecture_of(&Default::default()).is_empty());
    }

    const GRAPH: &str = r#"{
        "nodes": [
            {"version": "4.1.0", "payload": "r@sha256:a", "metadata": {}},
            {"version": "4.1.1", "payload": "r@sha256:b", "metadata": {}},
            {"version": "4.2.0", "payload": "r@sha256:c", "metadata": {}}
        ],
        "edges": [[0, 1]],
        "conditionalEdges": [{
            "edges": [{"from": "4.1.0", "to": "4.2.0"}],
            "risks": [{"name": "KnownIssue", "message": "breaks DNS", "url": "https://example.invalid/x",
                       "matchingRules": [{"type": "Always"}]}]
        }]
    }"#;

    #[test]
    fn a_risky_update_needs_its_risk_accepted_and_an_unknown_version_names_what_is_offered() {
        let graph = Graph::parse(GRAPH.as_bytes(), "test").unwrap();
        let current = Version::parse("4.1.0").unwrap();
        let (available, conditional) = offered(
            &graph,
            &current,
            &QueryResults::new(),
            &BTreeSet::new(),
            Timestamp::UNIX_EPOCH,
        )
        .unwrap();
        assert_eq!(available[0].version, "4.1.1");
        assert_eq!(conditional[0].release.version, "4.2.0");
        assert_eq!(conditional[0].conditions[0].status, ConditionStatus::False);
        assert_eq!(
            resolve("4.1.1", &available, &conditional, false),
            Ok(("r@sha256:b".to_string(), vec![]))
        );
        let (reason, message) = resolve("4.2.0", &available, &conditional, false).unwrap_err();
        assert_eq!(reason, reasons::CONDITIONAL_UPDATE_RISKS);
        assert!(message.contains("KnownIssue"), "{message}");
        let (reason, message) = resolve("4.3.0", &available, &conditional, false).unwrap_err();
        assert_eq!(reason, reasons::VERSION_NOT_FOUND);
        assert!(message.contains("4.1.1, 4.2.0"), "{message}");

        let accepted: BTreeSet<String> = ["KnownIssue".to_string()].into();
        let (available, conditional) = offered(
            &graph,
            &current,
            &QueryResults::new(),
            &accepted,
            Timestamp::UNIX_EPOCH,
        )
        .unwrap();
        assert_eq!(
            resolve("4.2.0", &available, &conditional, false),
            Ok(("r@sha256:c".to_string(), vec!["KnownIssue".to_string()]))
        );
    }

    const PROMQL_GRAPH: &str = r#"{
        "nodes": [
            {"version": "4.1.0", "payload": "r@sha256:a", "metadata": {}},
            {"version": "4.1.1", "payload": "r@sha256:b", "metadata": {}},
            {"version": "4.2.0", "payload": "r@sha256:c", "metadata": {}}
        ],
        "edges": [],
        "conditionalEdges": [
            {"edges": [{"from": "4.1.0", "to": "4.1.1"}],
             "risks": [{"name": "OnlyWithEtcdBackup", "message": "m", "url": "https://example.invalid/a",
                        "matchingRules": [{"type": "PromQL", "promql": {"promql": "etcd_backup"}}]}]},
            {"edges": [{"from": "4.1.0", "to": "4.2.0"}],
             "risks": [{"name": "SlowIngress", "message": "m", "url": "https://example.invalid/b",
                        "matchingRules": [{"type": "PromQL", "promql": {"promql": "ingress_slow"}}]}]}
        ]
    }"#;

    /// (4.1.1, 4.2.0) as `offered` lists them: the Recommended condition's status and reason,
    /// and the Applies condition of the update's one risk.
    fn judged(
        results: &QueryResults,
        accepted: &[&str],
    ) -> Vec<(ConditionStatus, String, ConditionStatus, String)> {
        let graph = Graph::parse(PROMQL_GRAPH.as_bytes(), "test").unwrap();
        let accepted: BTreeSet<String> = accepted.iter().map(|a| a.to_string()).collect();
        let current = Version::parse("4.1.0").unwrap();
        let (_, conditional) =
            offered(&graph, &current, results, &accepted, Timestamp::UNIX_EPOCH).unwrap();
        let mut got: Vec<_> = conditional
            .iter()
            .map(|u| {
                let recommended = &u.conditions[0];
                let applies = &u.risks[0].conditions[0];
                assert_eq!(applies.type_, types::APPLIES);
                (
                    recommended.status,
                    recommended.reason.clone(),
                    applies.status,
                    applies.reason.clone(),
                )
            })
            .collect();
        got.reverse();
        got
    }

    #[test]
    fn promql_answers_decide_recommendations_and_failures_leave_them_unknown() {
        use windlass_api::names::reasons::conditional_update as why;
        use windlass_release::risk::QueryResponse;
        let answer =
            |v: f64| -> Result<QueryResponse, String> { Ok(QueryResponse::vector(&[(&[], v)])) };
        let down = |q: &str| -> (String, Result<QueryResponse, String>) {
            (
                q.to_string(),
                Err("asking http://127.0.0.1:9/: connection refused".to_string()),
            )
        };
        let s = |t: &str| t.to_string();
        use ConditionStatus::*;

        let answered: QueryResults = [
            (s("etcd_backup"), answer(0.0)),
            (s("ingress_slow"), answer(1.0)),
        ]
        .into();
        assert_eq!(
            judged(&answered, &[]),
            vec![
                (True, s(why::NOT_EXPOSED_TO_RISKS), False, s(why::NOT_MATCH)),
                (False, s("SlowIngress"), True, s(why::MATCH)),
            ]
        );
        assert_eq!(
            judged(&answered, &["SlowIngress"])[1],
            (
                True,
                s(why::ALL_EXPOSED_RISKS_ACCEPTED),
                True,
                s(why::MATCH)
            )
        );

        let outage: QueryResults = [down("etcd_backup"), down("ingress_slow")].into();
        let failed = judged(&outage, &[]);
        assert_eq!(
            failed[0],
            (
                Unknown,
                s(why::EVALUATION_FAILED),
                Unknown,
                s(why::EVALUATION_FAILED)
            )
        );
        // Named in acceptRisks, a risk that could not be evaluated is accepted as one that applies.
        assert_eq!(
            judged(&outage, &["OnlyWithEtcdBackup"])[0],
            (
                True,
                s(why::ALL_EXPOSED_RISKS_ACCEPTED),
                Unknown,
                s(why::EVALUATION_FAILED)
            )
        );

        let graph = Graph::parse(PROMQL_GRAPH.as_bytes(), "test").unwrap();
        let current = Version::parse("4.1.0").unwrap();
        let (available, conditional) = offered(
            &graph,
            &current,
            &outage,
            &BTreeSet::new(),
            Timestamp::UNIX_EPOCH,
        )
        .unwrap();
        let recommended = &conditional
            .iter()
            .find(|u| u.release.version == "4.1.1")
            .unwrap()
            .conditions[0];
        assert!(
            recommended.message.contains("connection refused"),
            "{}",
            recommended.message
        );
        let (reason, message) = resolve("4.1.1", &available, &conditional, false).unwrap_err();
        assert_eq!(reason, reasons::CONDITIONAL_UPDATE_RISKS);
        assert!(
            message.contains("EvaluationFailed")
                && message.contains("connection refused")
                && message.contains("list OnlyWithEtcdBackup in spec.desiredUpdate.acceptRisks"),
            "{message}"
        );
        // Forced, the risk that could not be evaluated is what history records as let through.
        assert_eq!(
            resolve("4.1.1", &available, &conditional, true),
            Ok((
                "r@sha256:b".to_string(),
                vec!["OnlyWithEtcdBackup".to_string()]
            ))
        );
        // A risk that does not apply is not recorded as accepted.
        let (available, conditional) = offered(
            &graph,
            &current,
            &answered,
            &BTreeSet::new(),
            Timestamp::UNIX_EPOCH,
        )
        .unwrap();
        assert_eq!(
            resolve("4.1.1", &available, &conditional, false),
            Ok(("r@sha256:b".to_string(), vec![]))
        );
        assert_eq!(queries(&graph, &current).len(), 2);
    }
}
