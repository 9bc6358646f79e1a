//! Keys: ECDSA P-256 and Ed25519 public keys in PEM (SubjectPublicKeyInfo), and private keys
//! for signing, either plain PKCS#8 PEM or cosign's encrypted format (see [`crate::cosign_key`]).
//!
//! Signatures are what cosign makes and checks: ECDSA over SHA-256 with an ASN.1 DER
//! signature; Ed25519 as Ed25519ph (SHA-512 prehash, empty context), cosign's default for
//! Ed25519 keys. Pure Ed25519 signatures (older cosign releases) verify too.

use base64::Engine;
use ed25519_dalek::Digest as _;
use p256::ecdsa::signature::{Signer as _, Verifier as _};
use pkcs8::{DecodePrivateKey, EncodePrivateKey, LineEnding};
use sha2::{Sha256, Sha512};
use spki::{DecodePublicKey, EncodePublicKey};

use crate::cosign_key;

/// Why a key could not be read. `source` says where the key came from (a file, a Secret).
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{source_name}: not PEM ({message})")]
    NotPem {
        source_name: String,
        message: String,
    },
    #[error(
        "{source_name}: a `{label}` PEM block; expected `PUBLIC KEY` (an ECDSA P-256 or Ed25519 public key)"
    )]
    NotAPublicKey { source_name: String, label: String },
    #[error(
        "{source_name}: a `{label}` PEM block; expected `ENCRYPTED SIGSTORE PRIVATE KEY`, `ENCRYPTED COSIGN PRIVATE KEY`, `PRIVATE KEY` or `EC PRIVATE KEY`"
    )]
    NotAPrivateKey { source_name: String, label: String },
    #[error(
        "{source_name}: unsupported key algorithm {algorithm} (windlass verifies ECDSA P-256 and Ed25519)"
    )]
    Unsupported {
        source_name: String,
        algorithm: String,
    },
    #[error("{source_name}: {message}")]
    Malformed {
        source_name: String,
        message: String,
    },
    #[error("{source_name}: {message}")]
    Encrypted {
        source_name: String,
        message: String,
    },
}

/// The signature algorithm of a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum KeyAlgorithm {
    #[serde(rename = "ecdsa-p256-sha256")]
    EcdsaP256,
    #[serde(rename = "ed25519")]
    Ed25519,
}

impl std::fmt::Display for KeyAlgorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            KeyAlgorithm::EcdsaP256 => "ECDSA P-256",
            KeyAlgorithm::Ed25519 => "Ed25519",
        })
    }
}

/// A public key that verifies signatures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PublicKey {
    EcdsaP256(p256::ecdsa::VerifyingKey),
    Ed25519(ed25519_dalek::VerifyingKey),
}

const OID_EC_PUBLIC_KEY: &str = "1.2.840.10045.2.1";
const OID_P256: &str = "1.2.840.10045.3.1.7";
const OID_ED25519: &str = "1.3.101.112";

fn algorithm_name(oid: &str, parameter: Option<&str>) -> String {
    match (oid, parameter) {
        (OID_EC_PUBLIC_KEY, Some("1.3.132.0.34")) => "ECDSA P-384".into(),
        (OID_EC_PUBLIC_KEY, Some("1.3.132.0.35")) => "ECDSA P-521".into(),
        (OID_EC_PUBLIC_KEY, Some(curve)) => format!("ECDSA on curve {curve}"),
        ("1.2.840.113549.1.1.1", _) => "RSA".into(),
        (other, _) => format!("with OID {other}"),
    }
}

fn pem_block(text: &[u8], source_name: &str) -> Result<(String, Vec<u8>), KeyError> {
    let not_pem = |message: &str| KeyError::NotPem {
        source_name: source_name.into(),
        message: message.into(),
    };
    // Tolerate text around the block (comments, blank lines) and CRLF, as Go's decoder does.
    let text = String::from_utf8_lossy(text).replace("\r\n", "\n");
    let start = text
        .find("-----BEGIN ")
        .ok_or_else(|| not_pem("no `-----BEGIN` line"))?;
    let block = &text[start..];
    let end = block
        .find("-----END ")
        .ok_or_else(|| not_pem("no `-----END` line"))?;
    let close = block[end + 9..]
        .find("-----")
        .ok_or_else(|| not_pem("the `-----END` line is not closed"))?;
    let block = &block[..end + 9 + close + 5];
    let (label, bytes) =
        pkcs8::der::pem::decode_vec(block.as_bytes()).map_err(|e| KeyError::NotPem {
            source_name: source_name.into(),
            message: e.to_string(),
        })?;
    Ok((label.to_string(), bytes))
}

/// A key's algorithm OID and, for EC keys, its curve OID, as dotted text.
fn algorithm_of(algorithm: &spki::AlgorithmIdentifierRef<'_>) -> (String, Option<String>) {
    let parameter = algorithm
        .parameters
        .as_ref()
        .and_then(|p| p.decode_as::<spki::ObjectIdentifier>().ok())
        .map(|p| p.to_string());
    (algorithm.oid.to_string(), parameter)
}

impl PublicKey {
    /// Reads a `PUBLIC KEY` PEM block (what `cosign generate-key-pair` writes to `cosign.pub`).
    pub fn from_pem(text: &[u8], source_name: &str) -> Result<Self, KeyError> {
        let (label, der) = pem_block(text, source_name)?;
        if label != "PUBLIC KEY" {
            return Err(KeyError::NotAPublicKey {
                source_name: source_name.into(),
                label,
            });
        }
        Self::from_spki_der(&der, source_name)
    }

    /// Reads a DER SubjectPublicKeyInfo.
    pub fn from_spki_der(der: &[u8], source_name: &str) -> Result<Self, KeyError> {
        let malformed = |message: String| KeyError::Malformed {
            source_name: source_name.into(),
            message,
        };
        let info = spki::SubjectPublicKeyInfoRef::try_from(der)
            .map_err(|e| malformed(format!("not a SubjectPublicKeyInfo: {e}")))?;
        let (oid, parameter) = algorithm_of(&info.algorithm);
        match (oid.as_str(), parameter.as_deref()) {
            (OID_EC_PUBLIC_KEY, Some(OID_P256)) => {
                p256::ecdsa::VerifyingKey::from_public_key_der(der)
                    .map(PublicKey::EcdsaP256)
                    .map_err(|e| malformed(format!("ECDSA P-256 key: {e}")))
            }
            (OID_ED25519, _) => ed25519_dalek::VerifyingKey::from_public_key_der(der)
                .map(PublicKey::Ed25519)
                .map_err(|e| malformed(format!("Ed25519 key: {e}"))),
            _ => Err(KeyError::Unsupported {
                source_name: source_name.into(),
                algorithm: algorithm_name(&oid, parameter.as_deref()),
            }),
        }
    }

    pub fn algorithm(&self) -> KeyAlgorithm {
        match self {
            PublicKey::EcdsaP256(_) => KeyAlgorithm::EcdsaP256,
            PublicKey::Ed25519(_) => KeyAlgorithm::Ed25519,
        }
    }

    /// The DER SubjectPublicKeyInfo, as Go's `x509.MarshalPKIXPublicKey` writes it.
    pub fn spki_der(&self) -> Vec<u8> {
        let document = match self {
            PublicKey::EcdsaP256(key) => key.to_public_key_der(),
            PublicKey::Ed25519(key) => key.to_public_key_der(),
        };
        document
            .expect("a valid public key always encodes")
            .as_bytes()
            .to_vec()
    }

    pub fn to_pem(&self) -> String {
        let encoded = match self {
            PublicKey::EcdsaP256(key) => key.to_public_key_pem(LineEnding::LF),
            PublicKey::Ed25519(key) => key.to_public_key_pem(LineEnding::LF),
        };
        encoded.expect("a valid public key always encodes")
    }

    /// The key hint a Sigstore bundle carries in `verificationMaterial.publicKey.hint`:
    /// base64 of the SHA-256 of the DER public key, as cosign writes it.
    pub fn hint(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(self.spki_der()))
    }

    /// `sha256:<hex>` of the DER public key: a stable fingerprint for caches and reports.
    pub fn fingerprint(&self) -> String {
        format!("sha256:{:x}", Sha256::digest(self.spki_der()))
    }

    /// Whether `signature` is this key's signature of `message` (see the module docs for the
    /// schemes). Any malformed signature is simply not valid.
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        match self {
            PublicKey::EcdsaP256(key) => {
                // Go writes ASN.1 DER; a fixed-size r||s is accepted as some signers emit it.
                let parsed = p256::ecdsa::Signature::from_der(signature)
                    .or_else(|_| p256::ecdsa::Signature::from_slice(signature));
                parsed.is_ok_and(|sig| key.verify(message, &sig).is_ok())
            }
            PublicKey::Ed25519(key) => {
                let Ok(sig) = ed25519_dalek::Signature::from_slice(signature) else {
                    return false;
                };
                let prehashed = Sha512::new().chain_update(message);
                key.verify_prehashed_strict(prehashed, None, &sig).is_ok()
                    || key.verify_strict(message, &sig).is_ok()
            }
        }
    }
}

/// A private key that signs.
pub enum PrivateKey {
    EcdsaP256(p256::ecdsa::SigningKey),
    Ed25519(ed25519_dalek::SigningKey),
}

impl std::fmt::Debug for PrivateKey {
    // Never print key material.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PrivateKey({}, {})",
            self.algorithm(),
            self.public_key().fingerprint()
        )
    }
}

impl PrivateKey {
    /// A fresh ECDSA P-256 key (what `cosign generate-key-pair` makes).
    pub fn generate_p256() -> Self {
        PrivateKey::EcdsaP256(p256::ecdsa::SigningKey::random(&mut rand_core::OsRng))
    }

    /// A fresh Ed25519 key.
    pub fn generate_ed25519() -> Self {
        PrivateKey::Ed25519(ed25519_dalek::SigningKey::generate(&mut rand_core::OsRng))
    }

    /// Reads a private key PEM: cosign's encrypted format (decrypted with `password`), PKCS#8
    /// (`PRIVATE KEY`) or SEC1 (`EC PRIVATE KEY`).
    pub fn from_pem(text: &[u8], password: &[u8], source_name: &str) -> Result<Self, KeyError> {
        let (label, body) = pem_block(text, source_name)?;
        let der = match label.as_str() {
            cosign_key::SIGSTORE_PEM_LABEL | cosign_key::COSIGN_PEM_LABEL => {
                cosign_key::decrypt(&body, password).map_err(|message| KeyError::Encrypted {
                    source_name: source_name.into(),
                    message,
                })?
            }
            "PRIVATE KEY" => body,
            "EC PRIVATE KEY" => {
                let secret =
                    p256::SecretKey::from_sec1_der(&body).map_err(|e| KeyError::Malformed {
                        source_name: source_name.into(),
                        message: format!("EC private key (SEC1, P-256 expected): {e}"),
                    })?;
                return Ok(PrivateKey::EcdsaP256(secret.into()));
            }
            _ => {
                return Err(KeyError::NotAPrivateKey {
                    source_name: source_name.into(),
                    label,
                });
            }
        };
        Self::from_pkcs8_der(&der, source_name)
    }

    pub fn from_pkcs8_der(der: &[u8], source_name: &str) -> Result<Self, KeyError> {
        let malformed = |message: String| KeyError::Malformed {
            source_name: source_name.into(),
            message,
        };
        let info = pkcs8::PrivateKeyInfo::try_from(der)
            .map_err(|e| malformed(format!("not a PKCS#8 private key: {e}")))?;
        let (oid, parameter) = algorithm_of(&info.algorithm);
        match (oid.as_str(), parameter.as_deref()) {
            (OID_EC_PUBLIC_KEY, Some(OID_P256)) => p256::ecdsa::SigningKey::from_pkcs8_der(der)
                .map(PrivateKey::EcdsaP256)
                .map_err(|e| malformed(format!("ECDSA P-256 key: {e}"))),
            (OID_ED25519, _) => ed25519_dalek::SigningKey::from_pkcs8_der(der)
                .map(PrivateKey::Ed25519)
                .map_err(|e| malformed(format!("Ed25519 key: {e}"))),
            _ => Err(KeyError::Unsupported {
                source_name: source_name.into(),
                algorithm: algorithm_name(&oid, parameter.as_deref()),
            }),
        }
    }

    pub fn algorithm(&self) -> KeyAlgorithm {
        self.public_key().algorithm()
    }

    pub fn public_key(&self) -> PublicKey {
        match self {
            PrivateKey::EcdsaP256(key) => PublicKey::EcdsaP256(*key.verifying_key()),
            PrivateKey::Ed25519(key) => PublicKey::Ed25519(key.verifying_key()),
        }
    }

    /// Signs `message` the way cosign does: ECDSA over SHA-256 (DER), Ed25519ph.
    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        match self {
            PrivateKey::EcdsaP256(key) => {
                let signature: p256::ecdsa::Signature = key.sign(message);
                signature.to_der().as_bytes().to_vec()
            }
            PrivateKey::Ed25519(key) => {
                let prehashed = Sha512::new().chain_update(message);
                key.sign_prehashed(prehashed, None)
                    .expect("Ed25519ph with an empty context cannot fail")
                    .to_bytes()
                    .to_vec()
            }
        }
    }

    fn pkcs8_der(&self) -> Vec<u8> {
        let document = match self {
            PrivateKey::EcdsaP256(key) => key.to_pkcs8_der(),
            PrivateKey::Ed25519(key) => key.to_pkcs8_der(),
        };
        document
            .expect("a valid private key always encodes")
            .as_bytes()
            .to_vec()
    }

    /// Plain PKCS#8 PEM (`PRIVATE KEY`), unencrypted.
    pub fn to_pkcs8_pem(&self) -> String {
        let der = self.pkcs8_der();
        pkcs8::der::pem::encode_string("PRIVATE KEY", LineEnding::LF, &der)
            .expect("PEM encoding of DER cannot fail")
    }

    /// cosign's encrypted PEM (`ENCRYPTED SIGSTORE PRIVATE KEY`), readable by `cosign sign --key`.
    pub fn to_cosign_pem(&self, password: &[u8]) -> String {
        let body = cosign_key::encrypt(&self.pkcs8_der(), password);
        pkcs8::der::pem::encode_string(cosign_key::SIGSTORE_PEM_LABEL, LineEnding::LF, &body)
            .expect("PEM encoding cannot fail")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_keys_round_trip_through_pem_for_both_algorithms() {
        for key in [PrivateKey::generate_p256(), PrivateKey::generate_ed25519()] {
            let public = key.public_key();
            let pem = public.to_pem();
            assert!(pem.starts_with("-----BEGIN PUBLIC KEY-----\n"));
            let read = PublicKey::from_pem(pem.as_bytes(), "test.pub").unwrap();
            assert_eq!(read, public);
            assert_eq!(read.hint(), public.hint());
            // The hint is base64 of a SHA-256: 44 characters with padding.
            assert_eq!(public.hint().len(), 44);
        }
    }

    #[test]
    fn signatures_verify_only_for_their_message_and_key() {
        for (key, other) in [
            (PrivateKey::generate_p256(), PrivateKey::generate_p256()),
            (
                PrivateKey::generate_ed25519(),
                PrivateKey::generate_ed25519(),
            ),
        ] {
            let signature = key.sign(b"payload");
            assert!(key.public_key().verify(b"payload", &signature));
            assert!(!key.public_key().verify(b"payloae", &signature));
            assert!(!other.public_key().verify(b"payload", &signature));
            assert!(!key.public_key().verify(b"payload", b"not a signature"));
            assert!(!key.public_key().verify(b"payload", &[]));
        }
    }

    #[test]
    fn pure_ed25519_signatures_from_older_signers_verify() {
        let PrivateKey::Ed25519(key) = PrivateKey::generate_ed25519() else {
            unreachable!()
        };
        let signature = key.sign(b"payload").to_bytes();
        let public = PublicKey::Ed25519(key.verifying_key());
        assert!(public.verify(b"payload", &signature));
        assert!(!public.verify(b"other", &signature));
    }

    #[test]
    fn private_keys_read_from_pkcs8_and_the_cosign_format() {
        for key in [PrivateKey::generate_p256(), PrivateKey::generate_ed25519()] {
            let plain = PrivateKey::from_pem(key.to_pkcs8_pem().as_bytes(), b"", "k").unwrap();
            assert_eq!(plain.public_key(), key.public_key());
            let encrypted = key.to_cosign_pem(b"s3cret");
            assert!(encrypted.starts_with("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----"));
            let read = PrivateKey::from_pem(encrypted.as_bytes(), b"s3cret", "cosign.key").unwrap();
            assert_eq!(read.public_key(), key.public_key());
            let wrong = PrivateKey::from_pem(encrypted.as_bytes(), b"guess", "cosign.key");
            let message = wrong.unwrap_err().to_string();
            assert!(message.contains("cosign.key"), "{message}");
            assert!(message.contains("password"), "{message}");
        }
    }

    #[test]
    fn wrong_blocks_and_algorithms_are_named() {
        let key = PrivateKey::generate_p256();
        let error = PublicKey::from_pem(key.to_pkcs8_pem().as_bytes(), "k.pub").unwrap_err();
        assert!(
            matches!(error, KeyError::NotAPublicKey { ref label, .. } if label == "PRIVATE KEY")
        );
        let error = PublicKey::from_pem(b"hello", "k.pub").unwrap_err();
        assert!(matches!(error, KeyError::NotPem { .. }), "{error}");
        let public_pem = key.public_key().to_pem();
        let error = PrivateKey::from_pem(public_pem.as_bytes(), b"", "k.key").unwrap_err();
        assert!(matches!(error, KeyError::NotAPrivateKey { .. }), "{error}");
        // An RSA public key (1024-bit, generated once for this test) is named as such.
        let rsa = "-----BEGIN PUBLIC KEY-----
MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQDXf8DImgN6I8oeCr13AVJ6HyW6
LSjDmT0xbp21hrym84oKr0woSqQTshsY6wifXdvIYEWFaYxJqRQOebhFhv0t2e4t
WxO/pD+6aZlPqi8pi1O+7DRB0puWBABo5UIOpI641W7OL4SRocKzTh8VXcmfHn0X
/p/S4QmpQ3ERs4fKGQIDAQAB
-----END PUBLIC KEY-----
";
        let error = PublicKey::from_pem(rsa.as_bytes(), "rsa.pub").unwrap_err();
        assert!(error.to_string().contains("RSA"), "{error}");
    }

    #[test]
    fn pem_with_surrounding_text_and_crlf_reads() {
        let key = PrivateKey::generate_ed25519().public_key();
        let text = format!(
            "# release key\r\n{}\r\n",
            key.to_pem().replace('\n', "\r\n")
        );
        assert_eq!(PublicKey::from_pem(text.as_bytes(), "k").unwrap(), key);
    }
}
