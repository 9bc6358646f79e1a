//! Corpus render speed against plain YAML parsing with the same parser.
//!
//! `cargo bench -p windlass-catalog --bench render [-- parse|render]` prints, for the corpus at
//! `WINDLASS_CORPUS` (default `../shared/corpus`; without one it says so and measures nothing): the time to parse every YAML document of
//! every file into generic values (read from disk, on as many threads as the render uses), the
//! time to read and render the whole catalog as `catalog render` does, and their ratio. Each is
//! the best of a few runs. Run it under `taskset -c 0` for one core; `/usr/bin/time -v` with one
//! mode gives that mode's peak RSS.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn yaml_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Reads and parses every file on `threads` threads; returns documents parsed.
fn parse_all(files: &[PathBuf], threads: usize) -> usize {
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut documents = 0;
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(file) = files.get(i) else { break };
                        let text = std::fs::read_to_string(file).unwrap();
                        let parsed = windlass_bundle::yaml::parse_documents(
                            &file.display().to_string(),
                            &text,
                        );
                        documents += parsed.map(|p| p.documents.len()).unwrap_or(0);
                    }
                    documents
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    })
}

/// What `windlass catalog render` does, output discarded; returns bytes rendered.
fn render(root: &Path) -> usize {
    let lean = windlass_catalog::load::ReadOptions {
        keep_manifests: false,
    };
    let loaded = windlass_catalog::load::read_catalog_with(root, lean).unwrap();
    let blobs = windlass_catalog::fbc::render(&loaded.catalog);
    let mut out = Vec::new();
    windlass_catalog::fbc::write_json(&blobs, &mut out).unwrap();
    out.len()
}

fn best<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = None;
    let mut last = None;
    for _ in 0..runs {
        let start = Instant::now();
        let value = f();
        let elapsed = start.elapsed();
        best = Some(best.map_or(elapsed, |b: Duration| b.min(elapsed)));
        last = Some(value);
    }
    (best.unwrap(), last.unwrap())
}

fn main() {
    let mode = std::env::args()
        .skip(1)
        .find(|a| a == "parse" || a == "render")
        .unwrap_or_else(|| "both".into());
    let Some(root) = windlass_corpus::operatorhub_or_skip() else {
        return;
    };
    let files = yaml_files(&root);
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let bytes: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .sum();
    println!(
        "corpus: {} YAML files, {:.1} MB, {threads} thread(s)",
        files.len(),
        bytes as f64 / 1e6
    );
    let runs = 3;
    let parse = (mode != "render").then(|| {
        let (t, docs) = best(runs, || parse_all(&files, threads));
        println!(
            "parse every YAML document: {:.3} s ({docs} documents)",
            t.as_secs_f64()
        );
        t
    });
    let rendered = (mode != "parse").then(|| {
        let (t, out) = best(runs, || render(&root));
        println!(
            "read + render the catalog: {:.3} s ({:.1} MB of JSON)",
            t.as_secs_f64(),
            out as f64 / 1e6
        );
        t
    });
    if let (Some(p), Some(r)) = (parse, rendered) {
        println!(
            "ratio render / parse: {:.2}",
            r.as_secs_f64() / p.as_secs_f64()
        );
    }
}
