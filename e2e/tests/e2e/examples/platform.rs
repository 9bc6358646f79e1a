//! The cluster-admin examples: a TrustPolicy and the ClusterVersion. Both name a registry and
//! an update service that do not exist here; the checks point them at the local registry and
//! at `windlass release graph serve`, supply key material made by cosign, and apply every
//! other field as written.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, Client,
    api::{Patch, PostParams},
};
use serde_json::{Value, json};
use windlass_api::{
    Catalog, ClusterVersion,
    catalog::CatalogPhase,
    clusterversion::CLUSTER_VERSION_NAME,
    names::{conditions, reasons},
};
use windlass_testkit::{
    TEST_NAMESPACE_LABEL,
    catalogs::publish,
    kubectl,
    lifecycle::{condition, wait_object},
    unique_name,
};

use super::{CatalogCleanup, SAMPLE_BUNDLES, TIMEOUT, apply_params, push_catalog_image};
use crate::cluster_versions::{ONE_AT_A_TIME, TrustSetup, reach, release_account, start_afresh};
use crate::release_payloads::serve_graph;
use crate::signatures::{Keys, cosign_sign};

/// The registry the examples name; the checks replace it with a repository prefix of their own
/// in the local registry.
const EXAMPLE_REGISTRY: &str = "registry.example.com";

/// Removes what a TrustPolicy check made outside any namespace, also when it fails.
struct TrustCleanup {
    policy: String,
    namespace: String,
    config_maps: Vec<String>,
}

impl Drop for TrustCleanup {
    fn drop(&mut self) {
        let _ = kubectl()
            .args(["delete", "trustpolicy.windlass.dev", &self.policy])
            .args(["--ignore-not-found", "--wait=false"])
            .output();
        for name in &self.config_maps {
            let _ = kubectl()
                .args(["delete", "configmap", name, "-n", &self.namespace])
                .arg("--ignore-not-found")
                .output();
        }
    }
}

/// Given the TrustPolicy example applied as written (its registry replaced by the local one,
/// its key ConfigMaps filled with keys cosign made), a catalog image in a repository its
/// Catalog rule covers is refused while unsigned (when the rule refuses unsigned images) and is
/// served, verified by exactly the keys the rule needs, once they signed it.
pub(super) async fn check_trust_policy(client: &Client, document: Value) {
    let manager_namespace =
        windlass_testkit::manager::namespace().expect("the manager's --namespace");
    let name = document["metadata"]["name"]
        .as_str()
        .expect("a TrustPolicy has a name")
        .to_string();
    let mut object = document.clone();
    let prefix = windlass_testkit::registry().unique_repository("examples-trust");
    for rule in object["spec"]["rules"].as_array_mut().into_iter().flatten() {
        for image in rule["images"].as_array_mut().into_iter().flatten() {
            let glob = image.as_str().expect("an image glob").to_string();
            *image = json!(glob.replace(EXAMPLE_REGISTRY, &prefix));
        }
    }

    // One cosign key pair per key the policy names, each public key where the policy says.
    let key_entries = document["spec"]["keys"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let key_names: Vec<String> = key_entries
        .iter()
        .map(|k| k["name"].as_str().expect("a key name").to_string())
        .collect();
    let keys = Keys::generate(&key_names.iter().map(String::as_str).collect::<Vec<_>>());
    let mut config_maps: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for entry in &key_entries {
        let source = &entry["configMap"];
        let map = source["name"].as_str().unwrap_or_else(|| {
            panic!(
                "key {}: the example keeps keys in ConfigMaps",
                entry["name"]
            )
        });
        let data_key = source["key"].as_str().unwrap_or("cosign.pub");
        let key = entry["name"].as_str().unwrap();
        let pem = std::fs::read_to_string(keys.path(&format!("{key}.pub"))).unwrap();
        config_maps
            .entry(map.to_string())
            .or_default()
            .insert(data_key.to_string(), pem);
    }
    let _cleanup = TrustCleanup {
        policy: name.clone(),
        namespace: manager_namespace.clone(),
        config_maps: config_maps.keys().cloned().collect(),
    };
    let maps = Api::<ConfigMap>::namespaced(client.clone(), &manager_namespace);
    for (map, data) in &config_maps {
        let config_map: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": map}, "data": data})).unwrap();
        maps.create(&PostParams::default(), &config_map)
            .await
            .unwrap_or_else(|e| panic!("creating key ConfigMap {map}: {e}"));
    }
    Api::<windlass_api::TrustPolicy>::all(client.clone())
        .patch(&name, &apply_params(), &Patch::Apply(&object))
        .await
        .unwrap_or_else(|e| panic!("the API server refused TrustPolicy {name}: {e}"));

    let rule = object["spec"]["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| {
            r["classes"]
                .as_array()
                .is_some_and(|c| c.contains(&json!("Catalog")))
        })
        .expect("the TrustPolicy example has a rule for catalogs: that is what the test checks")
        .clone();
    let glob = rule["images"][0]
        .as_str()
        .expect("the catalog rule names its repositories");
    let repository = glob.replace("**", "catalog").replace('*', "catalog");
    let rule_keys: Vec<&str> = rule["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    let signers: Vec<&str> = match rule["require"].as_str().unwrap_or("All") {
        "All" => rule_keys.clone(),
        "Any" => rule_keys[..1].to_vec(),
        "AtLeast" => rule_keys[..rule["atLeast"].as_u64().unwrap() as usize].to_vec(),
        other => panic!("rule {}: unknown require {other}", rule["name"]),
    };

    let package = unique_name("example-trust-policy");
    let (folder, csv) = SAMPLE_BUNDLES[0];
    let bundle = publish(&package, folder, |_| {}).await;
    let reference = push_catalog_image(
        &package,
        &[(csv.to_string(), bundle)],
        &format!("{repository}:latest"),
    )
    .await;
    let digest =
        windlass_oci::resolve_digest(&reference, &windlass_testkit::catalogs::plain_http())
            .await
            .unwrap();

    let catalogs = Api::<Catalog>::all(client.clone());
    let catalog_name = unique_name("example-trust-policy");
    let _catalog_cleanup = CatalogCleanup {
        catalogs: vec![catalog_name.clone()],
        secrets: Vec::new(),
    };
    let catalog: Catalog = serde_json::from_value(json!({
        "apiVersion": "windlass.dev/v1alpha1", "kind": "Catalog",
        "metadata": {"name": catalog_name, "labels": {TEST_NAMESPACE_LABEL: "true"}},
        "spec": {
            "source": {"type": "Image", "image": reference, "plainHTTP": true},
            "priority": -300,
            "pollIntervalSeconds": 3,
        },
    }))
    .unwrap();
    catalogs
        .create(&PostParams::default(), &catalog)
        .await
        .unwrap();
    let phase = |c: &Catalog| c.status.as_ref().and_then(|s| s.phase);
    if rule["unsigned"].as_str().unwrap_or("Refuse") == "Refuse" {
        let refused = wait_object(
            &catalogs,
            &catalog_name,
            "refused while unsigned",
            TIMEOUT,
            |c| phase(c) == Some(CatalogPhase::Refused),
        )
        .await;
        let serving = refused
            .status
            .as_ref()
            .and_then(|s| condition(&s.conditions, conditions::catalog::SERVING))
            .expect("a Serving condition");
        assert_eq!(serving.reason, reasons::catalog::VERIFICATION_FAILED);
        assert!(
            serving.message.contains(&digest) && serving.message.contains("unsigned"),
            "{}",
            serving.message
        );
    }
    for signer in &signers {
        cosign_sign(&keys, signer, &format!("{repository}@{digest}"), true);
    }
    let served = wait_object(
        &catalogs,
        &catalog_name,
        "served once signed",
        TIMEOUT,
        |c| phase(c) == Some(CatalogPhase::Serving),
    )
    .await;
    let status = served.status.unwrap();
    assert_eq!(status.verified, Some(true));
    let mut expected: Vec<String> = signers.iter().map(|k| format!("{name}/{k}")).collect();
    expected.sort();
    let mut verified_by = status.verified_by.clone();
    verified_by.sort();
    assert_eq!(verified_by, expected, "the keys that counted");
}

/// Given a cluster at the sample release 4.1.0 and an update service serving the sample
/// releases, when the ClusterVersion example is applied as written (its update service replaced
/// by the local one), then the cluster moves to the version it names, through the channel it
/// names, with its settings in the spec.
pub(super) async fn check_cluster_version(client: &Client, document: Value) {
    let example: ClusterVersion = serde_json::from_value(document.clone())
        .unwrap_or_else(|e| panic!("not a ClusterVersion windlass reads: {e}"));
    assert_eq!(
        example.metadata.name.as_deref(),
        Some(CLUSTER_VERSION_NAME),
        "the ClusterVersion is always named {CLUSTER_VERSION_NAME}"
    );
    let desired = example
        .spec
        .desired_update
        .as_ref()
        .and_then(|d| d.version.clone())
        .expect("the example moves to a version");
    // The cluster starts at the base sample release; the example moves it to a later one.
    const START: &str = "4.1.0";
    let desired = ["4.1.1", "4.2.0"]
        .into_iter()
        .find(|v| *v == desired)
        .unwrap_or_else(|| {
            panic!("the example moves to {desired}, which is no sample release after {START}")
        });

    let _turn = ONE_AT_A_TIME.lock().await;
    release_account(client).await;
    let manager_namespace =
        windlass_testkit::manager::namespace().expect("the manager's --namespace");
    let repository = windlass_testkit::registry().unique_repository("examples-release");
    let (tags, digests) =
        crate::cluster_versions::push_releases(&repository, &[(START, START), (desired, desired)]);
    // The sample payloads are unsigned: reported, not refused, so nothing needs force.
    let keys = Keys::generate(&["release"]);
    let trust = TrustSetup::create(client, &manager_namespace, &keys, "Report").await;
    let (_server, base, _) = serve_graph(&repository);

    let versions = Api::<ClusterVersion>::all(client.clone());
    start_afresh(&versions).await;
    let mut object = document;
    object["spec"]["upstream"] = json!(format!("{base}/graph"));
    object["spec"]["plainHTTP"] = json!(true);
    // The same file as the admin kept it before: the cluster pinned to the base payload. Applied
    // again as the example (same field manager), the image gives way to the version.
    let mut before = object.clone();
    before["spec"]["desiredUpdate"] = json!({"image": tags[START]});
    for (what, applied) in [
        ("pinned to the base release", &before),
        ("as written", &object),
    ] {
        versions
            .patch(
                CLUSTER_VERSION_NAME,
                &apply_params(),
                &Patch::Apply(applied),
            )
            .await
            .unwrap_or_else(|e| panic!("the API server refused the ClusterVersion {what}: {e}"));
        if applied == &before {
            reach(&versions, START).await;
        }
    }
    let done = reach(&versions, desired).await;
    let status = done.status.as_ref().unwrap();
    assert_eq!(
        status.desired.as_ref().map(|d| d.image.as_str()),
        Some(digests[desired].as_str()),
        "the version was resolved through the update graph to its payload"
    );
    assert!(
        status.conditions.iter().any(
            |c| c.type_ == conditions::cluster_version::RETRIEVED_UPDATES
                && c.status == windlass_api::ConditionStatus::True
        ),
        "the update service named by the example was asked: {:?}",
        status.conditions
    );
    assert_eq!(done.spec.channel, example.spec.channel);
    assert_eq!(done.spec.rollback, example.spec.rollback);
    assert_eq!(
        done.spec.level_deadline_seconds,
        example.spec.level_deadline_seconds
    );

    let _ = versions
        .delete(CLUSTER_VERSION_NAME, &Default::default())
        .await;
    trust.delete().await;
}
