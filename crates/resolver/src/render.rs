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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::CatalogBuilder;

    fn graph() -> UpgradeGraph {
        let mut b = CatalogBuilder::new();
        b.bundle("p", "1.0.0");
        b.bundle("p", "1.1.0").replaces("1.0.0");
        b.bundle("p", "1.2.0").replaces("1.1.0").skips(&["1.0.0"]);
        b.bundle("p", "1.3.0")
            .replaces("1.2.0")
            .skip_range(">=1.0.0 <1.2.0");
        let catalog = b.build();
        let p = &catalog.packages["p"];
        UpgradeGraph::build(p, &p.channels["stable"])
    }

    #[test]
    fn dot_draws_each_rule_distinctly_and_marks_the_head() {
        let dot = to_dot(&graph());
        assert!(dot.starts_with("digraph \"p/stable\" {"));
        assert!(dot.contains("\"p.v1.3.0\" [label=\"p.v1.3.0\\n1.3.0\", style=\"bold,filled\""));
        assert!(dot.contains("\"p.v1.0.0\" -> \"p.v1.1.0\" [style=solid];"));
        assert!(dot.contains("\"p.v1.0.0\" -> \"p.v1.2.0\" [style=dashed, label=\"skips\"];"));
        assert!(dot.contains(
            "\"p.v1.1.0\" -> \"p.v1.3.0\" [style=dotted, label=\"skipRange >=1.0.0 <1.2.0\"];"
        ));
        assert_eq!(dot.matches(" -> ").count(), 6);
    }

    #[test]
    fn mermaid_draws_each_rule_distinctly_and_marks_the_head() {
        let m = to_mermaid(&graph());
        assert!(m.starts_with("flowchart LR\n"));
        assert!(m.contains("  n3[[\"p.v1.3.0<br/>1.3.0 (head)\"]]"));
        assert!(m.contains("  n0 --> n1"));
        assert!(m.contains("  n0 -. skips .-> n2"));
        assert!(m.contains("  n1 == skipRange ==> n3"));
    }
}
