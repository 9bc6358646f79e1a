//! What an update must pass before it starts, besides its signatures: no other update still
//! being applied (unless forced), the pre-update readiness report with each finding accepted by
//! name, and the preconditions (components not upgradeable block a minor or major update);
//! and what the ClusterOperators say about the release once it runs.

use k8s_openapi::jiff::Timestamp;
use windlass_api::{
    ClusterVersion, ClusterVersionStatus, Condition, ConditionStatus,
    clusterversion::{DesiredUpdate, ReleaseApproval, UpdateState},
    names::{conditions::cluster_version as types, reasons::cluster_version as reasons},
    set_condition,
};
use windlass_preview::readiness::FindingKind;
use windlass_release::{operators, policy::NotUpgradeable};

use crate::{Context, Loaded, levels, plan_preview, preconditions, readiness, record::joined};

/// Why a new update may not replace the one still being applied, as `oc adm upgrade` refuses
/// one; `None` when nothing is being applied or `force` is set.
pub fn update_in_progress(
    status: &ClusterVersionStatus,
    desired: &DesiredUpdate,
    payload_version: &str,
) -> Option<String> {
    let applying = status.desired.as_ref()?;
    let partial = status
        .history
        .first()
        .is_some_and(|h| h.state == UpdateState::Partial && h.image == applying.image);
    if desired.force || !partial {
        return None;
    }
    let at = status
        .progress
        .as_ref()
        .map(|p| format!(" (at level {} of {})", p.position, p.levels))
        .unwrap_or_default();
    Some(format!(
        "the update to {} is still being applied{at}; set spec.desiredUpdate.force: true to replace it with {payload_version}, or wait until it completes",
        applying.version
    ))
}

/// The readiness report (kept in `status.readiness`) and the preconditions of a forward update
/// to `loaded`: what was accepted, for history, or the refusal's reason and message.
pub async fn forward_update(
    ctx: &Context,
    version: &ClusterVersion,
    status: &mut ClusterVersionStatus,
    loaded: &Loaded,
    desired: &DesiredUpdate,
    blocking: Result<Vec<NotUpgradeable>, String>,
) -> Result<String, (&'static str, String)> {
    let current = status
        .history
        .first()
        .and_then(|h| semver::Version::parse(&h.version).ok());
    // The report is kept in status whether or not the update may go; a first install has
    // nothing to be ready for.
    let mut findings = Vec::new();
    if current.is_some() {
        let not_upgradeable = blocking.as_ref().map(Vec::as_slice).unwrap_or_default();
        let found = readiness::findings(ctx, version, loaded, not_upgradeable)
            .await
            .map_err(|message| {
                (
                    reasons::UPDATE_NOT_READY,
                    format!("the pre-update readiness report could not be made: {message}"),
                )
            })?;
        status.readiness = Some(readiness::report(loaded, &found, &desired.accept_risks));
        findings = found;
    }
    let holding = readiness::holding(&findings, &desired.accept_risks);
    if !holding.is_empty() && !desired.force {
        let names: Vec<&str> = holding.iter().map(|f| f.name.as_str()).collect();
        return Err((
            reasons::UPDATE_NOT_READY,
            format!(
                "{}; to go anyway, list {} in spec.desiredUpdate.acceptRisks",
                windlass_preview::readiness::summary(&holding),
                names.join(", ")
            ),
        ));
    }
    let passed: Vec<&str> = findings
        .iter()
        .filter(|f| {
            !matches!(
                f.kind,
                FindingKind::NotUpgradeable | FindingKind::NotEvaluated
            )
        })
        .map(|f| f.name.as_str())
        .collect();
    let mut accepted = String::new();
    if !passed.is_empty() {
        let what = if desired.force {
            "forced past"
        } else {
            "accepted"
        };
        accepted = format!("Readiness findings {what}: {}", passed.join(", "));
    }
    let judged = blocking.and_then(|blocking| {
        preconditions::judge(
            &blocking,
            current.as_ref(),
            loaded.payload.version(),
            desired,
        )
    });
    let preconditions = judged.map_err(|message| (reasons::PRECONDITIONS_FAILED, message))?;
    // Last, once everything else would let it go: the plan a person approves.
    if version.spec.approval == Some(ReleaseApproval::Manual) {
        let mut plan = plan_preview::plan(ctx, loaded, &levels::unmanaged(version))
            .await
            .map_err(|message| {
                (
                    reasons::PLAN_FAILED,
                    format!("the update's plan could not be made: {message}"),
                )
            })?;
        plan.approved = desired.approved_plan.as_deref() == Some(plan.digest.as_str());
        let digest = plan.digest.clone();
        let approved = plan.approved;
        status.plan = Some(plan);
        if !approved {
            let again = if desired.approved_plan.is_some() {
                " (the approved plan is no longer the plan: the cluster changed since)"
            } else {
                ""
            };
            return Err((
                reasons::AWAITING_PLAN_APPROVAL,
                format!(
                    "the plan of the update to {} waits for approval{again}: `windlass upgrade plan` shows it, `windlass upgrade approve {digest}` approves it",
                    loaded.payload.version()
                ),
            ));
        }
    }
    Ok(joined(accepted, preconditions))
}

/// A ClusterOperator unhealthy past its grace makes the release `Failing`, naming it (unless a
/// level already fails, which says more), and one that is down makes it not `Available`.
pub fn judge_operators(
    conditions: &mut Vec<Condition>,
    verdict: &operators::Verdict,
    generation: Option<i64>,
    now: Timestamp,
    level_failing: bool,
) {
    let operators::Verdict::Failing {
        reason,
        message,
        not_available,
    } = verdict
    else {
        return;
    };
    let mut put = |type_: &str, state: ConditionStatus| {
        set_condition(
            conditions,
            Condition::new(type_, state, reason, message.clone()).observed(generation),
            now,
        );
    };
    if !level_failing {
        put(types::FAILING, ConditionStatus::True);
    }
    if *not_available {
        put(types::AVAILABLE, ConditionStatus::False);
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use windlass_api::clusterversion::{Release, UpdateHistory, UpdateProgress};

    use super::*;

    fn applying(state: UpdateState) -> ClusterVersionStatus {
        ClusterVersionStatus {
            desired: Some(Release {
                version: "4.2.1".into(),
                image: "r@sha256:b".into(),
                ..Default::default()
            }),
            history: vec![UpdateHistory {
                state,
                version: "4.2.1".into(),
                image: "r@sha256:b".into(),
                verified: false,
                started_time: Time(Timestamp::from_second(1_800_000_000).unwrap()),
                completion_time: None,
                accepted_risks: String::new(),
                crossed_irreversible: Vec::new(),
            }],
            progress: Some(UpdateProgress {
                level: "30".into(),
                position: 4,
                levels: 7,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn an_update_in_progress_is_replaced_only_when_forced() {
        let asked = DesiredUpdate {
            image: Some("r@sha256:c".into()),
            ..Default::default()
        };
        let refused = update_in_progress(&applying(UpdateState::Partial), &asked, "4.2.3").unwrap();
        assert!(
            refused.contains("4.2.1 is still being applied (at level 4 of 7)"),
            "{refused}"
        );
        assert!(
            refused.contains("force") && refused.contains("4.2.3"),
            "{refused}"
        );
        let forced = DesiredUpdate {
            force: true,
            ..asked.clone()
        };
        assert_eq!(
            update_in_progress(&applying(UpdateState::Partial), &forced, "4.2.3"),
            None
        );
        assert_eq!(
            update_in_progress(&applying(UpdateState::Completed), &asked, "4.2.3"),
            None
        );
        assert_eq!(
            update_in_progress(&ClusterVersionStatus::default(), &asked, "4.2.3"),
            None
        );
    }
}
