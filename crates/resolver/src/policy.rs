//! Successor policies and upgrade paths over an [`UpgradeGraph`].
//!
//! - `olm`: OLM v0's rule: one step at a time toward the channel head, taking the successor
//!   closest to the head (so a skipRange on a newer entry jumps over the versions it covers).
//! - `semver`: OLM v1's rule: from the current entry, the highest-versioned successor.
//! - `any`: no edges needed; any version in the channel, downgrades included (one direct hop).
//!
//! With an explicit target (a version or range) `olm` and `semver` take the shortest path along
//! edges to the highest matching entry reachable; `any` jumps straight to it.

use std::{fmt, str::FromStr};

use semver::Version;
use serde::{Deserialize, Serialize};
use windlass_catalog::{
    Channel,
    range::{VersionRange, precedence},
};

use crate::graph::{EdgeKind, Node, UpgradeGraph, compare_nodes};

/// How the next version is chosen (one vocabulary for the CLI and the Subscription field).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    #[default]
    Olm,
    Semver,
    Any,
}

impl FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "olm" => Ok(Policy::Olm),
            "semver" => Ok(Policy::Semver),
            "any" => Ok(Policy::Any),
            other => Err(format!(
                "unknown upgrade policy {other:?}: expected olm, semver or any"
            )),
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Policy::Olm => "olm",
            Policy::Semver => "semver",
            Policy::Any => "any",
        })
    }
}

/// How a hop is justified: a channel edge, or a direct move the `any` policy allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum HopKind {
    Edge(EdgeKind),
    Direct,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hop {
    pub from: String,
    pub from_version: Version,
    pub to: String,
    pub to_version: Option<Version>,
    pub via: HopKind,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UpgradePath {
    pub package: String,
    pub channel: String,
    pub policy: Policy,
    pub hops: Vec<Hop>,
}

/// Where the path starts: a channel entry, or a version the channel may not list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Start {
    /// The CSV name when known (it lets `replaces`/`skips` name an entry the channel lacks).
    pub name: Option<String>,
    pub version: Version,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Version(Version),
    Range(VersionRange),
}

impl Target {
    fn matches(&self, v: &Version) -> bool {
        match self {
            Target::Version(t) => precedence(t, v).is_eq(),
            Target::Range(r) => r.matches(v),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Version(v) => write!(f, "{v}"),
            Target::Range(r) => write!(f, "{r}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error(
        "package {package} channel {channel} has no single head; fix the channel first: {problems}"
    )]
    NoHead {
        package: String,
        channel: String,
        problems: String,
    },
    #[error(
        "package {package} channel {channel}: no entry matches target {target} (the channel has {available})"
    )]
    NoSuchTarget {
        package: String,
        channel: String,
        target: String,
        available: String,
    },
    #[error(
        "package {package} channel {channel}: {target} cannot be reached from {from} along the channel's edges{reachable}; the `any` policy allows a direct move"
    )]
    Unreachable {
        package: String,
        channel: String,
        from: String,
        target: String,
        reachable: String,
    },
    #[error(
        "package {package} channel {channel}: nothing in the channel upgrades from {from} (no entry replaces or skips it, and no skipRange covers it)"
    )]
    Stranded {
        package: String,
        channel: String,
        from: String,
    },
}

/// The hops from `start` to `target` (or to the end the policy leads to when `target` is
/// `None`), each a real edge unless the policy is `any`.
pub fn upgrade_path(
    graph: &UpgradeGraph,
    channel: &Channel,
    start: &Start,
    target: Option<&Target>,
    policy: Policy,
) -> Result<UpgradePath, PathError> {
    let mut path = UpgradePath {
        package: graph.package.clone(),
        channel: graph.channel.clone(),
        policy,
        hops: Vec::new(),
    };
    let start_node = locate(graph, start);
    let from_label = start_node.map_or_else(|| start_label(start), |n| n.name.clone());
    let goal = match target {
        Some(t) => Some(pick_goal(graph, t)?),
        None => None,
    };
    if policy == Policy::Any {
        let goal = match goal {
            Some(g) => g,
            None => graph.head().ok_or_else(|| no_head(graph))?,
        };
        if start_node.is_none_or(|s| s.name != goal.name) {
            path.hops.push(Hop {
                from: from_label,
                from_version: start.version.clone(),
                to: goal.name.clone(),
                to_version: goal.version.clone(),
                via: HopKind::Direct,
            });
        }
        return Ok(path);
    }
    let firsts: Vec<(&Node, EdgeKind)> = match start_node {
        Some(n) => graph.successors(&n.name),
        None => graph.successors_of_external(start.name.as_deref(), &start.version, channel),
    };
    if let Some(goal) = goal {
        if start_node.is_some_and(|s| s.name == goal.name) {
            return Ok(path);
        }
        let starts: Vec<(&str, EdgeKind)> =
            firsts.iter().map(|(n, k)| (n.name.as_str(), *k)).collect();
        let route = graph.shortest_path(&starts, &goal.name).ok_or_else(|| {
            let reachable = graph.reachable_from(starts.iter().map(|s| s.0));
            let mut names: Vec<&str> = firsts.iter().map(|(n, _)| n.name.as_str()).collect();
            names.extend(reachable.iter().map(|n| n.name.as_str()));
            names.sort_unstable();
            names.dedup();
            PathError::Unreachable {
                package: graph.package.clone(),
                channel: graph.channel.clone(),
                from: from_label.clone(),
                target: goal.name.clone(),
                reachable: if names.is_empty() {
                    String::new()
                } else {
                    format!(" (reachable: {})", names.join(", "))
                },
            }
        })?;
        push_route(graph, &mut path, start, &from_label, route);
        return Ok(path);
    }
    // No target: follow the policy's successor until it stops.
    if policy == Policy::Olm && graph.head().is_none() {
        return Err(no_head(graph));
    }
    let mut current_name = from_label.clone();
    let mut current_version = start.version.clone();
    let mut next = pick_successor(graph, &current_version, firsts, policy);
    if next.is_none()
        && start_node.is_none_or(|s| graph.head().is_none_or(|h| h.name != s.name))
        && policy == Policy::Olm
    {
        return Err(PathError::Stranded {
            package: graph.package.clone(),
            channel: graph.channel.clone(),
            from: from_label,
        });
    }
    // Each step strictly lowers the distance to the head (olm) or raises the version (semver),
    // so the walk ends; the bound is a guard against a graph that breaks that reasoning.
    for _ in 0..=graph.nodes().count() {
        let Some((node, kind)) = next else { break };
        path.hops.push(Hop {
            from: current_name.clone(),
            from_version: current_version.clone(),
            to: node.name.clone(),
            to_version: node.version.clone(),
            via: HopKind::Edge(kind),
        });
        current_name = node.name.clone();
        match &node.version {
            Some(v) => current_version = v.clone(),
            None => break,
        }
        next = pick_successor(
            graph,
            &current_version,
            graph.successors(&node.name),
            policy,
        );
    }
    Ok(path)
}

/// The successor a policy picks among `candidates` (the out-edges of the current entry).
pub fn pick_successor<'g>(
    graph: &'g UpgradeGraph,
    current: &Version,
    candidates: Vec<(&'g Node, EdgeKind)>,
    policy: Policy,
) -> Option<(&'g Node, EdgeKind)> {
    match policy {
        Policy::Olm => candidates
            .into_iter()
            .filter(|(n, _)| graph.distance_to_head(&n.name).is_some())
            .min_by(|a, b| {
                let da = graph.distance_to_head(&a.0.name);
                let db = graph.distance_to_head(&b.0.name);
                da.cmp(&db).then_with(|| compare_nodes(b.0, a.0))
            }),
        Policy::Semver | Policy::Any => candidates
            .into_iter()
            .filter(|(n, _)| {
                n.version
                    .as_ref()
                    .is_some_and(|v| precedence(v, current).is_gt())
            })
            .max_by(|a, b| compare_nodes(a.0, b.0)),
    }
}

fn locate<'g>(graph: &'g UpgradeGraph, start: &Start) -> Option<&'g Node> {
    if let Some(n) = start.name.as_deref().and_then(|n| graph.node(n)) {
        return Some(n);
    }
    graph
        .nodes()
        .filter(|n| {
            n.version
                .as_ref()
                .is_some_and(|v| precedence(v, &start.version).is_eq())
        })
        .min_by(|a, b| a.name.cmp(&b.name))
}

fn pick_goal<'g>(graph: &'g UpgradeGraph, target: &Target) -> Result<&'g Node, PathError> {
    graph
        .nodes()
        .filter(|n| n.version.as_ref().is_some_and(|v| target.matches(v)))
        .max_by(|a, b| compare_nodes(a, b))
        .ok_or_else(|| {
            let mut versions: Vec<&Node> = graph.nodes().collect();
            versions.sort_by(|a, b| compare_nodes(a, b));
            PathError::NoSuchTarget {
                package: graph.package.clone(),
                channel: graph.channel.clone(),
                target: target.to_string(),
                available: versions
                    .iter()
                    .map(|n| node_label(n))
                    .collect::<Vec<_>>()
                    .join(", "),
            }
        })
}

fn push_route(
    graph: &UpgradeGraph,
    path: &mut UpgradePath,
    start: &Start,
    from_label: &str,
    route: Vec<(String, EdgeKind)>,
) {
    let mut from = from_label.to_string();
    let mut from_version = start.version.clone();
    for (name, kind) in route {
        let to_version = graph.node(&name).and_then(|n| n.version.clone());
        path.hops.push(Hop {
            from: std::mem::replace(&mut from, name.clone()),
            from_version: from_version.clone(),
            to: name,
            to_version: to_version.clone(),
            via: HopKind::Edge(kind),
        });
        if let Some(v) = to_version {
            from_version = v;
        }
    }
}

fn no_head(graph: &UpgradeGraph) -> PathError {
    PathError::NoHead {
        package: graph.package.clone(),
        channel: graph.channel.clone(),
        problems: graph
            .problems()
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join("; "),
    }
}

fn start_label(start: &Start) -> String {
    start
        .name
        .clone()
        .unwrap_or_else(|| start.version.to_string())
}

fn node_label(n: &Node) -> String {
    match &n.version {
        Some(v) => format!("{} ({v})", n.name),
        None => n.name.clone(),
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
