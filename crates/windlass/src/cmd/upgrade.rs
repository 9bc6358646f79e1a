//! `windlass upgrade`: ask for a release of the platform (the ClusterVersion's
//! `spec.desiredUpdate`), and `windlass upgrade status`: where the update stands, level by level.

use std::{path::PathBuf, process::ExitCode};

use anyhow::{Context as _, bail};
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use serde_json::json;
use windlass_api::{
    ClusterVersion,
    clusterversion::{CLUSTER_VERSION_NAME, LevelState},
    condition::find,
    names::{CLI_FIELD_MANAGER, conditions::cluster_version as types},
};

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct UpgradeArgs {
    #[command(subcommand)]
    pub command: Option<UpgradeCommand>,
    /// The release payload image to move to (a tag is pinned to its digest once).
    #[arg(long)]
    pub to_image: Option<String>,
    /// The version the payload must be.
    #[arg(long)]
    pub to: Option<String>,
    /// Apply even what verification refuses (recorded in history as unverified).
    #[arg(long)]
    pub force: bool,
    /// Let these preconditions through by name (`ClusterOperatorUpgradeable-<name>`), recorded.
    #[arg(long, value_delimiter = ',')]
    pub accept_risks: Vec<String>,
    /// Pull the payload over plain HTTP (a registry on loopback).
    #[arg(long)]
    pub plain_http: bool,
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
}

#[derive(clap::Subcommand)]
pub enum UpgradeCommand {
    /// Where the update stands: levels done, the one in progress and what it waits for.
    Status {
        #[arg(long, env = "KUBECONFIG")]
        kubeconfig: Option<PathBuf>,
    },
}

pub fn run(args: UpgradeArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        match args.command {
            Some(UpgradeCommand::Status { kubeconfig }) => status(kubeconfig).await,
            None => request(args).await,
        }
    })
}

async fn api(kubeconfig: Option<&PathBuf>) -> anyhow::Result<Api<ClusterVersion>> {
    let client = crate::manager::client(kubeconfig).await?;
    Ok(Api::all(client))
}

async fn request(args: UpgradeArgs) -> anyhow::Result<ExitCode> {
    if args.to_image.is_none() && args.to.is_none() {
        bail!(
            "name the release with --to-image REF, or --to VERSION when an update service is configured (`windlass upgrade status` shows where an update stands and what is available)"
        );
    }
    let versions = api(args.kubeconfig.as_ref()).await?;
    let mut desired = json!({ "force": args.force });
    if let Some(image) = &args.to_image {
        desired["image"] = json!(image);
    }
    if let Some(version) = &args.to {
        desired["version"] = json!(version);
    }
    if !args.accept_risks.is_empty() {
        desired["acceptRisks"] = json!(args.accept_risks);
    }
    let mut spec = json!({ "desiredUpdate": desired });
    if args.plain_http {
        spec["plainHTTP"] = json!(true);
    }
    let object = json!({
        "apiVersion": "windlass.dev/v1alpha1",
        "kind": "ClusterVersion",
        "metadata": { "name": CLUSTER_VERSION_NAME },
        "spec": spec,
    });
    versions
        .patch(
            CLUSTER_VERSION_NAME,
            &PatchParams::apply(CLI_FIELD_MANAGER).force(),
            &Patch::Apply(&object),
        )
        .await
        .context("setting the ClusterVersion's desired update")?;
    let target = args
        .to_image
        .as_deref()
        .or(args.to.as_deref())
        .unwrap_or_default();
    println!("requested update to {target}; `windlass upgrade status` shows its progress");
    Ok(ExitCode::SUCCESS)
}

async fn status(kubeconfig: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let versions = api(kubeconfig.as_ref()).await?;
    let Some(version) = versions.get_opt(CLUSTER_VERSION_NAME).await? else {
        bail!(
            "there is no ClusterVersion `{CLUSTER_VERSION_NAME}`: `windlass upgrade --to-image REF` asks for a release"
        );
    };
    print!("{}", render(&version));
    Ok(ExitCode::SUCCESS)
}

/// What `windlass upgrade status` prints.
pub fn render(version: &ClusterVersion) -> String {
    let mut out = String::new();
    let Some(status) = &version.status else {
        return "no status yet: the manager has not looked at the ClusterVersion\n".into();
    };
    let condition = |type_| find(&status.conditions, type_);
    if let Some(desired) = &status.desired {
        out.push_str(&format!(
            "Release:     {} ({}, {})\n",
            desired.version,
            desired.image,
            if desired.verified {
                "verified"
            } else {
                "not verified"
            }
        ));
    }
    for type_ in [
        types::RELEASE_ACCEPTED,
        types::PROGRESSING,
        types::FAILING,
        types::AVAILABLE,
        types::UPGRADEABLE,
    ] {
        if let Some(c) = condition(type_) {
            out.push_str(&format!(
                "{:<12} {:?} ({}){}\n",
                format!("{}:", c.type_),
                c.status,
                c.reason,
                if c.message.is_empty() {
                    String::new()
                } else {
                    format!(": {}", c.message)
                }
            ));
        }
    }
    if !status.levels.is_empty() {
        let done = status
            .levels
            .iter()
            .filter(|l| l.state == LevelState::Done)
            .count();
        out.push_str(&format!(
            "\nLevels: {done} of {} done\n",
            status.levels.len()
        ));
        out.push_str(&format!(
            "{:<14} {:<12} {:>9}  {}\n",
            "LEVEL", "STATE", "MANIFESTS", "COMPONENTS / WAITING FOR"
        ));
        for level in &status.levels {
            let duration = match (&level.started_time, &level.completion_time) {
                (Some(start), Some(end)) => {
                    format!(" in {} s", end.0.as_second() - start.0.as_second())
                }
                _ => String::new(),
            };
            let detail = if level.message.is_empty() {
                format!("{}{duration}", level.components)
            } else {
                format!("{}: {}", level.components, level.message)
            };
            out.push_str(&format!(
                "{:<14} {:<12} {:>9}  {detail}\n",
                level.name,
                format!("{:?}", level.state),
                level.manifests
            ));
        }
    }
    if let Some(progress) = &status.progress {
        out.push_str(&format!(
            "\nIn progress: level {} ({} of {}), component {}: waiting for {}\n",
            progress.level,
            progress.position,
            progress.levels,
            progress.component,
            progress.waiting_for
        ));
    }
    if !status.available_updates.is_empty() {
        out.push_str("\nAvailable updates:\n");
        for release in &status.available_updates {
            out.push_str(&format!("  {:<10} {}\n", release.version, release.image));
        }
    }
    if !status.conditional_updates.is_empty() {
        out.push_str("\nConditional updates (not recommended unless their risks are accepted):\n");
        for update in &status.conditional_updates {
            let risks: Vec<&str> = update.risks.iter().map(|r| r.name.as_str()).collect();
            let recommended = update
                .conditions
                .iter()
                .find(|c| c.type_ == types::RECOMMENDED)
                .map(|c| format!("Recommended={:?}", c.status))
                .unwrap_or_default();
            out.push_str(&format!(
                "  {:<10} {} risks: {} {recommended}\n",
                update.release.version,
                update.release.image,
                risks.join(", ")
            ));
        }
    }
    if !status.history.is_empty() {
        out.push_str("\nHistory (newest first):\n");
        for entry in &status.history {
            out.push_str(&format!(
                "  {:<10} {:<9} {}{}\n",
                entry.version,
                format!("{:?}", entry.state),
                entry.image,
                if entry.verified {
                    ""
                } else {
                    " (not verified)"
                }
            ));
        }
    }
    out
}
