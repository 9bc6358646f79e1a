//! The Cincinnati update graph: what an update service answers to
//! `GET <upstream>?channel=&version=&arch=`, checked, and the updates it offers a cluster.
//!
//! `edges` are `[from, to]` node indices; `conditionalEdges` name versions and carry the risks
//! that decide whether the update is recommended for a given cluster (see [`crate::risk`]).

use std::collections::{BTreeMap, BTreeSet};

use semver::Version;
use serde::{Deserialize, Serialize};

use crate::annotations::{CHANNELS_METADATA, URL_METADATA};
use crate::error::GraphError;

/// One release in the graph.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    pub version: Version,
    /// The release image, by digest.
    pub payload: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
}

impl Node {
    pub fn channels(&self) -> Vec<String> {
        self.metadata
            .get(CHANNELS_METADATA)
            .map(|list| {
                list.split(',')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn release(&self) -> Release {
        Release {
            version: self.version.clone(),
            image: self.payload.clone(),
            url: self.metadata.get(URL_METADATA).cloned(),
            channels: self.channels(),
        }
    }
}

/// A release as ClusterVersion status lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Release {
    pub version: Version,
    pub image: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub channels: Vec<String>,
}

/// How a cluster is matched against a risk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterCondition {
    /// `Always` or `PromQL`; other types are skipped, as the CVO skips them.
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promql: Option<PromQlCondition>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromQlCondition {
    /// A query whose single sample is 1 when the cluster is exposed, 0 when it is not.
    pub promql: String,
}

impl ClusterCondition {
    /// A rule windlass can evaluate: `Always`, or `PromQL` with a query.
    pub fn is_recognised(&self) -> bool {
        match self.type_.as_str() {
            "Always" => true,
            "PromQL" => self.promql.as_ref().is_some_and(|p| !p.promql.is_empty()),
            _ => false,
        }
    }
}

/// A known problem with some updates, for the clusters that match it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Risk {
    #[serde(default)]
    pub url: String,
    pub name: String,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub matching_rules: Vec<ClusterCondition>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConditionalEdge {
    pub from: String,
    pub to: String,
}

/// Edges that share risks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConditionalEdges {
    pub edges: Vec<ConditionalEdge>,
    #[serde(default)]
    pub risks: Vec<Risk>,
}

/// A Cincinnati graph, checked: edge indices in range, one node per version, conditional edges
/// naming known versions, no cycle.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Graph {
    pub nodes: Vec<Node>,
    #[serde(default)]
    pub edges: Vec<(usize, usize)>,
    #[serde(default)]
    pub conditional_edges: Vec<ConditionalEdges>,
}

/// An update that is recommended only if its risks do not apply (or are accepted).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConditionalUpdate {
    pub release: Release,
    pub risks: Vec<Risk>,
}

/// What the graph offers from one version, as the CVO reads it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Updates {
    pub current: Release,
    /// Unconditional updates, newest first.
    pub available: Vec<Release>,
    /// Conditional updates, newest first.
    pub conditional: Vec<ConditionalUpdate>,
    /// What was left out and why (a target listed twice, risks windlass cannot evaluate).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Graph {
    /// Parses and checks a graph document; `source` names it in errors (a URL, a file).
    pub fn parse(bytes: &[u8], source: &str) -> Result<Graph, GraphError> {
        let deserializer = &mut serde_json::Deserializer::from_slice(bytes);
        let graph: Graph =
            serde_path_to_error::deserialize(deserializer).map_err(|e| GraphError::Parse {
                source_name: source.into(),
                message: e.to_string(),
            })?;
        graph.check(source)?;
        Ok(graph)
    }

    /// The checks [`Graph::parse`] makes, for graphs built in memory.
    pub fn check(&self, source: &str) -> Result<(), GraphError> {
        let mut seen: BTreeMap<&Version, usize> = BTreeMap::new();
        for (index, node) in self.nodes.iter().enumerate() {
            if node.payload.is_empty() {
                return Err(GraphError::Node {
                    source_name: source.into(),
                    index,
                    message: format!("version {} has no payload", node.version),
                });
            }
            if let Some(first) = seen.insert(&node.version, index) {
                return Err(GraphError::DuplicateVersion {
                    source_name: source.into(),
                    version: node.version.to_string(),
                    first,
                    second: index,
                });
            }
        }
        let count = self.nodes.len();
        for (index, &(from, to)) in self.edges.iter().enumerate() {
            if let Some(missing) = [from, to].into_iter().find(|i| *i >= count) {
                return Err(GraphError::EdgeOutOfRange {
                    source_name: source.into(),
                    index,
                    from,
                    to,
                    missing,
                    count,
                });
            }
        }
        let by_text: BTreeMap<String, usize> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.version.to_string(), i))
            .collect();
        let mut adjacency: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); count];
        for &(from, to) in &self.edges {
            adjacency[from].insert(to);
        }
        for group in &self.conditional_edges {
            for edge in &group.edges {
                let index = |v: &str| {
                    by_text
                        .get(v)
                        .copied()
                        .ok_or_else(|| GraphError::UnknownConditionalVersion {
                            source_name: source.into(),
                            from: edge.from.clone(),
                            to: edge.to.clone(),
                            missing: v.into(),
                        })
                };
                let (from, to) = (index(&edge.from)?, index(&edge.to)?);
                adjacency[from].insert(to);
            }
        }
        if let Some(cycle) = find_cycle(&adjacency) {
            return Err(GraphError::Cycle {
                source_name: source.into(),
                path: cycle
                    .iter()
                    .map(|&i| self.nodes[i].version.to_string())
                    .collect(),
            });
        }
        Ok(())
    }

    pub fn node(&self, version: &Version) -> Option<(usize, &Node)> {
        self.nodes
            .iter()
            .enumerate()
            .find(|(_, n)| &n.version == version)
    }

    /// The updates the graph offers `version`, read as the CVO reads them: outgoing edges are
    /// available updates; conditional edges from the version are conditional updates; a target
    /// listed both ways is conditional only; a conditional target listed twice is dropped; a
    /// conditional update is dropped when a risk has no rule windlass can evaluate.
    pub fn updates_from(&self, version: &Version) -> Result<Updates, GraphError> {
        let (index, current) = self
            .node(version)
            .ok_or_else(|| GraphError::VersionNotFound {
                version: version.to_string(),
                channel: None,
            })?;
        let mut notes = Vec::new();
        let mut conditional: Vec<ConditionalUpdate> = Vec::new();
        let text = version.to_string();
        for group in &self.conditional_edges {
            for edge in group.edges.iter().filter(|e| e.from == text) {
                let Some(target) = self.nodes.iter().find(|n| n.version.to_string() == edge.to)
                else {
                    continue;
                };
                let mut risks = group.risks.clone();
                for risk in &mut risks {
                    risk.matching_rules.retain(ClusterCondition::is_recognised);
                }
                if let Some(risk) = risks.iter().find(|r| r.matching_rules.is_empty()) {
                    notes.push(format!(
                        "conditional update to {} left out: risk {} has no rule of type Always or PromQL",
                        target.version, risk.name
                    ));
                    continue;
                }
                conditional.push(ConditionalUpdate {
                    release: target.release(),
                    risks,
                });
            }
        }
        let mut targets: BTreeMap<String, usize> = BTreeMap::new();
        for update in &conditional {
            *targets.entry(update.release.image.clone()).or_default() += 1;
        }
        conditional.retain(|u| {
            let twice = targets[&u.release.image] > 1;
            if twice {
                notes.push(format!(
                    "conditional update to {} left out: the graph lists it {} times",
                    u.release.version, targets[&u.release.image]
                ));
            }
            !twice
        });
        notes.dedup();
        let mut available: Vec<Release> = self
            .edges
            .iter()
            .filter(|(from, _)| *from == index)
            .map(|&(_, to)| self.nodes[to].release())
            .filter(|r| !targets.contains_key(&r.image))
            .collect();
        available.sort_by(|a, b| b.version.cmp(&a.version));
        available.dedup();
        conditional.sort_by(|a, b| b.release.version.cmp(&a.release.version));
        Ok(Updates {
            current: current.release(),
            available,
            conditional,
            notes,
        })
    }

    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).expect("a graph serialises")
    }
}

/// A cycle as node indices, first node repeated at the end; `None` when the graph is acyclic.
fn find_cycle(adjacency: &[BTreeSet<usize>]) -> Option<Vec<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut marks = vec![Mark::New; adjacency.len()];
    for start in 0..adjacency.len() {
        if marks[start] != Mark::New {
            continue;
        }
        // Iterative depth-first search; `path` is the chain of open nodes.
        let mut path: Vec<usize> = vec![start];
        let mut next: Vec<std::collections::btree_set::Iter<usize>> = vec![adjacency[start].iter()];
        marks[start] = Mark::Open;
        while let Some(children) = next.last_mut() {
            match children.next() {
                Some(&child) => match marks[child] {
                    Mark::Open => {
                        let at = path.iter().position(|&n| n == child).expect("open on path");
                        let mut cycle = path[at..].to_vec();
                        cycle.push(child);
                        return Some(cycle);
                    }
                    Mark::New => {
                        marks[child] = Mark::Open;
                        path.push(child);
                        next.push(adjacency[child].iter());
                    }
                    Mark::Done => {}
                },
                None => {
                    let done = path.pop().expect("path follows the stack");
                    marks[done] = Mark::Done;
                    next.pop();
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRAPH: &str = r#"{
      "nodes": [
        {"version": "4.1.0", "payload": "r/release@sha256:a0", "metadata": {"io.openshift.upgrades.graph.release.channels": "stable-4.1,stable-4.2"}},
        {"version": "4.1.1", "payload": "r/release@sha256:a1"},
        {"version": "4.2.0", "payload": "r/release@sha256:b0", "metadata": {"url": "https://example.com/4.2.0"}},
        {"version": "4.2.1", "payload": "r/release@sha256:b1"}
      ],
      "edges": [[0, 1], [0, 2], [1, 2], [2, 3]],
      "conditionalEdges": [
        {"edges": [{"from": "4.1.0", "to": "4.2.0"}, {"from": "4.1.1", "to": "4.2.1"}],
         "risks": [{"url": "https://example.com/r", "name": "SlowEtcd", "message": "etcd may be slow",
                    "matchingRules": [{"type": "Mystery"}, {"type": "PromQL", "promql": {"promql": "etcd_slow"}}]}]}
      ]
    }"#;

    fn v(text: &str) -> Version {
        Version::parse(text).unwrap()
    }

    #[test]
    fn updates_from_a_version_prefer_conditional_edges() {
        let graph = Graph::parse(GRAPH.as_bytes(), "test").unwrap();
        let updates = graph.updates_from(&v("4.1.0")).unwrap();
        assert_eq!(updates.current.channels, vec!["stable-4.1", "stable-4.2"]);
        assert_eq!(
            updates
                .available
                .iter()
                .map(|r| r.version.to_string())
                .collect::<Vec<_>>(),
            vec!["4.1.1"]
        );
        assert_eq!(updates.conditional.len(), 1);
        let c = &updates.conditional[0];
        assert_eq!(c.release.version, v("4.2.0"));
        assert_eq!(c.release.url.as_deref(), Some("https://example.com/4.2.0"));
        assert_eq!(
            c.risks[0].matching_rules.len(),
            1,
            "the unknown rule type is skipped"
        );
        let from_411 = graph.updates_from(&v("4.1.1")).unwrap();
        assert_eq!(from_411.available[0].version, v("4.2.0"));
        assert_eq!(from_411.conditional[0].release.version, v("4.2.1"));
        assert!(
            graph
                .updates_from(&v("4.2.1"))
                .unwrap()
                .available
                .is_empty()
        );
        assert!(matches!(
            graph.updates_from(&v("9.9.9")),
            Err(GraphError::VersionNotFound { .. })
        ));
    }

    #[test]
    fn conditional_updates_without_evaluable_rules_or_listed_twice_are_dropped() {
        let mut graph = Graph::parse(GRAPH.as_bytes(), "test").unwrap();
        graph.conditional_edges[0].risks[0].matching_rules = vec![ClusterCondition {
            type_: "Mystery".into(),
            promql: None,
        }];
        let updates = graph.updates_from(&v("4.1.0")).unwrap();
        assert!(updates.conditional.is_empty());
        assert!(
            updates.notes[0].contains("risk SlowEtcd has no rule"),
            "{:?}",
            updates.notes
        );
        let mut graph = Graph::parse(GRAPH.as_bytes(), "test").unwrap();
        let copy = graph.conditional_edges[0].clone();
        graph.conditional_edges.push(copy);
        let updates = graph.updates_from(&v("4.1.0")).unwrap();
        assert!(updates.conditional.is_empty());
        assert!(
            updates.notes[0].contains("lists it 2 times"),
            "{:?}",
            updates.notes
        );
    }

    #[test]
    fn malformed_graphs_are_refused_naming_the_problem() {
        let table: &[(&str, &str)] = &[
            (r#"{"nodes": 3}"#, "nodes"),
            (
                r#"{"nodes": [{"version": "4.1", "payload": "p"}]}"#,
                "nodes[0].version",
            ),
            (
                r#"{"nodes": [{"version": "4.1.0", "payload": "p"}], "edges": [[0, 1, 2]]}"#,
                "edges[0]",
            ),
            (
                r#"{"nodes": [{"version": "4.1.0", "payload": "p"}], "edges": [[0, 1]]}"#,
                "edge 0 [0, 1] names node 1, but the graph has 1 nodes",
            ),
            (
                r#"{"nodes": [{"version": "4.1.0", "payload": "p"}, {"version": "4.1.0", "payload": "q"}]}"#,
                "nodes 0 and 1 both have version 4.1.0",
            ),
            (
                r#"{"nodes": [{"version": "4.1.0", "payload": ""}]}"#,
                "node 0: version 4.1.0 has no payload",
            ),
            (
                r#"{"nodes": [{"version": "4.1.0", "payload": "p"}], "conditionalEdges": [{"edges": [{"from": "4.1.0", "to": "4.3.0"}], "risks": []}]}"#,
                "names version 4.3.0, which no node has",
            ),
            (
                r#"{"nodes": [{"version": "1.0.0", "payload": "a"}, {"version": "2.0.0", "payload": "b"}, {"version": "3.0.0", "payload": "c"}], "edges": [[0, 1], [1, 2], [2, 1]]}"#,
                "cycle: 2.0.0 -> 3.0.0 -> 2.0.0",
            ),
            (
                r#"{"nodes": [{"version": "1.0.0", "payload": "a"}], "edges": [[0, 0]]}"#,
                "cycle: 1.0.0 -> 1.0.0",
            ),
            (
                r#"{"nodes": [{"version": "1.0.0", "payload": "a"}, {"version": "2.0.0", "payload": "b"}], "edges": [[0, 1]], "conditionalEdges": [{"edges": [{"from": "2.0.0", "to": "1.0.0"}]}]}"#,
                "cycle: 1.0.0 -> 2.0.0 -> 1.0.0",
            ),
        ];
        for (text, expected) in table {
            let error = Graph::parse(text.as_bytes(), "graph.json")
                .unwrap_err()
                .to_string();
            assert!(error.starts_with("graph.json"), "{error}");
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn a_graph_serialises_in_the_cincinnati_shape() {
        let graph = Graph::parse(GRAPH.as_bytes(), "test").unwrap();
        let json: serde_json::Value = serde_json::from_slice(&graph.to_json()).unwrap();
        assert_eq!(json["edges"][0], serde_json::json!([0, 1]));
        assert_eq!(json["nodes"][0]["payload"], "r/release@sha256:a0");
        assert_eq!(
            json["conditionalEdges"][0]["risks"][0]["matchingRules"][1]["promql"]["promql"],
            "etcd_slow"
        );
        assert_eq!(Graph::parse(&graph.to_json(), "again").unwrap(), graph);
    }
}
