//! The manager holding a community-size catalog, on the local control plane with the manager
//! running (`make bench-e2e`, or `cargo bench -p windlass-e2e --bench catalog_manager [--
//! PACKAGES]` under `e2e/scripts/with-cluster.sh`):
//! - the resolver's synthetic catalog (default 2,000 packages of 50 versions: 100,000 bundles,
//!   each naming a bundle image) is pushed to the local registry with `windlass catalog push`;
//! - a Catalog of type Image serves it; the bench waits until it is Serving all packages and
//!   prints the manager's RSS then and its peak since it started (target: under 300 MB);
//! - over several unchanged polls it counts, in the registry's access log, the requests for the
//!   catalog's repository: manifests (target: one per poll) and blobs (none).

use std::time::{Duration, Instant};

use kube::{
    Api,
    api::{DeleteParams, PostParams},
};
use serde_json::json;
use windlass_api::{Catalog, catalog::CatalogPhase};
use windlass_catalog::fbc;
use windlass_testkit::{
    catalogs::phase, kubectl, manager, registry, require_manager, run_ok, unique_name,
    windlass_binary,
};

const VERSIONS: usize = 50;
const POLL_SECONDS: u64 = 10;
const POLLS_WATCHED: u64 = 4;

/// Requests in the registry's access log (combined log format, written to its log file) for
/// `repository`: (manifest requests, blob requests).
fn registry_requests(repository: &str) -> (usize, usize) {
    let log = windlass_testkit::state_dir().join("logs/registry.log");
    let text = std::fs::read_to_string(&log)
        .unwrap_or_else(|e| panic!("reading the registry's log {}: {e}", log.display()));
    let path = format!("/v2/{repository}/");
    let requests = text
        .lines()
        .filter_map(|line| line.split('"').nth(1))
        .filter(|request| request.contains(&path));
    let (mut manifests, mut blobs) = (0, 0);
    for request in requests {
        if request.contains("/manifests/") {
            manifests += 1;
        } else if request.contains("/blobs/") {
            blobs += 1;
        }
    }
    (manifests, blobs)
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or_else(|| "?".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
}

#[tokio::main]
async fn main() {
    require_manager();
    let packages: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000);
    let client = windlass_testkit::client().await;
    let registry = registry();
    let repository = unique_name("bench-catalog");
    let reference = format!("{}/{repository}:v1", registry.addr);

    let mut catalog = windlass_resolver::synthetic::generate(packages, VERSIONS);
    for package in catalog.packages.values_mut() {
        for bundle in package.bundles.values_mut() {
            bundle.image = Some(format!(
                "{}/bench-bundles/{}:{}",
                registry.addr, bundle.package, bundle.version
            ));
        }
    }
    let bundles: usize = catalog.packages.values().map(|p| p.bundles.len()).sum();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("catalog.json");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&file).unwrap());
    fbc::write_json(fbc::render(&catalog), &mut out).unwrap();
    drop(out);
    drop(catalog);
    let bytes = std::fs::metadata(&file).unwrap().len();
    println!(
        "catalog: {packages} packages, {bundles} bundles, {:.1} MB of file-based catalog",
        bytes as f64 / 1e6
    );
    let pushed = run_ok(
        std::process::Command::new(windlass_binary())
            .args(["catalog", "push"])
            .arg(dir.path())
            .args([&reference, "--plain-http"]),
    );
    println!("{}", pushed.trim());

    let name = unique_name("bench-catalog");
    let object: Catalog = serde_json::from_value(json!({
        "apiVersion": "windlass.dev/v1alpha1",
        "kind": "Catalog",
        "metadata": { "name": name },
        "spec": {
            "source": { "type": "Image", "image": reference, "plainHTTP": true },
            "priority": -300,
            "pollIntervalSeconds": POLL_SECONDS,
        },
    }))
    .unwrap();
    let api = Api::<Catalog>::all(client.clone());
    let before = manager::memory_kib("VmRSS");
    let start = Instant::now();
    api.create(&PostParams::default(), &object).await.unwrap();
    let served = windlass_testkit::lifecycle::wait_object(
        &api,
        &name,
        "Serving every package",
        Duration::from_secs(600),
        |c| {
            phase(c) == Some(CatalogPhase::Serving)
                && c.status.as_ref().and_then(|s| s.packages) == Some(packages as i64)
        },
    )
    .await;
    let serving_after = start.elapsed();
    let digest = served
        .status
        .as_ref()
        .and_then(|s| s.resolved_digest.clone())
        .unwrap_or_default();
    println!(
        "Serving {packages} packages after {:.1} s (digest {digest})",
        serving_after.as_secs_f64()
    );
    // Settle: the first polls after the read may still be under way.
    tokio::time::sleep(Duration::from_secs(POLL_SECONDS + 2)).await;
    let serving_rss = manager::memory_kib("VmRSS");
    let (manifests_before, blobs_before) = registry_requests(&repository);
    tokio::time::sleep(Duration::from_secs(POLL_SECONDS * POLLS_WATCHED)).await;
    let (manifests_after, blobs_after) = registry_requests(&repository);
    let peak = manager::memory_kib("VmHWM");
    let idle_rss = manager::memory_kib("VmRSS");

    println!(
        "manager RSS: {} before the Catalog, {} while serving it, {} after {POLLS_WATCHED} unchanged polls; peak since start {} (target: under 300 MB)",
        mib(before),
        mib(serving_rss),
        mib(idle_rss),
        mib(peak)
    );
    let manifests = manifests_after - manifests_before;
    println!(
        "unchanged polls: {manifests} manifest request(s) and {} blob request(s) for {repository} in {} s at a {POLL_SECONDS} s interval: {:.2} manifest request(s) per poll (target: 1)",
        blobs_after - blobs_before,
        POLL_SECONDS * POLLS_WATCHED,
        manifests as f64 / POLLS_WATCHED as f64
    );
    let _ = kubectl()
        .args(["get", "catalog.windlass.dev", &name, "-o", "wide"])
        .status();
    api.delete(&name, &DeleteParams::default()).await.unwrap();
}
