//! One stored signature, checked against the keys a policy trusts.
//!
//! The signature is verified before anything it says is believed: a reason such as "this
//! signature is for another digest" is only given for a signature a trusted key made. The one
//! thing read before verification is whether a bundle is a signature at all (its predicate
//! type), so attestations (SBOMs, provenance) stored beside signatures are set aside without
//! noise; a forged predicate type can only make a signature be ignored.

use serde::Serialize;

use crate::bundle::Bundle;
use crate::dsse::{COSIGN_SIGN_PREDICATE, IN_TOTO_PAYLOAD_TYPE, Statement, decode_base64};
use crate::found::{Candidate, CandidateContent};
use crate::keys::PublicKey;
use crate::policy::list_names;
use crate::simple_signing;

/// The stored form of a signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum SignatureFormat {
    /// A Sigstore bundle (cosign `--new-bundle-format`, the cosign v3 default).
    Bundle,
    /// cosign's legacy simple-signing layer in the `sha256-<hex>.sig` image.
    SimpleSigning,
}

/// What checking one stored signature found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub enum CheckOutcome {
    /// A valid signature of the digest, by these keys (several names can share one key).
    Valid { keys: Vec<String> },
    /// Present but not a valid signature of the digest by a trusted key.
    Invalid { reason: String },
    /// Stored beside signatures but not one (an attestation of another predicate type).
    NotASignature { reason: String },
}

/// One stored signature and what became of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignatureCheck {
    /// Where it was found: `referrer sha256:...` or `tag sha256-<hex>.sig, layer N`.
    pub location: String,
    pub format: SignatureFormat,
    #[serde(flatten)]
    pub outcome: CheckOutcome,
}

/// The keys to check against, by policy name.
pub type KeyRing<'a> = [(String, &'a PublicKey)];

fn invalid(reason: impl Into<String>) -> CheckOutcome {
    CheckOutcome::Invalid {
        reason: reason.into(),
    }
}

fn key_names(keys: &KeyRing<'_>) -> String {
    let names: Vec<&str> = keys.iter().map(|(n, _)| n.as_str()).collect();
    list_names(&names)
}

fn signers(keys: &KeyRing<'_>, message: &[u8], signature: &[u8]) -> Vec<String> {
    keys.iter()
        .filter(|(_, key)| key.verify(message, signature))
        .map(|(name, _)| name.clone())
        .collect()
}

fn digest_mismatch(signed_by: &[String], signed: &[String], expected: &str) -> CheckOutcome {
    let signed = if signed.is_empty() {
        "no digest".to_string()
    } else {
        signed.join(", ")
    };
    invalid(format!(
        "the signature by {} is for {signed}, not {expected}",
        list_names(signed_by)
    ))
}

/// Checks a Sigstore bundle for `digest`.
pub fn check_bundle(bytes: &[u8], digest: &str, keys: &KeyRing<'_>) -> CheckOutcome {
    let bundle = match Bundle::parse(bytes) {
        Ok(bundle) => bundle,
        Err(e) => return invalid(e.to_string()),
    };
    let envelope = &bundle.envelope;
    if envelope.payload_type != IN_TOTO_PAYLOAD_TYPE {
        return invalid(format!(
            "the envelope's payloadType is `{}`, not `{IN_TOTO_PAYLOAD_TYPE}`",
            envelope.payload_type
        ));
    }
    // Classify before verifying (see the module docs); everything else waits for a valid
    // signature.
    let unverified = Statement::parse(&envelope.payload);
    if let Ok(statement) = &unverified
        && statement.predicate_type != COSIGN_SIGN_PREDICATE
    {
        return CheckOutcome::NotASignature {
            reason: format!(
                "an attestation with predicate type `{}`, not a signature (`{COSIGN_SIGN_PREDICATE}`)",
                statement.predicate_type
            ),
        };
    }
    if envelope.signatures.is_empty() {
        return invalid("the envelope holds no signatures");
    }
    if keys.is_empty() {
        return invalid("no key to check it with");
    }
    let signed_bytes = envelope.signed_bytes();
    let mut valid: Vec<String> = Vec::new();
    for signature in &envelope.signatures {
        for name in signers(keys, &signed_bytes, &signature.sig) {
            if !valid.contains(&name) {
                valid.push(name);
            }
        }
    }
    if valid.is_empty() {
        let hinted: Vec<&String> = match &bundle.public_key_hint {
            Some(hint) => keys
                .iter()
                .filter(|(_, key)| key.hint() == *hint)
                .map(|(name, _)| name)
                .collect(),
            None => Vec::new(),
        };
        return invalid(match (hinted.as_slice(), &bundle.public_key_hint) {
            ([], Some(hint)) => format!(
                "signed by a key the policy does not trust (key hint {hint}); trusted: {}",
                key_names(keys)
            ),
            (named, Some(_)) => format!(
                "payload tampered: the signature does not match the signed payload under key {}, which the bundle names",
                list_names(named)
            ),
            (_, None) if bundle.has_certificate => format!(
                "signed with a certificate (keyless); windlass checks key signatures ({})",
                key_names(keys)
            ),
            (_, None) => format!(
                "the signature does not verify with {} (the payload was altered, or another key signed it)",
                key_names(keys)
            ),
        });
    }
    let statement = match unverified {
        Ok(statement) => statement,
        Err(e) => return invalid(format!("signed by {}, but {e}", list_names(&valid))),
    };
    let subjects = statement.subject_digests();
    if !subjects.iter().any(|s| s == digest) {
        return digest_mismatch(&valid, &subjects, digest);
    }
    CheckOutcome::Valid { keys: valid }
}

/// Checks a legacy simple-signing payload and its base64 signature for `digest`.
pub fn check_simple_signing(
    payload: &[u8],
    signature_base64: Option<&str>,
    digest: &str,
    keys: &KeyRing<'_>,
) -> CheckOutcome {
    let Some(encoded) = signature_base64 else {
        return invalid(format!(
            "the layer has no `{}` annotation",
            simple_signing::SIGNATURE_ANNOTATION
        ));
    };
    let signature = match decode_base64(encoded.trim(), simple_signing::SIGNATURE_ANNOTATION) {
        Ok(signature) => signature,
        Err(e) => return invalid(e.to_string()),
    };
    if keys.is_empty() {
        return invalid("no key to check it with");
    }
    let valid = signers(keys, payload, &signature);
    if valid.is_empty() {
        return invalid(format!(
            "the signature does not verify with {} (the payload was altered, or another key signed it)",
            key_names(keys)
        ));
    }
    match simple_signing::parse(payload) {
        Err(e) => invalid(format!("signed by {}, but {e}", list_names(&valid))),
        Ok(claim) if claim.manifest_digest != digest => {
            digest_mismatch(&valid, &[claim.manifest_digest], digest)
        }
        Ok(_) => CheckOutcome::Valid { keys: valid },
    }
}

/// Checks whatever discovery found.
pub fn check_candidate(candidate: &Candidate, digest: &str, keys: &KeyRing<'_>) -> SignatureCheck {
    let (format, outcome) = match &candidate.content {
        CandidateContent::Bundle { bytes } => {
            (SignatureFormat::Bundle, check_bundle(bytes, digest, keys))
        }
        CandidateContent::SimpleSigning { payload, signature } => (
            SignatureFormat::SimpleSigning,
            check_simple_signing(payload, signature.as_deref(), digest, keys),
        ),
        CandidateContent::Unreadable { format, reason } => (*format, invalid(reason.clone())),
    };
    SignatureCheck {
        location: candidate.location.clone(),
        format,
        outcome,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::PrivateKey;
    use crate::sign;

    fn digest(n: u8) -> String {
        format!("sha256:{}", format!("{n:02x}").repeat(32))
    }

    #[test]
    fn bundle_outcomes_name_what_went_wrong() {
        let a = PrivateKey::generate_p256();
        let b = PrivateKey::generate_ed25519();
        let (pa, pb) = (a.public_key(), b.public_key());
        let ring = [("A".to_string(), &pa), ("B".to_string(), &pb)];
        let only_b = [("B".to_string(), &pb)];
        let good = sign::bundle(&a, &digest(1));
        assert_eq!(
            check_bundle(&good, &digest(1), &ring),
            CheckOutcome::Valid {
                keys: vec!["A".into()]
            }
        );
        let CheckOutcome::Invalid { reason } = check_bundle(&good, &digest(2), &ring) else {
            panic!()
        };
        assert_eq!(
            reason,
            format!("the signature by A is for {}, not {}", digest(1), digest(2))
        );
        let CheckOutcome::Invalid { reason } = check_bundle(&good, &digest(1), &only_b) else {
            panic!()
        };
        assert!(
            reason.starts_with("signed by a key the policy does not trust"),
            "{reason}"
        );

        // Swap the payload for one naming another digest, keep the signature.
        let mut json: serde_json::Value = serde_json::from_slice(&good).unwrap();
        let other = serde_json::to_vec(&Statement::cosign_signature(&digest(2))).unwrap();
        json["dsseEnvelope"]["payload"] = crate::dsse::encode_base64(&other).into();
        let tampered = serde_json::to_vec(&json).unwrap();
        let CheckOutcome::Invalid { reason } = check_bundle(&tampered, &digest(2), &ring) else {
            panic!()
        };
        assert!(reason.starts_with("payload tampered"), "{reason}");
        assert!(reason.contains("key A"), "{reason}");

        assert!(matches!(
            check_bundle(b"{not json", &digest(1), &ring),
            CheckOutcome::Invalid { .. }
        ));
    }

    #[test]
    fn attestations_are_not_signatures() {
        let key = PrivateKey::generate_p256();
        let public = key.public_key();
        let mut statement = Statement::cosign_signature(&digest(1));
        statement.predicate_type = "https://spdx.dev/Document".into();
        let bytes = sign::bundle_for_statement(&key, &statement);
        let outcome = check_bundle(&bytes, &digest(1), &[("A".to_string(), &public)]);
        assert!(
            matches!(outcome, CheckOutcome::NotASignature { .. }),
            "{outcome:?}"
        );
    }

    #[test]
    fn simple_signing_outcomes() {
        let key = PrivateKey::generate_ed25519();
        let public = key.public_key();
        let ring = [("K".to_string(), &public)];
        let (payload, signature) = sign::simple_signing(&key, "127.0.0.1:5000/demo", &digest(3));
        assert_eq!(
            check_simple_signing(&payload, Some(&signature), &digest(3), &ring),
            CheckOutcome::Valid {
                keys: vec!["K".into()]
            }
        );
        let mut altered = payload.clone();
        let at = altered.len() - 10;
        altered[at] ^= 1;
        assert!(matches!(
            check_simple_signing(&altered, Some(&signature), &digest(3), &ring),
            CheckOutcome::Invalid { reason } if reason.contains("payload was altered")
        ));
        assert!(matches!(
            check_simple_signing(&payload, Some(&signature), &digest(4), &ring),
            CheckOutcome::Invalid { reason } if reason.contains(&format!("is for {}", digest(3)))
        ));
        assert!(matches!(
            check_simple_signing(&payload, None, &digest(3), &ring),
            CheckOutcome::Invalid { reason } if reason.contains("annotation")
        ));
        assert!(matches!(
            check_simple_signing(&payload, Some("%%%"), &digest(3), &ring),
            CheckOutcome::Invalid { reason } if reason.contains("base64")
        ));
        // A valid signature over something that is not a payload is named as such.
        let junk = b"not json";
        let junk_signature = crate::dsse::encode_base64(&key.sign(junk));
        assert!(matches!(
            check_simple_signing(junk, Some(&junk_signature), &digest(3), &ring),
            CheckOutcome::Invalid { reason } if reason.starts_with("signed by K, but")
        ));
    }
}
