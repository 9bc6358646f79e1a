//! The upgrade graph as text to look at: Graphviz dot or Mermaid.
//!
//! Edges point from the older entry to the one that may replace it. The head is drawn bold
//! (dot) or with a double border (Mermaid); `replaces` edges are solid, `skips` dashed and
//! skipRange edges dotted and labelled, so a reader tells the three rules apart at a glance.

use std::fmt::Write as _;

use crate::graph::{EdgeKind, Node, UpgradeGraph};

fn label(n: &Node) -> String {
    match &n.version {
        Some(v) => format!("{}\\n{v}", n.name),
        None => format!("{}\\n(no bundle)", n.name),
    }
}

fn quote(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace("\\\\n", "\\n")
}

pub fn to_dot(graph: &UpgradeGraph) -> String {
    let head = graph.head().map(|h| h.name.clone());
    let mut out = String::new();
    let _ = writeln!(
        out,
        "digraph \"{}/{}\" {{",
        quote(&graph.package),
        quote(&graph.channel)
    );
    let _ = writeln!(out, "  rankdir=LR;");
    let _ = writeln!(out, "  node [shape=box];");
    let mut nodes: Vec<&Node> = graph.nodes().collect();
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    for n in nodes {
        let style = if head.as_deref() == Some(n.name.as_str()) {
            ", style=\"bold,filled\", fillcolor=\"#d8f0d8\", xlabel=\"head\""
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "  \"{}\" [label=\"{}\"{style}];",
            quote(&n.name),
            quote(&label(n))
        );
    }
    for (from, to, kind) in graph.edges() {
        let style = match kind {
            EdgeKind::Replaces => "style=solid".to_string(),
            EdgeKind::Skips => "style=dashed, label=\"skips\"".to_string(),
            EdgeKind::SkipRange => {
                let range = to
                    .skip_range
                    .as_ref()
                    .map(|r| r.to_string())
                    .unwrap_or_default();
                format!("style=dotted, label=\"skipRange {}\"", quote(&range))
            }
        };
        let _ = writeln!(
            out,
            "  \"{}\" -> \"{}\" [{style}];",
            quote(&from.name),
            quote(&to.name)
        );
    }
    out.push_str("}\n");
    out
}

pub fn to_mermaid(graph: &UpgradeGraph) -> String {
    let head = graph.head().map(|h| h.name.clone());
    let mut nodes: Vec<&Node> = graph.nodes().collect();
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    let id = |name: &str| {
        nodes
            .iter()
            .position(|n| n.name == name)
            .map_or_else(String::new, |i| format!("n{i}"))
    };
    let mut out = String::from("flowchart LR\n");
    for (i, n) in nodes.iter().enumerate() {
        let text = match &n.version {
            Some(v) => format!("{}<br/>{v}", n.name),
            None => format!("{}<br/>(no bundle)", n.name),
        }
        .replace('"', "#quot;");
        if head.as_deref() == Some(n.name.as_str()) {
            let _ = writeln!(out, "  n{i}[[\"{text} (head)\"]]");
        } else {
            let _ = writeln!(out, "  n{i}[\"{text}\"]");
        }
    }
    for (from, to, kind) in graph.edges() {
        let (a, b) = (id(&from.name), id(&to.name));
        let _ = match kind {
            EdgeKind::Replaces => writeln!(out, "  {a} --> {b}"),
            EdgeKind::Skips => writeln!(out, "  {a} -. skips .-> {b}"),
            EdgeKind::SkipRange => writeln!(out, "  {a} == skipRange ==> {b}"),
        };
    }
    out
}
