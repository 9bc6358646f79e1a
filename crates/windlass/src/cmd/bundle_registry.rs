//! `windlass bundle push | pull | inspect`: bundle images in OCI registries.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use windlass_bundle::{Bundle, Limits, from_files, load::read_source};
use windlass_catalog::lint::{Level, lint_bundle, provider_display};
use windlass_oci::{self as oci, Auth, RegistryOptions};

/// How to reach and log in to a registry.
#[derive(clap::Args, Clone, Debug)]
pub struct RegistryArgs {
    /// Talk plain HTTP (a local registry).
    #[arg(long)]
    pub plain_http: bool,
    #[arg(long, requires = "password")]
    pub username: Option<String>,
    #[arg(
        long,
        env = "WINDLASS_REGISTRY_PASSWORD",
        hide_env_values = true,
        requires = "username"
    )]
    pub password: Option<String>,
    /// A docker config (`config.json`/`auth.json`); defaults to the usual docker and podman places.
    #[arg(long)]
    pub docker_config: Option<PathBuf>,
    /// Cap on the unpacked size of an image, in bytes.
    #[arg(long, default_value_t = Limits::default().max_total_bytes)]
    pub max_bytes: u64,
    /// Cap on the number of files in an image.
    #[arg(long, default_value_t = Limits::default().max_files)]
    pub max_files: usize,
}

impl RegistryArgs {
    /// Anonymous, HTTPS, default limits: what no flags give.
    #[cfg(test)]
    pub fn default_for_tests() -> RegistryArgs {
        RegistryArgs {
            plain_http: false,
            username: None,
            password: None,
            docker_config: None,
            max_bytes: Limits::default().max_total_bytes,
            max_files: Limits::default().max_files,
        }
    }

    pub fn options(&self, reference: &str) -> anyhow::Result<RegistryOptions> {
        let limits = Limits {
            max_total_bytes: self.max_bytes,
            max_files: self.max_files,
        };
        let auth = match (&self.username, &self.password) {
            (Some(username), Some(password)) => Auth::Basic {
                username: username.clone(),
                password: password.clone(),
            },
            _ => {
                let registry = oci::parse_reference(reference)?
                    .resolve_registry()
                    .to_string();
                let configs = match &self.docker_config {
                    Some(path) => vec![path.clone()],
                    None => oci::default_docker_configs(|key| std::env::var(key).ok())
                        .into_iter()
                        .filter(|p| p.is_file())
                        .collect(),
                };
                let mut found = Auth::Anonymous;
                for config in configs {
                    if let Some(auth) = oci::docker_config_auth(&config, &registry)? {
                        found = auth;
                        break;
                    }
                }
                found
            }
        };
        Ok(RegistryOptions {
            plain_http: self.plain_http,
            auth,
            limits,
        })
    }
}

#[derive(clap::Args)]
pub struct PushArgs {
    /// A bundle directory, package-manifest version folder or .tgz pack.
    pub source: PathBuf,
    /// Image reference, for example 127.0.0.1:5000/demo-bundle:1.0.0.
    pub reference: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(clap::Args)]
pub struct PullArgs {
    pub reference: String,
    /// A directory to create (it must not exist yet or be empty).
    pub dir: PathBuf,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(clap::Args)]
pub struct InspectArgs {
    /// A bundle directory, .tgz pack, or image reference.
    pub source: String,
    #[arg(short = 'o', long, default_value = "text", value_parser = ["text", "json"])]
    pub output: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

pub fn push(args: PushArgs) -> anyhow::Result<ExitCode> {
    let (tree, source) = read_source(&args.source, Limits::default())?;
    let bundle = from_files(&tree, &source)?;
    let report = lint_bundle(&bundle);
    if report.has_errors() {
        eprintln!("not pushed: lint found errors");
        for finding in report.findings.iter().filter(|f| f.level == Level::Error) {
            eprintln!("{finding}");
        }
        return Ok(ExitCode::from(1));
    }
    if bundle.package().is_none() {
        bail!(
            "{source}: no package annotation (metadata/annotations.yaml or a package file beside the folder); the image would not name its package"
        );
    }
    let layout = windlass_bundle::pack::bundle_layout_tree(&bundle, &tree);
    let options = args.registry.options(&args.reference)?;
    let pushed = runtime()?.block_on(oci::push(
        &layout,
        &bundle.annotations,
        &args.reference,
        &options,
    ))?;
    println!(
        "pushed {} {} to {}@{}",
        bundle.csv.name(),
        bundle.csv.spec.version.as_deref().unwrap_or("?"),
        pushed.reference,
        pushed.digest
    );
    Ok(ExitCode::SUCCESS)
}

pub fn pull(args: PullArgs) -> anyhow::Result<ExitCode> {
    if args.dir.exists() && std::fs::read_dir(&args.dir)?.next().is_some() {
        bail!("{}: exists and is not empty", args.dir.display());
    }
    let options = args.registry.options(&args.reference)?;
    let (bundle, pulled) = runtime()?.block_on(oci::pull_bundle(&args.reference, &options))?;
    write_tree(&args.dir, &pulled.files)?;
    println!(
        "pulled {} ({}) into {}: {} files",
        args.reference,
        pulled.digest,
        args.dir.display(),
        pulled.files.files.len()
    );
    println!(
        "bundle {} version {}",
        bundle.csv.name(),
        bundle.csv.spec.version.as_deref().unwrap_or("?")
    );
    Ok(ExitCode::SUCCESS)
}

/// Writes a tree below a fresh directory, built beside it and renamed into place at the end.
fn write_tree(dir: &Path, tree: &windlass_bundle::FileTree) -> anyhow::Result<()> {
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)?;
    let staging = tempfile_dir(parent)?;
    for (path, bytes) in &tree.files {
        // Keys were checked on unpacking (no `..`, not absolute); join is safe.
        let target = staging.join(path);
        if let Some(p) = target.parent() {
            std::fs::create_dir_all(p)?;
        }
        std::fs::write(&target, bytes).with_context(|| format!("writing {}", target.display()))?;
    }
    if dir.exists() {
        std::fs::remove_dir(dir)?;
    }
    std::fs::rename(&staging, dir)
        .with_context(|| format!("moving {} to {}", staging.display(), dir.display()))
}

fn tempfile_dir(parent: &Path) -> anyhow::Result<PathBuf> {
    for n in 0..1000u32 {
        let candidate = parent.join(format!(".windlass-pull-{}-{n}", std::process::id()));
        if std::fs::create_dir(&candidate).is_ok() {
            return Ok(candidate);
        }
    }
    bail!("cannot create a staging directory in {}", parent.display())
}

pub fn inspect(args: InspectArgs) -> anyhow::Result<ExitCode> {
    let path = Path::new(&args.source);
    let (bundle, image) = if path.exists() {
        (windlass_bundle::load_bundle(path)?, None)
    } else {
        let options = args.registry.options(&args.source)?;
        let (bundle, pulled) = runtime()?.block_on(oci::pull_bundle(&args.source, &options))?;
        (bundle, Some((pulled.digest, pulled.labels)))
    };
    let summary = summary(&bundle, image.as_ref());
    if args.output == "json" {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print_summary(&summary);
    }
    Ok(ExitCode::SUCCESS)
}

fn summary(
    bundle: &Bundle,
    image: Option<&(String, std::collections::BTreeMap<String, String>)>,
) -> serde_json::Value {
    let csv = &bundle.csv;
    let provider = provider_display(bundle);
    serde_json::json!({
        "source": bundle.source,
        "name": csv.name(),
        "package": bundle.package(),
        "version": csv.spec.version,
        "displayName": csv.spec.display_name,
        "channels": bundle.annotations.channels(),
        "defaultChannel": bundle.annotations.default_channel(),
        "provider": {"name": provider.name, "type": provider.provider_type, "url": provider.url},
        "replaces": csv.spec.replaces,
        "skips": csv.spec.skips,
        "skipRange": csv.skip_range(),
        "minKubeVersion": csv.spec.min_kube_version,
        "installModes": csv.spec.install_modes.iter().filter(|m| m.supported).map(|m| m.type_.clone()).collect::<Vec<_>>(),
        "ownedCRDs": csv.owned_crds().iter().map(|c| format!("{} {} ({})", c.name, c.version, c.kind)).collect::<Vec<_>>(),
        "requiredCRDs": csv.required_crds().iter().map(|c| format!("{} {} ({})", c.name, c.version, c.kind)).collect::<Vec<_>>(),
        "dependencies": bundle.dependencies,
        "relatedImages": csv.spec.related_images,
        "manifests": bundle.manifests.iter().map(|m| format!("{}: {} {}", m.file, m.kind(), m.name())).collect::<Vec<_>>(),
        "digest": image.map(|i| i.0.clone()),
        "labels": image.map(|i| i.1.clone()),
    })
}

fn print_summary(summary: &serde_json::Value) {
    let text = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "-".into(),
        serde_json::Value::Array(items) if items.is_empty() => "-".into(),
        serde_json::Value::Array(items) if items.iter().all(|i| i.is_string()) => items
            .iter()
            .filter_map(|i| i.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    };
    if let Some(map) = summary.as_object() {
        for (key, value) in map {
            if key == "manifests" || key == "relatedImages" || key == "labels" {
                continue;
            }
            println!("{key:16} {}", text(value));
        }
        for (key, heading) in [
            ("relatedImages", "related images"),
            ("manifests", "manifests"),
        ] {
            if let Some(items) = map[key].as_array().filter(|i| !i.is_empty()) {
                println!("{heading}:");
                for item in items {
                    match item {
                        serde_json::Value::String(s) => println!("  {s}"),
                        other => println!(
                            "  {} {}",
                            other["name"].as_str().unwrap_or(""),
                            other["image"].as_str().unwrap_or("")
                        ),
                    }
                }
            }
        }
        if let Some(labels) = map["labels"].as_object() {
            println!("labels:");
            for (k, v) in labels {
                println!("  {k}={}", v.as_str().unwrap_or_default());
            }
        }
    }
}
