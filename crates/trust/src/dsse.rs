//! DSSE envelopes and the in-toto statements they carry.
//!
//! A DSSE signature signs the pre-authentication encoding (PAE) of the payload, never the
//! payload alone: `"DSSEv1" SP LEN(type) SP type SP LEN(body) SP body`, lengths in ASCII
//! decimal bytes. Binding the type in stops a payload from being re-read as another format.

use std::collections::BTreeMap;

use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::FormatError;

pub const IN_TOTO_PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
pub const STATEMENT_V1: &str = "https://in-toto.io/Statement/v1";
/// The predicate of a cosign image signature; any other predicate is an attestation.
pub const COSIGN_SIGN_PREDICATE: &str = "https://sigstore.dev/cosign/sign/v1";

/// The DSSE pre-authentication encoding of `payload` under `payload_type`.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + payload_type.len() + 32);
    out.extend_from_slice(b"DSSEv1 ");
    out.extend_from_slice(payload_type.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload_type.as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload);
    out
}

/// Protobuf JSON writes bytes as padded standard base64 and reads any of the four variants.
pub(crate) fn decode_base64(text: &str, field: &str) -> Result<Vec<u8>, FormatError> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    STANDARD
        .decode(text)
        .or_else(|_| STANDARD_NO_PAD.decode(text))
        .or_else(|_| URL_SAFE.decode(text))
        .or_else(|_| URL_SAFE_NO_PAD.decode(text))
        .map_err(|e| FormatError::Base64 {
            field: field.into(),
            message: e.to_string(),
        })
}

pub(crate) fn encode_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EnvelopeJson {
    pub payload: String,
    pub payload_type: String,
    #[serde(default)]
    pub signatures: Vec<SignatureJson>,
}

#[derive(Serialize, Deserialize)]
pub(crate) struct SignatureJson {
    pub sig: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub keyid: String,
}

/// A decoded DSSE envelope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    pub payload_type: String,
    pub payload: Vec<u8>,
    pub signatures: Vec<EnvelopeSignature>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvelopeSignature {
    pub sig: Vec<u8>,
    pub keyid: String,
}

impl Envelope {
    pub(crate) fn from_json(json: EnvelopeJson) -> Result<Self, FormatError> {
        let payload = decode_base64(&json.payload, "dsseEnvelope.payload")?;
        let signatures = json
            .signatures
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                Ok(EnvelopeSignature {
                    sig: decode_base64(&s.sig, &format!("dsseEnvelope.signatures[{i}].sig"))?,
                    keyid: s.keyid,
                })
            })
            .collect::<Result<Vec<_>, FormatError>>()?;
        Ok(Envelope {
            payload_type: json.payload_type,
            payload,
            signatures,
        })
    }

    pub(crate) fn to_json(&self) -> EnvelopeJson {
        EnvelopeJson {
            payload: encode_base64(&self.payload),
            payload_type: self.payload_type.clone(),
            signatures: self
                .signatures
                .iter()
                .map(|s| SignatureJson {
                    sig: encode_base64(&s.sig),
                    keyid: s.keyid.clone(),
                })
                .collect(),
        }
    }

    /// Reads a bare DSSE envelope (`{"payload":..,"payloadType":..,"signatures":[..]}`).
    pub fn parse(bytes: &[u8]) -> Result<Self, FormatError> {
        let json: EnvelopeJson =
            serde_json::from_slice(bytes).map_err(|e| FormatError::Envelope {
                message: e.to_string(),
            })?;
        Self::from_json(json)
    }

    /// The bytes every signature of this envelope signs.
    pub fn signed_bytes(&self) -> Vec<u8> {
        pae(&self.payload_type, &self.payload)
    }
}

/// An in-toto statement (v1, or v0.1 which has the same shape).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Statement {
    #[serde(rename = "_type")]
    pub statement_type: String,
    pub subject: Vec<Subject>,
    pub predicate_type: String,
    #[serde(default)]
    pub predicate: serde_json::Value,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Subject {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default)]
    pub digest: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<serde_json::Map<String, serde_json::Value>>,
}

impl Statement {
    pub fn parse(bytes: &[u8]) -> Result<Self, FormatError> {
        let statement: Statement =
            serde_json::from_slice(bytes).map_err(|e| FormatError::Statement {
                message: e.to_string(),
            })?;
        if !statement
            .statement_type
            .starts_with("https://in-toto.io/Statement/")
        {
            return Err(FormatError::Statement {
                message: format!(
                    "_type is `{}`, not an in-toto statement",
                    statement.statement_type
                ),
            });
        }
        Ok(statement)
    }

    /// The statement `cosign sign` makes for an image digest (`sha256:<hex>`).
    pub fn cosign_signature(digest: &str) -> Self {
        let (algorithm, hex) = digest.split_once(':').unwrap_or(("sha256", digest));
        Statement {
            statement_type: STATEMENT_V1.into(),
            subject: vec![Subject {
                name: String::new(),
                digest: [(algorithm.to_string(), hex.to_string())].into(),
                annotations: Some(serde_json::Map::new()),
            }],
            predicate_type: COSIGN_SIGN_PREDICATE.into(),
            predicate: serde_json::json!({}),
        }
    }

    /// The `algorithm:hex` digests the subjects name.
    pub fn subject_digests(&self) -> Vec<String> {
        self.subject
            .iter()
            .flat_map(|s| s.digest.iter().map(|(alg, hex)| format!("{alg}:{hex}")))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pae_matches_the_dsse_specification_example() {
        // The worked example of the DSSE protocol document.
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world".to_vec()
        );
        assert_eq!(pae("", b""), b"DSSEv1 0  0 ".to_vec());
        // Lengths count bytes, not characters.
        assert_eq!(
            pae("t", "é".as_bytes()),
            "DSSEv1 1 t 2 é".as_bytes().to_vec()
        );
    }

    #[test]
    fn the_cosign_statement_serialises_as_cosign_writes_it() {
        let digest = format!("sha256:{}", "0f".repeat(32));
        let statement = Statement::cosign_signature(&digest);
        assert_eq!(
            serde_json::to_string(&statement).unwrap(),
            format!(
                r#"{{"_type":"https://in-toto.io/Statement/v1","subject":[{{"digest":{{"sha256":"{}"}},"annotations":{{}}}}],"predicateType":"https://sigstore.dev/cosign/sign/v1","predicate":{{}}}}"#,
                "0f".repeat(32)
            )
        );
        let read = Statement::parse(serde_json::to_string(&statement).unwrap().as_bytes()).unwrap();
        assert_eq!(read.subject_digests(), vec![digest]);
    }

    #[test]
    fn envelopes_accept_every_base64_variant_and_refuse_garbage() {
        let envelope = Envelope::parse(
            br#"{"payload":"aGk_","payloadType":"t","signatures":[{"sig":"AQI","keyid":"k"}]}"#,
        )
        .unwrap();
        assert_eq!(envelope.payload, b"hi?");
        assert_eq!(envelope.signatures[0].sig, [1, 2]);
        assert!(Envelope::parse(br#"{"payload":"!!","payloadType":"t"}"#).is_err());
        assert!(Envelope::parse(b"[]").is_err());
        assert!(Statement::parse(br#"{"_type":"x","subject":[],"predicateType":"p"}"#).is_err());
    }
}
