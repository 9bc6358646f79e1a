//! The update service: what the cluster may move to from its release (`status.availableUpdates`,
//! `status.conditionalUpdates`), and the payload a `desiredUpdate.version` names.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
    time::Instant,
};

use crate::Context;
use k8s_openapi::jiff::Timestamp;
use semver::Version;
use windlass_api::{
    ClusterVersion, ClusterVersionStatus, Condition, ConditionStatus,
    clusterversion::{AvailableRelease, ConditionalRelease, UpdateRisk, UpdateState},
    names::{conditions::cluster_version as types, reasons::cluster_version as reasons},
};
use windlass_release::{
    graph::{Graph, Release, Updates},
    risk::{self, QueryResults, evaluate_risk, promql_queries, recommend},
};

/// The architecture windlass asks the update service about.
const ARCH: &str = "amd64";
/// The biggest graph document read.
const MAX_GRAPH_BYTES: usize = 16 * 1024 * 1024;

/// Asks `upstream` for the graph of `channel` as seen from `version`.
pub async fn retrieve(
    http: &reqwest::Client,
    upstream: &str,
    channel: &str,
    version: &Version,
) -> Result<Graph, String> {
    let response = http
        .get(upstream)
        .query(&[
            ("channel", channel),
            ("version", &version.to_string()),
            ("arch", ARCH),
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

/// The updates `graph` offers from `current`, with each conditional update's recommendation
/// (risks of type `Always` apply; `PromQL` risks cannot be evaluated without a Prometheus
/// endpoint, so they are Unknown) given the risks the admin accepted.
pub fn offered(
    graph: &Graph,
    current: &Version,
    accepted: &BTreeSet<String>,
    now: Timestamp,
) -> Result<(Vec<AvailableRelease>, Vec<ConditionalRelease>), String> {
    let Updates {
        available,
        conditional,
        ..
    } = graph.updates_from(current).map_err(|e| e.to_string())?;
    let results: QueryResults = promql_queries(&conditional)
        .into_iter()
        .map(|q| {
            (
                q,
                Err("no Prometheus-compatible endpoint is configured".to_string()),
            )
        })
        .collect();
    let conditional = conditional
        .iter()
        .map(|update| {
            let evaluations: BTreeMap<String, risk::RiskEvaluation> = update
                .risks
                .iter()
                .map(|r| (r.name.clone(), evaluate_risk(r, &results)))
                .collect();
            let recommendation = recommend(update, &evaluations, accepted);
            let status = match recommendation.status {
                risk::ConditionStatus::True => ConditionStatus::True,
                risk::ConditionStatus::False => ConditionStatus::False,
                risk::ConditionStatus::Unknown => ConditionStatus::Unknown,
            };
            let mut condition = Condition::new(
                types::RECOMMENDED,
                status,
                &recommendation.reason,
                recommendation.message,
            );
            condition.last_transition_time =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now));
            ConditionalRelease {
                release: listed(&update.release),
                risks: update
                    .risks
                    .iter()
                    .map(|r| UpdateRisk {
                        name: r.name.clone(),
                        message: r.message.clone(),
                        url: r.url.clone(),
                    })
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
        let names: Vec<&str> = update.risks.iter().map(|r| r.name.as_str()).collect();
        if force || recommended.is_some_and(|c| c.status == ConditionStatus::True) {
            let taken = names.iter().map(|n| n.to_string()).collect();
            return Ok((update.release.image.clone(), taken));
        }
        return Err((
            reasons::CONDITIONAL_UPDATE_RISKS,
            format!(
                "the update to {version} is not recommended: {}; to go anyway, list {} in spec.desiredUpdate.acceptRisks (or set force)",
                recommended
                    .map(|c| c.message.as_str())
                    .unwrap_or("its risks were not evaluated"),
                names.join(", ")
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

/// The updates the configured update service offers from the cluster's release (fetched at
/// most every [`GRAPH_TTL`]); `None` without an update service or a release to start from.
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
    let key = (
        upstream.to_string(),
        channel.to_string(),
        current.to_string(),
    );
    let cached = ctx
        .graphs
        .lock()
        .expect("graph cache poisoned")
        .get(&key)
        .filter(|(at, _)| at.elapsed() < GRAPH_TTL)
        .map(|(_, graph)| graph.clone());
    let graph = match cached {
        Some(graph) => graph,
        None => match retrieve(&ctx.http, upstream, channel, &current).await {
            Ok(graph) => {
                let graph = Arc::new(graph);
                ctx.graphs
                    .lock()
                    .expect("graph cache poisoned")
                    .insert(key, (Instant::now(), graph.clone()));
                graph
            }
            Err(message) => return Some(Err(message)),
        },
    };
    Some(offered(&graph, &current, accepted, now))
}

/// A recommendation that did not change keeps the time it last changed, so an unchanged graph
/// writes nothing.
pub fn keep_transition_times(
    mut updates: Vec<ConditionalRelease>,
    previous: &[ConditionalRelease],
) -> Vec<ConditionalRelease> {
    for update in &mut updates {
        let Some(before) = previous
            .iter()
            .find(|p| p.release.version == update.release.version)
        else {
            continue;
        };
        for condition in &mut update.conditions {
            if let Some(old) = before
                .conditions
                .iter()
                .find(|c| c.type_ == condition.type_ && c.status == condition.status)
            {
                condition.last_transition_time = old.last_transition_time.clone();
            }
        }
    }
    updates
}

/// How long an update graph is used before it is asked for again.
const GRAPH_TTL: std::time::Duration = std::time::Duration::from_secs(300);

#[cfg(test)]
mod tests {
    use super::*;

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
        let (available, conditional) =
            offered(&graph, &current, &BTreeSet::new(), Timestamp::UNIX_EPOCH).unwrap();
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
        let (available, conditional) =
            offered(&graph, &current, &accepted, Timestamp::UNIX_EPOCH).unwrap();
        assert_eq!(
            resolve("4.2.0", &available, &conditional, false),
            Ok(("r@sha256:c".to_string(), vec!["KnownIssue".to_string()]))
        );
    }
}
