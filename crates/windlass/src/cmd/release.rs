//! `windlass release inspect | new | info | graph`: release payloads in the CVO's layout.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use semver::Version;
use windlass_bundle::{FileTree, Limits};
use windlass_release::annotations::{CHANNELS_METADATA, CREATED_LABEL, RELEASE_LABEL};
use windlass_release::metadata::{IMAGE_REFERENCES_FILE, METADATA_FILE};
use windlass_release::payload::{generate_image_references, read_manifests};
use windlass_release::{
    Action, Capabilities, InclusionOptions, LoadOptions, Payload, Plan, ReleaseMetadata,
};

use super::bundle_registry::RegistryArgs;
use super::release_components;
use super::release_registry as registry;

#[derive(clap::Subcommand)]
pub enum ReleaseCommand {
    /// Print a payload's levels, components, manifests, images and metadata (a directory or an
    /// image); a malformed payload is refused, naming the file.
    Inspect(InspectArgs),
    /// Build a payload image from a directory (release-metadata and image-references are
    /// written when missing, checked when present) and push it.
    New(NewArgs),
    /// Show a pushed payload as `oc adm release info` does.
    Info(InfoArgs),
    /// Draw the update graph of a repository of payloads, or serve it as an update service.
    Graph(super::release_graph::GraphArgs),
}

pub fn run(command: ReleaseCommand) -> anyhow::Result<ExitCode> {
    match command {
        ReleaseCommand::Inspect(args) => inspect(args),
        ReleaseCommand::New(args) => new(args),
        ReleaseCommand::Info(args) => info(args),
        ReleaseCommand::Graph(args) => super::release_graph::run(args),
    }
}

/// Which cluster the plan is for.
#[derive(clap::Args, Clone, Debug)]
pub struct ClusterArgs {
    /// Cluster profile (`include.release.openshift.io/<profile>`).
    #[arg(long, default_value = windlass_release::annotations::DEFAULT_PROFILE)]
    pub profile: String,
    /// Feature set; empty is Default.
    #[arg(long, default_value = "")]
    pub feature_set: String,
    /// Enabled capabilities, comma-separated; without it every capability's manifests apply.
    #[arg(long, value_delimiter = ',')]
    pub capabilities: Option<Vec<String>>,
}

impl ClusterArgs {
    fn options(&self) -> InclusionOptions {
        InclusionOptions {
            profile: self.profile.clone(),
            feature_set: self.feature_set.clone(),
            capabilities: self.capabilities.as_ref().map(|enabled| Capabilities {
                known: None,
                enabled: enabled.iter().cloned().collect(),
            }),
            ..Default::default()
        }
    }
}

#[derive(clap::Args)]
pub struct InspectArgs {
    /// A payload directory (holding release-manifests/) or an image reference.
    pub source: String,
    #[arg(short = 'o', long, default_value = "text", value_parser = ["text", "json"])]
    pub output: String,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(clap::Args)]
pub struct NewArgs {
    /// A payload directory (`manifests/`, `release-manifests/`), the release's own objects.
    #[arg(long, required_unless_present = "component")]
    pub from_dir: Option<PathBuf>,
    /// An operator's `manifests/` folder with its `image-references` (repeat): its files go to
    /// `release-manifests/`, every image they name pinned by digest.
    #[arg(long)]
    pub component: Vec<PathBuf>,
    /// Pins a component's image tag: `NAME=REPOSITORY@sha256:...` (repeat); a tag given no
    /// pin is resolved to its digest in its registry.
    #[arg(long)]
    pub image: Vec<String>,
    #[arg(long)]
    pub version: Version,
    /// Versions that may update to this one (repeat or comma-separate).
    #[arg(long, value_delimiter = ',')]
    pub previous: Vec<Version>,
    /// Versions this one may update to.
    #[arg(long, value_delimiter = ',')]
    pub next: Vec<Version>,
    /// Channels the release is in (`io.openshift.upgrades.graph.release.channels`).
    #[arg(long, value_delimiter = ',')]
    pub channel: Vec<String>,
    /// Image reference to push to, for example 127.0.0.1:5000/releases:4.1.0.
    #[arg(long)]
    pub to: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(clap::Args)]
pub struct InfoArgs {
    pub reference: String,
    #[arg(short = 'o', long, default_value = "text", value_parser = ["text", "json"])]
    pub output: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// A pulled payload image and what its registry says about it.
pub struct PulledPayload {
    pub payload: Payload,
    pub pull_spec: String,
    pub config: registry::ImageConfig,
}

/// Pulls and checks a payload image; `{{.ReleaseImage}}` renders to its pull spec by digest.
pub async fn pull_payload(
    reference: &str,
    options: &registry::RegistryOptions,
) -> anyhow::Result<PulledPayload> {
    let config = registry::image_config(reference, options).await?;
    let pulled = registry::pull(reference, options).await?;
    let pull_spec = format!("{}@{}", registry::repository_of(reference)?, pulled.digest);
    let load = LoadOptions {
        release_image: Some(pull_spec.clone()),
        ..Default::default()
    };
    let payload = Payload::from_tree(&pulled.files, reference, &load)?;
    Ok(PulledPayload {
        payload,
        pull_spec,
        config: registry::ImageConfig {
            digest: pulled.digest,
            ..config
        },
    })
}

fn inspect(args: InspectArgs) -> anyhow::Result<ExitCode> {
    let path = Path::new(&args.source);
    let (payload, digest) = if path.exists() {
        (Payload::read_dir(path, &LoadOptions::default())?, None)
    } else {
        let options = args.registry.options(&args.source)?;
        let pulled = runtime()?.block_on(pull_payload(&args.source, &options))?;
        (pulled.payload, Some(pulled.config.digest))
    };
    for warning in &payload.warnings {
        eprintln!("warning: {warning}");
    }
    let plan = payload.plan(&args.cluster.options());
    if args.output == "json" {
        let summary = serde_json::json!({
            "source": payload.source,
            "digest": digest,
            "metadata": payload.metadata,
            "images": payload.image_references.images,
            "plan": plan,
            "warnings": payload.warnings,
        });
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print_inspect(&payload, &plan, digest.as_deref());
    }
    Ok(ExitCode::SUCCESS)
}

fn list(items: &[impl ToString]) -> String {
    if items.is_empty() {
        "-".into()
    } else {
        items
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn print_inspect(payload: &Payload, plan: &Plan, digest: Option<&str>) {
    let m = &payload.metadata;
    println!("release {} ({})", m.version, payload.source);
    if let Some(digest) = digest {
        println!("digest      {digest}");
    }
    println!("previous    {}", list(&m.previous));
    println!("next        {}", list(&m.next));
    println!("channels    {}", list(&m.channels()));
    println!(
        "manifests   {} applied in {} levels, {} left out for this cluster",
        plan.manifest_count(),
        plan.updater.len() + plan.levels.len(),
        plan.excluded.len()
    );
    let irreversible = plan.irreversible_levels();
    if !irreversible.is_empty() {
        println!("irreversible levels: {}", irreversible.join(", "));
    }
    for (heading, levels) in [
        ("updater (manifests/, applied first)", &plan.updater),
        ("release levels (release-manifests/)", &plan.levels),
    ] {
        if levels.is_empty() {
            continue;
        }
        println!("{heading}:");
        for level in levels {
            let components = level.components().count();
            let mut notes = Vec::new();
            if components > 1 {
                notes.push(format!("{components} components in parallel"));
            }
            if level.steps.len() > 1 {
                notes.push(format!("{} steps (a Job runs alone)", level.steps.len()));
            }
            if level.irreversible {
                notes.push("IRREVERSIBLE".into());
            }
            let notes = if notes.is_empty() {
                String::new()
            } else {
                format!("  [{}]", notes.join("; "))
            };
            println!("  {}{notes}", level.label());
            for (s, step) in level.steps.iter().enumerate() {
                if level.steps.len() > 1 {
                    println!("    step {}:", s + 1);
                }
                for component in &step.components {
                    println!(
                        "    {}",
                        component.component.as_deref().unwrap_or("(no component)")
                    );
                    for manifest in &component.manifests {
                        let name = manifest.file.rsplit('/').next().unwrap_or(&manifest.file);
                        let mut flags = Vec::new();
                        match manifest.action {
                            Action::Apply => {}
                            Action::CreateOnly => flags.push("create-only"),
                            Action::Delete => flags.push("delete"),
                        }
                        if manifest.irreversible {
                            flags.push("irreversible");
                        }
                        let flags = if flags.is_empty() {
                            String::new()
                        } else {
                            format!("  ({})", flags.join(", "))
                        };
                        println!("      {name:<52} {}{flags}", manifest.object);
                    }
                }
            }
        }
    }
    println!("images:");
    for image in &payload.image_references.images {
        println!("  {:<24} {}", image.name, image.image);
    }
    if !plan.excluded.is_empty() {
        println!("left out for this cluster:");
        for e in &plan.excluded {
            println!("  {} {}: {}", e.file, e.object, e.message);
        }
    }
}

fn same_set<T: Ord + Clone>(a: &[T], b: &[T]) -> bool {
    a.iter().cloned().collect::<BTreeSet<T>>() == b.iter().cloned().collect::<BTreeSet<T>>()
}

/// The payload files of `dir` with release-metadata and image-references written or checked.
fn payload_tree(args: &NewArgs) -> anyhow::Result<FileTree> {
    let mut tree = FileTree::default();
    if let Some(from_dir) = &args.from_dir {
        let read = FileTree::read_dir(from_dir, Limits::default())
            .with_context(|| format!("reading {}", from_dir.display()))?;
        tree.files = read
            .files
            .into_iter()
            .filter(|(k, _)| k.starts_with("manifests/") || k.starts_with("release-manifests/"))
            .collect();
    }
    let pins = release_components::pins(&args.image)?;
    let components =
        release_components::add_components(&mut tree, &args.component, &pins, &args.registry)?;
    let dir = args
        .from_dir
        .as_ref()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|| "the components".to_string());
    if tree.under("release-manifests").next().is_none() {
        bail!("{dir}: no release-manifests/ directory, so this is not a release payload");
    }
    match tree.get(METADATA_FILE) {
        Some(bytes) => {
            let found = ReleaseMetadata::parse(METADATA_FILE, bytes)
                .map_err(|e| anyhow::anyhow!("{dir}/{e}"))?;
            if found.version != args.version {
                bail!(
                    "{dir}/{METADATA_FILE}: version is {}, but --version says {}",
                    found.version,
                    args.version
                );
            }
            for (field, given, written) in [
                ("previous", &args.previous, &found.previous),
                ("next", &args.next, &found.next),
            ] {
                if !given.is_empty() && !same_set(given, written) {
                    bail!(
                        "{dir}/{METADATA_FILE}: {field} is [{}], but --{field} says [{}]",
                        list(written),
                        list(given)
                    );
                }
            }
            if !args.channel.is_empty() && !same_set(&args.channel, &found.channels()) {
                bail!(
                    "{dir}/{METADATA_FILE}: metadata.{CHANNELS_METADATA} is [{}], but --channel says [{}]",
                    list(&found.channels()),
                    list(&args.channel)
                );
            }
        }
        None => {
            let mut metadata = ReleaseMetadata::new(args.version.clone());
            metadata.previous = args.previous.clone();
            metadata.next = args.next.clone();
            if !args.channel.is_empty() {
                metadata
                    .metadata
                    .insert(CHANNELS_METADATA.into(), args.channel.join(","));
            }
            tree.files.insert(METADATA_FILE.into(), metadata.to_json());
        }
    }
    match tree.get(IMAGE_REFERENCES_FILE) {
        None => {
            let (manifests, _) = read_manifests(&tree, &dir, &LoadOptions::default())?;
            let refs = generate_image_references(&args.version.to_string(), &manifests);
            let refs = release_components::merged(refs, components);
            tree.files.insert(
                IMAGE_REFERENCES_FILE.into(),
                refs.to_file_text().into_bytes(),
            );
        }
        Some(bytes) if !components.is_empty() => {
            let refs = windlass_release::ImageReferences::parse(IMAGE_REFERENCES_FILE, bytes)
                .map_err(|e| anyhow::anyhow!("{dir}/{e}"))?;
            let refs = release_components::merged(refs, components);
            tree.files.insert(
                IMAGE_REFERENCES_FILE.into(),
                refs.to_file_text().into_bytes(),
            );
        }
        Some(_) => {}
    }
    Ok(tree)
}

fn created_now() -> String {
    // SOURCE_DATE_EPOCH pins the time, so the same files give the same image digest.
    let seconds = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok());
    let at = match seconds.and_then(|s| jiff::Timestamp::from_second(s).ok()) {
        Some(at) => at,
        None => jiff::Timestamp::now(),
    };
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn new(args: NewArgs) -> anyhow::Result<ExitCode> {
    let tree = payload_tree(&args)?;
    let source = args
        .from_dir
        .as_ref()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|| "the components".to_string());
    let payload = Payload::from_tree(&tree, &source, &LoadOptions::default())?;
    for warning in &payload.warnings {
        eprintln!("warning: {warning}");
    }
    let plan = payload.plan(&InclusionOptions::default());
    if plan.manifest_count() == 0 {
        bail!(
            "{source}: no manifest is included for the default cluster profile; add include.release.openshift.io/{}: \"true\" annotations",
            windlass_release::annotations::DEFAULT_PROFILE
        );
    }
    let labels: BTreeMap<String, String> = [
        (RELEASE_LABEL.to_string(), args.version.to_string()),
        (CREATED_LABEL.to_string(), created_now()),
    ]
    .into();
    let options = args.registry.options(&args.to)?;
    let pushed = runtime()?.block_on(registry::push(&tree, &labels, &args.to, &options))?;
    println!(
        "pushed release {} ({} manifests in {} levels) to {}@{}",
        args.version,
        plan.manifest_count(),
        plan.updater.len() + plan.levels.len(),
        pushed.reference,
        pushed.digest
    );
    Ok(ExitCode::SUCCESS)
}

fn info(args: InfoArgs) -> anyhow::Result<ExitCode> {
    let options = args.registry.options(&args.reference)?;
    let pulled = runtime()?.block_on(pull_payload(&args.reference, &options))?;
    let payload = &pulled.payload;
    let plan = payload.plan(&InclusionOptions::default());
    let created = pulled
        .config
        .created
        .clone()
        .or_else(|| pulled.config.labels.get(CREATED_LABEL).cloned());
    let components: Vec<serde_json::Value> = plan
        .all_levels()
        .flat_map(|l| l.components().map(move |c| (l, c)))
        .map(|(l, c)| {
            serde_json::json!({
                "level": l.level,
                "component": c.component,
                "manifests": c.manifests.len(),
            })
        })
        .collect();
    if args.output == "json" {
        let info = serde_json::json!({
            "name": payload.metadata.version.to_string(),
            "digest": pulled.config.digest,
            "created": created,
            "os": pulled.config.os,
            "architecture": pulled.config.architecture,
            "pullSpec": pulled.pull_spec,
            "metadata": payload.metadata,
            "manifests": plan.manifest_count(),
            "irreversibleLevels": plan.irreversible_levels(),
            "components": components,
            "images": payload.image_references.images,
        });
        println!("{}", serde_json::to_string_pretty(&info)?);
        return Ok(ExitCode::SUCCESS);
    }
    let m = &payload.metadata;
    println!("Name:      {}", m.version);
    println!("Digest:    {}", pulled.config.digest);
    println!("Created:   {}", created.as_deref().unwrap_or("-"));
    println!(
        "OS/Arch:   {}/{}",
        pulled.config.os.as_deref().unwrap_or("?"),
        pulled.config.architecture.as_deref().unwrap_or("?")
    );
    println!("Manifests: {}", plan.manifest_count());
    println!();
    println!("Pull From: {}", pulled.pull_spec);
    println!();
    println!("Release Metadata:");
    println!("  Version:  {}", m.version);
    println!(
        "  Upgrades: {}",
        if m.previous.is_empty() {
            "<none>".into()
        } else {
            list(&m.previous)
        }
    );
    if !m.next.is_empty() {
        println!("  Next:     {}", list(&m.next));
    }
    if !m.metadata.is_empty() {
        println!("  Metadata:");
        for (k, v) in &m.metadata {
            println!("    {k}: {v}");
        }
    }
    println!();
    println!("Levels:");
    for level in plan.all_levels() {
        let names: Vec<&str> = level
            .components()
            .map(|c| c.component.as_deref().unwrap_or("(no component)"))
            .collect();
        let irreversible = if level.irreversible {
            "  (irreversible)"
        } else {
            ""
        };
        println!("  {:<10} {}{irreversible}", level.label(), names.join(", "));
    }
    println!();
    println!("Images:");
    println!("  {:<24} DIGEST", "NAME");
    for image in &payload.image_references.images {
        println!("  {:<24} {}", image.name, image.image);
    }
    Ok(ExitCode::SUCCESS)
}
