use windlass_api::{
    BlueprintSpec,
    blueprint::{PlanStep, ResolvedBundle, RevisionRecord},
};

use super::*;

fn record(csv: &str, outcome: RevisionOutcome, reason: &str) -> RevisionRecord {
    RevisionRecord {
        revision: 1,
        version: csv.rsplit(".v").next().unwrap_or_default().into(),
        cluster_service_version_name: csv.into(),
        digest: None,
        started_time: None,
        completion_time: None,
        outcome,
        reason: reason.into(),
        forced: false,
        restored_from: None,
        verified_by: Vec::new(),
        image_rewrites: Vec::new(),
        plan: None,
        approved_plan: None,
        accepted_findings: Vec::new(),
    }
}

fn blueprint(
    target: &str,
    phase: Option<BlueprintPhase>,
    history: Vec<RevisionRecord>,
) -> Blueprint {
    let mut b = Blueprint::new(
        "db",
        BlueprintSpec {
            package: "acme-db".into(),
            cluster_service_version_name: target.into(),
            ..Default::default()
        },
    );
    b.status = Some(BlueprintStatus {
        phase,
        history,
        ..Default::default()
    });
    b
}

fn pin() -> Pin {
    Pin {
        manager: "windlass-cli".into(),
        operation: "Update".into(),
        time: None,
    }
}

const V110: &str = "acme-db.v1.1.0";
const V111: &str = "acme-db.v1.1.1";

#[test]
fn the_state_follows_the_blueprint() {
    use BlueprintPhase::{Failed, Installing, Pending, RequiresApproval, RollingBack, Succeeded};
    use RevisionOutcome::Completed;
    use SubscriptionState as S;
    let done_110 = || vec![record(V110, Completed, "")];
    let rolled_back = || {
        vec![
            record(
                V110,
                Completed,
                "automatic rollback from acme-db.v1.1.1: CSV Failed",
            ),
            record(V111, RevisionOutcome::RolledBack, "CSV Failed"),
            record(V110, Completed, ""),
        ]
    };
    // (story, Blueprint, pinned, the catalog's choice, expected state)
    type Case<'a> = (&'a str, Option<Blueprint>, bool, Option<&'a str>, Option<S>);
    let cases: Vec<Case> = vec![
        ("no Blueprint yet", None, false, Some(V110), None),
        (
            "not looked at yet",
            Some(blueprint(V110, None, vec![])),
            false,
            Some(V110),
            Some(S::Upgrading),
        ),
        (
            "waiting for dependencies",
            Some(blueprint(V110, Some(Pending), vec![])),
            false,
            Some(V110),
            Some(S::Upgrading),
        ),
        (
            "installing",
            Some(blueprint(V111, Some(Installing), done_110())),
            false,
            Some(V111),
            Some(S::Upgrading),
        ),
        (
            "manual approval",
            Some(blueprint(V111, Some(RequiresApproval), done_110())),
            false,
            Some(V111),
            Some(S::UpgradePending),
        ),
        (
            "at the catalog's choice",
            Some(blueprint(V110, Some(Succeeded), done_110())),
            false,
            Some(V110),
            Some(S::AtLatestKnown),
        ),
        (
            "given a new target, not started",
            Some(blueprint(V111, Some(Succeeded), done_110())),
            false,
            Some(V111),
            Some(S::Upgrading),
        ),
        (
            "pinned below the choice",
            Some(blueprint(V110, Some(Succeeded), done_110())),
            true,
            Some(V111),
            Some(S::UpgradeAvailable),
        ),
        (
            "pinned at the choice",
            Some(blueprint(V110, Some(Succeeded), done_110())),
            true,
            Some(V110),
            Some(S::AtLatestKnown),
        ),
        (
            "resolution failing keeps what runs",
            Some(blueprint(V110, Some(Succeeded), done_110())),
            false,
            None,
            Some(S::AtLatestKnown),
        ),
        (
            "failed",
            Some(blueprint(V111, Some(Failed), done_110())),
            false,
            Some(V111),
            Some(S::UpgradeFailed),
        ),
        (
            "rolling back",
            Some(blueprint(V111, Some(RollingBack), done_110())),
            false,
            Some(V111),
            Some(S::UpgradeFailed),
        ),
        (
            "rolled back, target held back",
            Some(blueprint(
                V111,
                Some(BlueprintPhase::RolledBack),
                rolled_back(),
            )),
            false,
            Some(V111),
            Some(S::RolledBack),
        ),
    ];
    for (story, blueprint, pinned, choice, want) in cases {
        let pin = pinned.then(pin);
        assert_eq!(
            state(blueprint.as_ref(), pin.as_ref(), choice),
            want,
            "{story}"
        );
    }
}

fn resolved(csv: &str) -> Result<Resolution, ResolutionFailure> {
    Ok(Resolution {
        channel: "stable".into(),
        target: ResolvedBundle {
            package: "acme-db".into(),
            cluster_service_version_name: csv.into(),
            version: csv.rsplit(".v").next().unwrap().into(),
            catalog: Some("builtin".into()),
            ..Default::default()
        },
        dependencies: vec![],
        action: windlass_resolver::solve::Action::Keep,
        notes: vec![],
    })
}

fn observe<'a>(
    blueprint: Option<&'a Blueprint>,
    pin: Option<&'a Pin>,
    resolution: &'a Result<Resolution, ResolutionFailure>,
) -> Observation<'a> {
    Observation {
        generation: Some(2),
        blueprint,
        pin,
        resolution,
        unhealthy_catalogs: &[],
        required_by: &[],
        dependency_problems: None,
        delisted: None,
    }
}

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(seconds).unwrap()
}

fn condition<'s>(status: &'s SubscriptionStatus, type_: &str) -> &'s Condition {
    find(&status.conditions, type_).unwrap_or_else(|| panic!("no {type_} in {status:?}"))
}

#[test]
fn a_status_reads_off_blueprint_and_resolution_and_settles() {
    let bp = blueprint(
        V110,
        Some(BlueprintPhase::Succeeded),
        vec![record(V110, RevisionOutcome::Completed, "")],
    );
    let resolution = resolved(V110);
    let requesters = ["monitor".to_string()];
    let seen = Observation {
        required_by: &requesters,
        ..observe(Some(&bp), None, &resolution)
    };
    let first = next_status(&SubscriptionStatus::default(), &seen, at(10));
    assert_eq!(first.state, Some(SubscriptionState::AtLatestKnown));
    assert_eq!(first.installed_csv.as_deref(), Some(V110));
    assert_eq!(first.current_csv.as_deref(), Some(V110));
    assert_eq!(first.blueprint.as_deref(), Some("db"));
    assert_eq!(first.required_by, vec!["monitor"]);
    assert_eq!(first.observed_generation, Some(2));
    let resolved = condition(&first, conditions::RESOLUTION_SUCCEEDED);
    assert_eq!(
        (resolved.status, resolved.reason.as_str()),
        (ConditionStatus::True, "Resolved")
    );
    assert_eq!(resolved.observed_generation, Some(2));
    assert_eq!(
        condition(&first, conditions::INSTALLED).message,
        "acme-db.v1.1.0 is installed"
    );
    assert_eq!(
        condition(&first, conditions::TARGET_PINNED).status,
        ConditionStatus::False
    );
    assert_eq!(
        condition(&first, conditions::CATALOG_SOURCES_UNHEALTHY).status,
        ConditionStatus::False
    );
    assert!(find(&first.conditions, conditions::DEPENDENCIES_SUBSCRIBED).is_none());
    // The state and the resolution that led to it are one moment: one Event tells both.
    let told = notices(&SubscriptionStatus::default(), &first);
    let reasons: Vec<&str> = told.iter().map(|n| n.reason.as_str()).collect();
    assert_eq!(reasons, ["AtLatestKnown"]);
    assert_eq!(
        told[0].message,
        format!("acme-db.v1.1.0 is installed; {}", resolved.message)
    );
    // Same world, later: the very same status, so nothing is written and no Event published.
    let again = next_status(&first, &seen, at(20));
    assert_eq!(again, first);
    assert!(notices(&first, &again).is_empty());
}

#[test]
fn failures_pins_and_catalog_trouble_become_conditions() {
    let bp = blueprint(
        V110,
        Some(BlueprintPhase::Succeeded),
        vec![record(V110, RevisionOutcome::Completed, "")],
    );
    let failure = Err(ResolutionFailure::new(
        "SubscriptionUnsatisfiable",
        "cannot resolve subscription to acme-db (versions >=3)",
    ));
    let unhealthy = ["catalog extra is unreachable".to_string()];
    let problems = ["acme-db: the name is taken".to_string()];
    let pin = pin();
    let seen = Observation {
        unhealthy_catalogs: &unhealthy,
        dependency_problems: Some(&problems),
        ..observe(Some(&bp), Some(&pin), &failure)
    };
    let status = next_status(&SubscriptionStatus::default(), &seen, at(10));
    let resolved = condition(&status, conditions::RESOLUTION_SUCCEEDED);
    assert_eq!(resolved.status, ConditionStatus::False);
    assert_eq!(resolved.reason, "SubscriptionUnsatisfiable");
    assert!(resolved.message.contains("versions >=3"));
    let pinned = condition(&status, conditions::TARGET_PINNED);
    assert_eq!(
        (pinned.status, pinned.reason.as_str()),
        (ConditionStatus::True, "SetByUser")
    );
    assert_eq!(
        pinned.message,
        "the target acme-db.v1.1.0 was set by windlass-cli (Update); the catalog would pick nothing (resolution failed). `windlass resume db` hands the target back"
    );
    let catalogs = condition(&status, conditions::CATALOG_SOURCES_UNHEALTHY);
    assert_eq!(
        (catalogs.status, catalogs.message.as_str()),
        (ConditionStatus::True, "catalog extra is unreachable")
    );
    assert_eq!(
        condition(&status, conditions::DEPENDENCIES_SUBSCRIBED).status,
        ConditionStatus::False
    );
    let reasons: Vec<String> = notices(&SubscriptionStatus::default(), &status)
        .into_iter()
        .map(|n| n.reason)
        .collect();
    assert_eq!(
        reasons,
        [
            "AtLatestKnown",
            "ResolutionFailed",
            "TargetPinned",
            "CatalogUnhealthy",
            "DependencySubscriptionFailed"
        ]
    );
}

#[test]
fn the_installed_condition_says_why_not() {
    use BlueprintPhase::{Pending, RequiresApproval, Succeeded};
    use RevisionOutcome::Completed;
    let mut waiting = blueprint(V110, Some(Pending), vec![]);
    waiting.status.as_mut().unwrap().plan = vec![
        PlanStep {
            name: "Dependencies".into(),
            status: "InProgress".into(),
            message: "waiting for acme-db".into(),
        },
        PlanStep {
            name: "CRDs".into(),
            status: "Pending".into(),
            message: String::new(),
        },
    ];
    let mut refused = blueprint(
        V111,
        Some(BlueprintPhase::Installing),
        vec![record(V110, Completed, "")],
    );
    refused.status.as_mut().unwrap().conditions = vec![Condition::new(
        "InstallPermitted",
        ConditionStatus::False,
        "InstallForbidden",
        "installing as system:serviceaccount:team-a:windlass-installer: roles is forbidden",
    )];
    let cases: Vec<(Blueprint, &str, &str)> = vec![
        (
            waiting,
            "Pending",
            "Dependencies: InProgress waiting for acme-db",
        ),
        (
            blueprint(V111, Some(RequiresApproval), vec![]),
            "RequiresApproval",
            "acme-db.v1.1.1 waits for approval of its plan on Blueprint db: `windlass plan` shows it, `windlass approve` approves it",
        ),
        (
            blueprint(
                V111,
                Some(BlueprintPhase::Failed),
                vec![
                    record(V111, RevisionOutcome::Failed, "progress deadline exceeded"),
                    record(V110, Completed, ""),
                ],
            ),
            "Failed",
            "acme-db.v1.1.1 failed: progress deadline exceeded; acme-db.v1.1.0 runs",
        ),
        (
            blueprint(
                V111,
                Some(BlueprintPhase::RolledBack),
                vec![
                    record(V110, Completed, "automatic rollback"),
                    record(
                        V111,
                        RevisionOutcome::RolledBack,
                        "CSV Failed: CrashLoopBackOff",
                    ),
                ],
            ),
            "RolledBack",
            "acme-db.v1.1.1 was rolled back: CSV Failed: CrashLoopBackOff; acme-db.v1.1.0 runs",
        ),
        (
            blueprint(V111, Some(Succeeded), vec![record(V110, Completed, "")]),
            "Pending",
            "waiting for Blueprint db to start on acme-db.v1.1.1",
        ),
        (
            refused,
            "NotPermitted",
            "InstallForbidden: installing as system:serviceaccount:team-a:windlass-installer: \
             roles is forbidden; acme-db.v1.1.0 runs",
        ),
    ];
    for (bp, reason, message) in cases {
        let resolution = resolved(V111);
        let status = next_status(
            &SubscriptionStatus::default(),
            &observe(Some(&bp), None, &resolution),
            at(1),
        );
        let installed = condition(&status, conditions::INSTALLED);
        assert_eq!(installed.status, ConditionStatus::False);
        assert_eq!(
            (installed.reason.as_str(), installed.message.as_str()),
            (reason, message)
        );
    }
}

/// The ClusterServiceVersion step's message follows the CSV through each of its phases; the
/// Subscription's status stays put meanwhile, so those phases cost it no writes.
#[test]
fn a_csv_installing_changes_nothing_on_the_subscription_until_it_is_done() {
    let installing = |message: &str| {
        let mut bp = blueprint(V111, Some(BlueprintPhase::Installing), vec![]);
        bp.status.as_mut().unwrap().plan = vec![
            PlanStep {
                name: "CRDs".into(),
                status: "Done".into(),
                message: String::new(),
            },
            PlanStep {
                name: "ClusterServiceVersion".into(),
                status: "InProgress".into(),
                message: message.into(),
            },
        ];
        let resolution = resolved(V111);
        next_status(
            &SubscriptionStatus::default(),
            &observe(Some(&bp), None, &resolution),
            at(1),
        )
    };
    let requirements = installing("acme-db.v1.1.1: Pending: owned CRD is not Established");
    let rolling_out = installing("acme-db.v1.1.1: Installing: 0 of 1 replicas available");
    assert_eq!(requirements, rolling_out);
    let installed = condition(&requirements, conditions::INSTALLED);
    assert_eq!(
        (installed.reason.as_str(), installed.message.as_str()),
        (
            "Installing",
            "ClusterServiceVersion: InProgress acme-db.v1.1.1 (Blueprint db shows its progress)"
        )
    );
}

#[test]
fn events_mark_transitions_only() {
    let resolution = resolved(V111);
    let installing = blueprint(
        V111,
        Some(BlueprintPhase::Installing),
        vec![record(V110, RevisionOutcome::Completed, "")],
    );
    let before = next_status(
        &SubscriptionStatus::default(),
        &observe(Some(&installing), None, &resolution),
        at(1),
    );
    let failed = blueprint(
        V111,
        Some(BlueprintPhase::RolledBack),
        vec![
            record(V110, RevisionOutcome::Completed, ""),
            record(V111, RevisionOutcome::RolledBack, "CSV Failed"),
        ],
    );
    let after = next_status(&before, &observe(Some(&failed), None, &resolution), at(2));
    assert_eq!(
        notices(&before, &after),
        vec![Notice {
            warning: true,
            reason: "RolledBack".into(),
            action: "Reconcile".into(),
            message: "acme-db.v1.1.1 was rolled back: CSV Failed; acme-db.v1.1.0 runs".into(),
        }]
    );
    // Resuming (pin gone) after a pin is news; a first "not pinned" is not.
    let pin = pin();
    let pinned = next_status(
        &after,
        &observe(Some(&failed), Some(&pin), &resolution),
        at(3),
    );
    let resumed = next_status(&pinned, &observe(Some(&failed), None, &resolution), at(4));
    let reasons: Vec<String> = notices(&pinned, &resumed)
        .into_iter()
        .map(|n| n.reason)
        .collect();
    assert_eq!(reasons, ["TargetResumed"]);
}

#[test]
fn catalog_trouble_is_named_per_catalog() {
    let view = |name: &str, phase: Option<Option<CatalogPhase>>, served: bool| CatalogView {
        name: name.into(),
        phase,
        message: if phase == Some(Some(CatalogPhase::Unreachable)) {
            "pulling example.test/catalog:1: connection refused".into()
        } else {
            String::new()
        },
        served,
    };
    let got = catalog_problems(&[
        view("builtin", Some(Some(CatalogPhase::Serving)), true),
        view("gone", None, false),
        view("flaky", Some(Some(CatalogPhase::Unreachable)), true),
        view("broken", Some(Some(CatalogPhase::Unreachable)), false),
        view("new", Some(Some(CatalogPhase::Pending)), false),
    ]);
    assert_eq!(
        got,
        [
            "catalog gone does not exist",
            "catalog flaky is unreachable (pulling example.test/catalog:1: connection refused); its last good content is still used",
            "catalog broken is unreachable (pulling example.test/catalog:1: connection refused) and nothing has been read from it yet",
            "catalog new has not been read yet",
        ]
    );
}

#[test]
fn a_delisted_install_says_so_once_and_relisting_says_so_too() {
    let bp = blueprint(
        V110,
        Some(BlueprintPhase::Succeeded),
        vec![record(V110, RevisionOutcome::Completed, "")],
    );
    let listed = resolved(V110);
    let first = next_status(
        &SubscriptionStatus::default(),
        &observe(Some(&bp), None, &listed),
        at(10),
    );
    assert!(
        find(&first.conditions, conditions::DELISTED).is_none(),
        "never delisted: no condition"
    );

    let delisted = crate::delisting::Delisted {
        reason: windlass_api::names::reasons::delisting::PACKAGE_DELISTED,
        message:
            "package acme-db is delisted by catalog builtin (retired); acme-db.v1.1.0 keeps running"
                .into(),
    };
    let failure = Err(delisted.failure());
    let seen = Observation {
        delisted: Some(&delisted),
        ..observe(Some(&bp), None, &failure)
    };
    let second = next_status(&first, &seen, at(20));
    let condition_ = condition(&second, conditions::DELISTED);
    assert_eq!(
        (condition_.status, condition_.reason.as_str()),
        (ConditionStatus::True, "PackageDelisted")
    );
    assert_eq!(
        condition(&second, conditions::RESOLUTION_SUCCEEDED).reason,
        "Delisted"
    );
    // It keeps running: still installed, at the latest it may have.
    assert_eq!(second.state, Some(SubscriptionState::AtLatestKnown));
    assert_eq!(
        condition(&second, conditions::INSTALLED).status,
        ConditionStatus::True
    );
    let told = notices(&first, &second);
    assert_eq!(
        told.iter()
            .map(|n| (n.reason.as_str(), n.warning))
            .collect::<Vec<_>>(),
        [("Delisted", true)],
        "one Event, not a resolution failure besides"
    );
    // Unchanged: nothing to write, nothing to tell.
    let third = next_status(&second, &seen, at(30));
    assert_eq!(third, second);
    assert!(notices(&second, &third).is_empty());

    let relisted = next_status(&third, &observe(Some(&bp), None, &listed), at(40));
    let condition_ = condition(&relisted, conditions::DELISTED);
    assert_eq!(
        (condition_.status, condition_.reason.as_str()),
        (ConditionStatus::False, "Listed")
    );
    let told: Vec<String> = notices(&third, &relisted)
        .into_iter()
        .map(|n| n.reason)
        .collect();
    assert_eq!(told, ["Relisted", "Resolved"]);
}
