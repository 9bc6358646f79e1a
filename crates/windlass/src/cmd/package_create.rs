//! `windlass package create`: a package folder, filled from a bundle image or an OCI Helm chart
//! or left for a person to fill in, its manifest in windlass's format or in violet's.
//!
//! Two argument shapes: windlass's `create NAME [--from-bundle REF] [--dir DIR]
//! [--architectures amd64,arm64]`, and violet's `create DIR --artifact REF
//! [--platforms linux/amd64,linux/arm64]`, where the positional argument is the folder and the
//! package is named as its artifact names itself. Violet's shape writes violet's format, so
//! that what violet users script next (`package`, `push`, violet itself) reads it; `--format`
//! chooses either way.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, anyhow, bail};
use base64::Engine;
use windlass_oci::{self as oci, RegistryClient};
use windlass_package::chart::{chart_layer, manifest_from_chart};
use windlass_package::images::manifest_from_bundle;
use windlass_package::layout::MAX_MANIFEST_BYTES;
use windlass_package::lint::{ARCHITECTURES, ICON_TYPES};
use windlass_package::{MANIFEST_FILE, PackageManifest, violet};

use super::package::{PackageRegistryArgs, pull_chart, runtime};

#[derive(clap::Args)]
pub struct CreateArgs {
    /// The package name; with --artifact (violet's shape), the folder to create.
    pub name: String,
    /// A bundle image to fill the manifest from: version, display information, the icon and
    /// every image its CSV lists or its Deployments run.
    #[arg(long, conflicts_with = "artifact")]
    pub from_bundle: Option<String>,
    /// violet's shape: a bundle image or an OCI Helm chart to fill the manifest from (a chart's
    /// images are those its values name). The package is named as the bundle's package or
    /// the chart, unless --package-name says otherwise.
    #[arg(long)]
    pub artifact: Option<String>,
    /// The package's name, with --artifact.
    #[arg(long, requires = "artifact")]
    pub package_name: Option<String>,
    /// Where to create the folder (default: ./NAME); it must not exist or be empty.
    #[arg(long, conflicts_with = "artifact")]
    pub dir: Option<PathBuf>,
    /// The architectures every image must offer (default amd64).
    #[arg(long, value_delimiter = ',', conflicts_with = "platforms")]
    pub architectures: Vec<String>,
    /// violet's form of --architectures: the platforms every image must offer
    /// (linux/amd64,linux/arm64).
    #[arg(long, value_delimiter = ',')]
    pub platforms: Vec<String>,
    /// The manifest's format: windlass's OperatorPackage, or ACP's PackageManifest as violet
    /// writes it. Default: violet's when the command has violet's shape (--artifact or
    /// --platforms), else windlass's.
    #[arg(long, value_parser = ["windlass", "violet"])]
    pub format: Option<String>,
    #[command(flatten)]
    pub registry: PackageRegistryArgs,
}

/// The architectures asked for, from either flag.
fn architectures(args: &CreateArgs) -> anyhow::Result<Vec<String>> {
    if args.platforms.is_empty() {
        return Ok(if args.architectures.is_empty() {
            vec!["amd64".to_string()]
        } else {
            args.architectures.clone()
        });
    }
    let mut out: Vec<String> = Vec::new();
    for platform in &args.platforms {
        let arch = violet::architecture_of(platform).ok_or_else(|| {
            let known: Vec<String> = ARCHITECTURES.iter().map(|a| format!("linux/{a}")).collect();
            anyhow!(
                "--platforms {platform}: not a platform images are published for ({})",
                known.join(", ")
            )
        })?;
        if !out.iter().any(|a| a == arch) {
            out.push(arch.to_string());
        }
    }
    Ok(out)
}

pub fn create(args: CreateArgs) -> anyhow::Result<ExitCode> {
    let violet_shape = args.artifact.is_some();
    let violet = match args.format.as_deref() {
        Some(format) => format == "violet",
        None => violet_shape || !args.platforms.is_empty(),
    };
    let architectures = architectures(&args)?;
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => PathBuf::from(&args.name),
    };
    if dir.exists() && (!dir.is_dir() || std::fs::read_dir(&dir)?.next().is_some()) {
        bail!("{}: exists and is not empty", dir.display());
    }
    // violet names the package as its artifact does; windlass's shape names it outright.
    let name = |from_artifact: Option<&str>| -> String {
        if !violet_shape {
            return args.name.clone();
        }
        args.package_name
            .clone()
            .or(from_artifact.map(str::to_string))
            .or_else(|| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| args.name.clone())
    };
    let source = args.artifact.as_deref().or(args.from_bundle.as_deref());
    let (manifest, icon) = match source {
        Some(reference) => {
            let options = args.registry.options(reference)?;
            runtime()?.block_on(async {
                let client = RegistryClient::new(&options);
                let raw = client
                    .manifest(reference, MAX_MANIFEST_BYTES)
                    .await
                    .with_context(|| format!("reading {reference}"))?
                    .ok_or_else(|| anyhow!("{reference}: not found in the registry"))?;
                if args.artifact.is_some() && chart_layer(reference, &raw.bytes).is_ok() {
                    let (chart, digest) = pull_chart(reference, &options)
                        .await
                        .with_context(|| format!("pulling the chart {reference}"))?;
                    let pinned = pin(reference, &digest)?;
                    let manifest = manifest_from_chart(
                        &name(Some(&chart.name)),
                        &pinned,
                        &chart,
                        &architectures,
                    );
                    return Ok::<_, anyhow::Error>((manifest, None));
                }
                let (bundle, pulled) = oci::pull_bundle(reference, &options)
                    .await
                    .with_context(|| format!("pulling the bundle {reference}"))?;
                let pinned = pin(reference, &pulled.digest)?;
                let icon = bundle_icon(&bundle);
                let manifest = manifest_from_bundle(
                    &name(bundle.package()),
                    &pinned,
                    &bundle.csv,
                    icon.as_ref().map(|(name, _)| name.as_str()),
                    &architectures,
                );
                Ok((manifest, icon))
            })?
        }
        None => {
            let mut manifest =
                manifest_from_bundle(&name(None), "", &Default::default(), None, &architectures);
            manifest.spec.related_images.clear();
            (manifest, None)
        }
    };
    let manifest = if violet {
        violet::convert(&manifest)
    } else {
        manifest
    };
    let path = write_folder(&dir, &manifest, icon.as_ref())?;
    let fields = manifest.fields();
    println!(
        "created {} ({}, {}, {} related images){}",
        path.display(),
        if violet {
            "violet's PackageManifest"
        } else {
            "OperatorPackage"
        },
        manifest.artifact().1.as_str(),
        manifest.spec.related_images.len(),
        if source.is_none() {
            format!(
                "; fill in spec.version, {} and {}, then run `windlass package lint {}`",
                fields.bundle,
                fields.related_images,
                dir.display()
            )
        } else {
            String::new()
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// The CSV's first icon, as a file to write beside the manifest, when its type is one the hub
/// shows.
fn bundle_icon(bundle: &windlass_bundle::Bundle) -> Option<(String, Vec<u8>)> {
    let icon = bundle.csv.spec.icon.first()?;
    let media_type = icon.mediatype.as_deref()?;
    let (extension, _) = ICON_TYPES.iter().find(|(_, t)| *t == media_type)?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(icon.base64data.as_deref()?.trim())
        .ok()?;
    Some((format!("icon.{extension}"), bytes))
}

/// Writes the folder; on a failure, removes what it wrote, so no half-made package is left.
fn write_folder(
    dir: &Path,
    manifest: &PackageManifest,
    icon: Option<&(String, Vec<u8>)>,
) -> anyhow::Result<PathBuf> {
    let created = !dir.exists();
    let path = dir.join(MANIFEST_FILE);
    let result = (|| -> anyhow::Result<()> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        if let Some((name, bytes)) = icon {
            let icon = dir.join(name);
            std::fs::write(&icon, bytes).with_context(|| format!("writing {}", icon.display()))?;
        }
        std::fs::write(&path, manifest.to_yaml())
            .with_context(|| format!("writing {}", path.display()))
    })();
    if let Err(error) = result {
        if created {
            let _ = std::fs::remove_dir_all(dir);
        } else {
            let _ = std::fs::remove_file(&path);
            if let Some((name, _)) = icon {
                let _ = std::fs::remove_file(dir.join(name));
            }
        }
        return Err(error);
    }
    Ok(path)
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

#[cfg(test)]
mod tests {
    use super::super::package::{lint_package, read_manifest};
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn args(name: &str, dir: Option<PathBuf>) -> CreateArgs {
        CreateArgs {
            name: name.into(),
            from_bundle: None,
            artifact: None,
            package_name: None,
            dir,
            architectures: vec![],
            platforms: vec![],
            format: None,
            registry: PackageRegistryArgs::default_for_tests(),
        }
    }

    fn errors(dir: &Path) -> (PackageManifest, Vec<String>) {
        let (manifest, _) = read_manifest(dir).unwrap();
        let report = lint_package(dir, &manifest, true, |_| unreachable!()).unwrap();
        let errors = report.errors().map(|f| f.message.clone()).collect();
        (manifest, errors)
    }

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
        let code = create(args("acme-db", Some(target.clone()))).unwrap();
        assert_eq!(code, ExitCode::SUCCESS);
        let (manifest, messages) = errors(&target);
        assert_eq!(manifest.metadata.name, "acme-db");
        assert_eq!(manifest.spec.architectures, ["amd64"]);
        assert!(!manifest.is_violet());
        assert!(
            messages.contains(&"spec.bundle must not be empty".to_string()),
            "{messages:?}"
        );
        assert!(
            messages.contains(&"spec.version must not be empty".to_string()),
            "{messages:?}"
        );
        // A second create into the same folder is refused.
        let again = create(args("acme-db", Some(target)));
        assert!(
            again
                .unwrap_err()
                .to_string()
                .contains("exists and is not empty")
        );
    }

    #[test]
    fn violet_platforms_write_violet_format_unless_told_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("acme-db");
        let mut violet = args("acme-db", Some(target.clone()));
        violet.platforms = vec!["linux/amd64".into(), "linux/arm64".into()];
        create(violet).unwrap();
        let (manifest, messages) = errors(&target);
        assert!(manifest.is_violet());
        assert_eq!(manifest.spec.architectures, ["amd64", "arm64"]);
        let text = std::fs::read_to_string(target.join(MANIFEST_FILE)).unwrap();
        assert!(text.contains("kind: PackageManifest"), "{text}");
        assert!(text.contains("- linux/arm64"), "{text}");
        assert!(
            messages.contains(&"spec.artifact must not be empty".to_string()),
            "{messages:?}"
        );

        let target = dir.path().join("windlass");
        let mut windlass = args("acme-db", Some(target.clone()));
        windlass.platforms = vec!["linux/arm64".into()];
        windlass.format = Some("windlass".into());
        create(windlass).unwrap();
        let (manifest, _) = errors(&target);
        assert!(!manifest.is_violet());
        assert_eq!(manifest.spec.architectures, ["arm64"]);

        let mut wrong = args("x", Some(dir.path().join("x")));
        wrong.platforms = vec!["amd64".into()];
        let error = create(wrong).unwrap_err().to_string();
        assert!(
            error.starts_with(
                "--platforms amd64: not a platform images are published for (linux/amd64"
            ),
            "{error}"
        );
        assert!(
            !dir.path().join("x").exists(),
            "nothing is left of a refused create"
        );
    }
}
