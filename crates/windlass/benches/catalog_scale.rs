//! `windlass catalog resolve` on a community-size file-based catalog against CPython's `json`
//! decoding the same stream, in one run.
//!
//! `cargo bench -p windlass --bench catalog_scale [-- PACKAGES [RUNS]]` (default 2,000 packages
//! of 50 versions: 100,000 bundles, about 55 MB). The catalog is the resolver's synthetic one,
//! rendered once to a temporary `catalog.json` as compact JSON, one blob per line (a stream
//! windlass reads like any concatenated-JSON catalog). Both sides run as whole processes under
//! `/usr/bin/time -v`: CPython reads the file and decodes every line with `json.loads`;
//! windlass loads the catalog and resolves one package. Each side's best wall time of RUNS (default 3) and its
//! largest peak RSS are printed with the ratios and the targets (time at most 0.3x, memory at
//! most 1.2x). `WINDLASS_BENCH_BIN=<path>` measures another build of `windlass` instead (for
//! a before/after comparison); `WINDLASS_BENCH_CATALOG=<file>` writes the catalog there and
//! keeps it.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const PYTHON_DECODE: &str = r#"
import json, sys
text = open(sys.argv[1], encoding="utf-8").read()
n = 0
for line in text.splitlines():
    json.loads(line)
    n += 1
print(n, "objects")
"#;

struct Run {
    wall: Duration,
    peak_rss_kb: u64,
    stdout: String,
}

fn timed(mut command: Command) -> Run {
    let mut timed = Command::new("/usr/bin/time");
    timed
        .arg("-v")
        .arg(command.get_program())
        .args(command.get_args());
    command = timed;
    let start = Instant::now();
    let output = command
        .output()
        .expect("run /usr/bin/time (Debian package `time`)");
    let wall = start.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{:?} failed:\n{stderr}",
        command.get_args().collect::<Vec<_>>()
    );
    let peak_rss_kb = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes):"))
        .and_then(|v| v.trim().parse().ok())
        .expect("/usr/bin/time -v prints the peak RSS");
    Run {
        wall,
        peak_rss_kb,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
    }
}

fn best(runs: usize, make: impl Fn() -> Command) -> Run {
    let mut all: Vec<Run> = (0..runs).map(|_| timed(make())).collect();
    let peak = all.iter().map(|r| r.peak_rss_kb).max().unwrap_or(0);
    all.sort_by_key(|r| r.wall);
    let mut best = all.swap_remove(0);
    best.peak_rss_kb = peak;
    best
}

fn write_catalog(path: &Path, packages: usize) -> (usize, u64) {
    let catalog = windlass_resolver::synthetic::generate(packages, 50);
    let bundles = catalog.packages.values().map(|p| p.bundles.len()).sum();
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for blob in windlass_catalog::fbc::blobs(&catalog) {
        serde_json::to_writer(&mut out, &blob).unwrap();
        out.write_all(b"\n").unwrap();
    }
    out.flush().unwrap();
    (bundles, std::fs::metadata(path).unwrap().len())
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let packages: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let runs: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    let dir = tempfile::tempdir().unwrap();
    let file = std::env::var("WINDLASS_BENCH_CATALOG")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| dir.path().join("catalog.json"));
    let (bundles, bytes) = write_catalog(&file, packages);
    println!(
        "catalog: {packages} packages, {bundles} bundles, {:.1} MB at {}",
        bytes as f64 / 1e6,
        file.display()
    );

    let windlass_bin = std::env::var("WINDLASS_BENCH_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_windlass").to_string());
    println!("windlass: {windlass_bin}");
    let python = best(runs, || {
        let mut c = Command::new("python3");
        c.arg("-c").arg(PYTHON_DECODE).arg(&file);
        c
    });
    let windlass = best(runs, || {
        let mut c = Command::new(&windlass_bin);
        c.args(["catalog", "resolve"])
            .arg(&file)
            .args(["--package", "pkg00000"]);
        c
    });
    println!("python3 json:             {}", python.stdout.trim());
    println!(
        "windlass catalog resolve: {}",
        windlass.stdout.lines().next().unwrap_or_default()
    );
    let show = |name: &str, r: &Run| {
        println!(
            "{name:<26}{:>8.3} s  {:>8.1} MB peak RSS",
            r.wall.as_secs_f64(),
            r.peak_rss_kb as f64 / 1024.0
        )
    };
    show("CPython json (best)", &python);
    show("windlass resolve (best)", &windlass);
    println!(
        "ratio windlass/CPython:   time {:.2}x (target <= 0.30x), memory {:.2}x (target <= 1.20x)",
        windlass.wall.as_secs_f64() / python.wall.as_secs_f64(),
        windlass.peak_rss_kb as f64 / python.peak_rss_kb as f64
    );
}
