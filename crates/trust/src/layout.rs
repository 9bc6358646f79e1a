//! The OCI shapes cosign stores signatures in, read and written field for field as cosign
//! v3 (go-containerregistry underneath) writes them.
//!
//! - A bundle is a referrer manifest: an OCI image manifest with the empty config
//!   (`application/vnd.oci.empty.v1+json`, the two bytes `{}`), one layer holding the bundle,
//!   `artifactType` set to the bundle media type, the image as `subject`, and the annotations
//!   `dev.sigstore.bundle.content`, `dev.sigstore.bundle.predicateType` and
//!   `org.opencontainers.image.created`. It is pushed by digest. A registry without the
//!   referrers API learns of it through the referrers tag schema: an OCI index tagged
//!   `sha256-<hex>` listing every referrer of `sha256:<hex>`, sorted by digest.
//! - Legacy signatures are one image tagged `sha256-<hex>.sig`, one layer per signature
//!   (the simple-signing payload, uncompressed), the signature in a layer annotation.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::FormatError;

pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub const OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
pub const EMPTY_CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.empty.v1+json";
pub const EMPTY_CONFIG: &[u8] = b"{}";

pub const BUNDLE_CONTENT_ANNOTATION: &str = "dev.sigstore.bundle.content";
pub const BUNDLE_PREDICATE_ANNOTATION: &str = "dev.sigstore.bundle.predicateType";
pub const CREATED_ANNOTATION: &str = "org.opencontainers.image.created";

pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

/// `sha256:<hex>` -> `sha256-<hex>`: the referrers tag schema.
pub fn referrers_tag(digest: &str) -> String {
    digest.replacen(':', "-", 1)
}

/// `sha256:<hex>` -> `sha256-<hex>.sig`: cosign's legacy signature tag.
pub fn signature_tag(digest: &str) -> String {
    format!("{}.sig", referrers_tag(digest))
}

/// Whether `digest` is `sha256:` and 64 lowercase hex digits, the only form signatures use.
pub fn is_sha256_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// An OCI descriptor, fields in go-containerregistry's order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    pub media_type: String,
    pub size: i64,
    pub digest: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
}

impl Descriptor {
    pub fn of(media_type: &str, bytes: &[u8]) -> Self {
        Descriptor {
            media_type: media_type.into(),
            size: bytes.len() as i64,
            digest: sha256_digest(bytes),
            annotations: None,
            artifact_type: None,
        }
    }
}

/// An OCI image manifest, fields in go-containerregistry's order (`artifactType` last, as
/// cosign appends it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub schema_version: u32,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub media_type: String,
    pub config: Descriptor,
    #[serde(default)]
    pub layers: Vec<Descriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Descriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
}

impl Manifest {
    pub fn parse(bytes: &[u8]) -> Result<Self, FormatError> {
        serde_json::from_slice(bytes).map_err(|e| FormatError::Manifest {
            message: e.to_string(),
        })
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a manifest serialises")
    }

    /// The manifest's artifact type, or for older writers its config media type.
    pub fn effective_artifact_type(&self) -> &str {
        self.artifact_type
            .as_deref()
            .or(self.config.artifact_type.as_deref())
            .unwrap_or(&self.config.media_type)
    }
}

/// An OCI image index (the referrers tag schema's content).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Index {
    pub schema_version: u32,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub media_type: String,
    #[serde(default)]
    pub manifests: Vec<Descriptor>,
}

/// The referrer manifest holding a bundle for `subject`, as cosign writes it.
pub fn bundle_referrer(
    subject: Descriptor,
    bundle: &[u8],
    predicate_type: &str,
    created_rfc3339: &str,
) -> Manifest {
    let bundle_type = crate::bundle::MEDIA_TYPE_V03;
    let mut config = Descriptor::of(EMPTY_CONFIG_MEDIA_TYPE, EMPTY_CONFIG);
    config.artifact_type = Some(bundle_type.into());
    Manifest {
        schema_version: 2,
        media_type: OCI_MANIFEST.into(),
        config,
        layers: vec![Descriptor::of(bundle_type, bundle)],
        annotations: Some(
            [
                (
                    BUNDLE_CONTENT_ANNOTATION.to_string(),
                    "dsse-envelope".to_string(),
                ),
                (
                    BUNDLE_PREDICATE_ANNOTATION.to_string(),
                    predicate_type.to_string(),
                ),
                (CREATED_ANNOTATION.to_string(), created_rfc3339.to_string()),
            ]
            .into(),
        ),
        subject: Some(Descriptor {
            annotations: None,
            artifact_type: None,
            ..subject
        }),
        artifact_type: Some(bundle_type.into()),
    }
}

/// The referrers tag schema index with `referrer` added (kept sorted by digest, as
/// go-containerregistry keeps it); `None` when it lists the referrer already.
pub fn index_with_referrer(
    existing: Option<&[u8]>,
    referrer: Descriptor,
) -> Result<Option<Vec<u8>>, FormatError> {
    let mut index = match existing {
        Some(bytes) => {
            serde_json::from_slice::<Index>(bytes).map_err(|e| FormatError::Manifest {
                message: format!("the referrers tag holds no OCI index: {e}"),
            })?
        }
        None => Index {
            schema_version: 2,
            media_type: OCI_INDEX.into(),
            manifests: Vec::new(),
        },
    };
    if index.manifests.iter().any(|m| m.digest == referrer.digest) {
        return Ok(None);
    }
    index.manifests.push(referrer);
    index.manifests.sort_by(|a, b| a.digest.cmp(&b.digest));
    Ok(Some(
        serde_json::to_vec(&index).expect("an index serialises"),
    ))
}

/// The config of a `.sig` image, as go-containerregistry builds it for an empty image with
/// appended layers: zero times, one history entry and one diff ID per layer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignatureImageConfig {
    pub architecture: String,
    pub created: String,
    pub history: Vec<serde_json::Value>,
    pub os: String,
    pub rootfs: RootFs,
    pub config: serde_json::Value,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootFs {
    #[serde(rename = "type")]
    pub kind: String,
    pub diff_ids: Vec<String>,
}

const ZERO_TIME: &str = "0001-01-01T00:00:00Z";

impl SignatureImageConfig {
    pub fn empty() -> Self {
        SignatureImageConfig {
            architecture: String::new(),
            created: ZERO_TIME.into(),
            history: Vec::new(),
            os: String::new(),
            rootfs: RootFs {
                kind: "layers".into(),
                diff_ids: Vec::new(),
            },
            config: serde_json::json!({}),
        }
    }
}

/// The `.sig` image with one more signature layer: `existing` (manifest and config) when the
/// tag exists, else a new image. `None` when the same signature of the same payload is there
/// already (cosign skips such duplicates too).
pub fn signature_image_with(
    existing: Option<(&Manifest, &[u8])>,
    payload: &[u8],
    signature_base64: &str,
) -> Result<Option<(Manifest, Vec<u8>)>, FormatError> {
    let payload_digest = sha256_digest(payload);
    let (mut manifest, mut config) = match existing {
        Some((manifest, config_bytes)) => {
            let config: SignatureImageConfig =
                serde_json::from_slice(config_bytes).map_err(|e| FormatError::Manifest {
                    message: format!("the .sig image config: {e}"),
                })?;
            (manifest.clone(), config)
        }
        None => (
            Manifest {
                schema_version: 2,
                media_type: OCI_MANIFEST.into(),
                config: Descriptor::default(),
                layers: Vec::new(),
                annotations: None,
                subject: None,
                artifact_type: None,
            },
            SignatureImageConfig::empty(),
        ),
    };
    let annotation = crate::simple_signing::SIGNATURE_ANNOTATION;
    let duplicate = manifest.layers.iter().any(|layer| {
        layer.digest == payload_digest
            && layer
                .annotations
                .as_ref()
                .and_then(|a| a.get(annotation))
                .is_some_and(|s| s == signature_base64)
    });
    if duplicate {
        return Ok(None);
    }
    let mut layer = Descriptor::of(crate::simple_signing::MEDIA_TYPE, payload);
    layer.annotations = Some([(annotation.to_string(), signature_base64.to_string())].into());
    manifest.layers.push(layer);
    // Uncompressed layers: the diff ID is the layer digest.
    config.rootfs.diff_ids.push(payload_digest);
    config
        .history
        .push(serde_json::json!({ "created": ZERO_TIME }));
    let config_bytes = serde_json::to_vec(&config).expect("a config serialises");
    manifest.config = Descriptor::of(OCI_CONFIG, &config_bytes);
    Ok(Some((manifest, config_bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_follow_the_schemas() {
        let digest = format!("sha256:{}", "a1".repeat(32));
        assert_eq!(
            referrers_tag(&digest),
            format!("sha256-{}", "a1".repeat(32))
        );
        assert_eq!(
            signature_tag(&digest),
            format!("sha256-{}.sig", "a1".repeat(32))
        );
        assert!(is_sha256_digest(&digest));
        assert!(!is_sha256_digest("sha256:ABC"));
        assert!(!is_sha256_digest(&digest.replace("sha256", "sha512")));
    }

    #[test]
    fn the_referrers_index_stays_sorted_and_free_of_duplicates() {
        let a = Descriptor::of(OCI_MANIFEST, b"a");
        let b = Descriptor::of(OCI_MANIFEST, b"b");
        let first = index_with_referrer(None, b.clone()).unwrap().unwrap();
        let second = index_with_referrer(Some(&first), a.clone())
            .unwrap()
            .unwrap();
        let index: Index = serde_json::from_slice(&second).unwrap();
        let mut expected = vec![a.digest.clone(), b.digest.clone()];
        expected.sort();
        assert_eq!(
            index
                .manifests
                .iter()
                .map(|m| m.digest.clone())
                .collect::<Vec<_>>(),
            expected
        );
        assert_eq!(index_with_referrer(Some(&second), a).unwrap(), None);
        assert!(index_with_referrer(Some(b"[]"), b).is_err());
    }

    #[test]
    fn signature_layers_append_and_duplicates_are_skipped() {
        let (manifest, config) = signature_image_with(None, b"payload-1", "c2ln")
            .unwrap()
            .unwrap();
        assert_eq!(manifest.layers.len(), 1);
        assert_eq!(manifest.config.digest, sha256_digest(&config));
        let again = signature_image_with(Some((&manifest, &config)), b"payload-1", "c2ln").unwrap();
        assert!(again.is_none());
        let (two, config_two) =
            signature_image_with(Some((&manifest, &config)), b"payload-1", "b3RoZXI=")
                .unwrap()
                .unwrap();
        assert_eq!(two.layers.len(), 2);
        let parsed: SignatureImageConfig = serde_json::from_slice(&config_two).unwrap();
        assert_eq!(parsed.rootfs.diff_ids.len(), 2);
        assert_eq!(parsed.history.len(), 2);
    }
}
