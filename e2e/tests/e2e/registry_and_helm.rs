//! The registry and helm of the local control plane are real: an artifact pushed with
//! oci-client comes back identical and skopeo sees the same digest; a chart installs and
//! uninstalls.

use std::time::Duration;

use k8s_openapi::api::{apps::v1::Deployment, core::v1::ConfigMap};
use kube::Api;
use oci_client::{
    Client, Reference,
    client::{ClientConfig, ClientProtocol, Config, ImageLayer},
    manifest::IMAGE_LAYER_GZIP_MEDIA_TYPE,
    secrets::RegistryAuth,
};
use sha2::{Digest, Sha256};
use windlass_testkit::{TestNamespace, helm, run_ok, unique_name, wait_for};

#[tokio::test]
async fn artifact_pushed_with_oci_client_pulls_back_identical_and_skopeo_agrees_on_the_digest() {
    windlass_testkit::install_crypto_provider();
    let registry = windlass_testkit::registry();
    let reference: Reference = format!("{}:v1", registry.unique_repository("e2e/artifact"))
        .parse()
        .unwrap();
    let client = Client::new(ClientConfig {
        protocol: ClientProtocol::Http,
        ..Default::default()
    });
    let auth = RegistryAuth::Anonymous;

    // Not compressible on purpose: arbitrary bytes, so any corruption shows in the digest.
    let payload: Vec<u8> = (0..200_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let layer = ImageLayer::new(
        payload.clone(),
        IMAGE_LAYER_GZIP_MEDIA_TYPE.to_string(),
        None,
    );
    let config = Config::oci_v1(
        br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#
            .to_vec(),
        None,
    );
    client
        .push(&reference, &[layer], config, &auth, None)
        .await
        .unwrap();

    let pulled = client
        .pull(&reference, &auth, vec![IMAGE_LAYER_GZIP_MEDIA_TYPE])
        .await
        .unwrap();
    assert_eq!(pulled.layers.len(), 1);
    assert_eq!(
        Sha256::digest(&pulled.layers[0].data),
        Sha256::digest(&payload)
    );
    let digest = pulled
        .digest
        .expect("the registry returns a manifest digest");

    let output = run_ok(std::process::Command::new("skopeo").args([
        "inspect",
        "--raw",
        "--tls-verify=false",
        &format!("docker://{reference}"),
    ]));
    let skopeo_digest = format!("sha256:{:x}", Sha256::digest(output.as_bytes()));
    assert_eq!(
        skopeo_digest, digest,
        "skopeo's manifest hashes to a different digest"
    );
    let inspected = run_ok(std::process::Command::new("skopeo").args([
        "inspect",
        "--tls-verify=false",
        &format!("docker://{reference}"),
    ]));
    let inspected: serde_json::Value = serde_json::from_str(&inspected).unwrap();
    assert_eq!(inspected["Digest"], serde_json::json!(digest));
}

#[tokio::test]
async fn helm_install_creates_the_chart_objects_and_uninstall_removes_them() {
    let client = windlass_testkit::client().await;
    let ns = TestNamespace::create(&client, "helm").await;
    let release = unique_name("smoke");
    let chart = concat!(env!("CARGO_MANIFEST_DIR"), "/charts/smoke");
    let version = run_ok(helm().args(["version", "--short"]));
    assert!(version.starts_with("v4."), "helm is not helm 4: {version}");

    run_ok(helm().args([
        "install",
        &release,
        chart,
        "--namespace",
        &ns.name,
        "--wait",
        "--timeout",
        "90s",
    ]));
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), &ns.name);
    let deployments = Api::<Deployment>::namespaced(client.clone(), &ns.name);
    let cm = config_maps.get(&format!("{release}-config")).await.unwrap();
    assert_eq!(cm.data.unwrap()["message"], "hello from windlass");
    let deployment = deployments.get(&format!("{release}-pause")).await.unwrap();
    assert_eq!(
        deployment.status.and_then(|s| s.available_replicas),
        Some(1)
    );

    run_ok(helm().args(["uninstall", &release, "--namespace", &ns.name, "--wait"]));
    wait_for(
        "the release's objects to be removed",
        Duration::from_secs(60),
        || async {
            let cm = config_maps
                .get_opt(&format!("{release}-config"))
                .await
                .map_err(|e| e.to_string())?;
            let d = deployments
                .get_opt(&format!("{release}-pause"))
                .await
                .map_err(|e| e.to_string())?;
            if cm.is_none() && d.is_none() {
                Ok(())
            } else {
                Err("objects still present".into())
            }
        },
    )
    .await;
}
