//! Installs, upgrades, waits and the bookkeeping that makes them survive a restart.

use windlass_api::config::Approval;
use windlass_api::names::reasons;

use super::*;

#[test]
fn first_install_records_the_revision_then_applies_then_completes() {
    let mut world = World::new();

    let recorded = world.reconcile();
    assert_eq!(recorded.action, Action::Record);
    assert_eq!(
        recorded.bookkeeping,
        Some(Bookkeeping {
            revision: 1,
            old_version: None,
            old_cluster_service_version_name: None,
            approved: Some(false),
            approved_plan: Some(None),
            accepted_findings: Some(None),
        })
    );
    assert_eq!(
        world.outcomes(),
        [(1, "1.0.0".into(), RevisionOutcome::InProgress)]
    );
    assert_eq!(world.record(1).reason, "install 1.0.0");
    assert_eq!(world.record(1).started_time, None, "nothing applied yet");
    // The revision starting and the phase it puts the Blueprint in are one moment: one Event.
    let reasons: Vec<&str> = recorded.notes.iter().map(|n| n.reason.as_str()).collect();
    assert_eq!(reasons, ["RevisionStarted"], "{:?}", recorded.notes);
    assert!(
        recorded.notes[0]
            .message
            .ends_with("; phase Pending at 1.0.0"),
        "{}",
        recorded.notes[0].message
    );

    let applying = world.reconcile();
    let Action::Apply(plan) = &applying.action else {
        panic!("expected an apply, got {:?}", applying.action)
    };
    assert_eq!(plan.content.crds, CrdPolicy::Apply);
    assert_eq!(plan.supersedes, None);
    assert_eq!(world.phase(), BlueprintPhase::Installing);
    assert_eq!(world.step("ClusterServiceVersion").0, "InProgress");
    assert!(
        !applying.notes.iter().any(|n| n.reason.starts_with("Step")),
        "a step in progress is no Event: {:?}",
        applying.notes
    );
    assert!(world.record(1).started_time.is_some());
    assert!(
        world.stored.iter().any(|s| s.revision == 1),
        "content stored before applying"
    );

    world.csv_reports("1.0.0", CsvPhase::Succeeded);
    let done = world.reconcile();
    assert_eq!(world.phase(), BlueprintPhase::Succeeded);
    assert_eq!(world.status.version.as_deref(), Some("1.0.0"));
    assert_eq!(
        world.outcomes(),
        [(1, "1.0.0".into(), RevisionOutcome::Completed)]
    );
    assert!(world.condition_is("Ready", ConditionStatus::True, "Succeeded"));
    let reasons: Vec<&str> = done.notes.iter().map(|n| n.reason.as_str()).collect();
    assert_eq!(reasons, ["RevisionCompleted"], "{:?}", done.notes);
    assert!(
        done.notes[0]
            .message
            .ends_with("; phase Succeeded at 1.0.0"),
        "{}",
        done.notes[0].message
    );
    assert!(
        !done.notes.iter().any(|n| n.reason.starts_with("Step")),
        "steps done are no Events: {:?}",
        done.notes
    );
    assert!(
        matches!(done.action, Action::Apply(_)),
        "a settled revision is re-applied"
    );

    // Steady state: nothing changes, so nothing is written and nothing is said.
    let steady = world.reconcile();
    assert_eq!(steady.status, world.status);
    assert!(steady.notes.is_empty(), "{:?}", steady.notes);
    assert_eq!(steady.bookkeeping, None);
}

#[test]
fn an_upgrade_supersedes_the_installed_csv_and_remembers_the_old_version() {
    let mut world = World::installed(&["1.0.0"]);
    world.subscribe_to("1.1.0");

    let recorded = world.reconcile();
    let bookkeeping = recorded.bookkeeping.expect("a new revision");
    assert_eq!(bookkeeping.revision, 2);
    assert_eq!(bookkeeping.old_version.as_deref(), Some("1.0.0"));
    assert_eq!(
        bookkeeping.old_cluster_service_version_name.as_deref(),
        Some("acme-db.v1.0.0")
    );
    assert_eq!(world.record(2).reason, "upgrade from 1.0.0 to 1.1.0");

    let applying = world.reconcile();
    let Action::Apply(plan) = &applying.action else {
        panic!("expected an apply")
    };
    assert_eq!(plan.supersedes.as_deref(), Some("acme-db.v1.0.0"));
    assert!(plan.delete_csvs.is_empty());

    world.csv_reports("1.1.0", CsvPhase::Succeeded);
    world.settle();
    world.csv_replaced("1.0.0");
    let steady = world.settle();
    let Action::Apply(plan) = &steady.action else {
        panic!("expected an apply")
    };
    assert_eq!(
        plan.supersedes.as_deref(),
        Some("acme-db.v1.0.0"),
        "once the old CSV is gone the live supersedes is kept, so the CSV spec never churns"
    );
    assert_eq!(
        world.outcomes(),
        [
            (2, "1.1.0".into(), RevisionOutcome::Completed),
            (1, "1.0.0".into(), RevisionOutcome::Completed)
        ]
    );
}

#[test]
fn manual_approval_waits_per_revision_and_nothing_is_applied_meanwhile() {
    let mut world = World::new();
    world.spec.approval = Approval::Manual;
    world.spec.approved = true; // an approval given before the revision existed does not count
    let waiting = world.settle();
    assert_eq!(world.phase(), BlueprintPhase::RequiresApproval);
    assert!(
        !world.spec.approved,
        "approval is reset when a revision starts"
    );
    assert_eq!(waiting.action, Action::Record);
    // Its content is stored and previewed, nothing of it applied.
    assert!(world.csvs.is_empty());
    assert_eq!(world.stored.len(), 1);

    world.spec.approved = true;
    world.generation += 1;
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Installing);
    world.csv_reports("1.0.0", CsvPhase::Succeeded);
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Succeeded);

    world.subscribe_to("1.0.1");
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::RequiresApproval);
    assert!(!world.spec.approved);
    assert_eq!(
        world.status.version.as_deref(),
        Some("1.0.0"),
        "what runs until the upgrade is approved"
    );
    let waiting = world.step("CRDs").1;
    assert!(
        waiting.starts_with("plan sha256:acme-db.v1.0.1|")
            && waiting.contains("waits for approval"),
        "{waiting}"
    );
    assert!(waiting.contains("`windlass approve db`"), "{waiting}");
}

#[test]
fn dependencies_must_be_installed_before_anything_is_applied() {
    let mut world = World::new();
    world.spec.dependencies = vec![ResolvedBundle {
        package: "acme-base".into(),
        ..bundle("1.0.0")
    }];
    world.dependencies = vec![DependencyState {
        package: "acme-base".into(),
        phase: Some(BlueprintPhase::Installing),
        version: Some("2.0.0".into()),
    }];
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Pending);
    assert_eq!(
        world.step("Dependencies"),
        (
            "InProgress".into(),
            "waiting for acme-base (Installing)".into()
        )
    );
    assert!(world.csvs.is_empty());

    world.dependencies[0].phase = Some(BlueprintPhase::Succeeded);
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Installing);
    assert_eq!(
        world.step("Dependencies"),
        ("Done".into(), "acme-base 2.0.0 Succeeded".into())
    );
}

#[test]
fn unsafe_crds_block_the_plan_without_starting_the_clock() {
    let mut world = World::installed(&["1.0.0"]);
    world.subscribe_to("1.1.0");
    let violation = |namespace: &str, name: &str| windlass_bundle::crd::safety::Violation {
        crd: "databases.acme.windlass.dev".into(),
        kind: windlass_bundle::crd::safety::ViolationKind::InvalidExistingObject,
        object_kind: Some("Database".into()),
        object: Some(name.into()),
        version: Some("v1".into()),
        field: Some("spec.replicas".into()),
        message: "must be at most 9".into(),
        verdict: windlass_bundle::crd::safety::Verdict::Blocks,
        ratcheted: false,
        namespace: Some(namespace.into()),
        old: None,
        new: None,
    };
    // The reader is team-a: team-b's object is counted, never named.
    world.validation =
        Validation::UnsafeCrds(windlass_bundle::crd::safety::Assessment::for_viewer(
            vec![
                violation("team-a", "team-a/orders"),
                violation("team-b", "team-b/payroll"),
            ],
            windlass_bundle::crd::safety::Viewer::Namespace("team-a"),
        ));
    let blocked = world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Pending);
    let (status, message) = world.step("CRDs");
    assert_eq!(status, "Blocked");
    assert!(
        message.contains("team-a/orders") && message.contains("spec.replicas"),
        "{message}"
    );
    assert!(
        !message.contains("team-b") && !message.contains("payroll"),
        "another namespace leaks: {message}"
    );
    assert!(
        message.contains("1 object outside your namespace"),
        "{message}"
    );
    assert!(world.condition_is(
        "CRDUpgradeSafe",
        ConditionStatus::False,
        "InvalidExistingObject"
    ));
    assert_eq!(blocked.action, Action::Record, "nothing is applied");
    assert_eq!(
        world.status.version.as_deref(),
        Some("1.0.0"),
        "1.0.0 keeps running"
    );
    assert_eq!(world.record(2).started_time, None);

    // Long after, once the object is fixed, the upgrade goes ahead with a fresh deadline.
    world.tick(3600);
    world.validation = Validation::Ready {
        kept_crds: vec![],
        verified_by: vec![],
        image_rewrites: vec![],
        withdrawn: None,
        findings: Vec::new(),
    };
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Installing);
    assert!(world.condition_is(
        "CRDUpgradeSafe",
        ConditionStatus::True,
        reasons::blueprint::SAFE
    ));
}

const TAMPERED: &str = "revision Secret team-a/acme-db.r2 fails its seal";

/// 1.0.0 installed, 1.1.0 wanted, and 1.1.0's stored content fails its seal.
fn upgrade_to_tampered_content() -> World {
    let mut world = World::installed(&["1.0.0"]);
    world.subscribe_to("1.1.0");
    world.validation = Validation::Untrusted(Refusal {
        reason: windlass_api::names::reasons::revision::TAMPERED,
        message: TAMPERED.into(),
    });
    world
}

#[test]
fn a_blocked_step_is_told_once_and_a_step_that_goes_well_not_at_all() {
    let mut world = upgrade_to_tampered_content();
    let mut told = Vec::new();
    for _ in 0..6 {
        told.extend(world.reconcile().notes);
    }
    let blocked: Vec<_> = told.iter().filter(|n| n.reason == "StepBlocked").collect();
    assert_eq!(blocked.len(), 1, "{told:?}");
    assert!(blocked[0].message.contains(TAMPERED), "{:?}", blocked[0]);
    assert!(
        told.iter()
            .all(|n| !n.reason.starts_with("Step") || n.reason == "StepBlocked"),
        "{told:?}"
    );
}

#[test]
fn tampered_content_is_never_applied_and_never_rolled_back_from() {
    // Before the revision started: held, not failed (a failure could trigger a rollback).
    let mut world = upgrade_to_tampered_content();
    let held = world.settle();
    assert_eq!(held.action, Action::Record, "nothing is applied");
    assert_eq!(world.phase(), BlueprintPhase::Pending);
    assert!(world.condition_is("ContentTrusted", ConditionStatus::False, "RevisionTampered"));
    assert_eq!(world.step("CRDs").0, "Blocked");
    assert!(world.step("CRDs").1.contains(TAMPERED));
    assert_eq!(world.record(2).started_time, None);
    assert_eq!(world.status.version.as_deref(), Some("1.0.0"));

    // Once the Secret is stored again from the catalog, the upgrade goes ahead.
    world.validation = Validation::Ready {
        kept_crds: vec![],
        verified_by: vec![],
        image_rewrites: vec![],
        withdrawn: None,
        findings: Vec::new(),
    };
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Installing);
    assert!(
        !world
            .status
            .conditions
            .iter()
            .any(|c| c.type_ == "ContentTrusted"),
        "the condition goes once the content checks"
    );
}

#[test]
fn tampered_content_of_a_running_revision_is_not_re_applied() {
    let mut world = World::installed(&["1.0.0"]);
    world.validation = Validation::Untrusted(Refusal {
        reason: windlass_api::names::reasons::revision::TAMPERED,
        message: "fails its seal".into(),
    });
    let decision = world.reconcile();
    assert_eq!(decision.action, Action::Record, "nothing is re-applied");
    assert!(world.condition_is("ContentTrusted", ConditionStatus::False, "RevisionTampered"));
    assert_eq!(world.status.version.as_deref(), Some("1.0.0"));
}

#[test]
fn unavailable_content_waits_and_an_invalid_bundle_fails_before_applying() {
    let mut world = World::new();
    world.validation = Validation::Unavailable("catalog builtin is not served".into());
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Pending);
    assert!(
        world
            .step("CRDs")
            .1
            .contains("catalog builtin is not served")
    );

    world.validation =
        Validation::Invalid("policy/v1beta1 PodDisruptionBudget: empty selector".into());
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Failed);
    assert_eq!(world.step("CRDs").0, "Failed");
    assert!(world.csvs.is_empty());
}

#[test]
fn a_new_target_supersedes_an_unfinished_revision() {
    let mut world = World::installed(&["1.0.0"]);
    world.subscribe_to("1.0.1");
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Installing);
    world.subscribe_to("1.1.0");
    let applying = {
        world.reconcile();
        world.reconcile()
    };
    assert_eq!(world.record(2).outcome, RevisionOutcome::Superseded);
    assert!(
        world
            .record(2)
            .reason
            .starts_with("superseded by revision 3")
    );
    let Action::Apply(plan) = &applying.action else {
        panic!("expected an apply")
    };
    assert_eq!(
        plan.supersedes.as_deref(),
        Some("acme-db.v1.0.1"),
        "the newest applied CSV"
    );
    assert_eq!(
        plan.delete_csvs,
        ["acme-db.v1.0.0"],
        "older CSVs hand over nothing"
    );
    assert_eq!(world.spec.old_version.as_deref(), Some("1.0.0"));
}

#[test]
fn a_status_from_an_older_revision_never_completes_a_newer_one() {
    let mut world = World::installed(&["1.0.0"]);
    // Same CSV, new settings: a new revision of the same CSV name.
    world
        .spec
        .config
        .node_selector
        .insert("disk".into(), "ssd".into());
    world.generation += 1;
    world.settle();
    assert_eq!(
        world.record(2).reason,
        "reinstall 1.0.0: the install settings changed"
    );
    assert_eq!(
        world.phase(),
        BlueprintPhase::Installing,
        "the old Succeeded does not count"
    );
    world.csv_reports("1.0.0", CsvPhase::Succeeded);
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Succeeded);
}

#[test]
fn bookkeeping_that_did_not_land_is_redone_first() {
    let mut world = World::installed(&["1.0.0"]);
    world.subscribe_to("1.1.0");
    let recorded = world.decide_with(&Facts::default());
    // The status write happened; the spec patch did not (killed, or a conflict).
    world.status = recorded.status.clone();
    let redo = world.decide_with(&Facts::default());
    assert_eq!(redo.action, Action::Record);
    assert_eq!(redo.bookkeeping, recorded.bookkeeping);
    assert_eq!(
        redo.status.history, recorded.status.history,
        "no second revision"
    );
}

#[test]
fn history_and_revision_secrets_are_pruned_to_the_limit() {
    let mut world = World::new();
    world.spec.history_limit = Some(2);
    let mut world = {
        world.settle();
        world.csv_reports("1.0.0", CsvPhase::Succeeded);
        world.settle();
        world
    };
    for (old, new) in [("1.0.0", "1.0.1"), ("1.0.1", "1.1.0")] {
        world.subscribe_to(new);
        world.settle();
        world.csv_reports(new, CsvPhase::Succeeded);
        world.settle();
        world.csv_replaced(old);
    }
    assert_eq!(
        world.outcomes(),
        [
            (3, "1.1.0".into(), RevisionOutcome::Completed),
            (2, "1.0.1".into(), RevisionOutcome::Completed)
        ]
    );
    let mut stored: Vec<i64> = world.stored.iter().map(|s| s.revision).collect();
    stored.sort();
    assert_eq!(stored, [2, 3]);
}

/// Every phase a Blueprint can be in, and what the plan does there.
#[test]
fn table_of_phases_and_actions() {
    type Setup = fn(&mut World);
    let cases: &[(&str, Setup, BlueprintPhase, &str)] = &[
        (
            "nothing resolved",
            |w| {
                w.spec.cluster_service_version_name.clear();
                w.spec.bundle = None;
            },
            BlueprintPhase::Pending,
            "record",
        ),
        ("new target", |_| {}, BlueprintPhase::Pending, "record"),
        (
            "waiting for approval",
            |w| {
                w.spec.approval = Approval::Manual;
                w.reconcile();
            },
            BlueprintPhase::RequiresApproval,
            "record",
        ),
        (
            "installing",
            |w| {
                w.settle();
            },
            BlueprintPhase::Installing,
            "apply",
        ),
        (
            "succeeded",
            |w| {
                w.settle();
                w.csv_reports("1.0.0", CsvPhase::Succeeded);
                w.settle();
            },
            BlueprintPhase::Succeeded,
            "apply",
        ),
        (
            "first install failed: nothing to roll back to",
            |w| {
                w.settle();
                w.csv_reports("1.0.0", CsvPhase::Failed);
                w.settle();
            },
            BlueprintPhase::Failed,
            "record",
        ),
        (
            "rolling back",
            |w| {
                *w = World::installed(&["1.0.0"]);
                w.subscribe_to("1.0.1");
                w.settle();
                w.csv_reports("1.0.1", CsvPhase::Failed);
                w.settle();
            },
            BlueprintPhase::RollingBack,
            "apply",
        ),
    ];
    for (name, setup, phase, action) in cases {
        let mut world = World::new();
        setup(&mut world);
        let decision = world.reconcile();
        assert_eq!(world.phase(), *phase, "{name}");
        let got = match decision.action {
            Action::Record => "record",
            Action::Apply(_) => "apply",
            Action::Check(_) => "check",
        };
        assert_eq!(got, *action, "{name}");
    }
}

#[test]
fn a_signature_refusal_holds_the_install_and_the_keys_that_signed_are_recorded_once_it_runs() {
    let mut world = World::installed(&["1.0.0"]);
    world.subscribe_to("1.1.0");
    world.validation = Validation::Untrusted(Refusal {
        reason: windlass_api::names::reasons::revision::SIGNATURE_REFUSED,
        message: "bundle image r@sha256:1 is refused by the trust policy: needs key p/a".into(),
    });
    let held = world.settle();
    assert_eq!(held.action, Action::Record, "nothing is applied");
    assert_eq!(world.phase(), BlueprintPhase::Pending);
    assert!(world.condition_is("ContentTrusted", ConditionStatus::False, "SignatureRefused"));
    assert_eq!(world.record(2).started_time, None);

    // Signed now: it runs, the refusal is cleared and history names the keys.
    world.validation = Validation::Ready {
        kept_crds: vec![],
        verified_by: vec!["p/a".into()],
        image_rewrites: vec![],
        withdrawn: None,
        findings: Vec::new(),
    };
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Installing);
    assert!(
        !world
            .status
            .conditions
            .iter()
            .any(|c| c.type_ == "ContentTrusted")
    );
    assert_eq!(world.record(2).verified_by, ["p/a"]);
    assert!(world.record(1).verified_by.is_empty());
}

#[test]
fn the_images_taken_from_mirrors_are_recorded_on_the_revision_once_it_runs() {
    let mut world = World::installed(&["1.0.0"]);
    world.subscribe_to("1.1.0");
    let rewrites = vec![
        windlass_api::ImageRewrite {
            image: "quay.io/acme/db-bundle@sha256:1".into(),
            mirror: "registry.site/acme/db-bundle@sha256:1".into(),
            mirror_set: "site".into(),
        },
        windlass_api::ImageRewrite {
            image: "quay.io/acme/db-operator@sha256:2".into(),
            mirror: "registry.site/acme/db-operator@sha256:2".into(),
            mirror_set: "site".into(),
        },
    ];
    world.validation = Validation::Ready {
        kept_crds: vec![],
        verified_by: vec![],
        image_rewrites: rewrites.clone(),
        withdrawn: None,
        findings: Vec::new(),
    };
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Installing);
    assert_eq!(world.record(2).image_rewrites, rewrites);
    assert!(
        world.record(1).image_rewrites.is_empty(),
        "the earlier revision keeps its own"
    );
    // Content read again later says the same; the record is written once, when it starts.
    world.validation = Validation::Ready {
        kept_crds: vec![],
        verified_by: vec![],
        image_rewrites: vec![],
        withdrawn: None,
        findings: Vec::new(),
    };
    world.settle();
    assert_eq!(world.record(2).image_rewrites, rewrites);
}
