//! `UpgradeReady`: before an upgrade starts, what would block or break it, each finding held
//! until a person accepts it by name (`spec.acceptedFindings`).

use windlass_api::{
    blueprint::RevisionRecord,
    names::{conditions, reasons},
};
use windlass_preview::readiness;

use super::super::{Input, Validation, history, outcome::Changes};

pub(super) enum Readiness {
    /// Nothing found, or all of it accepted: the names accepted, for the history.
    Go(Vec<String>),
    /// Findings not accepted yet; the condition says which and how to accept them.
    Held(String),
}

pub(super) fn judge(
    input: &Input<'_>,
    changes: &mut Changes,
    validation: &Validation,
    record: &RevisionRecord,
) -> Readiness {
    let Validation::Ready { findings, .. } = validation else {
        return Readiness::Go(Vec::new());
    };
    // Only an upgrade of something that runs; a rollback goes back to what ran here.
    if record.restored_from.is_some() || history::last_completed(input, record.revision).is_none() {
        return Readiness::Go(Vec::new());
    }
    let left = readiness::unaccepted(findings, &input.spec.accepted_findings);
    if left.is_empty() {
        let accepted: Vec<String> = findings.iter().map(|f| f.name.clone()).collect();
        let message = if accepted.is_empty() {
            "nothing found that would block or break the upgrade (Kubernetes version, \
             PodDisruptionBudgets, API versions still in use)"
                .to_string()
        } else {
            format!("accepted by name: {}", accepted.join(", "))
        };
        changes.set_condition(
            conditions::blueprint::UPGRADE_READY,
            true,
            reasons::blueprint::UPGRADE_READY,
            message,
        );
        return Readiness::Go(accepted);
    }
    let names: Vec<String> = left.iter().map(|f| format!("{:?}", f.name)).collect();
    let flags: Vec<String> = left
        .iter()
        .map(|f| format!("--accept {}", f.name))
        .collect();
    let message = format!(
        "{}. To go ahead anyway, accept each by name: windlass approve {} {} (or set \
         spec.acceptedFindings: [{}] on the Blueprint)",
        readiness::summary(&left),
        input.name,
        flags.join(" "),
        names.join(", ")
    );
    changes.set_condition(
        conditions::blueprint::UPGRADE_READY,
        false,
        reasons::blueprint::FINDINGS_NOT_ACCEPTED,
        message.clone(),
    );
    Readiness::Held(message)
}
