//! What the validate stage found, as conditions on the Blueprint.

use super::{Changes, Refusal, Validation, conditions, crd_safety};
use windlass_api::names::reasons;

/// Conditions from the validate stage; whether to apply, and the CRD step's message.
pub(super) fn validated(
    changes: &mut Changes,
    validation: &Validation,
    restoring: bool,
) -> (bool, String) {
    if !matches!(validation, Validation::Untrusted(_)) {
        changes.remove_condition(conditions::blueprint::CONTENT_TRUSTED);
    }
    match validation {
        Validation::Refused(_) => {}
        Validation::Ready {
            withdrawn: Some(refusal),
            ..
        } => not_permitted(changes, refusal),
        _ => changes.remove_condition(conditions::blueprint::INSTALL_PERMITTED),
    }
    match validation {
        Validation::Ready { kept_crds, .. } if restoring && !kept_crds.is_empty() => {
            let kept = kept_crds.join(", ");
            changes.set_condition(
                conditions::blueprint::CRDS_KEPT,
                true,
                reasons::blueprint::ROLLBACK_KEEPS_NEWER_CRDS,
                format!(
                    "{kept} stay at the newer definition: a rollback never downgrades CRDs, so \
                     objects the newer version wrote stay readable"
                ),
            );
            (true, format!("kept at the newer definition: {kept}"))
        }
        Validation::Ready { kept_crds, .. } if !kept_crds.is_empty() => {
            let kept = kept_crds.join(", ");
            changes.set_condition(
                conditions::blueprint::CRDS_KEPT,
                true,
                reasons::blueprint::NEWER_VERSION_INSTALLED,
                format!(
                    "{kept} stay at the definition a newer version of this package applied \
                     (CRDs are shared by every namespace and never move backwards)"
                ),
            );
            (true, format!("kept at the newer definition: {kept}"))
        }
        Validation::Ready { .. } => {
            if !restoring {
                changes.remove_condition(conditions::blueprint::CRDS_KEPT);
                changes.set_condition(
                    conditions::blueprint::CRD_UPGRADE_SAFE,
                    true,
                    reasons::blueprint::SAFE,
                    "every stored version is kept and every existing object is valid",
                );
            }
            (true, String::new())
        }
        Validation::UnsafeCrds(violations) => {
            let summary = unsafe_crds(changes, violations);
            (false, format!("not re-applied: {summary}"))
        }
        Validation::Unavailable(message) => (false, format!("not re-applied: {message}")),
        Validation::Invalid(message) => (false, format!("not re-applied: {message}")),
        Validation::Untrusted(refusal) => {
            untrusted(changes, refusal);
            (false, format!("not re-applied: {}", refusal.message))
        }
        Validation::Refused(refusal) => {
            not_permitted(changes, refusal);
            (false, format!("not re-applied: {}", refusal.message))
        }
    }
}

pub(super) fn not_permitted(changes: &mut Changes, refusal: &Refusal) {
    changes.set_condition(
        conditions::blueprint::INSTALL_PERMITTED,
        false,
        refusal.reason,
        refusal.message.clone(),
    );
}

pub(super) fn untrusted(changes: &mut Changes, refusal: &Refusal) {
    changes.set_condition(
        conditions::blueprint::CONTENT_TRUSTED,
        false,
        refusal.reason,
        refusal.message.clone(),
    );
}

pub(super) fn unsafe_crds(changes: &mut Changes, assessment: &crd_safety::Assessment) -> String {
    let summary = assessment.summary(3);
    let reason = assessment
        .findings
        .first()
        .map(|v| v.kind)
        .or_else(|| assessment.hidden.first().map(|h| h.kind))
        .map_or("Unsafe", |kind| kind.reason());
    changes.set_condition(
        conditions::blueprint::CRD_UPGRADE_SAFE,
        false,
        reason,
        summary.clone(),
    );
    summary
}
