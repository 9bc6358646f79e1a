//! The OCI image layout a package carries: which manifests an image is made of, which blobs
//! they name, and the `index.json` that lists each image under the reference the package
//! gives it. Manifests are kept as the exact bytes the registry served, so every digest is
//! the source registry's.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// The media types a package carries manifests of (images and indexes, OCI and Docker).
pub const MANIFEST_TYPES: [&str; 4] = [OCI_INDEX, OCI_MANIFEST, DOCKER_LIST, DOCKER_MANIFEST];
/// Registries refuse manifests above 4 MiB; so does a package.
pub const MAX_MANIFEST_BYTES: u64 = 4 * 1024 * 1024;
/// Annotation on `index.json` entries: the reference the package names the image by.
pub const REF_NAME: &str = "org.opencontainers.image.ref.name";
/// The same, under the name containerd reads.
pub const CONTAINERD_NAME: &str = "io.containerd.image.name";
/// `oci-layout`'s content.
pub const OCI_LAYOUT: &str = "{\"imageLayoutVersion\":\"1.0.0\"}";

/// Whether `media_type` is an index (several manifests, one per platform).
pub fn is_index(media_type: &str) -> bool {
    media_type == OCI_INDEX || media_type == DOCKER_LIST
}

/// A content descriptor, as manifests and indexes list them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    #[serde(default)]
    pub media_type: String,
    pub digest: String,
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Platform {
    #[serde(default)]
    pub architecture: String,
    #[serde(default)]
    pub os: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        if let Some(variant) = &self.variant {
            write!(f, "/{variant}")?;
        }
        Ok(())
    }
}

/// Why a manifest cannot be carried; names the manifest.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    #[error("manifest {digest}: media type `{media_type}` is not an image or index ({})", MANIFEST_TYPES.join(", "))]
    MediaType { digest: String, media_type: String },
    #[error("manifest {digest}: {message}")]
    Invalid { digest: String, message: String },
    #[error("manifest {digest} is {size} bytes, more than {MAX_MANIFEST_BYTES}")]
    TooLarge { digest: String, size: u64 },
}

/// What one manifest refers to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Children {
    /// Manifests of an index.
    pub manifests: Vec<Descriptor>,
    /// Config and layers of an image manifest.
    pub blobs: Vec<Descriptor>,
}

/// The descriptors a manifest (`media_type`, exact `bytes`) refers to.
pub fn children(digest: &str, media_type: &str, bytes: &[u8]) -> Result<Children, LayoutError> {
    let invalid = |message: String| LayoutError::Invalid {
        digest: digest.to_string(),
        message,
    };
    if !MANIFEST_TYPES.contains(&media_type) {
        return Err(LayoutError::MediaType {
            digest: digest.into(),
            media_type: media_type.into(),
        });
    }
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| invalid(format!("not JSON: {e}")))?;
    // The manifest's own mediaType, when it says one, must agree with how it was served.
    if let Some(own) = value["mediaType"].as_str()
        && own != media_type
    {
        return Err(invalid(format!(
            "says mediaType {own} but is listed as {media_type}"
        )));
    }
    let descriptors = |key: &str| -> Result<Vec<Descriptor>, LayoutError> {
        match &value[key] {
            Value::Null => Ok(Vec::new()),
            list => {
                serde_json::from_value(list.clone()).map_err(|e| invalid(format!("{key}: {e}")))
            }
        }
    };
    let mut out = Children::default();
    if is_index(media_type) {
        out.manifests = descriptors("manifests")?;
    } else {
        let config: Descriptor = serde_json::from_value(value["config"].clone())
            .map_err(|e| invalid(format!("config: {e}")))?;
        out.blobs.push(config);
        out.blobs.extend(descriptors("layers")?);
    }
    for descriptor in out.manifests.iter().chain(&out.blobs) {
        if !windlass_mirror::is_sha256_digest(&descriptor.digest) {
            return Err(invalid(format!(
                "refers to `{}`, which is not a sha256 digest",
                descriptor.digest
            )));
        }
    }
    Ok(out)
}

/// One image of a package: the reference the package names it by and its top manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopImage {
    pub reference: String,
    pub descriptor: Descriptor,
}

/// A manifest kept byte for byte.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredManifest {
    pub media_type: String,
    pub bytes: Vec<u8>,
}

/// Every image of a package and what they are made of.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageSet {
    /// In the order the package lists them (bundle first).
    pub images: Vec<TopImage>,
    /// By digest.
    pub manifests: BTreeMap<String, StoredManifest>,
    /// Configs and layers by digest: size and the images (indexes into `images`) using them.
    pub blobs: BTreeMap<String, BlobUse>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlobUse {
    pub size: u64,
    pub media_type: String,
    pub images: BTreeSet<usize>,
}

impl ImageSet {
    /// Adds a manifest under `digest`, checking its bytes hash to it and its size; for an
    /// image manifest its blobs are recorded as used by `image` (an index into `images`).
    /// Returns the manifests it lists (for an index), which the caller adds next.
    pub fn add_manifest(
        &mut self,
        image: usize,
        descriptor: &Descriptor,
        bytes: Vec<u8>,
    ) -> Result<Vec<Descriptor>, LayoutError> {
        let digest = &descriptor.digest;
        if bytes.len() as u64 > MAX_MANIFEST_BYTES {
            return Err(LayoutError::TooLarge {
                digest: digest.clone(),
                size: bytes.len() as u64,
            });
        }
        let actual = crate::sha256(&bytes);
        if &actual != digest {
            return Err(LayoutError::Invalid {
                digest: digest.clone(),
                message: format!("its content hashes to {actual}"),
            });
        }
        if bytes.len() as u64 != descriptor.size {
            return Err(LayoutError::Invalid {
                digest: digest.clone(),
                message: format!(
                    "is {} bytes, but is listed as {}",
                    bytes.len(),
                    descriptor.size
                ),
            });
        }
        let children = children(digest, &descriptor.media_type, &bytes)?;
        for blob in &children.blobs {
            let entry = self.blobs.entry(blob.digest.clone()).or_default();
            entry.size = blob.size;
            entry.media_type = blob.media_type.clone();
            entry.images.insert(image);
        }
        self.manifests.insert(
            digest.clone(),
            StoredManifest {
                media_type: descriptor.media_type.clone(),
                bytes,
            },
        );
        Ok(children.manifests)
    }

    /// The manifests of image `index`, top first, each index followed by what it lists.
    pub fn manifests_of(&self, index: usize) -> Vec<Descriptor> {
        let mut out: Vec<Descriptor> = Vec::new();
        let Some(top) = self.images.get(index) else {
            return out;
        };
        let mut queue = vec![top.descriptor.clone()];
        while let Some(descriptor) = queue.pop() {
            if out.iter().any(|d| d.digest == descriptor.digest) {
                continue;
            }
            if let Some(stored) = self.manifests.get(&descriptor.digest)
                && let Ok(children) =
                    children(&descriptor.digest, &stored.media_type, &stored.bytes)
            {
                queue.extend(children.manifests.into_iter().rev());
            }
            out.push(descriptor);
        }
        out
    }

    /// Every manifest in archive order: image by image, each index before what it lists.
    pub fn manifest_order(&self) -> Vec<Descriptor> {
        let mut out: Vec<Descriptor> = Vec::new();
        for index in 0..self.images.len() {
            for descriptor in self.manifests_of(index) {
                if !out.iter().any(|d| d.digest == descriptor.digest) {
                    out.push(descriptor);
                }
            }
        }
        out
    }

    /// `index.json`: each image with the reference the package names it by.
    pub fn index_json(&self) -> Vec<u8> {
        let manifests: Vec<Descriptor> = self
            .images
            .iter()
            .map(|image| {
                let mut descriptor = image.descriptor.clone();
                descriptor.platform = None;
                descriptor.annotations = BTreeMap::from([
                    (CONTAINERD_NAME.to_string(), image.reference.clone()),
                    (REF_NAME.to_string(), image.reference.clone()),
                ]);
                descriptor
            })
            .collect();
        let index = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": OCI_INDEX,
            "manifests": manifests,
        });
        serde_json::to_vec_pretty(&index).expect("an index serialises")
    }

    /// Total bytes of configs and layers.
    pub fn blob_bytes(&self) -> u64 {
        self.blobs.values().map(|b| b.size).sum()
    }
}

/// Reads `index.json`: the images it lists, by the reference each is named by.
pub fn read_index(bytes: &[u8]) -> Result<Vec<TopImage>, String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let descriptors: Vec<Descriptor> = serde_json::from_value(value["manifests"].clone())
        .map_err(|e| format!("manifests: {e}"))?;
    descriptors
        .into_iter()
        .enumerate()
        .map(|(i, mut descriptor)| {
            let reference = descriptor
                .annotations
                .get(REF_NAME)
                .cloned()
                .ok_or_else(|| format!("manifests[{i}] has no {REF_NAME} annotation"))?;
            // The reference is kept beside the descriptor, as an image set holds it.
            descriptor.annotations.clear();
            if !MANIFEST_TYPES.contains(&descriptor.media_type.as_str()) {
                return Err(format!(
                    "manifests[{i}] has media type `{}`, not an image or index",
                    descriptor.media_type
                ));
            }
            if !windlass_mirror::is_sha256_digest(&descriptor.digest) {
                return Err(format!(
                    "manifests[{i}] has digest `{}`, not a sha256 digest",
                    descriptor.digest
                ));
            }
            Ok(TopImage {
                reference,
                descriptor,
            })
        })
        .collect()
}

/// The platforms an image offers: those an index lists (attestations, listed as
/// `unknown/unknown`, left out), or the one its config names.
pub fn platforms(
    set: &ImageSet,
    index: usize,
    configs: &BTreeMap<String, Vec<u8>>,
) -> Vec<Platform> {
    let Some(top) = set.images.get(index) else {
        return Vec::new();
    };
    let Some(stored) = set.manifests.get(&top.descriptor.digest) else {
        return Vec::new();
    };
    let Ok(children) = children(&top.descriptor.digest, &stored.media_type, &stored.bytes) else {
        return Vec::new();
    };
    if is_index(&stored.media_type) {
        return children
            .manifests
            .into_iter()
            .filter_map(|m| m.platform)
            .filter(|p| p.os != "unknown" && p.architecture != "unknown")
            .collect();
    }
    children
        .blobs
        .first()
        .and_then(|config| configs.get(&config.digest))
        .and_then(|bytes| serde_json::from_slice::<Platform>(bytes).ok())
        .into_iter()
        .collect()
}

/// What is wrong with an image's platforms against the architectures a package promises
/// (on Linux): each missing architecture, named, with `field` the manifest's field that lists
/// them.
pub fn missing_architectures(
    reference: &str,
    offered: &[Platform],
    wanted: &[String],
    field: &str,
) -> Vec<String> {
    let linux: Vec<&Platform> = offered.iter().filter(|p| p.os == "linux").collect();
    let shown = || {
        if offered.is_empty() {
            "no platform".to_string()
        } else {
            offered
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    wanted
        .iter()
        .filter(|arch| !linux.iter().any(|p| &p.architecture == *arch))
        .map(|arch| {
            format!(
                "{reference} offers {}, not linux/{arch}, which {field} lists",
                shown()
            )
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests;
