//! The operands around an upgrade: snapshotted before it applies, put back after a rollback,
//! and a rollback rehearsed while it runs.

use super::*;
use windlass_api::names::{conditions, reasons};

#[test]
fn an_upgrade_is_snapshotted_before_it_applies_and_a_first_install_is_not() {
    let mut world = World::installed(&["1.0.0"]);
    assert!(world.operand_steps.is_empty(), "nothing ran before 1.0.0");
    world.subscribe_to("1.1.0");
    let decision = world.reconcile();
    assert!(
        matches!(decision.action, Action::Record),
        "records revision 2 first"
    );
    let applying = world.reconcile();
    assert!(
        matches!(applying.action, Action::Apply(_)),
        "{:?}",
        applying.action
    );
    assert_eq!(
        world.operand_steps,
        [Need::Snapshot {
            revision: 2,
            base: 1
        }],
        "the snapshot comes before the apply, of what revision 1 installed"
    );
    assert!(world.condition_is(
        conditions::blueprint::OPERANDS_SNAPSHOTTED,
        ConditionStatus::True,
        reasons::blueprint::SNAPSHOT_TAKEN
    ));
    // Once it runs, it is not taken again.
    world.reconcile();
    assert_eq!(world.operand_steps.len(), 1);
}

#[test]
fn a_snapshot_that_cannot_be_kept_holds_the_upgrade_before_anything_applies() {
    let mut world = World::installed(&["1.0.0"]);
    world.snapshot = Err(Refusal {
        reason: reasons::blueprint::SNAPSHOT_TOO_LARGE,
        message: "the snapshot of 90000 custom resources is too large".into(),
    });
    world.subscribe_to("1.1.0");
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Pending);
    assert!(
        world.record(2).started_time.is_none(),
        "nothing of 1.1.0 applied"
    );
    assert!(world.condition_is(
        conditions::blueprint::OPERANDS_SNAPSHOTTED,
        ConditionStatus::False,
        reasons::blueprint::SNAPSHOT_TOO_LARGE
    ));
    assert!(
        world.csvs.iter().all(|c| c.name != csv("1.1.0")),
        "no CSV of 1.1.0"
    );
    // An admin's choice (the reconciler reports the skip as a snapshot decision).
    world.snapshot = Ok(Snapshotted {
        reason: reasons::blueprint::SNAPSHOT_SKIPPED,
        message: "goes ahead without".into(),
    });
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Installing);
    assert!(world.condition_is(
        conditions::blueprint::OPERANDS_SNAPSHOTTED,
        ConditionStatus::True,
        reasons::blueprint::SNAPSHOT_SKIPPED
    ));
}

#[test]
fn a_rollback_puts_the_operands_back_once_its_csv_runs_and_says_so() {
    let mut world = World::installed(&["1.0.0", "1.0.1"]);
    world.subscribe_to("1.1.1");
    world.settle();
    world.csv_reports("1.1.1", CsvPhase::Failed);
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::RollingBack);
    let restores = |world: &World| {
        world
            .operand_steps
            .iter()
            .filter(|n| matches!(n, Need::RestoreOperands { .. }))
            .count()
    };
    assert_eq!(restores(&world), 0, "not before the old CSV runs");
    world.csv_reports("1.0.1", CsvPhase::Succeeded);
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::RolledBack);
    assert!(
        world.operand_steps.contains(&Need::RestoreOperands {
            revision: 4,
            base: 2
        }),
        "{:?}",
        world.operand_steps
    );
    assert_eq!(restores(&world), 1, "once, as the rollback completes");
    assert!(world.condition_is(
        conditions::blueprint::OPERANDS_RESTORED,
        ConditionStatus::True,
        reasons::blueprint::OPERANDS_RESTORED
    ));
}

#[test]
fn a_restore_that_could_not_complete_is_said_and_the_rollback_still_completes() {
    let mut world = World::installed(&["1.0.0", "1.0.1"]);
    world.restore = Err(Refusal {
        reason: reasons::blueprint::NO_SNAPSHOT,
        message: "no snapshot".into(),
    });
    world.subscribe_to("1.1.1");
    world.settle();
    world.csv_reports("1.1.1", CsvPhase::Failed);
    world.settle();
    world.csv_reports("1.0.1", CsvPhase::Succeeded);
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::RolledBack);
    assert!(world.condition_is(
        conditions::blueprint::OPERANDS_RESTORED,
        ConditionStatus::False,
        reasons::blueprint::NO_SNAPSHOT
    ));
}

#[test]
fn a_completed_upgrade_rehearses_its_rollback_and_a_refused_request_keeps_its_own_words() {
    let mut world = World::installed(&["1.0.0", "1.0.1"]);
    assert!(world.condition_is(
        conditions::blueprint::ROLLBACK_ALLOWED,
        ConditionStatus::True,
        reasons::blueprint::REHEARSAL_PASSED
    ));
    assert!(world.operand_steps.contains(&Need::Rehearse {
        revision: 2,
        base: 1
    }));
    world.rehearsal = Err(Refusal {
        reason: reasons::blueprint::REHEARSAL_FAILED,
        message: "would fail: v1 not served".into(),
    });
    world.settle();
    assert!(world.condition_is(
        conditions::blueprint::ROLLBACK_ALLOWED,
        ConditionStatus::False,
        reasons::blueprint::REHEARSAL_FAILED
    ));
    assert_eq!(
        world.phase(),
        BlueprintPhase::Succeeded,
        "a prediction only"
    );

    // Asked for anyway, refused by the check the rehearsal predicted: its words stand.
    world.rollback_source = Err(Refusal {
        reason: reasons::blueprint::OWNED_APIS_NOT_SERVED,
        message: "v1 is not served".into(),
    });
    world.pin("1.0.0");
    world.settle();
    assert!(world.condition_is(
        conditions::blueprint::ROLLBACK_ALLOWED,
        ConditionStatus::False,
        reasons::blueprint::OWNED_APIS_NOT_SERVED
    ));
}

#[test]
fn an_upgrade_with_findings_waits_until_each_is_accepted_by_name_and_records_them() {
    let mut world = World::installed(&["1.0.0"]);
    let finding = |name: &str| windlass_preview::readiness::Finding {
        name: name.into(),
        kind: windlass_preview::readiness::FindingKind::DisruptionBudget,
        message: format!("{name} allows no disruption"),
    };
    let ready = |findings: Vec<windlass_preview::readiness::Finding>| Validation::Ready {
        kept_crds: Vec::new(),
        verified_by: Vec::new(),
        image_rewrites: Vec::new(),
        withdrawn: None,
        findings,
    };
    world.validation = ready(vec![
        finding("PodDisruptionBudget/team-a/a"),
        finding("MinKubeVersion"),
    ]);
    world.subscribe_to("1.1.0");
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Pending);
    assert!(
        world.record(2).started_time.is_none(),
        "held before anything applies"
    );
    let held = world
        .condition(conditions::blueprint::UPGRADE_READY)
        .unwrap()
        .clone();
    assert_eq!(held.status, ConditionStatus::False);
    assert_eq!(held.reason, reasons::blueprint::FINDINGS_NOT_ACCEPTED);
    assert!(
        held.message.contains("\"PodDisruptionBudget/team-a/a\"")
            && held.message.contains("acceptedFindings"),
        "{}",
        held.message
    );
    // One accepted, the other still holds it.
    world.spec.accepted_findings = vec!["MinKubeVersion".into()];
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Pending);
    world
        .spec
        .accepted_findings
        .push("PodDisruptionBudget/team-a/a".into());
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Installing);
    assert!(world.condition_is(
        conditions::blueprint::UPGRADE_READY,
        ConditionStatus::True,
        reasons::blueprint::UPGRADE_READY
    ));
    assert_eq!(
        world.record(2).accepted_findings,
        ["PodDisruptionBudget/team-a/a", "MinKubeVersion"]
    );
    // A first install is not an upgrade: nothing to be ready for.
    let mut fresh = World::new();
    fresh.validation = ready(vec![finding("MinKubeVersion")]);
    fresh.settle();
    assert_eq!(fresh.phase(), BlueprintPhase::Installing);
    assert!(
        fresh
            .condition(conditions::blueprint::UPGRADE_READY)
            .is_none()
    );
}
