//! Failed upgrades, automatic and manual rollback, and the rules that refuse one.

use super::*;
use windlass_api::names::reasons;

/// acme-db 1.1.0 installed, then the upgrade to 1.1.1 applied and its CSV failing.
fn failing_upgrade() -> World {
    let mut world = World::installed(&["1.0.0", "1.1.0"]);
    world.subscribe_to("1.1.1");
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Installing);
    world
}

#[test]
fn a_failed_csv_is_rolled_back_from_the_stored_revision_and_not_retried() {
    let mut world = failing_upgrade();
    world.csv_reports("1.1.1", CsvPhase::Failed);
    let decision = world.reconcile();

    assert_eq!(world.phase(), BlueprintPhase::RollingBack);
    assert_eq!(world.record(3).outcome, RevisionOutcome::Failed);
    let rollback = world.record(4).clone();
    assert_eq!(rollback.restored_from, Some(2));
    assert_eq!(rollback.cluster_service_version_name, "acme-db.v1.1.0");
    assert!(
        rollback
            .reason
            .starts_with("automatic rollback from 1.1.1: acme-db.v1.1.1 Failed"),
        "{}",
        rollback.reason
    );
    let held = world
        .status
        .held_back
        .clone()
        .expect("the failed target is held back");
    assert_eq!(held.cluster_service_version_name, "acme-db.v1.1.1");
    assert_eq!(held.digest, Some(digest("1.1.1")));
    assert_eq!(
        held.generation, world.generation,
        "the bookkeeping patch's own generation"
    );
    assert_eq!(decision.bookkeeping.map(|b| b.revision), Some(4));
    assert!(world.condition_is(
        "RollbackAllowed",
        ConditionStatus::True,
        reasons::blueprint::AUTOMATIC_ROLLBACK
    ));

    // The old CSV comes back from the stored content, taking over from the failed one.
    world.validation = Validation::Ready {
        kept_crds: vec!["databases.acme.windlass.dev".into()],
        verified_by: vec![],
        image_rewrites: vec![],
        withdrawn: None,
        findings: Vec::new(),
    };
    let applying = world.reconcile();
    let Action::Apply(plan) = &applying.action else {
        panic!("expected an apply, got {:?}", applying.action)
    };
    assert_eq!(plan.content.source, Source::Stored { revision: 2 });
    assert_eq!(plan.content.crds, CrdPolicy::KeepLive);
    assert_eq!(plan.supersedes.as_deref(), Some("acme-db.v1.1.1"));
    assert_eq!(
        plan.clear_supersedes,
        ["acme-db.v1.1.1"],
        "no supersedes cycle"
    );
    assert!(world.condition_is(
        "CRDsKept",
        ConditionStatus::True,
        reasons::blueprint::ROLLBACK_KEEPS_NEWER_CRDS
    ));
    assert_eq!(
        world.step("CRDs").1,
        "kept at the newer definition: databases.acme.windlass.dev"
    );

    world.csv_reports("1.1.0", CsvPhase::Succeeded);
    world.settle();
    world.csv_replaced("1.1.1");
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::RolledBack);
    assert_eq!(world.status.version.as_deref(), Some("1.1.0"));
    assert_eq!(
        world.outcomes(),
        [
            (4, "1.1.0".into(), RevisionOutcome::Completed),
            (3, "1.1.1".into(), RevisionOutcome::RolledBack),
            (2, "1.1.0".into(), RevisionOutcome::Completed),
            (1, "1.0.0".into(), RevisionOutcome::Completed),
        ]
    );
    assert!(
        world
            .record(3)
            .reason
            .ends_with("rolled back to 1.1.0 by revision 4")
    );
    assert!(world.condition_is("Ready", ConditionStatus::True, "RolledBack"));

    // The intent is unchanged: the Subscription re-applying the same target retries nothing.
    for _ in 0..3 {
        let steady = world.reconcile();
        assert_eq!(steady.bookkeeping, None);
        assert_eq!(world.phase(), BlueprintPhase::RolledBack);
    }
    assert_eq!(world.status.history.len(), 4);
}

#[test]
fn a_new_digest_retries_the_held_back_target() {
    let mut world = failing_upgrade();
    world.csv_reports("1.1.1", CsvPhase::Failed);
    world.settle();
    world.csv_reports("1.1.0", CsvPhase::Succeeded);
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::RolledBack);

    let mut rebuilt = bundle("1.1.1");
    rebuilt.digest = Some("sha256:fixed".into());
    world.spec.bundle = Some(rebuilt);
    world.generation += 1;
    world.reconcile();
    assert_eq!(
        world.record(5).cluster_service_version_name,
        "acme-db.v1.1.1"
    );
    assert_eq!(world.record(5).digest.as_deref(), Some("sha256:fixed"));
    assert_eq!(world.status.held_back, None);
}

#[test]
fn a_later_change_to_the_blueprint_retries_the_held_back_target() {
    let mut world = failing_upgrade();
    world.csv_reports("1.1.1", CsvPhase::Failed);
    world.settle();
    world.csv_reports("1.1.0", CsvPhase::Succeeded);
    world.settle();

    // Someone changes the Blueprint (a new progress deadline, say): the generation moves.
    world.spec.progress_deadline_seconds = Some(300);
    world.generation += 1;
    world.reconcile();
    let retry = world.record(5);
    assert_eq!(retry.cluster_service_version_name, "acme-db.v1.1.1");
    assert!(retry.reason.starts_with("retry 1.1.1"), "{}", retry.reason);
    let applying = world.settle();
    let Action::Apply(plan) = &applying.action else {
        panic!("expected an apply")
    };
    assert_eq!(plan.supersedes.as_deref(), Some("acme-db.v1.1.0"));
}

#[test]
fn a_missed_deadline_fails_the_revision_even_if_the_csv_never_says_failed() {
    let mut world = failing_upgrade();
    world.csv_reports("1.1.1", CsvPhase::Installing);
    world.tick(59);
    let waiting = world.reconcile();
    assert_eq!(world.phase(), BlueprintPhase::Installing);
    assert!(
        waiting.requeue <= std::time::Duration::from_secs(2),
        "wakes at the deadline"
    );
    world.tick(2);
    world.reconcile();
    assert_eq!(world.record(3).outcome, RevisionOutcome::Failed);
    assert!(
        world.record(3).reason.contains("progress deadline of 60s"),
        "{}",
        world.record(3).reason
    );
    assert_eq!(world.phase(), BlueprintPhase::RollingBack);
}

#[test]
fn without_automatic_rollback_a_failed_upgrade_stays_failed() {
    let mut world = failing_upgrade();
    world.spec.automatic_rollback = Some(false);
    world.csv_reports("1.1.1", CsvPhase::Failed);
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Failed);
    assert_eq!(world.status.history.len(), 3);
    assert_eq!(world.step("ClusterServiceVersion").0, "Failed");
    world.tick(3600);
    let later = world.reconcile();
    assert_eq!(world.phase(), BlueprintPhase::Failed);
    assert_eq!(
        later.action,
        Action::Record,
        "a failed revision is left as it is"
    );
    assert!(later.notes.is_empty());

    // Turning it on later rolls back.
    world.spec.automatic_rollback = Some(true);
    world.generation += 1;
    world.reconcile();
    assert_eq!(world.phase(), BlueprintPhase::RollingBack);
}

#[test]
fn a_rollback_that_fails_is_not_rolled_back_again() {
    let mut world = failing_upgrade();
    world.csv_reports("1.1.1", CsvPhase::Failed);
    world.settle();
    world.csv_reports("1.1.0", CsvPhase::Failed);
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Failed);
    assert_eq!(world.status.history.len(), 4);

    // A rollback that was only slow (past its deadline, then healthy) still lands.
    world.csv_reports("1.1.0", CsvPhase::Succeeded);
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::RolledBack);
    assert_eq!(world.record(3).outcome, RevisionOutcome::RolledBack);
    assert_eq!(world.record(4).outcome, RevisionOutcome::Completed);
}

#[test]
fn a_rollback_is_refused_when_the_kept_crds_no_longer_serve_the_old_apis() {
    let mut world = failing_upgrade();
    world.rollback_source = Err(Refusal {
        reason: reasons::blueprint::OWNED_APIS_NOT_SERVED,
        message: "acme-db.v1.1.0 owns databases.acme.windlass.dev v1alpha1, no longer served"
            .into(),
    });
    world.csv_reports("1.1.1", CsvPhase::Failed);
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Failed);
    assert!(world.condition_is(
        "RollbackAllowed",
        ConditionStatus::False,
        reasons::blueprint::OWNED_APIS_NOT_SERVED
    ));
    assert_eq!(
        world.status.history.len(),
        3,
        "no rollback revision recorded"
    );
}

#[test]
fn a_manual_rollback_within_a_minor_version_restores_the_stored_revision() {
    let mut world = World::installed(&["1.0.0", "1.0.1"]);
    world.pin("1.0.0");
    world.reconcile();
    let rollback = world.record(3).clone();
    assert_eq!(rollback.restored_from, Some(1));
    assert_eq!(rollback.reason, "manual rollback from 1.0.1 to 1.0.0");
    assert!(!rollback.forced);
    assert_eq!(world.phase(), BlueprintPhase::RollingBack);
    assert!(world.condition_is(
        "RollbackAllowed",
        ConditionStatus::True,
        reasons::blueprint::ALLOWED
    ));

    world.settle();
    world.csv_reports("1.0.0", CsvPhase::Succeeded);
    world.settle();
    assert_eq!(
        world.phase(),
        BlueprintPhase::Succeeded,
        "a person's rollback runs what the spec asks for"
    );
    assert_eq!(world.status.version.as_deref(), Some("1.0.0"));
    assert_eq!(
        world.record(2).outcome,
        RevisionOutcome::Completed,
        "a version that Succeeded stays Completed when a person leaves it"
    );
    assert_eq!(world.status.held_back, None);
}

#[test]
fn a_manual_rollback_across_a_minor_version_needs_force_and_is_recorded_forced() {
    let mut world = World::installed(&["1.0.0", "1.1.0"]);
    world.pin("1.0.0");
    let refused = world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Succeeded, "what runs stays");
    assert_eq!(world.status.version.as_deref(), Some("1.1.0"));
    assert!(world.condition_is(
        "RollbackAllowed",
        ConditionStatus::False,
        "RollbackCrossesVersion"
    ));
    assert_eq!(world.status.history.len(), 2);
    assert!(
        matches!(refused.action, Action::Apply(_)),
        "1.1.0 keeps being applied"
    );

    world.spec.force = true;
    world.generation += 1;
    let started = world.reconcile();
    assert!(
        started
            .notes
            .iter()
            .any(|n| n.reason == "RevisionStarted" && n.message.contains("forced")),
        "{:?}",
        started.notes
    );
    let rollback = world.record(3);
    assert!(rollback.forced);
    assert!(
        rollback.reason.contains("crosses a minor version"),
        "{}",
        rollback.reason
    );
    assert!(world.condition_is(
        "RollbackAllowed",
        ConditionStatus::True,
        reasons::blueprint::FORCED
    ));
}

#[test]
fn a_rollback_target_whose_secret_was_pruned_is_refused_clearly() {
    let mut world = World::installed(&["1.0.0", "1.0.1"]);
    world.stored.retain(|s| s.revision != 1);
    world.pin("1.0.0");
    world.settle();
    let condition = world.condition("RollbackAllowed").expect("a refusal");
    assert_eq!(condition.status, ConditionStatus::False);
    assert_eq!(
        condition.reason,
        reasons::blueprint::REVISION_CONTENT_MISSING
    );
    assert!(
        condition.message.contains("db.r1 was pruned or deleted"),
        "{}",
        condition.message
    );
    assert_eq!(world.phase(), BlueprintPhase::Succeeded);

    // Pointing the target back at what runs settles the refusal.
    world.pin("1.0.1");
    world.settle();
    assert!(world.condition("RollbackAllowed").is_none());
}

#[test]
fn a_target_neither_resolved_nor_in_history_is_refused() {
    let mut world = World::installed(&["1.0.0"]);
    world.pin("0.9.0");
    world.settle();
    assert!(world.condition_is(
        "RollbackAllowed",
        ConditionStatus::False,
        reasons::blueprint::ROLLBACK_TARGET_NOT_IN_HISTORY
    ));
    assert_eq!(world.phase(), BlueprintPhase::Succeeded);
}

#[test]
fn a_failed_revision_whose_csv_recovers_completes() {
    let mut world = World::new();
    world.settle();
    world.csv_reports("1.0.0", CsvPhase::Failed);
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Failed);
    world.csv_reports("1.0.0", CsvPhase::Succeeded);
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Succeeded);
    assert!(world.record(1).reason.contains("recovered"));
}
