use super::*;
use crate::model::ChannelEntry;

/// `"b<a"` = b replaces a; `"c<a,b~x"`: c replaces a, skips b and x; `"d[>=1.0.0 <2.0.0]"`.
fn channel(spec: &[&str]) -> (Package, Channel) {
    let entries = spec
        .iter()
        .map(|s| {
            let (s, range) = match s.split_once('[') {
                Some((s, r)) => (s, Some(r.trim_end_matches(']').to_string())),
                None => (*s, None),
            };
            let (head, skips) = match s.split_once('~') {
                Some((h, k)) => (h, k.split(',').map(str::to_string).collect::<Vec<_>>()),
                None => (s, Vec::new()),
            };
            let (name, replaces) = match head.split_once('<') {
                Some((n, r)) => (n, Some(r.to_string())),
                None => (head, None),
            };
            ChannelEntry {
                name: name.into(),
                replaces: replaces.map(Into::into),
                skips: skips.into_iter().map(Into::into).collect(),
                skip_range: range.map(Into::into),
            }
        })
        .collect();
    let channel = Channel {
        name: "stable".into(),
        package: "p".into(),
        entries,
    };
    let package = Package {
        name: "p".into(),
        ..Default::default()
    };
    (package, channel)
}

fn messages(spec: &[&str]) -> Vec<String> {
    let (p, c) = channel(spec);
    validate_channel(&p, &c)
        .iter()
        .map(|x| format!("{:?}: {x}", x.severity()))
        .collect()
}

#[test]
fn table_of_channel_shapes() {
    let cases: &[(&[&str], &[&str])] = &[
        (&["a", "b<a", "c<b"], &[]),
        // the tail may replace an entry the channel lacks
        (&["a<gone", "b<a"], &[]),
        // a skipped entry off the chain is fine
        (&["a", "b<a", "x", "c<b~x"], &[]),
        (
            &["a", "b"],
            &["Error: package p channel stable: several channel heads (a, b)"],
        ),
        (
            &["a<b", "b<a"],
            &[
                "Error: package p channel stable: replaces chain loops: a -> b -> a",
                "Error: package p channel stable: no channel head",
            ],
        ),
        (
            &["a<c", "b<a", "c<b", "d<c"],
            &["Error: package p channel stable: replaces chain loops: a -> c -> b -> a"],
        ),
        (
            &["a", "b<a", "c<b", "x<a~b"],
            &["Error: package p channel stable: several channel heads (c, x)"],
        ),
        (
            &["a", "x", "y<x", "c<a~y"],
            &["Error: package p channel stable: stranded entries x are neither"],
        ),
        (
            &["a", "x<gone", "c<a~x"],
            &["Warning: package p channel stable: x replaces gone, which is not in the channel"],
        ),
        (
            &["a", "b<a~old"],
            &["Warning: package p channel stable: b skips old, which is not in"],
        ),
        (
            &["a", "b<a[>=1.0.0 <<2]"],
            &["Error: package p channel stable: b has olm.skipRange \">=1.0.0 <<2\" that cannot"],
        ),
        (
            &["a", "b<a", "b<a"],
            &["Error: package p channel stable: entry b is listed twice"],
        ),
    ];
    for (spec, expected) in cases {
        let got = messages(spec);
        assert_eq!(got.len(), expected.len(), "{spec:?}: {got:#?}");
        for want in *expected {
            assert!(
                got.iter().any(|g| g.starts_with(want)),
                "{spec:?}: missing {want:?} in {got:#?}"
            );
        }
    }
}

#[test]
fn unknown_bundles_are_reported_when_the_package_lists_bundles() {
    let (mut p, c) = channel(&["a", "b<a"]);
    p.bundles.insert(
        "a".into(),
        crate::model::Bundle {
            name: "a".into(),
            package: "p".into(),
            version: semver::Version::new(1, 0, 0),
            image: None,
            properties: vec![],
            related_images: vec![],
        },
    );
    let problems = validate_channel(&p, &c);
    assert_eq!(
        problems,
        vec![ChannelProblem::UnknownBundle {
            package: "p".into(),
            channel: "stable".into(),
            entry: "b".into()
        }]
    );
}

#[test]
fn heads_are_sorted_and_unique() {
    let (_, c) = channel(&["z", "a", "m<a"]);
    assert_eq!(channel_heads(&c), vec!["m", "z"]);
}

#[test]
fn problems_serialise_with_a_kind() {
    let p = ChannelProblem::NoHead {
        package: "p".into(),
        channel: "c".into(),
    };
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(json["kind"], "noHead");
    assert_eq!(p.severity(), Severity::Error);
}
