use super::*;
use crate::synthetic::CatalogBuilder;

fn sub(package: &str) -> Subscription {
    Subscription {
        package: package.into(),
        channel: None,
        range: None,
        policy: Policy::Olm,
    }
}

fn installed(package: &str, version: &str) -> Installed {
    Installed {
        package: package.into(),
        version: Version::parse(version).unwrap(),
        bundle: None,
    }
}

fn steps(plan: &Plan) -> Vec<String> {
    plan.steps
        .iter()
        .map(|s| {
            let action = match &s.action {
                Action::Install => "install".to_string(),
                Action::Keep => "keep".to_string(),
                Action::Upgrade { from } => format!("upgrade from {from}"),
                Action::Downgrade { from } => format!("downgrade from {from}"),
            };
            format!("{} {action}", s.bundle)
        })
        .collect()
}

fn run(b: &CatalogBuilder, request: Request) -> Result<Plan, Box<Unsatisfiable>> {
    resolve(&b.build(), &request)
}

#[test]
fn dependencies_come_first_and_apis_find_their_owner() {
    let mut b = CatalogBuilder::new();
    b.bundle("app", "1.0.0")
        .needs("db", ">=2.0.0")
        .needs_api("Metrics");
    b.bundle("db", "1.0.0");
    b.bundle("db", "2.0.0")
        .replaces("1.0.0")
        .needs_api("Metrics");
    b.bundle("monitoring", "0.5.0").owns("Metrics");
    let plan = run(
        &b,
        Request {
            installed: vec![],
            subscriptions: vec![sub("app")],
        },
    )
    .unwrap();
    assert_eq!(
        steps(&plan),
        vec![
            "monitoring.v0.5.0 install",
            "db.v2.0.0 install",
            "app.v1.0.0 install"
        ]
    );
    assert_eq!(plan.steps[1].required_by, vec!["app.v1.0.0 (app 1.0.0)"]);
    assert_eq!(
        plan.steps[2].depends_on,
        vec!["db.v2.0.0", "monitoring.v0.5.0"]
    );
}

#[test]
fn preferences_keep_installed_then_head_then_default_channel_then_higher() {
    let mut b = CatalogBuilder::new();
    b.bundle("app", "1.0.0").needs("db", ">=1.0.0");
    b.bundle("app", "1.1.0")
        .replaces("1.0.0")
        .needs("db", ">=1.0.0");
    b.bundle("db", "1.0.0");
    b.bundle("db", "1.1.0").replaces("1.0.0");
    b.bundle("db", "3.0.0").channels(&["fast"]);
    // not installed: the head of the subscribed channel, and the default channel's head for db
    let plan = run(
        &b,
        Request {
            installed: vec![],
            subscriptions: vec![sub("app")],
        },
    )
    .unwrap();
    assert_eq!(
        steps(&plan),
        vec!["db.v1.1.0 install", "app.v1.1.0 install"]
    );
    // installed: kept as they are
    let request = Request {
        installed: vec![installed("app", "1.0.0"), installed("db", "1.0.0")],
        subscriptions: vec![sub("app")],
    };
    let plan = run(&b, request).unwrap();
    assert_eq!(steps(&plan), vec!["db.v1.0.0 keep", "app.v1.0.0 keep"]);
    assert_eq!(plan.changes().count(), 0);
}

#[test]
fn the_search_backtracks_to_an_older_version_that_fits() {
    let mut b = CatalogBuilder::new();
    b.bundle("app", "1.0.0").needs("db", "1.x");
    b.bundle("app", "2.0.0")
        .replaces("1.0.0")
        .needs("db", "2.x");
    b.bundle("db", "1.0.0");
    b.bundle("db", "2.0.0")
        .replaces("1.0.0")
        .needs_api("Nobody");
    let plan = run(
        &b,
        Request {
            installed: vec![],
            subscriptions: vec![sub("app")],
        },
    )
    .unwrap();
    assert_eq!(
        steps(&plan),
        vec!["db.v1.0.0 install", "app.v1.0.0 install"]
    );
}

#[test]
fn a_subscription_with_a_range_and_an_installed_version_moves_only_along_edges() {
    let mut b = CatalogBuilder::new();
    b.bundle("app", "1.0.0");
    b.bundle("app", "1.1.0").replaces("1.0.0");
    b.bundle("app", "2.0.0").replaces("1.1.0");
    let mut s = sub("app");
    s.range = Some(VersionRange::parse("<2.0.0").unwrap());
    let request = Request {
        installed: vec![installed("app", "1.0.0")],
        subscriptions: vec![s.clone()],
    };
    assert_eq!(steps(&run(&b, request).unwrap()), vec!["app.v1.0.0 keep"]);
    // a range that excludes the installed version forces a move, here the upgrade to 1.1.0
    s.range = Some(VersionRange::parse(">=1.1.0 <2.0.0").unwrap());
    let request = Request {
        installed: vec![installed("app", "1.0.0")],
        subscriptions: vec![s.clone()],
    };
    assert_eq!(
        steps(&run(&b, request).unwrap()),
        vec!["app.v1.1.0 upgrade from 1.0.0"]
    );
    // a downgrade needs the any policy
    s.range = Some(VersionRange::parse("1.0.0").unwrap());
    let request = Request {
        installed: vec![installed("app", "2.0.0")],
        subscriptions: vec![s.clone()],
    };
    let err = run(&b, request).unwrap_err();
    assert!(
        err.to_string()
            .contains("from installed 2.0.0 the olm policy reaches none of those in range along the channel's edges"),
        "{err}"
    );
    s.policy = Policy::Any;
    let request = Request {
        installed: vec![installed("app", "2.0.0")],
        subscriptions: vec![s],
    };
    assert_eq!(
        steps(&run(&b, request).unwrap()),
        vec!["app.v1.0.0 downgrade from 2.0.0"]
    );
}

#[test]
fn explains_a_dependency_nobody_offers() {
    let mut b = CatalogBuilder::new();
    b.bundle("etcd", "0.9.4")
        .needs("prometheus", ">=0.47.0 <0.48.0");
    b.bundle("prometheus", "0.22.2");
    b.bundle("prometheus", "0.27.0").replaces("0.22.2");
    let err = run(
        &b,
        Request {
            installed: vec![],
            subscriptions: vec![sub("etcd")],
        },
    )
    .unwrap_err();
    assert_eq!(err.reason, "SubscriptionUnsatisfiable");
    assert_eq!(
        err.to_string(),
        "cannot resolve subscription to etcd\n  \
         subscription to etcd needs a bundle of etcd from its default channel; every candidate is ruled out:\n  \
         - etcd.v0.9.4 (etcd 0.9.4) needs package prometheus >=0.47.0 <0.48.0: the catalog has prometheus 0.27.0, 0.22.2, none in >=0.47.0 <0.48.0"
    );
    let json = serde_json::to_value(&err).unwrap();
    assert_eq!(
        json["cause"]["rejected"][0]["because"]["cause"]["problem"]["kind"],
        "nothingInRange"
    );
}

#[test]
fn explains_two_owners_of_one_api() {
    let mut b = CatalogBuilder::new();
    b.bundle("a", "1.0.0").owns("Backup");
    b.bundle("b", "1.0.0").owns("Backup");
    let err = run(
        &b,
        Request {
            installed: vec![],
            subscriptions: vec![sub("a"), sub("b")],
        },
    )
    .unwrap_err();
    assert_eq!(err.reason, "SubscriptionsConflict");
    let text = err.to_string();
    assert!(
        text.contains("subscription to a resolves to a.v1.0.0 (a 1.0.0)"),
        "{text}"
    );
    assert!(
        text.contains(
            "b.v1.0.0 (b 1.0.0): it owns test.windlass.dev/v1 Backup, which a.v1.0.0 (a 1.0.0) already owns"
        ),
        "{text}"
    );
}

#[test]
fn a_conflict_names_only_the_subscriptions_involved() {
    let mut b = CatalogBuilder::new();
    b.bundle("a", "1.0.0").needs("shared", "1.x");
    b.bundle("x", "1.0.0");
    b.bundle("c", "1.0.0").needs("shared", "2.x");
    b.bundle("shared", "1.0.0");
    b.bundle("shared", "2.0.0").replaces("1.0.0");
    let err = run(
        &b,
        Request {
            installed: vec![],
            subscriptions: vec![sub("a"), sub("x"), sub("c")],
        },
    )
    .unwrap_err();
    assert_eq!(
        err.subscriptions,
        vec!["subscription to a", "subscription to c"]
    );
    assert!(
        err.to_string()
            .contains("shared is already at 1.0.0 for a.v1.0.0 (a 1.0.0)"),
        "{err}"
    );
}

#[test]
fn explains_missing_packages_channels_and_apis() {
    let mut b = CatalogBuilder::new();
    b.bundle("a", "1.0.0").needs_api("Widget");
    b.bundle("b", "1.0.0").channels(&["beta", "stable"]);
    b.default_channel("b", None);
    let cases: Vec<(Subscription, &str)> = vec![
        (sub("nope"), "the catalog has no package nope"),
        (
            Subscription {
                channel: Some("gamma".into()),
                ..sub("b")
            },
            "package b has no channel gamma (channels: beta, stable)",
        ),
        (
            sub("b"),
            "package b declares no default channel; pick one of beta, stable",
        ),
        (
            sub("a"),
            "no bundle in the catalog owns test.windlass.dev/v1 Widget",
        ),
        (
            Subscription {
                range: Some(VersionRange::parse(">=2").unwrap()),
                ..sub("a")
            },
            "channel stable of a offers 1.0.0; none in range >=2",
        ),
    ];
    for (s, want) in cases {
        let err = run(
            &b,
            Request {
                installed: vec![],
                subscriptions: vec![s],
            },
        )
        .unwrap_err();
        assert!(
            err.to_string().contains(want),
            "{err}\nshould contain {want}"
        );
    }
}

#[test]
fn installed_packages_without_subscription_stay_and_their_apis_count() {
    let mut b = CatalogBuilder::new();
    b.bundle("old", "1.0.0").owns("Backup");
    b.bundle("new", "1.0.0").owns("Backup");
    b.bundle("user", "1.0.0").needs_api("Backup");
    let request = Request {
        installed: vec![installed("old", "1.0.0")],
        subscriptions: vec![sub("user")],
    };
    assert_eq!(
        steps(&run(&b, request).unwrap()),
        vec!["old.v1.0.0 keep", "user.v1.0.0 install"]
    );
    let request = Request {
        installed: vec![installed("old", "1.0.0")],
        subscriptions: vec![sub("new")],
    };
    let err = run(&b, request).unwrap_err();
    assert!(
        err.to_string()
            .contains("which old.v1.0.0 (old 1.0.0) already owns"),
        "{err}"
    );
}

#[test]
fn unknown_installed_versions_are_warned_about() {
    let mut b = CatalogBuilder::new();
    b.bundle("a", "1.0.0");
    b.bundle("a", "1.1.0")
        .replaces("1.0.0")
        .skip_range(">=0.5.0 <1.1.0");
    let request = Request {
        installed: vec![installed("a", "0.9.0")],
        subscriptions: vec![sub("a")],
    };
    let plan = run(&b, request).unwrap();
    assert_eq!(steps(&plan), vec!["a.v1.1.0 upgrade from 0.9.0"]);
    assert!(plan.warnings[0].contains("installed a 0.9.0 is not in the catalog"));
}

#[test]
fn same_input_same_answer() {
    let catalog = crate::synthetic::generate(40, 6);
    let subs: Vec<Subscription> = (0..30).map(|i| sub(&format!("pkg{i:05}"))).collect();
    let request = Request {
        installed: vec![],
        subscriptions: subs,
    };
    let first = resolve(&catalog, &request).unwrap();
    for _ in 0..3 {
        assert_eq!(resolve(&catalog, &request).unwrap(), first);
    }
    assert!(first.steps.len() > 30);
}
