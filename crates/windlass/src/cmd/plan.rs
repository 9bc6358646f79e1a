//! `windlass plan` and `windlass approve`: the plan a Blueprint's revision brings (every
//! object's field-level changes, the permissions and images that change, the CRD verdicts, the
//! out-of-band edits it overwrites), and approving exactly that plan.
//!
//! The plan is read from its Secret, and checked before it is shown: its bytes against the
//! checksum the Blueprint's status records, and its digest against its own content, so a plan
//! edited in the namespace is refused rather than shown. Approving sets `spec.approvedPlan` to
//! the digest shown (and `spec.approved`), under the field manager `windlass-cli`: if the plan
//! changes before it is applied, the revision waits again.

use std::{process::ExitCode, time::Duration};

use anyhow::{Context as _, bail};
use k8s_openapi::api::core::v1::Secret;
use kube::{
    Api, ResourceExt,
    api::{Patch, PatchParams},
};
use serde_json::json;
use windlass_api::{
    Blueprint, ConditionStatus,
    blueprint::{BlueprintPhase, RevisionOutcome},
    names::{CLI_FIELD_MANAGER, conditions, plan_secret, reasons},
};
use windlass_preview::{Plan, render, sha256_hex};

use super::lifecycle::{Target, blueprint_of, runtime};

#[derive(clap::Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub target: Target,
    /// `text` for a person, or the whole plan as `json` or `yaml`.
    #[arg(short = 'o', long, default_value = "text", value_parser = ["text", "json", "yaml"])]
    pub output: String,
    /// The plan of this revision (one the Blueprint still keeps) instead of the newest.
    #[arg(long)]
    pub revision: Option<i64>,
}

#[derive(clap::Args)]
pub struct ApproveArgs {
    #[command(flatten)]
    pub target: Target,
    /// Approve only if the plan is this one (`sha256:...`, as `windlass plan` printed it).
    #[arg(long)]
    pub plan: Option<String>,
    /// Accept an `UpgradeReady` finding by the name its condition gives (repeatable): the
    /// upgrade goes ahead despite it, and its history records it. Works under Automatic
    /// approval too, where nothing else is approved.
    #[arg(long = "accept", value_name = "FINDING")]
    pub accept: Vec<String>,
    /// Wait until the approved revision Completed or failed, printing each phase.
    #[arg(long)]
    pub wait: bool,
    /// How long `--wait` waits, in seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
}

/// Adds `names` to the Blueprint's `spec.acceptedFindings`, each one a finding its
/// `UpgradeReady` condition names now (anything else is refused: accepting a name nothing
/// reports would wave through whatever reports it later).
async fn accept_findings(
    blueprints: &Api<Blueprint>,
    blueprint: &Blueprint,
    names: &[String],
) -> anyhow::Result<()> {
    let name = blueprint.name_any();
    let ready = blueprint.status.as_ref().and_then(|s| {
        s.conditions
            .iter()
            .find(|c| c.type_ == windlass_api::names::conditions::blueprint::UPGRADE_READY)
    });
    let said = ready.map(|c| c.message.as_str()).unwrap_or_default();
    let unknown: Vec<&String> = names
        .iter()
        .filter(|n| !said.contains(&format!("{n:?}")))
        .collect();
    if !unknown.is_empty() {
        bail!(
            "Blueprint {name} reports no UpgradeReady finding named {}; its condition says: {}",
            unknown
                .iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(", "),
            if said.is_empty() {
                "(no UpgradeReady condition)"
            } else {
                said
            }
        );
    }
    let mut accepted = blueprint.spec.accepted_findings.clone();
    for n in names {
        if !accepted.contains(n) {
            accepted.push(n.clone());
        }
    }
    let patch = json!({ "spec": { "acceptedFindings": accepted } });
    blueprints
        .patch(
            &name,
            &PatchParams {
                field_manager: Some(CLI_FIELD_MANAGER.into()),
                ..Default::default()
            },
            &Patch::Merge(&patch),
        )
        .await
        .with_context(|| format!("accepting findings on Blueprint {name}"))?;
    println!("Accepted on {name}: {}", names.join(", "));
    Ok(())
}

pub fn plan(args: PlanArgs) -> anyhow::Result<ExitCode> {
    runtime()?.block_on(plan_async(args))
}

pub fn approve(args: ApproveArgs) -> anyhow::Result<ExitCode> {
    runtime()?.block_on(approve_async(args))
}

async fn plan_async(args: PlanArgs) -> anyhow::Result<ExitCode> {
    let (blueprints, blueprint) = blueprint_of(&args.target).await?;
    let plan = read_plan(&blueprints, &blueprint, args.revision).await?;
    match args.output.as_str() {
        "json" => println!("{}", serde_json::to_string_pretty(&plan)?),
        "yaml" => print!(
            "{}",
            serde_saphyr::to_string(&plan).context("writing YAML")?
        ),
        _ => {
            print!("{}", render::text(&plan));
            if let Some(line) = standing(&blueprint, &plan, &args.target) {
                println!("\n{line}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Where the plan stands: waiting for approval (and how to give it), approved, applied.
fn standing(blueprint: &Blueprint, plan: &Plan, target: &Target) -> Option<String> {
    let status = blueprint.status.as_ref()?;
    let record = status.history.iter().find(|r| r.revision == plan.revision);
    if let Some(record) = record.filter(|r| r.started_time.is_some()) {
        let approved = match &record.approved_plan {
            Some(digest) => format!(", approved as {digest}"),
            None => String::new(),
        };
        return Some(format!(
            "Revision {} started applying{approved}; it is {:?}.",
            plan.revision, record.outcome
        ));
    }
    let condition = status
        .conditions
        .iter()
        .find(|c| c.type_ == conditions::blueprint::PLAN_APPROVED)?;
    Some(match condition.status {
        ConditionStatus::True => format!("Approved: {}", condition.message),
        _ => format!(
            "Waiting for approval ({}): `windlass approve {} -n {}` approves exactly this plan.",
            condition.reason, target.subscription, target.namespace
        ),
    })
}

/// The plan of `revision` (the newest previewed one when `None`), checked against the status.
pub(crate) async fn read_plan(
    blueprints: &Api<Blueprint>,
    blueprint: &Blueprint,
    revision: Option<i64>,
) -> anyhow::Result<Plan> {
    let name = blueprint.name_any();
    let namespace = blueprint.namespace().unwrap_or_default();
    let status = blueprint.status.clone().unwrap_or_default();
    let previewed = status.preview.as_ref();
    let revision = match (revision, previewed) {
        (Some(revision), _) => revision,
        (None, Some(preview)) => preview.revision,
        (None, None) => bail!(
            "Blueprint {namespace}/{name} shows no plan: plans are computed for revisions under \
             Manual approval, or with spec.preview (set it on the Subscription) under Automatic"
        ),
    };
    let secret_name = plan_secret::name(&name, revision);
    let secrets = Api::<Secret>::namespaced(blueprints.clone().into_client(), &namespace);
    let secret = secrets.get_opt(&secret_name).await?.with_context(|| {
        format!(
            "revision {revision} of {namespace}/{name} has no stored plan (Secret {secret_name})"
        )
    })?;
    let data = secret
        .data
        .as_ref()
        .and_then(|d| d.get(plan_secret::DATA_KEY))
        .with_context(|| format!("Secret {secret_name} holds no {}", plan_secret::DATA_KEY))?;
    let checksum = format!("sha256:{}", sha256_hex(&data.0));
    if let Some(preview) = previewed.filter(|p| p.revision == revision)
        && preview.checksum != checksum
    {
        bail!(
            "Secret {secret_name} does not hold the plan the Blueprint's status describes \
             (checksum {checksum}, status.preview.checksum {}): it was edited or replaced; \
             windlass computes it again on its next look",
            preview.checksum
        );
    }
    let plan: Plan = windlass_revisions::codec::decode(&data.0)
        .with_context(|| format!("reading the plan in Secret {secret_name}"))?;
    if plan.binding.digest() != plan.digest {
        bail!(
            "the plan in Secret {secret_name} does not match its own digest {}",
            plan.digest
        );
    }
    let recorded = status
        .history
        .iter()
        .find(|r| r.revision == revision)
        .and_then(|r| r.plan.clone());
    if let Some(recorded) = recorded
        && recorded != plan.digest
    {
        bail!(
            "the plan in Secret {secret_name} ({}) is not the one revision {revision} recorded \
             ({recorded})",
            plan.digest
        );
    }
    Ok(plan)
}

async fn approve_async(args: ApproveArgs) -> anyhow::Result<ExitCode> {
    let (blueprints, blueprint) = blueprint_of(&args.target).await?;
    let name = blueprint.name_any();
    let namespace = &args.target.namespace;
    let status = blueprint.status.clone().unwrap_or_default();
    if !args.accept.is_empty() {
        accept_findings(&blueprints, &blueprint, &args.accept).await?;
        let waiting = status
            .preview
            .as_ref()
            .is_some_and(|p| p.revision == blueprint.spec.revision);
        if !waiting {
            return Ok(ExitCode::SUCCESS);
        }
    }
    let Some(preview) = status
        .preview
        .clone()
        .filter(|p| p.revision == blueprint.spec.revision)
    else {
        bail!(
            "Blueprint {namespace}/{name} has no plan waiting for approval (phase {}); \
             `kubectl get blueprint {name} -n {namespace} -o yaml` shows where it stands",
            status.phase.map_or("none".into(), |p| format!("{p:?}"))
        );
    };
    let started = status
        .history
        .iter()
        .any(|r| r.revision == preview.revision && r.started_time.is_some());
    if started {
        println!(
            "Revision {} of {namespace}/{name} is already applying (plan {}); nothing to approve.",
            preview.revision, preview.digest
        );
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(wanted) = &args.plan
        && *wanted != preview.digest
    {
        bail!(
            "the plan of revision {} is now {}, not {wanted}{}; look at it again with \
             `windlass plan {} -n {namespace}`",
            preview.revision,
            preview.digest,
            if preview.changes.is_empty() {
                String::new()
            } else {
                format!(" ({})", preview.changes)
            },
            args.target.subscription
        );
    }
    // Shown only once it reads and checks: approving a plan nobody can see is refused.
    let plan = read_plan(&blueprints, &blueprint, Some(preview.revision)).await?;
    println!(
        "Approving plan {} of revision {} ({namespace}/{name}):\n  {}",
        plan.digest, plan.revision, preview.summary
    );
    let patch = json!({ "spec": { "approved": true, "approvedPlan": plan.digest } });
    blueprints
        .patch(
            &name,
            &PatchParams {
                field_manager: Some(CLI_FIELD_MANAGER.into()),
                ..Default::default()
            },
            &Patch::Merge(&patch),
        )
        .await
        .with_context(|| format!("approving Blueprint {namespace}/{name}"))?;
    println!(
        "Approved. If the plan changes before it is applied, the revision waits for approval again."
    );
    if !args.wait {
        return Ok(ExitCode::SUCCESS);
    }
    wait_applied(
        &blueprints,
        &name,
        preview.revision,
        Duration::from_secs(args.timeout),
    )
    .await
}

/// Waits until `revision` Completed (success) or failed, printing each phase.
pub(crate) async fn wait_applied(
    blueprints: &Api<Blueprint>,
    name: &str,
    revision: i64,
    timeout: Duration,
) -> anyhow::Result<ExitCode> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last = String::new();
    loop {
        let status = blueprints.get(name).await?.status.unwrap_or_default();
        let line = format!(
            "{} {}",
            status.phase.map_or("-".into(), |p| format!("{p:?}")),
            status.version.clone().unwrap_or_default()
        );
        if line != last {
            println!("  {line}");
            last = line;
        }
        let record = status.history.iter().find(|r| r.revision == revision);
        match record.map(|r| r.outcome) {
            Some(RevisionOutcome::Completed) => return Ok(ExitCode::SUCCESS),
            Some(RevisionOutcome::Failed | RevisionOutcome::RolledBack) => {
                bail!(
                    "revision {revision} failed: {}",
                    record.map(|r| r.reason.as_str()).unwrap_or_default()
                )
            }
            Some(RevisionOutcome::Superseded) => {
                bail!("revision {revision} was superseded by a newer one before it completed")
            }
            _ => {}
        }
        let changed = status.conditions.iter().any(|c| {
            c.type_ == conditions::blueprint::PLAN_APPROVED
                && c.reason == reasons::blueprint::PLAN_CHANGED
        });
        if status.phase == Some(BlueprintPhase::RequiresApproval) && changed {
            bail!("the plan changed after it was approved; look at it again with `windlass plan`");
        }
        if tokio::time::Instant::now() > deadline {
            bail!(
                "timed out after {}s waiting for revision {revision}",
                timeout.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
