//! The manager image that `make image` assembles (with `windlass-image`, windlass's own OCI code)
//! is pushed to the real local registry, and read back from the outside (skopeo, oci-client, GNU
//! tar) it is the image `crates/windlass/Containerfile` describes.
//!
//! The test packages the manager binary that is already built (`WINDLASS_MANAGER_BIN`, as
//! `make e2e` sets it, else the debug build next to this test's binaries), not the static release
//! build `make image` makes: that keeps `make test` from needing a second, release build of the
//! whole workspace. It packages a stripped copy, as `make image` and the Containerfile strip
//! theirs (the debug build is mostly debug info, hundreds of MB). The debug build is dynamically
//! linked, so the test also checks that the assembler refuses it unless told `--allow-dynamic`.
//! Whether the image runs is not tested: there is no container engine here (decision 3).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use oci_client::{
    Client, Reference,
    client::{ClientConfig, ClientProtocol},
    secrets::RegistryAuth,
};
use sha2::{Digest, Sha256};
use windlass_testkit::{run_ok, unique_name};

const CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

fn assembler() -> Command {
    Command::new(env!("CARGO_BIN_EXE_windlass-image"))
}

fn manager_bin() -> PathBuf {
    let path = std::env::var_os("WINDLASS_MANAGER_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_BIN_EXE_windlass-image")).with_file_name("windlass")
        });
    assert!(
        path.is_file(),
        "{} is not built: run `cargo build -p windlass` (or set WINDLASS_MANAGER_BIN)",
        path.display()
    );
    path
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

fn output(command: &mut Command) -> Output {
    command
        .output()
        .unwrap_or_else(|e| panic!("running {command:?}: {e}"))
}

fn skopeo_json(args: &[&str], reference: &str) -> serde_json::Value {
    let text = run_ok(
        Command::new("skopeo")
            .arg("inspect")
            .args(args)
            .args(["--tls-verify=false", &format!("docker://{reference}")]),
    );
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("skopeo printed {text:?}: {e}"))
}

/// `tar -tv` rows of a gzip layer: (mode string, owner, size, path).
fn tar_listing(layer_file: &Path) -> Vec<(String, String, u64, String)> {
    let text = run_ok(Command::new("tar").args([
        "--numeric-owner",
        "-tvzf",
        &layer_file.to_string_lossy(),
    ]));
    text.lines()
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            assert!(words.len() >= 6, "unexpected tar line {line:?}");
            (
                words[0].to_string(),
                words[1].to_string(),
                words[2].parse().unwrap(),
                words[5..].join(" "),
            )
        })
        .collect()
}

/// Given the built manager binary, when windlass-image assembles and pushes its image, then the
/// registry serves an OCI image whose manifest, config and single layer are the Containerfile's:
/// entrypoint `/windlass`, command `manager`, user 65532:65532, the four OCI labels, linux/amd64,
/// `/windlass` executable and identical to the binary, and this machine's CA bundle.
#[tokio::test]
async fn the_assembled_manager_image_is_what_the_containerfile_describes() {
    windlass_testkit::install_crypto_provider();
    let dir = std::env::temp_dir().join(unique_name("manager-image"));
    std::fs::create_dir_all(dir.join("root")).unwrap();
    let binary = dir.join("windlass");
    run_ok(
        Command::new("strip")
            .arg("-o")
            .arg(&binary)
            .arg(manager_bin()),
    );
    let binary_bytes = std::fs::read(&binary).unwrap();
    let registry = windlass_testkit::registry();
    let reference = format!("{}:0.0.0-test", registry.unique_repository("e2e/windlass"));

    // A dynamically linked binary is refused as it is: the image has no C library. (ldd, from
    // the C library's own tools, names the libraries a dynamic executable needs.)
    let dynamic = output(Command::new("ldd").arg(&binary));
    let dynamic =
        dynamic.status.success() && String::from_utf8_lossy(&dynamic.stdout).contains("libc.so");
    if dynamic {
        let refused = output(
            assembler()
                .args(["--plain-http", "--reference", &reference])
                .arg("--binary")
                .arg(&binary),
        );
        assert!(!refused.status.success(), "a dynamic binary was packaged");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(stderr.contains("dynamically linked"), "{stderr}");
        let inspect = output(Command::new("skopeo").args([
            "inspect",
            "--raw",
            "--tls-verify=false",
            &format!("docker://{reference}"),
        ]));
        assert!(
            !inspect.status.success(),
            "the refused image was pushed anyway"
        );
    }

    let started = std::time::Instant::now();
    let printed = run_ok(
        assembler()
            .args([
                "--plain-http",
                "--json",
                "--allow-dynamic",
                "--reference",
                &reference,
            ])
            .arg("--binary")
            .arg(&binary),
    );
    let pushed: serde_json::Value = serde_json::from_str(&printed).unwrap();
    println!(
        "assembled and pushed in {:.1} s: binary {} bytes ({}), layer {} bytes, image {} bytes",
        started.elapsed().as_secs_f64(),
        pushed["binarySize"],
        if dynamic {
            "dynamically linked"
        } else {
            "static"
        },
        pushed["layerSize"],
        pushed["totalSize"],
    );
    assert_eq!(pushed["binarySize"], binary_bytes.len());

    // The manifest, as the registry serves it.
    let manifest = skopeo_json(&["--raw"], &reference);
    assert_eq!(manifest["schemaVersion"], 2);
    assert_eq!(
        manifest["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.oci.image.config.v1+json"
    );
    assert_eq!(manifest["config"]["digest"], pushed["configDigest"]);
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1, "{manifest}");
    assert_eq!(
        layers[0]["mediaType"],
        "application/vnd.oci.image.layer.v1.tar+gzip"
    );
    assert_eq!(layers[0]["digest"], pushed["layerDigest"]);
    assert_eq!(layers[0]["size"], pushed["layerSize"]);
    let summary = skopeo_json(&[], &reference);
    assert_eq!(summary["Digest"], pushed["digest"]);

    // The config: how a runtime would start it.
    let config = skopeo_json(&["--config"], &reference);
    assert_eq!(config["os"], "linux");
    assert_eq!(config["architecture"], "amd64");
    assert_eq!(
        config["config"]["Entrypoint"],
        serde_json::json!(["/windlass"])
    );
    assert_eq!(config["config"]["Cmd"], serde_json::json!(["manager"]));
    assert_eq!(config["config"]["User"], "65532:65532");
    assert_eq!(
        config["config"]["Labels"],
        serde_json::json!({
            "org.opencontainers.image.title": "windlass",
            "org.opencontainers.image.description": "Operator lifecycle manager for Kubernetes",
            "org.opencontainers.image.source": "https://github.com/windlass-dev/windlass",
            "org.opencontainers.image.licenses": "Apache-2.0",
        })
    );
    assert!(
        config["config"]["Env"]
            .as_array()
            .unwrap()
            .contains(&format!("SSL_CERT_FILE={CA_BUNDLE}").into()),
        "{config}"
    );
    assert_eq!(config["rootfs"]["type"], "layers");
    assert_eq!(
        config["rootfs"]["diff_ids"],
        serde_json::json!([pushed["layerDiffId"]])
    );

    // The layer, pulled with oci-client: its bytes hash to the digest the manifest names, and
    // the uncompressed tar to the config's diff ID.
    let client = Client::new(ClientConfig {
        protocol: ClientProtocol::Http,
        ..Default::default()
    });
    let parsed: Reference = reference.parse().unwrap();
    let (image_manifest, _) = client
        .pull_image_manifest(&parsed, &RegistryAuth::Anonymous)
        .await
        .unwrap();
    let mut blob = Vec::new();
    client
        .pull_blob(&parsed, &image_manifest.layers[0], &mut blob)
        .await
        .unwrap();
    assert_eq!(sha256(&blob), image_manifest.layers[0].digest);
    assert_eq!(blob.len() as i64, image_manifest.layers[0].size);

    let layer_file = dir.join("layer.tar.gz");
    std::fs::write(&layer_file, &blob).unwrap();
    let tar = output(Command::new("gzip").arg("-dc").arg(&layer_file));
    assert!(tar.status.success());
    assert_eq!(
        sha256(&tar.stdout),
        config["rootfs"]["diff_ids"][0].as_str().unwrap()
    );

    let listing = tar_listing(&layer_file);
    println!("layer:");
    for (mode, owner, size, path) in &listing {
        println!("  {mode} {owner} {size:>10} {path}");
    }
    let find = |path: &str| {
        listing
            .iter()
            .find(|row| row.3 == path)
            .unwrap_or_else(|| panic!("{path} is not in the layer: {listing:?}"))
    };
    let ca_bytes = std::fs::read(CA_BUNDLE).unwrap();
    let windlass = find("windlass");
    assert_eq!(
        (windlass.0.as_str(), windlass.1.as_str()),
        ("-rwxr-xr-x", "0/0")
    );
    assert_eq!(windlass.2, binary_bytes.len() as u64);
    let ca = find("etc/ssl/certs/ca-certificates.crt");
    assert_eq!((ca.0.as_str(), ca.2), ("-rw-r--r--", ca_bytes.len() as u64));
    assert_eq!(find("tmp/").0, "drwxrwxrwt");
    assert!(
        listing.iter().all(|row| row.1 == "0/0"),
        "every entry is owned by root: {listing:?}"
    );
    let files: Vec<&str> = listing
        .iter()
        .filter(|row| !row.0.starts_with('d'))
        .map(|row| row.3.as_str())
        .collect();
    assert_eq!(files, ["etc/ssl/certs/ca-certificates.crt", "windlass"]);

    // Unpacked, the files are the binary and the CA bundle, byte for byte.
    run_ok(
        Command::new("tar")
            .arg("-xzf")
            .arg(&layer_file)
            .arg("-C")
            .arg(dir.join("root")),
    );
    assert!(std::fs::read(dir.join("root/windlass")).unwrap() == binary_bytes);
    assert!(std::fs::read(dir.join("root/etc/ssl/certs/ca-certificates.crt")).unwrap() == ca_bytes);
    let _ = std::fs::remove_dir_all(&dir);
}
