//! Building the upgrade graph of every channel of the real corpus.
//!
//! Reads the corpus from `WINDLASS_CORPUS` or `../shared/corpus` beside the checkout (without
//! one it says so and measures nothing); loading is outside the measured part.

use criterion::{Criterion, criterion_group, criterion_main};
use windlass_resolver::UpgradeGraph;

fn graphs(c: &mut Criterion) {
    let Some(root) = windlass_corpus::operatorhub_or_skip() else {
        return;
    };
    let catalog = windlass_catalog::load_catalog(&root)
        .unwrap_or_else(|e| panic!("loading the corpus at {}: {e}", root.display()));
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
