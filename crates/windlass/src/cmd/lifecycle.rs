//! `windlass rollback` and `windlass resume`: the person's side of a Blueprint.
//!
//! A rollback sets the Blueprint's target (`clusterServiceVersionName`) to the version that
//! Succeeded before it, under the field manager `windlass-cli`. Because a person now owns the
//! target, the Subscription controller stops moving it (and says so in the Subscription's
//! `TargetPinned` condition) until `windlass resume` hands it back.

use std::{path::PathBuf, process::ExitCode, time::Duration};

use anyhow::{Context as _, bail};
use kube::{
    Api, Client, ResourceExt,
    api::{Patch, PatchParams},
};
use windlass_api::{Blueprint, Subscription, blueprint::BlueprintPhase};
use windlass_hub::actions::{ActionError, Rollback, resume_patch, rollback_patch, rollback_target};

#[derive(clap::Args)]
pub struct Target {
    /// The Subscription (its Blueprint has the same name).
    pub subscription: String,
    #[arg(short, long, env = "WINDLASS_NAMESPACE", default_value = "default")]
    pub namespace: String,
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct RollbackArgs {
    #[command(flatten)]
    pub target: Target,
    /// Roll back to this CSV (one of the Blueprint's recorded revisions) instead of the
    /// Blueprint's `oldClusterServiceVersionName`.
    #[arg(long)]
    pub to: Option<String>,
    /// Allow a rollback the rules refuse (across a minor or major version); it is recorded in
    /// the Blueprint's history.
    #[arg(long)]
    pub force: bool,
    /// Wait until the rollback Succeeded or failed, printing each phase.
    #[arg(long)]
    pub wait: bool,
    /// How long `--wait` waits, in seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
}

pub fn rollback(args: RollbackArgs) -> anyhow::Result<ExitCode> {
    runtime()?.block_on(rollback_async(args))
}

pub fn resume(args: Target) -> anyhow::Result<ExitCode> {
    runtime()?.block_on(resume_async(args))
}

pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

pub(crate) async fn blueprint_of(target: &Target) -> anyhow::Result<(Api<Blueprint>, Blueprint)> {
    let client: Client = crate::manager::client(target.kubeconfig.as_ref()).await?;
    let subs = Api::<Subscription>::namespaced(client.clone(), &target.namespace);
    let sub = subs.get_opt(&target.subscription).await?.with_context(|| {
        format!(
            "Subscription {}/{} does not exist",
            target.namespace, target.subscription
        )
    })?;
    let name = sub
        .status
        .as_ref()
        .and_then(|s| s.blueprint.clone())
        .unwrap_or_else(|| sub.name_any());
    let blueprints = Api::<Blueprint>::namespaced(client, &target.namespace);
    let blueprint = blueprints.get_opt(&name).await?.with_context(|| {
        format!(
            "Subscription {}/{} has no Blueprint yet (nothing was installed)",
            target.namespace, target.subscription
        )
    })?;
    Ok((blueprints, blueprint))
}

async fn rollback_async(args: RollbackArgs) -> anyhow::Result<ExitCode> {
    let (blueprints, blueprint) = blueprint_of(&args.target).await?;
    let name = blueprint.name_any();
    let (from, to) = match rollback_target(&blueprint, args.to.as_deref()) {
        Ok(Rollback { from, to, .. }) => (from, to),
        // Forcing a target already set records the forced move again; otherwise it is a no-op.
        Err(ActionError::AlreadyTargeted { to, .. }) if args.force => {
            (blueprint.spec.cluster_service_version_name.clone(), to)
        }
        Err(error @ ActionError::AlreadyTargeted { .. }) => {
            println!("{error} (`kubectl describe blueprint {name}`)");
            return Ok(ExitCode::SUCCESS);
        }
        Err(error) => bail!("{error}"),
    };
    blueprints
        .patch(
            &name,
            &PatchParams::apply(windlass_api::names::CLI_FIELD_MANAGER).force(),
            &Patch::Apply(&rollback_patch(&to, args.force)),
        )
        .await
        .with_context(|| format!("setting the target of Blueprint {name}"))?;
    println!(
        "Blueprint {}/{name}: rolling back from {from} to {to}{}",
        args.target.namespace,
        if args.force { " (forced)" } else { "" }
    );
    println!(
        "The Subscription will not move the target while you hold it; `windlass resume {}` hands it back.",
        args.target.subscription
    );
    if !args.wait {
        return Ok(ExitCode::SUCCESS);
    }
    wait_for_outcome(
        &blueprints,
        &args.target,
        &name,
        &to,
        Duration::from_secs(args.timeout),
    )
    .await
}

async fn wait_for_outcome(
    blueprints: &Api<Blueprint>,
    target: &Target,
    name: &str,
    to: &str,
    timeout: Duration,
) -> anyhow::Result<ExitCode> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last = String::new();
    loop {
        let blueprint = blueprints.get(name).await?;
        let status = blueprint.status.unwrap_or_default();
        let phase = status.phase;
        let line = format!(
            "{} {}",
            phase
                .map(|p| format!("{p:?}"))
                .unwrap_or_else(|| "-".into()),
            status.version.unwrap_or_default()
        );
        if line != last {
            println!("  {line}");
            last = line;
        }
        let at_target = status
            .history
            .first()
            .is_some_and(|r| r.cluster_service_version_name == to);
        match phase {
            Some(BlueprintPhase::Succeeded) if at_target => return Ok(ExitCode::SUCCESS),
            // Under Manual approval a rollback is a plan like any other: a person looks first.
            Some(BlueprintPhase::RequiresApproval) if at_target => {
                if let Some(preview) = &status.preview {
                    println!("  plan {}: {}", preview.digest, preview.summary);
                }
                println!(
                    "The rollback waits for approval: `windlass plan {sub} -n {ns}` shows what it \
                     changes and the out-of-band edits it overwrites; `windlass approve {sub} -n \
                     {ns}` runs it.",
                    sub = target.subscription,
                    ns = target.namespace
                );
                return Ok(ExitCode::SUCCESS);
            }
            Some(BlueprintPhase::Failed) if at_target => {
                let why = status
                    .conditions
                    .iter()
                    .filter(|c| c.status == windlass_api::ConditionStatus::False)
                    .map(|c| format!("{}: {}", c.type_, c.message))
                    .collect::<Vec<_>>()
                    .join("; ");
                bail!("the rollback to {to} failed: {why}");
            }
            _ => {}
        }
        if tokio::time::Instant::now() > deadline {
            bail!("timed out after {}s waiting for {to}", timeout.as_secs());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

async fn resume_async(target: Target) -> anyhow::Result<ExitCode> {
    let (blueprints, blueprint) = blueprint_of(&target).await?;
    let name = blueprint.name_any();
    let patch = resume_patch();
    blueprints
        .patch(
            &name,
            &PatchParams {
                field_manager: Some(windlass_api::names::CLI_FIELD_MANAGER.into()),
                ..Default::default()
            },
            &Patch::Merge(&patch),
        )
        .await
        .with_context(|| format!("annotating Blueprint {name}"))?;
    println!(
        "Blueprint {}/{name}: the Subscription takes the target back and follows its channel again",
        target.namespace
    );
    Ok(ExitCode::SUCCESS)
}
