//! `windlass package build` and `package push` of a bundle plus 5 images against `skopeo copy`
//! of the same images, in one run (`make bench-e2e`, or
//! `WINDLASS_MANAGER_BIN=target/release/windlass cargo bench -p windlass-e2e --bench package`).
//!
//! Two Debian docker-registry processes of the bench's own (plain HTTP, no credentials): the
//! source holds a bundle image and 5 images, each an index of amd64 and arm64 images with
//! `WINDLASS_BENCH_IMAGE_MB` (default 8) MB of incompressible payload per platform, made with
//! windlass's own OCI code. Every side runs as a whole process under `/usr/bin/time -v`, into
//! a fresh repository prefix each run (so every blob is transferred); the best wall time of
//! RUNS (default 3) and the largest peak RSS are printed with the ratios:
//!
//! - windlass: `package build` (source registry -> .tgz), `package push` (.tgz -> site);
//! - skopeo, the same two steps an air-gapped transfer takes with it: `copy --all` of each
//!   image into an OCI layout, then from the layout into the site's registry;
//! - skopeo `copy --all` of each image straight from one registry to the other, for scale.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use windlass_testkit::{
    catalogs::publish_with, images::push_multi_arch, registries::RegistryProcess, windlass_binary,
};

const IMAGES: usize = 5;

struct Run {
    wall: Duration,
    peak_rss_kb: u64,
}

fn timed(command: &mut Command) -> Run {
    let mut timed = Command::new("/usr/bin/time");
    timed
        .arg("-v")
        .arg(command.get_program())
        .args(command.get_args());
    let start = Instant::now();
    let output = timed
        .output()
        .expect("run /usr/bin/time (Debian package `time`)");
    let wall = start.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{:?} failed:\n{}\n{stderr}",
        command,
        String::from_utf8_lossy(&output.stdout)
    );
    let peak_rss_kb = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes):"))
        .and_then(|v| v.trim().parse().ok())
        .expect("/usr/bin/time -v prints the peak RSS");
    Run { wall, peak_rss_kb }
}

/// Several processes one after another, as one step: their total time, their largest peak.
fn timed_all(commands: Vec<Command>) -> Run {
    let mut total = Run {
        wall: Duration::ZERO,
        peak_rss_kb: 0,
    };
    for mut command in commands {
        let run = timed(&mut command);
        total.wall += run.wall;
        total.peak_rss_kb = total.peak_rss_kb.max(run.peak_rss_kb);
    }
    total
}

/// The best wall time of `runs` and the largest peak RSS of any.
fn best(runs: usize, mut step: impl FnMut(usize) -> Run) -> Run {
    let all: Vec<Run> = (0..runs).map(&mut step).collect();
    Run {
        wall: all.iter().map(|r| r.wall).min().unwrap_or_default(),
        peak_rss_kb: all.iter().map(|r| r.peak_rss_kb).max().unwrap_or(0),
    }
}

fn skopeo(args: &[&str]) -> Command {
    let mut command = Command::new("skopeo");
    command.args(["copy", "--all", "--quiet"]).args(args);
    command
}

#[tokio::main]
async fn main() {
    windlass_testkit::install_crypto_provider();
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let megabytes: usize = std::env::var("WINDLASS_BENCH_IMAGE_MB")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(8);
    let windlass = windlass_binary();
    let source = RegistryProcess::open();
    let site = RegistryProcess::open();
    let options = source.options();

    let mut images = Vec::new();
    for i in 0..IMAGES {
        let reference = format!("{}/bench/image-{i}:1.0", source.addr);
        let pushed = push_multi_arch(
            &reference,
            &["amd64", "arm64"],
            megabytes << 20,
            i as u64,
            &options,
        )
        .await;
        images.push(pushed.pinned());
    }
    let related = images.clone();
    let bundle =
        publish_with(
            &options,
            &format!("{}/bench/bundle", source.addr),
            "bench",
            "acme-db/1.0.0",
            move |object| {
                if object["kind"] == "ClusterServiceVersion" {
                    object["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]
                        ["containers"][0]["image"] = json!(related[0]);
                    object["spec"]["relatedImages"] = json!(
                        related
                            .iter()
                            .enumerate()
                            .map(|(i, image)| json!({"name": format!("image-{i}"), "image": image}))
                            .collect::<Vec<_>>()
                    );
                }
            },
        )
        .await;
    let mut all_images = vec![bundle.clone()];
    all_images.extend(images.iter().cloned());

    let work = tempfile::tempdir().unwrap();
    let folder = work.path().join("package");
    let status = Command::new(&windlass)
        .args([
            "package",
            "create",
            "bench",
            "--from-bundle",
            &bundle,
            "--dir",
        ])
        .arg(&folder)
        .args(["--architectures", "amd64,arm64", "--plain-http"])
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    let archive = work.path().join("bench.tgz");

    let build = best(runs, |_| {
        let _ = std::fs::remove_file(&archive);
        timed(
            Command::new(&windlass)
                .args(["package", "build"])
                .arg(&folder)
                .arg("-o")
                .arg(&archive)
                .arg("--plain-http"),
        )
    });
    let archive_bytes = std::fs::metadata(&archive).unwrap().len();
    let push = best(runs, |run| {
        timed(
            Command::new(&windlass)
                .args(["package", "push"])
                .arg(&archive)
                .arg("--dst-repo")
                .arg(format!("{}/windlass-{run}", site.addr))
                .arg("--plain-http"),
        )
    });

    let layouts = work.path().join("layouts");
    let path_in = |image: &str| {
        image
            .split_once('/')
            .map(|(_, p)| p)
            .unwrap_or(image)
            .to_string()
    };
    let oci = |image: &str, dir: &Path| {
        let name = path_in(image).replace(['/', ':', '@'], "-");
        format!("oci:{}:{name}", dir.join(&name).display())
    };
    let export = best(runs, |run| {
        let dir = layouts.join(run.to_string());
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        timed_all(
            all_images
                .iter()
                .map(|image| {
                    skopeo(&[
                        "--src-tls-verify=false",
                        &format!("docker://{image}"),
                        &oci(image, &dir),
                    ])
                })
                .collect(),
        )
    });
    let import = best(runs, |run| {
        let dir = layouts.join("0");
        timed_all(
            all_images
                .iter()
                .map(|image| {
                    let target = format!("{}/skopeo-{run}/{}", site.addr, path_in(image));
                    let target = target.split('@').next().unwrap().to_string();
                    skopeo(&[
                        "--dest-tls-verify=false",
                        &oci(image, &dir),
                        &format!("docker://{target}"),
                    ])
                })
                .collect(),
        )
    });
    let direct = best(runs, |run| {
        timed_all(
            all_images
                .iter()
                .map(|image| {
                    let target = format!("{}/direct-{run}/{}", site.addr, path_in(image));
                    let target = target.split('@').next().unwrap().to_string();
                    skopeo(&[
                        "--src-tls-verify=false",
                        "--dest-tls-verify=false",
                        &format!("docker://{image}"),
                        &format!("docker://{target}"),
                    ])
                })
                .collect(),
        )
    });

    let ratio = |a: &Run, b: &Run| a.wall.as_secs_f64() / b.wall.as_secs_f64();
    let memory = |a: &Run, b: &Run| a.peak_rss_kb as f64 / b.peak_rss_kb as f64;
    let line = |what: &str, run: &Run| {
        println!(
            "  {what:44} {:>8.2} s  {:>7.1} MB peak RSS",
            run.wall.as_secs_f64(),
            run.peak_rss_kb as f64 / 1024.0
        )
    };
    println!(
        "a bundle and {IMAGES} images (amd64 + arm64, {megabytes} MB of payload each), archive {:.1} MB; best of {runs}, largest peak:",
        archive_bytes as f64 / 1e6
    );
    line("windlass package build (registry -> .tgz)", &build);
    line("skopeo copy --all, 6 images (registry -> OCI)", &export);
    line("windlass package push (.tgz -> registry)", &push);
    line("skopeo copy --all, 6 images (OCI -> registry)", &import);
    line(
        "skopeo copy --all, 6 images (registry -> registry)",
        &direct,
    );
    let both = Run {
        wall: build.wall + push.wall,
        peak_rss_kb: build.peak_rss_kb.max(push.peak_rss_kb),
    };
    let skopeo_both = Run {
        wall: export.wall + import.wall,
        peak_rss_kb: export.peak_rss_kb.max(import.peak_rss_kb),
    };
    println!(
        "ratios (windlass / skopeo): build {:.2}x time, {:.2}x memory; push {:.2}x time, {:.2}x memory; build + push {:.2}x time, {:.2}x memory; build + push against a direct copy {:.2}x time",
        ratio(&build, &export),
        memory(&build, &export),
        ratio(&push, &import),
        memory(&push, &import),
        ratio(&both, &skopeo_both),
        memory(&both, &skopeo_both),
        ratio(&both, &direct),
    );
}
