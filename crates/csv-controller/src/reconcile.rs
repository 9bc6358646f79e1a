//! The reconciler: dereference -> check requirements -> build -> apply -> observe health ->
//! update status. Every write goes through one field manager and is skipped when nothing changed.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
    time::{Duration, Instant},
};

use k8s_openapi::{
    api::{apps::v1::Deployment, core::v1::Secret},
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::{SignedDuration, Timestamp},
};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{Patch, PatchParams},
    runtime::{
        WatchStreamExt,
        controller::Action,
        reflector::{self, ObjectRef, Store, reflector},
        watcher::{self, watcher},
    },
};
use serde_json::{Value, json};
use tracing::info;
use windlass_api::{
    Blueprint, ClusterServiceVersion, CsvPhase, FIELD_MANAGER, InstallPolicy,
    condition::{Condition, ConditionStatus, set_condition},
    config::DEFAULT_PROGRESS_DEADLINE_SECONDS,
    csv::ObjectReference,
    names::{annotations, conditions, controllers, finalizers, labels, reasons},
    policy::ClusterScopedGrant,
};
use windlass_bundle::csv::ClusterServiceVersion as OlmCsv;
use windlass_kit::{
    Applied, Applier, ApplyError, Identities, ListFloor, Metrics, Notice, ObjectKey, OwnWrites,
    ProgressHold, ReconcileError, Scope, Shell, Stage,
    runner::{self, FromFinalizerError},
    status,
    synced::{NotSynced, synced},
};
use windlass_revisions::SealKey;

use futures::StreamExt;

use crate::{
    certs::{self, WebhookCa},
    desired::{self, DesiredObject, InstallContext},
    memo::Memo,
    phase::{self, Inputs},
    requirements::{self, Observed},
    webhooks,
};

mod authority;
mod cluster_state;
mod removal;
mod trust;

use cluster_state::{Source, find_successor, observe, observe_health};
use removal::{cleanup, may_have_unwanted, prune};
use trust::{refuse_untrusted, seal_refusal, trusted, verify_seal};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("reading {what}: {source}")]
    Read { what: String, source: kube::Error },
    #[error(transparent)]
    Apply(#[from] ApplyError),
    #[error("removing {what}: {source}")]
    Cleanup { what: String, source: ApplyError },
    #[error("writing the status of {name}: {source}")]
    Status { name: String, source: kube::Error },
    #[error("{0}")]
    Certificate(#[from] certs::CertError),
    #[error("finalizer of {object}: {message}")]
    Finalizer { object: String, message: String },
    #[error(transparent)]
    NotSynced(#[from] NotSynced),
}

impl ReconcileError for Error {
    fn stage(&self) -> Stage {
        match self {
            Error::Read { .. } | Error::NotSynced(_) => Stage::Read,
            Error::Apply(_) => Stage::Apply,
            Error::Certificate(_) => Stage::Build,
            Error::Status { .. } => Stage::Report,
            Error::Cleanup { .. } | Error::Finalizer { .. } => Stage::Cleanup,
        }
    }

    fn is_conflict(&self) -> bool {
        match self {
            Error::Apply(e) | Error::Cleanup { source: e, .. } => e.is_conflict(),
            Error::Status { source, .. } => matches!(source, kube::Error::Api(s) if s.code == 409),
            _ => false,
        }
    }
}

impl FromFinalizerError for Error {
    fn from_finalizer(object: String, message: String) -> Self {
        Error::Finalizer { object, message }
    }
}

/// What every reconcile shares.
pub struct Context {
    pub shell: Shell,
    pub applier: Applier,
    /// The apiserver's version, read once at start.
    pub server_version: Option<semver::Version>,
    /// The manager's sealing key: only CSVs sealed with it are acted on.
    pub seal_key: SealKey,
    /// The manager's webhook CA: what webhook configurations and CRD conversions trust.
    pub webhook_ca: WebhookCa,
    /// Every Blueprint in scope, trimmed to its identity and revision: whose CSVs are current.
    pub blueprints: Store<Blueprint>,
    /// The InstallPolicies: whether the one that permitted a CSV is as it was.
    pub policies: Store<InstallPolicy>,
    /// Clients acting as the CSVs' install ServiceAccounts.
    pub identities: Identities,
    /// Every CSV in scope (this controller's cache).
    pub csvs: Store<ClusterServiceVersion>,
    /// Every CRD, without schemas: what requirements read.
    pub crds: Store<CustomResourceDefinition>,
    /// The Deployments windlass manages, without pod templates: what health reads.
    pub deployments: Store<Deployment>,
    /// What this process last applied for each CSV.
    pub memo: Memo,
    /// The newest version of pods listed: a rollout's pods are read from the API server's
    /// cache, a moment behind at most (the Deployment's own status settles its health).
    pub pod_lists: ListFloor,
    /// This controller's last status write of each CSV, until the cache shows it.
    pub own_writes: OwnWrites,
    /// When this controller last wrote each CSV's status: a reworded message waits a moment.
    pub progress: ProgressHold,
}

/// The keys the controller checks and signs with, both from the manager's namespace.
pub struct Keys {
    /// Only CSVs sealed with it are acted on; leaf certificate Secrets are sealed with it.
    pub seal_key: SealKey,
    /// Signs webhook serving certificates.
    pub webhook_ca: WebhookCa,
}

/// Runs the controller over `scope` until `shutdown` resolves.
pub async fn run(
    client: Client,
    identities: Identities,
    scope: Scope,
    keys: Keys,
    metrics: Arc<dyn Metrics>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let Keys {
        seal_key,
        webhook_ca,
    } = keys;
    let server_version = client
        .apiserver_version()
        .await
        .ok()
        .and_then(|info| requirements::parse_kube_version(&info.git_version));
    let csvs = scope.api::<ClusterServiceVersion>(&client);
    let deployments = scope.api::<Deployment>(&client);
    // One watch for the CSVs and the predecessors their changes wake: a predecessor's
    // reconcile reads its successor from the cache, which must already hold the change.
    let runner::SharedController {
        controller,
        mut subscribers,
        watch,
    } = runner::shared_controller_for(csvs, watcher::Config::default(), 1);
    let successor_changes = subscribers.pop().expect("one subscriber was asked for");
    let (crds, crd_writer) = reflector::store::<CustomResourceDefinition>();
    // Requirements are read from this cache, and a CRD's change (Established, say) wakes the
    // CSVs naming it, instead of each reconcile reading every CRD it names.
    let crd_changes = reflector(
        crd_writer,
        watcher(Api::all(client.clone()), watcher::Config::default())
            .modify(cluster_state::trim_crd),
    )
    .touched_objects();
    let managed = format!("{}={}", labels::MANAGED_BY, labels::MANAGED_BY_VALUE);
    let (deployment_cache, deployment_writer) = reflector::store::<Deployment>();
    // Health is judged from this cache once it shows the generation an apply left; it is
    // written before the change that wakes the CSV is passed on, so a reconcile woken by a
    // Deployment never reads it older than that change.
    let deployment_changes = reflector(
        deployment_writer,
        watcher(deployments, watcher::Config::default().labels(&managed))
            .default_backoff()
            .modify(cluster_state::trim_deployment),
    )
    .touched_objects();
    // Caches only: a CSV's Blueprint or policy changing makes the Blueprint apply it again.
    let (blueprints, blueprint_writer) = reflector::store::<Blueprint>();
    tokio::spawn(
        reflector(
            blueprint_writer,
            watcher(scope.api::<Blueprint>(&client), watcher::Config::default())
                .default_backoff()
                .modify(authority::trim_blueprint),
        )
        .for_each(|_| futures::future::ready(())),
    );
    let (policies, policy_writer) = reflector::store::<InstallPolicy>();
    tokio::spawn(
        reflector(
            policy_writer,
            watcher(Api::all(client.clone()), watcher::Config::default()).default_backoff(),
        )
        .for_each(|_| futures::future::ready(())),
    );
    let naming = controller.store();
    let ctx = Arc::new(Context {
        webhook_ca,
        blueprints,
        policies,
        applier: Applier::new(client.clone()),
        shell: Shell::new(client, scope, controllers::CLUSTER_SERVICE_VERSION, metrics),
        server_version,
        seal_key,
        identities,
        csvs: controller.store(),
        crds,
        deployments: deployment_cache,
        memo: Memo::default(),
        pod_lists: ListFloor::default(),
        own_writes: OwnWrites::default(),
        progress: ProgressHold::default(),
    });
    let results = controller
        .owns_stream(deployment_changes)
        .watches_stream(crd_changes, move |crd: CustomResourceDefinition| {
            cluster_state::naming(&naming, &crd.name_any())
        })
        // A successor's progress decides the fate of the CSV it supersedes.
        .watches_shared_stream(successor_changes, |csv| {
            let namespace = csv.namespace()?;
            csv.spec
                .supersedes
                .as_ref()
                .map(|old| ObjectRef::new(old).within(&namespace))
        })
        .graceful_shutdown_on(shutdown)
        .run(
            |csv, ctx: Arc<Context>| async move {
                runner::observed(
                    ctx.shell.metrics.as_ref(),
                    csv.as_ref(),
                    Box::pin(reconcile(csv.clone(), ctx.clone())),
                )
                .await
            },
            runner::error_policy,
            ctx,
        );
    runner::drain_with(watch, results).await;
}

pub async fn reconcile(
    csv: Arc<ClusterServiceVersion>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    // The status this controller last wrote is on its way back through the watch, and wakes
    // the CSV again once the cache holds it: decided now, from the state before it, the same
    // status would be written a second time.
    if !ctx.own_writes.shown_in(csv.as_ref()) {
        return Ok(Action::await_change());
    }
    let namespace = csv.namespace().unwrap_or_default();
    let api = Api::<ClusterServiceVersion>::namespaced(ctx.shell.client.clone(), &namespace);
    let ctx = &*ctx;
    runner::with_finalizer(
        &api,
        finalizers::CSV_CLEANUP,
        csv,
        |csv| async move { install(&csv, ctx).await },
        |csv| async move {
            let uid = csv.uid().unwrap_or_default();
            ctx.memo.forget(&uid);
            ctx.progress.forget(&uid);
            release_conversions(ctx, &csv).await?;
            cleanup(&csv, ctx).await
        },
    )
    .await
}

/// Writes `new_status` when it differs from `status`, and remembers the write (see
/// `own_writes`). A change of messages alone written moments ago waits, and so does a `step`
/// into Installing ([`phase::is_first_step`]): the time to come back is returned
/// ([`ProgressHold`]).
async fn write_status(
    ctx: &Context,
    csv: &ClusterServiceVersion,
    status: &windlass_api::ClusterServiceVersionStatus,
    new_status: &windlass_api::ClusterServiceVersionStatus,
    step: bool,
) -> Result<Option<Duration>, Error> {
    if new_status == status {
        return Ok(None);
    }
    let uid = csv.uid().unwrap_or_default();
    let now = std::time::Instant::now();
    let wait = if step {
        ctx.progress.wait_for_step(&uid, now)
    } else {
        ctx.progress.wait(&uid, status, new_status, now)
    };
    if let Some(wait) = wait {
        return Ok(Some(wait));
    }
    let name = csv.name_any();
    let written = status::apply_status(&csv_api(&ctx.shell.client, csv), &name, new_status, None)
        .await
        .map_err(|source| Error::Status { name, source })?;
    ctx.own_writes.wrote(&written);
    ctx.progress.wrote(&uid, now);
    Ok(None)
}

fn csv_api(client: &Client, csv: &ClusterServiceVersion) -> Api<ClusterServiceVersion> {
    Api::namespaced(client.clone(), &csv.namespace().unwrap_or_default())
}

fn owner_reference(csv: &ClusterServiceVersion) -> Value {
    json!({
        "apiVersion": ClusterServiceVersion::api_version(&()),
        "kind": ClusterServiceVersion::kind(&()),
        "name": csv.name_any(),
        "uid": csv.uid().unwrap_or_default(),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

async fn install(csv: &ClusterServiceVersion, ctx: &Context) -> Result<Action, Error> {
    let client = &ctx.shell.client;
    let name = csv.name_any();
    let namespace = csv.namespace().unwrap_or_default();
    let status = csv.status.clone().unwrap_or_default();
    let now = Timestamp::now();

    // Only what a Blueprint applied is acted on: the spec grants RBAC and runs Deployments.
    if let Err(error) = verify_seal(csv, &ctx.seal_key) {
        return refuse_untrusted(csv, ctx, &status, seal_refusal(csv, &error), now).await;
    }

    // Dereference: the OLM definition, a successor, the cluster's APIs. Before the caches
    // listed, a successor or a Deployment not listed yet would look missing.
    synced(&ctx.csvs, "ClusterServiceVersion").await?;
    synced(&ctx.deployments, "Deployment").await?;
    synced(&ctx.blueprints, "Blueprint").await?;
    synced(&ctx.policies, "InstallPolicy").await?;
    // ... and only while what it was applied under still holds.
    if let Err(lacking) = authority::check(csv, ctx).await? {
        return refuse_untrusted(csv, ctx, &status, (lacking.reason, lacking.message), now).await;
    }
    let definition = OlmCsv::from_value(&csv.spec.definition.to_value());
    let successor = find_successor(&ctx.csvs, &namespace, &name);
    let (observed, invalid) = match &definition {
        Ok(def) => (
            observe(client, &ctx.crds, def, ctx.server_version.clone()).await?,
            None,
        ),
        Err(e) => (Observed::default(), Some(format!("spec.definition.{e}"))),
    };
    let statuses = definition
        .as_ref()
        .map(|d| requirements::check(d, &observed))
        .unwrap_or_default();
    let mut inputs = Inputs {
        current: status.phase,
        current_reason: &status.reason,
        new_generation: status.observed_generation.is_some()
            && status.observed_generation != csv.metadata.generation,
        successor,
        requirements_unmet: requirements::unmet_summary(&statuses),
        invalid_strategy: invalid,
        forbidden: None,
        health: None,
        install_started: status.install_start_time.as_ref().map(|t| t.0),
        now,
        deadline: SignedDuration::from_secs(
            csv.spec
                .progress_deadline_seconds
                .unwrap_or(DEFAULT_PROGRESS_DEADLINE_SECONDS),
        ),
    };

    // Build and apply, then observe health; soon after an apply of this generation, only
    // health (see `memo`).
    let uid = csv.uid().unwrap_or_default();
    let mut external = Vec::new();
    let mut applied = false;
    // CRDs whose conversion another install's webhook serves, for the status.
    let mut conversion_elsewhere: Vec<String> = Vec::new();
    let mut conversions_judged = false;
    // One waiting for another install's conversion webhook applies again each time: that
    // install going away is what it waits for.
    let waits_for_conversion = condition_is(
        &status.conditions,
        conditions::csv::CONVERSION_SERVED,
        ConditionStatus::False,
    );
    if let (true, Ok(def)) = (phase::should_apply(&inputs), &definition)
        && !waits_for_conversion
        && let Some(expected) = ctx
            .memo
            .applied(&uid, csv.metadata.generation, Instant::now())
    {
        let source = Source::Cache {
            store: &ctx.deployments,
            expected: &expected,
        };
        let (health, deployments) =
            observe_health(client, &ctx.pod_lists, source, &namespace, def).await?;
        if let Some(remembered) = ctx.memo.unchanged(&uid, &deployments) {
            external = remembered;
            inputs.health = Some(health);
            applied = true;
            // The memo stands only for an apply whose conversions are all served here, and
            // the status says so again (the write that first said it may have been held).
            conversions_judged = true;
        }
    }
    if let (true, false, Ok(def)) = (phase::should_apply(&inputs), applied, &definition) {
        let image_rewrites: Vec<windlass_mirror::Rewrite> = csv
            .spec
            .image_rewrites
            .iter()
            .cloned()
            .map(Into::into)
            .collect();
        let ctx_install = InstallContext {
            csv_name: &name,
            namespace: &namespace,
            owner: owner_reference(csv),
            definition: def,
            target_namespaces: &csv.spec.target_namespaces,
            config: &csv.spec.config,
            image_rewrites: &image_rewrites,
            grants: csv
                .spec
                .grant
                .as_ref()
                .map_or(&[], |g| g.cluster_scoped.as_slice()),
        };
        match build_all(ctx, &ctx_install, now).await {
            Ok((objects, conversions)) => {
                // Namespaced objects as the install identity, so the API server refuses what
                // it could not create or grant; cluster-scoped ones (which the namespace's
                // policies granted) as the manager. Removal stays with the manager: it only
                // ever removes what windlass created.
                let identity = install_identity(csv);
                let installer = ctx
                    .identities
                    .client_for(identity.as_deref())
                    .map(|client| ctx.applier.with_client(client))
                    .map_err(|source| Error::Read {
                        what: format!("a client acting as {identity:?}"),
                        source,
                    })?;
                // Edits of what windlass sets that the apply puts back, told once written.
                let mut repaired = Vec::new();
                for object in &objects {
                    // Fields the Subscription leaves to people are never applied.
                    let written = csv.spec.config.without_ignored(&object.object);
                    if object.namespace().is_none() {
                        if let Applied::Repaired(drift) = ctx.applier.apply(&written).await? {
                            repaired.push(drift);
                        }
                        continue;
                    }
                    match installer.apply(&written).await {
                        Ok(Applied::Repaired(drift)) => repaired.push(drift),
                        Ok(_) => {}
                        Err(error)
                            if error.is_forbidden()
                                && csv.spec.install_service_account.is_some() =>
                        {
                            inputs.forbidden = Some(
                                error
                                    .api_message()
                                    .map_or_else(|| error.to_string(), str::to_string),
                            );
                            break;
                        }
                        Err(error) => return Err(error.into()),
                    }
                }
                for drift in &repaired {
                    info!(object = %drift.object, "put back fields someone else changed");
                    let notice = windlass_kit::repair_notice(drift);
                    ctx.shell
                        .events
                        .publish(&csv.object_ref(&()), &notice)
                        .await;
                }
                if inputs.forbidden.is_some() {
                    // Nothing more is applied or judged until the account may create it all.
                    external = objects.iter().filter(|o| !o.owned).map(reference).collect();
                } else {
                    for (crd, patch) in conversions {
                        let owner = format!("{namespace}/{name}");
                        if let Some(elsewhere) = patch_conversion(ctx, &crd, &patch, &owner).await?
                        {
                            conversion_elsewhere.push(elsewhere);
                        }
                    }
                    conversions_judged = true;
                    external = objects.iter().filter(|o| !o.owned).map(reference).collect();
                    if may_have_unwanted(csv) {
                        prune(&ctx.applier, csv, &objects).await?;
                    }
                    let (health, deployments) =
                        observe_health(client, &ctx.pod_lists, Source::Server, &namespace, def)
                            .await?;
                    inputs.health = Some(health);
                    ctx.memo.record(
                        &uid,
                        csv.metadata.generation,
                        external.clone(),
                        deployments,
                        !conversion_elsewhere.is_empty(),
                        Instant::now(),
                    );
                }
            }
            Err(message) => inputs.invalid_strategy = Some(message),
        }
    }

    let decision = phase::next(&inputs);
    let mut new_status = status.clone();
    new_status.requirements = statuses;
    if !external.is_empty() || phase::should_apply(&inputs) {
        external.sort();
        new_status.external_objects = external;
    }
    if decision.restart_clock
        || new_status.install_start_time.is_none() && decision.phase == CsvPhase::Installing
    {
        new_status.install_start_time = Some(Time(now));
    }
    let changed_phase = status.phase != Some(decision.phase);
    if changed_phase || status.reason != decision.reason {
        new_status.last_transition_time = Some(Time(now));
    }
    new_status.phase = Some(decision.phase);
    new_status.reason = decision.reason.to_string();
    new_status.message = decision.message.clone();
    new_status.observed_generation = csv.metadata.generation;
    let ready = if decision.phase == CsvPhase::Succeeded {
        ConditionStatus::True
    } else {
        ConditionStatus::False
    };
    set_condition(
        &mut new_status.conditions,
        Condition::new(
            conditions::csv::READY,
            ready,
            decision.reason,
            decision.message.clone(),
        )
        .observed(csv.metadata.generation),
        now,
    );
    set_condition(
        &mut new_status.conditions,
        trusted(csv.metadata.generation),
        now,
    );
    // A shared CRD converts through one install's webhook; the others say whose.
    if conversions_judged {
        let converts = definition
            .as_ref()
            .ok()
            .and_then(|_| csv.spec.definition.parse::<ConversionCrds>().ok())
            .is_some_and(|d| {
                d.spec
                    .webhookdefinitions
                    .iter()
                    .any(|w| w.type_ == webhooks::CONVERSION)
            });
        if conversion_elsewhere.is_empty() {
            if converts {
                set_condition(
                    &mut new_status.conditions,
                    Condition::new(
                        conditions::csv::CONVERSION_SERVED,
                        ConditionStatus::True,
                        reasons::csv::CONVERSION_SERVED_HERE,
                        "this install's webhook converts its CRDs for every namespace",
                    )
                    .observed(csv.metadata.generation),
                    now,
                );
            }
        } else {
            set_condition(
                &mut new_status.conditions,
                Condition::new(
                    conditions::csv::CONVERSION_SERVED,
                    ConditionStatus::False,
                    reasons::csv::CONVERSION_SERVED_ELSEWHERE,
                    conversion_elsewhere.join("; "),
                )
                .observed(csv.metadata.generation),
                now,
            );
        }
    }
    // What windlass changed to install a legacy bundle (converted CRDs and removed APIs) is
    // shown on the CSV, once as an Event and for good as a condition.
    let conversions_new = !csv.spec.conversions.is_empty()
        && set_condition(
            &mut new_status.conditions,
            Condition::new(
                conditions::csv::LEGACY_APIS_CONVERTED,
                ConditionStatus::True,
                reasons::csv::CONVERTED,
                csv.spec.conversions.join("; "),
            )
            .observed(csv.metadata.generation),
            now,
        );
    let step = phase::is_first_step(status.phase, &decision);
    let held = write_status(ctx, csv, &status, &new_status, step).await?;
    // A held status is not in the cluster yet, so neither is what its Events would tell; the
    // pass that writes it tells them.
    if conversions_new && held.is_none() {
        let note = format!(
            "installed with {} change(s) for this Kubernetes version: {}",
            csv.spec.conversions.len(),
            csv.spec.conversions.join("; ")
        );
        let notice = Notice::normal(conditions::csv::LEGACY_APIS_CONVERTED, note);
        ctx.shell
            .events
            .publish(&csv.object_ref(&()), &notice)
            .await;
    }
    if changed_phase && held.is_none() {
        let note = format!("{:?}: {}", decision.phase, decision.message);
        let notice = if decision.phase == CsvPhase::Failed {
            Notice::warning(decision.reason, note)
        } else {
            Notice::normal(decision.reason, note)
        };
        ctx.shell
            .events
            .publish(&csv.object_ref(&()), &notice)
            .await;
        info!(phase = ?decision.phase, reason = decision.reason, "phase changed");
    }

    let action = match decision.phase {
        CsvPhase::Deleting => {
            let key = ObjectKey {
                api_version: ClusterServiceVersion::api_version(&()).into_owned(),
                kind: ClusterServiceVersion::kind(&()).into_owned(),
                namespace: Some(namespace),
                name,
            };
            ctx.applier
                .delete(&key)
                .await
                .map_err(|source| Error::Cleanup {
                    what: key.to_string(),
                    source,
                })?;
            return Ok(Action::await_change());
        }
        // Come back before the deadline passes even if nothing else changes.
        CsvPhase::Installing | CsvPhase::InstallReady => Duration::from_secs(5),
        CsvPhase::Pending | CsvPhase::Replacing => Duration::from_secs(15),
        // Certificates are checked for rotation now and then; nothing is written unless due.
        _ => Duration::from_secs(3600),
    };
    // A held status is written when its hold ends, unless a change comes first.
    Ok(Action::requeue(
        held.map_or(action, |wait| wait.min(action)),
    ))
}

/// The CSV's install ServiceAccount as the API server names it (`None`: the manager).
fn install_identity(csv: &ClusterServiceVersion) -> Option<String> {
    csv.spec
        .install_service_account
        .as_ref()
        .map(|name| Identities::service_account(&csv.namespace().unwrap_or_default(), name))
}

fn reference(object: &DesiredObject) -> ObjectReference {
    ObjectReference {
        api_version: object.object["apiVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        kind: object.kind().to_string(),
        namespace: object.namespace().map(String::from),
        name: object.name().to_string(),
    }
}

/// Desired objects of the strategy and its webhooks, plus the CRD conversion patches.
async fn build_all(
    controller: &Context,
    ctx: &InstallContext<'_>,
    now: Timestamp,
) -> Result<(Vec<DesiredObject>, Vec<(String, Value)>), String> {
    let definitions = webhooks::definitions(ctx).map_err(|e| e.to_string())?;
    let mut objects = desired::build(ctx);
    if definitions.is_empty() {
        return Ok((objects, Vec::new()));
    }
    let mut certs_by_deployment = BTreeMap::new();
    let mut selectors = BTreeMap::new();
    for def in &definitions {
        if certs_by_deployment.contains_key(&def.deployment_name) {
            continue;
        }
        let cert = current_or_new_cert(controller, ctx.namespace, &def.deployment_name, now)
            .await
            .map_err(|e| e.to_string())?;
        certs_by_deployment.insert(def.deployment_name.clone(), cert);
        let deployment = ctx
            .definition
            .deployments()
            .iter()
            .find(|d| d.name == def.deployment_name);
        let labels = deployment
            .map(|d| d.spec["selector"]["matchLabels"].clone())
            .unwrap_or(json!({}));
        selectors.insert(def.deployment_name.clone(), labels);
    }
    for object in objects.iter_mut().filter(|o| o.kind() == "Deployment") {
        let name = object.name().to_string();
        if certs_by_deployment.contains_key(&name) {
            webhooks::mount_certificates(&mut object.object, &name);
        }
    }
    let certificates = webhooks::Certificates {
        ca: &controller.webhook_ca,
        seal_key: &controller.seal_key,
        leaves: &certs_by_deployment,
    };
    // Admission webhooks and CRD conversions are cluster-wide: only with the Webhooks grant.
    let admission = ctx.granted(ClusterScopedGrant::Webhooks);
    objects.extend(webhooks::build(
        ctx,
        &definitions,
        certificates,
        &selectors,
        admission,
    ));
    let conversions = definitions
        .iter()
        .filter(|d| admission && d.type_ == webhooks::CONVERSION)
        .flat_map(|d| {
            let patch = webhooks::conversion_patch(ctx, d, &controller.webhook_ca);
            d.conversion_crds
                .iter()
                .map(move |crd| (crd.clone(), patch.clone()))
        })
        .collect();
    Ok((objects, conversions))
}

/// The leaf certificate of a webhook deployment: the one its Secret holds when that is sealed
/// by this windlass, issued by the current CA and not about to expire; otherwise a new one.
async fn current_or_new_cert(
    ctx: &Context,
    namespace: &str,
    deployment: &str,
    now: Timestamp,
) -> Result<certs::ServingCert, Error> {
    let secrets = Api::<Secret>::namespaced(ctx.shell.client.clone(), namespace);
    let secret_name = webhooks::cert_secret_name(deployment);
    let existing = secrets
        .get_opt(&secret_name)
        .await
        .map_err(|source| Error::Read {
            what: format!("secret {secret_name}"),
            source,
        })?;
    if let Some(secret) = existing {
        let data = secret
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect();
        let annotations = secret.metadata.annotations.unwrap_or_default();
        if let Some(cert) = certs::ServingCert::from_secret(
            &ctx.seal_key,
            namespace,
            &secret_name,
            &data,
            &annotations,
        ) && !cert.needs_reissue(&ctx.webhook_ca, now)
        {
            return Ok(cert);
        }
    }
    Ok(ctx
        .webhook_ca
        .issue(&webhooks::service_name(deployment), namespace, now)?)
}

/// Points CRD `crd`'s conversion at the webhook of install `owner` (`namespace/CSV`), unless
/// another install that still runs owns its conversion: a CRD is shared by every namespace,
/// and whichever webhook converts it receives every namespace's custom resources of it. The
/// first install takes it and names itself in the CRD's conversion-owner annotation; a later
/// one takes over only once that install is gone, or when a cluster admin names it there.
/// Returns `Some(message)` when another install serves it.
async fn patch_conversion(
    ctx: &Context,
    crd: &str,
    patch: &Value,
    owner: &str,
) -> Result<Option<String>, Error> {
    let api = Api::<CustomResourceDefinition>::all(ctx.shell.client.clone());
    let existing = api.get_opt(crd).await.map_err(|source| Error::Read {
        what: format!("CRD {crd}"),
        source,
    })?;
    let Some(existing) = existing else {
        return Ok(None);
    };
    let holder = existing
        .annotations()
        .get(annotations::CONVERSION_OWNER)
        .cloned();
    if let Some(holder) = holder.filter(|h| h != owner)
        && conversion_owner_runs(ctx, &holder, crd)
    {
        return Ok(Some(format!(
            "the conversion of CRD {crd} is served by {holder}'s webhook, which converts every \
             namespace's objects of it (a cluster admin hands it over with kubectl annotate \
             crd {crd} {}={owner} --overwrite)",
            annotations::CONVERSION_OWNER
        )));
    }
    let mut patch = patch.clone();
    patch["metadata"] = json!({"annotations": {annotations::CONVERSION_OWNER: owner}});
    if windlass_kit::compare::is_subset(
        &patch,
        &serde_json::to_value(&existing).unwrap_or_default(),
    ) {
        return Ok(None);
    }
    // A merge patch (not an apply) so the Blueprint's apply of the CRD does not take the
    // conversion settings away again; guarded by the resourceVersion the owner was read at,
    // so two installs racing for a new CRD cannot both take it.
    patch["metadata"]["resourceVersion"] = json!(existing.resource_version());
    api.patch(
        crd,
        &PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        },
        &Patch::Merge(&patch),
    )
    .await
    .map(|_| None)
    .map_err(|source| {
        Error::Apply(ApplyError::Write {
            key: ObjectKey {
                api_version: "apiextensions.k8s.io/v1".into(),
                kind: "CustomResourceDefinition".into(),
                namespace: None,
                name: crd.into(),
            },
            source,
        })
    })
}

/// Whether install `holder` (`namespace/CSV`) exists and converts `crd` through its webhook.
fn conversion_owner_runs(ctx: &Context, holder: &str, crd: &str) -> bool {
    let Some((namespace, name)) = holder.split_once('/') else {
        return false;
    };
    let reference = ObjectRef::<ClusterServiceVersion>::new(name).within(namespace);
    ctx.csvs.get(&reference).is_some_and(|csv| {
        csv.metadata.deletion_timestamp.is_none()
            && csv
                .spec
                .definition
                .parse::<ConversionCrds>()
                .is_ok_and(|d| d.converts(crd))
    })
}

fn condition_is(conditions: &[Condition], type_: &str, status: ConditionStatus) -> bool {
    conditions
        .iter()
        .any(|c| c.type_ == type_ && c.status == status)
}

/// Hands back the conversion of every CRD this CSV's webhook converts, as it goes away: the
/// CRD's conversion-owner annotation is removed where it names this install, and that change
/// of the CRD wakes the other installs of it, one of which takes the conversion over (until
/// then the CRD still points at this install's Service).
async fn release_conversions(ctx: &Context, csv: &ClusterServiceVersion) -> Result<(), Error> {
    let Ok(definition) = csv.spec.definition.parse::<ConversionCrds>() else {
        return Ok(());
    };
    let owner = format!("{}/{}", csv.namespace().unwrap_or_default(), csv.name_any());
    let api = Api::<CustomResourceDefinition>::all(ctx.shell.client.clone());
    let crds: BTreeSet<&String> = definition
        .spec
        .webhookdefinitions
        .iter()
        .filter(|d| d.type_ == webhooks::CONVERSION)
        .flat_map(|d| &d.conversion_crds)
        .collect();
    for crd in crds {
        // The cache holds CRDs without their annotations.
        let live = api.get_opt(crd).await.map_err(|source| Error::Read {
            what: format!("CRD {crd}"),
            source,
        })?;
        let Some(live) = live else {
            continue;
        };
        if live.annotations().get(annotations::CONVERSION_OWNER) != Some(&owner) {
            continue;
        }
        // Guarded: an install that took it over meanwhile keeps it.
        let patch = json!({"metadata": {
            "resourceVersion": live.resource_version(),
            "annotations": {annotations::CONVERSION_OWNER: null},
        }});
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        match api.patch(crd, &params, &Patch::Merge(&patch)).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            // A conflict is tried again, from the CRD as it is then.
            Err(source) => {
                return Err(Error::Apply(ApplyError::Write {
                    key: ObjectKey {
                        api_version: "apiextensions.k8s.io/v1".into(),
                        kind: "CustomResourceDefinition".into(),
                        namespace: None,
                        name: crd.clone(),
                    },
                    source,
                }));
            }
        }
    }
    Ok(())
}

/// The CRDs a CSV definition's conversion webhooks name.
#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct ConversionCrds {
    spec: ConversionSpec,
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct ConversionSpec {
    webhookdefinitions: Vec<ConversionDefinition>,
}

#[derive(serde::Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ConversionDefinition {
    #[serde(rename = "type")]
    type_: String,
    #[serde(rename = "conversionCRDs")]
    conversion_crds: Vec<String>,
}

impl ConversionCrds {
    fn converts(&self, crd: &str) -> bool {
        self.spec
            .webhookdefinitions
            .iter()
            .any(|d| d.type_ == webhooks::CONVERSION && d.conversion_crds.iter().any(|c| c == crd))
    }
}
