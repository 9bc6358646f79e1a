//! OpenShift release signatures, checked the way the cluster version operator checks them.
//!
//! A signature store serves `<store>/sha256=<hex>/signature-<n>` ([`signature_url`]); each is a
//! binary OpenPGP signed message (what `gpg --sign` writes: usually compressed, one-pass signed,
//! literal data) whose content is an "atomic container signature":
//!
//! ```json
//! {"critical":{"identity":{"docker-reference":"quay.io/openshift-release-dev/ocp-release:4.2.0"},
//!              "image":{"docker-manifest-digest":"sha256:..."},
//!              "type":"atomic container signature"},
//!  "optional":{"creator":"...","timestamp":1690000000}}
//! ```
//!
//! The trusted keys are ASCII-armored OpenPGP public keys, as in the operator's verification
//! ConfigMap (`verifier-public-key-<name>`). No HTTP here: fetching is the caller's.
//!
//! Like the operator: signatures that carry an expiry are refused once expired, the content may
//! hold no unknown fields, must name a docker reference and exactly the expected digest. Stricter
//! than it: signing subkeys count only when bound by their primary key (with the subkey's back
//! signature), and revoked keys are refused. Key expiry is not checked, as the operator does not.

use std::io::Read;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pgp::composed::{Deserializable, Message, SignedPublicKey};
use pgp::packet::{self, Signature, SignatureType, SubpacketData};
use pgp::types::{Fingerprint, KeyDetails, KeyId, Tag, VerifyingKey};
use serde_json::{Map, Value};

/// The `critical.type` of a release signature.
pub const SIGNATURE_TYPE: &str = "atomic container signature";

/// The signed content is a few hundred bytes; the limit keeps a compressed message from
/// inflating without bound before its signature is known to be good.
const MAX_CONTENT: u64 = 64 * 1024;

/// Why a key ring could not be built, or a signature was refused.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum OpenPgpError {
    #[error("key `{name}` is not an ASCII-armored OpenPGP public key: {message}")]
    KeyParse { name: String, message: String },
    #[error("not an OpenPGP signed message: {message}")]
    NotAMessage { message: String },
    #[error("the OpenPGP message is not signed")]
    NotSigned,
    #[error("the signed content is larger than {limit} bytes")]
    ContentTooLarge { limit: u64 },
    #[error("signed by {signer}, which is no key of the ring")]
    UnknownSigner { signer: String },
    #[error("the signature by key `{key}` ({fingerprint}) does not verify: {message}")]
    BadSignature {
        key: String,
        fingerprint: String,
        message: String,
    },
    #[error("key `{key}` ({fingerprint}) is revoked")]
    KeyRevoked { key: String, fingerprint: String },
    #[error("the signature by key `{key}` expired at {expired_at} (seconds since the epoch)")]
    SignatureExpired { key: String, expired_at: u64 },
    #[error("the signed content is not an atomic container signature: {message}")]
    Content { message: String },
    #[error("the signed content has type `{found}`, not `{SIGNATURE_TYPE}`")]
    WrongType { found: String },
    #[error("the signature names no docker reference")]
    MissingIdentity,
    #[error("the signature is for digest `{signed}`, not `{expected}`")]
    DigestMismatch { expected: String, signed: String },
    #[error("digest `{digest}` is not of the form sha256:<64 lowercase hex digits>")]
    UnsupportedDigest { digest: String },
    #[error("signature store `{store}`: {message}")]
    InvalidStore { store: String, message: String },
    #[error("signatures are numbered from 1, not {n}")]
    SignatureIndex { n: usize },
}

/// Trusted public keys, each under the name it was configured with.
#[derive(Clone, Debug, Default)]
pub struct KeyRing {
    keys: Vec<RingKey>,
}

#[derive(Clone, Debug)]
struct RingKey {
    name: String,
    /// The primary key's fingerprint, upper-case hex (the operator's spelling).
    fingerprint: String,
    signers: Vec<Signer>,
}

/// A key that may have made a signature: the primary key, or a subkey bound to it.
#[derive(Clone, Debug)]
struct Signer {
    key: SignerKey,
    key_id: KeyId,
    fingerprint: Fingerprint,
    /// Whether the key flags allow signing data; a key that may not is still matched, so that
    /// the refusal names it rather than calling it unknown.
    may_sign: bool,
    revoked: bool,
}

#[derive(Clone, Debug)]
enum SignerKey {
    Primary(packet::PublicKey),
    Subkey(packet::PublicSubkey),
}

impl SignerKey {
    fn verifying(&self) -> &dyn VerifyingKey {
        match self {
            SignerKey::Primary(key) => key,
            SignerKey::Subkey(key) => key,
        }
    }
}

impl KeyRing {
    /// Parses `(name, armored text)` pairs. A text may hold several keys, in one armored block
    /// or in several blocks one after the other.
    pub fn from_armored(named: &[(String, String)]) -> Result<KeyRing, OpenPgpError> {
        let mut keys = Vec::new();
        for (name, text) in named {
            let parse_error = |message: String| OpenPgpError::KeyParse {
                name: name.clone(),
                message,
            };
            let blocks = armored_blocks(text);
            if blocks.is_empty() {
                return Err(parse_error("no PGP PUBLIC KEY BLOCK".to_string()));
            }
            let before = keys.len();
            for block in blocks {
                let (parsed, _headers) = SignedPublicKey::from_string_many(block)
                    .map_err(|e| parse_error(e.to_string()))?;
                for key in parsed {
                    let key = key.map_err(|e| parse_error(e.to_string()))?;
                    keys.push(ring_key(name, &key));
                }
            }
            if keys.len() == before {
                return Err(parse_error("the block holds no public key".to_string()));
            }
        }
        Ok(KeyRing { keys })
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// `(name, primary key fingerprint)` of each key, in configuration order.
    pub fn keys(&self) -> impl Iterator<Item = (&str, &str)> {
        self.keys
            .iter()
            .map(|key| (key.name.as_str(), key.fingerprint.as_str()))
    }
}

const BEGIN: &str = "-----BEGIN PGP PUBLIC KEY BLOCK-----";
const END: &str = "-----END PGP PUBLIC KEY BLOCK-----";

/// Each armored public key block of `text`, from its BEGIN line to the end of its END line (the
/// armor reader stops after the first block, so several blocks are cut apart here).
fn armored_blocks(text: &str) -> Vec<&str> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(BEGIN) {
        let from_begin = &rest[start..];
        let Some(end) = from_begin.find(END) else {
            // Unterminated: the parser says what is wrong with it.
            blocks.push(from_begin);
            break;
        };
        let end = end + END.len();
        blocks.push(&from_begin[..end]);
        rest = &from_begin[end..];
    }
    blocks
}

fn ring_key(name: &str, key: &SignedPublicKey) -> RingKey {
    let primary = &key.primary_key;
    let revoked = key.details.revocation_signatures.iter().any(|sig| {
        sig.typ() == Some(SignatureType::KeyRevocation) && sig.verify_key(primary).is_ok()
    });
    let mut signers = vec![Signer {
        key: SignerKey::Primary(primary.clone()),
        key_id: primary.legacy_key_id(),
        fingerprint: primary.fingerprint(),
        may_sign: primary_may_sign(key),
        revoked,
    }];
    for subkey in &key.public_subkeys {
        // Only a binding made by the primary key, with the subkey's own back signature, ties a
        // subkey to the key: anyone can append a subkey packet to a published key.
        let bound = subkey.signatures.iter().any(|sig| {
            sig.typ() == Some(SignatureType::SubkeyBinding)
                && sig.key_flags().sign()
                && sig.verify_subkey_binding(primary, &subkey.key).is_ok()
                && sig.embedded_signature().is_some_and(|back| {
                    back.verify_primary_key_binding(&subkey.key, primary)
                        .is_ok()
                })
        });
        if !bound {
            continue;
        }
        let subkey_revoked = subkey.signatures.iter().any(|sig| {
            sig.typ() == Some(SignatureType::SubkeyRevocation)
                && sig.verify_subkey_binding(primary, &subkey.key).is_ok()
        });
        signers.push(Signer {
            key: SignerKey::Subkey(subkey.key.clone()),
            key_id: subkey.key.legacy_key_id(),
            fingerprint: subkey.key.fingerprint(),
            may_sign: true,
            revoked: revoked || subkey_revoked,
        });
    }
    RingKey {
        name: name.to_string(),
        fingerprint: upper_hex(&primary.fingerprint()),
        signers,
    }
}

/// The newest valid self-signature decides: its key flags, when it has any, must allow signing.
/// A key without one (or without flags) may sign, as older keys carry no flags.
fn primary_may_sign(key: &SignedPublicKey) -> bool {
    let primary = &key.primary_key;
    let user_sigs = key.details.users.iter().flat_map(|user| {
        user.signatures.iter().filter(|sig| {
            sig.verify_certification(primary, Tag::UserId, &user.id)
                .is_ok()
        })
    });
    let direct_sigs = key
        .details
        .direct_signatures
        .iter()
        .filter(|sig| sig.verify_key(primary).is_ok());
    let newest = user_sigs
        .chain(direct_sigs)
        .filter(|sig| has_key_flags(sig))
        .max_by_key(|sig| sig.created().map(|t| t.as_secs()).unwrap_or(0));
    newest.is_none_or(|sig| sig.key_flags().sign())
}

fn has_key_flags(sig: &Signature) -> bool {
    sig.config().is_some_and(|config| {
        config
            .hashed_subpackets()
            .any(|p| matches!(p.data, SubpacketData::KeyFlags(_)))
    })
}

fn upper_hex(fingerprint: &Fingerprint) -> String {
    format!("{fingerprint:X}")
}

/// A signature that verified, and what it claims.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    /// The configured name of the key that verified.
    pub key: String,
    /// That key's primary fingerprint, upper-case hex.
    pub fingerprint: String,
    /// The fingerprint of the key that made the signature: the primary's, or a signing
    /// subkey's.
    pub signing_key: String,
    pub docker_reference: String,
    /// The signed digest, `sha256:<hex>` (equal to the one asked for).
    pub digest: String,
}

/// Verifies one signature for `digest` ("sha256:<hex>"): the signature must be made by a key of
/// the ring (primary or signing subkey), the JSON must be type "atomic container signature"
/// and name exactly `digest`.
pub fn verify_signature(
    ring: &KeyRing,
    signature: &[u8],
    digest: &str,
) -> Result<Verified, OpenPgpError> {
    verify_signature_at(ring, signature, digest, SystemTime::now())
}

/// [`verify_signature`] as of `now`, for signatures that carry an expiry.
pub fn verify_signature_at(
    ring: &KeyRing,
    signature: &[u8],
    digest: &str,
    now: SystemTime,
) -> Result<Verified, OpenPgpError> {
    split_digest(digest)?;
    let (content, signed_by) = open_signed_message(ring, signature, now)?;
    let claim = parse_content(&content)?;
    // Byte for byte, as the operator compares.
    if claim.digest != digest {
        return Err(OpenPgpError::DigestMismatch {
            expected: digest.to_string(),
            signed: claim.digest,
        });
    }
    Ok(Verified {
        key: signed_by.key,
        fingerprint: signed_by.fingerprint,
        signing_key: signed_by.signing_key,
        docker_reference: claim.docker_reference,
        digest: claim.digest,
    })
}

struct SignedBy {
    key: String,
    fingerprint: String,
    signing_key: String,
}

/// Reads the message to its end (its signatures are over all of it) and checks them against
/// the ring; the content is returned only when one verifies.
fn open_signed_message(
    ring: &KeyRing,
    bytes: &[u8],
    now: SystemTime,
) -> Result<(Vec<u8>, SignedBy), OpenPgpError> {
    let not_a_message = |message: String| OpenPgpError::NotAMessage { message };
    let mut message = Message::from_bytes(bytes).map_err(|e| not_a_message(e.to_string()))?;
    // gpg compresses around the signed message; a signer may also compress inside it.
    for _ in 0..2 {
        message = message
            .decompress()
            .map_err(|e| not_a_message(e.to_string()))?;
    }
    match message {
        Message::Signed { .. } => {}
        Message::Literal { .. } => return Err(OpenPgpError::NotSigned),
        Message::Encrypted { .. } => return Err(not_a_message("it is encrypted".to_string())),
        Message::Compressed { .. } => {
            return Err(not_a_message("compressed too deeply".to_string()));
        }
    }

    let mut content = Vec::new();
    (&mut message)
        .take(MAX_CONTENT + 1)
        .read_to_end(&mut content)
        .map_err(|e| not_a_message(e.to_string()))?;
    if content.len() as u64 > MAX_CONTENT {
        return Err(OpenPgpError::ContentTooLarge { limit: MAX_CONTENT });
    }

    let Message::Signed { reader, .. } = &message else {
        unreachable!("checked above");
    };
    let mut first_refusal = None;
    let mut issuers = Vec::new();
    for index in 0..reader.num_signatures() {
        let Some(sig) = reader.signature(index) else {
            continue;
        };
        issuers.push(issuer_name(sig));
        // Without an issuer every key is tried, and a key that does not verify it is no signer.
        let anonymous = sig.issuer_fingerprint().is_empty() && sig.issuer_key_id().is_empty();
        for ring_key in &ring.keys {
            for signer in ring_key.signers.iter().filter(|s| issued_by(sig, s)) {
                match check_one(&message, index, sig, ring_key, signer, now) {
                    Ok(signed_by) => return Ok((content, signed_by)),
                    Err(OpenPgpError::BadSignature { .. }) if anonymous => {}
                    Err(refusal) => {
                        first_refusal.get_or_insert(refusal);
                    }
                }
            }
        }
    }
    Err(
        first_refusal.unwrap_or_else(|| OpenPgpError::UnknownSigner {
            signer: if issuers.is_empty() {
                "no signature".to_string()
            } else {
                issuers.join(", ")
            },
        }),
    )
}

fn check_one(
    message: &Message<'_>,
    index: usize,
    sig: &Signature,
    ring_key: &RingKey,
    signer: &Signer,
    now: SystemTime,
) -> Result<SignedBy, OpenPgpError> {
    let bad = |message: String| OpenPgpError::BadSignature {
        key: ring_key.name.clone(),
        fingerprint: ring_key.fingerprint.clone(),
        message,
    };
    message
        .verify_nested_explicit(index, signer.key.verifying())
        .map_err(|e| bad(verify_failure(&e)))?;
    // Only a signature over the data itself vouches for it (not, say, a certification).
    match sig.typ() {
        Some(SignatureType::Binary | SignatureType::Text) => {}
        other => return Err(bad(format!("signature type {other:?} does not sign data"))),
    }
    if !signer.may_sign {
        return Err(bad("the key's flags do not allow signing".to_string()));
    }
    if signer.revoked {
        return Err(OpenPgpError::KeyRevoked {
            key: ring_key.name.clone(),
            fingerprint: ring_key.fingerprint.clone(),
        });
    }
    if let (Some(created), Some(lifetime)) = (sig.created(), sig.signature_expiration_time()) {
        // A zero lifetime means no expiry.
        if lifetime.as_secs() > 0 {
            let expired_at = u64::from(created.as_secs()) + u64::from(lifetime.as_secs());
            if now > UNIX_EPOCH + Duration::from_secs(expired_at) {
                return Err(OpenPgpError::SignatureExpired {
                    key: ring_key.name.clone(),
                    expired_at,
                });
            }
        }
    }
    Ok(SignedBy {
        key: ring_key.name.clone(),
        fingerprint: ring_key.fingerprint.clone(),
        signing_key: upper_hex(&signer.fingerprint),
    })
}

/// One line for the refusal; a hash that differs in its first bytes means the data changed.
fn verify_failure(error: &pgp::errors::Error) -> String {
    let text = error.to_string();
    if text.contains("invalid signed hash value") {
        "the signed data does not match the signature (changed after signing)".to_string()
    } else {
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

/// A signature without issuer subpackets could be by any key: each is tried.
fn issued_by(sig: &Signature, signer: &Signer) -> bool {
    let fingerprints = sig.issuer_fingerprint();
    let key_ids = sig.issuer_key_id();
    (fingerprints.is_empty() && key_ids.is_empty())
        || fingerprints.iter().any(|fp| **fp == signer.fingerprint)
        || key_ids.iter().any(|id| **id == signer.key_id)
}

fn issuer_name(sig: &Signature) -> String {
    if let Some(fp) = sig.issuer_fingerprint().first() {
        format!("key {}", upper_hex(fp))
    } else if let Some(id) = sig.issuer_key_id().first() {
        format!("key id {}", id.to_string().to_uppercase())
    } else {
        "an unnamed key".to_string()
    }
}

struct Claim {
    docker_reference: String,
    digest: String,
}

/// The operator's order of checks: JSON, type, identity, digest (the last by the caller). Like
/// its decoder: unknown fields and mistyped values are refused, missing or null ones are empty.
/// Read by hand because serde's derived structs would also take a JSON array.
fn parse_content(content: &[u8]) -> Result<Claim, OpenPgpError> {
    let value: Value = serde_json::from_slice(content).map_err(|e| OpenPgpError::Content {
        message: e.to_string(),
    })?;
    let top = object(Some(&value), "the content", &["critical", "optional"])?;
    let critical = object(
        field(top, "critical"),
        "critical",
        &["type", "image", "identity"],
    )?;
    let optional = object(
        field(top, "optional"),
        "optional",
        &["creator", "timestamp"],
    )?;
    string(field(optional, "creator"), "optional.creator")?;
    match field(optional, "timestamp") {
        None | Some(Value::Null) => {}
        Some(value) if value.as_i64().is_some() => {}
        Some(_) => return Err(content_error("optional.timestamp is not an integer")),
    }

    let kind = string(field(critical, "type"), "critical.type")?;
    if kind != SIGNATURE_TYPE {
        return Err(OpenPgpError::WrongType { found: kind });
    }
    let identity = object(
        field(critical, "identity"),
        "critical.identity",
        &["docker-reference"],
    )?;
    let docker_reference = string(
        field(identity, "docker-reference"),
        "critical.identity.docker-reference",
    )?;
    if docker_reference.is_empty() {
        return Err(OpenPgpError::MissingIdentity);
    }
    let image = object(
        field(critical, "image"),
        "critical.image",
        &["docker-manifest-digest"],
    )?;
    let digest = string(
        field(image, "docker-manifest-digest"),
        "critical.image.docker-manifest-digest",
    )?;
    Ok(Claim {
        docker_reference,
        digest,
    })
}

fn content_error(message: &str) -> OpenPgpError {
    OpenPgpError::Content {
        message: message.to_string(),
    }
}

fn field<'a>(map: Option<&'a Map<String, Value>>, name: &str) -> Option<&'a Value> {
    map.and_then(|map| map.get(name))
}

/// An object with only `allowed` fields; absent or null is `None`.
fn object<'a>(
    value: Option<&'a Value>,
    what: &str,
    allowed: &[&str],
) -> Result<Option<&'a Map<String, Value>>, OpenPgpError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => {
            if let Some(unknown) = map.keys().find(|key| !allowed.contains(&key.as_str())) {
                return Err(content_error(&format!(
                    "{what} has unknown field `{unknown}`"
                )));
            }
            Ok(Some(map))
        }
        Some(_) => Err(content_error(&format!("{what} is not an object"))),
    }
}

/// A string; absent or null is empty.
fn string(value: Option<&Value>, what: &str) -> Result<String, OpenPgpError> {
    match value {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(_) => Err(content_error(&format!("{what} is not a string"))),
    }
}

/// `("sha256", hex)` of a `sha256:<64 lowercase hex>` digest.
fn split_digest(digest: &str) -> Result<(&str, &str), OpenPgpError> {
    let unsupported = || OpenPgpError::UnsupportedDigest {
        digest: digest.to_string(),
    };
    let hex = digest.strip_prefix("sha256:").ok_or_else(unsupported)?;
    if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(unsupported());
    }
    Ok(("sha256", hex))
}

/// The path of signature n (1-based) of `digest` under a store URL, in the CVO's layout:
/// `<store>/sha256=<hex>/signature-<n>` (no double slash when the store ends with '/').
pub fn signature_url(store: &str, digest: &str, n: usize) -> Result<String, OpenPgpError> {
    let (algorithm, hex) = split_digest(digest)?;
    if n == 0 {
        return Err(OpenPgpError::SignatureIndex { n });
    }
    let invalid = |message: &str| OpenPgpError::InvalidStore {
        store: store.to_string(),
        message: message.to_string(),
    };
    // Path segments appended after a query or fragment would not be part of the path.
    if store.contains(['?', '#']) {
        return Err(invalid("has a query or fragment"));
    }
    let base = store.trim_end_matches('/');
    if base.is_empty() {
        return Err(invalid("is empty"));
    }
    Ok(format!("{base}/{algorithm}={hex}/signature-{n}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RELEASE_KEY: &str = include_str!("../tests/data/openpgp/release-key.asc");
    const OTHER_KEY: &str = include_str!("../tests/data/openpgp/other-key.asc");
    const BOTH_KEYS: &str = include_str!("../tests/data/openpgp/both-keys.asc");
    const SIGNATURE_1: &[u8] = include_bytes!("../tests/data/openpgp/signature-1");
    const SIGNATURE_ED25519: &[u8] = include_bytes!("../tests/data/openpgp/signature-ed25519");
    const SIGNATURE_WRONG_DIGEST: &[u8] =
        include_bytes!("../tests/data/openpgp/signature-wrong-digest");
    const SIGNATURE_WRONG_TYPE: &[u8] =
        include_bytes!("../tests/data/openpgp/signature-wrong-type");
    const SIGNATURE_EXPIRING: &[u8] = include_bytes!("../tests/data/openpgp/signature-expiring");
    const SIGNATURE_TAMPERED: &[u8] = include_bytes!("../tests/data/openpgp/signature-tampered");

    /// The digest the fixtures sign (see make-fixtures.sh).
    const DIGEST: &str = "sha256:5e7d8c1f4b2a96e03d1c8f7a6b5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e";
    const REFERENCE: &str = "quay.io/openshift-release-dev/ocp-release:4.2.0";

    fn ring(keys: &[(&str, &str)]) -> KeyRing {
        let named: Vec<(String, String)> = keys
            .iter()
            .map(|(name, text)| (name.to_string(), text.to_string()))
            .collect();
        KeyRing::from_armored(&named).expect("fixture keys parse")
    }

    fn both() -> KeyRing {
        ring(&[
            ("verifier-public-key-release", RELEASE_KEY),
            ("verifier-public-key-other", OTHER_KEY),
        ])
    }

    fn fingerprint_of(ring: &KeyRing, name: &str) -> String {
        ring.keys()
            .find(|(n, _)| *n == name)
            .map(|(_, fp)| fp.to_string())
            .expect("key in ring")
    }

    #[test]
    fn key_ring_from_fixtures() {
        let ring = both();
        assert!(!ring.is_empty());
        assert_eq!(ring.len(), 2);
        for (_, fingerprint) in ring.keys() {
            assert_eq!(fingerprint.len(), 40, "{fingerprint}");
            assert!(
                fingerprint
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
            );
        }
        assert!(KeyRing::from_armored(&[]).expect("empty").is_empty());
    }

    #[test]
    fn several_keys_in_one_value() {
        // Two armored blocks one after the other, as `gpg --export` of two keys into one file.
        let concatenated = format!("{RELEASE_KEY}\n{OTHER_KEY}");
        let one = ring(&[("both", &concatenated)]);
        assert_eq!(one.len(), 2);
        assert!(one.keys().all(|(name, _)| name == "both"));
        assert!(verify_signature(&one, SIGNATURE_1, DIGEST).is_ok());
        assert!(verify_signature(&one, SIGNATURE_ED25519, DIGEST).is_ok());

        // Both keys in a single armored block.
        let block = ring(&[("block", BOTH_KEYS)]);
        assert_eq!(block.len(), 2);
        let fingerprints: Vec<&str> = block.keys().map(|(_, fp)| fp).collect();
        let separate = both();
        let expected: Vec<&str> = separate.keys().map(|(_, fp)| fp).collect();
        assert_eq!(fingerprints, expected);
        assert!(verify_signature(&block, SIGNATURE_1, DIGEST).is_ok());
        assert!(verify_signature(&block, SIGNATURE_ED25519, DIGEST).is_ok());
    }

    #[test]
    fn unparsable_key_is_named() {
        let named = vec![
            ("good".to_string(), RELEASE_KEY.to_string()),
            ("broken".to_string(), "not a key".to_string()),
        ];
        let error = KeyRing::from_armored(&named).unwrap_err();
        assert!(
            matches!(&error, OpenPgpError::KeyParse { name, .. } if name == "broken"),
            "{error}"
        );

        // Armor whose body is damaged.
        let damaged = RELEASE_KEY.replacen("mQEN", "mQEx", 1);
        assert_ne!(damaged, RELEASE_KEY);
        let error = KeyRing::from_armored(&[("damaged".to_string(), damaged)]).unwrap_err();
        assert!(
            matches!(&error, OpenPgpError::KeyParse { name, .. } if name == "damaged"),
            "{error}"
        );
    }

    #[test]
    fn signature_by_release_key() {
        let ring = both();
        let verified = verify_signature(&ring, SIGNATURE_1, DIGEST).expect("verifies");
        let fingerprint = fingerprint_of(&ring, "verifier-public-key-release");
        assert_eq!(
            verified,
            Verified {
                key: "verifier-public-key-release".to_string(),
                fingerprint: fingerprint.clone(),
                signing_key: fingerprint,
                docker_reference: REFERENCE.to_string(),
                digest: DIGEST.to_string(),
            }
        );
    }

    #[test]
    fn signature_by_ed25519_signing_subkey() {
        let ring = both();
        let verified = verify_signature(&ring, SIGNATURE_ED25519, DIGEST).expect("verifies");
        assert_eq!(verified.key, "verifier-public-key-other");
        assert_eq!(
            verified.fingerprint,
            fingerprint_of(&ring, "verifier-public-key-other")
        );
        // The other key's primary only certifies: the subkey made the signature.
        assert_ne!(verified.signing_key, verified.fingerprint);
        assert_eq!(verified.docker_reference, REFERENCE);
    }

    #[test]
    fn unknown_signer_is_refused() {
        let only_other = ring(&[("other", OTHER_KEY)]);
        let error = verify_signature(&only_other, SIGNATURE_1, DIGEST).unwrap_err();
        let OpenPgpError::UnknownSigner { signer } = &error else {
            panic!("{error}");
        };
        // Names the release key's fingerprint, which the signature carries.
        let release = fingerprint_of(&ring(&[("release", RELEASE_KEY)]), "release");
        assert!(signer.contains(&release), "{signer}");

        let empty = KeyRing::default();
        assert!(matches!(
            verify_signature(&empty, SIGNATURE_ED25519, DIGEST),
            Err(OpenPgpError::UnknownSigner { .. })
        ));
    }

    #[test]
    fn tampered_signature_does_not_verify() {
        let error = verify_signature(&both(), SIGNATURE_TAMPERED, DIGEST).unwrap_err();
        assert!(
            matches!(&error, OpenPgpError::BadSignature { key, .. } if key == "verifier-public-key-release"),
            "{error}"
        );
    }

    #[test]
    fn damaged_compressed_signature_is_refused() {
        // A byte flipped inside the compressed stream: whatever breaks first, nothing verifies.
        for at in [10, SIGNATURE_1.len() / 2, SIGNATURE_1.len() - 10] {
            let mut damaged = SIGNATURE_1.to_vec();
            damaged[at] ^= 0x55;
            assert!(
                verify_signature(&both(), &damaged, DIGEST).is_err(),
                "byte {at}"
            );
        }
    }

    #[test]
    fn wrong_digest_is_refused() {
        let error = verify_signature(&both(), SIGNATURE_WRONG_DIGEST, DIGEST).unwrap_err();
        assert_eq!(
            error,
            OpenPgpError::DigestMismatch {
                expected: DIGEST.to_string(),
                signed: "sha256:0000000000000000000000000000000000000000000000000000000000000001"
                    .to_string(),
            }
        );
        assert!(error.to_string().contains(DIGEST));

        // The correct signature, asked about another digest.
        let other = "sha256:0000000000000000000000000000000000000000000000000000000000000001";
        assert!(matches!(
            verify_signature(&both(), SIGNATURE_1, other),
            Err(OpenPgpError::DigestMismatch { .. })
        ));
    }

    #[test]
    fn wrong_type_is_refused() {
        let error = verify_signature(&both(), SIGNATURE_WRONG_TYPE, DIGEST).unwrap_err();
        assert_eq!(
            error,
            OpenPgpError::WrongType {
                found: "cosign container image signature".to_string()
            }
        );
    }

    #[test]
    fn not_a_message_is_refused() {
        for bytes in [
            &b""[..],
            b"{\"critical\":{}}",
            RELEASE_KEY.as_bytes(),
            &[0xff; 64],
        ] {
            let error = verify_signature(&both(), bytes, DIGEST).unwrap_err();
            assert!(matches!(error, OpenPgpError::NotAMessage { .. }), "{error}");
        }
    }

    #[test]
    fn unsupported_digest_forms() {
        for digest in [
            "",
            "5e7d8c1f4b2a96e03d1c8f7a6b5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e",
            "sha512:5e7d8c1f4b2a96e03d1c8f7a6b5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e",
            "sha256:5E7D8C1F4B2A96E03D1C8F7A6B5E4D3C2B1A0F9E8D7C6B5A4F3E2D1C0B9A8F7E",
            "sha256:5e7d",
            "sha256=5e7d8c1f4b2a96e03d1c8f7a6b5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e",
        ] {
            assert!(
                matches!(
                    verify_signature(&both(), SIGNATURE_1, digest),
                    Err(OpenPgpError::UnsupportedDigest { .. })
                ),
                "{digest}"
            );
            assert!(
                matches!(
                    signature_url("https://s", digest, 1),
                    Err(OpenPgpError::UnsupportedDigest { .. })
                ),
                "{digest}"
            );
        }
    }

    #[test]
    fn content_checks() {
        let good = format!(
            r#"{{"critical":{{"identity":{{"docker-reference":"{REFERENCE}"}},"image":{{"docker-manifest-digest":"{DIGEST}"}},"type":"atomic container signature"}},"optional":{{"creator":"x","timestamp":1690000000}}}}"#
        );
        let claim = parse_content(good.as_bytes()).expect("good");
        assert_eq!(claim.digest, DIGEST);
        assert_eq!(claim.docker_reference, REFERENCE);
        let no_optional = good.replace(r#","optional":{"creator":"x","timestamp":1690000000}"#, "");
        assert!(parse_content(no_optional.as_bytes()).is_ok());

        let unknown = good.replace(r#""creator":"x""#, r#""creator":"x","extra":1"#);
        assert!(matches!(
            parse_content(unknown.as_bytes()),
            Err(OpenPgpError::Content { .. })
        ));
        let no_identity = good.replace(REFERENCE, "");
        assert!(matches!(
            parse_content(no_identity.as_bytes()),
            Err(OpenPgpError::MissingIdentity)
        ));
        for not_content in [
            "[]".to_string(),
            "not json".to_string(),
            good.replace(r#""timestamp":1690000000"#, r#""timestamp":"now""#),
            good.replace(r#""creator":"x""#, r#""creator":7"#),
            good.replace(r#"{"docker-reference""#, r#"[{"docker-reference""#)
                .replace(r#"4.2.0"}"#, r#"4.2.0"}]"#),
            good.replace(r#""type":"#, r#""extra":true,"type":"#),
        ] {
            assert!(
                matches!(
                    parse_content(not_content.as_bytes()),
                    Err(OpenPgpError::Content { .. })
                ),
                "{not_content}"
            );
        }
        assert!(
            matches!(parse_content(b"{}"), Err(OpenPgpError::WrongType { found }) if found.is_empty())
        );
    }

    #[test]
    fn expired_signature_is_refused() {
        // Made at 1690000000 (make-fixtures.sh freezes gpg's clock) to expire a day later.
        let at = |secs: u64| UNIX_EPOCH + Duration::from_secs(secs);
        let expires = 1_690_000_000 + 86_400;
        assert!(verify_signature_at(&both(), SIGNATURE_EXPIRING, DIGEST, at(expires)).is_ok());
        assert_eq!(
            verify_signature_at(&both(), SIGNATURE_EXPIRING, DIGEST, at(expires + 1)),
            Err(OpenPgpError::SignatureExpired {
                key: "verifier-public-key-release".to_string(),
                expired_at: expires,
            })
        );
        // Without an expiry, any time is fine.
        let far = at(u64::from(u32::MAX) * 2);
        assert!(verify_signature_at(&both(), SIGNATURE_1, DIGEST, far).is_ok());
    }

    #[test]
    fn signature_urls() {
        let hex = DIGEST.strip_prefix("sha256:").unwrap();
        let expected = format!("https://mirror.example/sigs/sha256={hex}/signature-1");
        assert_eq!(
            signature_url("https://mirror.example/sigs", DIGEST, 1).unwrap(),
            expected
        );
        assert_eq!(
            signature_url("https://mirror.example/sigs/", DIGEST, 1).unwrap(),
            expected
        );
        assert_eq!(
            signature_url("https://mirror.example", DIGEST, 3).unwrap(),
            format!("https://mirror.example/sha256={hex}/signature-3")
        );
        assert_eq!(
            signature_url("https://s", DIGEST, 0),
            Err(OpenPgpError::SignatureIndex { n: 0 })
        );
        for store in ["", "/", "https://s/?a=1", "https://s#x"] {
            assert!(
                matches!(
                    signature_url(store, DIGEST, 1),
                    Err(OpenPgpError::InvalidStore { .. })
                ),
                "{store}"
            );
        }
    }
}
