//! The hub with a 2,000-package catalog: what one request costs the server, how heavy the
//! pages are, and the memory the loaded catalog and its index take.
//!
//! `cargo bench -p windlass-hub --bench hub_scale` prints, for the list page (first page, no
//! search), a search typed into the box (`q=database`, the result fragment the page swaps in),
//! a filtered API query and a package page: p50, p99 and max over many requests, each against
//! its target (p99 under 50 ms); the bytes of each page before images (target under 300 KB);
//! and the resident memory the catalog and index add. Server time here is the work the hub
//! does per request once the person's catalogs are known: search, render, serialise (the
//! request's Catalog read from the API server and HTTP framing are not in it).

use std::{
    hint::black_box,
    sync::Arc,
    time::{Duration, Instant},
};

use windlass_hub::{
    HubIndex, PackageDetail, Query, api,
    html::Viewer,
    pages::{Around, InstallDefaults, list, list_page, package_page},
    synthetic,
};

const PACKAGES: usize = 2_000;
const VERSIONS: usize = 6;
const TARGET_P99: Duration = Duration::from_millis(50);
const TARGET_WEIGHT: usize = 300 * 1024;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn measure(name: &str, runs: usize, mut request: impl FnMut() -> usize) -> usize {
    let mut times = Vec::with_capacity(runs);
    let mut bytes = 0;
    for _ in 0..runs {
        let start = Instant::now();
        bytes = black_box(request());
        times.push(start.elapsed());
    }
    times.sort();
    let p = |q: f64| times[((runs as f64 * q) as usize).min(runs - 1)];
    let p99 = p(0.99);
    println!(
        "{name:<34} p50 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms  p99/target {:.3}  ({} bytes)",
        p(0.5).as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
        times[runs - 1].as_secs_f64() * 1e3,
        p99.as_secs_f64() / TARGET_P99.as_secs_f64(),
        bytes
    );
    bytes
}

fn main() {
    let before = rss_kib();
    let start = Instant::now();
    let catalog = synthetic::catalog(PACKAGES, VERSIONS);
    let index = HubIndex::new(vec![Arc::new(synthetic::content("synthetic", catalog))]);
    let loaded = start.elapsed();
    let after = rss_kib();
    println!(
        "catalog: {PACKAGES} packages, {} bundles; generated and indexed in {:.0} ms",
        PACKAGES * VERSIONS,
        loaded.as_secs_f64() * 1e3
    );
    println!(
        "memory: {:.1} MiB resident with the catalog and its index loaded ({:.1} MiB added)",
        after as f64 / 1024.0,
        after.saturating_sub(before) as f64 / 1024.0
    );
    let viewer = Viewer {
        user: Some("someone".into()),
        csrf_token: "0".repeat(64),
    };
    let all = Query::default();
    let search = Query::parse("q=database");
    let filtered = Query::parse("providerType=certified&keyword=backup");

    let list_bytes = measure("list page (all, first page)", 400, || {
        list_page(&index, &all, 1, &viewer).len()
    });
    let search_bytes = measure("search fragment (q=database)", 400, || {
        list::results(&index, &search, 1).len()
    });
    measure("search page (q=database)", 400, || {
        list_page(&index, &search, 1, &viewer).len()
    });
    measure("API packages (filtered, JSON)", 400, || {
        serde_json::to_vec(&api::packages(&index, &filtered))
            .unwrap()
            .len()
    });
    measure("API packages (all 2,000, JSON)", 100, || {
        serde_json::to_vec(&api::packages(&index, &all))
            .unwrap()
            .len()
    });
    let package_bytes = measure("package page", 400, || {
        let (content, package) = index.package("synthetic-1234", None).unwrap();
        let detail = PackageDetail::of(content, package);
        package_page(
            &detail,
            &InstallDefaults::default(),
            &Around::default(),
            &viewer,
        )
        .len()
    });

    let assets: usize = windlass_hub::assets::ASSETS
        .iter()
        .filter(|(name, _, _)| !name.ends_with(".svg"))
        .map(|(_, _, bytes)| bytes.len())
        .sum();
    for (name, bytes) in [
        ("list page", list_bytes),
        ("search results", search_bytes),
        ("package page", package_bytes),
    ] {
        let total = bytes + assets;
        println!(
            "weight: {name:<16} {:>7.1} KB html + {:.1} KB script and stylesheet = {:>7.1} KB before images; ratio to 300 KB target {:.3}",
            bytes as f64 / 1024.0,
            assets as f64 / 1024.0,
            total as f64 / 1024.0,
            total as f64 / TARGET_WEIGHT as f64
        );
    }
}
