//! Every registry call the release commands make, in one module: pulling and pushing payload
//! images goes through the project's OCI code; listing a repository's tags and reading an image
//! config (which that code does not offer) are built here on oci-client.

use std::collections::BTreeMap;

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use windlass_bundle::FileTree;
use windlass_oci::{self as oci, Auth};
pub use windlass_oci::{OciError, Pulled, Pushed, RegistryOptions};

pub async fn pull(reference: &str, options: &RegistryOptions) -> Result<Pulled, OciError> {
    oci::pull(reference, options).await
}

/// Pushes `tree` as a one-layer image carrying `labels`.
pub async fn push(
    tree: &FileTree,
    labels: &BTreeMap<String, String>,
    reference: &str,
    options: &RegistryOptions,
) -> Result<Pushed, OciError> {
    oci::push_image(tree, labels, reference, options).await
}

/// What an image config says about the image.
#[derive(Clone, Debug, Default)]
pub struct ImageConfig {
    /// The image manifest digest.
    pub digest: String,
    pub created: Option<String>,
    pub os: Option<String>,
    pub architecture: Option<String>,
    pub labels: BTreeMap<String, String>,
}

fn client(options: &RegistryOptions) -> (Client, RegistryAuth) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = Client::new(ClientConfig {
        protocol: if options.plain_http {
            ClientProtocol::Http
        } else {
            ClientProtocol::Https
        },
        connect_timeout: Some(std::time::Duration::from_secs(10)),
        read_timeout: Some(std::time::Duration::from_secs(60)),
        ..Default::default()
    });
    let auth = match &options.auth {
        Auth::Anonymous => RegistryAuth::Anonymous,
        Auth::Basic { username, password } => {
            RegistryAuth::Basic(username.clone(), password.clone())
        }
    };
    (client, auth)
}

fn failed(reference: &str, error: oci_client::errors::OciDistributionError) -> OciError {
    use oci_client::errors::OciDistributionError as E;
    match error {
        E::ImageManifestNotFoundError(_) | E::ServerError { code: 404, .. } => OciError::NotFound {
            reference: reference.into(),
        },
        E::RegistryError { envelope, .. }
            if envelope.errors.iter().any(|e| {
                matches!(
                    e.code,
                    oci_client::errors::OciErrorCode::NameUnknown
                        | oci_client::errors::OciErrorCode::ManifestUnknown
                )
            }) =>
        {
            OciError::NotFound {
                reference: reference.into(),
            }
        }
        other => OciError::Registry {
            reference: reference.into(),
            message: other.to_string(),
        },
    }
}

pub async fn image_config(
    reference: &str,
    options: &RegistryOptions,
) -> Result<ImageConfig, OciError> {
    let parsed = oci::parse_reference(reference)?;
    let (client, auth) = client(options);
    let (_, digest, config) = client
        .pull_manifest_and_config(&parsed, &auth)
        .await
        .map_err(|e| failed(reference, e))?;
    let config: serde_json::Value = serde_json::from_str(&config).unwrap_or_default();
    let text = |v: &serde_json::Value| v.as_str().map(String::from);
    Ok(ImageConfig {
        digest,
        created: text(&config["created"]),
        os: text(&config["os"]),
        architecture: text(&config["architecture"]),
        labels: config["config"]["Labels"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default(),
    })
}

/// Every tag of `repository` (`registry/name`, no tag), following the registry's pages.
pub async fn list_tags(
    repository: &str,
    options: &RegistryOptions,
) -> Result<Vec<String>, OciError> {
    let parsed: Reference = oci::parse_reference(repository)?;
    let (client, auth) = client(options);
    let mut tags = std::collections::BTreeSet::new();
    let mut last: Option<String> = None;
    const PAGE: usize = 500;
    loop {
        let page = client
            .list_tags(&parsed, &auth, Some(PAGE), last.as_deref())
            .await
            .map_err(|e| failed(repository, e))?;
        let (count, before) = (page.tags.len(), tags.len());
        last = page.tags.last().cloned();
        tags.extend(page.tags);
        if count < PAGE || tags.len() == before {
            break;
        }
    }
    Ok(tags.into_iter().collect())
}

/// `registry/name` of a reference, without tag or digest.
pub fn repository_of(reference: &str) -> Result<String, OciError> {
    let parsed = oci::parse_reference(reference)?;
    Ok(format!("{}/{}", parsed.registry(), parsed.repository()))
}
