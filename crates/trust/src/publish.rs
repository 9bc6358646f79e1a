//! Publishing signatures where `cosign verify` looks: a Sigstore bundle as an OCI 1.1 referrer
//! (and the referrers tag for registries without the API), or the simple-signing layer in the
//! legacy `sha256-<hex>.sig` image.

use chrono::{DateTime, SecondsFormat, Utc};
use windlass_oci::RegistryClient;

use crate::TrustError;
use crate::dsse::COSIGN_SIGN_PREDICATE;
use crate::keys::PrivateKey;
use crate::layout::{self, Descriptor, Manifest};
use crate::sign::{SignatureFormatChoice, bundle, simple_signing};

/// What [`publish_signature`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Published {
    pub repository: String,
    pub digest: String,
    pub format: SignatureFormatChoice,
    /// The referrer manifest digest (bundle) or the `.sig` image digest (legacy).
    pub manifest_digest: String,
    /// Where a registry without the referrers API finds it (the tag it updated), if any.
    pub tag: Option<String>,
    /// False when the same signature was already stored.
    pub written: bool,
}

fn publish_error(reference: &str, message: impl Into<String>) -> TrustError {
    TrustError::Publish {
        reference: reference.into(),
        message: message.into(),
    }
}

/// Signs `repository@digest` with `key` and stores the signature in `format`.
pub async fn publish_signature(
    client: &RegistryClient,
    repository: &str,
    digest: &str,
    key: &PrivateKey,
    format: SignatureFormatChoice,
    now: DateTime<Utc>,
) -> Result<Published, TrustError> {
    let subject_reference = format!("{repository}@{digest}");
    if !layout::is_sha256_digest(digest) {
        return Err(publish_error(&subject_reference, "sign a sha256 digest"));
    }
    let subject = client
        .manifest(&subject_reference, 4 * 1024 * 1024)
        .await?
        .ok_or_else(|| publish_error(&subject_reference, "no such image in the registry"))?;
    match format {
        SignatureFormatChoice::Bundle => {
            publish_bundle(client, repository, digest, key, &subject, now).await
        }
        SignatureFormatChoice::Legacy => publish_legacy(client, repository, digest, key).await,
    }
}

async fn publish_bundle(
    client: &RegistryClient,
    repository: &str,
    digest: &str,
    key: &PrivateKey,
    subject: &windlass_oci::RawManifest,
    now: DateTime<Utc>,
) -> Result<Published, TrustError> {
    let bundle = bundle(key, digest);
    client.push_blob(repository, layout::EMPTY_CONFIG).await?;
    client.push_blob(repository, &bundle).await?;
    let subject_descriptor = Descriptor {
        media_type: if subject.media_type.is_empty() {
            layout::OCI_MANIFEST.into()
        } else {
            subject.media_type.clone()
        },
        size: subject.size() as i64,
        digest: digest.into(),
        annotations: None,
        artifact_type: None,
    };
    let manifest = layout::bundle_referrer(
        subject_descriptor,
        &bundle,
        COSIGN_SIGN_PREDICATE,
        &now.to_rfc3339_opts(SecondsFormat::Secs, true),
    );
    let bytes = manifest.to_bytes();
    let manifest_digest = client
        .push_manifest(repository, None, &bytes, layout::OCI_MANIFEST)
        .await?;
    // A registry with the referrers API lists it now; otherwise add it to the tag schema
    // index, as cosign (go-containerregistry) does.
    let listed = client
        .referrers(repository, digest, None)
        .await?
        .iter()
        .any(|r| r.digest == manifest_digest);
    if listed {
        return Ok(Published {
            repository: repository.into(),
            digest: digest.into(),
            format: SignatureFormatChoice::Bundle,
            manifest_digest,
            tag: None,
            written: true,
        });
    }
    let tag = layout::referrers_tag(digest);
    let existing = client
        .manifest(&format!("{repository}:{tag}"), 1024 * 1024)
        .await?;
    let mut entry = Descriptor::of(layout::OCI_MANIFEST, &bytes);
    entry.artifact_type = Some(crate::bundle::MEDIA_TYPE_V03.into());
    let index = layout::index_with_referrer(existing.as_ref().map(|m| m.bytes.as_slice()), entry)
        .map_err(|e| publish_error(&format!("{repository}:{tag}"), e.to_string()))?;
    if let Some(index) = index {
        client
            .push_manifest(repository, Some(&tag), &index, layout::OCI_INDEX)
            .await?;
    }
    Ok(Published {
        repository: repository.into(),
        digest: digest.into(),
        format: SignatureFormatChoice::Bundle,
        manifest_digest,
        tag: Some(tag),
        written: true,
    })
}

async fn publish_legacy(
    client: &RegistryClient,
    repository: &str,
    digest: &str,
    key: &PrivateKey,
) -> Result<Published, TrustError> {
    let (payload, signature) = simple_signing(key, repository, digest);
    let tag = layout::signature_tag(digest);
    let tag_reference = format!("{repository}:{tag}");
    let existing = client.manifest(&tag_reference, 1024 * 1024).await?;
    let existing = match existing {
        Some(raw) => {
            let manifest = Manifest::parse(&raw.bytes)
                .map_err(|e| publish_error(&tag_reference, e.to_string()))?;
            let config = client
                .blob(repository, &manifest.config.digest, 1024 * 1024)
                .await?;
            Some((manifest, config, raw.digest))
        }
        None => None,
    };
    let updated = layout::signature_image_with(
        existing.as_ref().map(|(m, c, _)| (m, c.as_slice())),
        &payload,
        &signature,
    )
    .map_err(|e| publish_error(&tag_reference, e.to_string()))?;
    let Some((manifest, config)) = updated else {
        let (_, _, manifest_digest) = existing.expect("a duplicate implies an existing image");
        return Ok(Published {
            repository: repository.into(),
            digest: digest.into(),
            format: SignatureFormatChoice::Legacy,
            manifest_digest,
            tag: Some(tag),
            written: false,
        });
    };
    client.push_blob(repository, &payload).await?;
    client.push_blob(repository, &config).await?;
    let manifest_digest = client
        .push_manifest(
            repository,
            Some(&tag),
            &manifest.to_bytes(),
            layout::OCI_MANIFEST,
        )
        .await?;
    Ok(Published {
        repository: repository.into(),
        digest: digest.into(),
        format: SignatureFormatChoice::Legacy,
        manifest_digest,
        tag: Some(tag),
        written: true,
    })
}
