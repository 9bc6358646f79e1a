//! cosign's legacy signature payload ("simple signing"): the JSON a signature in the
//! `sha256-<hex>.sig` image signs, one layer per signature, the signature itself in the layer
//! annotation `dev.cosignproject.cosign/signature` (base64).
//!
//! ```json
//! {"critical":{"identity":{"docker-reference":"registry/repo"},
//!              "image":{"docker-manifest-digest":"sha256:..."},
//!              "type":"cosign container image signature"},
//!  "optional":null}
//! ```

use serde::{Deserialize, Serialize};

use crate::FormatError;

pub const MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
pub const SIGNATURE_TYPE: &str = "cosign container image signature";

#[derive(Serialize, Deserialize)]
struct Payload {
    critical: Critical,
    #[serde(default)]
    optional: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Serialize, Deserialize)]
struct Critical {
    identity: Identity,
    image: Image,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Serialize, Deserialize)]
struct Identity {
    #[serde(rename = "docker-reference")]
    docker_reference: String,
}

#[derive(Serialize, Deserialize)]
struct Image {
    #[serde(rename = "docker-manifest-digest")]
    docker_manifest_digest: String,
}

/// What a simple-signing payload claims.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimpleSigning {
    /// The repository the signer named (informational: cosign does not check it either).
    pub docker_reference: String,
    /// The signed manifest digest, `sha256:<hex>`.
    pub manifest_digest: String,
    pub optional: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Reads a payload; anything but cosign's signature type is refused.
pub fn parse(bytes: &[u8]) -> Result<SimpleSigning, FormatError> {
    let payload: Payload =
        serde_json::from_slice(bytes).map_err(|e| FormatError::SimpleSigning {
            message: e.to_string(),
        })?;
    if payload.critical.kind != SIGNATURE_TYPE {
        return Err(FormatError::SimpleSigning {
            message: format!(
                "critical.type is `{}`, not `{SIGNATURE_TYPE}`",
                payload.critical.kind
            ),
        });
    }
    Ok(SimpleSigning {
        docker_reference: payload.critical.identity.docker_reference,
        manifest_digest: payload.critical.image.docker_manifest_digest,
        optional: payload.optional,
    })
}

/// The payload cosign writes for `docker_reference@digest` without annotations: the same
/// bytes, field for field (`"optional":null`).
pub fn payload(docker_reference: &str, digest: &str) -> Vec<u8> {
    serde_json::to_vec(&Payload {
        critical: Critical {
            identity: Identity {
                docker_reference: docker_reference.into(),
            },
            image: Image {
                docker_manifest_digest: digest.into(),
            },
            kind: SIGNATURE_TYPE.into(),
        },
        optional: None,
    })
    .expect("the payload serialises")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_the_bytes_cosign_writes() {
        let digest = format!("sha256:{}", "ab".repeat(32));
        let written = payload("127.0.0.1:5000/demo", &digest);
        assert_eq!(
            String::from_utf8(written.clone()).unwrap(),
            format!(
                r#"{{"critical":{{"identity":{{"docker-reference":"127.0.0.1:5000/demo"}},"image":{{"docker-manifest-digest":"{digest}"}},"type":"cosign container image signature"}},"optional":null}}"#
            )
        );
        let read = parse(&written).unwrap();
        assert_eq!(read.manifest_digest, digest);
        assert_eq!(read.docker_reference, "127.0.0.1:5000/demo");
    }

    #[test]
    fn other_types_and_broken_json_are_refused() {
        let other = br#"{"critical":{"identity":{"docker-reference":"r"},"image":{"docker-manifest-digest":"sha256:00"},"type":"atomic container signature"},"optional":{}}"#;
        assert!(parse(other).unwrap_err().to_string().contains("atomic"));
        assert!(parse(b"{}").is_err());
        assert!(parse(b"").is_err());
        assert!(parse(br#"{"critical":{"identity":{},"image":{},"type":1}}"#).is_err());
    }
}
