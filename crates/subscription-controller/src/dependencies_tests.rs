use std::collections::BTreeMap;
use windlass_api::names::labels;

use serde_json::json;

use windlass_api::{BlueprintSpec, BlueprintStatus, blueprint::RevisionRecord, config::Approval};

use super::*;

fn subscription(name: &str, package: &str, uid: &str) -> Subscription {
    let mut s = Subscription::new(
        name,
        SubscriptionSpec {
            package: package.into(),
            ..Default::default()
        },
    );
    s.metadata.namespace = Some("team-a".into());
    s.metadata.uid = Some(uid.into());
    s.metadata.resource_version = Some(format!("rv-{name}"));
    s
}

/// A Subscription this controller created for a dependency, owned by `owners`.
fn dependency(package: &str, owners: &[&Subscription]) -> Subscription {
    let mut s = subscription(package, package, &format!("uid-{package}"));
    s.metadata.labels = Some(BTreeMap::from([(labels::DEPENDENCY.into(), "true".into())]));
    s.metadata.owner_references = Some(owners.iter().map(|o| owner_reference(o, false)).collect());
    s
}

fn record(revision: i64, version: &str, outcome: RevisionOutcome) -> RevisionRecord {
    RevisionRecord {
        revision,
        version: version.into(),
        cluster_service_version_name: format!("x.v{version}"),
        digest: None,
        started_time: None,
        completion_time: None,
        outcome,
        reason: String::new(),
        forced: false,
        restored_from: None,
        verified_by: Vec::new(),
        image_rewrites: Vec::new(),
        plan: None,
        approved_plan: None,
        accepted_findings: Vec::new(),
    }
}

fn blueprint(name: &str, package: &str, deps: &[&str], history: Vec<RevisionRecord>) -> Blueprint {
    let mut b = Blueprint::new(
        name,
        BlueprintSpec {
            package: package.into(),
            dependencies: deps
                .iter()
                .map(|d| ResolvedBundle {
                    package: d.to_string(),
                    cluster_service_version_name: format!("{d}.v1.0.0"),
                    version: "1.0.0".into(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        },
    );
    b.status = Some(BlueprintStatus {
        history,
        ..Default::default()
    });
    b
}

fn needs(package: &str) -> ResolvedBundle {
    ResolvedBundle {
        package: package.into(),
        cluster_service_version_name: format!("{package}.v1.1.0"),
        version: "1.1.0".into(),
        catalog: Some("builtin".into()),
        ..Default::default()
    }
}

#[test]
fn installed_is_the_last_completed_revision_of_each_package() {
    use RevisionOutcome::*;
    let mut leaving = blueprint(
        "gone",
        "acme-gateway",
        &[],
        vec![record(1, "0.1.0", Completed)],
    );
    leaving.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ));
    let blueprints = vec![
        // Newest first: 1.1.1 failed and was rolled back, 1.1.0 is what runs.
        blueprint(
            "db",
            "acme-db",
            &[],
            vec![
                record(3, "1.1.0", Completed),
                record(2, "1.1.1", RolledBack),
                record(1, "1.1.0", Completed),
            ],
        ),
        // Still installing its first revision: nothing installed yet.
        blueprint(
            "monitor",
            "acme-monitor",
            &[],
            vec![record(1, "0.2.0", InProgress)],
        ),
        leaving,
    ];
    let got = installed_packages(&blueprints);
    assert_eq!(
        got,
        vec![InstalledPackage {
            package: "acme-db".into(),
            version: Version::new(1, 1, 0),
            csv_name: "x.v1.1.0".into(),
        }]
    );
}

#[test]
fn neighbours_see_a_blueprint_change_only_when_what_they_read_changes() {
    use RevisionOutcome::*;
    let installing = blueprint(
        "monitor",
        "acme-monitor",
        &["acme-db"],
        vec![record(1, "0.2.0", InProgress)],
    );
    let view = NeighbourView::of(&installing);

    // Progress of the install (phase, steps, conditions) is the Blueprint's own business.
    let mut progressed = installing.clone();
    let status = progressed.status.as_mut().unwrap();
    status.plan.push(Default::default());
    status.observed_generation = Some(7);
    assert_eq!(NeighbourView::of(&progressed), view);

    // What others resolve against, or who needs whom, is theirs too.
    let mut completed = installing.clone();
    completed.status.as_mut().unwrap().history[0].outcome = Completed;
    assert_ne!(NeighbourView::of(&completed), view);
    let needs_more = blueprint(
        "monitor",
        "acme-monitor",
        &["acme-db", "acme-kv"],
        vec![record(1, "0.2.0", InProgress)],
    );
    assert_ne!(NeighbourView::of(&needs_more), view);
    let mut leaving = installing.clone();
    leaving.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ));
    assert_ne!(NeighbourView::of(&leaving), view);
}

#[test]
fn a_new_blueprint_is_news_to_its_neighbours_only_once_it_shows_them_something() {
    use RevisionOutcome::*;
    let fresh = blueprint("kv", "acme-kv", &[], vec![record(1, "1.0.0", InProgress)]);
    assert!(NeighbourView::of(&fresh).inert());
    let needing = blueprint(
        "monitor",
        "acme-monitor",
        &["acme-db"],
        vec![record(1, "0.2.0", InProgress)],
    );
    assert!(!NeighbourView::of(&needing).inert());
    let done = blueprint("kv", "acme-kv", &[], vec![record(1, "1.0.0", Completed)]);
    assert!(!NeighbourView::of(&done).inert());
}

#[test]
fn requesters_are_the_subscriptions_whose_blueprints_need_the_package() {
    let db = subscription("acme-db", "acme-db", "u-db");
    let monitor = subscription("monitor", "acme-monitor", "u-mon");
    let other = subscription("other", "acme-gateway", "u-gw");
    let blueprints = vec![
        blueprint("monitor", "acme-monitor", &["acme-db"], vec![]),
        blueprint("other", "acme-gateway", &[], vec![]),
    ];
    let subs = vec![db.clone(), monitor, other];
    let got = requesters(&db, &subs, &blueprints);
    assert_eq!(required_by(&got), vec!["monitor"]);
    assert!(requesters(&subs[1], &subs, &blueprints).is_empty());
}

#[test]
fn dependencies_get_subscriptions_owned_by_every_requester() {
    let monitor = subscription("monitor", "acme-monitor", "u-mon");
    let backup = subscription("backup", "acme-backup", "u-bak");
    let mut manual = monitor.clone();
    manual.spec.approval = Approval::Manual;
    manual.spec.target_namespaces = Some(vec!["team-a".into()]);

    // Nothing there yet: created, labelled, owned (not controlled) by the requester.
    let changes = plan(&manual, &[needs("acme-db")], std::slice::from_ref(&manual));
    let [DependencyChange::Create { metadata, spec }] = changes.as_slice() else {
        panic!("{changes:?}");
    };
    let created = Subscription {
        metadata: *metadata.clone(),
        spec: *spec.clone(),
        status: None,
    };
    assert_eq!(
        serde_json::to_value(created).unwrap(),
        json!({
            "apiVersion": "windlass.dev/v1alpha1", "kind": "Subscription",
            "metadata": {
                "name": "acme-db", "namespace": "team-a",
                "labels": {"windlass.dev/dependency": "true"},
                "ownerReferences": [{"apiVersion": "windlass.dev/v1alpha1", "kind": "Subscription",
                    "name": "monitor", "uid": "u-mon", "controller": false, "blockOwnerDeletion": false}]
            },
            "spec": {"package": "acme-db", "catalog": "builtin", "approval": "Manual",
                     "targetNamespaces": ["team-a"], "upgradePolicy": "olm",
                     "crdDeletionPolicy": "Keep"}
        })
    );

    // Created for someone else: this requester is added, the other owner kept.
    let db = dependency("acme-db", &[&backup]);
    let changes = plan(
        &monitor,
        &[needs("acme-db")],
        &[monitor.clone(), db.clone()],
    );
    assert_eq!(
        changes,
        vec![DependencyChange::SetOwners {
            name: "acme-db".into(),
            resource_version: "rv-acme-db".into(),
            owners: vec![
                owner_reference(&backup, false),
                owner_reference(&monitor, false)
            ],
        }]
    );

    // Already owned: nothing to do, so a steady state writes nothing.
    let db = dependency("acme-db", &[&backup, &monitor]);
    assert!(
        plan(
            &monitor,
            &[needs("acme-db")],
            &[monitor.clone(), db.clone()]
        )
        .is_empty()
    );

    // No longer needed: released when someone else still owns it...
    assert_eq!(
        plan(&monitor, &[], &[monitor.clone(), db]),
        vec![DependencyChange::SetOwners {
            name: "acme-db".into(),
            resource_version: "rv-acme-db".into(),
            owners: vec![owner_reference(&backup, false)],
        }]
    );
    // ...and left to go with its last owner otherwise.
    let db = dependency("acme-db", &[&monitor]);
    assert!(plan(&monitor, &[], &[monitor.clone(), db]).is_empty());
}

#[test]
fn a_persons_subscription_is_reused_and_never_owned() {
    let monitor = subscription("monitor", "acme-monitor", "u-mon");
    let mine = subscription("my-db", "acme-db", "u-mine");
    assert!(
        plan(
            &monitor,
            &[needs("acme-db")],
            &[monitor.clone(), mine.clone()]
        )
        .is_empty()
    );
    // Even next to a dependency Subscription for the same package.
    let created = dependency("acme-db", &[&monitor]);
    assert!(
        plan(
            &monitor,
            &[needs("acme-db")],
            &[monitor.clone(), created, mine]
        )
        .is_empty()
    );
}

#[test]
fn a_name_held_by_another_package_is_reported() {
    let monitor = subscription("monitor", "acme-monitor", "u-mon");
    let squatter = subscription("acme-db", "acme-gateway", "u-gw");
    assert_eq!(
        plan(&monitor, &[needs("acme-db")], &[monitor.clone(), squatter]),
        vec![DependencyChange::NameTaken {
            package: "acme-db".into(),
            name: "acme-db".into(),
            holds: "acme-gateway".into(),
        }]
    );
}
