//! Pull + unpack of a bundle image from a local registry, against `skopeo copy` of the same
//! image to a local directory, and what one poll of an unchanged image (a manifest HEAD) costs.
//!
//! `WINDLASS_REGISTRY=127.0.0.1:PORT cargo bench -p windlass-oci --bench pull [-- BUNDLE_DIR]`
//! pushes the bundle (default: the corpus' largest package-manifest bundle of
//! community-kubevirt-hyperconverged), then reports the best of several runs of each.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use windlass_bundle::{Limits, from_files, load::read_source, pack::bundle_layout_tree};
use windlass_oci::{self as oci, RegistryOptions};

const RUNS: usize = 5;

fn best(mut f: impl FnMut()) -> Duration {
    (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .min()
        .unwrap()
}

fn main() {
    let registry =
        std::env::var("WINDLASS_REGISTRY").expect("set WINDLASS_REGISTRY=127.0.0.1:PORT");
    let folder = std::env::args()
        .skip(1)
        .find(|a| Path::new(a).is_dir())
        .map(PathBuf::from)
        .or_else(|| {
            windlass_corpus::operatorhub_or_skip()
                .map(|root| root.join("community-kubevirt-hyperconverged/1.4.0"))
        });
    let Some(folder) = folder else {
        eprintln!("no BUNDLE_DIR given and no corpus: nothing to measure");
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let options = RegistryOptions {
        plain_http: true,
        ..Default::default()
    };
    let (tree, source) = read_source(&folder, Limits::default()).unwrap();
    let bundle = from_files(&tree, &source).unwrap();
    let layout = bundle_layout_tree(&bundle, &tree);
    let reference = format!("{registry}/bench/pull:{}", std::process::id());
    let pushed = runtime
        .block_on(oci::push(
            &layout,
            &bundle.annotations,
            &reference,
            &options,
        ))
        .unwrap();
    println!(
        "image {reference}: {} files, {:.1} MB unpacked",
        layout.files.len(),
        layout.total_bytes() as f64 / 1e6
    );

    let pull_only = best(|| {
        let pulled = runtime.block_on(oci::pull(&reference, &options)).unwrap();
        assert_eq!(pulled.digest, pushed.digest);
    });
    let windlass = best(|| {
        let (_, pulled) = runtime
            .block_on(oci::pull_bundle(&reference, &options))
            .unwrap();
        assert_eq!(pulled.digest, pushed.digest);
    });
    // What a poll of an unchanged image costs: one manifest HEAD, a new client each time.
    let head = best(|| {
        let digest = runtime
            .block_on(oci::resolve_digest(&reference, &options))
            .unwrap();
        assert_eq!(digest, pushed.digest);
    });
    let target = std::env::temp_dir().join(format!("windlass-bench-skopeo-{}", std::process::id()));
    let skopeo = best(|| {
        let _ = std::fs::remove_dir_all(&target);
        let status = Command::new("skopeo")
            .args([
                "copy",
                "--quiet",
                "--src-tls-verify=false",
                &format!("docker://{reference}"),
                &format!("dir:{}", target.display()),
            ])
            .status()
            .unwrap();
        assert!(status.success());
    });
    let _ = std::fs::remove_dir_all(&target);
    println!(
        "windlass pull + verify + unpack:        {:.1} ms",
        pull_only.as_secs_f64() * 1e3
    );
    println!(
        "windlass pull + verify + unpack + load: {:.1} ms",
        windlass.as_secs_f64() * 1e3
    );
    println!(
        "windlass manifest HEAD (one poll):      {:.1} ms",
        head.as_secs_f64() * 1e3
    );
    println!(
        "skopeo copy to dir (no unpack):        {:.1} ms",
        skopeo.as_secs_f64() * 1e3
    );
}
