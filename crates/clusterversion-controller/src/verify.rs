//! Release payload signatures: every TrustPolicy's rules, key material read from the manager's
//! namespace, checked against the payload's digest, and what that means for the update.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::{Api, Client, ResourceExt, api::ListParams};
use windlass_api::{TrustPolicy, names::reasons::cluster_version as reasons};
use windlass_trust::{Artifact, ArtifactClass, Decision, PublicKey, Verdict, policy::merge};

use crate::Context;

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
    let client = &ctx.shell.client;
    let policies = Api::<TrustPolicy>::all(client.clone())
        .list(&ListParams::default())
        .await
        .map_err(|e| format!("reading TrustPolicies: {e}"))?
        .items;
    let named: Vec<(String, windlass_trust::TrustPolicy)> = policies
        .iter()
        .map(|p| {
            (
                p.name_any(),
                windlass_trust::TrustPolicy {
                    keys: p.spec.keys.iter().map(|k| k.key.clone()).collect(),
                    rules: p.spec.rules.clone(),
                },
            )
        })
        .collect();
    let merged = merge(&named);
    let keys = key_material(client, &ctx.namespace, &policies).await;
    let verifier = ctx.verifier(plain_http);
    let artifact = Artifact {
        reference: image.to_string(),
        digest: digest.to_string(),
        class: ArtifactClass::Release,
    };
    verifier
        .verify(&artifact, &merged, &keys)
        .await
        .map_err(|e| format!("verifying {image}: {e}"))
}

/// Each policy key's public key (named `<policy>/<key>`, as [`merge`] names them), or why it
/// could not be read.
async fn key_material(client: &Client, namespace: &str, policies: &[TrustPolicy]) -> KeyMaterial {
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), namespace);
    let secrets = Api::<Secret>::namespaced(client.clone(), namespace);
    let mut keys = BTreeMap::new();
    for policy in policies {
        for key in &policy.spec.keys {
            let name = format!("{}/{}", policy.name_any(), key.key.name);
            let pem = match (&key.config_map, &key.secret) {
                (Some(source), _) => {
                    let where_ = format!(
                        "ConfigMap {namespace}/{} key {}",
                        source.name,
                        source.data_key()
                    );
                    match config_maps.get_opt(&source.name).await {
                        Ok(Some(map)) => map
                            .data
                            .and_then(|d| d.get(source.data_key()).cloned())
                            .map(String::into_bytes)
                            .ok_or_else(|| format!("{where_} does not exist")),
                        Ok(None) => Err(format!("{where_}: no such ConfigMap")),
                        Err(e) => Err(format!("{where_}: {e}")),
                    }
                    .map(|pem| (pem, where_))
                }
                (None, Some(source)) => {
                    let where_ = format!(
                        "Secret {namespace}/{} key {}",
                        source.name,
                        source.data_key()
                    );
                    match secrets.get_opt(&source.name).await {
                        Ok(Some(secret)) => secret
                            .data
                            .and_then(|d| d.get(source.data_key()).map(|b| b.0.clone()))
                            .ok_or_else(|| format!("{where_} does not exist")),
                        Ok(None) => Err(format!("{where_}: no such Secret")),
                        Err(e) => Err(format!("{where_}: {e}")),
                    }
                    .map(|pem| (pem, where_))
                }
                (None, None) => Err(format!(
                    "TrustPolicy {} key {} names neither a configMap nor a secret",
                    policy.name_any(),
                    key.key.name
                )),
            };
            let parsed = pem.and_then(|(pem, where_)| {
                PublicKey::from_pem(&pem, &where_).map_err(|e| e.to_string())
            });
            keys.insert(name, parsed);
        }
    }
    KeyMaterial(keys)
}

/// Public keys by policy-scoped name, or why each could not be read.
pub struct KeyMaterial(BTreeMap<String, Result<PublicKey, String>>);

impl windlass_trust::KeyResolver for KeyMaterial {
    fn resolve(&self, name: &str) -> Result<PublicKey, String> {
        match self.0.get(name) {
            Some(Ok(key)) => Ok(key.clone()),
            Some(Err(why)) => Err(why.clone()),
            None => Err(format!("no key material for key {name}")),
        }
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
