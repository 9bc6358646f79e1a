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
//! - [`sign`]: signatures in both formats; `publish` stores them in a registry.
//!
//! Registry access (`discover`, `verify`, publishing signatures) goes through `windlass-oci`
//! and is behind the `registry` feature, off by default: the policy types and every format and
//! check stay free of an HTTP client for crates that only need those (the API crate). Nothing
//! here talks to a cluster.

pub mod bundle;
pub mod check;
pub mod cosign_key;
#[cfg(feature = "registry")]
pub mod discover;
pub mod dsse;
pub mod found;
pub mod keys;
pub mod layout;
pub mod openpgp;
pub mod policy;
#[cfg(feature = "registry")]
pub mod publish;
pub mod sign;
pub mod simple_signing;
#[cfg(feature = "registry")]
pub mod verify;

pub use check::{CheckOutcome, SignatureCheck, SignatureFormat};
#[cfg(feature = "registry")]
pub use discover::SignatureSource;
pub use found::Limits;
pub use keys::{KeyAlgorithm, KeyError, PrivateKey, PublicKey};
pub use policy::{
    ArtifactClass, PolicyError, Requirement, TrustPolicy, TrustRule, TrustedKey, UnsignedAction,
};
#[cfg(feature = "registry")]
pub use publish::{Published, publish_signature};
pub use sign::SignatureFormatChoice;
#[cfg(feature = "registry")]
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
    #[cfg(feature = "registry")]
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
