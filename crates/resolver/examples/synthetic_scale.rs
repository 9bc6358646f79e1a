//! One-shot timings and peak memory for the generated catalogs (criterion measures time but
//! not memory): `cargo run --release -p windlass-resolver --example synthetic_scale -- 2000`.

use std::time::Instant;

use windlass_resolver::{Policy, Request, Resolver, Subscription, synthetic};

fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn main() {
    let packages: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000);
    let t = Instant::now();
    let catalog = synthetic::generate(packages, 50);
    let generated = t.elapsed();
    let catalog_mb = peak_rss_mb().unwrap_or(f64::NAN);
    let t = Instant::now();
    let resolver = Resolver::new(&catalog);
    let indexed = t.elapsed();
    let subs = |count: usize| -> Vec<Subscription> {
        let step = (packages / count).max(1);
        (0..count)
            .map(|i| Subscription {
                package: format!("pkg{:05}", (i * step) % packages),
                channel: None,
                range: None,
                policy: Policy::Olm,
            })
            .collect()
    };
    let t = Instant::now();
    let one = resolver.resolve(&Request {
        installed: vec![],
        subscriptions: subs(1),
    });
    let one_time = t.elapsed();
    let t = Instant::now();
    let many = resolver.resolve(&Request {
        installed: vec![],
        subscriptions: subs(1000.min(packages)),
    });
    let many_time = t.elapsed();
    println!(
        "{packages} packages x 50 versions: generate {generated:.2?}, index {indexed:.2?}, \
         one subscription {one_time:.2?} ({} steps), {} subscriptions {many_time:.2?} ({} steps, {} decisions), \
         peak RSS {:.0} MB (of which the catalog model {catalog_mb:.0} MB)",
        one.as_ref().map_or(0, |p| p.steps.len()),
        1000.min(packages),
        many.as_ref().map_or(0, |p| p.steps.len()),
        many.as_ref().map_or(0, |p| p.decisions),
        peak_rss_mb().unwrap_or(f64::NAN),
    );
    if let Err(e) = many {
        eprintln!("{e}");
        std::process::exit(1);
    }
}
