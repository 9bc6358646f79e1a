//! The upgrade graph of one channel: which entry may follow which, and why.
//!
//! Edges point from the older entry to the one that may replace it: `E replaces R` gives
//! `R -> E`, `E skips S` gives `S -> E`, and `E`'s `olm.skipRange` gives `X -> E` for every other
//! entry `X` whose version lies in the range. When two rules give the same pair, the edge keeps the
//! strongest kind (replaces, then skips, then skipRange) so drawings and paths name the rule the
//! catalog author most likely meant.

use std::collections::{BTreeMap, VecDeque};

use petgraph::{
    Direction,
    graph::{DiGraph, NodeIndex},
    visit::EdgeRef,
};
use semver::Version;
use serde::Serialize;
use windlass_catalog::{
    Channel, Package,
    range::{VersionRange, precedence},
    validate::{ChannelProblem, Severity, channel_heads, validate_channel},
};

/// Why one entry may follow another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum EdgeKind {
    Replaces,
    Skips,
    SkipRange,
}

impl EdgeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::Replaces => "replaces",
            EdgeKind::Skips => "skips",
            EdgeKind::SkipRange => "skipRange",
        }
    }
}

/// One channel entry as a graph node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub name: String,
    /// The bundle's version; `None` when the package has no bundle of that name.
    pub version: Option<Version>,
    pub skip_range: Option<VersionRange>,
}

/// The upgrade graph of one package channel.
#[derive(Clone, Debug)]
pub struct UpgradeGraph {
    pub package: String,
    pub channel: String,
    graph: DiGraph<Node, EdgeKind>,
    by_name: BTreeMap<String, NodeIndex>,
    head: Option<NodeIndex>,
    problems: Vec<ChannelProblem>,
    /// Hops from each node to the head along edges (`None`: the head is not reachable).
    to_head: Vec<Option<u32>>,
}

impl UpgradeGraph {
    /// Build the graph of `channel` (a channel of `package`). Never fails: channel problems are
    /// kept in [`UpgradeGraph::problems`] and a channel without a single head has no head.
    pub fn build(package: &Package, channel: &Channel) -> UpgradeGraph {
        let mut graph = DiGraph::with_capacity(channel.entries.len(), channel.entries.len() * 2);
        let mut by_name = BTreeMap::new();
        for e in &channel.entries {
            if by_name.contains_key(e.name.as_str()) {
                continue;
            }
            let node = Node {
                name: e.name.to_string(),
                version: package
                    .bundles
                    .get(e.name.as_str())
                    .map(|b| b.version.clone()),
                skip_range: e
                    .skip_range
                    .as_deref()
                    .and_then(|r| VersionRange::parse(r).ok()),
            };
            by_name.insert(e.name.to_string(), graph.add_node(node));
        }
        let add = |graph: &mut DiGraph<Node, EdgeKind>, from: NodeIndex, to: NodeIndex, kind| {
            if from == to {
                return;
            }
            match graph.find_edge(from, to) {
                Some(edge) if graph[edge] <= kind => {}
                Some(edge) => graph[edge] = kind,
                None => {
                    graph.add_edge(from, to, kind);
                }
            }
        };
        for e in &channel.entries {
            let to = by_name[e.name.as_str()];
            if let Some(from) = e.replaces.as_ref().and_then(|r| by_name.get(r.as_str())) {
                add(&mut graph, *from, to, EdgeKind::Replaces);
            }
            for from in e.skips.iter().filter_map(|s| by_name.get(s.as_str())) {
                add(&mut graph, *from, to, EdgeKind::Skips);
            }
        }
        // skipRange edges: every other entry whose version the range covers.
        let ranged: Vec<(NodeIndex, VersionRange)> = graph
            .node_indices()
            .filter_map(|n| graph[n].skip_range.clone().map(|r| (n, r)))
            .collect();
        for (to, range) in ranged {
            let covered: Vec<NodeIndex> = graph
                .node_indices()
                .filter(|n| graph[*n].version.as_ref().is_some_and(|v| range.matches(v)))
                .collect();
            for from in covered {
                add(&mut graph, from, to, EdgeKind::SkipRange);
            }
        }
        let heads = channel_heads(channel);
        let head = match heads.as_slice() {
            [one] => by_name.get(*one).copied(),
            _ => None,
        };
        let mut g = UpgradeGraph {
            package: package.name.clone(),
            channel: channel.name.clone(),
            to_head: vec![None; graph.node_count()],
            graph,
            by_name,
            head,
            problems: validate_channel(package, channel),
        };
        g.to_head = g.distances_to_head();
        g
    }

    fn distances_to_head(&self) -> Vec<Option<u32>> {
        let mut dist = vec![None; self.graph.node_count()];
        let Some(head) = self.head else { return dist };
        dist[head.index()] = Some(0);
        let mut queue = VecDeque::from([head]);
        while let Some(n) = queue.pop_front() {
            let d = dist[n.index()].unwrap_or(0);
            for pred in self.graph.neighbors_directed(n, Direction::Incoming) {
                if dist[pred.index()].is_none() {
                    dist[pred.index()] = Some(d + 1);
                    queue.push_back(pred);
                }
            }
        }
        dist
    }

    /// The channel head, when there is exactly one.
    pub fn head(&self) -> Option<&Node> {
        self.head.map(|h| &self.graph[h])
    }

    /// Validation findings for this channel (same as `validate_channel`).
    pub fn problems(&self) -> &[ChannelProblem] {
        &self.problems
    }

    /// A channel is valid when validation found no errors (warnings are fine).
    pub fn is_valid(&self) -> bool {
        self.problems.iter().all(|p| p.severity() < Severity::Error)
    }

    pub fn node(&self, name: &str) -> Option<&Node> {
        self.by_name.get(name).map(|n| &self.graph[*n])
    }

    /// Entries in catalog order.
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.graph.node_indices().map(|n| &self.graph[n])
    }

    /// Every edge as `(from, to, kind)`, in a stable order.
    pub fn edges(&self) -> Vec<(&Node, &Node, EdgeKind)> {
        let mut out: Vec<_> = self
            .graph
            .edge_references()
            .map(|e| {
                (
                    &self.graph[e.source()],
                    &self.graph[e.target()],
                    *e.weight(),
                )
            })
            .collect();
        out.sort_by(|a, b| (&a.0.name, &a.1.name).cmp(&(&b.0.name, &b.1.name)));
        out
    }

    /// Entries that may directly follow `name`, with the edge kind.
    pub fn successors(&self, name: &str) -> Vec<(&Node, EdgeKind)> {
        let Some(&n) = self.by_name.get(name) else {
            return Vec::new();
        };
        self.graph
            .edges(n)
            .map(|e| (&self.graph[e.target()], *e.weight()))
            .collect()
    }

    /// Entries that may follow a version the channel does not list (an install older than the
    /// channel's tail, or from another channel): those whose `replaces`/`skips` name `name`, or
    /// whose skipRange covers `version`.
    pub fn successors_of_external(
        &self,
        name: Option<&str>,
        version: &Version,
        channel: &Channel,
    ) -> Vec<(&Node, EdgeKind)> {
        let mut out = Vec::new();
        for e in &channel.entries {
            let Some(&n) = self.by_name.get(e.name.as_str()) else {
                continue;
            };
            let node = &self.graph[n];
            let kind = if name.is_some() && e.replaces.as_deref() == name {
                Some(EdgeKind::Replaces)
            } else if name.is_some_and(|nm| e.skips.iter().any(|s| s == nm)) {
                Some(EdgeKind::Skips)
            } else if node.skip_range.as_ref().is_some_and(|r| r.matches(version)) {
                Some(EdgeKind::SkipRange)
            } else {
                None
            };
            if let Some(kind) = kind
                && !out
                    .iter()
                    .any(|(o, _): &(&Node, EdgeKind)| o.name == node.name)
            {
                out.push((node, kind));
            }
        }
        out
    }

    /// Hops from `name` to the head along edges (0 for the head itself).
    pub fn distance_to_head(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).and_then(|n| self.to_head[n.index()])
    }

    /// Every entry reachable from `start` nodes along edges (the starts excluded unless they are
    /// reached again), sorted by name.
    pub fn reachable_from<'a>(&self, starts: impl IntoIterator<Item = &'a str>) -> Vec<&Node> {
        let mut seen = vec![false; self.graph.node_count()];
        let mut queue: VecDeque<NodeIndex> = VecDeque::new();
        for s in starts {
            if let Some(&n) = self.by_name.get(s) {
                for next in self.graph.neighbors(n) {
                    if !seen[next.index()] {
                        seen[next.index()] = true;
                        queue.push_back(next);
                    }
                }
            }
        }
        while let Some(n) = queue.pop_front() {
            for next in self.graph.neighbors(n) {
                if !seen[next.index()] {
                    seen[next.index()] = true;
                    queue.push_back(next);
                }
            }
        }
        let mut out: Vec<&Node> = self
            .graph
            .node_indices()
            .filter(|n| seen[n.index()])
            .map(|n| &self.graph[n])
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// The shortest path (fewest hops) along edges from any of `starts` to `goal`; among equally
    /// short paths the one through higher versions wins, so the answer is deterministic.
    pub fn shortest_path(
        &self,
        starts: &[(&str, EdgeKind)],
        goal: &str,
    ) -> Option<Vec<(String, EdgeKind)>> {
        let goal = *self.by_name.get(goal)?;
        let mut prev: Vec<Option<(Option<NodeIndex>, EdgeKind)>> =
            vec![None; self.graph.node_count()];
        let mut queue = VecDeque::new();
        let mut firsts: Vec<(NodeIndex, EdgeKind)> = starts
            .iter()
            .filter_map(|(s, k)| self.by_name.get(*s).map(|n| (*n, *k)))
            .collect();
        firsts.sort_by(|a, b| self.order_high_first(a.0, b.0));
        for (n, kind) in firsts {
            if prev[n.index()].is_none() {
                prev[n.index()] = Some((None, kind));
                queue.push_back(n);
            }
        }
        while let Some(n) = queue.pop_front() {
            if n == goal {
                break;
            }
            let mut next: Vec<(NodeIndex, EdgeKind)> = self
                .graph
                .edges(n)
                .map(|e| (e.target(), *e.weight()))
                .collect();
            next.sort_by(|a, b| self.order_high_first(a.0, b.0));
            for (m, kind) in next {
                if prev[m.index()].is_none() {
                    prev[m.index()] = Some((Some(n), kind));
                    queue.push_back(m);
                }
            }
        }
        let mut path = Vec::new();
        let mut cur = goal;
        loop {
            let (p, kind) = prev[cur.index()]?;
            path.push((self.graph[cur].name.clone(), kind));
            match p {
                Some(p) => cur = p,
                None => break,
            }
        }
        path.reverse();
        Some(path)
    }

    fn order_high_first(&self, a: NodeIndex, b: NodeIndex) -> std::cmp::Ordering {
        compare_nodes(&self.graph[b], &self.graph[a])
    }
}

/// Order by version (unknown versions lowest), then by name.
pub fn compare_nodes(a: &Node, b: &Node) -> std::cmp::Ordering {
    match (&a.version, &b.version) {
        (Some(x), Some(y)) => precedence(x, y),
        (Some(_), None) => std::cmp::Ordering::Greater,
        (None, Some(_)) => std::cmp::Ordering::Less,
        (None, None) => std::cmp::Ordering::Equal,
    }
    .then_with(|| a.name.cmp(&b.name))
}

#[cfg(test)]
#[path = "graph_tests.rs"]
mod tests;
