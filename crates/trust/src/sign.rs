//! Signing without cosign: the two formats cosign v3 writes with a key and no transparency
//! log, byte for byte in the payloads. Publishing them where `cosign verify` looks is in
//! `publish` (the `registry` feature).

use crate::bundle::Bundle;
use crate::dsse::{Envelope, EnvelopeSignature, IN_TOTO_PAYLOAD_TYPE, Statement, encode_base64};
use crate::keys::PrivateKey;
use crate::simple_signing;

/// Which format `windlass sign` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignatureFormatChoice {
    /// A Sigstore bundle stored as an OCI 1.1 referrer (cosign v3's default).
    Bundle,
    /// The simple-signing layer in the `sha256-<hex>.sig` image (`--new-bundle-format=false`).
    Legacy,
}

/// A simple-signing payload for `docker_reference@digest` and its base64 signature.
pub fn simple_signing(key: &PrivateKey, docker_reference: &str, digest: &str) -> (Vec<u8>, String) {
    let payload = simple_signing::payload(docker_reference, digest);
    let signature = encode_base64(&key.sign(&payload));
    (payload, signature)
}

/// A Sigstore bundle for any statement (tests sign attestations with it).
pub fn bundle_for_statement(key: &PrivateKey, statement: &Statement) -> Vec<u8> {
    let payload = serde_json::to_vec(statement).expect("a statement serialises");
    let mut envelope = Envelope {
        payload_type: IN_TOTO_PAYLOAD_TYPE.into(),
        payload,
        signatures: Vec::new(),
    };
    let sig = key.sign(&envelope.signed_bytes());
    envelope.signatures.push(EnvelopeSignature {
        sig,
        keyid: String::new(),
    });
    Bundle::to_json(&envelope, &key.public_key().hint())
}

/// The bundle `cosign sign --key` writes for an image digest.
pub fn bundle(key: &PrivateKey, digest: &str) -> Vec<u8> {
    bundle_for_statement(key, &Statement::cosign_signature(digest))
}
