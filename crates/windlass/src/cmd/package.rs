//! `windlass package create | lint | build | push | inspect`: an operator (or a Helm chart)
//! with every image it needs, carried into an air-gapped site's registry as one file.
//!
//! The commands also take the names and flags of ACP's packaging tool violet, so that a
//! violet user's scripts run unchanged: `create DIR --artifact REF --platforms linux/amd64`,
//! `package DIR` (build, written to `NAME.tgz`), `push NAME.tgz --dest-repo HOST --plain`,
//! `--username`/`--password`/`--no-auth`, `show NAME.tgz [--all]`. A folder may hold either
//! manifest format; every command reads both.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, anyhow};
use windlass_oci::{self as oci, Auth, RegistryClient, RegistryOptions, repository_of};
use windlass_package::archive::ReadLimits;
use windlass_package::chart::{
    Chart, MAX_CHART_BYTES, chart_layer, lint_against_chart, read_chart,
};
use windlass_package::layout::MAX_MANIFEST_BYTES;
use windlass_package::lint::{self, Level, Report, lint_against_bundle, lint_manifest};
use windlass_package::manifest::ArtifactType;
use windlass_package::{MANIFEST_FILE, PackageManifest};

use super::bundle_registry::RegistryArgs;

#[derive(clap::Subcommand)]
pub enum PackageCommand {
    /// Make a package folder with a manifest.yaml, filled from a bundle image (or, with
    /// --artifact, a bundle image or an OCI Helm chart) when given.
    Create(super::package_create::CreateArgs),
    /// Check a package folder's manifest, and the manifest against its bundle or chart; exit 1
    /// on errors.
    Lint(LintArgs),
    /// Write the package, the bundle image (or chart) and every related image (all platforms,
    /// digests unchanged) into one reproducible .tgz.
    Build(super::package_build::BuildArgs),
    /// violet's name for build; without --output the archive is NAME.tgz, NAME the package's.
    Package(super::package_build::BuildArgs),
    /// Push every image of a package archive into a registry, digests unchanged, and print the
    /// ImageMirrorSet and Catalog that install from there.
    Push(super::package_push::PushArgs),
    /// Check a package archive (every digest, size and entry) and list what it holds.
    Inspect(InspectArgs),
    /// violet's preview of an archive: name, type, platforms and version (every digest checked).
    Show(ShowArgs),
}

pub fn run(command: PackageCommand) -> anyhow::Result<ExitCode> {
    use super::package_build::{OutputName, build};
    match command {
        PackageCommand::Create(args) => super::package_create::create(args),
        PackageCommand::Lint(args) => lint(args),
        PackageCommand::Build(args) => build(args, OutputName::NameAndVersion),
        PackageCommand::Package(args) => build(args, OutputName::Name),
        PackageCommand::Push(args) => super::package_push::push(args),
        PackageCommand::Inspect(args) => inspect(args),
        PackageCommand::Show(args) => show(args),
    }
}

/// How to reach and log in to registries: windlass's flags, and violet's names for them.
#[derive(clap::Args, Clone, Debug)]
pub struct PackageRegistryArgs {
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// violet's name for --plain-http.
    #[arg(long)]
    pub plain: bool,
    /// The registries need no credentials: use none, not even a docker config's (violet's flag).
    #[arg(long, conflicts_with_all = ["username", "docker_config"])]
    pub no_auth: bool,
}

impl PackageRegistryArgs {
    #[cfg(test)]
    pub fn default_for_tests() -> PackageRegistryArgs {
        PackageRegistryArgs {
            registry: RegistryArgs::default_for_tests(),
            plain: false,
            no_auth: false,
        }
    }

    pub fn plain_http(&self) -> bool {
        self.registry.plain_http || self.plain
    }

    /// Whether credentials were given (a pull Secret is then needed at the site too).
    pub fn has_credentials(&self) -> bool {
        !self.no_auth && (self.registry.username.is_some() || self.registry.docker_config.is_some())
    }

    pub fn options(&self, reference: &str) -> anyhow::Result<RegistryOptions> {
        let mut options = if self.no_auth {
            RegistryOptions {
                auth: Auth::Anonymous,
                limits: windlass_bundle::Limits {
                    max_total_bytes: self.registry.max_bytes,
                    max_files: self.registry.max_files,
                },
                ..Default::default()
            }
        } else {
            self.registry.options(reference)?
        };
        options.plain_http = self.plain_http();
        Ok(options)
    }
}

#[derive(clap::Args)]
pub struct LintArgs {
    /// A package folder (holding manifest.yaml).
    pub dir: PathBuf,
    /// Check the manifest alone, without pulling the bundle image or chart.
    #[arg(long)]
    pub offline: bool,
    #[arg(short = 'o', long, default_value = "text", value_parser = ["text", "json"])]
    pub output: String,
    #[command(flatten)]
    pub registry: PackageRegistryArgs,
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

#[derive(clap::Args)]
pub struct ShowArgs {
    /// A package archive (.tgz).
    pub archive: PathBuf,
    /// Also the artifact and every related image.
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub limits: ArchiveLimitArgs,
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

/// Lints the manifest, and against its bundle or chart unless `offline`.
pub fn lint_package(
    dir: &Path,
    manifest: &PackageManifest,
    offline: bool,
    options: impl Fn(&str) -> anyhow::Result<RegistryOptions>,
) -> anyhow::Result<Report> {
    let mut report = lint_manifest(manifest, icon_size(dir, manifest));
    let (artifact, kind) = manifest.artifact();
    let both = !manifest.spec.bundle.is_empty() && !manifest.spec.chart.is_empty();
    if offline
        || both
        || artifact.is_empty()
        || windlass_mirror::ImageReference::parse(artifact).is_err()
    {
        return Ok(report);
    }
    let fields = manifest.fields();
    let field = match kind {
        ArtifactType::Bundle => fields.bundle,
        ArtifactType::Chart => fields.chart,
    };
    let unreadable = |error: anyhow::Error| lint::Finding {
        level: Level::Error,
        field: field.into(),
        message: format!("{field} {artifact} cannot be read: {error:#}"),
    };
    let runtime = runtime()?;
    if kind == ArtifactType::Chart {
        match runtime.block_on(pull_chart(artifact, &options(artifact)?)) {
            Ok((chart, _)) => report
                .findings
                .extend(lint_against_chart(manifest, &chart).findings),
            Err(error) => report.findings.push(unreadable(error)),
        }
        return Ok(report);
    }
    match runtime.block_on(oci::pull_bundle(artifact, &options(artifact)?)) {
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
                    field: field.into(),
                    message: format!(
                        "{field} {artifact}: [{}] {}{}: {}",
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
        Err(error) => report.findings.push(unreadable(error.into())),
    }
    Ok(report)
}

/// Pulls an OCI Helm chart and reads it; also returns the digest of its manifest.
pub async fn pull_chart(
    reference: &str,
    options: &RegistryOptions,
) -> anyhow::Result<(Chart, String)> {
    let client = RegistryClient::new(options);
    let raw = client
        .manifest(reference, MAX_MANIFEST_BYTES)
        .await?
        .ok_or_else(|| anyhow!("{reference}: not found in the registry"))?;
    let layer = chart_layer(reference, &raw.bytes)?;
    let bytes = client
        .blob(&repository_of(reference)?, &layer.digest, MAX_CHART_BYTES)
        .await?;
    let chart = read_chart(&bytes).with_context(|| format!("reading the chart {reference}"))?;
    Ok((chart, windlass_package::sha256(&raw.bytes)))
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

/// Reads an archive whole, checking every entry and digest.
fn read_checked(
    archive: &Path,
    limits: &ArchiveLimitArgs,
) -> anyhow::Result<windlass_package::archive::ReadPackage> {
    let file =
        std::fs::File::open(archive).with_context(|| format!("opening {}", archive.display()))?;
    windlass_package::archive::read_archive(
        std::io::BufReader::new(file),
        limits.limits(),
        &mut windlass_package::archive::Discard,
    )
    .with_context(|| format!("{} is refused", archive.display()))
}

fn inspect(args: InspectArgs) -> anyhow::Result<ExitCode> {
    let package = read_checked(&args.archive, &args.limits)?;
    let kind = package.manifest.artifact().1.as_str();
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
                "type": kind,
                "images": images,
                "blobBytes": package.blob_bytes,
            }))?
        );
    } else {
        println!(
            "{} {} ({kind}): {} images, {} manifests, {} blobs ({:.1} MB), every digest checked",
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

/// violet's `show`: what the archive is, in violet's words, once every digest checked out.
fn show(args: ShowArgs) -> anyhow::Result<ExitCode> {
    let package = read_checked(&args.archive, &args.limits)?;
    let manifest = &package.manifest;
    let spec = &manifest.spec;
    let name = if spec.display_name.is_empty() {
        &manifest.metadata.name
    } else {
        &spec.display_name
    };
    let (artifact, kind) = manifest.artifact();
    println!("Name: {name}");
    println!("Type: {}", kind.as_str());
    println!(
        "Arch: [{}]",
        windlass_package::violet::platforms(manifest).join(" ")
    );
    println!("Version: {}", spec.version);
    if args.all {
        println!("Artifact: {artifact}");
        let related: Vec<&str> = spec
            .related_images
            .iter()
            .map(|r| r.image.as_str())
            .collect();
        println!("RelateImages: [{}]", related.join(" "));
    }
    Ok(ExitCode::SUCCESS)
}
