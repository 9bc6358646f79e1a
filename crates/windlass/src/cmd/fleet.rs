//! `windlass fleet`: a hub's member clusters and the rollouts over them. `register` stores a
//! member's kubeconfig as the Secret the fleet controller reads; `status` (`fleet_status`)
//! shows rollouts (all, or one wave by wave and cluster by cluster); `plan` shows the plans a
//! wave waits with, each member's own; `approve` approves a wave by its digest; `rollback`
//! returns every member a rollout changed to what it ran before.

use std::{collections::BTreeMap, path::PathBuf, process::ExitCode};

use anyhow::{Context as _, bail};
use k8s_openapi::{ByteString, api::core::v1::Secret};
use kube::{
    Api,
    api::{Patch, PatchParams},
    config::Kubeconfig,
};
use serde_json::json;
use windlass_api::{
    fleet::{Rollout, WaveApproval},
    names::{CLI_FIELD_MANAGER, labels},
};

#[derive(clap::Subcommand)]
pub enum FleetCommand {
    /// Register a member cluster in this hub: its kubeconfig (best a token of the
    /// windlass-fleet ServiceAccount that config/rbac/fleet_member.yaml makes in the member)
    /// becomes a Secret in the manager's namespace, labelled for Fleets to select.
    Register {
        /// The member's name, as rollouts show it.
        name: String,
        /// The member's kubeconfig file (its current context is used).
        #[arg(long = "member-kubeconfig")]
        member_kubeconfig: PathBuf,
        /// Labels Fleets and waves select by, `key=value` (repeatable).
        #[arg(long = "label", value_parser = parse_label)]
        labels: Vec<(String, String)>,
        /// The hub manager's namespace.
        #[arg(long, default_value = "windlass-system")]
        namespace: String,
        #[arg(long, env = "KUBECONFIG")]
        kubeconfig: Option<PathBuf>,
    },
    /// Every rollout, or one: its waves and each cluster's state in its own words.
    Status(super::fleet_status::StatusArgs),
    /// The plans a rollout's wave waits with (each member's own preview) and the digest that
    /// approves them.
    Plan {
        rollout: String,
        /// The wave (default: the one the rollout is at).
        #[arg(long)]
        wave: Option<String>,
        #[arg(long, env = "KUBECONFIG")]
        kubeconfig: Option<PathBuf>,
    },
    /// Approve a wave's plans by the digest `windlass fleet plan` shows.
    Approve {
        rollout: String,
        #[arg(long)]
        plan: String,
        #[arg(long)]
        wave: Option<String>,
        #[arg(long, env = "KUBECONFIG")]
        kubeconfig: Option<PathBuf>,
    },
    /// Roll back every member the rollout changed, each to what it ran before (its own stored
    /// revision); nothing more is rolled out.
    Rollback {
        rollout: String,
        /// Past what the members' own rollback rules refuse (across a minor version), as
        /// `windlass rollback --force`; recorded in each member as forced.
        #[arg(long)]
        force: bool,
        #[arg(long, env = "KUBECONFIG")]
        kubeconfig: Option<PathBuf>,
    },
}

fn parse_label(text: &str) -> Result<(String, String), String> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?} is not key=value"))?;
    if key.is_empty() || key == labels::FLEET_MEMBER {
        return Err(format!("{key:?} cannot be set with --label"));
    }
    Ok((key.to_string(), value.to_string()))
}

pub fn run(command: FleetCommand) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        match command {
            FleetCommand::Register {
                name,
                member_kubeconfig,
                labels,
                namespace,
                kubeconfig,
            } => register(&name, &member_kubeconfig, labels, &namespace, kubeconfig).await,
            FleetCommand::Status(args) => super::fleet_status::status(args).await,
            FleetCommand::Plan {
                rollout,
                wave,
                kubeconfig,
            } => plan(&rollout, wave, kubeconfig).await,
            FleetCommand::Approve {
                rollout,
                plan,
                wave,
                kubeconfig,
            } => approve(&rollout, &plan, wave, kubeconfig).await,
            FleetCommand::Rollback {
                rollout,
                force,
                kubeconfig,
            } => rollback(&rollout, force, kubeconfig).await,
        }
    })
}

async fn rollouts(kubeconfig: Option<&PathBuf>) -> anyhow::Result<Api<Rollout>> {
    Ok(Api::all(crate::manager::client(kubeconfig).await?))
}

pub(super) async fn get(api: &Api<Rollout>, name: &str) -> anyhow::Result<Rollout> {
    api.get_opt(name)
        .await?
        .with_context(|| format!("there is no Rollout {name} (`windlass fleet status` lists them)"))
}

async fn register(
    name: &str,
    file: &PathBuf,
    extra: Vec<(String, String)>,
    namespace: &str,
    kubeconfig: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("reading --member-kubeconfig {}", file.display()))?;
    let parsed = Kubeconfig::from_yaml(&text)
        .with_context(|| format!("{}: not a kubeconfig", file.display()))?;
    if parsed.current_context.is_none() {
        bail!("{}: the kubeconfig has no current-context", file.display());
    }
    let mut label_map: BTreeMap<String, String> = extra.into_iter().collect();
    label_map.insert(labels::FLEET_MEMBER.into(), name.into());
    label_map.insert(labels::MANAGED_BY.into(), labels::MANAGED_BY_VALUE.into());
    let secret_name = format!("fleet-member-{name}");
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(secret_name.clone()),
            namespace: Some(namespace.into()),
            labels: Some(label_map),
            ..Default::default()
        },
        type_: Some("Opaque".into()),
        data: Some([("kubeconfig".to_string(), ByteString(text.into_bytes()))].into()),
        ..Default::default()
    };
    let mut body = serde_json::to_value(&secret)?;
    body["apiVersion"] = json!("v1");
    body["kind"] = json!("Secret");
    let client = crate::manager::client(kubeconfig.as_ref()).await?;
    Api::<Secret>::namespaced(client, namespace)
        .patch(
            &secret_name,
            &PatchParams::apply(CLI_FIELD_MANAGER).force(),
            &Patch::Apply(&body),
        )
        .await
        .with_context(|| format!("writing Secret {namespace}/{secret_name}"))?;
    println!("member {name} registered (Secret {namespace}/{secret_name})");
    Ok(ExitCode::SUCCESS)
}

/// The wave a command is about: the one named, or the one the rollout is at.
fn wave_of(rollout: &Rollout, wave: Option<String>) -> anyhow::Result<String> {
    let name = rollout.metadata.name.clone().unwrap_or_default();
    let wave = match wave {
        Some(w) => w,
        None => rollout
            .status
            .as_ref()
            .and_then(|s| s.current_wave.clone())
            .with_context(|| format!("Rollout {name} has no wave in progress yet"))?,
    };
    if !rollout.spec.waves.iter().any(|w| w.name == wave) {
        bail!("--wave: Rollout {name} has no wave {wave:?}");
    }
    Ok(wave)
}

/// The rollout `name` and the wave a command is about.
async fn at_wave(
    name: &str,
    wave: Option<String>,
    kubeconfig: Option<PathBuf>,
) -> anyhow::Result<(Api<Rollout>, Rollout, String)> {
    let api = rollouts(kubeconfig.as_ref()).await?;
    let rollout = get(&api, name).await?;
    let wave = wave_of(&rollout, wave)?;
    Ok((api, rollout, wave))
}

async fn plan(
    name: &str,
    wave: Option<String>,
    kubeconfig: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let (_, rollout, wave) = at_wave(name, wave, kubeconfig).await?;
    let s = rollout.status.clone().unwrap_or_default();
    let shown = s.waves.iter().find(|w| w.name == wave);
    println!("Rollout {name}, wave {wave}:");
    for m in s.clusters.iter().filter(|m| m.wave == wave) {
        match &m.plan {
            Some(plan) => println!(
                "  {}: {}{}\n    {}",
                m.name,
                plan.digest,
                if plan.approved { " (approved)" } else { "" },
                plan.summary
            ),
            None => println!("  {}: no plan shown ({}: {})", m.name, m.state, m.message),
        }
    }
    match shown.and_then(|w| w.plan_digest.clone()) {
        Some(digest) => {
            println!("wave digest: {digest}");
            if shown.and_then(|w| w.approved_plan.as_deref()) == Some(digest.as_str()) {
                println!("approved");
            } else {
                println!(
                    "approve with: windlass fleet approve {name} --wave {wave} --plan {digest}"
                );
            }
        }
        None => println!("the wave has no digest yet: every member must show its plan first"),
    }
    Ok(ExitCode::SUCCESS)
}

async fn approve(
    name: &str,
    digest: &str,
    wave: Option<String>,
    kubeconfig: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let (api, rollout, wave) = at_wave(name, wave, kubeconfig).await?;
    let shown = rollout
        .status
        .as_ref()
        .and_then(|s| s.waves.iter().find(|w| w.name == wave))
        .and_then(|w| w.plan_digest.clone());
    match shown {
        Some(shown) if shown == digest => {}
        Some(shown) => bail!(
            "--plan: wave {wave} of Rollout {name} waits with {shown}, not {digest}: a member's plan changed; run windlass fleet plan {name} again"
        ),
        None => bail!("wave {wave} of Rollout {name} shows no plan yet"),
    }
    let mut approvals = rollout.spec.approvals.clone();
    if approvals.iter().any(|a| a.wave == wave && a.plan == digest) {
        println!("wave {wave} of Rollout {name} is already approved with {digest}");
        return Ok(ExitCode::SUCCESS);
    }
    approvals.push(WaveApproval {
        wave: wave.clone(),
        plan: digest.into(),
    });
    // Guarded by the resourceVersion read: an approval written meanwhile is not lost.
    let patch = json!({
        "metadata": { "resourceVersion": rollout.metadata.resource_version },
        "spec": { "approvals": approvals },
    });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("approving wave {wave} of Rollout {name}"))?;
    println!("approved wave {wave} of Rollout {name}: {digest}");
    Ok(ExitCode::SUCCESS)
}

async fn rollback(
    name: &str,
    force: bool,
    kubeconfig: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let api = rollouts(kubeconfig.as_ref()).await?;
    let rollout = get(&api, name).await?;
    let patch = json!({ "spec": { "rollback": true, "forceRollback": force } });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("asking Rollout {name} to roll back"))?;
    let status = rollout.status.unwrap_or_default();
    let changed: Vec<String> = status
        .clusters
        .iter()
        .filter(|m| !matches!(m.state.as_str(), "Pending" | "Untouched"))
        .map(|m| match &m.previous {
            Some(previous) => format!("{} -> {previous}", m.name),
            None => format!(
                "{} (installed by this rollout: nothing to roll back to)",
                m.name
            ),
        })
        .collect();
    println!(
        "Rollout {name} rolls back: {}",
        if changed.is_empty() {
            "no member was changed".to_string()
        } else {
            changed.join(", ")
        }
    );
    println!("follow it with: windlass fleet status {name}");
    Ok(ExitCode::SUCCESS)
}
