use super::*;
use crate::synthetic::CatalogBuilder;

fn graph_of(b: &CatalogBuilder, package: &str, channel: &str) -> UpgradeGraph {
    let catalog = b.build();
    let p = &catalog.packages[package];
    UpgradeGraph::build(p, &p.channels[channel])
}

fn edge_list(g: &UpgradeGraph) -> Vec<String> {
    g.edges()
        .iter()
        .map(|(a, b, k)| format!("{} -{}-> {}", a.name, k.as_str(), b.name))
        .collect()
}

#[test]
fn each_edge_rule() {
    let mut b = CatalogBuilder::new();
    b.bundle("p", "1.0.0");
    b.bundle("p", "1.1.0").replaces("1.0.0");
    b.bundle("p", "1.2.0").replaces("1.1.0").skips(&["1.0.0"]);
    b.bundle("p", "1.3.0")
        .replaces("1.2.0")
        .skip_range(">=1.0.0 <1.3.0");
    let g = graph_of(&b, "p", "stable");
    assert_eq!(
        edge_list(&g),
        vec![
            "p.v1.0.0 -replaces-> p.v1.1.0",
            "p.v1.0.0 -skips-> p.v1.2.0",
            "p.v1.0.0 -skipRange-> p.v1.3.0",
            "p.v1.1.0 -replaces-> p.v1.2.0",
            "p.v1.1.0 -skipRange-> p.v1.3.0",
            // covered by the range too, but replaces is the stronger rule
            "p.v1.2.0 -replaces-> p.v1.3.0",
        ]
    );
    assert_eq!(g.head().map(|h| h.name.as_str()), Some("p.v1.3.0"));
    assert!(g.is_valid());
    assert_eq!(g.distance_to_head("p.v1.0.0"), Some(1));
    assert_eq!(g.distance_to_head("p.v1.3.0"), Some(0));
}

#[test]
fn the_strongest_rule_names_a_doubled_edge() {
    let mut b = CatalogBuilder::new();
    b.bundle("p", "1.0.0");
    b.bundle("p", "1.1.0")
        .replaces("1.0.0")
        .skips(&["1.0.0"])
        .skip_range("<1.1.0");
    let g = graph_of(&b, "p", "stable");
    assert_eq!(edge_list(&g), vec!["p.v1.0.0 -replaces-> p.v1.1.0"]);
}

#[test]
fn skip_range_needs_a_version_inside_and_ignores_pre_releases() {
    let mut b = CatalogBuilder::new();
    b.bundle("p", "0.9.0");
    b.bundle("p", "1.0.0-rc.1").replaces("0.9.0");
    b.bundle("p", "1.0.0")
        .replaces("1.0.0-rc.1")
        .skip_range(">=0.9.0 <1.0.0");
    let g = graph_of(&b, "p", "stable");
    assert_eq!(
        edge_list(&g),
        vec![
            "p.v0.9.0 -skipRange-> p.v1.0.0",
            "p.v0.9.0 -replaces-> p.v1.0.0-rc.1",
            "p.v1.0.0-rc.1 -replaces-> p.v1.0.0",
        ]
    );
}

#[test]
fn invalid_channels_have_no_head_and_keep_their_problems() {
    let mut b = CatalogBuilder::new();
    b.bundle("p", "1.0.0");
    b.bundle("p", "2.0.0");
    let g = graph_of(&b, "p", "stable");
    assert!(g.head().is_none());
    assert!(!g.is_valid());
    assert!(g.problems()[0].to_string().contains("p.v1.0.0, p.v2.0.0"));
    assert_eq!(g.distance_to_head("p.v1.0.0"), None);
}

#[test]
fn entries_outside_the_channel_find_successors_by_name_or_range() {
    let mut b = CatalogBuilder::new();
    b.bundle("p", "1.2.0").replaces("1.1.0");
    b.bundle("p", "1.3.0")
        .replaces("1.2.0")
        .skip_range(">=1.0.0 <1.3.0");
    let catalog = b.build();
    let p = &catalog.packages["p"];
    let ch = &p.channels["stable"];
    let g = UpgradeGraph::build(p, ch);
    let names = |v: Vec<(&Node, EdgeKind)>| {
        v.iter()
            .map(|(n, k)| format!("{}:{}", n.name, k.as_str()))
            .collect::<Vec<_>>()
    };
    let v110 = semver::Version::new(1, 1, 0);
    assert_eq!(
        names(g.successors_of_external(Some("p.v1.1.0"), &v110, ch)),
        vec!["p.v1.2.0:replaces", "p.v1.3.0:skipRange"]
    );
    assert_eq!(
        names(g.successors_of_external(None, &semver::Version::new(0, 5, 0), ch)),
        Vec::<String>::new()
    );
}
