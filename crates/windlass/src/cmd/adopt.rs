//! `windlass adopt olm`: take over operators OLM v0 installed, in place.
//!
//! Nothing is deleted or restarted. windlass writes a Catalog for the CatalogSource and a
//! Subscription starting at the running CSV, under Manual approval; the adopting revision's
//! plan (a server-side dry run of everything it would apply over what runs) is checked for
//! changes that would restart or reschedule the operator's pods, and only then do the objects
//! change hands (owner references, labels, annotations) and the plan get approved. What OLM
//! must let go of is printed first, and what to delete once windlass runs the operator last.

use std::{path::PathBuf, process::ExitCode, time::Duration};

use anyhow::{Context as _, bail};
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use windlass_adopt::{Adoption, OlmInstall, text::render};
use windlass_api::{
    Blueprint, Catalog, Subscription,
    blueprint::BlueprintPhase,
    catalog::CatalogPhase,
    names::{CLI_FIELD_MANAGER, conditions, reasons},
};

use super::adopt_read::{adopted_from, olm_subscriptions, read_install, resource};
use super::lifecycle::runtime;
use super::plan::{read_plan, wait_applied};

#[derive(clap::Subcommand)]
pub enum AdoptCommand {
    /// Take over operators OLM v0 installed, without restarting them: windlass's Catalog,
    /// Subscription, Blueprint revision and CSV describe what runs, and OLM is told what to
    /// let go of.
    Olm(OlmArgs),
    /// Take over an operator a Helm release installed, without restarting it, as the windlass
    /// Subscription of the same operator's bundle from a Catalog; Helm's history is kept on the
    /// Subscription, and Helm is told how to forget the release without deleting anything.
    Helm(super::adopt_helm::HelmArgs),
}

#[derive(clap::Args)]
pub struct OlmArgs {
    /// One OLM Subscription; every one in the namespace when omitted.
    pub subscription: Option<String>,
    #[arg(short, long, env = "WINDLASS_NAMESPACE", default_value = "default")]
    pub namespace: String,
    /// Every OLM Subscription in the cluster.
    #[arg(short = 'A', long, conflicts_with = "subscription")]
    pub all_namespaces: bool,
    /// The catalog images' registry talks plain HTTP (local and test registries).
    #[arg(long)]
    pub plain_http: bool,
    #[command(flatten)]
    pub common: Common,
}

/// What every adoption takes.
#[derive(clap::Args)]
pub struct Common {
    /// Print what would be taken over, replaced and let go of, the differences found and what
    /// cannot be adopted; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// `text`, or the adoption plans as `json` or `yaml`.
    #[arg(short = 'o', long, default_value = "text", value_parser = ["text", "json", "yaml"])]
    pub output: String,
    /// Adopt even when the plan would change the operator's pods (they restart).
    #[arg(long)]
    pub allow_restart: bool,
    /// How long to wait for each step (the Catalog, the plan, the adopting revision), in
    /// seconds.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
}

pub fn run(command: AdoptCommand) -> anyhow::Result<ExitCode> {
    match command {
        AdoptCommand::Olm(args) => runtime()?.block_on(olm(args)),
        AdoptCommand::Helm(args) => runtime()?.block_on(super::adopt_helm::helm(args)),
    }
}

async fn olm(args: OlmArgs) -> anyhow::Result<ExitCode> {
    let client = crate::manager::client(args.common.kubeconfig.as_ref()).await?;
    let scope = (!args.all_namespaces).then_some(args.namespace.as_str());
    // Every namespace's Subscriptions tell whether a CatalogSource is still used elsewhere;
    // someone allowed only one namespace is told to keep it.
    let (everywhere, partial) = match olm_subscriptions(&client, None).await {
        Ok(all) => (all, false),
        Err(_) if scope.is_some() => (olm_subscriptions(&client, scope).await?, true),
        Err(error) => return Err(error),
    };
    let chosen: Vec<&DynamicObject> = everywhere
        .iter()
        .filter(|s| scope.is_none_or(|ns| s.namespace().as_deref() == Some(ns)))
        .filter(|s| {
            args.subscription
                .as_ref()
                .is_none_or(|n| s.name_any() == *n)
        })
        .collect();
    if chosen.is_empty() {
        bail!(
            "no OLM Subscription {}{}",
            args.subscription
                .as_ref()
                .map_or(String::new(), |n| format!("{n} ")),
            scope.map_or("in the cluster".into(), |ns| format!("in namespace {ns}"))
        );
    }
    let mut adoptions = Vec::new();
    for subscription in chosen {
        let mut install: OlmInstall =
            read_install(&client, subscription, &everywhere, args.plain_http).await?;
        if partial {
            install.others_on_catalog_source += 1;
        }
        adoptions.push(windlass_adopt::plan(&install));
    }
    finish(&client, &adoptions, &args.common).await
}

/// Prints the adoptions, then carries them out unless one is blocked or it is a dry run.
pub(crate) async fn finish(
    client: &Client,
    adoptions: &[Adoption],
    common: &Common,
) -> anyhow::Result<ExitCode> {
    match common.output.as_str() {
        "json" => println!("{}", serde_json::to_string_pretty(adoptions)?),
        "yaml" => print!("{}", serde_saphyr::to_string(&adoptions)?),
        _ => {
            for adoption in adoptions {
                println!("{}", render(adoption));
            }
        }
    }
    let blocked = adoptions.iter().filter(|a| !a.blockers.is_empty()).count();
    if blocked > 0 {
        eprintln!(
            "error: {blocked} of {} install(s) cannot be adopted as they stand (see \
             \"Cannot adopt\"); nothing was written",
            adoptions.len()
        );
        return Ok(ExitCode::FAILURE);
    }
    if common.dry_run {
        return Ok(ExitCode::SUCCESS);
    }
    for adoption in adoptions {
        adopt(client, adoption, common)
            .await
            .with_context(|| format!("adopting {}/{}", adoption.namespace, adoption.name))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn cli_params() -> PatchParams {
    PatchParams {
        field_manager: Some(CLI_FIELD_MANAGER.into()),
        ..Default::default()
    }
}

/// Adopts one OLM Subscription whose plan has no blockers, in the order the module says.
async fn adopt(client: &Client, adoption: &Adoption, args: &Common) -> anyhow::Result<()> {
    let timeout = Duration::from_secs(args.timeout);
    let ns = adoption.namespace.as_str();
    println!("Adopting {ns}/{} ({}):", adoption.name, adoption.csv);
    ensure_catalog(client, adoption, timeout).await?;

    // The CRDs and the bundle's objects change hands first: the Blueprint checks who manages
    // them before it plans.
    let handed: Vec<&windlass_adopt::TakeOver> = adoption
        .take_over
        .iter()
        .filter(|t| t.hands_over())
        .collect();
    for (done, take) in handed.iter().enumerate() {
        if let Err(error) = patch_metadata(client, &take.object, &take.patch).await {
            undo(client, adoption, &handed[..done], false).await;
            return Err(error);
        }
        println!("  handed over {}", take.object);
    }

    let subscriptions = Api::<Subscription>::namespaced(client.clone(), ns);
    let origin = adoption.origin.clone();
    let created = match subscriptions.get_opt(&adoption.name).await? {
        Some(existing) if existing.metadata.deletion_timestamp.is_some() => bail!(
            "the windlass Subscription {ns}/{} is being deleted; run this again once it is gone",
            adoption.name
        ),
        Some(existing) if adopted_from(&existing.metadata) == Some(origin.as_str()) => {
            // Anyone who may write Subscriptions here could have made this one: go on only if
            // it asks for what this adoption would, or its plan would be approved unseen.
            let differs = spec_differences(&existing, &adoption.subscription["spec"])?;
            if !differs.is_empty() {
                bail!(
                    "the windlass Subscription {ns}/{} says it was made by adopting {origin}, \
                     but its spec differs from what adoption writes ({}); remove it and run \
                     this again",
                    adoption.name,
                    differs.join(", ")
                );
            }
            println!(
                "  windlass Subscription {ns}/{} exists from an earlier run; going on",
                adoption.name
            );
            false
        }
        Some(_) => bail!(
            "a windlass Subscription {ns}/{} already exists and was not made by adopting {origin}; \
             rename or remove it first",
            adoption.name
        ),
        None => {
            let subscription: Subscription = serde_json::from_value(adoption.subscription.clone())
                .context("the Subscription adoption planned does not read as one")?;
            subscriptions
                .create(
                    &PostParams {
                        field_manager: Some(CLI_FIELD_MANAGER.into()),
                        ..Default::default()
                    },
                    &subscription,
                )
                .await
                .context("creating the windlass Subscription")?;
            println!(
                "  created windlass Subscription {ns}/{} at {} (Manual until adopted)",
                adoption.name, adoption.csv
            );
            true
        }
    };

    let blueprints = Api::<Blueprint>::namespaced(client.clone(), ns);
    let revision = match wait_for_plan(&blueprints, &subscriptions, adoption, timeout).await {
        Ok(Waited::Plan(revision)) => Some(revision),
        Ok(Waited::Running) => None,
        Err(error) => {
            undo(client, adoption, &handed, created).await;
            return Err(error);
        }
    };
    if let Some(revision) = revision {
        let blueprint = blueprints.get(&adoption.name).await?;
        let plan = read_plan(&blueprints, &blueprint, Some(revision)).await?;
        let mut refusal = Vec::new();
        if plan.to.cluster_service_version_name != adoption.csv {
            refusal.push(format!(
                "windlass resolved {}, not the running {}",
                plan.to.cluster_service_version_name, adoption.csv
            ));
        }
        let restarts = windlass_adopt::restarts::restarts(&plan.objects);
        if !restarts.is_empty() && !args.allow_restart {
            refusal.extend(restarts);
        }
        if !refusal.is_empty() {
            undo(client, adoption, &handed, created).await;
            bail!(
                "the adopting plan {} would change what runs, so nothing was taken over (the \
                 Subscription made for it is removed again; --allow-restart adopts anyway):\n  - {}",
                plan.digest,
                refusal.join("\n  - ")
            );
        }
        println!("  plan {} changes no pod", plan.digest);
        // What the bundle does not ship stays with the tool that made it, named.
        let outside =
            windlass_adopt::restarts::outside_plan(&adoption.take_over, &plan.objects, &plan.crds);
        for take in &outside {
            if take.hands_over() {
                patch_metadata(client, &take.object, &take.undo).await?;
            }
            println!(
                "  left alone {}: the bundle does not ship it, so windlass would not manage it; \
                 delete it once windlass runs the operator if nothing else needs it",
                take.object
            );
        }
        let is_outside =
            |take: &windlass_adopt::TakeOver| outside.iter().any(|o| o.object == take.object);
        for take in adoption
            .take_over
            .iter()
            .filter(|t| !t.hands_over() && !is_outside(t))
        {
            patch_metadata(client, &take.object, &take.patch).await?;
            println!("  took over {}", take.object);
        }
        blueprints
            .patch(
                &adoption.name,
                &cli_params(),
                &Patch::Merge(json!({"spec": {"approved": true, "approvedPlan": plan.digest}})),
            )
            .await
            .context("approving the adopting plan")?;
        wait_applied(&blueprints, &adoption.name, revision, timeout).await?;
    } else {
        // An earlier run approved the plan and stopped before all of it changed hands.
        for take in adoption.take_over.iter().filter(|t| !t.hands_over()) {
            patch_metadata(client, &take.object, &take.patch).await?;
        }
    }
    if adoption.approval != "Manual" {
        subscriptions
            .patch(
                &adoption.name,
                &cli_params(),
                &Patch::Merge(json!({"spec": {"approval": adoption.approval}})),
            )
            .await
            .context("giving the Subscription back its approval")?;
    }
    println!(
        "windlass runs {} in {ns} now (approval {}). Let OLM go, in this order:",
        adoption.csv, adoption.approval
    );
    for step in &adoption.let_go {
        println!("  {step}");
    }
    Ok(())
}

async fn ensure_catalog(
    client: &Client,
    adoption: &Adoption,
    timeout: Duration,
) -> anyhow::Result<()> {
    let catalogs = Api::<Catalog>::all(client.clone());
    let name = &adoption.catalog.name;
    if let Some(create) = &adoption.catalog.create
        && catalogs.get_opt(name).await?.is_none()
    {
        let catalog: Catalog = serde_json::from_value(create.clone())
            .context("the planned Catalog does not read as one")?;
        catalogs
            .create(
                &PostParams {
                    field_manager: Some(CLI_FIELD_MANAGER.into()),
                    ..Default::default()
                },
                &catalog,
            )
            .await
            .with_context(|| format!("creating Catalog {name}"))?;
        println!("  created Catalog {name}");
    }
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let catalog = catalogs.get(name).await?;
        let status = catalog.status.unwrap_or_default();
        if status.phase == Some(CatalogPhase::Serving) {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            let said: Vec<String> = status
                .conditions
                .iter()
                .map(|c| format!("{}={:?} {}: {}", c.type_, c.status, c.reason, c.message))
                .collect();
            bail!(
                "Catalog {name} is not serving after {}s: {}",
                timeout.as_secs(),
                if said.is_empty() {
                    "no status yet".into()
                } else {
                    said.join("; ")
                }
            );
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The fields of `planned` (a Subscription spec) that `existing` has otherwise; approval is
/// left out, as adoption changes it itself.
fn spec_differences(existing: &Subscription, planned: &Value) -> anyhow::Result<Vec<String>> {
    let existing = serde_json::to_value(&existing.spec)?;
    let mut differs = Vec::new();
    for (key, value) in planned.as_object().into_iter().flatten() {
        if key != "approval" && existing.get(key) != Some(value) {
            differs.push(format!("spec.{key}"));
        }
    }
    Ok(differs)
}

enum Waited {
    /// The adopting revision's plan is there, waiting for approval.
    Plan(i64),
    /// windlass already runs the CSV (an earlier run got that far).
    Running,
}

async fn wait_for_plan(
    blueprints: &Api<Blueprint>,
    subscriptions: &Api<Subscription>,
    adoption: &Adoption,
    timeout: Duration,
) -> anyhow::Result<Waited> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(blueprint) = blueprints.get_opt(&adoption.name).await? {
            let status = blueprint.status.clone().unwrap_or_default();
            let started = |revision: i64| {
                status
                    .history
                    .iter()
                    .any(|r| r.revision == revision && r.started_time.is_some())
            };
            if status.phase == Some(BlueprintPhase::Succeeded)
                && blueprint.spec.cluster_service_version_name == adoption.csv
            {
                return Ok(Waited::Running);
            }
            if let Some(preview) = &status.preview
                && preview.revision == blueprint.spec.revision
                && !started(preview.revision)
            {
                return Ok(Waited::Plan(preview.revision));
            }
            if status.phase == Some(BlueprintPhase::Failed) {
                bail!(
                    "Blueprint {} failed: {}",
                    adoption.name,
                    said(&status.conditions)
                );
            }
        }
        // A starting CSV the catalog does not have will not appear by waiting.
        let sub = subscriptions.get_opt(&adoption.name).await?;
        let not_found = sub.as_ref().and_then(|s| s.status.as_ref()).and_then(|s| {
            s.conditions.iter().find(|c| {
                c.type_ == conditions::subscription::RESOLUTION_SUCCEEDED
                    && c.reason == reasons::resolution::STARTING_CSV_NOT_FOUND
            })
        });
        if let Some(condition) = not_found {
            bail!(
                "{} (the running version must be in the catalog; name its CSV with --csv)",
                condition.message
            );
        }
        if tokio::time::Instant::now() > deadline {
            let blueprint = blueprints.get_opt(&adoption.name).await?;
            bail!(
                "no plan to check after {}s; Subscription: {}; Blueprint: {}",
                timeout.as_secs(),
                sub.and_then(|s| s.status)
                    .map_or("no status".into(), |s| said(&s.conditions)),
                blueprint
                    .and_then(|b| b.status)
                    .map_or("none yet".into(), |s| said(&s.conditions))
            );
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn said(conditions: &[windlass_api::Condition]) -> String {
    let lines: Vec<String> = conditions
        .iter()
        .map(|c| format!("{}={:?} ({}): {}", c.type_, c.status, c.reason, c.message))
        .collect();
    if lines.is_empty() {
        "no conditions".into()
    } else {
        lines.join("; ")
    }
}

/// Puts back what adoption wrote before it found it could not go on: the Subscription it
/// created and the objects it handed over. Best effort: each failure is told, none hides the
/// reason adoption stopped.
async fn undo(
    client: &Client,
    adoption: &Adoption,
    handed: &[&windlass_adopt::TakeOver],
    created: bool,
) {
    if created {
        let subscriptions = Api::<Subscription>::namespaced(client.clone(), &adoption.namespace);
        if let Err(error) = subscriptions
            .delete(&adoption.name, &DeleteParams::default())
            .await
        {
            eprintln!("  could not remove the windlass Subscription again: {error}");
        }
    }
    for take in handed {
        if let Err(error) = patch_metadata(client, &take.object, &take.undo).await {
            eprintln!("  could not give {} back: {error:#}", take.object);
        }
    }
}

async fn patch_metadata(
    client: &Client,
    object: &windlass_adopt::ObjectKey,
    patch: &Value,
) -> anyhow::Result<()> {
    let plural = plural_of(&object.kind);
    let resource = resource(&object.api_version, &object.kind, &plural);
    let api: Api<DynamicObject> = match &object.namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    api.patch(&object.name, &cli_params(), &Patch::Merge(patch))
        .await
        .map(|_| ())
        .map_err(|error| match error {
            kube::Error::Api(status) if status.code == 409 => anyhow::anyhow!(
                "{object} changed since it was read; run `windlass adopt olm` again"
            ),
            error => anyhow::Error::new(error).context(format!("changing the owner of {object}")),
        })
}

/// The resource name of the kinds adoption touches.
fn plural_of(kind: &str) -> String {
    let lower = kind.to_lowercase();
    if lower.ends_with('s') {
        format!("{lower}es")
    } else if lower.ends_with('y') {
        format!("{}ies", &lower[..lower.len() - 1])
    } else {
        format!("{lower}s")
    }
}
