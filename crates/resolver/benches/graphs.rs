//! Building the upgrade graph of every channel of the real corpus.
//!
//! Reads the corpus from `WINDLASS_CORPUS` or `../shared/corpus` (from the repository root);
//! loading is outside the measured part.

use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};
use windlass_resolver::UpgradeGraph;

fn corpus() -> PathBuf {
    std::env::var("WINDLASS_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"))
        .join("operatorhub")
}

fn graphs(c: &mut Criterion) {
    let root = corpus();
    let catalog = match windlass_catalog::load_catalog(&root) {
        Ok(catalog) => catalog,
        Err(e) => panic!(
            "the graph bench needs the corpus at {}: {e}",
            root.display()
        ),
    };
    let channels: usize = catalog.packages.values().map(|p| p.channels.len()).sum();
    eprintln!("{} packages, {channels} channels", catalog.packages.len());
    c.bench_function("build every corpus channel graph", |b| {
        b.iter(|| {
            let mut edges = 0;
            for package in catalog.packages.values() {
                for channel in package.channels.values() {
                    edges += UpgradeGraph::build(package, channel).edges().len();
                }
            }
            edges
        })
    });
}

criterion_group!(benches, graphs);
criterion_main!(benches);
