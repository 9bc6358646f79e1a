//! An update graph as text to look at: Graphviz dot or Mermaid.
//!
//! Edges point from the running version to the one it may update to. Unconditional edges are
//! solid; conditional edges are dashed and labelled with their risks. The newest version is drawn
//! bold (dot) or with a double border (Mermaid); each node shows its channels.

use std::fmt::Write as _;

use crate::graph::{Graph, Node};

fn quote(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

fn order(graph: &Graph) -> Vec<usize> {
    let mut order: Vec<usize> = (0..graph.nodes.len()).collect();
    order.sort_by(|&a, &b| graph.nodes[a].version.cmp(&graph.nodes[b].version));
    order
}

fn newest(graph: &Graph) -> Option<&Node> {
    graph.nodes.iter().max_by(|a, b| a.version.cmp(&b.version))
}

/// `(from, to, risk names)` of every conditional edge between known versions.
fn conditional(graph: &Graph) -> Vec<(String, String, String)> {
    graph
        .conditional_edges
        .iter()
        .flat_map(|group| {
            let risks = group
                .risks
                .iter()
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            group
                .edges
                .iter()
                .map(move |e| (e.from.clone(), e.to.clone(), risks.clone()))
        })
        .collect()
}

pub fn to_dot(graph: &Graph, title: &str) -> String {
    let newest = newest(graph).map(|n| n.version.clone());
    let mut out = String::new();
    let _ = writeln!(out, "digraph \"{}\" {{", quote(title));
    let _ = writeln!(out, "  rankdir=LR;");
    let _ = writeln!(out, "  node [shape=box];");
    for i in order(graph) {
        let node = &graph.nodes[i];
        let channels = node.channels().join(", ");
        let label = if channels.is_empty() {
            node.version.to_string()
        } else {
            format!("{}\\n{}", node.version, quote(&channels))
        };
        let style = if newest.as_ref() == Some(&node.version) {
            ", style=\"bold,filled\", fillcolor=\"#d8f0d8\""
        } else {
            ""
        };
        let _ = writeln!(out, "  \"{}\" [label=\"{}\"{style}];", node.version, label);
    }
    for &(from, to) in &graph.edges {
        let _ = writeln!(
            out,
            "  \"{}\" -> \"{}\" [style=solid];",
            graph.nodes[from].version, graph.nodes[to].version
        );
    }
    for (from, to, risks) in conditional(graph) {
        let _ = writeln!(
            out,
            "  \"{}\" -> \"{}\" [style=dashed, label=\"{}\"];",
            quote(&from),
            quote(&to),
            quote(&format!("risk: {risks}"))
        );
    }
    out.push_str("}\n");
    out
}

pub fn to_mermaid(graph: &Graph) -> String {
    let newest = newest(graph).map(|n| n.version.clone());
    let order = order(graph);
    let id = |version: &str| {
        order
            .iter()
            .position(|&i| graph.nodes[i].version.to_string() == version)
            .map_or_else(String::new, |p| format!("n{p}"))
    };
    let mut out = String::from("flowchart LR\n");
    for (position, &i) in order.iter().enumerate() {
        let node = &graph.nodes[i];
        let channels = node.channels().join(", ");
        let text = if channels.is_empty() {
            node.version.to_string()
        } else {
            format!("{}<br/>{channels}", node.version)
        }
        .replace('"', "#quot;");
        if newest.as_ref() == Some(&node.version) {
            let _ = writeln!(out, "  n{position}[[\"{text}\"]]");
        } else {
            let _ = writeln!(out, "  n{position}[\"{text}\"]");
        }
    }
    for &(from, to) in &graph.edges {
        let _ = writeln!(
            out,
            "  {} --> {}",
            id(&graph.nodes[from].version.to_string()),
            id(&graph.nodes[to].version.to_string())
        );
    }
    for (from, to, risks) in conditional(graph) {
        let _ = writeln!(
            out,
            "  {} -. \"risk: {}\" .-> {}",
            id(&from),
            risks.replace('"', "#quot;"),
            id(&to)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph() -> Graph {
        Graph::parse(
            br#"{"nodes": [
                {"version": "4.2.0", "payload": "r@sha256:c", "metadata": {"io.openshift.upgrades.graph.release.channels": "stable-4.2"}},
                {"version": "4.1.0", "payload": "r@sha256:a", "metadata": {"io.openshift.upgrades.graph.release.channels": "stable-4.1,stable-4.2"}},
                {"version": "4.1.1", "payload": "r@sha256:b"}],
              "edges": [[1, 2], [2, 0]],
              "conditionalEdges": [{"edges": [{"from": "4.1.0", "to": "4.2.0"}],
                "risks": [{"name": "SlowEtcd", "matchingRules": [{"type": "Always"}]}]}]}"#,
            "t",
        )
        .unwrap()
    }

    #[test]
    fn dot_draws_edges_by_kind_and_marks_the_newest() {
        let dot = to_dot(&graph(), "r/release stable-4.2");
        assert!(dot.starts_with("digraph \"r/release stable-4.2\" {\n"));
        let nodes: Vec<&str> = dot.lines().filter(|l| l.contains("[label=")).collect();
        assert_eq!(
            nodes,
            vec![
                "  \"4.1.0\" [label=\"4.1.0\\nstable-4.1, stable-4.2\"];",
                "  \"4.1.1\" [label=\"4.1.1\"];",
                "  \"4.2.0\" [label=\"4.2.0\\nstable-4.2\", style=\"bold,filled\", fillcolor=\"#d8f0d8\"];",
            ]
        );
        assert!(dot.contains("  \"4.1.0\" -> \"4.1.1\" [style=solid];"));
        assert!(dot.contains("  \"4.1.1\" -> \"4.2.0\" [style=solid];"));
        assert!(dot.contains("  \"4.1.0\" -> \"4.2.0\" [style=dashed, label=\"risk: SlowEtcd\"];"));
    }

    #[test]
    fn mermaid_draws_the_same_graph() {
        let m = to_mermaid(&graph());
        assert_eq!(
            m,
            "flowchart LR\n  n0[\"4.1.0<br/>stable-4.1, stable-4.2\"]\n  n1[\"4.1.1\"]\n  n2[[\"4.2.0<br/>stable-4.2\"]]\n  n0 --> n1\n  n1 --> n2\n  n0 -. \"risk: SlowEtcd\" .-> n2\n"
        );
    }
}
