//! `windlass upgrade`: ask for a release of the platform (the ClusterVersion's
//! `spec.desiredUpdate`), in `oc adm upgrade`'s words (`--to`, `--to-image`, `--to-latest`,
//! `--clear`, `channel`, `recommend`), and `windlass upgrade status`: where the update stands,
//! level by level, with the pre-update readiness report.

use std::{path::PathBuf, process::ExitCode};

use anyhow::{Context as _, bail};
use k8s_openapi::jiff::Timestamp;
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use serde_json::json;
use windlass_api::{
    ClusterVersion,
    clusterversion::{AvailableRelease, CLUSTER_VERSION_NAME},
    names::CLI_FIELD_MANAGER,
};

use crate::cmd::{
    output::{Format, OutputArgs},
    upgrade_recommend, upgrade_view,
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
    /// The newest update the update service recommends (`status.availableUpdates`).
    #[arg(long, conflicts_with_all = ["to", "to_image", "clear"])]
    pub to_latest: bool,
    /// Cancel an update that was asked for but has not started.
    #[arg(long, conflicts_with_all = ["to", "to_image", "force", "accept_risks"])]
    pub clear: bool,
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
    /// Set the channel the update service is asked about; without a name, clear it.
    Channel {
        channel: Option<String>,
        #[arg(long, env = "KUBECONFIG")]
        kubeconfig: Option<PathBuf>,
    },
    /// What the update service offers from the running release and why: recommended updates,
    /// and conditional ones with each risk and whether it applies to this cluster (`-o wide`:
    /// whole risk messages and how each risk is matched).
    Recommend {
        #[command(flatten)]
        output: OutputArgs,
        #[arg(long, env = "KUBECONFIG")]
        kubeconfig: Option<PathBuf>,
    },
    /// The plan of the update asked for (`spec.approval: Manual`): what each level creates,
    /// changes and deletes, and the digest an approval names.
    Plan {
        #[arg(long, env = "KUBECONFIG")]
        kubeconfig: Option<PathBuf>,
    },
    /// Approves the plan with this digest (as `windlass upgrade plan` shows it).
    Approve {
        digest: String,
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
            Some(UpgradeCommand::Channel {
                channel,
                kubeconfig,
            }) => set_channel(channel, kubeconfig).await,
            Some(UpgradeCommand::Recommend { output, kubeconfig }) => {
                recommend(output.format, kubeconfig).await
            }
            Some(UpgradeCommand::Plan { kubeconfig }) => plan(kubeconfig).await,
            Some(UpgradeCommand::Approve { digest, kubeconfig }) => {
                approve(&digest, kubeconfig).await
            }
            None if args.clear => clear(args.kubeconfig).await,
            None => request(args).await,
        }
    })
}

async fn api(kubeconfig: Option<&PathBuf>) -> anyhow::Result<Api<ClusterVersion>> {
    let client = crate::manager::client(kubeconfig).await?;
    Ok(Api::all(client))
}

async fn request(mut args: UpgradeArgs) -> anyhow::Result<ExitCode> {
    let versions = api(args.kubeconfig.as_ref()).await?;
    if args.to_latest {
        let current = versions.get_opt(CLUSTER_VERSION_NAME).await?;
        let latest = current
            .as_ref()
            .and_then(|v| v.status.as_ref())
            .and_then(|s| newest(&s.available_updates))
            .with_context(|| {
                "--to-latest: the update service recommends no update from the running release (`windlass upgrade recommend` shows what it offers)"
            })?;
        println!(
            "the newest recommended update is {} ({})",
            latest.version, latest.image
        );
        args.to = Some(latest.version.clone());
        args.to_image = Some(latest.image.clone());
    }
    if args.to_image.is_none() && args.to.is_none() {
        bail!(
            "name the release with --to-image REF, --to VERSION (an update service configured) or --to-latest (`windlass upgrade recommend` shows what is offered)"
        );
    }
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

/// The ClusterVersion, or an error saying there is none (and `then`, what to do about it).
async fn existing(versions: &Api<ClusterVersion>, then: &str) -> anyhow::Result<ClusterVersion> {
    match versions.get_opt(CLUSTER_VERSION_NAME).await? {
        Some(version) => Ok(version),
        None => bail!("there is no ClusterVersion `{CLUSTER_VERSION_NAME}`{then}"),
    }
}

/// The newest release by version.
pub(crate) fn newest(releases: &[AvailableRelease]) -> Option<&AvailableRelease> {
    releases.iter().max_by(|a, b| {
        match (
            semver::Version::parse(&a.version),
            semver::Version::parse(&b.version),
        ) {
            (Ok(a), Ok(b)) => a.cmp(&b),
            _ => a.version.cmp(&b.version),
        }
    })
}

/// Removes `spec.desiredUpdate` while nothing of it has started; once it has, going back is a
/// rollback, which `windlass upgrade --to-image` of the older release asks for.
async fn clear(kubeconfig: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let versions = api(kubeconfig.as_ref()).await?;
    let version = existing(&versions, ": nothing to clear").await?;
    let Some(desired) = version.spec.desired_update.as_ref() else {
        println!("no update is asked for");
        return Ok(ExitCode::SUCCESS);
    };
    let status = version.status.clone().unwrap_or_default();
    let asked = desired
        .image
        .clone()
        .or(desired.version.clone())
        .unwrap_or_default();
    let started = status.desired.as_ref().is_some_and(|d| {
        desired
            .image
            .as_deref()
            .is_some_and(|i| i == d.requested || i == d.image)
            || desired.version.as_deref() == Some(d.version.as_str())
    });
    if started {
        bail!(
            "the update to {asked} has started; --clear cancels only an update that has not (to go back, ask for the release before it: `windlass upgrade --to-image REF`)"
        );
    }
    versions
        .patch(
            CLUSTER_VERSION_NAME,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"desiredUpdate": null}})),
        )
        .await
        .context("clearing spec.desiredUpdate")?;
    println!("cleared the requested update to {asked}");
    Ok(ExitCode::SUCCESS)
}

async fn set_channel(
    channel: Option<String>,
    kubeconfig: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let versions = api(kubeconfig.as_ref()).await?;
    let channel = channel.filter(|c| !c.is_empty());
    versions
        .patch(
            CLUSTER_VERSION_NAME,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"channel": channel}})),
        )
        .await
        .context("setting spec.channel")?;
    match channel {
        Some(channel) => println!("channel set to {channel}"),
        None => println!("channel cleared"),
    }
    Ok(ExitCode::SUCCESS)
}

async fn recommend(format: Format, kubeconfig: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let versions = api(kubeconfig.as_ref()).await?;
    let version = existing(&versions, "").await?;
    print!("{}", upgrade_recommend::show(&version, format)?);
    Ok(ExitCode::SUCCESS)
}

async fn plan(kubeconfig: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let versions = api(kubeconfig.as_ref()).await?;
    let version = existing(&versions, "").await?;
    let Some(plan) = version.status.as_ref().and_then(|s| s.plan.as_ref()) else {
        bail!(
            "no plan to show: plans are made for updates asked for with spec.approval: Manual, once their other checks pass (`windlass upgrade status` says where the update stands)"
        );
    };
    print!("{}", upgrade_view::render_plan(plan));
    Ok(ExitCode::SUCCESS)
}

/// Approves `digest`, which must be the plan status shows: an approval stands for what was
/// read, never for a plan that changed since.
async fn approve(digest: &str, kubeconfig: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let versions = api(kubeconfig.as_ref()).await?;
    let version = existing(&versions, "").await?;
    let shown = version
        .status
        .as_ref()
        .and_then(|s| s.plan.as_ref())
        .map(|p| p.digest.clone());
    match shown {
        Some(shown) if shown == digest => {}
        Some(shown) => bail!(
            "{digest} is not the plan of the update asked for ({shown}): read it with `windlass upgrade plan` and approve that"
        ),
        None => bail!("no plan waits for approval (`windlass upgrade plan`)"),
    }
    let Some(desired) = version.spec.desired_update.clone() else {
        bail!("no update is asked for");
    };
    // The whole desiredUpdate under the CLI's field manager, so the next `windlass upgrade`
    // (which applies desiredUpdate without an approval) takes this approval back with it.
    let mut desired = serde_json::to_value(&desired)?;
    desired["approvedPlan"] = json!(digest);
    let object = json!({
        "apiVersion": "windlass.dev/v1alpha1",
        "kind": "ClusterVersion",
        "metadata": { "name": CLUSTER_VERSION_NAME },
        // `windlass upgrade --plain-http` applies this one too: kept, not taken back.
        "spec": { "desiredUpdate": desired, "plainHTTP": version.spec.plain_http },
    });
    versions
        .patch(
            CLUSTER_VERSION_NAME,
            &PatchParams::apply(CLI_FIELD_MANAGER).force(),
            &Patch::Apply(&object),
        )
        .await
        .context("approving the plan")?;
    println!("approved plan {digest}; `windlass upgrade status` shows the update's progress");
    Ok(ExitCode::SUCCESS)
}

async fn status(kubeconfig: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let versions = api(kubeconfig.as_ref()).await?;
    let version = existing(
        &versions,
        ": `windlass upgrade --to-image REF` asks for a release",
    )
    .await?;
    print!("{}", upgrade_view::render(&version, Timestamp::now()));
    Ok(ExitCode::SUCCESS)
}
