//! Real OperatorHub bundles, unmodified, installed through the ClusterServiceVersion controller
//! with the manager that `make e2e` runs.

use std::{path::PathBuf, time::Duration};

use k8s_openapi::api::apps::v1::Deployment;
use kube::{Api, ResourceExt, api::PostParams};
use serde_json::json;
use windlass_api::{ClusterServiceVersion, ClusterServiceVersionSpec, CsvPhase};
use windlass_testkit::{TestNamespace, manager_log_tail, require_manager, wait_for};

fn corpus_bundle(package_version: &str) -> Option<PathBuf> {
    let dir = windlass_corpus::operatorhub_or_skip()?.join(package_version);
    assert!(dir.exists(), "{} is not in the corpus", dir.display());
    Some(dir)
}

async fn install_unmodified(dir: Option<PathBuf>) {
    let Some(dir) = dir else { return };
    require_manager();
    let bundle = windlass_bundle::load_bundle(&dir)
        .unwrap_or_else(|e| panic!("loading {}: {e}", dir.display()));
    let client = windlass_testkit::client().await;
    let ns = TestNamespace::create(&client, "corpus").await;

    for manifest in bundle
        .manifests
        .iter()
        .filter(|m| m.object["kind"] == "CustomResourceDefinition")
    {
        assert_eq!(
            manifest.object["apiVersion"], "apiextensions.k8s.io/v1",
            "{}: this test installs v1 CRDs as shipped",
            manifest.file
        );
        windlass_testkit::apply_crd(&client, &manifest.object).await;
    }

    let all_namespaces = bundle
        .csv
        .spec
        .install_modes
        .iter()
        .any(|m| m.type_ == "AllNamespaces" && m.supported);
    let targets = if all_namespaces {
        vec![]
    } else {
        vec![ns.name.clone()]
    };
    let definition = json!({
        "metadata": {"annotations": bundle.csv.metadata.annotations, "labels": bundle.csv.metadata.labels},
        "spec": serde_json::to_value(&bundle.csv.spec).unwrap(),
    });
    let mut csv = ClusterServiceVersion::new(
        bundle.csv.name(),
        ClusterServiceVersionSpec {
            definition: definition.into(),
            target_namespaces: targets,
            progress_deadline_seconds: Some(60),
            ..Default::default()
        },
    );
    // Standing in for a Blueprint, the test seals what it applies.
    csv.metadata.namespace = Some(ns.name.clone());
    windlass_testkit::manager::seal_csv_for_manager(&client, &mut csv).await;
    let api = Api::<ClusterServiceVersion>::namespaced(client.clone(), &ns.name);
    api.create(&PostParams::default(), &csv).await.unwrap();
    let timeout = Duration::from_secs(120);
    let outcome = tokio::time::timeout(
        timeout + Duration::from_secs(5),
        wait_for(
            &format!("{} to Succeed", dir.display()),
            timeout,
            || async {
                let csv = api.get(&csv.name_any()).await.map_err(|e| e.to_string())?;
                match csv.status.as_ref().and_then(|s| s.phase) {
                    Some(CsvPhase::Succeeded) => Ok(()),
                    _ => Err(format!("{:?}", csv.status)),
                }
            },
        ),
    )
    .await;
    if outcome.is_err() {
        panic!("timed out; manager log:\n{}", manager_log_tail(40));
    }
    let deployments = Api::<Deployment>::namespaced(client.clone(), &ns.name);
    for spec in bundle.csv.deployments() {
        let deployment = deployments.get(&spec.name).await.unwrap();
        assert_eq!(
            deployment
                .status
                .and_then(|s| s.available_replicas)
                .unwrap_or(0),
            spec.spec["replicas"].as_i64().unwrap_or(1) as i32
        );
    }
    api.delete(&csv.name_any(), &Default::default())
        .await
        .unwrap();
}

#[tokio::test]
async fn prometheus_0_47_0_installs_unmodified() {
    install_unmodified(corpus_bundle("prometheus/0.47.0")).await;
}

#[tokio::test]
async fn camel_k_1_5_0_installs_unmodified() {
    install_unmodified(corpus_bundle("camel-k/1.5.0")).await;
}

#[tokio::test]
async fn keycloak_operator_14_0_0_installs_unmodified() {
    install_unmodified(corpus_bundle("keycloak-operator/14.0.0")).await;
}
