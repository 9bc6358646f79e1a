//! Reading and planning a payload of about 200 manifests in 10 levels, against parsing every
//! YAML document of the same files with the same parser (the least any reader must do).
//!
//! `cargo bench -p windlass-release --bench plan [-- MANIFESTS LEVELS]` prints the best of
//! several runs of each and their ratio.

use std::time::{Duration, Instant};

use windlass_release::synthetic::{SyntheticPayload, synthetic_payload};
use windlass_release::{InclusionOptions, LoadOptions, Payload};

const RUNS: usize = 20;

fn best(mut f: impl FnMut()) -> Duration {
    (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .min()
        .expect("at least one run")
}

fn main() {
    let numbers: Vec<usize> = std::env::args().filter_map(|a| a.parse().ok()).collect();
    let spec = SyntheticPayload {
        manifests: numbers.first().copied().unwrap_or(200),
        levels: numbers.get(1).copied().unwrap_or(10),
        ..Default::default()
    };
    let tree = synthetic_payload(&spec);
    let parse_only = best(|| {
        let mut documents = 0;
        for (file, bytes) in tree.under("release-manifests") {
            if file.ends_with(".yaml") {
                let text = std::str::from_utf8(bytes).expect("generated text");
                documents += windlass_bundle::yaml::parse_documents(file, text)
                    .expect("generated YAML parses")
                    .documents
                    .len();
            }
        }
        assert_eq!(documents, spec.manifests);
    });
    let mut planned = 0;
    let load_and_plan = best(|| {
        let payload = Payload::from_tree(&tree, "synthetic", &LoadOptions::default())
            .expect("the synthetic payload is valid");
        planned = payload.plan(&InclusionOptions::default()).manifest_count();
    });
    println!(
        "{} manifests in {} levels: parse only {:.2} ms, load + check + plan {:.2} ms, ratio {:.2}",
        planned,
        spec.levels,
        parse_only.as_secs_f64() * 1e3,
        load_and_plan.as_secs_f64() * 1e3,
        load_and_plan.as_secs_f64() / parse_only.as_secs_f64()
    );
}
