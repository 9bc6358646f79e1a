//! Signatures made by the real cosign (v3.1.3), as a registry with the OCI referrers API served
//! them, replayed from `tests/data/cosign`: key A (cosign's encrypted key format, password
//! `fixture-password`) signed the image with a Sigstore bundle (a referrer), key B with the
//! legacy simple-signing format (the `sha256-<hex>.sig` tag). The recorded responses are the
//! registry's bytes unchanged, so digests and signatures are cosign's own.

mod common;
use common::{digest, fixture};

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use chrono::{DateTime, Utc};
use windlass_oci::{OciError, RawManifest, Referrer};
use windlass_trust::policy::{Requirement, TrustRule, TrustedKey};
use windlass_trust::{
    Artifact, ArtifactClass, CheckOutcome, Decision, Limits, PrivateKey, PublicKey,
    SignatureSource, TrustPolicy, Verdict, Verifier,
};

const REPOSITORY: &str = "127.0.0.1:40363/demo/app";

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{:x}", sha2::Sha256::digest(bytes))
}

/// The recorded registry: manifests by digest and tag, blobs by digest, the referrers list.
/// Entries can be replaced to tamper with what cosign stored.
struct Recorded {
    manifests: Mutex<BTreeMap<String, Vec<u8>>>,
    blobs: Mutex<BTreeMap<String, Vec<u8>>>,
    referrers: Mutex<Vec<Referrer>>,
    requests: AtomicUsize,
}

impl Recorded {
    fn new() -> Self {
        let bundle_manifest = fixture("bundle-manifest.json");
        let sig_manifest = fixture("sig-manifest.json");
        let tag = format!("{}.sig", digest().replacen(':', "-", 1));
        let manifests = BTreeMap::from([
            (
                format!("{REPOSITORY}@{}", sha256(&bundle_manifest)),
                bundle_manifest,
            ),
            (format!("{REPOSITORY}:{tag}"), sig_manifest),
        ]);
        let blobs = ["bundle.json", "simple-signing.json"]
            .into_iter()
            .map(|name| {
                let bytes = fixture(name);
                (sha256(&bytes), bytes)
            })
            .collect();
        let index: serde_json::Value =
            serde_json::from_slice(&fixture("referrers-a.json")).unwrap();
        let referrers = index["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| Referrer {
                media_type: entry["mediaType"].as_str().unwrap().into(),
                digest: entry["digest"].as_str().unwrap().into(),
                size: entry["size"].as_i64().unwrap(),
                artifact_type: entry["artifactType"].as_str().map(str::to_string),
                annotations: BTreeMap::new(),
            })
            .collect();
        Recorded {
            manifests: Mutex::new(manifests),
            blobs: Mutex::new(blobs),
            referrers: Mutex::new(referrers),
            requests: AtomicUsize::new(0),
        }
    }

    fn without_legacy(self) -> Self {
        self.manifests
            .lock()
            .unwrap()
            .retain(|reference, _| !reference.ends_with(".sig"));
        self
    }

    fn without_referrers(self) -> Self {
        self.referrers.lock().unwrap().clear();
        self
    }

    /// Replaces the blob `digest` by `bytes` under the same digest, as a registry that does not
    /// check what it serves would.
    fn replace_blob(&self, digest: &str, bytes: Vec<u8>) {
        self.blobs.lock().unwrap().insert(digest.into(), bytes);
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl SignatureSource for Recorded {
    async fn referrers(
        &self,
        repository: &str,
        digest: &str,
        _artifact_type: &str,
    ) -> Result<Vec<Referrer>, OciError> {
        self.requests.fetch_add(1, Ordering::SeqCst);
        assert_eq!(repository, REPOSITORY);
        if digest != self::digest() {
            return Ok(Vec::new());
        }
        Ok(self.referrers.lock().unwrap().clone())
    }

    async fn manifest(
        &self,
        reference: &str,
        max_bytes: u64,
    ) -> Result<Option<RawManifest>, OciError> {
        self.requests.fetch_add(1, Ordering::SeqCst);
        let Some(bytes) = self.manifests.lock().unwrap().get(reference).cloned() else {
            return Ok(None);
        };
        if bytes.len() as u64 > max_bytes {
            return Err(OciError::TooLarge {
                reference: reference.into(),
                limit: max_bytes,
            });
        }
        Ok(Some(RawManifest {
            digest: sha256(&bytes),
            media_type: "application/vnd.oci.image.manifest.v1+json".into(),
            bytes,
        }))
    }

    async fn blob(
        &self,
        _repository: &str,
        digest: &str,
        max_bytes: u64,
    ) -> Result<Vec<u8>, OciError> {
        self.requests.fetch_add(1, Ordering::SeqCst);
        let bytes = self
            .blobs
            .lock()
            .unwrap()
            .get(digest)
            .cloned()
            .ok_or_else(|| OciError::NotFound {
                reference: digest.into(),
            })?;
        if bytes.len() as u64 > max_bytes {
            return Err(OciError::TooLarge {
                reference: digest.into(),
                limit: max_bytes,
            });
        }
        Ok(bytes)
    }
}

fn public_key(name: &str) -> PublicKey {
    PublicKey::from_pem(&fixture(name), name).unwrap()
}

fn keys() -> BTreeMap<String, PublicKey> {
    BTreeMap::from([
        ("A".into(), public_key("a.pub")),
        ("B".into(), public_key("b.pub")),
    ])
}

fn artifact() -> Artifact {
    Artifact {
        reference: format!("{REPOSITORY}:v1"),
        digest: digest(),
        class: ArtifactClass::Catalog,
    }
}

fn rule(keys: &[&str], require: Requirement, at_least: Option<u32>) -> TrustRule {
    TrustRule {
        name: "catalogs".into(),
        keys: keys.iter().map(|k| k.to_string()).collect(),
        require,
        at_least,
        ..Default::default()
    }
}

fn policy(keys: &[&str], rule: TrustRule) -> TrustPolicy {
    TrustPolicy {
        keys: keys
            .iter()
            .map(|name| TrustedKey {
                name: name.to_string(),
                ..Default::default()
            })
            .collect(),
        rules: vec![rule],
        require_signatures: Vec::new(),
    }
}

fn now() -> DateTime<Utc> {
    "2026-12-01T12:00:00Z".parse().unwrap()
}

async fn verify_with(
    source: Recorded,
    policy: &TrustPolicy,
    keys: &BTreeMap<String, PublicKey>,
    limits: Limits,
) -> Verdict {
    Verifier::new(source, limits)
        .verify_at(&artifact(), policy, keys, now())
        .await
        .unwrap()
}

async fn verify(policy: &TrustPolicy) -> Verdict {
    verify_with(Recorded::new(), policy, &keys(), Limits::default()).await
}

#[tokio::test]
async fn both_cosign_formats_verify_and_count_as_two_keys() {
    let verdict = verify(&TrustPolicy::require_all(&["A".into(), "B".into()])).await;
    assert_eq!(verdict.decision, Decision::Verified, "{verdict:#?}");
    assert_eq!(verdict.verified_by, ["A", "B"]);
    let formats: Vec<String> = verdict
        .signatures
        .iter()
        .map(|s| format!("{:?} {:?}", s.format, s.outcome))
        .collect();
    assert_eq!(
        formats,
        [
            r#"Bundle Valid { keys: ["A"] }"#,
            r#"SimpleSigning Valid { keys: ["B"] }"#
        ]
    );
}

#[tokio::test]
async fn each_format_alone_verifies() {
    let bundle_only = Recorded::new().without_legacy();
    let only_a = policy(&["A"], rule(&["A"], Requirement::All, None));
    let verdict = verify_with(bundle_only, &only_a, &keys(), Limits::default()).await;
    assert_eq!(verdict.decision, Decision::Verified, "{verdict:#?}");

    let legacy_only = Recorded::new().without_referrers();
    let only_b = policy(&["B"], rule(&["B"], Requirement::All, None));
    let verdict = verify_with(legacy_only, &only_b, &keys(), Limits::default()).await;
    assert_eq!(verdict.decision, Decision::Verified, "{verdict:#?}");
}

#[tokio::test]
async fn n_of_m_any_and_all_rules() {
    let three = ["A", "B", "C"];
    let mut with_c = keys();
    with_c.insert("C".into(), PrivateKey::generate_p256().public_key());
    let cases = [
        (
            rule(&three, Requirement::AtLeast, Some(2)),
            Decision::Verified,
            "",
        ),
        (
            rule(&three, Requirement::AtLeast, Some(3)),
            Decision::Refused,
            "rule catalogs: needs signatures by at least 3 of A, B and C; found valid signatures by A and B only",
        ),
        (
            rule(&["C", "B"], Requirement::Any, None),
            Decision::Verified,
            "",
        ),
        (
            rule(&["A", "C"], Requirement::All, None),
            Decision::Refused,
            "rule catalogs: needs keys A and C; found a valid signature by A only",
        ),
    ];
    for (rule, decision, first_reason) in cases {
        let verdict = verify_with(
            Recorded::new(),
            &policy(&three, rule.clone()),
            &with_c,
            Limits::default(),
        )
        .await;
        assert_eq!(verdict.decision, decision, "{rule:?}: {verdict:#?}");
        if !first_reason.is_empty() {
            assert_eq!(verdict.reasons[0], first_reason, "{rule:?}");
        }
    }
}

#[tokio::test]
async fn a_wrong_key_is_refused_with_the_reason() {
    let mut wrong = BTreeMap::new();
    wrong.insert("A".to_string(), PrivateKey::generate_p256().public_key());
    let only_a = policy(&["A"], rule(&["A"], Requirement::All, None));
    let verdict = verify_with(Recorded::new(), &only_a, &wrong, Limits::default()).await;
    assert_eq!(verdict.decision, Decision::Refused);
    assert_eq!(
        verdict.reasons[0],
        "rule catalogs: needs key A; found no valid signature by any of them"
    );
    let bundle_reason = verdict
        .reasons
        .iter()
        .find(|r| r.starts_with("referrer "))
        .unwrap();
    assert!(
        bundle_reason.contains("signed by a key the policy does not trust (key hint"),
        "{bundle_reason}"
    );
}

#[tokio::test]
async fn tampered_payloads_are_refused() {
    // The bundle's statement names another digest; cosign's signature stays.
    let bundle = fixture("bundle.json");
    let mut json: serde_json::Value = serde_json::from_slice(&bundle).unwrap();
    let payload = json["dsseEnvelope"]["payload"]
        .as_str()
        .unwrap()
        .to_string();
    use base64::Engine;
    let engine = base64::engine::general_purpose::STANDARD;
    let statement = String::from_utf8(engine.decode(payload).unwrap()).unwrap();
    let hex = digest().trim_start_matches("sha256:").to_string();
    let other = statement.replace(&hex, &"0".repeat(64));
    assert_ne!(statement, other);
    json["dsseEnvelope"]["payload"] = engine.encode(other).into();
    let source = Recorded::new();
    source.replace_blob(&sha256(&bundle), serde_json::to_vec(&json).unwrap());
    // The legacy payload is altered in one byte.
    let mut simple = fixture("simple-signing.json");
    let at = simple.len() - 3;
    simple[at] ^= 1;
    source.replace_blob(&sha256(&fixture("simple-signing.json")), simple);

    let verdict = verify_with(
        source,
        &TrustPolicy::require_all(&["A".into(), "B".into()]),
        &keys(),
        Limits::default(),
    )
    .await;
    assert_eq!(verdict.decision, Decision::Refused);
    let outcomes: Vec<&CheckOutcome> = verdict.signatures.iter().map(|s| &s.outcome).collect();
    assert!(
        matches!(outcomes[0], CheckOutcome::Invalid { reason } if reason.starts_with("payload tampered") && reason.contains("key A")),
        "{outcomes:?}"
    );
    assert!(
        matches!(outcomes[1], CheckOutcome::Invalid { reason } if reason.contains("payload was altered")),
        "{outcomes:?}"
    );
}

#[tokio::test]
async fn another_digest_and_unsigned_images_are_refused() {
    let verifier = Verifier::new(Recorded::new(), Limits::default());
    let other = Artifact {
        digest: format!("sha256:{}", "1".repeat(64)),
        ..artifact()
    };
    let verdict = verifier
        .verify_at(
            &other,
            &TrustPolicy::require_all(&["A".into()]),
            &keys(),
            now(),
        )
        .await
        .unwrap();
    assert_eq!(verdict.decision, Decision::Refused);
    assert!(
        verdict.reasons[0].contains("is unsigned: no signature in referrers of"),
        "{:?}",
        verdict.reasons
    );

    let mut report = rule(&["A"], Requirement::All, None);
    report.unsigned = windlass_trust::UnsignedAction::Report;
    let verdict = verifier
        .verify_at(&other, &policy(&["A"], report.clone()), &keys(), now())
        .await
        .unwrap();
    assert_eq!(verdict.decision, Decision::UnsignedReported);
    assert!(verdict.allowed() && !verdict.verified);

    // Signatures required for the class: `unsigned: Report` lets nothing through unsigned.
    let mut required = policy(&["A"], report);
    required.require_signatures = vec![ArtifactClass::Catalog];
    let verdict = verifier
        .verify_at(&other, &required, &keys(), now())
        .await
        .unwrap();
    assert_eq!(verdict.decision, Decision::Refused, "{verdict:#?}");
    assert!(!verdict.allowed());
}

#[tokio::test]
async fn keys_count_only_inside_their_window() {
    let window = |not_before: Option<&str>, not_after: Option<&str>| TrustPolicy {
        keys: vec![TrustedKey {
            name: "A".into(),
            not_before: not_before.map(|t| t.parse().unwrap()),
            not_after: not_after.map(|t| t.parse().unwrap()),
        }],
        rules: vec![rule(&["A"], Requirement::All, None)],
        require_signatures: Vec::new(),
    };
    let cases = [
        (
            Some("2026-01-01T00:00:00Z"),
            Some("2027-01-01T00:00:00Z"),
            true,
        ),
        (None, Some("2026-11-30T00:00:00Z"), false),
        (Some("2026-12-02T00:00:00Z"), None, false),
    ];
    for (not_before, not_after, counts) in cases {
        let verdict = verify(&window(not_before, not_after)).await;
        assert_eq!(
            verdict.decision == Decision::Verified,
            counts,
            "{not_before:?}..{not_after:?}: {verdict:#?}"
        );
        if !counts {
            assert!(
                verdict
                    .reasons
                    .iter()
                    .any(|r| r.contains("its signatures do not count")),
                "{:?}",
                verdict.reasons
            );
        }
    }
}

#[tokio::test]
async fn limits_on_number_and_size_become_reasons() {
    let both = TrustPolicy::require_all(&["A".into(), "B".into()]);
    let one = Limits {
        max_signatures: 1,
        ..Limits::default()
    };
    let verdict = verify_with(Recorded::new(), &both, &keys(), one).await;
    assert_eq!(verdict.decision, Decision::Refused);
    assert!(
        verdict
            .reasons
            .iter()
            .any(|r| r == "1 more stored signatures were not read (limit 1)"),
        "{:?}",
        verdict.reasons
    );

    let small = Limits {
        max_signature_bytes: 300,
        ..Limits::default()
    };
    let verdict = verify_with(Recorded::new(), &both, &keys(), small).await;
    assert_eq!(verdict.decision, Decision::Refused);
    assert!(
        verdict
            .reasons
            .iter()
            .any(|r| r.contains("over the 300-byte limit")),
        "{:?}",
        verdict.reasons
    );
}

#[tokio::test]
async fn a_verified_digest_is_cached_without_requests() {
    let verifier = Verifier::new(Recorded::new(), Limits::default());
    let both = TrustPolicy::require_all(&["A".into(), "B".into()]);
    let first = verifier
        .verify_at(&artifact(), &both, &keys(), now())
        .await
        .unwrap();
    let requests = verifier.source().requests();
    assert!(requests > 0 && !first.cached);
    let second = verifier
        .verify_at(&artifact(), &both, &keys(), now())
        .await
        .unwrap();
    assert!(second.cached);
    assert_eq!(second.decision, Decision::Verified);
    assert_eq!(verifier.source().requests(), requests);
}

#[test]
fn cosigns_encrypted_private_key_reads_and_signs() {
    let key = PrivateKey::from_pem(&fixture("a.key"), b"fixture-password", "a.key").unwrap();
    assert_eq!(key.public_key(), public_key("a.pub"));
    let wrong = PrivateKey::from_pem(&fixture("a.key"), b"guess", "a.key").unwrap_err();
    assert!(wrong.to_string().contains("a.key"), "{wrong}");
    // What windlass signs with cosign's key verifies with cosign's public key.
    let bundle = windlass_trust::sign::bundle(&key, &digest());
    let outcome = windlass_trust::check::check_bundle(
        &bundle,
        &digest(),
        &[("A".into(), &public_key("a.pub"))],
    );
    assert_eq!(
        outcome,
        CheckOutcome::Valid {
            keys: vec!["A".into()]
        }
    );
}

#[test]
fn malformed_inputs_are_reasons() {
    let keys = keys();
    let ring: Vec<(String, &PublicKey)> = keys.iter().map(|(n, k)| (n.clone(), k)).collect();
    let bundle = fixture("bundle.json");
    let inputs: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"null".to_vec(),
        b"[]".to_vec(),
        b"{\"mediaType\":\"application/vnd.dev.sigstore.bundle.v0.3+json\"}".to_vec(),
        bundle[..bundle.len() / 2].to_vec(),
        String::from_utf8(bundle.clone())
            .unwrap()
            .replace("\"sig\":\"", "\"sig\":\"!!")
            .into_bytes(),
        vec![0xff; 64],
    ];
    for input in inputs {
        let outcome = windlass_trust::check::check_bundle(&input, &digest(), &ring);
        assert!(
            matches!(outcome, CheckOutcome::Invalid { .. }),
            "{:?}: {outcome:?}",
            String::from_utf8_lossy(&input)
        );
    }
}

/// An image pulled from a mirror (an ImageMirrorSet sent it there): the rules of the
/// repository it names decide, and its signatures are read where it was pulled from.
#[tokio::test]
async fn a_mirrored_image_is_judged_by_its_own_rules_with_the_signatures_of_the_mirror() {
    let named = Artifact {
        reference: "quay.io/demo/app:v1".into(),
        ..artifact()
    };
    let mirror = format!("{REPOSITORY}:v1");
    let mut only_quay = rule(&["A", "B"], Requirement::All, None);
    only_quay.images = vec!["quay.io/demo/**".into()];
    let verdict = Verifier::new(Recorded::new(), Limits::default())
        .verify_mirrored_at(
            &named,
            Some(&mirror),
            &policy(&["A", "B"], only_quay),
            &keys(),
            now(),
        )
        .await
        .unwrap();
    assert_eq!(verdict.decision, Decision::Verified, "{verdict:#?}");
    assert_eq!(verdict.repository, "quay.io/demo/app");

    // A rule that covers only the mirror's repository does not cover the image.
    let mut only_mirror = rule(&["A"], Requirement::All, None);
    only_mirror.images = vec!["127.0.0.1:40363/**".into()];
    let source = Recorded::new();
    let verifier = Verifier::new(source, Limits::default());
    let verdict = verifier
        .verify_mirrored_at(
            &named,
            Some(&mirror),
            &policy(&["A"], only_mirror),
            &keys(),
            now(),
        )
        .await
        .unwrap();
    assert_eq!(verdict.decision, Decision::NotCovered, "{verdict:#?}");
    assert_eq!(verifier.source().requests(), 0);
    assert!(verdict.allowed(), "uncovered artifacts are used by default");

    // Required signed, an artifact no rule covers is refused, saying why.
    let mut only_mirror = rule(&["A"], Requirement::All, None);
    only_mirror.images = vec!["127.0.0.1:40363/**".into()];
    let mut required = policy(&["A"], only_mirror);
    required.require_signatures = vec![named.class];
    let verdict = Verifier::new(Recorded::new(), Limits::default())
        .verify_mirrored_at(&named, Some(&mirror), &required, &keys(), now())
        .await
        .unwrap();
    assert_eq!(verdict.decision, Decision::Refused, "{verdict:#?}");
    assert!(
        verdict.reasons[0].contains("must be signed (requireSignatures)"),
        "{:?}",
        verdict.reasons
    );
    assert!(!verdict.allowed());
}
