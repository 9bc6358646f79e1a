//! Approval binds a plan. Under Manual approval a revision that would change what runs (its
//! plan digest differs from the running revision's) waits until a person approves exactly its
//! plan:
//!
//! - `spec.approvedPlan: <digest>` approves that plan and no other: if the plan changes
//!   (its bundle republished, the install identity or targets changed by a policy), the digest
//!   no longer matches and the revision waits again, saying what changed;
//! - `spec.approved: true` alone approves the plan the status showed when the controller first
//!   saw the approval; that digest is recorded (`status.preview.approved`) and a plan that
//!   changes after it waits again, for an approval naming the new digest.
//!
//! A config, target-namespace or bundle change makes a new revision, which resets both. An
//! automatic rollback never waits (it is what keeps a failed upgrade from staying broken); a
//! person's rollback does, and its preview lists the out-of-band edits it overwrites.
//! `spec.preview` asks for a preview under Automatic approval too; it is recorded, not
//! waited on.

use windlass_api::{
    blueprint::{PlanPreview, RevisionRecord},
    config::Approval,
    names::{conditions, reasons},
};
use windlass_preview::PlanKind;

use super::{
    Input, Need, PreviewRequest, Refusal, RunningRevision, history, intent,
    outcome::{Changes, PreviewChange},
};

/// Whether the current revision, validated and not started yet, may be applied now.
pub(super) enum Gate {
    /// Apply it; `approved` is the plan digest a person approved, when approval was needed.
    Go { approved: Option<String> },
    /// Preview the plan first.
    Preview(Box<PreviewRequest>),
    /// Wait for a person.
    Wait(Refusal),
}

/// The gate for `record`, the current revision, given the facts gathered so far; `request`
/// is what a preview of it would look at. The PlanApproved condition and the preview shown go
/// into `changes`.
pub(super) fn gate(
    input: &Input<'_>,
    record: &RevisionRecord,
    request: PreviewRequest,
    changes: &mut Changes,
) -> Gate {
    if is_automatic_rollback(input, record) {
        return Gate::Go { approved: None };
    }
    let needs_approval =
        input.spec.approval == Approval::Manual && changes_what_runs(input, record);
    if !needs_approval {
        changes.remove_condition(conditions::blueprint::PLAN_APPROVED);
    }
    if !needs_approval && !input.spec.preview {
        return Gate::Go { approved: None };
    }
    let preview = input
        .facts
        .preview
        .as_ref()
        .filter(|p| p.revision == record.revision);
    let Some(preview) = preview else {
        return Gate::Preview(Box::new(request));
    };
    if !needs_approval {
        changes.preview = PreviewChange::Show(preview.clone());
        return Gate::Go { approved: None };
    }
    let (verdict, bound) = judge(input, record, preview);
    let mut shown = preview.clone();
    shown.approved = bound;
    changes.preview = PreviewChange::Show(shown);
    match &verdict {
        Gate::Go {
            approved: Some(digest),
        } => changes.set_condition(
            conditions::blueprint::PLAN_APPROVED,
            true,
            reasons::blueprint::PLAN_APPROVED,
            format!("plan {digest} of revision {} is approved", record.revision),
        ),
        Gate::Wait(refusal) => changes.set_condition(
            conditions::blueprint::PLAN_APPROVED,
            false,
            refusal.reason,
            refusal.message.clone(),
        ),
        _ => {}
    }
    verdict
}

/// For a revision blocked before anything is applied (unsafe CRDs): the preview a person
/// would approve, so the plan shows why it is blocked. `None` once it is known (or not
/// wanted); it is then shown.
pub(super) fn preview_blocked(
    input: &Input<'_>,
    record: &RevisionRecord,
    request: PreviewRequest,
    changes: &mut Changes,
) -> Option<Need> {
    if input.spec.approval != Approval::Manual && !input.spec.preview {
        return None;
    }
    match input
        .facts
        .preview
        .as_ref()
        .filter(|p| p.revision == record.revision)
    {
        Some(preview) => {
            let mut shown = preview.clone();
            shown.approved = input
                .status
                .preview
                .as_ref()
                .filter(|p| p.revision == record.revision)
                .and_then(|p| p.approved.clone());
            changes.preview = PreviewChange::Show(shown);
            None
        }
        None => Some(Need::Preview(Box::new(request))),
    }
}

/// The approval given, against the plan now: the verdict, and the digest a bare
/// `approved: true` is bound to (kept in the status so it outlives this round).
fn judge(
    input: &Input<'_>,
    record: &RevisionRecord,
    preview: &PlanPreview,
) -> (Gate, Option<String>) {
    let digest = &preview.digest;
    let name = input.name;
    let shown = input
        .status
        .preview
        .as_ref()
        .filter(|p| p.revision == record.revision);
    let bound = shown.and_then(|p| p.approved.clone()).or_else(|| {
        input
            .spec
            .approved
            .then(|| shown.map(|p| p.digest.clone()))
            .flatten()
    });
    let how = format!(
        "`windlass plan {name}` shows it; `windlass approve {name}` (or spec.approvedPlan: \
         {digest}) approves it"
    );
    let changed = if preview.changes.is_empty() {
        String::new()
    } else {
        format!(" ({})", preview.changes)
    };
    if let Some(named) = &input.spec.approved_plan {
        let verdict = if named == digest {
            Gate::Go {
                approved: Some(named.clone()),
            }
        } else {
            Gate::Wait(Refusal {
                reason: reasons::blueprint::PLAN_CHANGED,
                message: format!(
                    "spec.approvedPlan names {named}, but the plan of revision {} is {digest}{changed}; {how}",
                    record.revision
                ),
            })
        };
        return (verdict, bound);
    }
    let verdict = match &bound {
        Some(approved) if approved == digest => Gate::Go {
            approved: Some(approved.clone()),
        },
        Some(approved) => Gate::Wait(Refusal {
            reason: reasons::blueprint::PLAN_CHANGED,
            message: format!(
                "the plan changed after it was approved: {approved} was approved, revision {} \
                 now plans {digest}{changed}; {how}",
                record.revision
            ),
        }),
        None if input.spec.approved => Gate::Wait(Refusal {
            reason: reasons::blueprint::AWAITING_APPROVAL,
            message: format!(
                "spec.approved was set before the plan of revision {} was shown; {how}",
                record.revision
            ),
        }),
        None => Gate::Wait(Refusal {
            reason: reasons::blueprint::AWAITING_APPROVAL,
            message: format!(
                "plan {digest} of revision {} waits for approval: {}{changed}; {how}",
                record.revision, preview.summary
            ),
        }),
    };
    (verdict, bound)
}

/// A rollback the controller started because the target failed (the spec still asks for the
/// failed target): never held up.
fn is_automatic_rollback(input: &Input<'_>, record: &RevisionRecord) -> bool {
    record.restored_from.is_some() && target(input) != record.cluster_service_version_name
}

fn target<'a>(input: &'a Input<'_>) -> &'a str {
    match (
        input.spec.cluster_service_version_name.as_str(),
        &input.spec.bundle,
    ) {
        ("", Some(bundle)) => bundle.cluster_service_version_name.as_str(),
        (target, _) => target,
    }
}

/// Whether applying the revision changes what runs: its plan digest differs from the one the
/// running revision applied (unknown counts as different).
fn changes_what_runs(input: &Input<'_>, record: &RevisionRecord) -> bool {
    let running = history::last_completed(input, record.revision).and_then(|c| {
        input
            .status
            .history
            .iter()
            .find(|r| r.revision == c.revision)
            .and_then(|r| r.plan.clone())
    });
    match (&input.facts.plan_digest, running) {
        (Some(now), Some(running)) => *now != running,
        _ => true,
    }
}

/// What a preview of `record` compares and tells; `apply` is what the apply stage would do.
pub(super) fn request(
    input: &Input<'_>,
    record: &RevisionRecord,
    apply: super::ApplyPlan,
) -> PreviewRequest {
    let running = input
        .status
        .history
        .iter()
        .filter(|r| r.revision < record.revision && r.started_time.is_some())
        .max_by_key(|r| r.revision)
        .map(|r| RunningRevision {
            revision: r.revision,
            csv_name: r.cluster_service_version_name.clone(),
            version: r.version.clone(),
        });
    let previous = input
        .status
        .history
        .iter()
        .filter(|r| r.revision < record.revision)
        .map(|r| r.revision)
        .max();
    let kind = match (&running, record.restored_from) {
        (_, Some(_)) => PlanKind::Rollback,
        (None, None) => PlanKind::Install,
        (Some(running), None) => match (
            intent::parse(&running.version),
            intent::parse(&record.version),
        ) {
            (Some(from), Some(to)) => match windlass_catalog::range::precedence(&to, &from) {
                std::cmp::Ordering::Greater => PlanKind::Upgrade,
                std::cmp::Ordering::Less => PlanKind::Downgrade,
                std::cmp::Ordering::Equal => PlanKind::Reinstall,
            },
            _ if running.version == record.version => PlanKind::Reinstall,
            _ => PlanKind::Upgrade,
        },
    };
    PreviewRequest {
        apply,
        kind,
        drift: kind == PlanKind::Rollback && running.is_some(),
        running,
        previous,
        reason: record.reason.clone(),
    }
}
