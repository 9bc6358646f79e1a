//! Sigstore bundles (v0.3), as `cosign sign --new-bundle-format` stores them: a DSSE envelope
//! over an in-toto statement, and verification material that, for key-based signing, is only
//! a hint naming the key (base64 of the SHA-256 of its DER public key).
//!
//! Written field for field as cosign writes it (protobuf JSON names, empty fields left out):
//!
//! ```json
//! {"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json",
//!  "verificationMaterial":{"publicKey":{"hint":"..."}},
//!  "dsseEnvelope":{"payload":"...","payloadType":"application/vnd.in-toto+json",
//!                  "signatures":[{"sig":"..."}]}}
//! ```
//!
//! Transparency-log entries and timestamps may be present (a bundle uploaded to Rekor); they
//! are kept as counts only: windlass verifies against the policy's keys, offline.

use serde::{Deserialize, Serialize};

use crate::FormatError;
use crate::dsse::{Envelope, EnvelopeJson};

pub const MEDIA_TYPE_V03: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// The older spelling of the same media type.
const MEDIA_TYPE_V03_PARAMETER: &str = "application/vnd.dev.sigstore.bundle+json;version=0.3";

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BundleJson {
    media_type: String,
    #[serde(default)]
    verification_material: Option<VerificationMaterialJson>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message_signature: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dsse_envelope: Option<EnvelopeJson>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct VerificationMaterialJson {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    public_key: Option<PublicKeyJson>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    x509_certificate_chain: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    certificate: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tlog_entries: Vec<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timestamp_verification_data: Option<serde_json::Value>,
}

#[derive(Serialize, Deserialize)]
struct PublicKeyJson {
    #[serde(default)]
    hint: String,
}

/// A parsed bundle whose content is a DSSE envelope (the only kind an image signature is).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bundle {
    pub media_type: String,
    /// `verificationMaterial.publicKey.hint`, when the bundle was signed with a key.
    pub public_key_hint: Option<String>,
    /// Whether the signer attached a certificate instead (keyless signing).
    pub has_certificate: bool,
    pub tlog_entries: usize,
    pub envelope: Envelope,
}

impl Bundle {
    pub fn parse(bytes: &[u8]) -> Result<Self, FormatError> {
        let json: BundleJson = serde_json::from_slice(bytes).map_err(|e| FormatError::Bundle {
            message: e.to_string(),
        })?;
        if json.media_type != MEDIA_TYPE_V03 && json.media_type != MEDIA_TYPE_V03_PARAMETER {
            return Err(FormatError::Bundle {
                message: format!(
                    "mediaType is `{}`; windlass reads Sigstore bundles v0.3 (`{MEDIA_TYPE_V03}`)",
                    json.media_type
                ),
            });
        }
        let material = json.verification_material.unwrap_or_default();
        let Some(envelope) = json.dsse_envelope else {
            return Err(FormatError::Bundle {
                message: if json.message_signature.is_some() {
                    "holds a message signature (a signed blob), not a DSSE envelope over an image"
                        .into()
                } else {
                    "has no dsseEnvelope".into()
                },
            });
        };
        Ok(Bundle {
            media_type: json.media_type,
            public_key_hint: material
                .public_key
                .map(|k| k.hint)
                .filter(|h| !h.is_empty()),
            has_certificate: material.certificate.is_some()
                || material.x509_certificate_chain.is_some(),
            tlog_entries: material.tlog_entries.len(),
            envelope: Envelope::from_json(envelope)?,
        })
    }

    /// The bundle bytes for a key-signed envelope, as cosign writes them.
    pub fn to_json(envelope: &Envelope, public_key_hint: &str) -> Vec<u8> {
        let json = BundleJson {
            media_type: MEDIA_TYPE_V03.into(),
            verification_material: Some(VerificationMaterialJson {
                public_key: Some(PublicKeyJson {
                    hint: public_key_hint.into(),
                }),
                ..Default::default()
            }),
            message_signature: None,
            dsse_envelope: Some(envelope.to_json()),
        };
        serde_json::to_vec(&json).expect("a bundle serialises")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsse::EnvelopeSignature;

    #[test]
    fn writes_cosigns_field_order_and_reads_it_back() {
        let envelope = Envelope {
            payload_type: crate::dsse::IN_TOTO_PAYLOAD_TYPE.into(),
            payload: b"{}".to_vec(),
            signatures: vec![EnvelopeSignature {
                sig: vec![1, 2, 3],
                keyid: String::new(),
            }],
        };
        let bytes = Bundle::to_json(&envelope, "aGludA==");
        assert_eq!(
            String::from_utf8(bytes.clone()).unwrap(),
            r#"{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{"hint":"aGludA=="}},"dsseEnvelope":{"payload":"e30=","payloadType":"application/vnd.in-toto+json","signatures":[{"sig":"AQID"}]}}"#
        );
        let bundle = Bundle::parse(&bytes).unwrap();
        assert_eq!(bundle.public_key_hint.as_deref(), Some("aGludA=="));
        assert_eq!(bundle.envelope, envelope);
        assert!(!bundle.has_certificate);
    }

    #[test]
    fn other_versions_and_contents_are_named() {
        let v01 = br#"{"mediaType":"application/vnd.dev.sigstore.bundle+json;version=0.1","dsseEnvelope":{"payload":"","payloadType":"t"}}"#;
        assert!(
            Bundle::parse(v01)
                .unwrap_err()
                .to_string()
                .contains("version=0.1")
        );
        let blob = br#"{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","messageSignature":{"signature":"AQ=="}}"#;
        assert!(
            Bundle::parse(blob)
                .unwrap_err()
                .to_string()
                .contains("message signature")
        );
        assert!(Bundle::parse(b"null").is_err());
    }
}
