//! Approval binds a plan: what waits, what a digest or a bare `approved: true` lets through,
//! and what asks again.

use windlass_api::{
    condition::ConditionStatus,
    config::{Approval, OperatorConfig},
    names::{conditions, reasons},
};
use windlass_preview::PlanKind;

use super::*;

/// acme-db 1.0.0 installed under Manual approval, approved by digest.
fn manual_installed() -> World {
    let mut world = World::new();
    world.spec.approval = Approval::Manual;
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::RequiresApproval);
    world.approve_shown();
    world.settle();
    world.csv_reports("1.0.0", CsvPhase::Succeeded);
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Succeeded);
    world
}

impl World {
    fn shown(&self) -> PlanPreview {
        self.status.preview.clone().expect("a plan is shown")
    }

    /// What `windlass approve` does: name the digest shown.
    fn approve_shown(&mut self) {
        self.spec.approved = true;
        self.spec.approved_plan = Some(self.shown().digest);
        self.generation += 1;
    }

    fn plan_approved(&self) -> Option<(ConditionStatus, String, String)> {
        self.condition(conditions::blueprint::PLAN_APPROVED)
            .map(|c| (c.status, c.reason.clone(), c.message.clone()))
    }
}

#[test]
fn a_manual_upgrade_shows_its_plan_and_runs_once_that_plan_is_approved_by_digest() {
    let mut world = manual_installed();
    // Asked for on every look while it waits (the reconciler shows the stored plan again).
    assert!(!world.previews.is_empty());
    assert!(
        world
            .previews
            .iter()
            .all(|p| p.kind == PlanKind::Install && p.apply.content.revision == 1)
    );
    let first = world.record(1).clone();
    assert_eq!(first.plan.as_deref(), Some(world.plan_digest(1).as_str()));
    assert_eq!(first.approved_plan, first.plan, "the approval is recorded");

    world.subscribe_to("1.1.0");
    let waiting = world.settle();
    assert_eq!(world.phase(), BlueprintPhase::RequiresApproval);
    assert_eq!(waiting.action, Action::Record, "nothing applied");
    let shown = world.shown();
    assert_eq!(shown.revision, 2);
    assert_eq!(shown.digest, world.plan_digest(2));
    let request = world.previews.last().unwrap();
    assert_eq!(request.kind, PlanKind::Upgrade);
    assert_eq!(
        request.running.as_ref().map(|r| r.version.as_str()),
        Some("1.0.0")
    );
    assert_eq!(request.previous, Some(1));
    assert!(!request.drift);
    let (status, reason, message) = world.plan_approved().unwrap();
    assert_eq!(
        (status, reason.as_str()),
        (
            ConditionStatus::False,
            reasons::blueprint::AWAITING_APPROVAL
        )
    );
    assert!(
        message.contains(&shown.digest) && message.contains("windlass approve db"),
        "{message}"
    );

    world.approve_shown();
    let applied = world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Installing);
    assert!(matches!(applied.action, Action::Apply(_)));
    assert_eq!(
        world.record(2).approved_plan.as_deref(),
        Some(shown.digest.as_str())
    );
    let (status, reason, _) = world.plan_approved().unwrap();
    assert_eq!(
        (status, reason.as_str()),
        (ConditionStatus::True, reasons::blueprint::PLAN_APPROVED)
    );
}

#[test]
fn approved_true_binds_the_plan_shown_and_a_plan_that_changes_after_it_waits_again() {
    let mut world = manual_installed();
    world.subscribe_to("1.1.0");
    world.settle();
    let shown = world.shown();
    // The person approves what they saw; before the controller acts, a policy changes whom
    // the install runs as, which changes the plan.
    world.spec.approved = true;
    world.generation += 1;
    world.placement = "as another installer".into();
    world.settle();
    assert_eq!(
        world.phase(),
        BlueprintPhase::RequiresApproval,
        "not applied"
    );
    let now = world.shown();
    assert_ne!(now.digest, shown.digest);
    assert_eq!(
        now.approved.as_deref(),
        Some(shown.digest.as_str()),
        "the approval stays bound"
    );
    let (status, reason, message) = world.plan_approved().unwrap();
    assert_eq!(
        (status, reason.as_str()),
        (ConditionStatus::False, reasons::blueprint::PLAN_CHANGED)
    );
    assert!(
        message.contains(&shown.digest) && message.contains(&now.digest),
        "{message}"
    );
    // Still waiting however often it looks again: the bare approval was for the other plan.
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::RequiresApproval);

    world.approve_shown();
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Installing);
    assert_eq!(
        world.record(2).approved_plan.as_deref(),
        Some(now.digest.as_str())
    );
}

#[test]
fn approved_true_lets_the_plan_shown_run_when_it_did_not_change() {
    let mut world = manual_installed();
    world.subscribe_to("1.1.0");
    world.settle();
    let shown = world.shown();
    world.spec.approved = true;
    world.generation += 1;
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Installing);
    assert_eq!(world.record(2).approved_plan, Some(shown.digest));
}

#[test]
fn an_approved_plan_naming_another_digest_approves_nothing() {
    let mut world = manual_installed();
    world.subscribe_to("1.1.0");
    world.settle();
    world.spec.approved_plan = Some("sha256:something-else".into());
    world.generation += 1;
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::RequiresApproval);
    let (_, reason, message) = world.plan_approved().unwrap();
    assert_eq!(reason, reasons::blueprint::PLAN_CHANGED);
    assert!(
        message.contains("spec.approvedPlan names sha256:something-else"),
        "{message}"
    );
}

#[test]
fn a_config_or_target_change_under_manual_approval_is_a_new_plan_that_waits() {
    for change in ["config", "targets"] {
        let mut world = manual_installed();
        match change {
            "config" => {
                world.spec.config = serde_json::from_value::<OperatorConfig>(
                    serde_json::json!({"env": [{"name": "LOG_LEVEL", "value": "debug"}]}),
                )
                .unwrap();
            }
            _ => world.spec.target_namespaces = Some(vec!["team-a".into(), "team-b".into()]),
        }
        world.generation += 1;
        let waiting = world.settle();
        assert_eq!(world.phase(), BlueprintPhase::RequiresApproval, "{change}");
        assert_eq!(
            waiting.action,
            Action::Record,
            "{change}: nothing re-applied"
        );
        assert_eq!(
            world.record(2).reason,
            "reinstall 1.0.0: the install settings changed"
        );
        assert_eq!(
            world.previews.last().unwrap().kind,
            PlanKind::Reinstall,
            "{change}"
        );
        assert!(
            !world.spec.approved && world.spec.approved_plan.is_none(),
            "{change}: reset"
        );
        world.approve_shown();
        world.settle();
        assert_eq!(world.phase(), BlueprintPhase::Installing, "{change}");
    }
}

#[test]
fn a_republished_bundle_after_an_approval_asks_again() {
    let mut world = manual_installed();
    let mut bundle = bundle("1.0.0");
    bundle.digest = Some("sha256:republished".into());
    world.spec.bundle = Some(bundle);
    world.generation += 1;
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::RequiresApproval);
    assert_eq!(
        world.record(2).reason,
        "reinstall 1.0.0: the bundle's digest changed"
    );
    assert_ne!(world.shown().digest, world.record(1).plan.clone().unwrap());
}

#[test]
fn a_new_revision_that_changes_nothing_that_runs_needs_no_approval() {
    let mut world = manual_installed();
    let original = world.spec.config.clone();
    world.spec.config =
        serde_json::from_value(serde_json::json!({"env": [{"name": "X", "value": "1"}]})).unwrap();
    world.generation += 1;
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::RequiresApproval);
    // Changed back before anyone approved: the plan is what runs already.
    world.spec.config = original;
    world.generation += 1;
    world.settle();
    assert_ne!(world.phase(), BlueprintPhase::RequiresApproval);
    assert!(world.plan_approved().is_none());
}

#[test]
fn a_manual_rollback_under_manual_approval_waits_with_the_edits_it_overwrites_and_an_automatic_one_does_not()
 {
    let mut world = manual_installed();
    world.subscribe_to("1.0.1");
    world.settle();
    world.approve_shown();
    world.settle();
    world.csv_reports("1.0.1", CsvPhase::Succeeded);
    world.settle();
    world.csv_replaced("1.0.0");
    assert_eq!(world.phase(), BlueprintPhase::Succeeded);

    world.pin("1.0.0");
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::RequiresApproval);
    let request = world.previews.last().unwrap();
    assert_eq!(request.kind, PlanKind::Rollback);
    assert!(request.drift, "a rollback lists out-of-band edits");
    assert_eq!(
        request.running.as_ref().map(|r| r.version.as_str()),
        Some("1.0.1")
    );
    world.approve_shown();
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::RollingBack);

    // An upgrade that fails rolls back at once, whatever the approval mode.
    let mut world = manual_installed();
    world.subscribe_to("1.0.1");
    world.settle();
    world.approve_shown();
    world.settle();
    world.csv_reports("1.0.1", CsvPhase::Failed);
    let previews = world.previews.len();
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::RollingBack);
    assert_eq!(world.previews.len(), previews, "no preview held it up");
}

#[test]
fn automatic_approval_previews_only_on_request_and_never_waits() {
    let mut world = World::installed(&["1.0.0"]);
    assert!(world.previews.is_empty(), "no preview asked for");
    assert!(world.status.preview.is_none());
    assert_eq!(
        world.record(1).plan,
        Some(world.plan_digest(1)),
        "the digest is recorded anyway"
    );
    assert_eq!(world.record(1).approved_plan, None);

    world.spec.preview = true;
    world.subscribe_to("1.1.0");
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Installing);
    assert!(world.previews.iter().all(|p| p.apply.content.revision == 2));
    assert_eq!(world.shown().digest, world.plan_digest(2));
    assert!(world.plan_approved().is_none());
}

#[test]
fn a_blocked_upgrade_under_manual_approval_shows_its_plan_and_why() {
    let mut world = manual_installed();
    world.validation = Validation::UnsafeCrds(windlass_bundle::crd::safety::Assessment::default());
    world.subscribe_to("1.1.0");
    world.settle();
    assert_eq!(world.phase(), BlueprintPhase::Pending);
    assert_eq!(
        world.shown().revision,
        2,
        "the plan with its CRD verdict is shown"
    );
    assert!(world.condition_is(
        conditions::blueprint::CRD_UPGRADE_SAFE,
        ConditionStatus::False,
        "Unsafe"
    ));
}
