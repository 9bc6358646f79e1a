//! Resolution on generated catalogs shaped like the target: packages x 50 versions,
//! dependency chains three deep, shared API providers (see `synthetic::generate`).

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use windlass_resolver::{Policy, Request, Resolver, Subscription, synthetic};

fn subscriptions(packages: usize, count: usize) -> Vec<Subscription> {
    // Spread over the catalog so chains and providers overlap the way a busy cluster's would.
    let step = (packages / count).max(1);
    (0..count)
        .map(|i| Subscription {
            package: format!("pkg{:05}", (i * step) % packages),
            channel: None,
            range: None,
            policy: Policy::Olm,
        })
        .collect()
}

fn resolve(c: &mut Criterion) {
    let mut group = c.benchmark_group("resolve");
    group.sample_size(10);
    for packages in [200, 2000, 4000] {
        let catalog = synthetic::generate(packages, 50);
        group.bench_with_input(
            BenchmarkId::new("index", packages),
            &catalog,
            |b, catalog| b.iter(|| Resolver::new(catalog)),
        );
        let resolver = Resolver::new(&catalog);
        let one = Request {
            installed: vec![],
            subscriptions: subscriptions(packages, 1),
        };
        group.bench_with_input(
            BenchmarkId::new("one subscription", packages),
            &one,
            |b, req| b.iter(|| resolver.resolve(req).map(|p| p.steps.len())),
        );
        let many = Request {
            installed: vec![],
            subscriptions: subscriptions(packages, 1000.min(packages)),
        };
        group.bench_with_input(
            BenchmarkId::new("1000 subscriptions", packages),
            &many,
            |b, req| b.iter(|| resolver.resolve(req).map(|p| p.steps.len())),
        );
    }
    group.finish();
}

/// Catalogs with `olm.constraint`s (see `synthetic::generate_with_constraints`). A resolver
/// keeps what it learnt about a constraint, so each iteration builds a fresh one: the numbers
/// include the index and every CEL evaluation the request needs.
fn constraints(c: &mut Criterion) {
    let mut group = c.benchmark_group("constraints");
    group.sample_size(10);
    for packages in [200, 2000] {
        let catalog = synthetic::generate_with_constraints(packages, 50, 10);
        for count in [1, 20] {
            let request = Request {
                installed: vec![],
                subscriptions: subscriptions(packages, count),
            };
            group.bench_with_input(
                BenchmarkId::new(format!("index and {count} subscription(s), cold"), packages),
                &request,
                |b, req| b.iter(|| Resolver::new(&catalog).resolve(req).map(|p| p.steps.len())),
            );
        }
    }
    group.finish();
}

criterion_group!(benches, resolve, constraints);
criterion_main!(benches);
