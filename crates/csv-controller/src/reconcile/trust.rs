//! Which CSVs are acted on: only those a windlass Blueprint applied, as its seal proves. A
//! CSV's spec grants RBAC (cluster-wide with `clusterPermissions`) and runs Deployments, so a
//! namespace user who may write CSVs must not get anything from one they made or edited.

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use kube::{Resource, ResourceExt, runtime::controller::Action};
use windlass_api::{
    ClusterServiceVersion, ClusterServiceVersionStatus, CsvPhase,
    condition::{Condition, ConditionStatus, set_condition},
    names::{conditions, reasons, seal},
};
use windlass_kit::Notice;
use windlass_revisions::{SealError, SealKey};

use super::{Context, Error, write_status};

/// Whether `csv` carries the seal windlass wrote for exactly its spec.
pub(super) fn verify_seal(csv: &ClusterServiceVersion, key: &SealKey) -> Result<(), SealError> {
    let spec = serde_json::to_value(&csv.spec).unwrap_or_default();
    windlass_revisions::csv::verify_spec(
        key,
        &csv.namespace().unwrap_or_default(),
        &csv.name_any(),
        &spec,
        csv.annotations().get(seal::ANNOTATION).map(String::as_str),
    )
}

/// The `ContentTrusted=True` condition of a CSV whose seal checks.
pub(super) fn trusted(generation: Option<i64>) -> Condition {
    Condition::new(
        conditions::csv::CONTENT_TRUSTED,
        ConditionStatus::True,
        reasons::csv::SEALED,
        "applied by a windlass Blueprint, unchanged since",
    )
    .observed(generation)
}

/// Why a CSV whose seal does not check is not acted on: `(reason, message)`.
pub(super) fn seal_refusal(
    csv: &ClusterServiceVersion,
    error: &SealError,
) -> (&'static str, String) {
    let name = csv.name_any();
    let namespace = csv.namespace().unwrap_or_default();
    match error {
        SealError::Missing => (
            reasons::csv::NOT_SEALED,
            format!(
                "ClusterServiceVersion {namespace}/{name} was not applied by windlass (it carries \
                 no {} annotation); windlass acts only on the CSVs its Blueprints apply, so \
                 nothing of it is created. Install operators through a Subscription.",
                seal::ANNOTATION
            ),
        ),
        _ => (
            reasons::csv::SEAL_MISMATCH,
            format!(
                "the spec of ClusterServiceVersion {namespace}/{name} was changed after windlass \
                 applied it ({error}); nothing more of it is created until its Blueprint applies \
                 it again"
            ),
        ),
    }
}

/// Records why `csv` is not acted on and creates nothing. A CSV windlass never acted on is
/// Failed; one it ran keeps its phase (its Blueprint applies it again, and what it created
/// stays as windlass made it).
pub(super) async fn refuse_untrusted(
    csv: &ClusterServiceVersion,
    ctx: &Context,
    status: &ClusterServiceVersionStatus,
    (reason, message): (&'static str, String),
    now: Timestamp,
) -> Result<Action, Error> {
    let mut new_status = status.clone();
    if new_status.phase.is_none() {
        new_status.phase = Some(CsvPhase::Failed);
        new_status.reason = reason.to_string();
        new_status.message = message.clone();
        new_status.last_transition_time = Some(Time(now));
    }
    new_status.observed_generation = csv.metadata.generation;
    let untrusted = Condition::new(
        conditions::csv::CONTENT_TRUSTED,
        ConditionStatus::False,
        reason,
        message.clone(),
    )
    .observed(csv.metadata.generation);
    let changed = set_condition(&mut new_status.conditions, untrusted, now);
    set_condition(
        &mut new_status.conditions,
        Condition::new(
            conditions::csv::READY,
            ConditionStatus::False,
            reason,
            message.clone(),
        )
        .observed(csv.metadata.generation),
        now,
    );
    let held = write_status(ctx, csv, status, &new_status, false).await?;
    if changed {
        ctx.shell
            .events
            .publish(&csv.object_ref(&()), &Notice::warning(reason, message))
            .await;
    }
    // A new spec (the Blueprint applying it again) is a change and comes back here.
    Ok(held.map_or_else(Action::await_change, Action::requeue))
}
