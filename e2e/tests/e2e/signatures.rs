//! Image signatures against the real cosign (the pinned v3.1.3 that `make e2e` builds) and the
//! local Debian `docker-registry`, which has no referrers API, so cosign's bundles land in the
//! referrers tag schema and legacy signatures in the `sha256-<hex>.sig` tag.
//!
//! cosign signs (`--new-bundle-format` and legacy, `--tlog-upload=false`, key pairs from
//! `cosign generate-key-pair`) and `windlass verify` accepts; wrong keys, unsigned images, a
//! tag moved past its signature and a tampered payload are refused with the reason (exit 1).
//! `windlass sign` signs and `cosign verify` accepts. cosign missing is a failure, not a skip.

use std::process::{Command, Output};

use windlass_bundle::files::FileTree;
use windlass_oci::{RegistryClient, RegistryOptions};
use windlass_testkit::run_ok;

const PASSWORD: &str = "e2e-password";

fn windlass() -> Command {
    let mut command = Command::new(windlass_testkit::windlass_binary());
    command.env("COSIGN_PASSWORD", PASSWORD);
    command
}

/// The pinned cosign, with the test keys' password.
pub(crate) fn cosign() -> Command {
    let mut command = Command::new(windlass_testkit::cosign_binary());
    command.env("COSIGN_PASSWORD", PASSWORD);
    command
}

fn options() -> RegistryOptions {
    RegistryOptions {
        plain_http: true,
        ..Default::default()
    }
}

pub(crate) struct Keys {
    dir: tempfile::TempDir,
}

impl Keys {
    /// Key pairs `NAME.key`/`NAME.pub` made by `cosign generate-key-pair`.
    pub(crate) fn generate(names: &[&str]) -> Keys {
        let dir = tempfile::tempdir().unwrap();
        for name in names {
            run_ok(cosign().current_dir(dir.path()).args([
                "generate-key-pair",
                "--output-key-prefix",
                name,
            ]));
        }
        Keys { dir }
    }

    pub(crate) fn path(&self, file: &str) -> String {
        self.dir.path().join(file).display().to_string()
    }
}

/// Pushes a small image with distinct content, returning its digest.
async fn push_image(reference: &str, content: &str) -> String {
    let tree = FileTree {
        files: [("hello.txt".to_string(), content.as_bytes().to_vec())].into(),
    };
    windlass_oci::push_image(&tree, &Default::default(), reference, &options())
        .await
        .unwrap()
        .digest
}

pub(crate) fn cosign_sign(keys: &Keys, key: &str, image: &str, bundle: bool) {
    run_ok(cosign().args([
        "sign",
        "--key",
        &keys.path(&format!("{key}.key")),
        "--tlog-upload=false",
        "--use-signing-config=false",
        &format!("--new-bundle-format={bundle}"),
        "--allow-http-registry",
        "-y",
        image,
    ]));
}

fn verify(reference: &str, keys: &Keys, names: &[&str]) -> Output {
    let mut command = windlass();
    command.args(["verify", reference, "--plain-http"]);
    for name in names {
        command.args(["--key", &keys.path(&format!("{name}.pub"))]);
    }
    command.output().unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn assert_verified(output: &Output, by: &str) {
    let text = text(output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(text.starts_with("verified "), "{text}");
    assert!(text.contains(&format!("signed by {by}")), "{text}");
}

fn assert_refused(output: &Output, reason: &str) {
    let text = text(output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.starts_with("refused "), "{text}");
    assert!(text.contains(reason), "expected `{reason}` in:\n{text}");
}

#[tokio::test]
async fn cosign_bundles_verify_in_windlass() {
    let keys = Keys::generate(&["a", "b"]);
    let repository = windlass_testkit::registry().unique_repository("e2e/signed-bundle");
    let tag = format!("{repository}:v1");
    let digest = push_image(&tag, "bundle-signed").await;
    cosign_sign(&keys, "a", &format!("{repository}@{digest}"), true);

    assert_verified(&verify(&tag, &keys, &["a"]), "a");
    assert_refused(
        &verify(&tag, &keys, &["b"]),
        "needs key b; found no valid signature by any of them",
    );
    assert_refused(
        &verify(&tag, &keys, &["a", "b"]),
        "needs keys a and b; found a valid signature by a only",
    );
    // A second signer in the other format completes the pair.
    cosign_sign(&keys, "b", &format!("{repository}@{digest}"), false);
    assert_verified(&verify(&tag, &keys, &["a", "b"]), "a, b");
}

#[tokio::test]
async fn cosign_legacy_signatures_verify_and_moved_tags_are_refused() {
    let keys = Keys::generate(&["release"]);
    let repository = windlass_testkit::registry().unique_repository("e2e/signed-legacy");
    let tag = format!("{repository}:stable");
    let digest = push_image(&tag, "legacy-signed").await;
    cosign_sign(&keys, "release", &format!("{repository}@{digest}"), false);
    assert_verified(&verify(&tag, &keys, &["release"]), "release");

    // The tag moves to an image nobody signed: the old digest's signature does not count.
    let moved = push_image(&tag, "pushed later, unsigned").await;
    assert_ne!(moved, digest);
    assert_refused(
        &verify(&tag, &keys, &["release"]),
        &format!("{repository}@{moved} is unsigned"),
    );
    assert_verified(
        &verify(&format!("{repository}@{digest}"), &keys, &["release"]),
        "release",
    );
}

#[tokio::test]
async fn unsigned_images_and_tampered_payloads_are_refused() {
    let keys = Keys::generate(&["k"]);
    let repository = windlass_testkit::registry().unique_repository("e2e/tampered");
    let signed = push_image(&format!("{repository}:signed"), "signed").await;
    let other = push_image(&format!("{repository}:other"), "other").await;
    assert_refused(
        &verify(&format!("{repository}:other"), &keys, &["k"]),
        "is unsigned",
    );
    cosign_sign(&keys, "k", &format!("{repository}@{signed}"), false);

    // Copy the signature to the other image with the payload rewritten to name it: the
    // signature no longer matches its payload.
    let client = RegistryClient::new(&options());
    let sig_tag = |digest: &str| format!("{}.sig", digest.replacen(':', "-", 1));
    let raw = client
        .manifest(&format!("{repository}:{}", sig_tag(&signed)), 1 << 20)
        .await
        .unwrap()
        .unwrap();
    let mut manifest: serde_json::Value = serde_json::from_slice(&raw.bytes).unwrap();
    let layer = manifest["layers"][0].clone();
    let payload = client
        .blob(&repository, layer["digest"].as_str().unwrap(), 1 << 20)
        .await
        .unwrap();
    let forged = String::from_utf8(payload).unwrap().replace(&signed, &other);
    let forged_digest = client
        .push_blob(&repository, forged.as_bytes())
        .await
        .unwrap();
    manifest["layers"][0]["digest"] = forged_digest.into();
    manifest["layers"][0]["size"] = forged.len().into();
    client
        .push_manifest(
            &repository,
            Some(&sig_tag(&other)),
            &serde_json::to_vec(&manifest).unwrap(),
            "application/vnd.oci.image.manifest.v1+json",
        )
        .await
        .unwrap();
    assert_refused(
        &verify(&format!("{repository}:other"), &keys, &["k"]),
        "the signature does not verify with k (the payload was altered, or another key signed it)",
    );
    // cosign refuses it too.
    let output = cosign()
        .args([
            "verify",
            "--key",
            &keys.path("k.pub"),
            "--insecure-ignore-tlog",
            "--allow-http-registry",
            &format!("{repository}@{other}"),
        ])
        .output()
        .unwrap();
    assert!(!output.status.success(), "{}", text(&output));
}

#[tokio::test]
async fn windlass_signatures_verify_in_cosign() {
    let keys = Keys::generate(&["site"]);
    let repository = windlass_testkit::registry().unique_repository("e2e/windlass-signed");
    let tag = format!("{repository}:v1");
    let digest = push_image(&tag, "signed by windlass").await;
    for format in ["legacy", "bundle"] {
        let output = windlass()
            .args(["sign", &tag, "--plain-http", "--format", format])
            .args(["--key", &keys.path("site.key")])
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", text(&output));
    }
    assert_verified(&verify(&tag, &keys, &["site"]), "site");
    for bundle in ["false", "true"] {
        run_ok(cosign().args([
            "verify",
            "--key",
            &keys.path("site.pub"),
            "--insecure-ignore-tlog",
            "--allow-http-registry",
            &format!("--new-bundle-format={bundle}"),
            &format!("{repository}@{digest}"),
        ]));
    }
}
