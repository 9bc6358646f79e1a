use super::*;

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).unwrap()
}

fn inputs(current: Option<CsvPhase>, health: Option<Health>) -> Inputs<'static> {
    Inputs {
        current,
        current_reason: "",
        new_generation: false,
        successor: None,
        requirements_unmet: None,
        invalid_strategy: None,
        forbidden: None,
        health,
        install_started: Some(at(0)),
        now: at(10),
        deadline: SignedDuration::from_secs(60),
    }
}

#[test]
fn a_new_csv_with_its_requirements_met_goes_install_ready_then_installing() {
    let i = inputs(None, None);
    let d = next(&i);
    assert_eq!(
        (d.phase, d.reason),
        (CsvPhase::InstallReady, reason::ALL_REQUIREMENTS_MET)
    );
    // Applied in the same pass, so the rollout does not wait for InstallReady to be seen.
    assert!(should_apply(&i));
    let mut pending = inputs(Some(CsvPhase::Pending), None);
    assert!(should_apply(&pending));
    pending.requirements_unmet = Some("required CRD x does not exist".into());
    assert!(!should_apply(&pending));
    let d = next(&inputs(
        Some(CsvPhase::InstallReady),
        Some(Health::Progressing("0 of 1".into())),
    ));
    assert_eq!(
        (d.phase, d.reason, d.restart_clock),
        (CsvPhase::Installing, reason::INSTALL_WAITING, true)
    );
    assert_eq!(d.message, "0 of 1");
}

#[test]
fn a_csv_applied_in_the_pass_that_met_its_requirements_skips_install_ready() {
    for current in [None, Some(CsvPhase::Pending)] {
        let d = next(&inputs(
            current,
            Some(Health::Progressing("0 of 1 replicas available".into())),
        ));
        assert_eq!(
            (d.phase, d.reason, d.restart_clock),
            (CsvPhase::Installing, reason::INSTALL_WAITING, true),
            "from {current:?}"
        );
        assert_eq!(d.message, "0 of 1 replicas available");
        let d = next(&inputs(current, Some(Health::Healthy)));
        assert_eq!(
            (d.phase, d.reason),
            (CsvPhase::Succeeded, reason::INSTALL_SUCCEEDED),
            "from {current:?}"
        );
    }
    // Unmet requirements still hold it Pending, whatever a stale health says.
    let mut unmet = inputs(None, Some(Health::Healthy));
    unmet.requirements_unmet = Some("required CRD x does not exist".into());
    assert_eq!(next(&unmet).phase, CsvPhase::Pending);
}

#[test]
fn unmet_requirements_keep_it_pending_with_the_message() {
    let mut i = inputs(None, None);
    i.requirements_unmet = Some("required CRD x does not exist".into());
    let d = next(&i);
    assert_eq!(
        (d.phase, d.reason),
        (CsvPhase::Pending, reason::REQUIREMENTS_NOT_MET)
    );
    assert_eq!(d.message, "required CRD x does not exist");
    assert!(!should_apply(&i));
}

#[test]
fn healthy_deployments_succeed() {
    let d = next(&inputs(Some(CsvPhase::Installing), Some(Health::Healthy)));
    assert_eq!(
        (d.phase, d.reason),
        (CsvPhase::Succeeded, reason::INSTALL_SUCCEEDED)
    );
}

#[test]
fn unhealthy_during_install_waits_for_the_deadline_then_fails() {
    let unhealthy = Some(Health::Unhealthy("pod p is CrashLoopBackOff".into()));
    let d = next(&inputs(Some(CsvPhase::Installing), unhealthy.clone()));
    assert_eq!(d.phase, CsvPhase::Installing);
    let mut late = inputs(Some(CsvPhase::Installing), unhealthy);
    late.now = at(61);
    let d = next(&late);
    assert_eq!(
        (d.phase, d.reason),
        (CsvPhase::Failed, reason::INSTALL_CHECK_FAILED)
    );
    assert!(
        d.message.contains("pod p is CrashLoopBackOff"),
        "{}",
        d.message
    );
    assert!(d.message.contains("60s"), "{}", d.message);
}

#[test]
fn a_succeeded_csv_that_breaks_fails_as_component_unhealthy_and_recovers() {
    let d = next(&inputs(
        Some(CsvPhase::Succeeded),
        Some(Health::Unhealthy("broken".into())),
    ));
    assert_eq!(
        (d.phase, d.reason),
        (CsvPhase::Failed, reason::COMPONENT_UNHEALTHY)
    );
    let mut still = inputs(
        Some(CsvPhase::Failed),
        Some(Health::Unhealthy("broken".into())),
    );
    still.current_reason = reason::COMPONENT_UNHEALTHY;
    assert_eq!(next(&still).reason, reason::COMPONENT_UNHEALTHY);
    let mut healed = inputs(Some(CsvPhase::Failed), Some(Health::Healthy));
    healed.current_reason = reason::COMPONENT_UNHEALTHY;
    assert_eq!(next(&healed).phase, CsvPhase::Succeeded);
}

#[test]
fn a_succeeded_csv_whose_pods_roll_stays_succeeded() {
    let d = next(&inputs(
        Some(CsvPhase::Succeeded),
        Some(Health::Progressing("0 of 1".into())),
    ));
    assert_eq!(d.phase, CsvPhase::Succeeded);
}

#[test]
fn a_changed_spec_restarts_the_install_clock() {
    let mut i = inputs(
        Some(CsvPhase::Succeeded),
        Some(Health::Progressing("rolling".into())),
    );
    i.new_generation = true;
    let d = next(&i);
    assert_eq!((d.phase, d.restart_clock), (CsvPhase::Installing, true));
}

#[test]
fn a_successor_makes_it_replacing_then_deleting_and_stops_applying() {
    let mut i = inputs(Some(CsvPhase::Succeeded), Some(Health::Healthy));
    i.successor = Some(Successor {
        name: "op.v2".into(),
        succeeded: false,
    });
    assert_eq!(next(&i).phase, CsvPhase::Replacing);
    assert!(!should_apply(&i));
    i.successor = Some(Successor {
        name: "op.v2".into(),
        succeeded: true,
    });
    let d = next(&i);
    assert_eq!((d.phase, d.reason), (CsvPhase::Deleting, reason::REPLACED));
    assert_eq!(d.message, "replaced by op.v2");
}

#[test]
fn an_install_check_failure_stays_failed_until_healthy() {
    let mut i = inputs(
        Some(CsvPhase::Failed),
        Some(Health::Progressing("0 of 1".into())),
    );
    i.current_reason = reason::INSTALL_CHECK_FAILED;
    let d = next(&i);
    assert_eq!(d.phase, CsvPhase::Failed);
    // The message keeps saying why it failed on every later reconcile.
    assert!(d.message.contains("progress deadline"), "{}", d.message);
    i.health = Some(Health::Healthy);
    assert_eq!(next(&i).phase, CsvPhase::Succeeded);
}

#[test]
fn a_replacing_csv_whose_successor_went_away_installs_again_with_a_new_clock() {
    let mut i = inputs(
        Some(CsvPhase::Replacing),
        Some(Health::Progressing("0 of 1 updated".into())),
    );
    i.current_reason = reason::BEING_REPLACED;
    i.now = at(3600);
    assert!(should_apply(&i));
    let d = next(&i);
    assert_eq!(
        (d.phase, d.reason, d.restart_clock),
        (CsvPhase::Installing, reason::INSTALL_WAITING, true)
    );
    let d = next(&inputs(Some(CsvPhase::Replacing), Some(Health::Healthy)));
    assert_eq!(d.phase, CsvPhase::Succeeded);
}

#[test]
fn an_install_its_service_account_may_not_make_waits_then_fails_at_the_deadline() {
    let mut i = inputs(Some(CsvPhase::Installing), None);
    i.forbidden =
        Some("roles is forbidden: User \"system:serviceaccount:a:windlass-installer\"".into());
    let d = next(&i);
    assert_eq!(
        (d.phase, d.reason),
        (CsvPhase::Installing, reason::INSTALL_FORBIDDEN)
    );
    assert!(d.message.contains("windlass-installer"));
    i.now = at(61);
    assert_eq!(next(&i).phase, CsvPhase::Failed);
}

#[test]
fn only_entering_installing_from_before_it_is_a_first_step() {
    let installing = decide(CsvPhase::Installing, reason::INSTALL_WAITING, "rollout");
    for before in [None, Some(CsvPhase::Pending), Some(CsvPhase::InstallReady)] {
        assert!(is_first_step(before, &installing), "{before:?}");
    }
    // Already Installing (a change there is wording or a transition), or back from an outcome.
    for before in [
        Some(CsvPhase::Installing),
        Some(CsvPhase::Succeeded),
        Some(CsvPhase::Failed),
    ] {
        assert!(!is_first_step(before, &installing), "{before:?}");
    }
    // Outcomes are never held.
    let succeeded = decide(CsvPhase::Succeeded, reason::INSTALL_SUCCEEDED, "done");
    let failed = decide(CsvPhase::Failed, reason::INSTALL_CHECK_FAILED, "broken");
    assert!(!is_first_step(None, &succeeded));
    assert!(!is_first_step(None, &failed));
}
