//! `windlass package create | lint | build | push | inspect`: an operator with every image it
//! needs, carried into an air-gapped site's registry as one file.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use base64::Engine;
use windlass_oci::{self as oci, RegistryOptions};
use windlass_package::archive::ReadLimits;
use windlass_package::images::manifest_from_bundle;
use windlass_package::lint::{self, ICON_TYPES, Level, Report, lint_against_bundle, lint_manifest};
use windlass_package::{MANIFEST_FILE, PackageManifest};

use super::bundle_registry::RegistryArgs;

#[derive(clap::Subcommand)]
pub enum PackageCommand {
    /// Make a package folder with a manifest.yaml, filled from a bundle image when given.
    Create(CreateArgs),
    /// Check a package folder's manifest, and the manifest against its bundle; exit 1 on errors.
    Lint(LintArgs),
    /// Write the package, the bundle image and every related image (all platforms, digests
    /// unchanged) into one reproducible .tgz.
    Build(super::package_build::BuildArgs),
    /// Push every image of a package archive into a registry, digests unchanged, and print the
    /// ImageMirrorSet and Catalog that install from there.
    Push(super::package_push::PushArgs),
    /// Check a package archive (every digest, size and entry) and list what it holds.
    Inspect(InspectArgs),
}

pub fn run(command: PackageCommand) -> anyhow::Result<ExitCode> {
    match command {
        PackageCommand::Create(args) => create(args),
        PackageCommand::Lint(args) => lint(args),
        PackageCommand::Build(args) => super::package_build::build(args),
        PackageCommand::Push(args) => super::package_push::push(args),
        PackageCommand::Inspect(args) => inspect(args),
    }
}

#[derive(clap::Args)]
pub struct CreateArgs {
    /// The package name (the operator package as catalogs list it).
    pub name: String,
    /// A bundle image to fill the manifest from: version, display information, the icon and
    /// every image its CSV lists or its Deployments run.
    #[arg(long)]
    pub from_bundle: Option<String>,
    /// Where to create the folder (default: ./NAME); it must not exist or be empty.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// The architectures every image must offer.
    #[arg(long, value_delimiter = ',', default_value = "amd64")]
    pub architectures: Vec<String>,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(clap::Args)]
pub struct LintArgs {
    /// A package folder (holding manifest.yaml).
    pub dir: PathBuf,
    /// Check the manifest alone, without pulling the bundle image.
    #[arg(long)]
    pub offline: bool,
    #[arg(short = 'o', long, default_value = "text", value_parser = ["text", "json"])]
    pub output: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(clap::Args)]
pub struct InspectArgs {
    /// A package archive (.tgz).
    pub archive: PathBuf,
    #[command(flatten)]
    pub limits: ArchiveLimitArgs,
    #[arg(short = 'o', long, default_value = "text", value_parser = ["text", "json"])]
    pub output: String,
}

/// Caps on what reading an archive may unpack.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct ArchiveLimitArgs {
    /// Refuse archives larger than this many bytes unpacked.
    #[arg(long, default_value_t = ReadLimits::default().max_total_bytes)]
    pub max_archive_bytes: u64,
    /// Refuse archives with more entries than this.
    #[arg(long, default_value_t = ReadLimits::default().max_entries)]
    pub max_entries: usize,
}

impl ArchiveLimitArgs {
    pub fn limits(&self) -> ReadLimits {
        ReadLimits {
            max_total_bytes: self.max_archive_bytes,
            max_entries: self.max_entries,
        }
    }
}

pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// Reads `DIR/manifest.yaml`.
pub fn read_manifest(dir: &Path) -> anyhow::Result<(PackageManifest, Vec<u8>)> {
    let path = dir.join(MANIFEST_FILE);
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    let text = String::from_utf8(bytes.clone())
        .map_err(|_| anyhow::anyhow!("{}: not UTF-8 text", path.display()))?;
    let manifest = PackageManifest::parse(&path.display().to_string(), &text)?;
    Ok((manifest, bytes))
}

/// The size of the icon the manifest names, when the folder has it.
pub fn icon_size(dir: &Path, manifest: &PackageManifest) -> Option<u64> {
    let icon = &manifest.spec.icon;
    if icon.is_empty() || lint::icon_media_type(icon).is_none() {
        return None;
    }
    std::fs::metadata(dir.join(icon))
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len())
}

/// Prints findings as `error: manifest.yaml: ...` lines (or JSON).
fn print_findings(report: &Report, output: &str) -> anyhow::Result<()> {
    if output == "json" {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "findings": report.findings,
                "errors": report.errors().count(),
                "warnings": report.findings.iter().filter(|f| f.level == Level::Warning).count(),
            }))?
        );
        return Ok(());
    }
    for finding in &report.findings {
        println!("{finding}");
    }
    println!(
        "{} error(s), {} warning(s)",
        report.errors().count(),
        report
            .findings
            .iter()
            .filter(|f| f.level == Level::Warning)
            .count()
    );
    Ok(())
}

fn create(args: CreateArgs) -> anyhow::Result<ExitCode> {
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(&args.name));
    if dir.exists() && std::fs::read_dir(&dir)?.next().is_some() {
        bail!("{}: exists and is not empty", dir.display());
    }
    let (manifest, icon) = match &args.from_bundle {
        Some(reference) => {
            let options = args.registry.options(reference)?;
            let (bundle, pulled) = runtime()?
                .block_on(oci::pull_bundle(reference, &options))
                .with_context(|| format!("pulling the bundle {reference}"))?;
            let pinned = pin(reference, &pulled.digest)?;
            let icon = bundle.csv.spec.icon.first().and_then(|icon| {
                let media_type = icon.mediatype.as_deref()?;
                let (extension, _) = ICON_TYPES.iter().find(|(_, t)| *t == media_type)?;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(icon.base64data.as_deref()?.trim())
                    .ok()?;
                Some((format!("icon.{extension}"), bytes))
            });
            let manifest = manifest_from_bundle(
                &args.name,
                &pinned,
                &bundle.csv,
                icon.as_ref().map(|(name, _)| name.as_str()),
                &args.architectures,
            );
            (manifest, icon)
        }
        None => {
            let mut manifest = manifest_from_bundle(
                &args.name,
                "",
                &Default::default(),
                None,
                &args.architectures,
            );
            manifest.spec.related_images.clear();
            (manifest, None)
        }
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    if let Some((name, bytes)) = &icon {
        std::fs::write(dir.join(name), bytes)?;
    }
    let path = dir.join(MANIFEST_FILE);
    std::fs::write(&path, manifest.to_yaml())
        .with_context(|| format!("writing {}", path.display()))?;
    println!(
        "created {} ({} related images){}",
        path.display(),
        manifest.spec.related_images.len(),
        if args.from_bundle.is_none() {
            "; fill in spec.version, spec.bundle and spec.relatedImages, then run `windlass package lint`"
        } else {
            ""
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// `reference` pinned to `digest`: `repo[:tag]@digest`.
fn pin(reference: &str, digest: &str) -> anyhow::Result<String> {
    let parsed = windlass_mirror::ImageReference::parse(reference)?;
    let name = reference.split('@').next().unwrap_or(reference);
    if let Some(pinned) = &parsed.digest
        && pinned != digest
    {
        bail!("{reference} was served as {digest}");
    }
    Ok(format!("{name}@{digest}"))
}

/// Lints the manifest, and against its bundle unless `offline`.
pub fn lint_package(
    dir: &Path,
    manifest: &PackageManifest,
    offline: bool,
    options: impl Fn(&str) -> anyhow::Result<RegistryOptions>,
) -> anyhow::Result<Report> {
    let mut report = lint_manifest(manifest, icon_size(dir, manifest));
    let bundle = &manifest.spec.bundle;
    if offline || bundle.is_empty() || windlass_mirror::ImageReference::parse(bundle).is_err() {
        return Ok(report);
    }
    match runtime()?.block_on(oci::pull_bundle(bundle, &options(bundle)?)) {
        Ok((pulled, _)) => {
            report
                .findings
                .extend(lint_against_bundle(manifest, &pulled.csv).findings);
            // The bundle's own problems, named by the file inside the bundle image.
            for finding in windlass_catalog::lint::lint_bundle(&pulled).findings {
                report.findings.push(lint::Finding {
                    level: match finding.level {
                        windlass_catalog::lint::Level::Error => Level::Error,
                        _ => Level::Warning,
                    },
                    field: "spec.bundle".into(),
                    message: format!(
                        "spec.bundle {bundle}: [{}] {}{}: {}",
                        finding.check,
                        finding.file,
                        finding
                            .field
                            .as_ref()
                            .map(|f| format!(" ({f})"))
                            .unwrap_or_default(),
                        finding.message
                    ),
                });
            }
        }
        Err(error) => report.findings.push(lint::Finding {
            level: Level::Error,
            field: "spec.bundle".into(),
            message: format!("spec.bundle {bundle} cannot be read: {error}"),
        }),
    }
    Ok(report)
}

fn lint(args: LintArgs) -> anyhow::Result<ExitCode> {
    let (manifest, _) = read_manifest(&args.dir)?;
    let report = lint_package(&args.dir, &manifest, args.offline, |reference| {
        args.registry.options(reference)
    })?;
    print_findings(&report, &args.output)?;
    Ok(if report.has_errors() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn inspect(args: InspectArgs) -> anyhow::Result<ExitCode> {
    let file = std::fs::File::open(&args.archive)
        .with_context(|| format!("opening {}", args.archive.display()))?;
    let package = windlass_package::archive::read_archive(
        std::io::BufReader::new(file),
        args.limits.limits(),
        &mut windlass_package::archive::Discard,
    )
    .with_context(|| format!("{} is refused", args.archive.display()))?;
    let images: Vec<serde_json::Value> = package
        .images
        .images
        .iter()
        .enumerate()
        .map(|(index, image)| {
            let manifests = package.images.manifests_of(index);
            let platforms: Vec<String> = manifests
                .iter()
                .filter_map(|m| m.platform.as_ref().map(ToString::to_string))
                .collect();
            serde_json::json!({
                "image": image.reference,
                "digest": image.descriptor.digest,
                "mediaType": image.descriptor.media_type,
                "platforms": platforms,
            })
        })
        .collect();
    if args.output == "json" {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "name": package.manifest.metadata.name,
                "version": package.manifest.spec.version,
                "images": images,
                "blobBytes": package.blob_bytes,
            }))?
        );
    } else {
        println!(
            "{} {}: {} images, {} manifests, {} blobs ({:.1} MB), every digest checked",
            package.manifest.metadata.name,
            package.manifest.spec.version,
            package.images.images.len(),
            package.images.manifests.len(),
            package.images.blobs.len(),
            package.blob_bytes as f64 / 1e6
        );
        for image in images {
            let platforms = image["platforms"]
                .as_array()
                .map(|p| {
                    p.iter()
                        .filter_map(|v| v.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            println!(
                "  {} {}{}",
                image["image"].as_str().unwrap_or_default(),
                image["digest"].as_str().unwrap_or_default(),
                if platforms.is_empty() {
                    String::new()
                } else {
                    format!(" ({platforms})")
                }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn references_are_pinned_keeping_their_tag() {
        assert_eq!(
            pin("quay.io/acme/b:1.0", DIGEST).unwrap(),
            format!("quay.io/acme/b:1.0@{DIGEST}")
        );
        assert_eq!(
            pin(&format!("quay.io/acme/b@{DIGEST}"), DIGEST).unwrap(),
            format!("quay.io/acme/b@{DIGEST}")
        );
        assert!(
            pin(
                &format!("quay.io/acme/b@{DIGEST}"),
                &DIGEST.replace('0', "1")
            )
            .is_err()
        );
    }

    #[test]
    fn create_without_a_bundle_writes_a_manifest_lint_explains() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("acme-db");
        let code = create(CreateArgs {
            name: "acme-db".into(),
            from_bundle: None,
            dir: Some(target.clone()),
            architectures: vec!["amd64".into()],
            registry: RegistryArgs::default_for_tests(),
        })
        .unwrap();
        assert_eq!(code, ExitCode::SUCCESS);
        let (manifest, _) = read_manifest(&target).unwrap();
        assert_eq!(manifest.metadata.name, "acme-db");
        let report = lint_package(&target, &manifest, true, |_| unreachable!()).unwrap();
        let messages: Vec<&str> = report.errors().map(|f| f.message.as_str()).collect();
        assert!(
            messages.contains(&"spec.bundle must not be empty"),
            "{messages:?}"
        );
        assert!(
            messages.contains(&"spec.version must not be empty"),
            "{messages:?}"
        );
        // A second create into the same folder is refused.
        let again = create(CreateArgs {
            name: "acme-db".into(),
            from_bundle: None,
            dir: Some(target),
            architectures: vec![],
            registry: RegistryArgs::default_for_tests(),
        });
        assert!(
            again
                .unwrap_err()
                .to_string()
                .contains("exists and is not empty")
        );
    }
}
