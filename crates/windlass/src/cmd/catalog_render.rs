//! `windlass catalog render | lint | push`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use windlass_catalog::fbc::{CONFIGS_LABEL, image_tree, read_tree};
use windlass_catalog::lint::lint_loaded;
use windlass_catalog::load::{Loaded, ReadOptions, read_catalogs, read_catalogs_with, read_images};

use super::catalog_problems::{StrictArgs, Verdict, report};

#[derive(clap::Args)]
pub struct RenderArgs {
    /// Catalog directories (package-manifest or bundle layout), file-based catalogs, catalog
    /// images or bundle images (by reference); merged into one catalog.
    #[arg(required = true)]
    pub sources: Vec<String>,
    #[arg(short = 'o', long, default_value = "json", value_parser = ["json", "yaml"])]
    pub output: String,
    /// Render what a Catalog of these sources offers: versions that fail the listing gate are
    /// left out (each named on stderr with its findings) and channels spliced around them.
    #[arg(long)]
    pub offered: bool,
    #[command(flatten)]
    pub registry: super::bundle_registry::RegistryArgs,
    #[command(flatten)]
    pub strict: StrictArgs,
}

#[derive(clap::Args)]
pub struct LintArgs {
    /// A catalog directory or file-based catalog.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    #[arg(short = 'o', long, default_value = "text", value_parser = ["text", "json"])]
    pub output: String,
}

#[derive(clap::Args)]
pub struct PushArgs {
    /// A catalog directory or file-based catalog.
    pub dir: PathBuf,
    /// Image reference, for example 127.0.0.1:5000/catalog:latest.
    pub reference: String,
    #[command(flatten)]
    pub registry: super::bundle_registry::RegistryArgs,
    #[command(flatten)]
    pub strict: StrictArgs,
}

/// Merges `more` into `loaded`; a package from two sources is an error.
fn merge(loaded: &mut Loaded, more: Loaded, source: &str) -> anyhow::Result<()> {
    for (name, package) in more.catalog.packages {
        if loaded.catalog.packages.contains_key(&name) {
            anyhow::bail!("package {name} comes from {source} and from another source");
        }
        loaded.catalog.packages.insert(name, package);
    }
    loaded.issues.extend(more.issues);
    Ok(())
}

/// Reads local sources, catalog images and bundle images into one catalog.
fn read_sources(
    sources: &[String],
    registry: &super::bundle_registry::RegistryArgs,
    keep_manifests: bool,
) -> anyhow::Result<Loaded> {
    let (paths, references): (Vec<&String>, Vec<&String>) = sources
        .iter()
        .partition(|s| std::path::Path::new(s).exists());
    let paths: Vec<PathBuf> = paths.into_iter().map(PathBuf::from).collect();
    // Rendering needs no manifests (the listing gate does); dropping them early keeps memory
    // near the catalog's size.
    let mut loaded = read_catalogs_with(&paths, ReadOptions { keep_manifests })?;
    if references.is_empty() {
        return Ok(loaded);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut bundles = Vec::new();
    for reference in references {
        let options = registry.options(reference)?;
        let pulled = runtime.block_on(windlass_oci::pull(reference, &options))?;
        if let Some(configs) = pulled.labels.get(CONFIGS_LABEL) {
            merge(
                &mut loaded,
                read_tree(&pulled.files, configs, reference)?,
                reference,
            )?;
        } else {
            let mut bundle = windlass_bundle::from_files(&pulled.files, reference)?;
            if bundle.annotations.0.is_empty() {
                bundle.annotations = windlass_bundle::metadata::Annotations(pulled.labels.clone());
            }
            bundles.push((bundle, reference.clone()));
        }
    }
    if !bundles.is_empty() {
        merge(&mut loaded, read_images(bundles)?, "bundle images")?;
    }
    Ok(loaded)
}

/// Pushes a catalog as an OCI image: `configs/<package>/catalog.json` in one layer, labelled
/// with the file-based-catalog location as opm-built catalog images are.
pub fn push(args: PushArgs) -> anyhow::Result<ExitCode> {
    let loaded = read_catalogs_with(
        std::slice::from_ref(&args.dir),
        ReadOptions {
            keep_manifests: false,
        },
    )?;
    if let Verdict::Stop(code) = report(&loaded, args.strict) {
        eprintln!("not pushed");
        return Ok(code);
    }
    let tree = image_tree(&loaded.catalog)?;
    let labels = [(CONFIGS_LABEL.to_string(), "/configs".to_string())].into();
    let options = args.registry.options(&args.reference)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let pushed = runtime.block_on(windlass_oci::push_image(
        &tree,
        &labels,
        &args.reference,
        &options,
    ))?;
    println!(
        "pushed {} package(s), {} bundle(s) to {}@{}",
        loaded.catalog.packages.len(),
        loaded
            .catalog
            .packages
            .values()
            .map(|p| p.bundles.len())
            .sum::<usize>(),
        pushed.reference,
        pushed.digest
    );
    Ok(ExitCode::SUCCESS)
}

pub fn render(args: RenderArgs) -> anyhow::Result<ExitCode> {
    let loaded = read_sources(&args.sources, &args.registry, args.offered)?;
    // Whatever is left out is named on stderr, never silently missing.
    if let Verdict::Stop(code) = report(&loaded, args.strict) {
        return Ok(code);
    }
    let catalog = if args.offered {
        let listing = windlass_catalog::listing::gate(loaded);
        for held in &listing.held_back {
            eprintln!(
                "held back: {} ({}): {}",
                held.bundle,
                held.source,
                held.findings.join("; ")
            );
        }
        listing.catalog
    } else {
        loaded.catalog
    };
    let blobs = windlass_catalog::fbc::blobs(&catalog);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if args.output == "yaml" {
        windlass_catalog::fbc::write_yaml(blobs, &mut out)?;
    } else {
        windlass_catalog::fbc::write_json(blobs, &mut out)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

pub fn lint(args: LintArgs) -> anyhow::Result<ExitCode> {
    let loaded = read_catalogs(&args.dirs)?;
    super::bundle_ops::print_report(&lint_loaded(&loaded), &args.output)
}
