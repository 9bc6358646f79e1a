//! Revisions: every plan a Blueprint executes is kept in the cluster as one Secret, so a rollback
//! restores exactly what was installed, even when the catalog no longer has that bundle (the way
//! Helm keeps its releases).
//!
//! A revision Secret is named `<blueprint>.r<revision>`, has type `windlass.dev/revision.v1`, and
//! holds one data key, `revision.json.gz`: the gzip of the JSON of [`RevisionContent`]. Pure code:
//! nothing here talks to the cluster.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use flate2::{Compression, read::GzDecoder, write::GzEncoder};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use windlass_api::MANAGED_BY_LABEL;
use windlass_api::blueprint::Blueprint;
use windlass_api::config::OperatorConfig;
use windlass_catalog_controller::store::BundleContent;

/// `type` of every revision Secret.
pub const SECRET_TYPE: &str = "windlass.dev/revision.v1";
/// The one data key of a revision Secret.
pub const DATA_KEY: &str = "revision.json.gz";
pub const BLUEPRINT_LABEL: &str = "windlass.dev/blueprint";
pub const REVISION_LABEL: &str = "windlass.dev/revision";
pub const PACKAGE_LABEL: &str = "windlass.dev/package";
pub const VERSION_ANNOTATION: &str = "windlass.dev/version";
pub const CSV_ANNOTATION: &str = "windlass.dev/cluster-service-version";
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
        (BLUEPRINT_LABEL.to_string(), name.clone()),
        (REVISION_LABEL.to_string(), content.revision.to_string()),
        (PACKAGE_LABEL.to_string(), content.package.clone()),
        (MANAGED_BY_LABEL.to_string(), "windlass".to_string()),
    ]);
    let annotations = BTreeMap::from([
        (VERSION_ANNOTATION.to_string(), content.version.clone()),
        (
            CSV_ANNOTATION.to_string(),
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
        type_: Some(SECRET_TYPE.to_string()),
        data: Some(BTreeMap::from([(DATA_KEY.to_string(), ByteString(data))])),
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
        Some(SECRET_TYPE) => {}
        other => {
            return Err(invalid(format!(
                "has type {}, expected {SECRET_TYPE}",
                other.unwrap_or("<none>")
            )));
        }
    }
    let data = secret
        .data
        .as_ref()
        .and_then(|d| d.get(DATA_KEY))
        .ok_or_else(|| invalid(format!("has no data key {DATA_KEY}")))?;
    let content = decode(&data.0).map_err(|error| RevisionError::InSecret {
        secret: id.clone(),
        error: Box::new(error),
    })?;
    let label = meta.labels.as_ref().and_then(|l| l.get(REVISION_LABEL));
    if let Some(label) = label
        && label.parse::<i64>().ok() != Some(content.revision)
    {
        return Err(invalid(format!(
            "label {REVISION_LABEL}={label} disagrees with the revision {} it holds",
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
    }
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
mod tests {
    use std::path::{Path, PathBuf};

    use serde_json::json;
    use windlass_api::blueprint::{Blueprint, BlueprintSpec};

    use super::*;

    fn blueprint() -> Blueprint {
        let mut bp = Blueprint::new("acme-db", BlueprintSpec::default());
        bp.metadata.namespace = Some("team-a".into());
        bp.metadata.uid = Some("0000-1111".into());
        bp
    }

    fn acme_db(version: &str) -> BundleContent {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bundles/acme-db");
        let bundle = windlass_bundle::load_bundle(&dir.join(version)).expect("acme-db loads");
        BundleContent {
            package: "acme-db".into(),
            csv_name: bundle.csv.name().to_string(),
            version: bundle.csv.version().expect("a version"),
            digest: "sha256:abc".into(),
            image: None,
            bundle,
        }
    }

    fn content() -> RevisionContent {
        let config = OperatorConfig {
            annotations: [("a".to_string(), "b".to_string())].into(),
            ..OperatorConfig::default()
        };
        let mut content = from_bundle(
            3,
            &acme_db("1.1.0"),
            Some("builtin"),
            config,
            Some(vec!["team-a".into()]),
        );
        content.reason = Some("upgrade".into());
        content
    }

    #[test]
    fn from_bundle_keeps_every_manifest_and_the_csv() {
        let content = content();
        assert_eq!(content.cluster_service_version_name, "acme-db.v1.1.0");
        assert_eq!(content.version, "1.1.0");
        assert_eq!(content.digest.as_deref(), Some("sha256:abc"));
        assert_eq!(content.catalog.as_deref(), Some("builtin"));
        let kinds: Vec<_> = to_bundle_manifests(&content)
            .iter()
            .map(|m| m.kind().to_string())
            .collect();
        assert_eq!(kinds.len(), 2, "{kinds:?}");
        assert!(kinds.contains(&"CustomResourceDefinition".to_string()));
        let csv = csv_object(&content).expect("the CSV is kept");
        assert_eq!(csv["metadata"]["name"], "acme-db.v1.1.0");
        let json = serde_json::to_value(&content).unwrap();
        let keys = ["clusterServiceVersionName", "targetNamespaces", "reason"];
        assert!(keys.iter().all(|k| json.get(k).is_some()), "{json:#}");
    }

    #[test]
    fn encode_and_decode_round_trip() {
        let content = content();
        let bytes = encode(&content).unwrap();
        assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip magic");
        assert_eq!(decode(&bytes).unwrap(), content);
    }

    #[test]
    fn decode_refuses_a_gzip_bomb_and_garbage() {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
        let zeros = vec![b' '; 1 << 20];
        for _ in 0..17 {
            encoder.write_all(&zeros).unwrap();
        }
        let bomb = encoder.finish().unwrap();
        assert!(bomb.len() < 100_000, "{} bytes", bomb.len());
        let error = decode(&bomb).unwrap_err();
        assert!(matches!(error, RevisionError::DecompressedTooLarge { .. }));
        assert!(error.to_string().contains("gzip bomb"), "{error}");
        assert!(matches!(
            decode(b"not gzip"),
            Err(RevisionError::Decompress(_))
        ));
        let not_a_revision = {
            let mut e = GzEncoder::new(Vec::new(), Compression::fast());
            e.write_all(b"{\"revision\": \"one\"}").unwrap();
            e.finish().unwrap()
        };
        assert!(matches!(
            decode(&not_a_revision),
            Err(RevisionError::Deserialize(_))
        ));
    }

    #[test]
    fn to_secret_and_back() {
        let content = content();
        let secret = to_secret(&content, &blueprint()).unwrap();
        let meta = &secret.metadata;
        assert_eq!(meta.name.as_deref(), Some("acme-db.r3"));
        assert_eq!(meta.namespace.as_deref(), Some("team-a"));
        assert_eq!(secret.type_.as_deref(), Some(SECRET_TYPE));
        let labels = meta.labels.clone().unwrap();
        assert_eq!(labels[BLUEPRINT_LABEL], "acme-db");
        assert_eq!(labels[REVISION_LABEL], "3");
        assert_eq!(labels[PACKAGE_LABEL], "acme-db");
        assert_eq!(labels[MANAGED_BY_LABEL], "windlass");
        let annotations = meta.annotations.clone().unwrap();
        assert_eq!(annotations[VERSION_ANNOTATION], "1.1.0");
        assert_eq!(annotations[CSV_ANNOTATION], "acme-db.v1.1.0");
        let owner = &meta.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.api_version.as_str(), owner.kind.as_str()),
            ("windlass.dev/v1alpha1", "Blueprint")
        );
        assert_eq!(
            (owner.name.as_str(), owner.uid.as_str()),
            ("acme-db", "0000-1111")
        );
        assert_eq!(owner.controller, Some(false));
        assert_eq!(owner.block_owner_deletion, Some(false));
        assert_eq!(from_secret(&secret).unwrap(), content);
    }

    #[test]
    fn a_blueprint_without_uid_cannot_own_a_revision() {
        let mut bp = blueprint();
        bp.metadata.uid = None;
        let error = to_secret(&content(), &bp).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the Blueprint has no metadata.uid, so it cannot own a revision Secret"
        );
    }

    #[test]
    fn from_secret_names_the_secret_and_the_problem() {
        let good = to_secret(&content(), &blueprint()).unwrap();
        let with = |edit: &dyn Fn(&mut Secret)| {
            let mut s = good.clone();
            edit(&mut s);
            from_secret(&s).unwrap_err().to_string()
        };
        assert_eq!(
            with(&|s| s.type_ = Some("Opaque".into())),
            "revision Secret team-a/acme-db.r3: has type Opaque, expected windlass.dev/revision.v1"
        );
        assert_eq!(
            with(&|s| s.data = None),
            "revision Secret team-a/acme-db.r3: has no data key revision.json.gz"
        );
        assert!(
            with(&|s| {
                s.data = Some([(DATA_KEY.to_string(), ByteString(b"junk".to_vec()))].into())
            })
            .starts_with("revision Secret team-a/acme-db.r3: data is not valid gzip")
        );
        assert_eq!(
            with(&|s| {
                let labels = s.metadata.labels.as_mut().unwrap();
                labels.insert(REVISION_LABEL.into(), "4".into());
            }),
            "revision Secret team-a/acme-db.r3: label windlass.dev/revision=4 disagrees with the \
             revision 3 it holds"
        );
    }

    #[test]
    fn too_large_for_a_secret_is_refused_clearly() {
        let mut content = content();
        // Incompressible: xorshift noise, hex encoded.
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let noise: String = (0..160_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                format!("{:016x}", x)
            })
            .collect();
        content.manifests.push(StoredManifest {
            file: "manifests/huge.yaml".into(),
            object: json!({"kind": "ConfigMap", "data": {"noise": noise}}),
        });
        let error = to_secret(&content, &blueprint()).unwrap_err();
        assert!(matches!(error, RevisionError::TooLarge { .. }));
        assert_eq!(error.metric_label(), "revision_too_large");
        let message = error.to_string();
        assert!(
            message.starts_with("revision Secret acme-db.r3 would hold ")
                && message.ends_with(
                    " bytes of compressed revision data for acme-db 1.1.0, more than the \
                     1000000 bytes a Secret can hold"
                ),
            "{message}"
        );
    }

    #[test]
    fn secret_names() {
        assert_eq!(secret_name("acme-db", 12), "acme-db.r12");
    }

    #[test]
    fn prune_table() {
        type Case<'a> = (&'a [i64], i64, &'a [i64], &'a [i64]);
        let cases: [Case; 7] = [
            (&[1, 2, 3], 10, &[], &[]),
            (&[1, 2, 3, 4, 5], 3, &[], &[1, 2]),
            (&[5, 3, 1, 4, 2], 3, &[], &[1, 2]),
            (&[1, 2, 3, 4, 5], 3, &[1], &[2, 3]),
            (&[1, 2, 3, 4, 5], 1, &[2, 5], &[1, 3, 4]),
            (&[1, 2, 3], 0, &[3], &[1, 2]),
            (&[1, 1, 2], 1, &[], &[1]),
        ];
        for (revisions, keep, protected, expected) in cases {
            assert_eq!(
                prune(revisions, keep, protected),
                expected,
                "{revisions:?} keep {keep} protecting {protected:?}"
            );
        }
    }

    fn corpus() -> Option<PathBuf> {
        let root = match std::env::var("WINDLASS_CORPUS") {
            Ok(v) if v == "skip" => return None,
            Ok(v) => PathBuf::from(v),
            Err(_) => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"),
        };
        let dir = root.join("operatorhub");
        if dir.is_dir() {
            Some(dir)
        } else {
            eprintln!("skipped: no corpus at {}", dir.display());
            None
        }
    }

    fn highest_version(package: &Path) -> Option<PathBuf> {
        std::fs::read_dir(package)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .filter_map(|p| {
                let name = p.file_name()?.to_str()?.trim_start_matches('v').to_string();
                Some((semver::Version::parse(&name).ok()?, p))
            })
            .max_by(|a, b| a.0.cmp(&b.0))
            .map(|(_, p)| p)
    }

    /// The newest bundle of every corpus package as a revision: how big the largest gets.
    #[test]
    fn corpus_bundles_fit_in_a_secret() {
        let Some(root) = corpus() else { return };
        let mut packages: Vec<PathBuf> = std::fs::read_dir(&root)
            .expect("readable corpus")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        packages.sort();
        let mut sizes = Vec::new();
        for dir in packages.iter().filter_map(|p| highest_version(p)) {
            let Ok(bundle) = windlass_bundle::load_bundle(&dir) else {
                continue;
            };
            let bundle_content = BundleContent {
                package: bundle
                    .csv
                    .name()
                    .split('.')
                    .next()
                    .unwrap_or("")
                    .to_string(),
                csv_name: bundle.csv.name().to_string(),
                version: bundle
                    .csv
                    .version()
                    .unwrap_or(semver::Version::new(0, 0, 0)),
                digest: String::new(),
                image: None,
                bundle,
            };
            let content = from_bundle(1, &bundle_content, None, OperatorConfig::default(), None);
            let json = serde_json::to_vec(&content).unwrap().len();
            let encoded = encode(&content).unwrap();
            assert_eq!(decode(&encoded).unwrap(), content);
            let fits = to_secret(&content, &blueprint()).is_ok();
            assert_eq!(fits, encoded.len() <= MAX_ENCODED_BYTES);
            sizes.push((encoded.len(), json, dir));
        }
        assert!(
            sizes.len() > 80,
            "only {} corpus bundles loaded",
            sizes.len()
        );
        sizes.sort_by_key(|s| std::cmp::Reverse(s.0));
        println!("{} bundles, the largest five as revisions:", sizes.len());
        for (encoded, json, dir) in sizes.iter().take(5) {
            println!(
                "{}: {encoded} bytes gzip, {json} bytes JSON, ratio {:.1}",
                dir.strip_prefix(&root).unwrap_or(dir).display(),
                *json as f64 / *encoded as f64
            );
        }
        let (largest, _, dir) = &sizes[0];
        assert!(
            *largest <= MAX_ENCODED_BYTES,
            "{} encodes to {largest} bytes",
            dir.display()
        );
    }
}
