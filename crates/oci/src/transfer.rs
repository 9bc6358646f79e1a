//! Moving blobs of any size without holding them: a download handed over chunk by chunk, an
//! upload fed from a stream (one request with a known length), and cross-repository mounts
//! for a blob already in the registry. Copying images into an air-gapped registry is built on
//! these; the caller checks digests where the bytes pass (a registry checks an upload's digest
//! itself before it accepts it).

use futures::{Stream, StreamExt};
use oci_client::errors::OciDistributionError;
use oci_client::manifest::OciDescriptor;

use super::registry::{RegistryClient, by_digest};
use super::{OciError, RegistryOptions, client_with, map_error};

impl RegistryClient {
    /// A client whose blob uploads are single requests streaming a body of known length,
    /// which [`RegistryClient::push_blob_stream`] needs.
    pub fn for_streaming(options: &RegistryOptions) -> Self {
        RegistryClient {
            client: client_with(options, true),
            auth: options.auth.to_registry_auth(),
        }
    }

    /// Hands blob `digest` of `repository` to `each`, chunk by chunk as it arrives, and
    /// returns its length. The bytes are not checked against the digest here: `each` sees
    /// them first and must check them (a package archive's writer does).
    pub async fn read_blob(
        &self,
        repository: &str,
        digest: &str,
        mut each: impl FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<u64, OciError> {
        let parsed = by_digest(repository, digest)?;
        let reference = parsed.whole();
        self.store_auth(&parsed).await;
        let descriptor = OciDescriptor {
            digest: digest.to_string(),
            ..Default::default()
        };
        let mut stream = self
            .client
            .pull_blob_stream(&parsed, &descriptor)
            .await
            .map_err(|e| map_error(&parsed, e))?;
        let mut length = 0u64;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| OciError::Registry {
                reference: reference.clone(),
                message: format!("reading blob {digest}: {e}"),
            })?;
            length += chunk.len() as u64;
            each(&chunk).map_err(|message| OciError::Registry {
                reference: reference.clone(),
                message: format!("blob {digest}: {message}"),
            })?;
        }
        Ok(length)
    }

    /// Whether `repository` has blob `digest`.
    pub async fn has_blob(&self, repository: &str, digest: &str) -> Result<bool, OciError> {
        let parsed = by_digest(repository, digest)?;
        self.store_auth(&parsed).await;
        self.client
            .blob_exists(&parsed, digest)
            .await
            .map_err(|e| map_error(&parsed, e))
    }

    /// Uploads blob `digest` of `size` bytes to `repository` from `chunks`, in one request
    /// (use a client made by [`RegistryClient::for_streaming`]). The registry refuses the
    /// upload when the bytes do not hash to `digest`.
    pub async fn push_blob_stream(
        &self,
        repository: &str,
        digest: &str,
        size: u64,
        chunks: impl Stream<Item = Result<bytes::Bytes, String>> + Send + 'static,
    ) -> Result<(), OciError> {
        let parsed = by_digest(repository, digest)?;
        self.store_auth(&parsed).await;
        let chunks = chunks.map(|chunk| {
            chunk.map_err(|message| OciDistributionError::GenericError(Some(message)))
        });
        self.client
            .push_blob_stream(&parsed, chunks, digest, Some(size))
            .await
            .map(|_| ())
            .map_err(|e| map_error(&parsed, e))
    }

    /// Makes blob `digest`, which `from` (a repository of the same registry) has, part of
    /// `repository` without uploading it again. `false` when the registry would not mount it.
    pub async fn mount_blob(
        &self,
        repository: &str,
        from: &str,
        digest: &str,
    ) -> Result<bool, OciError> {
        let target = by_digest(repository, digest)?;
        let source = by_digest(from, digest)?;
        self.store_auth(&target).await;
        match self.client.mount_blob(&target, &source, digest).await {
            Ok(()) => Ok(true),
            // 202 (an upload session instead of a mount) and the like.
            Err(OciDistributionError::SpecViolationError(_)) => Ok(false),
            Err(OciDistributionError::ServerError { code, .. }) if code != 401 && code != 403 => {
                Ok(false)
            }
            Err(e) => Err(map_error(&target, e)),
        }
    }
}
