//! Finding the signatures stored for an image digest (never a tag: a tag can move between
//! lookup and use).
//!
//! All three places cosign writes to are read, so a policy needing two keys is met when one
//! signer used bundles and the other the legacy format:
//! 1. the OCI 1.1 referrers API, `GET /v2/<name>/referrers/<digest>`;
//! 2. where the registry has none, the referrers tag schema `sha256-<hex>` (an OCI index);
//! 3. cosign's legacy `sha256-<hex>.sig` image.
//!
//! Limits cap how many signatures are read and how large each manifest and blob may be; what
//! is over a limit, malformed or missing becomes an unreadable candidate with its reason, so
//! it shows up as a refusal reason instead of an error. Only a registry that cannot be asked
//! (down, credentials refused) is an error.

use std::future::Future;

use windlass_oci::{OciError, RawManifest, Referrer, RegistryClient};

use crate::check::SignatureFormat;
pub use crate::found::{Candidate, CandidateContent, Discovery, Limits};
use crate::layout::{self, Manifest};
use crate::{TrustError, bundle, simple_signing};

/// Where signatures are read from: a registry. A trait so a controller can put its own
/// connection handling or caching in front.
pub trait SignatureSource: Sync {
    /// Referrers of `repository@digest` (API, else tag schema); empty when there are none.
    fn referrers(
        &self,
        repository: &str,
        digest: &str,
        artifact_type: &str,
    ) -> impl Future<Output = Result<Vec<Referrer>, OciError>> + Send;

    /// The manifest at `reference` (tag or digest); `None` when there is none.
    fn manifest(
        &self,
        reference: &str,
        max_bytes: u64,
    ) -> impl Future<Output = Result<Option<RawManifest>, OciError>> + Send;

    /// The blob `digest` of `repository`, checked against its digest.
    fn blob(
        &self,
        repository: &str,
        digest: &str,
        max_bytes: u64,
    ) -> impl Future<Output = Result<Vec<u8>, OciError>> + Send;
}

impl SignatureSource for RegistryClient {
    fn referrers(
        &self,
        repository: &str,
        digest: &str,
        artifact_type: &str,
    ) -> impl Future<Output = Result<Vec<Referrer>, OciError>> + Send {
        RegistryClient::referrers(self, repository, digest, Some(artifact_type))
    }

    fn manifest(
        &self,
        reference: &str,
        max_bytes: u64,
    ) -> impl Future<Output = Result<Option<RawManifest>, OciError>> + Send {
        RegistryClient::manifest(self, reference, max_bytes)
    }

    fn blob(
        &self,
        repository: &str,
        digest: &str,
        max_bytes: u64,
    ) -> impl Future<Output = Result<Vec<u8>, OciError>> + Send {
        RegistryClient::blob(self, repository, digest, max_bytes)
    }
}

/// Errors that say something about one stored signature rather than about the registry.
fn is_about_the_signature(error: &OciError) -> bool {
    matches!(
        error,
        OciError::NotFound { .. } | OciError::TooLarge { .. } | OciError::DigestMismatch { .. }
    )
}

fn is_bundle_media_type(media_type: &str) -> bool {
    media_type.starts_with("application/vnd.dev.sigstore.bundle")
}

/// Whether a referrers entry may hold a bundle. Registries report `artifactType` differently
/// (the manifest's, the config's media type, or nothing), so anything not clearly another
/// artifact is fetched and decided by its manifest.
fn may_be_bundle(referrer: &Referrer) -> bool {
    match referrer.artifact_type.as_deref() {
        None | Some("") => true,
        Some(kind) => is_bundle_media_type(kind) || kind == layout::EMPTY_CONFIG_MEDIA_TYPE,
    }
}

struct Reader<'a, S: SignatureSource> {
    source: &'a S,
    limits: Limits,
    repository: &'a str,
    found: Discovery,
}

impl<S: SignatureSource> Reader<'_, S> {
    fn room(&mut self) -> bool {
        if self.found.candidates.len() < self.limits.max_signatures {
            true
        } else {
            self.found.skipped += 1;
            false
        }
    }

    fn unreadable(&mut self, location: String, format: SignatureFormat, reason: String) {
        self.found.candidates.push(Candidate {
            location,
            content: CandidateContent::Unreadable { format, reason },
        });
    }

    async fn blob(&self, digest: &str, size: i64) -> Result<Result<Vec<u8>, String>, TrustError> {
        let max = self.limits.max_signature_bytes;
        if size < 0 || size as u64 > max {
            return Ok(Err(format!(
                "blob {digest} declares {size} bytes, over the {max}-byte limit for a signature"
            )));
        }
        match self.source.blob(self.repository, digest, max).await {
            Ok(bytes) => Ok(Ok(bytes)),
            Err(e) if is_about_the_signature(&e) => Ok(Err(e.to_string())),
            Err(e) => Err(e.into()),
        }
    }

    async fn referrers(&mut self, digest: &str) -> Result<(), TrustError> {
        self.found.looked_in.push(format!(
            "referrers of {} (API, else tag {})",
            digest,
            layout::referrers_tag(digest)
        ));
        let referrers = self
            .source
            .referrers(self.repository, digest, bundle::MEDIA_TYPE_V03)
            .await?;
        for referrer in referrers.into_iter().filter(may_be_bundle) {
            let location = format!("referrer {}", referrer.digest);
            if referrer.size < 0 || referrer.size as u64 > self.limits.max_signature_bytes {
                if self.room() {
                    self.unreadable(
                        location,
                        SignatureFormat::Bundle,
                        format!(
                            "its manifest declares {} bytes, over the {}-byte limit",
                            referrer.size, self.limits.max_signature_bytes
                        ),
                    );
                }
                continue;
            }
            let reference = format!("{}@{}", self.repository, referrer.digest);
            let raw = match self
                .source
                .manifest(&reference, self.limits.max_signature_bytes)
                .await
            {
                Ok(Some(raw)) => raw,
                Ok(None) => {
                    if self.room() {
                        self.unreadable(
                            location,
                            SignatureFormat::Bundle,
                            "listed by the registry, but its manifest is missing".into(),
                        );
                    }
                    continue;
                }
                Err(e) if is_about_the_signature(&e) => {
                    if self.room() {
                        self.unreadable(location, SignatureFormat::Bundle, e.to_string());
                    }
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let manifest = match Manifest::parse(&raw.bytes) {
                Ok(manifest) => manifest,
                Err(e) => {
                    if self.room() {
                        self.unreadable(location, SignatureFormat::Bundle, e.to_string());
                    }
                    continue;
                }
            };
            let bundle_layers: Vec<_> = manifest
                .layers
                .iter()
                .filter(|l| is_bundle_media_type(&l.media_type))
                .collect();
            if bundle_layers.is_empty() && !is_bundle_media_type(manifest.effective_artifact_type())
            {
                continue; // another kind of artifact (an SBOM, a scan report)
            }
            if let Some(subject) = &manifest.subject
                && subject.digest != digest
            {
                if self.room() {
                    self.unreadable(
                        location,
                        SignatureFormat::Bundle,
                        format!(
                            "listed as a referrer of {digest}, but its subject is {}",
                            subject.digest
                        ),
                    );
                }
                continue;
            }
            if bundle_layers.is_empty() && self.room() {
                self.unreadable(
                    location.clone(),
                    SignatureFormat::Bundle,
                    "a bundle artifact without a bundle layer".into(),
                );
            }
            for layer in bundle_layers {
                if !self.room() {
                    continue;
                }
                let location = format!("{location}, layer {}", layer.digest);
                match self.blob(&layer.digest, layer.size).await? {
                    Ok(bytes) => self.found.candidates.push(Candidate {
                        location,
                        content: CandidateContent::Bundle { bytes },
                    }),
                    Err(reason) => self.unreadable(location, SignatureFormat::Bundle, reason),
                }
            }
        }
        Ok(())
    }

    async fn legacy(&mut self, digest: &str) -> Result<(), TrustError> {
        let tag = layout::signature_tag(digest);
        self.found.looked_in.push(format!("tag {tag}"));
        let reference = format!("{}:{tag}", self.repository);
        let raw = match self
            .source
            .manifest(&reference, self.limits.max_index_bytes)
            .await
        {
            Ok(Some(raw)) => raw,
            Ok(None) => return Ok(()),
            Err(e) if is_about_the_signature(&e) => {
                if self.room() {
                    self.unreadable(
                        format!("tag {tag}"),
                        SignatureFormat::SimpleSigning,
                        e.to_string(),
                    );
                }
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        let manifest = match Manifest::parse(&raw.bytes) {
            Ok(manifest) => manifest,
            Err(e) => {
                if self.room() {
                    self.unreadable(
                        format!("tag {tag}"),
                        SignatureFormat::SimpleSigning,
                        e.to_string(),
                    );
                }
                return Ok(());
            }
        };
        for (i, layer) in manifest.layers.iter().enumerate() {
            if layer.media_type != simple_signing::MEDIA_TYPE {
                continue;
            }
            if !self.room() {
                continue;
            }
            let location = format!("tag {tag}, layer {i}");
            let signature = layer
                .annotations
                .as_ref()
                .and_then(|a| a.get(simple_signing::SIGNATURE_ANNOTATION))
                .cloned();
            match self.blob(&layer.digest, layer.size).await? {
                Ok(payload) => self.found.candidates.push(Candidate {
                    location,
                    content: CandidateContent::SimpleSigning { payload, signature },
                }),
                Err(reason) => self.unreadable(location, SignatureFormat::SimpleSigning, reason),
            }
        }
        Ok(())
    }
}

/// Reads every signature stored for `repository@digest` (see the module docs).
pub async fn discover<S: SignatureSource>(
    source: &S,
    repository: &str,
    digest: &str,
    limits: Limits,
) -> Result<Discovery, TrustError> {
    if !layout::is_sha256_digest(digest) {
        return Err(TrustError::Artifact {
            reference: format!("{repository}@{digest}"),
            message: "signatures are looked up by a sha256 digest (sha256:<64 hex digits>)".into(),
        });
    }
    let mut reader = Reader {
        source,
        limits,
        repository,
        found: Discovery::default(),
    };
    reader.referrers(digest).await?;
    reader.legacy(digest).await?;
    Ok(reader.found)
}
