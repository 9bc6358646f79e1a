//! What the validate stage found, as conditions on the Blueprint.

use super::{Draft, Refusal, Validation, conditions, crd_safety};

/// Conditions from the validate stage; whether to apply, and the CRD step's message.
pub(super) fn validated(
    draft: &mut Draft<'_>,
    validation: &Validation,
    restoring: bool,
) -> (bool, String) {
    if !matches!(validation, Validation::Untrusted(_)) {
        draft.remove_condition(conditions::blueprint::CONTENT_TRUSTED);
    }
    if !matches!(validation, Validation::Refused(_)) {
        draft.remove_condition(conditions::blueprint::INSTALL_PERMITTED);
    }
    match validation {
        Validation::Ready { kept_crds, .. } if restoring && !kept_crds.is_empty() => {
            let kept = kept_crds.join(", ");
            draft.set_condition(
                conditions::blueprint::CRDS_KEPT,
                true,
                "RollbackKeepsNewerCRDs",
                &format!(
                    "{kept} stay at the newer definition: a rollback never downgrades CRDs, so \
                     objects the newer version wrote stay readable"
                ),
            );
            (true, format!("kept at the newer definition: {kept}"))
        }
        Validation::Ready { kept_crds, .. } if !kept_crds.is_empty() => {
            let kept = kept_crds.join(", ");
            draft.set_condition(
                conditions::blueprint::CRDS_KEPT,
                true,
                "NewerVersionInstalled",
                &format!(
                    "{kept} stay at the definition a newer version of this package applied \
                     (CRDs are shared by every namespace and never move backwards)"
                ),
            );
            (true, format!("kept at the newer definition: {kept}"))
        }
        Validation::Ready { .. } => {
            if !restoring {
                draft.remove_condition(conditions::blueprint::CRDS_KEPT);
                draft.set_condition(
                    conditions::blueprint::CRD_UPGRADE_SAFE,
                    true,
                    "Safe",
                    "every stored version is kept and every existing object is valid",
                );
            }
            (true, String::new())
        }
        Validation::UnsafeCrds(violations) => {
            let summary = unsafe_crds(draft, violations);
            (false, format!("not re-applied: {summary}"))
        }
        Validation::Unavailable(message) => (false, format!("not re-applied: {message}")),
        Validation::Invalid(message) => (false, format!("not re-applied: {message}")),
        Validation::Untrusted(refusal) => {
            untrusted(draft, refusal);
            (false, format!("not re-applied: {}", refusal.message))
        }
        Validation::Refused(refusal) => {
            not_permitted(draft, refusal);
            (false, format!("not re-applied: {}", refusal.message))
        }
    }
}

pub(super) fn not_permitted(draft: &mut Draft<'_>, refusal: &Refusal) {
    draft.set_condition(
        conditions::blueprint::INSTALL_PERMITTED,
        false,
        refusal.reason,
        &refusal.message,
    );
}

pub(super) fn untrusted(draft: &mut Draft<'_>, refusal: &Refusal) {
    draft.set_condition(
        conditions::blueprint::CONTENT_TRUSTED,
        false,
        refusal.reason,
        &refusal.message,
    );
}

pub(super) fn unsafe_crds(draft: &mut Draft<'_>, assessment: &crd_safety::Assessment) -> String {
    let summary = assessment.summary(3);
    let reason = assessment
        .findings
        .first()
        .map(|v| v.kind)
        .or_else(|| assessment.hidden.first().map(|h| h.kind))
        .map_or("Unsafe", |kind| kind.reason());
    draft.set_condition(
        conditions::blueprint::CRD_UPGRADE_SAFE,
        false,
        reason,
        &summary,
    );
    summary
}
