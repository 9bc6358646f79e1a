//! A write the API server refuses in the middle of a reconcile: the shell stops there, records
//! nothing it did not do, and the error policy retries (at once for a conflict, later
//! otherwise); the retry carries on from what the cluster holds.

use std::{sync::Arc, time::Duration};

use kube::runtime::controller::Action;
use windlass_api::names::steps;
use windlass_blueprint_controller::Error;
use windlass_kit::{ReconcileError, Stage, runner};

use crate::support::*;

const TIMEOUT: &str = "Internal error occurred: etcdserver: request timed out";

/// What the controller's error policy makes of `error`.
fn retry(harness: &Harness, error: &Error) -> Action {
    runner::error_policy(Arc::new(harness.blueprint()), error, harness.ctx.clone())
}

/// Given a recorded revision, when the API server fails the CSV apply with a 500, then the
/// reconcile fails in the apply stage and is retried after the usual backoff, the status says
/// the objects step is blocked and retrying (nothing claims the CSV done), and the retry
/// applies only the CSV and the status.
#[tokio::test]
async fn a_failed_csv_apply_stops_the_apply_and_the_status_says_it_is_retrying() {
    let harness = Harness::fresh_install();
    harness.reconcile().await.expect("recording the revision");
    harness.api.take_requests();
    harness.api.fail_once("PATCH", CSV_PATH, 500, TIMEOUT);

    let error = harness
        .reconcile()
        .await
        .expect_err("the CSV apply fails the reconcile");
    assert_eq!(error.stage(), Stage::Apply);
    assert!(!error.is_conflict());
    assert!(error.to_string().contains(CSV_NAME), "{error}");
    assert_eq!(
        retry(&harness, &error),
        Action::requeue(Duration::from_secs(10))
    );

    let requests = harness.api.take_requests();
    let writes = writes_of(&requests);
    assert_eq!(
        routes(writes.iter().copied()),
        [
            ("PATCH", SECRET_PATH),
            ("PATCH", CRD_PATH),
            ("PATCH", CONFIG_MAP_PATH),
            ("PATCH", CSV_PATH),
            ("PATCH", STATUS_PATH),
        ],
        "nothing after the refused CSV but the status saying so"
    );
    assert_eq!(writes[3].code, 500);
    assert!(
        harness
            .api
            .object(
                "windlass.dev/v1alpha1",
                "ClusterServiceVersion",
                Some(NAMESPACE),
                CSV_NAME
            )
            .is_none()
    );

    let status = &writes[4].body["status"];
    let objects = plan_step(status, steps::OBJECTS);
    assert_eq!(objects["status"], "Blocked", "{status:#}");
    assert!(
        objects["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("retrying: ") && m.contains(TIMEOUT)),
        "{objects:#}"
    );
    assert_ne!(
        plan_step(status, steps::CLUSTER_SERVICE_VERSION)["status"],
        "Done"
    );
    assert_ne!(status["phase"], "Succeeded");
    assert_eq!(status["history"][0]["outcome"], "InProgress");
    // An API error is no lack of permission: the install is not reported forbidden.
    let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
    assert!(
        !conditions
            .iter()
            .any(|c| c["reason"] == windlass_api::names::reasons::policy::INSTALL_FORBIDDEN),
        "{conditions:#?}"
    );

    // The retry reads the stored revision back instead of storing it again, finds the CRD and
    // the ConfigMap as applied, and applies the CSV.
    harness.reconcile().await.expect("the retry succeeds");
    let requests = harness.api.take_requests();
    let retried = writes_of(&requests);
    assert_eq!(
        routes(retried.iter().copied()),
        [("PATCH", CSV_PATH), ("PATCH", STATUS_PATH)]
    );
    let status = &retried[1].body["status"];
    assert_ne!(
        plan_step(status, steps::OBJECTS)["status"],
        "Blocked",
        "{status:#}"
    );
    assert_eq!(status["phase"], "Installing");
}

/// Given a recorded revision, when the CSV apply conflicts (409), then the error policy
/// retries at once.
#[tokio::test]
async fn a_conflicting_csv_apply_is_retried_at_once() {
    let harness = Harness::fresh_install();
    harness.reconcile().await.expect("recording the revision");
    harness.api.fail_once(
        "PATCH",
        CSV_PATH,
        409,
        "Operation cannot be fulfilled on clusterserviceversions.windlass.dev \"acme-db.v1.0.0\": \
         the object has been modified; please apply your changes to the latest version and try again",
    );
    let error = harness
        .reconcile()
        .await
        .expect_err("the conflict fails the reconcile");
    assert!(error.is_conflict(), "{error}");
    assert_eq!(
        retry(&harness, &error),
        Action::requeue(Duration::from_secs(1))
    );
}

/// Given a recorded revision, when storing its Secret fails, then nothing of the revision is
/// applied and the status is left as it was.
#[tokio::test]
async fn a_failed_revision_secret_write_applies_nothing() {
    let harness = Harness::fresh_install();
    harness.reconcile().await.expect("recording the revision");
    harness.api.take_requests();
    let status_before = harness.blueprint().status;
    harness.api.fail_once("PATCH", SECRET_PATH, 500, TIMEOUT);

    let error = harness
        .reconcile()
        .await
        .expect_err("storing the revision fails");
    assert_eq!(error.stage(), Stage::Apply);
    let requests = harness.api.take_requests();
    assert_eq!(
        routes(writes_of(&requests)),
        [("PATCH", SECRET_PATH)],
        "no object of a revision whose content is not stored, and no status claiming a start"
    );
    assert_eq!(harness.blueprint().status, status_before);
}

/// Given a new Blueprint, when the status write recording revision 1 conflicts, then
/// `spec.revision` is not patched, and the retry records the revision from fresh state.
#[tokio::test]
async fn a_status_write_that_conflicts_leaves_spec_revision_alone() {
    let harness = Harness::fresh_install();
    harness.api.fail_once(
        "PATCH",
        STATUS_PATH,
        409,
        "Operation cannot be fulfilled on blueprints.windlass.dev \"db\": the object has been \
         modified; please apply your changes to the latest version and try again",
    );
    let error = harness
        .reconcile()
        .await
        .expect_err("the status write conflicts");
    assert_eq!(error.stage(), Stage::Report);
    assert_eq!(
        retry(&harness, &error),
        Action::requeue(Duration::from_secs(1))
    );
    let requests = harness.api.take_requests();
    assert_eq!(
        routes(writes_of(&requests)),
        [("PATCH", STATUS_PATH)],
        "no bookkeeping patch without the status that records the revision"
    );
    let blueprint = harness.blueprint();
    assert_eq!(blueprint.spec.revision, 0);
    assert!(blueprint.status.is_none());

    // Decided again from fresh state, the revision is recorded as on a first try.
    harness.reconcile().await.expect("the retry succeeds");
    assert_eq!(harness.blueprint().spec.revision, 1);
}
