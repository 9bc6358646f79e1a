use std::path::{Path, PathBuf};
use windlass_api::names::{annotations, labels, revision_secret};

use serde_json::json;
use windlass_api::blueprint::{Blueprint, BlueprintSpec};

use super::*;
use crate::samples::acme_db;

fn blueprint() -> Blueprint {
    let mut bp = Blueprint::new("acme-db", BlueprintSpec::default());
    bp.metadata.namespace = Some("team-a".into());
    bp.metadata.uid = Some("0000-1111".into());
    bp
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
    // The best level: the bomb stays small whichever deflate backend flate2 was built with.
    let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
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
    assert_eq!(secret.type_.as_deref(), Some(revision_secret::TYPE));
    let labels = meta.labels.clone().unwrap();
    assert_eq!(labels[labels::BLUEPRINT], "acme-db");
    assert_eq!(labels[labels::REVISION], "3");
    assert_eq!(labels[labels::PACKAGE], "acme-db");
    assert_eq!(labels[labels::MANAGED_BY], "windlass");
    let annotations = meta.annotations.clone().unwrap();
    assert_eq!(annotations[annotations::VERSION], "1.1.0");
    assert_eq!(
        annotations[annotations::CLUSTER_SERVICE_VERSION],
        "acme-db.v1.1.0"
    );
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
            s.data = Some(
                [(
                    revision_secret::DATA_KEY.to_string(),
                    ByteString(b"junk".to_vec()),
                )]
                .into(),
            )
        })
        .starts_with("revision Secret team-a/acme-db.r3: data is not valid gzip")
    );
    assert_eq!(
        with(&|s| {
            let labels = s.metadata.labels.as_mut().unwrap();
            labels.insert(labels::REVISION.into(), "4".into());
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
    windlass_corpus::operatorhub_or_skip()
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
            pulled_from: None,
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

fn sealed_secret(key: &SealKey) -> Secret {
    let content = content();
    let mut secret = to_secret(&content, &blueprint()).unwrap();
    let annotations = secret.metadata.annotations.get_or_insert_default();
    annotations.insert(
        annotations::KINDS.into(),
        "apiextensions.k8s.io/v1/CustomResourceDefinition".into(),
    );
    annotations.insert(
        annotations::CRDS.into(),
        "databases.acme.windlass.dev".into(),
    );
    seal_secret(&mut secret, key, &blueprint(), content.revision);
    secret
}

fn key(byte: u8) -> SealKey {
    SealKey::from_bytes(&[byte; 32]).unwrap()
}

#[test]
fn a_sealed_revision_checks_and_any_edit_of_what_windlass_reads_breaks_the_seal() {
    let secret = sealed_secret(&key(7));
    assert_eq!(verify_secret(&secret, &key(7), &blueprint(), 3), Ok(()));

    let mut edits: Vec<(&str, Secret)> = Vec::new();
    let mut data = secret.clone();
    let mut content = from_secret(&data).unwrap();
    content.manifests.push(StoredManifest {
        file: "manifests/escalation.yaml".into(),
        object: json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding"}),
    });
    data.data.as_mut().unwrap().insert(
        revision_secret::DATA_KEY.into(),
        ByteString(encode(&content).unwrap()),
    );
    edits.push(("an added manifest", data));
    for key_name in [annotations::CRDS, annotations::KINDS, annotations::VERSION] {
        let mut edited = secret.clone();
        edited
            .metadata
            .annotations
            .as_mut()
            .unwrap()
            .insert(key_name.into(), "everything.example.com".into());
        edits.push((key_name, edited));
    }
    let mut unsealed = secret.clone();
    unsealed
        .metadata
        .annotations
        .as_mut()
        .unwrap()
        .remove(windlass_api::names::seal::ANNOTATION);
    edits.push(("no seal", unsealed));
    for (what, edited) in &edits {
        assert!(
            verify_secret(edited, &key(7), &blueprint(), 3).is_err(),
            "{what} must break the seal"
        );
    }
    assert_eq!(
        verify_secret(&edits.last().unwrap().1, &key(7), &blueprint(), 3),
        Err(SealError::Missing)
    );
}

#[test]
fn a_seal_holds_only_for_its_own_blueprint_revision_and_key() {
    let secret = sealed_secret(&key(7));
    assert_eq!(
        verify_secret(&secret, &key(8), &blueprint(), 3),
        Err(SealError::Mismatch),
        "another key"
    );
    assert_eq!(
        verify_secret(&secret, &key(7), &blueprint(), 4),
        Err(SealError::Mismatch),
        "renumbered"
    );
    let mut other = blueprint();
    other.metadata.uid = Some("2222-3333".into());
    assert_eq!(
        verify_secret(&secret, &key(7), &other, 3),
        Err(SealError::Mismatch),
        "copied to a Blueprint of the same name that was deleted and created again"
    );
    let mut elsewhere = blueprint();
    elsewhere.metadata.namespace = Some("team-b".into());
    assert_eq!(
        verify_secret(&secret, &key(7), &elsewhere, 3),
        Err(SealError::Mismatch),
        "copied to another namespace"
    );
}
