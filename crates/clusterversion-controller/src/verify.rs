//! Release payload signatures: the payload's digest checked against the TrustPolicies, and what
//! that means for the update.

use windlass_api::names::reasons::cluster_version as reasons;
use windlass_oci::RegistryOptions;
use windlass_trust::{Artifact, ArtifactClass, Decision, Verdict};

use crate::{
    Context,
    signature_stores::{self, StoreVerdict},
};

/// Whether an update to a payload may start, after its signatures were checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Acceptance {
    /// Start it; `verified` is recorded, and `overridden` says what `force` let through.
    Accept {
        verified: bool,
        verified_by: Vec<String>,
        overridden: String,
        note: String,
    },
    /// Do not start it.
    Refuse {
        reason: &'static str,
        message: String,
    },
}

/// What the verdict on `image` means for an update, given `force`.
pub fn acceptance(verdict: &Verdict, image: &str, force: bool) -> Acceptance {
    let reasons_text = verdict.reasons.join("; ");
    let refusal = match verdict.decision {
        Decision::Verified => {
            return Acceptance::Accept {
                verified: true,
                verified_by: verdict.verified_by.clone(),
                overridden: String::new(),
                note: format!("verified by {}", verdict.verified_by.join(", ")),
            };
        }
        Decision::UnsignedReported => {
            return Acceptance::Accept {
                verified: false,
                verified_by: Vec::new(),
                overridden: String::new(),
                note: format!("not verified, as the trust policy allows: {reasons_text}"),
            };
        }
        Decision::NotCovered => (
            reasons::UNVERIFIED,
            format!(
                "payload {image} cannot be verified: {reasons_text} (write a TrustPolicy with a rule for Release images)"
            ),
        ),
        Decision::Refused => (
            reasons::VERIFICATION_FAILED,
            format!("payload {image} is refused by the trust policy: {reasons_text}"),
        ),
    };
    if force {
        Acceptance::Accept {
            verified: false,
            verified_by: Vec::new(),
            overridden: format!("force: {}", refusal.1),
            note: "forced: not verified".into(),
        }
    } else {
        Acceptance::Refuse {
            reason: refusal.0,
            message: format!(
                "{}; set spec.desiredUpdate.force: true to apply it unverified (recorded in history)",
                refusal.1
            ),
        }
    }
}

/// Checks the payload `image` (`repository@digest`) against every TrustPolicy. An `Err` is a
/// registry or policy problem that a retry may fix, worded for the condition.
pub async fn verify(
    ctx: &Context,
    image: &str,
    digest: &str,
    plain_http: bool,
) -> Result<Verdict, String> {
    let artifact = Artifact {
        reference: image.to_string(),
        digest: digest.to_string(),
        class: ArtifactClass::Release,
    };
    let registry = RegistryOptions {
        plain_http,
        ..RegistryOptions::default()
    };
    ctx.trust.verify(&artifact, &registry).await
}

/// The decision on an update to `image` (`repository@digest`): the signature stores' keys
/// (where a verification ConfigMap holds any) or the TrustPolicies verify it; configured store
/// keys that verify nothing refuse it (as the CVO does) unless a TrustPolicy verified it or
/// `force` is set. An `Err` is a read that a retry may fix.
pub async fn decide(
    ctx: &Context,
    version: &windlass_api::ClusterVersion,
    image: &str,
    digest: &str,
    force: bool,
) -> Result<Acceptance, String> {
    let stores = signature_stores::configured(ctx, version).await?;
    let mut store_reasons = None;
    if let Some(stores) = &stores {
        match signature_stores::verify(ctx, stores, digest).await {
            StoreVerdict::Verified { key, url } => {
                return Ok(Acceptance::Accept {
                    verified: true,
                    verified_by: vec![key.clone()],
                    overridden: String::new(),
                    note: format!("verified by {key} ({url})"),
                });
            }
            StoreVerdict::NotVerified(reasons) => store_reasons = Some(reasons),
        }
    }
    let verdict = verify(ctx, image, digest, version.spec.plain_http).await?;
    match store_reasons {
        Some(reasons) if verdict.decision != Decision::Verified => {
            let refusal = format!(
                "payload {image} is not verified by the release verification keys: {}",
                reasons.join("; ")
            );
            Ok(if force {
                Acceptance::Accept {
                    verified: false,
                    verified_by: Vec::new(),
                    overridden: format!("force: {refusal}"),
                    note: "forced: not verified".into(),
                }
            } else {
                Acceptance::Refuse {
                    reason: reasons::VERIFICATION_FAILED,
                    message: format!(
                        "{refusal}; set spec.desiredUpdate.force: true to apply it unverified (recorded in history)"
                    ),
                }
            })
        }
        _ => Ok(acceptance(&verdict, image, force)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(decision: Decision, reasons: &[&str]) -> Verdict {
        Verdict {
            reference: "r".into(),
            repository: "r".into(),
            digest: "sha256:00".into(),
            class: ArtifactClass::Release,
            decision,
            verified: decision == Decision::Verified,
            verified_by: if decision == Decision::Verified {
                vec!["p/a".into()]
            } else {
                vec![]
            },
            reasons: reasons.iter().map(|r| r.to_string()).collect(),
            signatures: vec![],
            policy_fingerprint: String::new(),
            cached: false,
        }
    }

    #[test]
    fn a_refused_or_uncovered_payload_starts_only_when_forced_and_says_what_was_overridden() {
        let refused = verdict(
            Decision::Refused,
            &["rule platform/releases: needs key platform/b"],
        );
        let Acceptance::Refuse { reason, message } = acceptance(&refused, "img", false) else {
            panic!("refused without force");
        };
        assert_eq!(reason, reasons::VERIFICATION_FAILED);
        assert!(
            message.contains("needs key platform/b") && message.contains("force"),
            "{message}"
        );
        let Acceptance::Accept {
            verified,
            overridden,
            ..
        } = acceptance(&refused, "img", true)
        else {
            panic!("forced");
        };
        assert!(!verified);
        assert!(
            overridden.starts_with("force: payload img is refused"),
            "{overridden}"
        );

        let uncovered = verdict(
            Decision::NotCovered,
            &["no rule covers Release images in r"],
        );
        assert!(matches!(
            acceptance(&uncovered, "img", false),
            Acceptance::Refuse {
                reason: reasons::UNVERIFIED,
                ..
            }
        ));
    }

    #[test]
    fn a_verified_payload_records_its_keys_and_reported_unsigned_ones_pass_unverified() {
        let Acceptance::Accept {
            verified,
            verified_by,
            overridden,
            ..
        } = acceptance(&verdict(Decision::Verified, &[]), "img", false)
        else {
            panic!("verified");
        };
        assert!(verified && overridden.is_empty());
        assert_eq!(verified_by, ["p/a"]);
        let Acceptance::Accept { verified, .. } = acceptance(
            &verdict(Decision::UnsignedReported, &["unsigned"]),
            "img",
            false,
        ) else {
            panic!("reported");
        };
        assert!(!verified);
    }
}
