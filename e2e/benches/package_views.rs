//! Listing the Package views of the 89-package OperatorHub corpus, served by a Catalog from the
//! local registry (`make bench-e2e`, or `e2e/scripts/with-cluster.sh cargo bench -p
//! windlass-e2e --bench package_views`).
//!
//! The corpus is pushed as a file-based-catalog image (`windlass catalog push`, which reports
//! what it leaves out), a Catalog serves it, and the manager writes one Package per package
//! that passed the listing gate. Measured in one run:
//! - from the Catalog's creation to every view written (the manager's side);
//! - median of ROUNDS of `kubectl get packages.windlass.dev -l windlass.dev/catalog=NAME` and of
//!   `windlass catalog list --catalog NAME` (each a whole process, as a person runs them), and
//!   their ratio.
//!
//! Without the corpus (`windlass_corpus::operatorhub_or_skip`), it says so and measures nothing.

use std::{
    process::Command,
    time::{Duration, Instant},
};

use kube::{
    Api,
    api::{DeleteParams, ListParams, PostParams},
};
use serde_json::json;
use windlass_api::{Catalog, Package, catalog::CatalogPhase, names::labels};
use windlass_testkit::{run_ok, unique_name};

const ROUNDS: usize = 9;
const TIMEOUT: Duration = Duration::from_secs(600);

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn timed(command: &mut Command) -> (Duration, String) {
    let start = Instant::now();
    let output = command.output().expect("running the lister");
    let elapsed = start.elapsed();
    assert!(
        output.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (
        elapsed,
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[tokio::main]
async fn main() {
    windlass_testkit::install_crypto_provider();
    let Some(corpus) = windlass_corpus::operatorhub_or_skip() else {
        eprintln!("package_views: no corpus, nothing measured");
        return;
    };
    let client = windlass_testkit::client().await;
    let windlass = windlass_testkit::windlass_binary();
    let reference = format!(
        "{}:v1",
        windlass_testkit::registry().unique_repository("bench/corpus-catalog")
    );
    let pushed = run_ok(Command::new(&windlass).args([
        "catalog",
        "push",
        &corpus.display().to_string(),
        &reference,
        "--plain-http",
    ]));
    println!("{}", pushed.trim());

    let name = unique_name("corpus");
    let catalogs = Api::<Catalog>::all(client.clone());
    let catalog: Catalog = serde_json::from_value(json!({
        "apiVersion": "windlass.dev/v1alpha1", "kind": "Catalog",
        "metadata": {"name": name},
        "spec": {"source": {"type": "Image", "image": reference, "plainHTTP": true}, "priority": -300},
    }))
    .unwrap();
    let created = Instant::now();
    catalogs
        .create(&PostParams::default(), &catalog)
        .await
        .unwrap();
    let served = loop {
        let catalog = catalogs.get(&name).await.unwrap();
        let status = catalog.status.clone().unwrap_or_default();
        if status.phase == Some(CatalogPhase::Serving) && status.packages.is_some() {
            break status;
        }
        assert!(
            created.elapsed() < TIMEOUT,
            "the corpus catalog is not served: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let expected = served.packages.unwrap_or_default() as usize;
    let views = Api::<Package>::all(client.clone());
    let selector = format!("{}={name}", labels::CATALOG);
    loop {
        let listed = views
            .list(&ListParams::default().labels(&selector))
            .await
            .unwrap()
            .items
            .iter()
            .filter(|p| p.status.is_some())
            .count();
        if listed == expected {
            break;
        }
        assert!(
            created.elapsed() < TIMEOUT,
            "{listed} of {expected} views written"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let written = created.elapsed();
    println!(
        "package_views: {expected} packages served ({} versions held back), every view written {:.2} s after the Catalog was created",
        served.held_back_count.unwrap_or_default(),
        written.as_secs_f64()
    );

    let mut kubectl_times = Vec::new();
    let mut windlass_times = Vec::new();
    for _ in 0..ROUNDS {
        let (elapsed, out) = timed(windlass_testkit::kubectl().args([
            "get",
            "packages.windlass.dev",
            "-l",
            &selector,
        ]));
        assert_eq!(out.lines().count(), expected + 1, "{out}");
        kubectl_times.push(elapsed);
        let (elapsed, out) = timed(
            Command::new(&windlass)
                .env("KUBECONFIG", windlass_testkit::kubeconfig_path())
                .args(["catalog", "list", "--catalog", &name]),
        );
        assert_eq!(out.lines().count(), expected + 1, "{out}");
        windlass_times.push(elapsed);
    }
    let kubectl = median(kubectl_times);
    let ours = median(windlass_times);
    println!(
        "package_views: listing {expected} views, median of {ROUNDS}: kubectl get packages.windlass.dev {:.0} ms, windlass catalog list {:.0} ms, ratio {:.2}",
        kubectl.as_secs_f64() * 1000.0,
        ours.as_secs_f64() * 1000.0,
        ours.as_secs_f64() / kubectl.as_secs_f64()
    );
    catalogs
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
}
