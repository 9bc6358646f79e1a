//! Trust: who published an image, checked by digest against a policy, compatible with cosign.
//!
//! - [`keys`]: ECDSA P-256 and Ed25519 public keys (PEM), private keys (PKCS#8 or cosign's
//!   encrypted format, [`cosign_key`]).
//! - Formats: cosign's legacy simple-signing payload ([`simple_signing`]), DSSE envelopes and
//!   in-toto statements ([`dsse`]), Sigstore bundles v0.3 ([`bundle`]), and the OCI shapes
//!   cosign stores them in ([`layout`]).
//! - [`discover`]: the signatures stored for a digest (referrers API, referrers tag schema,
//!   legacy `.sig` tag), within limits.
//! - [`check`]: one stored signature against the keys: valid by which key, or why not.
//! - [`policy`]: keys with validity windows, rules per artifact class and repository, and the
//!   pure judgement of a rule.
//! - [`verify`]: the one entry point a controller calls, [`Verifier::verify`], with a cache of
//!   verdicts by digest.
//! - [`sign`]: signatures in both formats, and publishing them to a registry.
//!
//! Registry access goes through `windlass-oci`; nothing here talks to a cluster.

pub mod bundle;
pub mod check;
pub mod cosign_key;
pub mod discover;
pub mod dsse;
pub mod keys;
pub mod layout;
pub mod policy;
pub mod sign;
pub mod simple_signing;
pub mod verify;

pub use check::{CheckOutcome, SignatureCheck, SignatureFormat};
pub use discover::{Limits, SignatureSource};
pub use keys::{KeyAlgorithm, KeyError, PrivateKey, PublicKey};
pub use policy::{
    ArtifactClass, PolicyError, Requirement, TrustPolicy, TrustRule, TrustedKey, UnsignedAction,
};
pub use sign::{Published, SignatureFormatChoice, publish_signature};
pub use verify::{Artifact, Decision, KeyResolver, Verdict, VerdictCache, Verifier};

/// Why stored signature data could not be read. These become refusal reasons, never panics.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum FormatError {
    #[error("not a cosign simple-signing payload: {message}")]
    SimpleSigning { message: String },
    #[error("not a DSSE envelope: {message}")]
    Envelope { message: String },
    #[error("not an in-toto statement: {message}")]
    Statement { message: String },
    #[error("not a Sigstore bundle: {message}")]
    Bundle { message: String },
    #[error("field `{field}` is not base64: {message}")]
    Base64 { field: String, message: String },
    #[error("not an OCI manifest: {message}")]
    Manifest { message: String },
}

/// Why verification or signing could not be carried out at all (as opposed to a refusal,
/// which is a [`Verdict`]).
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error(transparent)]
    Registry(#[from] windlass_oci::OciError),
    #[error(transparent)]
    Policy(#[from] PolicyError),
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("`{reference}`: {message}")]
    Artifact { reference: String, message: String },
    #[error("{reference}: {message}")]
    Publish { reference: String, message: String },
}
