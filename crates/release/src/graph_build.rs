//! Building an update graph from published payloads, as OpenShift's graph builder does, and the
//! per-request filtering an update service applies (`channel`, `arch`).
//!
//! Each payload's release-metadata `previous` versions get an edge to it, and it gets an edge to
//! each of its `next` versions; a version no payload has is dropped with its edges. A payload's
//! build metadata carries over to the versions it names. Channels come from the payload's
//! `io.openshift.upgrades.graph.release.channels` metadata.

use std::collections::{BTreeMap, BTreeSet};

use semver::Version;

use crate::annotations::ARCH_METADATA;
use crate::error::GraphError;
use crate::graph::{Graph, Node};
use crate::metadata::ReleaseMetadata;

/// The architecture an update service assumes when a request names none.
pub const DEFAULT_ARCH: &str = "amd64";

/// A payload image as the graph builder sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublishedPayload {
    pub metadata: ReleaseMetadata,
    /// The image by digest (`registry/repo@sha256:...`).
    pub payload: String,
    /// The image config's architecture, when known.
    pub architecture: Option<String>,
    /// Where it was found (a tag), for messages.
    pub found_as: String,
}

/// The graph of `payloads`: one node per version (the same image under two tags counts once),
/// checked like any graph.
pub fn build_graph(payloads: &[PublishedPayload], source: &str) -> Result<Graph, GraphError> {
    let mut by_version: BTreeMap<&Version, &PublishedPayload> = BTreeMap::new();
    for p in payloads {
        if let Some(first) = by_version.insert(&p.metadata.version, p)
            && first.payload != p.payload
        {
            return Err(GraphError::DuplicatePayload {
                source_name: source.into(),
                version: p.metadata.version.to_string(),
                first: first.found_as.clone(),
                second: p.found_as.clone(),
            });
        }
    }
    let nodes: Vec<Node> = by_version
        .values()
        .map(|p| {
            let mut metadata = p.metadata.metadata.clone();
            if let Some(arch) = &p.architecture {
                metadata.insert(ARCH_METADATA.into(), arch.clone());
            }
            Node {
                version: p.metadata.version.clone(),
                payload: p.payload.clone(),
                metadata,
            }
        })
        .collect();
    let index: BTreeMap<&Version, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (&n.version, i))
        .collect();
    let with_build = |named: &Version, of: &Version| {
        let mut v = named.clone();
        v.build = of.build.clone();
        v
    };
    let mut edges = BTreeSet::new();
    for p in by_version.values() {
        let this = index[&p.metadata.version];
        for previous in &p.metadata.previous {
            if let Some(&from) = index.get(&with_build(previous, &p.metadata.version)) {
                edges.insert((from, this));
            }
        }
        for next in &p.metadata.next {
            if let Some(&to) = index.get(&with_build(next, &p.metadata.version)) {
                edges.insert((this, to));
            }
        }
    }
    let graph = Graph {
        nodes,
        edges: edges.into_iter().collect(),
        conditional_edges: Vec::new(),
    };
    graph.check(source)?;
    Ok(graph)
}

/// Whether `channel` has the shape of a channel name.
pub fn is_channel_name(channel: &str) -> bool {
    !channel.is_empty()
        && channel
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
}

impl Graph {
    /// The part of the graph an update service serves for `channel` and `arch`: nodes in the
    /// channel (and of that architecture, when their metadata says), the edges between them.
    pub fn for_channel(&self, channel: &str, arch: Option<&str>) -> Result<Graph, GraphError> {
        if !is_channel_name(channel) {
            return Err(GraphError::BadChannel {
                channel: channel.into(),
            });
        }
        let arch = arch.filter(|a| !a.is_empty()).unwrap_or(DEFAULT_ARCH);
        let keep: Vec<bool> = self
            .nodes
            .iter()
            .map(|n| {
                n.channels().iter().any(|c| c == channel)
                    && n.metadata.get(ARCH_METADATA).is_none_or(|a| a == arch)
            })
            .collect();
        let mut new_index = vec![None; self.nodes.len()];
        let mut nodes = Vec::new();
        for (i, node) in self.nodes.iter().enumerate() {
            if keep[i] {
                new_index[i] = Some(nodes.len());
                nodes.push(node.clone());
            }
        }
        let edges = self
            .edges
            .iter()
            .filter_map(|&(a, b)| Some((new_index[a]?, new_index[b]?)))
            .collect();
        let kept: BTreeSet<String> = nodes.iter().map(|n| n.version.to_string()).collect();
        let conditional_edges = self
            .conditional_edges
            .iter()
            .map(|group| {
                let mut group = group.clone();
                group
                    .edges
                    .retain(|e| kept.contains(&e.from) && kept.contains(&e.to));
                group
            })
            .filter(|group| !group.edges.is_empty())
            .collect();
        Ok(Graph {
            nodes,
            edges,
            conditional_edges,
        })
    }

    /// Every channel some node is in.
    pub fn channels(&self) -> BTreeSet<String> {
        self.nodes.iter().flat_map(Node::channels).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotations::CHANNELS_METADATA;

    fn published(
        version: &str,
        previous: &[&str],
        next: &[&str],
        channels: &str,
    ) -> PublishedPayload {
        let mut metadata = ReleaseMetadata::new(Version::parse(version).unwrap());
        metadata.previous = previous
            .iter()
            .map(|v| Version::parse(v).unwrap())
            .collect();
        metadata.next = next.iter().map(|v| Version::parse(v).unwrap()).collect();
        metadata
            .metadata
            .insert(CHANNELS_METADATA.into(), channels.into());
        PublishedPayload {
            payload: format!("r/release@sha256:{version}"),
            metadata,
            architecture: Some("amd64".into()),
            found_as: format!("r/release:{version}"),
        }
    }

    fn edges(graph: &Graph) -> Vec<(String, String)> {
        graph
            .edges
            .iter()
            .map(|&(a, b)| {
                (
                    graph.nodes[a].version.to_string(),
                    graph.nodes[b].version.to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn previous_and_next_become_edges_and_unknown_versions_are_dropped() {
        let graph = build_graph(
            &[
                published("4.2.0", &["4.1.0", "4.1.1", "4.0.9"], &[], "stable-4.2"),
                published("4.1.0", &[], &["4.1.1"], "stable-4.1,stable-4.2"),
                published("4.1.1", &["4.1.0"], &[], "stable-4.1,stable-4.2"),
            ],
            "r/release",
        )
        .unwrap();
        assert_eq!(
            graph
                .nodes
                .iter()
                .map(|n| n.version.to_string())
                .collect::<Vec<_>>(),
            vec!["4.1.0", "4.1.1", "4.2.0"]
        );
        assert_eq!(
            edges(&graph),
            vec![
                ("4.1.0".into(), "4.1.1".into()),
                ("4.1.0".into(), "4.2.0".into()),
                ("4.1.1".into(), "4.2.0".into())
            ]
        );
        assert_eq!(graph.nodes[0].metadata[ARCH_METADATA], "amd64");
        let stable_41 = graph.for_channel("stable-4.1", None).unwrap();
        assert_eq!(edges(&stable_41), vec![("4.1.0".into(), "4.1.1".into())]);
        assert_eq!(
            graph
                .for_channel("stable-4.2", Some("amd64"))
                .unwrap()
                .edges
                .len(),
            3
        );
        assert!(
            graph
                .for_channel("stable-4.2", Some("arm64"))
                .unwrap()
                .nodes
                .is_empty()
        );
        assert!(graph.for_channel("nope", None).unwrap().nodes.is_empty());
        assert!(matches!(
            graph.for_channel("Stable 4.2", None),
            Err(GraphError::BadChannel { .. })
        ));
        assert_eq!(
            graph.channels().into_iter().collect::<Vec<_>>(),
            vec!["stable-4.1", "stable-4.2"]
        );
    }

    #[test]
    fn one_image_under_two_tags_is_one_node_but_two_images_of_one_version_are_refused() {
        let a = published("4.1.0", &[], &[], "c");
        let mut same = a.clone();
        same.found_as = "r/release:latest".into();
        assert_eq!(build_graph(&[a.clone(), same], "r").unwrap().nodes.len(), 1);
        let mut other = a.clone();
        other.payload = "r/release@sha256:other".into();
        other.found_as = "r/release:4.1.0-rebuilt".into();
        let error = build_graph(&[a, other], "r").unwrap_err().to_string();
        assert_eq!(
            error,
            "r: r/release:4.1.0 and r/release:4.1.0-rebuilt both are version 4.1.0"
        );
    }

    #[test]
    fn cycles_from_metadata_are_refused() {
        let error = build_graph(
            &[
                published("1.0.0", &["2.0.0"], &[], "c"),
                published("2.0.0", &["1.0.0"], &[], "c"),
            ],
            "r",
        )
        .unwrap_err();
        assert!(
            matches!(&error, GraphError::Cycle { path, .. } if path.len() == 3),
            "{error}"
        );
    }

    #[test]
    fn build_metadata_carries_over_to_named_versions() {
        let graph = build_graph(
            &[
                published("4.1.0+amd64", &[], &[], "c"),
                published("4.1.1+amd64", &["4.1.0"], &[], "c"),
            ],
            "r",
        )
        .unwrap();
        assert_eq!(graph.edges, vec![(0, 1)]);
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// Whatever previous/next lists say, the built graph is acyclic or refused with a
            /// cycle; when every edge points to a higher version it is always built.
            #[test]
            fn built_graphs_are_acyclic(links in proptest::collection::vec((0u64..8, 0u64..8), 0..20)) {
                let mut payloads: Vec<PublishedPayload> =
                    (0..8).map(|i| published(&format!("1.{i}.0"), &[], &[], "c")).collect();
                for (a, b) in &links {
                    if a != b {
                        payloads[*b as usize].metadata.previous.push(Version::new(1, *a, 0));
                    }
                }
                match build_graph(&payloads, "r") {
                    Ok(graph) => {
                        // Acyclic: repeatedly removing nodes without incoming edges empties it.
                        let mut alive: BTreeSet<usize> = (0..graph.nodes.len()).collect();
                        loop {
                            let sources: Vec<usize> = alive.iter().copied().filter(|n| {
                                !graph.edges.iter().any(|(a, b)| b == n && alive.contains(a))
                            }).collect();
                            if sources.is_empty() { break; }
                            for s in sources { alive.remove(&s); }
                        }
                        prop_assert!(alive.is_empty());
                    }
                    Err(GraphError::Cycle { path, .. }) => {
                        prop_assert!(path.len() >= 3);
                        prop_assert_eq!(path.first(), path.last());
                    }
                    Err(other) => prop_assert!(false, "unexpected {}", other),
                }
                let upward: Vec<(u64, u64)> = links.iter().map(|(a, b)| ((*a).min(*b), (*a).max(*b))).filter(|(a, b)| a != b).collect();
                let mut payloads: Vec<PublishedPayload> =
                    (0..8).map(|i| published(&format!("1.{i}.0"), &[], &[], "c")).collect();
                for (a, b) in &upward {
                    payloads[*b as usize].metadata.previous.push(Version::new(1, *a, 0));
                }
                prop_assert!(build_graph(&payloads, "r").is_ok());
            }
        }
    }
}
