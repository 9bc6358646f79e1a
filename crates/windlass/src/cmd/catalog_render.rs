//! `windlass catalog render | lint`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use windlass_catalog::lint::lint_loaded;
use windlass_catalog::load::{
    LoadIssue, Loaded, ReadOptions, read_catalogs, read_catalogs_with, read_images,
};

#[derive(clap::Args)]
pub struct RenderArgs {
    /// Catalog directories (package-manifest or bundle layout), file-based catalogs, or bundle
    /// image references; merged into one catalog.
    #[arg(required = true)]
    pub sources: Vec<String>,
    #[arg(short = 'o', long, default_value = "json", value_parser = ["json", "yaml"])]
    pub output: String,
    #[command(flatten)]
    pub registry: super::bundle_registry::RegistryArgs,
}

#[derive(clap::Args)]
pub struct LintArgs {
    /// A catalog directory or file-based catalog.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    #[arg(short = 'o', long, default_value = "text", value_parser = ["text", "json"])]
    pub output: String,
}

/// Reads local sources and bundle images into one catalog.
fn read_sources(
    sources: &[String],
    registry: &super::bundle_registry::RegistryArgs,
) -> anyhow::Result<Loaded> {
    let (paths, references): (Vec<&String>, Vec<&String>) = sources
        .iter()
        .partition(|s| std::path::Path::new(s).exists());
    let paths: Vec<PathBuf> = paths.into_iter().map(PathBuf::from).collect();
    // Rendering needs no manifests; dropping them early keeps memory near the catalog's size.
    let mut loaded = read_catalogs_with(
        &paths,
        ReadOptions {
            keep_manifests: false,
        },
    )?;
    if !references.is_empty() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let mut images = Vec::new();
        for reference in references {
            let options = registry.options(reference)?;
            let (bundle, _) =
                runtime.block_on(windlass_bundle::oci::pull_bundle(reference, &options))?;
            images.push((bundle, reference.clone()));
        }
        let pulled = read_images(images)?;
        for (name, package) in pulled.catalog.packages {
            if loaded.catalog.packages.contains_key(&name) {
                anyhow::bail!("package {name} comes both from a local catalog and from images");
            }
            loaded.catalog.packages.insert(name, package);
        }
        loaded.issues.extend(pulled.issues);
    }
    Ok(loaded)
}

pub fn render(args: RenderArgs) -> anyhow::Result<ExitCode> {
    let loaded = read_sources(&args.sources, &args.registry)?;
    let lost: Vec<&LoadIssue> = loaded.issues.iter().filter(|i| i.loses_content()).collect();
    if !lost.is_empty() {
        // Never print a catalog with bundles silently missing.
        for issue in lost {
            eprintln!("error: {issue}");
        }
        return Ok(ExitCode::from(1));
    }
    for issue in &loaded.issues {
        eprintln!("warning: {issue}");
    }
    let blobs = windlass_catalog::fbc::render(&loaded.catalog);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if args.output == "yaml" {
        windlass_catalog::fbc::write_yaml(&blobs, &mut out)?;
    } else {
        windlass_catalog::fbc::write_json(&blobs, &mut out)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

pub fn lint(args: LintArgs) -> anyhow::Result<ExitCode> {
    let loaded = read_catalogs(&args.dirs)?;
    super::bundle_ops::print_report(&lint_loaded(&loaded), &args.output)
}
