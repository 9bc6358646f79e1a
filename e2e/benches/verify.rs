//! Signature verification time per image against the real cosign, on the local registry
//! (`make bench-e2e`, or `e2e/scripts/with-cluster.sh cargo bench -p windlass-e2e --bench verify`).
//!
//! One image, signed by cosign in both formats (Sigstore bundle and legacy `.sig`). Measured in
//! the same run, median of ROUNDS each:
//! - `cosign verify --key` of the image by digest (a process; what a site without windlass runs);
//! - `windlass verify --key` of the same image (a process, nothing cached: the cold path);
//! - windlass's verifier in process with a fresh cache (cold) and with the verdict cached (warm,
//!   what an unchanged catalog poll costs), counting the registry requests each made.

use std::{
    process::Command,
    time::{Duration, Instant},
};

use windlass_bundle::FileTree;
use windlass_oci::{RegistryClient, RegistryOptions};
use windlass_testkit::run_ok;
use windlass_trust::{
    Artifact, ArtifactClass, Decision, Limits, PublicKey, TrustPolicy, TrustRule, TrustedKey,
    Verifier,
};

const ROUNDS: usize = 9;
const PASSWORD: &str = "bench";

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn timed(mut command: Command) -> Duration {
    let start = Instant::now();
    let output = command.output().expect("running the verifier");
    let elapsed = start.elapsed();
    assert!(
        output.status.success(),
        "{command:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    elapsed
}

fn plain_http() -> RegistryOptions {
    RegistryOptions {
        plain_http: true,
        ..Default::default()
    }
}

#[tokio::main]
async fn main() {
    windlass_testkit::install_crypto_provider();
    let cosign = windlass_testkit::cosign_binary();
    let windlass = windlass_testkit::windlass_binary();
    let keys = tempfile::tempdir().unwrap();
    let cosign_command = || {
        let mut command = Command::new(&cosign);
        command.env("COSIGN_PASSWORD", PASSWORD);
        command
    };
    run_ok(cosign_command().current_dir(keys.path()).args([
        "generate-key-pair",
        "--output-key-prefix",
        "bench",
    ]));
    let key = keys.path().join("bench.key").display().to_string();
    let public = keys.path().join("bench.pub").display().to_string();

    let repository = windlass_testkit::registry().unique_repository("bench/verify");
    let reference = format!("{repository}:v1");
    let tree = FileTree {
        files: [("hello.txt".to_string(), b"verify me".to_vec())].into(),
    };
    let digest = windlass_oci::push_image(&tree, &Default::default(), &reference, &plain_http())
        .await
        .unwrap()
        .digest;
    let pinned = format!("{repository}@{digest}");
    for bundle in [true, false] {
        run_ok(cosign_command().args([
            "sign",
            "--key",
            &key,
            "--tlog-upload=false",
            "--use-signing-config=false",
            &format!("--new-bundle-format={bundle}"),
            "--allow-http-registry",
            "-y",
            &pinned,
        ]));
    }

    let mut cosign_times = Vec::new();
    let mut cli_times = Vec::new();
    for _ in 0..ROUNDS {
        let mut command = cosign_command();
        command.args([
            "verify",
            "--key",
            &public,
            "--insecure-ignore-tlog",
            "--allow-http-registry",
            &pinned,
        ]);
        cosign_times.push(timed(command));
        let mut command = Command::new(&windlass);
        command.args(["verify", &pinned, "--key", &public, "--plain-http"]);
        cli_times.push(timed(command));
    }

    let pem = std::fs::read(&public).unwrap();
    let trusted = PublicKey::from_pem(&pem, "bench.pub").unwrap();
    let keyring = std::collections::BTreeMap::from([("bench".to_string(), trusted)]);
    let policy = TrustPolicy {
        keys: vec![TrustedKey {
            name: "bench".into(),
            ..Default::default()
        }],
        rules: vec![TrustRule {
            name: "bench".into(),
            keys: vec!["bench".into()],
            ..Default::default()
        }],
        require_signatures: Vec::new(),
    };
    let artifact = Artifact {
        reference: pinned.clone(),
        digest: digest.clone(),
        class: ArtifactClass::Catalog,
    };
    let requests = || windlass_testkit::registry_requests(&repository).len();
    let mut cold_times = Vec::new();
    let mut cold_requests = 0;
    for _ in 0..ROUNDS {
        let verifier = Verifier::new(RegistryClient::new(&plain_http()), Limits::default());
        let before = requests();
        let start = Instant::now();
        let verdict = verifier.verify(&artifact, &policy, &keyring).await.unwrap();
        cold_times.push(start.elapsed());
        assert_eq!(
            verdict.decision,
            Decision::Verified,
            "{:?}",
            verdict.reasons
        );
        cold_requests = requests() - before;
    }
    let verifier = Verifier::new(RegistryClient::new(&plain_http()), Limits::default());
    verifier.verify(&artifact, &policy, &keyring).await.unwrap();
    let before = requests();
    let mut warm_times = Vec::new();
    for _ in 0..ROUNDS {
        let start = Instant::now();
        let verdict = verifier.verify(&artifact, &policy, &keyring).await.unwrap();
        warm_times.push(start.elapsed());
        assert!(verdict.cached && verdict.verified);
    }
    let warm_requests = requests() - before;

    let cosign = median(cosign_times);
    let cli = median(cli_times);
    let cold = median(cold_times);
    let warm = median(warm_times);
    println!("signature verification of one image (both formats stored), median of {ROUNDS}:");
    println!("  cosign verify (process)          {cosign:>10.1?}");
    println!(
        "  windlass verify (process)        {cli:>10.1?}   {:.2}x cosign",
        cli.as_secs_f64() / cosign.as_secs_f64()
    );
    println!(
        "  verifier, cold cache (in process) {cold:>9.1?}   {:.3}x cosign, {cold_requests} registry requests",
        cold.as_secs_f64() / cosign.as_secs_f64()
    );
    println!(
        "  verifier, warm cache (in process) {warm:>9.1?}   {:.5}x cosign, {warm_requests} registry requests in {ROUNDS} checks",
        warm.as_secs_f64() / cosign.as_secs_f64()
    );
}
