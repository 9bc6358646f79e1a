//! OCI registries: pull (digest-verified, size-limited, safely unpacked in memory), push and
//! inspect images; bundle images with the standard bundle labels; and, in [`registry`], the
//! lower-level calls signatures need (raw manifests, referrers, capped blobs, raw pushes).
//! The one place windlass talks to a registry, so the pure crates (bundle formats, catalog,
//! resolver, trust) never link a client.

mod auth;
pub mod image;
mod reference;
pub mod registry;
mod transfer;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use oci_client::client::{
    Certificate, CertificateEncoding, ClientConfig, ClientProtocol, Config, ImageLayer,
};
use oci_client::errors::OciDistributionError;
use oci_client::manifest::{self, OciImageManifest};
use oci_client::{Client, Reference};
use sha2::{Digest, Sha256};

pub use auth::{Auth, AuthError, default_docker_configs, docker_config_auth};
pub use registry::{RawManifest, Referrer, RegistryClient, repository_of};

use windlass_bundle::files::{FileTree, Limits};
use windlass_bundle::metadata::{Annotations, keys};
use windlass_bundle::unpack::UnpackError;

/// Layer media types a bundle image may use (OCI and Docker, compressed or not).
pub const LAYER_MEDIA_TYPES: [&str; 4] = [
    manifest::IMAGE_LAYER_GZIP_MEDIA_TYPE,
    manifest::IMAGE_LAYER_MEDIA_TYPE,
    manifest::IMAGE_DOCKER_LAYER_GZIP_MEDIA_TYPE,
    manifest::IMAGE_DOCKER_LAYER_TAR_MEDIA_TYPE,
];

/// How to reach a registry.
#[derive(Clone, Debug, Default)]
pub struct RegistryOptions {
    /// Speak plain HTTP (local registries).
    pub plain_http: bool,
    pub auth: Auth,
    /// Caps on what one image may unpack to; the compressed layers are capped at the same total.
    pub limits: Limits,
}

/// Why a registry operation failed. Each variant names the image or blob concerned.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    #[error("`{reference}` is not an image reference: {message}")]
    BadReference { reference: String, message: String },
    #[error("registry {registry} cannot be reached: {message}")]
    Unreachable { registry: String, message: String },
    #[error(
        "registry {registry} refused the credentials for {reference} (401 unauthorized); pass --username/--password or a docker config"
    )]
    Unauthorized { registry: String, reference: String },
    #[error("{reference}: not found in the registry")]
    NotFound { reference: String },
    #[error("{reference}: layer {digest} has media type {media_type}, which is not a bundle layer ({})", LAYER_MEDIA_TYPES.join(", "))]
    UnknownMediaType {
        reference: String,
        digest: String,
        media_type: String,
    },
    #[error("{reference}: layer {expected} does not match its digest (content hashes to {actual})")]
    DigestMismatch {
        reference: String,
        expected: String,
        actual: String,
    },
    #[error("{reference}: layers total more than {limit} bytes")]
    TooLarge { reference: String, limit: u64 },
    #[error(
        "{reference}: the registry sent more of blob {digest} than the {declared} bytes its manifest declares; the download was stopped"
    )]
    LargerThanDeclared {
        reference: String,
        digest: String,
        declared: u64,
    },
    #[error("{reference}: layer {digest}: {error}")]
    Unpack {
        reference: String,
        digest: String,
        error: UnpackError,
    },
    #[error("{reference}: {message}")]
    Registry { reference: String, message: String },
    #[error(transparent)]
    Bundle(#[from] Box<windlass_bundle::BundleError>),
    #[error("{reference}: no mirror could serve it: {}", attempts.join("; "))]
    Mirrors {
        reference: String,
        /// One line per place tried: where, and what went wrong.
        attempts: Vec<String>,
    },
}

/// A pulled bundle image.
#[derive(Clone, Debug)]
pub struct Pulled {
    /// The image manifest digest (`sha256:...`).
    pub digest: String,
    /// `config.Labels` of the image.
    pub labels: BTreeMap<String, String>,
    pub files: FileTree,
}

/// What `push` wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pushed {
    pub reference: String,
    /// The image manifest digest.
    pub digest: String,
}

/// kube's TLS uses ring; oci-client is built without a provider, so install ring once.
fn ensure_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The system's trusted root certificates, read once per process. Every registry call builds
/// a client of its own (pooled connections belong to the async runtime that opened them), and
/// left to itself each client would read and parse every certificate file of the system again.
fn system_roots() -> &'static [Certificate] {
    static ROOTS: OnceLock<Vec<Certificate>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        rustls_native_certs::load_native_certs()
            .certs
            .into_iter()
            .map(|der| Certificate {
                encoding: CertificateEncoding::Der,
                data: der.to_vec(),
            })
            .collect()
    })
}

fn client(options: &RegistryOptions) -> Client {
    client_with(options, false)
}

/// A client; `monolithic` makes blob uploads one request each (a streamed body of known
/// length) instead of a series of chunks.
fn client_with(options: &RegistryOptions, monolithic: bool) -> Client {
    ensure_crypto_provider();
    Client::new(ClientConfig {
        use_monolithic_push: monolithic,
        // Empty when the system has no roots: the client then keeps its own lookup, which
        // finds none either and reports that on the first TLS connection.
        tls_certs_only: system_roots().to_vec(),
        protocol: if options.plain_http {
            ClientProtocol::Http
        } else {
            ClientProtocol::Https
        },
        connect_timeout: Some(std::time::Duration::from_secs(10)),
        read_timeout: Some(std::time::Duration::from_secs(60)),
        ..Default::default()
    })
}

pub fn parse_reference(reference: &str) -> Result<Reference, OciError> {
    reference::parse(reference).map_err(|message| OciError::BadReference {
        reference: reference.into(),
        message,
    })
}

/// The registry host an image reference points at (`docker.io` for short names).
pub fn registry_of(reference: &str) -> Option<String> {
    // The registry is in the name; the digest part need not be checked to find it.
    let name = reference.split('@').next().unwrap_or(reference);
    parse_reference(name)
        .ok()
        .map(|r| r.resolve_registry().to_string())
}

fn map_error(reference: &Reference, error: OciDistributionError) -> OciError {
    let registry = reference.resolve_registry().to_string();
    let name = reference.whole();
    match error {
        OciDistributionError::UnauthorizedError { .. }
        | OciDistributionError::AuthenticationFailure(_) => OciError::Unauthorized {
            registry,
            reference: name,
        },
        OciDistributionError::ImageManifestNotFoundError(_) => {
            OciError::NotFound { reference: name }
        }
        OciDistributionError::ServerError { code: 404, .. } => {
            OciError::NotFound { reference: name }
        }
        OciDistributionError::ServerError { code: 401, .. } => OciError::Unauthorized {
            registry,
            reference: name,
        },
        OciDistributionError::RegistryError { envelope, .. }
            if envelope.errors.iter().any(|e| {
                matches!(
                    e.code,
                    oci_client::errors::OciErrorCode::ManifestUnknown
                        | oci_client::errors::OciErrorCode::NameUnknown
                )
            }) =>
        {
            OciError::NotFound { reference: name }
        }
        OciDistributionError::RegistryError { envelope, .. }
            if envelope.errors.iter().any(|e| {
                matches!(
                    e.code,
                    oci_client::errors::OciErrorCode::Unauthorized
                        | oci_client::errors::OciErrorCode::Denied
                )
            }) =>
        {
            OciError::Unauthorized {
                registry,
                reference: name,
            }
        }
        OciDistributionError::RequestError(e) if e.is_connect() || e.is_timeout() => {
            OciError::Unreachable {
                registry,
                message: root_cause(&e),
            }
        }
        other => OciError::Registry {
            reference: name,
            message: other.to_string(),
        },
    }
}

fn root_cause(error: &dyn std::error::Error) -> String {
    let mut current = error;
    while let Some(next) = current.source() {
        current = next;
    }
    current.to_string()
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

/// Pulls a bundle image: checks every layer's media type before downloading, verifies each
/// blob against its digest, and unpacks the layers in order into one tree.
///
/// What is downloaded is bounded by what arrives, not by what the manifest declares: the
/// declared sizes must fit in `options.limits.max_total_bytes`, and each blob's download stops
/// as soon as it passes its declared size, so a registry that understates a blob cannot make
/// the pull read more than the limit.
pub async fn pull(reference: &str, options: &RegistryOptions) -> Result<Pulled, OciError> {
    let parsed = parse_reference(reference)?;
    let client = client(options);
    let auth = options.auth.to_registry_auth();
    let (manifest, digest) = client
        .pull_image_manifest(&parsed, &auth)
        .await
        .map_err(|e| map_error(&parsed, e))?;
    for layer in &manifest.layers {
        if !LAYER_MEDIA_TYPES.contains(&layer.media_type.as_str()) {
            return Err(OciError::UnknownMediaType {
                reference: reference.into(),
                digest: layer.digest.clone(),
                media_type: layer.media_type.clone(),
            });
        }
    }
    let declared: u64 = manifest
        .layers
        .iter()
        .chain([&manifest.config])
        .map(|l| l.size.max(0) as u64)
        .sum();
    if declared > options.limits.max_total_bytes {
        return Err(OciError::TooLarge {
            reference: reference.into(),
            limit: options.limits.max_total_bytes,
        });
    }
    let config = capped_blob(&client, &parsed, &manifest.config).await?;
    let config = String::from_utf8_lossy(&config).into_owned();
    let mut files = FileTree::default();
    for layer in &manifest.layers {
        let data = capped_blob(&client, &parsed, layer).await?;
        let remaining = Limits {
            max_total_bytes: options
                .limits
                .max_total_bytes
                .saturating_sub(files.total_bytes()),
            max_files: options.limits.max_files.saturating_sub(files.files.len()),
        };
        let unpacked = windlass_bundle::unpack::unpack(&data, remaining).map_err(|error| {
            OciError::Unpack {
                reference: reference.into(),
                digest: layer.digest.clone(),
                error,
            }
        })?;
        // Later layers override earlier ones, as in any image filesystem.
        files.files.extend(unpacked.files);
    }
    let labels = serde_json::from_str::<serde_json::Value>(&config)
        .ok()
        .and_then(|c| c["config"]["Labels"].as_object().cloned())
        .map(|m| {
            m.into_iter()
                .filter_map(|(k, v)| Some((k, v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    Ok(Pulled {
        digest,
        labels,
        files,
    })
}

/// One blob of `image`, read as a stream that stops as soon as it passes the size `descriptor`
/// declares (the caller checked the declared sizes against its limit), and checked against
/// its digest.
async fn capped_blob(
    client: &Client,
    image: &Reference,
    descriptor: &manifest::OciDescriptor,
) -> Result<Vec<u8>, OciError> {
    let reference = image.whole();
    let declared = descriptor.size.max(0) as u64;
    let stream = client
        .pull_blob_stream(image, descriptor)
        .await
        .map_err(|e| map_error(image, e))?;
    read_capped(stream, declared, &reference, &descriptor.digest).await
}

/// Reads `stream` to its end, refusing it once more than `declared` bytes arrived (or the
/// response announces more), then checks the bytes against `digest`.
pub(crate) async fn read_capped(
    mut stream: oci_client::client::SizedStream,
    declared: u64,
    reference: &str,
    digest: &str,
) -> Result<Vec<u8>, OciError> {
    let oversized = || OciError::LargerThanDeclared {
        reference: reference.into(),
        digest: digest.into(),
        declared,
    };
    if stream
        .content_length
        .is_some_and(|length| length > declared)
    {
        return Err(oversized());
    }
    let mut data = Vec::with_capacity(declared.min(1 << 24) as usize);
    while let Some(chunk) = futures::StreamExt::next(&mut stream).await {
        let chunk = chunk.map_err(|e| {
            let digest_error = e
                .get_ref()
                .is_some_and(|inner| inner.is::<oci_client::errors::DigestError>());
            if digest_error {
                OciError::DigestMismatch {
                    reference: reference.into(),
                    expected: digest.into(),
                    actual: "(a different digest)".into(),
                }
            } else {
                OciError::Registry {
                    reference: reference.into(),
                    message: format!("reading blob {digest}: {e}"),
                }
            }
        })?;
        if (data.len() + chunk.len()) as u64 > declared {
            return Err(oversized());
        }
        data.extend_from_slice(&chunk);
    }
    let actual = sha256(&data);
    if actual != digest {
        return Err(OciError::DigestMismatch {
            reference: reference.into(),
            expected: digest.into(),
            actual,
        });
    }
    Ok(data)
}

/// Pulls and loads a bundle image. The annotations file wins over image labels; when the
/// image has no annotations file, the labels stand in for it.
pub async fn pull_bundle(
    reference: &str,
    options: &RegistryOptions,
) -> Result<(windlass_bundle::Bundle, Pulled), OciError> {
    let pulled = pull(reference, options).await?;
    let mut bundle = windlass_bundle::from_files(&pulled.files, reference)
        .map_err(|e| OciError::Bundle(Box::new(e)))?;
    if bundle.annotations.0.is_empty() {
        bundle.annotations = Annotations(
            pulled
                .labels
                .iter()
                .filter(|(k, _)| k.starts_with("operators.operatorframework.io."))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        );
    }
    Ok((bundle, pulled))
}

/// The image config: bundle labels in `config.Labels`, one layer's diff ID in `rootfs`.
fn image_config(labels: &BTreeMap<String, String>, diff_id: &str) -> serde_json::Value {
    serde_json::json!({
        "architecture": "amd64",
        "os": "linux",
        "config": { "Labels": labels },
        "rootfs": { "type": "layers", "diff_ids": [diff_id] },
        "history": [{ "created_by": "windlass bundle push" }],
    })
}

/// The labels a bundle image carries: the registry+v1 keys from its annotations.
pub fn bundle_labels(annotations: &Annotations) -> BTreeMap<String, String> {
    let mut labels: BTreeMap<String, String> = annotations
        .0
        .iter()
        .filter(|(k, _)| k.starts_with("operators.operatorframework.io."))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    labels
        .entry(keys::MEDIATYPE.into())
        .or_insert_with(|| keys::REGISTRY_V1.into());
    labels
        .entry(keys::MANIFESTS.into())
        .or_insert_with(|| "manifests/".into());
    labels
        .entry(keys::METADATA.into())
        .or_insert_with(|| "metadata/".into());
    labels
}

/// Pushes a bundle tree (which must be in bundle layout) as a one-layer OCI image labelled
/// with the registry+v1 bundle keys.
pub async fn push(
    tree: &FileTree,
    annotations: &Annotations,
    reference: &str,
    options: &RegistryOptions,
) -> Result<Pushed, OciError> {
    push_image(tree, &bundle_labels(annotations), reference, options).await
}

/// Pushes any file tree as a one-layer OCI image (`tar+gzip` layer, OCI config carrying
/// `labels`). Catalog images use it too.
pub async fn push_image(
    tree: &FileTree,
    labels: &BTreeMap<String, String>,
    reference: &str,
    options: &RegistryOptions,
) -> Result<Pushed, OciError> {
    let parsed = parse_reference(reference)?;
    let io = |e: std::io::Error| OciError::Registry {
        reference: reference.into(),
        message: format!("cannot pack the layer: {e}"),
    };
    let layer = windlass_bundle::unpack::pack(tree).map_err(io)?;
    let diff_id = {
        use std::io::Read;
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(layer.as_slice())
            .read_to_end(&mut raw)
            .map_err(io)?;
        sha256(&raw)
    };
    let config_bytes =
        serde_json::to_vec(&image_config(labels, &diff_id)).expect("a JSON value serialises");
    let config = Config::new(
        config_bytes,
        manifest::IMAGE_CONFIG_MEDIA_TYPE.to_string(),
        None,
    );
    let layers = vec![ImageLayer::new(
        layer,
        manifest::IMAGE_LAYER_GZIP_MEDIA_TYPE.to_string(),
        None,
    )];
    let mut image_manifest = OciImageManifest::build(&layers, &config, None);
    image_manifest.media_type = Some(manifest::OCI_IMAGE_MEDIA_TYPE.to_string());
    let client = client(options);
    let auth = options.auth.to_registry_auth();
    client
        .push(
            &parsed,
            &layers,
            config,
            &auth,
            Some(image_manifest.clone()),
        )
        .await
        .map_err(|e| map_error(&parsed, e))?;
    let manifest_bytes = serde_json::to_vec(&image_manifest).expect("a manifest serialises");
    // Ask the registry for the digest it serves; fall back to hashing what was sent.
    let digest = client
        .fetch_manifest_digest(&parsed, &auth)
        .await
        .unwrap_or_else(|_| sha256(&manifest_bytes));
    Ok(Pushed {
        reference: reference.to_string(),
        digest,
    })
}

/// The manifest digest `reference` points at now: one HEAD request (a GET when the registry
/// sends no digest header), nothing downloaded. What a poll of an unchanged image costs.
pub async fn resolve_digest(
    reference: &str,
    options: &RegistryOptions,
) -> Result<String, OciError> {
    let parsed = parse_reference(reference)?;
    client(options)
        .fetch_manifest_digest(&parsed, &options.auth.to_registry_auth())
        .await
        .map_err(|e| map_error(&parsed, e))
}

/// Manifest, digest and labels of an image, without downloading layers.
pub async fn inspect(
    reference: &str,
    options: &RegistryOptions,
) -> Result<(OciImageManifest, String, BTreeMap<String, String>), OciError> {
    let parsed = parse_reference(reference)?;
    let client = client(options);
    let (manifest, digest, config) = client
        .pull_manifest_and_config(&parsed, &options.auth.to_registry_auth())
        .await
        .map_err(|e| map_error(&parsed, e))?;
    let labels = serde_json::from_str::<serde_json::Value>(&config)
        .ok()
        .and_then(|c| c["config"]["Labels"].as_object().cloned())
        .map(|m| {
            m.into_iter()
                .filter_map(|(k, v)| Some((k, v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    Ok((manifest, digest, labels))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_always_carry_the_bundle_format_keys() {
        let labels = bundle_labels(&Annotations::for_package("demo", &["stable".into()], None));
        assert_eq!(labels[keys::MEDIATYPE], "registry+v1");
        assert_eq!(labels[keys::PACKAGE], "demo");
        assert_eq!(labels[keys::CHANNELS], "stable");
        assert_eq!(labels[keys::DEFAULT_CHANNEL], "stable");
        let bare = bundle_labels(&Annotations::default());
        assert_eq!(bare[keys::MANIFESTS], "manifests/");
    }

    #[test]
    fn references_are_checked() {
        assert!(parse_reference("127.0.0.1:5000/demo:1.0.0").is_ok());
        assert!(matches!(
            parse_reference("Not A Ref"),
            Err(OciError::BadReference { .. })
        ));
    }
}
