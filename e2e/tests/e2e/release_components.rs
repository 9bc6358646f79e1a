//! `windlass release new --component DIR`: a payload made from operators' own `manifests/`
//! folders (`e2e/releases/operators`), whose manifests name images by tag, as
//! `oc adm release new` makes one: `--image NAME=REPOSITORY@sha256:...` pins a tag name, a tag
//! given no pin is resolved to its digest in its registry, and every pull spec the folder names
//! is replaced, so the payload comes out pinned by digest; it is then applied through the
//! ClusterVersion. A tag that can be neither pinned nor resolved is refused naming the file and
//! the tag, and nothing is pushed.

use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use serde_json::json;
use windlass_api::ClusterVersion;
use windlass_testkit::{registry_requests, require_manager, run_ok};

use crate::cluster_version_rollbacks::renumbered;
use crate::cluster_versions::{
    ONE_AT_A_TIME, TrustSetup, push_releases, reach, release_account, set_spec, start_afresh,
    upgrade,
};
use crate::release_payloads::{releases, windlass};
use crate::signatures::Keys;

const PAUSE: &str =
    "registry.k8s.io/pause@sha256:7031c1b283388d2c2e09b57badb803c05ebed362dc88d84b480cc47f72a21097";
const COREDNS: &str =
    "registry.k8s.io/pause@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a";

/// The cache operator's folder naming `image`: its tag lives in the local registry.
fn cache_operator(image: &str) -> std::path::PathBuf {
    let target = std::env::temp_dir().join(windlass_testkit::unique_name("cache-operator"));
    std::fs::create_dir_all(&target).unwrap();
    let source = releases().join("operators/cache-operator");
    for entry in std::fs::read_dir(source).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(
            target.join(path.file_name().unwrap()),
            text.replace("REGISTRY/operators/cache-operator:v1", image),
        )
        .unwrap();
    }
    target
}

/// Given the dns operator's folder (tags pinned with --image) and the cache operator's (its tag
/// pushed to the local registry) added to the 4.1.0 sample, then `release new` pushes a payload
/// whose every image is pinned by digest (the manifests rewritten, `image-references` listing
/// them), and applying it runs the operators on exactly those images; a folder whose tag can be
/// neither pinned nor resolved is refused, naming its file and tag, and pushes nothing.
#[tokio::test]
async fn operators_manifest_folders_become_a_pinned_payload_and_apply() {
    require_manager();
    let _turn = ONE_AT_A_TIME.lock().await;
    let admin = windlass_testkit::client().await;
    release_account(&admin).await;
    let namespace = windlass_testkit::manager::namespace().unwrap();
    let keys = Keys::generate(&["release"]);
    let _trust = TrustSetup::create(&admin, &namespace, &keys, "Report").await;
    let local = windlass_testkit::registry();
    let repository = local.unique_repository("components");
    // The cache operator's image, by tag, in the local registry (any image will do: kwok runs
    // no containers).
    let cache_repository = format!(
        "{}/operators/{}",
        local.addr,
        windlass_testkit::unique_name("cache-operator")
    );
    let (_tags, operator_images) = push_releases(&cache_repository, &[("4.1.1", "4.1.1")]);
    let cache_digest = operator_images["4.1.1"].clone();
    let cache = cache_operator(&format!("{cache_repository}:4.1.1"));
    let dns = releases().join("operators/dns-operator");

    let reference = format!("{repository}:4.1.5");
    let mut new = windlass();
    new.args(["release", "new", "--from-dir"])
        .arg(renumbered("4.1.0", "4.1.0", "4.1.5"))
        .arg("--component")
        .arg(&dns)
        .arg("--component")
        .arg(&cache)
        .args([
            "--image",
            &format!("cluster-dns-operator={PAUSE}"),
            "--image",
            &format!("coredns={COREDNS}"),
        ])
        .args(["--version", "4.1.5", "--to", &reference, "--plain-http"]);
    let pushed = run_ok(&mut new);
    assert!(pushed.starts_with("pushed release 4.1.5"), "{pushed}");
    let info: serde_json::Value = serde_json::from_str(&run_ok(windlass().args([
        "release",
        "info",
        &reference,
        "--plain-http",
        "-o",
        "json",
    ])))
    .unwrap();
    let images: Vec<(String, String)> = info["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["name"].as_str().unwrap().to_string(),
                i["image"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for (name, image) in [
        ("cluster-dns-operator", PAUSE),
        ("coredns", COREDNS),
        ("cache-operator", cache_digest.as_str()),
    ] {
        assert!(
            images.contains(&(name.to_string(), image.to_string())),
            "{name} not pinned to {image}: {images:?}"
        );
    }

    let versions = Api::<ClusterVersion>::all(admin.clone());
    start_afresh(&versions).await;
    set_spec(&versions, json!({})).await;
    upgrade(&reference, false);
    reach(&versions, "4.1.5").await;
    let deployment = |ns: &str| Api::<Deployment>::namespaced(admin.clone(), ns);
    let dns_operator = deployment("platform-dns-operator")
        .get("dns-operator")
        .await
        .unwrap();
    let container = &dns_operator.spec.template.spec.unwrap().containers[0];
    assert_eq!(container.image.as_deref(), Some(PAUSE));
    assert_eq!(
        container.env.as_ref().unwrap()[0].value.as_deref(),
        Some(COREDNS)
    );
    let cache_operator = deployment("platform-cache-operator")
        .get("cache-operator")
        .await
        .unwrap();
    assert_eq!(
        cache_operator.spec.template.spec.unwrap().containers[0]
            .image
            .as_deref(),
        Some(cache_digest.as_str())
    );

    // A tag nobody pins and no registry answers for: refused, naming the file and the tag.
    let refused = format!("{repository}:4.1.6");
    let before = registry_requests(&repository).len();
    let output = windlass()
        .args(["release", "new", "--from-dir"])
        .arg(renumbered("4.1.0", "4.1.0", "4.1.6"))
        .arg("--component")
        .arg(&dns)
        .args(["--image", &format!("cluster-dns-operator={PAUSE}")])
        .args(["--version", "4.1.6", "--to", &refused, "--plain-http"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("dns-operator/image-references") && stderr.contains("tag coredns"),
        "{stderr}"
    );
    let pushes = registry_requests(&repository)[before..]
        .iter()
        .filter(|line| line.contains("\"PUT ") || line.contains("\"POST "))
        .count();
    assert_eq!(pushes, 0, "nothing pushed for a refused payload");
}
