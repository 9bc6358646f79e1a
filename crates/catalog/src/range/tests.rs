use proptest::prelude::*;

use super::*;

fn v(s: &str) -> Version {
    Version::parse(s).unwrap()
}

/// (range, versions inside, versions outside) for every form the parser accepts.
const CASES: &[(&str, &[&str], &[&str])] = &[
    // blang/semver, as skipRange and olm.package.required write them
    (">=1.0.0 <2.0.0", &["1.0.0", "1.9.9"], &["0.9.9", "2.0.0"]),
    (">=0.9.0 <0.9.4", &["0.9.0", "0.9.3"], &["0.9.4", "0.8.9"]),
    (">1.0.0 <=1.2.0", &["1.0.1", "1.2.0"], &["1.0.0", "1.2.1"]),
    ("1.2.3", &["1.2.3", "1.2.3+build.5"], &["1.2.4", "1.2.2"]),
    ("=1.2.3", &["1.2.3"], &["1.2.4"]),
    ("==1.2.3", &["1.2.3"], &["1.2.4"]),
    ("!=1.2.3", &["1.2.4", "0.1.0"], &["1.2.3"]),
    ("v1.2.3", &["1.2.3"], &["1.2.4"]),
    (">=v1.0.0 <V2.0.0", &["1.5.0"], &["2.0.0"]),
    (
        "<1.0.0 || >=3.0.0",
        &["0.5.0", "3.0.0", "4.1.0"],
        &["1.0.0", "2.9.9"],
    ),
    (
        ">=1.0.0 <1.1.0 || >=2.0.0 <2.1.0",
        &["1.0.5", "2.0.5"],
        &["1.1.0", "2.1.0", "1.5.0"],
    ),
    ("1.2.x", &["1.2.0", "1.2.99"], &["1.3.0", "1.1.9"]),
    ("1.x", &["1.0.0", "1.99.0"], &["2.0.0", "0.9.0"]),
    ("1.X", &["1.4.0"], &["2.0.0"]),
    ("1.2.*", &["1.2.7"], &["1.3.0"]),
    ("*", &["0.0.0", "99.1.2"], &[]),
    ("x", &["5.0.0"], &[]),
    (">=1.x", &["1.0.0", "7.0.0"], &["0.9.0"]),
    (">1.x", &["2.0.0"], &["1.9.9"]),
    ("<1.x", &["0.9.9"], &["1.0.0"]),
    ("<=1.2.x", &["1.2.9"], &["1.3.0"]),
    // Masterminds
    (">=1.2, <2", &["1.2.0", "1.99.0"], &["1.1.9", "2.0.0"]),
    (">= 1.2, < 2", &["1.3.0"], &["2.0.0"]),
    ("1.2", &["1.2.0", "1.2.9"], &["1.3.0"]),
    ("1", &["1.0.0", "1.9.0"], &["2.0.0", "0.1.0"]),
    (">1.2", &["1.3.0"], &["1.2.9"]),
    ("<=1.2", &["1.2.9"], &["1.3.0"]),
    ("!=1.2", &["1.1.9", "1.3.0"], &["1.2.0", "1.2.5"]),
    ("~1.2.3", &["1.2.3", "1.2.9"], &["1.3.0", "1.2.2"]),
    ("~1.2", &["1.2.0", "1.2.9"], &["1.3.0"]),
    ("~1", &["1.0.0", "1.9.0"], &["2.0.0"]),
    ("~>1.2", &["1.2.5"], &["1.3.0"]),
    ("^1.2.3", &["1.2.3", "1.9.0"], &["2.0.0", "1.2.2"]),
    ("^1", &["1.0.0", "1.9.0"], &["2.0.0"]),
    ("^0.2.3", &["0.2.3", "0.2.9"], &["0.3.0", "0.2.2"]),
    ("^0.0.3", &["0.0.3"], &["0.0.4"]),
    ("^0.0", &["0.0.9"], &["0.1.0"]),
    ("^0", &["0.9.0"], &["1.0.0"]),
    ("1.2 - 1.4", &["1.2.0", "1.4.9"], &["1.5.0", "1.1.0"]),
    ("1.2.3 - 1.4.5", &["1.2.3", "1.4.5"], &["1.4.6", "1.2.2"]),
    ("^1.2 || ~3.1", &["1.5.0", "3.1.4"], &["2.0.0", "3.2.0"]),
    ("=>1.0.0 =<1.1.0", &["1.1.0"], &["1.1.1"]),
    // the pre-release rule
    (
        ">=1.0.0 <2.0.0",
        &[],
        &["1.5.0-alpha", "2.0.0-rc.1", "1.0.0-rc.1"],
    ),
    (
        ">=1.5.0-alpha <2.0.0",
        &["1.5.0-beta", "1.5.0-alpha", "1.6.0"],
        &["1.6.0-beta", "1.5.0-0"],
    ),
    (
        ">=4.1.0 <4.2.0-0",
        &["4.1.9"],
        &["4.2.0-rc.1", "4.2.0", "4.1.5-rc.1"],
    ),
    ("1.2.3-rc.1", &["1.2.3-rc.1"], &["1.2.3-rc.2", "1.2.3"]),
    ("*", &[], &["1.0.0-alpha"]),
];

#[test]
fn table_of_forms() {
    for (range, inside, outside) in CASES {
        let parsed = VersionRange::parse(range).unwrap_or_else(|e| panic!("{range}: {e}"));
        for version in *inside {
            assert!(
                parsed.matches(&v(version)),
                "{range} should match {version}"
            );
        }
        for version in *outside {
            assert!(
                !parsed.matches(&v(version)),
                "{range} should not match {version}"
            );
        }
    }
}

#[test]
fn rejects_bad_input_with_the_offending_token() {
    let cases: &[(&str, &str)] = &[
        ("", "empty"),
        ("   ", "empty"),
        (">=1.0.0 ||", "alternative 1"),
        ("|| 1.0.0", "alternative 0"),
        (">=", "no version after"),
        (">= <2", "no version after"),
        ("banana", "\"banana\""),
        ("1.2.3.4", "more than three"),
        ("1.x.3", "cannot follow a wildcard"),
        ("01.2.3", "leading zeros"),
        ("1.2-rc.1", "full major.minor.patch"),
        ("1.0.0 -", "both sides"),
        (">*", "wildcard"),
        ("!=*", "wildcard"),
        ("1.0.0-", "pre-release"),
        ("99999999999999999999999.0.0", "too large"),
    ];
    for (range, expected) in cases {
        let err = VersionRange::parse(range).expect_err(range).to_string();
        assert!(
            err.contains(expected),
            "{range:?}: {err:?} should mention {expected:?}"
        );
    }
}

#[test]
fn build_metadata_does_not_change_the_answer() {
    let r = VersionRange::parse("<=1.2.3").unwrap();
    assert!(r.matches(&v("1.2.3+zzz")));
    let r = VersionRange::parse(">1.2.3+aaa").unwrap();
    assert!(!r.matches(&v("1.2.3+zzz")));
}

#[test]
fn serde_round_trips_as_text() {
    let r: VersionRange = serde_json::from_str("\">=1.0.0 <2.0.0\"").unwrap();
    assert_eq!(serde_json::to_string(&r).unwrap(), "\">=1.0.0 <2.0.0\"");
    assert!(serde_json::from_str::<VersionRange>("\"nope\"").is_err());
}

fn arb_version() -> impl Strategy<Value = Version> {
    (
        0u64..4,
        0u64..4,
        0u64..4,
        prop::option::of(prop::sample::select(vec!["alpha", "rc.1", "0"])),
    )
        .prop_map(|(a, b, c, pre)| {
            let mut v = Version::new(a, b, c);
            if let Some(p) = pre {
                v.pre = Prerelease::new(p).unwrap();
            }
            v
        })
}

proptest! {
    /// `>=a <b` agrees with plain precedence for release versions, whatever the syntax.
    #[test]
    fn interval_agrees_with_precedence(lo in arb_version(), hi in arb_version(), x in arb_version()) {
        let blang = VersionRange::parse(&format!(">={lo} <{hi}")).unwrap();
        let masterminds = VersionRange::parse(&format!(">= v{lo}, < v{hi}")).unwrap();
        let inside = precedence(&x, &lo).is_ge() && precedence(&x, &hi).is_lt();
        let pre_ok = x.pre.is_empty()
            || [&lo, &hi].iter().any(|b| !b.pre.is_empty()
                && (b.major, b.minor, b.patch) == (x.major, x.minor, x.patch));
        prop_assert_eq!(blang.matches(&x), inside && pre_ok);
        prop_assert_eq!(masterminds.matches(&x), inside && pre_ok);
    }

    /// `||` is a union of its alternatives.
    #[test]
    fn or_is_union(a in arb_version(), b in arb_version(), x in arb_version()) {
        let left = VersionRange::parse(&format!("~{a}")).unwrap();
        let right = VersionRange::parse(&format!("^{b}")).unwrap();
        let both = VersionRange::parse(&format!("~{a} || ^{b}")).unwrap();
        prop_assert_eq!(both.matches(&x), left.matches(&x) || right.matches(&x));
    }

    /// The parser never panics, whatever it is given.
    #[test]
    fn never_panics(s in "[ <>=!~^|,.*xXv0-9a-z+-]{0,24}") {
        if let Ok(r) = VersionRange::parse(&s) {
            let _ = r.matches(&Version::new(1, 2, 3));
        }
    }
}
