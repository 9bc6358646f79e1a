//! Registry calls below the image level: manifests as raw bytes (by digest or tag), the digest
//! a tag points at, tags, the OCI 1.1 referrers API, blobs with a size cap, and pushing blobs
//! and raw manifests. Signatures are stored and found with these; nothing here knows about
//! signatures.
//!
//! One [`RegistryClient`] keeps one connection pool and one token cache, so a caller that makes
//! several requests to one registry (a signature lookup makes a handful) pays for the
//! handshake and the token once.

use futures::StreamExt;
use oci_client::Reference;
use oci_client::client::Client;
use oci_client::errors::OciDistributionError;
use oci_client::manifest::{self, ImageIndexEntry};
use oci_client::secrets::RegistryAuth;

use super::{OciError, RegistryOptions, client, map_error, parse_reference, sha256};

/// Media types a manifest fetched by [`RegistryClient::manifest`] may have: images and indexes,
/// OCI and Docker.
pub const MANIFEST_MEDIA_TYPES: [&str; 4] = [
    manifest::OCI_IMAGE_MEDIA_TYPE,
    manifest::OCI_IMAGE_INDEX_MEDIA_TYPE,
    manifest::IMAGE_MANIFEST_MEDIA_TYPE,
    manifest::IMAGE_MANIFEST_LIST_MEDIA_TYPE,
];

/// A manifest as the registry served it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawManifest {
    /// The exact bytes; their sha256 is `digest`.
    pub bytes: Vec<u8>,
    pub digest: String,
    /// The manifest's own `mediaType` field (empty when it has none).
    pub media_type: String,
}

impl RawManifest {
    pub fn size(&self) -> u64 {
        self.bytes.len() as u64
    }
}

/// One entry of a referrers list: a manifest whose `subject` is the digest asked about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Referrer {
    pub media_type: String,
    pub digest: String,
    pub size: i64,
    /// The manifest's `artifactType` (or its config media type, for registries that report
    /// that instead).
    pub artifact_type: Option<String>,
    pub annotations: std::collections::BTreeMap<String, String>,
}

impl From<ImageIndexEntry> for Referrer {
    fn from(entry: ImageIndexEntry) -> Self {
        Referrer {
            media_type: entry.media_type,
            digest: entry.digest,
            size: entry.size,
            artifact_type: entry.artifact_type,
            annotations: entry.annotations.unwrap_or_default(),
        }
    }
}

/// A client for one registry's lower-level calls. Cheap to clone (the pool is shared).
#[derive(Clone)]
pub struct RegistryClient {
    pub(crate) client: Client,
    pub(crate) auth: RegistryAuth,
}

impl std::fmt::Debug for RegistryClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RegistryClient")
    }
}

/// `registry/repository@digest`, the form the referrers and blob calls need.
pub(crate) fn by_digest(repository: &str, digest: &str) -> Result<Reference, OciError> {
    parse_reference(&format!("{repository}@{digest}"))
}

pub(crate) fn by_tag(repository: &str, tag: &str) -> Result<Reference, OciError> {
    parse_reference(&format!("{repository}:{tag}"))
}

fn is_not_found(error: &OciError) -> bool {
    matches!(error, OciError::NotFound { .. })
}

impl RegistryClient {
    pub fn new(options: &RegistryOptions) -> Self {
        RegistryClient {
            client: client(options),
            auth: options.auth.to_registry_auth(),
        }
    }

    pub(crate) async fn store_auth(&self, reference: &Reference) {
        self.client
            .store_auth_if_needed(reference.resolve_registry(), &self.auth)
            .await;
    }

    /// The manifest `reference` (a tag or a digest) names, as raw bytes. A digest reference is
    /// checked against the bytes. `None` when the registry has no such manifest. Manifests
    /// larger than `max_bytes` are refused (the registry sends a manifest whole, so the cap is
    /// checked once it has arrived; pass the size a descriptor declares to refuse earlier with
    /// [`RegistryClient::manifest_by_digest`]).
    pub async fn manifest(
        &self,
        reference: &str,
        max_bytes: u64,
    ) -> Result<Option<RawManifest>, OciError> {
        let parsed = parse_reference(reference)?;
        self.store_auth(&parsed).await;
        let (bytes, digest) = match self
            .client
            .pull_manifest_raw(&parsed, &self.auth, &MANIFEST_MEDIA_TYPES)
            .await
        {
            Ok(found) => found,
            Err(OciDistributionError::DigestError(e)) => {
                return Err(OciError::DigestMismatch {
                    reference: reference.into(),
                    expected: parsed.digest().unwrap_or_default().into(),
                    actual: e.to_string(),
                });
            }
            Err(e) => {
                let error = map_error(&parsed, e);
                return if is_not_found(&error) {
                    Ok(None)
                } else {
                    Err(error)
                };
            }
        };
        if bytes.len() as u64 > max_bytes {
            return Err(OciError::TooLarge {
                reference: reference.into(),
                limit: max_bytes,
            });
        }
        let actual = sha256(&bytes);
        if let Some(expected) = parsed.digest()
            && expected != actual
        {
            return Err(OciError::DigestMismatch {
                reference: reference.into(),
                expected: expected.into(),
                actual,
            });
        }
        let media_type = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|v| v["mediaType"].as_str().map(str::to_string))
            .unwrap_or_default();
        Ok(Some(RawManifest {
            bytes: bytes.to_vec(),
            digest,
            media_type,
        }))
    }

    /// The manifest `repository@digest`; refuses before downloading when `declared_size` (from
    /// the descriptor that named it) is over `max_bytes`.
    pub async fn manifest_by_digest(
        &self,
        repository: &str,
        digest: &str,
        declared_size: Option<i64>,
        max_bytes: u64,
    ) -> Result<Option<RawManifest>, OciError> {
        let reference = format!("{repository}@{digest}");
        if let Some(size) = declared_size
            && (size < 0 || size as u64 > max_bytes)
        {
            return Err(OciError::TooLarge {
                reference,
                limit: max_bytes,
            });
        }
        self.manifest(&reference, max_bytes).await
    }

    /// The digest `reference` points at now (a HEAD request; a GET when the registry sends no
    /// digest header). `None` when there is no such manifest.
    pub async fn resolve_digest(&self, reference: &str) -> Result<Option<String>, OciError> {
        let parsed = parse_reference(reference)?;
        match self
            .client
            .fetch_manifest_digest(&parsed, &self.auth)
            .await
            .map_err(|e| map_error(&parsed, e))
        {
            Ok(digest) => Ok(Some(digest)),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Every tag of `repository` (`registry/name`), following the registry's pages.
    pub async fn list_tags(&self, repository: &str) -> Result<Vec<String>, OciError> {
        let parsed = parse_reference(repository)?;
        let mut tags = Vec::new();
        let mut last: Option<String> = None;
        loop {
            let page = self
                .client
                .list_tags(&parsed, &self.auth, Some(1000), last.as_deref())
                .await
                .map_err(|e| map_error(&parsed, e))?;
            let count = page.tags.len();
            let next = page.tags.last().cloned();
            tags.extend(page.tags);
            // A page shorter than asked is the last; a registry that ignores `n` sends all at once.
            if count < 1000 || next.is_none() || next == last {
                break;
            }
            last = next;
        }
        Ok(tags)
    }

    /// The manifests whose `subject` is `repository@digest`: the OCI 1.1 referrers API
    /// (`GET /v2/<name>/referrers/<digest>?artifactType=...`), and where the registry has
    /// no such endpoint, the referrers tag schema (`sha256-<hex>`). An unknown subject has no
    /// referrers. Entries are filtered by `artifact_type` only when the registry filtered them;
    /// callers that care check each entry (registries differ in what they report).
    pub async fn referrers(
        &self,
        repository: &str,
        digest: &str,
        artifact_type: Option<&str>,
    ) -> Result<Vec<Referrer>, OciError> {
        let parsed = by_digest(repository, digest)?;
        self.store_auth(&parsed).await;
        match self.client.pull_referrers(&parsed, artifact_type).await {
            Ok(index) => Ok(index.manifests.into_iter().map(Referrer::from).collect()),
            Err(e) => {
                let error = map_error(&parsed, e);
                if is_not_found(&error) {
                    Ok(Vec::new())
                } else {
                    Err(error)
                }
            }
        }
    }

    /// The blob `digest` of `repository`, at most `max_bytes` long, checked against its digest.
    /// The download stops as soon as the cap is passed.
    pub async fn blob(
        &self,
        repository: &str,
        digest: &str,
        max_bytes: u64,
    ) -> Result<Vec<u8>, OciError> {
        let parsed = by_digest(repository, digest)?;
        let reference = parsed.whole();
        self.store_auth(&parsed).await;
        let descriptor = manifest::OciDescriptor {
            digest: digest.to_string(),
            ..Default::default()
        };
        let mut stream = self
            .client
            .pull_blob_stream(&parsed, &descriptor)
            .await
            .map_err(|e| map_error(&parsed, e))?;
        if stream
            .content_length
            .is_some_and(|length| length > max_bytes)
        {
            return Err(OciError::TooLarge {
                reference,
                limit: max_bytes,
            });
        }
        let mut data = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| OciError::Registry {
                reference: reference.clone(),
                message: format!("reading blob {digest}: {e}"),
            })?;
            if (data.len() + chunk.len()) as u64 > max_bytes {
                return Err(OciError::TooLarge {
                    reference,
                    limit: max_bytes,
                });
            }
            data.extend_from_slice(&chunk);
        }
        let actual = sha256(&data);
        if actual != digest {
            return Err(OciError::DigestMismatch {
                reference,
                expected: digest.into(),
                actual,
            });
        }
        Ok(data)
    }

    /// Uploads `data` to `repository` unless the registry has it already; returns its digest.
    pub async fn push_blob(&self, repository: &str, data: &[u8]) -> Result<String, OciError> {
        let digest = sha256(data);
        let parsed = by_digest(repository, &digest)?;
        self.client
            .store_auth_if_needed(parsed.resolve_registry(), &self.auth)
            .await;
        // Push rights are checked on the push itself; a failed existence check just uploads.
        if self
            .client
            .blob_exists(&parsed, &digest)
            .await
            .unwrap_or(false)
        {
            return Ok(digest);
        }
        self.client
            .push_blob(&parsed, data.to_vec(), &digest)
            .await
            .map_err(|e| map_error(&parsed, e))?;
        Ok(digest)
    }

    /// Puts `bytes` as a manifest of `media_type`, under `tag` or (with `None`) under its own
    /// digest. Returns the digest.
    pub async fn push_manifest(
        &self,
        repository: &str,
        tag: Option<&str>,
        bytes: &[u8],
        media_type: &str,
    ) -> Result<String, OciError> {
        let digest = sha256(bytes);
        let parsed = match tag {
            Some(tag) => by_tag(repository, tag)?,
            None => by_digest(repository, &digest)?,
        };
        let content_type = media_type.parse().map_err(|_| OciError::Registry {
            reference: parsed.whole(),
            message: format!("`{media_type}` is not a valid media type"),
        })?;
        self.client
            .store_auth_if_needed(parsed.resolve_registry(), &self.auth)
            .await;
        self.client
            .push_manifest_raw(&parsed, bytes.to_vec(), content_type)
            .await
            .map_err(|e| map_error(&parsed, e))?;
        Ok(digest)
    }
}

/// `registry/name` of a reference (tag and digest dropped), as manifests and blobs are addressed.
pub fn repository_of(reference: &str) -> Result<String, OciError> {
    let parsed = parse_reference(reference)?;
    Ok(format!(
        "{}/{}",
        parsed.resolve_registry(),
        parsed.repository()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repositories_drop_tags_and_digests() {
        assert_eq!(
            repository_of("127.0.0.1:5000/team/demo:1.0").unwrap(),
            "127.0.0.1:5000/team/demo"
        );
        let digest = format!("sha256:{}", "a".repeat(64));
        assert_eq!(
            repository_of(&format!("127.0.0.1:5000/demo@{digest}")).unwrap(),
            "127.0.0.1:5000/demo"
        );
        assert!(repository_of("Not A Ref").is_err());
    }
}
