//! Revisions: every plan a Blueprint executes is kept in the cluster as one Secret, so a rollback
//! restores exactly what was installed, even when the catalog no longer has that bundle (the way
//! Helm keeps its releases).
//!
//! A revision Secret is named `<blueprint>.r<revision>`, has type `windlass.dev/revision.v1`, and
//! holds one data key, `revision.json.gz`: the gzip of the JSON of [`RevisionContent`]. The
//! Secret lives in the Blueprint's namespace, where tenants can write, so it is sealed
//! ([`seal_secret`]) and its content used only when the seal checks ([`verify_secret`]). Pure
//! code: nothing here talks to the cluster.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use windlass_api::names::labels;
use windlass_api::names::{annotations, revision_secret};

use flate2::{Compression, read::GzDecoder, write::GzEncoder};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use windlass_api::blueprint::Blueprint;
use windlass_api::config::OperatorConfig;
use windlass_api::mirror::ImageRewrite;
use windlass_catalog_store::BundleContent;
use windlass_revisions::{SealError, SealKey, Subject, seal};

/// The API server refuses a Secret whose data exceeds 1 MiB (1,048,576 bytes); this leaves room
/// for the key, labels and annotations.
pub const MAX_ENCODED_BYTES: usize = 1_000_000;
/// Decoding stops here: a small corrupt or hostile blob must not inflate into gigabytes.
pub const MAX_DECODED_BYTES: u64 = 16 * 1024 * 1024;
/// How many revisions a Blueprint keeps when its spec says nothing.
pub const DEFAULT_HISTORY_LIMIT: i64 = 10;

/// One manifest of the bundle, exactly as shipped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredManifest {
    /// Path inside the bundle, for example `manifests/etcd.crd.yaml`.
    pub file: String,
    pub object: Value,
}

/// Everything needed to re-install one revision without the catalog.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionContent {
    pub revision: i64,
    pub package: String,
    #[serde(rename = "clusterServiceVersionName")]
    pub cluster_service_version_name: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default)]
    pub config: OperatorConfig,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_namespaces: Option<Vec<String>>,
    /// Every manifest of the bundle as shipped, the ClusterServiceVersion included.
    pub manifests: Vec<StoredManifest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The keys whose signatures on the bundle image counted when it was read from the
    /// catalog (kept with the content, so a restart or a rollback still knows).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verified_by: Vec<String>,
    /// Where the bundle image was pulled from, when an ImageMirrorSet sent the pull to a
    /// mirror.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle_pulled_from: Option<ImageRewrite>,
    /// The images the CSV's Deployments run that the ImageMirrorSets send to a mirror, as
    /// decided when this revision's content was first read: every apply of the revision runs
    /// the same images, and `manifests` keep the bundle's own references.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_rewrites: Vec<ImageRewrite>,
    /// The policy that permitted this revision when it was stored, and what it said should
    /// happen if it stopped granting it (the choice stands when the policy is deleted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permitted_by: Option<PermitRecord>,
}

/// Which policy permitted a revision (`None`: what every namespace may do), and its
/// revocation choice then.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermitRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    #[serde(default)]
    pub revocation: windlass_api::policy::Revocation,
}

impl RevisionContent {
    /// Every image the revision's CSV has its Deployments run or hand to the operator.
    pub fn deployment_images(&self) -> Vec<String> {
        let Some(csv) = csv_object(self) else {
            return Vec::new();
        };
        let mut images: Vec<String> = Vec::new();
        let deployments = csv
            .pointer("/spec/install/spec/deployments")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for deployment in &deployments {
            for site in windlass_mirror::pod::pod_images(&deployment["spec"]["template"]["spec"]) {
                if !images.contains(&site.image) {
                    images.push(site.image);
                }
            }
        }
        images
    }

    /// Decides the mirrors of the Deployments' images under `rules` (see
    /// [`RevisionContent::image_rewrites`]).
    pub fn mirror_images(&mut self, rules: &windlass_mirror::MirrorRules) {
        self.image_rewrites = rules
            .rewrite_all(self.deployment_images().iter().map(String::as_str))
            .into_iter()
            .map(ImageRewrite::from)
            .collect();
    }

    /// What the ImageMirrorSets changed for this revision, for its history record: the bundle
    /// image's pull first, then the Deployments' images.
    pub fn recorded_rewrites(&self) -> Vec<ImageRewrite> {
        self.bundle_pulled_from
            .iter()
            .chain(&self.image_rewrites)
            .cloned()
            .collect()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RevisionError {
    #[error("encoding revision {revision} as JSON: {error}")]
    Serialize {
        revision: i64,
        error: serde_json::Error,
    },
    #[error("compressing revision {revision}: {error}")]
    Compress {
        revision: i64,
        error: std::io::Error,
    },
    #[error("data is not valid gzip (corrupt or truncated): {0}")]
    Decompress(std::io::Error),
    #[error(
        "decompressed revision is larger than {limit} bytes; refused (corrupt data or a gzip bomb)"
    )]
    DecompressedTooLarge { limit: u64 },
    #[error("decompressed data is not a revision document: {0}")]
    Deserialize(serde_json::Error),
    #[error(
        "revision Secret {secret} would hold {bytes} bytes of compressed revision data for {package} {version}, more than the {limit} bytes a Secret can hold"
    )]
    TooLarge {
        secret: String,
        package: String,
        version: String,
        bytes: usize,
        limit: usize,
    },
    #[error("the Blueprint has no metadata.{0}, so it cannot own a revision Secret")]
    BlueprintMetadata(&'static str),
    #[error("revision Secret {secret}: {problem}")]
    InvalidSecret { secret: String, problem: String },
    #[error("revision Secret {secret}: {error}")]
    InSecret {
        secret: String,
        error: Box<RevisionError>,
    },
}

impl RevisionError {
    /// A stable label for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            RevisionError::Serialize { .. } => "revision_serialize",
            RevisionError::Compress { .. } => "revision_compress",
            RevisionError::Decompress(_) => "revision_decompress",
            RevisionError::DecompressedTooLarge { .. } => "revision_decompressed_too_large",
            RevisionError::Deserialize(_) => "revision_deserialize",
            RevisionError::TooLarge { .. } => "revision_too_large",
            RevisionError::BlueprintMetadata(_) => "revision_blueprint_metadata",
            RevisionError::InvalidSecret { .. } => "revision_invalid_secret",
            RevisionError::InSecret { error, .. } => error.metric_label(),
        }
    }
}

/// gzip of the JSON of `content`.
pub fn encode(content: &RevisionContent) -> Result<Vec<u8>, RevisionError> {
    let json = serde_json::to_vec(content).map_err(|error| RevisionError::Serialize {
        revision: content.revision,
        error,
    })?;
    let compress = |error| RevisionError::Compress {
        revision: content.revision,
        error,
    };
    let mut encoder = GzEncoder::new(Vec::with_capacity(json.len() / 4), Compression::best());
    encoder.write_all(&json).map_err(compress)?;
    encoder.finish().map_err(compress)
}

/// The inverse of [`encode`]; refuses anything that inflates beyond [`MAX_DECODED_BYTES`].
pub fn decode(bytes: &[u8]) -> Result<RevisionContent, RevisionError> {
    let mut json = Vec::new();
    GzDecoder::new(bytes)
        .take(MAX_DECODED_BYTES + 1)
        .read_to_end(&mut json)
        .map_err(RevisionError::Decompress)?;
    if json.len() as u64 > MAX_DECODED_BYTES {
        return Err(RevisionError::DecompressedTooLarge {
            limit: MAX_DECODED_BYTES,
        });
    }
    serde_json::from_slice(&json).map_err(RevisionError::Deserialize)
}

/// `<blueprint>.r<revision>`.
pub fn secret_name(blueprint: &str, revision: i64) -> String {
    format!("{blueprint}.r{revision}")
}

/// The revision Secret for `content`, in the Blueprint's namespace, owned (not controlled) by it.
pub fn to_secret(
    content: &RevisionContent,
    blueprint: &Blueprint,
) -> Result<Secret, RevisionError> {
    let meta = blueprint.meta();
    let name = meta
        .name
        .clone()
        .ok_or(RevisionError::BlueprintMetadata("name"))?;
    let uid = meta
        .uid
        .clone()
        .ok_or(RevisionError::BlueprintMetadata("uid"))?;
    let secret = secret_name(&name, content.revision);
    let data = encode(content)?;
    if data.len() > MAX_ENCODED_BYTES {
        return Err(RevisionError::TooLarge {
            secret,
            package: content.package.clone(),
            version: content.version.clone(),
            bytes: data.len(),
            limit: MAX_ENCODED_BYTES,
        });
    }
    let labels = BTreeMap::from([
        (labels::BLUEPRINT.to_string(), name.clone()),
        (labels::REVISION.to_string(), content.revision.to_string()),
        (labels::PACKAGE.to_string(), content.package.clone()),
        (labels::MANAGED_BY.to_string(), "windlass".to_string()),
    ]);
    let annotations = BTreeMap::from([
        (annotations::VERSION.to_string(), content.version.clone()),
        (
            annotations::CLUSTER_SERVICE_VERSION.to_string(),
            content.cluster_service_version_name.clone(),
        ),
    ]);
    let owner = OwnerReference {
        api_version: Blueprint::api_version(&()).into_owned(),
        kind: Blueprint::kind(&()).into_owned(),
        name,
        uid,
        controller: Some(false),
        block_owner_deletion: Some(false),
    };
    Ok(Secret {
        metadata: ObjectMeta {
            name: Some(secret),
            namespace: meta.namespace.clone(),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        type_: Some(revision_secret::TYPE.to_string()),
        data: Some(BTreeMap::from([(
            revision_secret::DATA_KEY.to_string(),
            ByteString(data),
        )])),
        ..Secret::default()
    })
}

/// Reads a revision Secret back; errors name the Secret and what is wrong with it.
pub fn from_secret(secret: &Secret) -> Result<RevisionContent, RevisionError> {
    let meta = &secret.metadata;
    let id = match (&meta.namespace, &meta.name) {
        (Some(ns), Some(name)) => format!("{ns}/{name}"),
        (None, Some(name)) => name.clone(),
        _ => "<unnamed>".to_string(),
    };
    let invalid = |problem: String| RevisionError::InvalidSecret {
        secret: id.clone(),
        problem,
    };
    match secret.type_.as_deref() {
        Some(revision_secret::TYPE) => {}
        other => {
            return Err(invalid(format!(
                "has type {}, expected {}",
                other.unwrap_or("<none>"),
                revision_secret::TYPE
            )));
        }
    }
    let data = secret
        .data
        .as_ref()
        .and_then(|d| d.get(revision_secret::DATA_KEY))
        .ok_or_else(|| invalid(format!("has no data key {}", revision_secret::DATA_KEY)))?;
    let content = decode(&data.0).map_err(|error| RevisionError::InSecret {
        secret: id.clone(),
        error: Box::new(error),
    })?;
    let label = meta.labels.as_ref().and_then(|l| l.get(labels::REVISION));
    if let Some(label) = label
        && label.parse::<i64>().ok() != Some(content.revision)
    {
        return Err(invalid(format!(
            "label {}={label} disagrees with the revision {} it holds",
            labels::REVISION,
            content.revision
        )));
    }
    Ok(content)
}

/// A new revision of `content`'s bundle, every manifest kept as shipped. `created_by` and
/// `reason` are left empty for the caller.
pub fn from_bundle(
    revision: i64,
    content: &BundleContent,
    catalog: Option<&str>,
    config: OperatorConfig,
    target_namespaces: Option<Vec<String>>,
) -> RevisionContent {
    RevisionContent {
        revision,
        package: content.package.clone(),
        cluster_service_version_name: content.csv_name.clone(),
        version: content.version.to_string(),
        digest: Some(content.digest.clone()).filter(|d| !d.is_empty()),
        catalog: catalog.map(str::to_string),
        image: content.image.clone(),
        config,
        target_namespaces,
        manifests: content
            .bundle
            .manifests
            .iter()
            .map(|m| StoredManifest {
                file: m.file.clone(),
                object: m.object.clone(),
            })
            .collect(),
        created_by: None,
        reason: None,
        verified_by: Vec::new(),
        permitted_by: None,
        bundle_pulled_from: match (&content.image, &content.pulled_from) {
            (Some(image), Some(mirrored)) => Some(ImageRewrite {
                image: image.clone(),
                mirror: mirrored.reference.clone(),
                mirror_set: mirrored.mirror_set.clone(),
            }),
            _ => None,
        },
        image_rewrites: Vec::new(),
    }
}

/// Whose revision a Secret holds, as the seal covers it: the Blueprint (namespace, name, uid)
/// and the revision number.
fn seal_subject(blueprint: &Blueprint, revision: i64) -> Subject {
    let meta = blueprint.meta();
    Subject {
        kind: Blueprint::kind(&()).into_owned(),
        object: format!(
            "{}/{}",
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default()
        ),
        uid: meta.uid.clone().unwrap_or_default(),
        revision: Some(revision),
    }
}

/// What of a revision Secret the seal covers: its data and every annotation windlass reads
/// back (the kinds and CRDs steer uninstall; the version and CSV name steer the plan).
fn sealed_parts(secret: &Secret) -> Vec<&[u8]> {
    let data = secret
        .data
        .as_ref()
        .and_then(|d| d.get(revision_secret::DATA_KEY))
        .map_or(&[][..], |d| d.0.as_slice());
    let annotation = |key: &str| {
        secret
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .map_or(&[][..], |v| v.as_bytes())
    };
    vec![
        data,
        annotation(annotations::VERSION),
        annotation(annotations::CLUSTER_SERVICE_VERSION),
        annotation(annotations::KINDS),
        annotation(annotations::CRDS),
    ]
}

/// Seals `secret` (the last change before it is written) as revision `revision` of `blueprint`.
pub fn seal_secret(secret: &mut Secret, key: &SealKey, blueprint: &Blueprint, revision: i64) {
    let sealed = seal::seal(
        key,
        &seal_subject(blueprint, revision),
        &sealed_parts(secret),
    );
    secret
        .metadata
        .annotations
        .get_or_insert_default()
        .insert(windlass_api::names::seal::ANNOTATION.to_string(), sealed);
}

/// Whether `secret` is revision `revision` of `blueprint` exactly as windlass wrote it.
pub fn verify_secret(
    secret: &Secret,
    key: &SealKey,
    blueprint: &Blueprint,
    revision: i64,
) -> Result<(), SealError> {
    let found = secret
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(windlass_api::names::seal::ANNOTATION));
    seal::verify(
        key,
        &seal_subject(blueprint, revision),
        &sealed_parts(secret),
        found.map(String::as_str),
    )
}

/// The stored manifests as bundle manifests, for `windlass_bundle::legacy_apis` and the planner.
pub fn to_bundle_manifests(content: &RevisionContent) -> Vec<windlass_bundle::Manifest> {
    content
        .manifests
        .iter()
        .map(|m| windlass_bundle::Manifest {
            file: m.file.clone(),
            object: m.object.clone(),
        })
        .collect()
}

/// The bundle's ClusterServiceVersion (`operators.coreos.com`), as shipped.
pub fn csv_object(content: &RevisionContent) -> Option<&Value> {
    content.manifests.iter().map(|m| &m.object).find(|o| {
        o["kind"] == "ClusterServiceVersion"
            && o["apiVersion"]
                .as_str()
                .is_some_and(|v| v.starts_with("operators.coreos.com/"))
    })
}

/// The revisions to delete so that at most `keep` remain, oldest first. Protected revisions (the
/// one installed now, the rollback target) are never deleted but count toward the limit, so
/// more than `keep` remain only when more than `keep` are protected.
pub fn prune(revisions: &[i64], keep: i64, protected: &[i64]) -> Vec<i64> {
    let mut all = revisions.to_vec();
    all.sort_unstable();
    all.dedup();
    let keep = usize::try_from(keep.max(0)).unwrap_or(usize::MAX);
    let mut excess = all.len().saturating_sub(keep);
    let mut delete = Vec::new();
    for revision in all {
        if excess == 0 {
            break;
        }
        if !protected.contains(&revision) {
            delete.push(revision);
            excess -= 1;
        }
    }
    delete
}

#[cfg(test)]
mod tests;
