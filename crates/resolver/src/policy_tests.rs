use super::*;
use crate::synthetic::CatalogBuilder;

/// 1.0 -> 1.1 -> 1.2 -> 1.3 -> 1.4; 1.4 also has skipRange >=1.1.0 <1.4.0; 1.3 skips 1.1.
fn catalog() -> windlass_catalog::Catalog {
    let mut b = CatalogBuilder::new();
    b.bundle("p", "1.0.0");
    b.bundle("p", "1.1.0").replaces("1.0.0");
    b.bundle("p", "1.2.0").replaces("1.1.0");
    b.bundle("p", "1.3.0").replaces("1.2.0").skips(&["1.1.0"]);
    b.bundle("p", "1.4.0")
        .replaces("1.3.0")
        .skip_range(">=1.1.0 <1.4.0");
    b.build()
}

fn path(from: &str, to: Option<&str>, policy: Policy) -> Result<Vec<String>, PathError> {
    let catalog = catalog();
    let p = &catalog.packages["p"];
    let ch = &p.channels["stable"];
    let g = UpgradeGraph::build(p, ch);
    let start = Start {
        name: None,
        version: Version::parse(from).unwrap(),
    };
    let target = to.map(|t| match Version::parse(t) {
        Ok(v) => Target::Version(v),
        Err(_) => Target::Range(VersionRange::parse(t).unwrap()),
    });
    let p = upgrade_path(&g, ch, &start, target.as_ref(), policy)?;
    Ok(p.hops
        .iter()
        .map(|h| {
            let via = match h.via {
                HopKind::Edge(k) => k.as_str(),
                HopKind::Direct => "direct",
            };
            format!(
                "{}->{}:{via}",
                h.from_version,
                h.to_version.as_ref().map_or("?".into(), |v| v.to_string())
            )
        })
        .collect())
}

#[test]
fn table_of_paths() {
    let cases: &[(&str, Option<&str>, Policy, &[&str])] = &[
        // olm: step toward the head, jumping where a skipRange allows
        (
            "1.0.0",
            None,
            Policy::Olm,
            &["1.0.0->1.1.0:replaces", "1.1.0->1.4.0:skipRange"],
        ),
        ("1.2.0", None, Policy::Olm, &["1.2.0->1.4.0:skipRange"]),
        ("1.4.0", None, Policy::Olm, &[]),
        // semver: highest successor each time
        (
            "1.0.0",
            None,
            Policy::Semver,
            &["1.0.0->1.1.0:replaces", "1.1.0->1.4.0:skipRange"],
        ),
        // explicit target: shortest real path to it
        (
            "1.0.0",
            Some("1.3.0"),
            Policy::Olm,
            &["1.0.0->1.1.0:replaces", "1.1.0->1.3.0:skips"],
        ),
        (
            "1.0.0",
            Some("1.2.0"),
            Policy::Semver,
            &["1.0.0->1.1.0:replaces", "1.1.0->1.2.0:replaces"],
        ),
        (
            "1.0.0",
            Some("<1.4.0"),
            Policy::Olm,
            &["1.0.0->1.1.0:replaces", "1.1.0->1.3.0:skips"],
        ),
        // any: one direct move, downgrades included
        (
            "1.3.0",
            Some("1.0.0"),
            Policy::Any,
            &["1.3.0->1.0.0:direct"],
        ),
        ("1.0.0", None, Policy::Any, &["1.0.0->1.4.0:direct"]),
        // a version the channel does not list: skipRange coverage finds the way in
        ("1.1.5", None, Policy::Olm, &["1.1.5->1.4.0:skipRange"]),
    ];
    for (from, to, policy, want) in cases {
        let got =
            path(from, *to, *policy).unwrap_or_else(|e| panic!("{from} {to:?} {policy}: {e}"));
        assert_eq!(got, *want, "{from} -> {to:?} ({policy})");
    }
}

#[test]
fn downgrades_and_unknown_targets_are_refused_along_edges() {
    let e = path("1.3.0", Some("1.0.0"), Policy::Olm).unwrap_err();
    assert!(matches!(e, PathError::Unreachable { .. }), "{e}");
    assert!(e.to_string().contains("reachable: p.v1.4.0"), "{e}");
    let e = path("1.0.0", Some("9.0.0"), Policy::Semver).unwrap_err();
    assert!(
        e.to_string().contains("no entry matches target 9.0.0"),
        "{e}"
    );
    let e = path("0.1.0", None, Policy::Olm).unwrap_err();
    assert!(matches!(e, PathError::Stranded { .. }), "{e}");
}

#[test]
fn olm_refuses_a_channel_without_a_head() {
    let mut b = CatalogBuilder::new();
    b.bundle("p", "1.0.0");
    b.bundle("p", "2.0.0");
    let catalog = b.build();
    let p = &catalog.packages["p"];
    let ch = &p.channels["stable"];
    let g = UpgradeGraph::build(p, ch);
    let start = Start {
        name: None,
        version: Version::new(1, 0, 0),
    };
    let e = upgrade_path(&g, ch, &start, None, Policy::Olm).unwrap_err();
    assert!(e.to_string().contains("several channel heads"), "{e}");
}

#[test]
fn policies_parse_from_their_names() {
    for (s, p) in [
        ("olm", Policy::Olm),
        ("semver", Policy::Semver),
        ("any", Policy::Any),
    ] {
        assert_eq!(s.parse::<Policy>().unwrap(), p);
        assert_eq!(p.to_string(), s);
    }
    assert!("newest".parse::<Policy>().is_err());
}
