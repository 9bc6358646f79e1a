//! Measures, on the local control plane with the manager running (`make bench-e2e`):
//! - time from creating a ClusterServiceVersion to Succeeded, against `kubectl apply` of the
//!   same objects plus waiting for the Deployment to be Available (same run, ratio);
//! - the manager's writes per minute once everything is installed (from the audit log);
//! - the manager's resident memory when idle.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use k8s_openapi::api::apps::v1::Deployment;
use kube::{Api, ResourceExt, api::PostParams};
use serde_json::json;
use windlass_api::{ClusterServiceVersion, ClusterServiceVersionSpec, CsvPhase};
use windlass_testkit::{TestNamespace, kubectl, require_manager, run_ok};

#[path = "common/kubectl.rs"]
mod kubectl;

const ROUNDS: usize = 5;
const POLL: Duration = Duration::from_millis(100);

#[tokio::main]
async fn main() {
    require_manager();
    let client = windlass_testkit::client().await;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundles/acme-db/1.0.0");
    let bundle = windlass_bundle::load_bundle(&dir).expect("loading acme-db 1.0.0");
    for manifest in bundle
        .manifests
        .iter()
        .filter(|m| m.object["kind"] == "CustomResourceDefinition")
    {
        windlass_testkit::apply_crd(&client, &manifest.object).await;
    }
    let definition = json!({
        "metadata": {"annotations": bundle.csv.metadata.annotations},
        "spec": serde_json::to_value(&bundle.csv.spec).unwrap(),
    });

    let mut windlass_times = Vec::new();
    let mut kubectl_times = Vec::new();
    let mut namespaces = Vec::new();
    for _ in 0..ROUNDS {
        // windlass: create the CSV, wait for Succeeded.
        let ns = TestNamespace::create(&client, "bench-csv").await;
        let api = Api::<ClusterServiceVersion>::namespaced(client.clone(), &ns.name);
        let mut csv = ClusterServiceVersion::new(
            bundle.csv.name(),
            ClusterServiceVersionSpec {
                definition: definition.clone().into(),
                target_namespaces: vec![ns.name.clone()],
                ..Default::default()
            },
        );
        // The manager installs only CSVs it sealed (the Blueprint controller seals the ones it
        // writes); this one is sealed with its key as a Blueprint would.
        csv.metadata.namespace = Some(ns.name.clone());
        windlass_testkit::manager::seal_csv_for_manager(&client, &mut csv).await;
        let start = Instant::now();
        api.create(&PostParams::default(), &csv).await.unwrap();
        loop {
            let phase = api
                .get(&csv.name_any())
                .await
                .unwrap()
                .status
                .and_then(|s| s.phase);
            if phase == Some(CsvPhase::Succeeded) {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "CSV did not succeed: {phase:?}"
            );
            tokio::time::sleep(POLL).await;
        }
        windlass_times.push(start.elapsed());
        namespaces.push(ns);

        // kubectl: the same objects, applied at once, then wait for Available.
        let ns = TestNamespace::create(&client, "bench-kubectl").await;
        let items = kubectl::install_objects(&bundle, &ns.name);
        let file = std::env::temp_dir().join(format!("{}.json", ns.name));
        std::fs::write(
            &file,
            serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "List", "items": items}))
                .unwrap(),
        )
        .unwrap();
        let deployments = Api::<Deployment>::namespaced(client.clone(), &ns.name);
        let start = Instant::now();
        run_ok(kubectl().args(["apply", "--server-side", "-f"]).arg(&file));
        loop {
            let ready = deployments
                .list(&Default::default())
                .await
                .unwrap()
                .items
                .iter()
                .all(|d| {
                    d.status
                        .as_ref()
                        .and_then(|s| s.available_replicas)
                        .unwrap_or(0)
                        >= d.spec.replicas.unwrap_or(1)
                });
            if ready {
                break;
            }
            tokio::time::sleep(POLL).await;
        }
        kubectl_times.push(start.elapsed());
        let _ = std::fs::remove_file(file);
        run_ok(kubectl().args([
            "delete",
            "clusterrole,clusterrolebinding",
            "-l",
            &format!("windlass.dev/csv-namespace={}", ns.name),
            "--ignore-not-found",
        ]));
        namespaces.push(ns);
    }
    let median = |times: &mut Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    let (w, k) = (median(&mut windlass_times), median(&mut kubectl_times));
    println!(
        "csv-to-succeeded median {:.2}s over {ROUNDS} rounds (all: {:?})",
        w.as_secs_f64(),
        windlass_times
    );
    println!(
        "kubectl-apply-to-available median {:.2}s (all: {:?})",
        k.as_secs_f64(),
        kubectl_times
    );
    println!(
        "ratio windlass/kubectl {:.2}",
        w.as_secs_f64() / k.as_secs_f64()
    );

    // Steady state: nothing changes for a minute; count the manager's writes in the audit log.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let before = windlass_testkit::manager::writes();
    tokio::time::sleep(Duration::from_secs(60)).await;
    let after = windlass_testkit::manager::writes();
    println!(
        "manager writes in one idle minute with {ROUNDS} CSVs installed: {}",
        after.saturating_sub(before)
    );
    if let Some(rss) = windlass_testkit::manager::memory_kib("VmRSS") {
        println!("manager idle RSS {:.1} MiB", rss as f64 / 1024.0);
    }
    drop(namespaces);
}
