//! The reconciler, a thin shell around the plan: observe -> decide (dereferencing and
//! validating content when the plan asks) -> build and apply -> status -> bookkeeping.
//!
//! Every write is ordered so that a controller killed between any two of them finds, on its
//! next start, everything it needs to carry on: the revision is recorded in the status before
//! `spec.revision` moves, its content is stored before anything of it is applied, and the
//! status and bookkeeping writes carry the resourceVersion they were decided from, so a
//! decision made on state someone else has since changed is thrown away and made again.

use std::{
    collections::HashMap,
    future::Future,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::{FutureExt, StreamExt};

use k8s_openapi::{api::core::v1::Secret, jiff::Timestamp};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{DeleteParams, Patch, PatchParams},
    runtime::{
        WatchStreamExt,
        controller::Action,
        reflector::{self, ObjectRef, Store, reflector},
        watcher::{self, watcher},
    },
};
use serde_json::json;
use tracing::info;
use windlass_api::{
    Blueprint, ClusterServiceVersion, FIELD_MANAGER, InstallPolicy,
    blueprint::BlueprintPhase,
    condition::{Condition, ConditionStatus, set_condition},
    names::{conditions, controllers, finalizers, labels, reasons, steps},
    subscription::CrdDeletionPolicy,
};
use windlass_catalog_store::CatalogStore;
use windlass_kit::{
    Applier, Identities, ListFloor, Metrics, Notice, OwnWrites, ProgressHold, Scope, Shell,
    TrustGate, runner, status, synced::synced,
};
use windlass_revisions::SealKey;

use crate::{
    Error, apply,
    build::Owner,
    content,
    csv_cache::{self, PendingWrites},
    memo::{Applied, Memo},
    observe,
    plan::{self, Action as Step, ContentRequest, Decision, Facts, Input, Need},
    revision,
    revision_cache::RevisionCache,
};

/// What every reconcile shares.
pub struct Context {
    pub shell: Shell,
    pub applier: Applier,
    pub store: Arc<CatalogStore>,
    /// Every Blueprint in scope, for dependency readiness.
    pub blueprints: Store<Blueprint>,
    /// Seals revision Secrets and checks them before their content is used.
    pub seal_key: SealKey,
    /// Clients acting as install identities.
    pub identities: Identities,
    /// Checks bundle images against the TrustPolicies before their content is used.
    pub trust: Arc<TrustGate>,
    /// What this process last applied for each Blueprint.
    pub memo: Arc<Memo>,
    /// This controller's last status and bookkeeping writes, until the cache shows them.
    pub own_writes: OwnWrites,
    /// When this controller last wrote each Blueprint's status: reworded progress waits.
    pub progress: ProgressHold,
    /// The CSVs Blueprints own, trimmed ([`csv_cache::trim`]).
    pub csvs: Store<ClusterServiceVersion>,
    /// The Blueprints whose CSVs this controller wrote since the cache last matched a list.
    pub csv_writes: PendingWrites,
    /// Every revision Secret's metadata, from one watch, and what was found of their data.
    pub revisions: RevisionCache,
    /// The Blueprints whose revision Secrets this controller wrote since the cache last matched
    /// a list of them.
    pub revision_writes: PendingWrites,
    /// Revision Secrets (while the cache may be behind) and InstallPolicies are listed from the
    /// API server's cache, never older than what this controller saw or wrote.
    pub revision_lists: ListFloor,
    pub policy_lists: ListFloor,
    /// The last rollback rehearsal of each Blueprint, so a wake-up does not dry-run it again.
    pub rehearsals: crate::operands::Rehearsals,
}

impl Context {
    fn sources(&self) -> observe::Sources<'_> {
        observe::Sources {
            client: &self.shell.client,
            seal_key: &self.seal_key,
            blueprints: &self.blueprints,
            csvs: &self.csvs,
            csv_writes: &self.csv_writes,
            csv_lists: self.applier.floor(
                &ClusterServiceVersion::api_version(&()),
                &ClusterServiceVersion::kind(&()),
            ),
            revisions: &self.revisions,
            revision_writes: &self.revision_writes,
            revision_lists: &self.revision_lists,
            policy_lists: &self.policy_lists,
        }
    }
}

/// How the controller checks what it uses before applying it.
pub struct Checks {
    /// Seals revision Secrets and checks them before their content is used.
    pub seal_key: SealKey,
    /// Checks bundle images against the TrustPolicies.
    pub trust: Arc<TrustGate>,
}

/// Runs the Blueprint controller over `scope` until `shutdown` resolves.
pub async fn run(
    client: Client,
    identities: Identities,
    scope: Scope,
    store: Arc<CatalogStore>,
    metrics: Arc<dyn Metrics>,
    checks: Checks,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let Checks { seal_key, trust } = checks;
    let blueprints = scope.api::<Blueprint>(&client);
    let csvs = scope.api::<ClusterServiceVersion>(&client);
    let (revisions, revision_watch) =
        RevisionCache::watch(scope.api::<kube::api::PartialObjectMeta<Secret>>(&client));
    // One watch for the Blueprints and the dependents their changes wake: a dependent's
    // reconcile reads its dependencies from the cache, which must already hold the change.
    let runner::SharedController {
        controller,
        mut subscribers,
        watch,
    } = runner::shared_controller_for(blueprints, watcher::Config::default(), 1);
    let dependency_changes = subscribers.pop().expect("one subscriber was asked for");
    let cache = controller.store();
    // In place of `.owns(csvs)`: the same watch wakes a CSV's Blueprint and fills the cache
    // its reconciles read the CSVs from.
    let (csv_cache, csv_writer) = reflector::store::<ClusterServiceVersion>();
    let csv_changes = reflector(
        csv_writer,
        watcher(csvs, watcher::Config::default().labels(labels::BLUEPRINT)).modify(csv_cache::trim),
    )
    .touched_objects();
    let dependents = cache.clone();
    let seen_as_dependency: Mutex<HashMap<ObjectRef<Blueprint>, AsDependency>> = Mutex::default();
    // New catalog content can unblock a revision waiting for its bundle; a Blueprint past that
    // point reads nothing from catalogs until its Subscription changes its spec.
    let waiting = cache.clone();
    let catalog_changes = futures::stream::unfold(store.changes(), |mut changes| async move {
        changes.changed().await.ok()?;
        Some(((), changes))
    })
    .flat_map(move |()| futures::stream::iter(waiting_for_content(&waiting)));
    // A policy that changes may narrow what it granted (or grant what waits): the Blueprints
    // it permitted and those refused are decided again, the whole way.
    let memo = Arc::new(Memo::default());
    let (affected_blueprints, affected_csvs, forgetting) =
        (cache.clone(), csv_cache.clone(), memo.clone());
    let policy_changes = watcher(
        Api::<InstallPolicy>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .touched_objects();
    let ctx = Arc::new(Context {
        applier: Applier::new(client.clone()),
        shell: Shell::new(client, scope, controllers::BLUEPRINT, metrics),
        store,
        blueprints: cache,
        seal_key,
        identities,
        trust,
        memo: memo.clone(),
        own_writes: OwnWrites::default(),
        progress: ProgressHold::default(),
        csvs: csv_cache,
        csv_writes: PendingWrites::default(),
        revisions,
        revision_writes: PendingWrites::default(),
        revision_lists: ListFloor::default(),
        policy_lists: ListFloor::default(),
        rehearsals: crate::operands::Rehearsals::default(),
    });
    let results = controller
        .owns_stream(csv_changes)
        // A Blueprint that settles may be what others wait for; they read only its
        // `AsDependency`, so only a change of that wakes them.
        .watches_shared_stream(dependency_changes, move |changed| {
            let view = AsDependency::of(&changed);
            let key = ObjectRef::from_obj(changed.as_ref());
            let mut seen = seen_as_dependency.lock().unwrap_or_else(|e| e.into_inner());
            if seen.get(&key) == Some(&view) {
                return Vec::new();
            }
            if view.leaving {
                seen.remove(&key);
            } else {
                seen.insert(key, view);
            }
            drop(seen);
            dependents_of(&dependents, &changed)
        })
        .reconcile_on(catalog_changes)
        .watches_stream(policy_changes, move |policy: InstallPolicy| {
            let woken = under_policy(&affected_blueprints, &affected_csvs, &policy.name_any());
            for blueprint in &woken {
                if let Some(uid) = affected_blueprints.get(blueprint).and_then(|b| b.uid()) {
                    forgetting.forget(&uid);
                }
            }
            woken
        })
        .graceful_shutdown_on(shutdown)
        .run(
            |blueprint, ctx: Arc<Context>| async move {
                runner::observed(
                    ctx.shell.metrics.as_ref(),
                    blueprint.as_ref(),
                    Box::pin(reconcile(blueprint.clone(), ctx.clone())),
                )
                .await
            },
            runner::error_policy,
            ctx,
        );
    let watches = futures::future::join(watch, revision_watch)
        .map(|_| ())
        .boxed();
    runner::drain_with(watches, results).await;
}

/// The Blueprints a change of InstallPolicy `policy` may concern: those with a CSV that policy
/// permitted, and those its namespace's policies refuse now (it may grant what they wait for).
fn under_policy(
    blueprints: &Store<Blueprint>,
    csvs: &Store<ClusterServiceVersion>,
    policy: &str,
) -> Vec<ObjectRef<Blueprint>> {
    let mut woken: Vec<ObjectRef<Blueprint>> = csvs
        .state()
        .iter()
        .filter(|c| c.spec.grant.as_ref().and_then(|g| g.policy.as_deref()) == Some(policy))
        .flat_map(|c| {
            let namespace = c.namespace();
            c.owner_references()
                .iter()
                .filter(|r| r.kind == "Blueprint")
                .map(move |r| ObjectRef::new(&r.name).within(namespace.as_deref().unwrap_or("")))
                .collect::<Vec<_>>()
        })
        .collect();
    woken.extend(
        blueprints
            .state()
            .iter()
            .filter(|b| {
                b.status.as_ref().is_some_and(|s| {
                    s.conditions.iter().any(|c| {
                        c.type_ == conditions::blueprint::INSTALL_PERMITTED
                            && c.status == ConditionStatus::False
                    })
                })
            })
            .map(|b| ObjectRef::from_obj(b.as_ref())),
    );
    woken.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    woken.dedup();
    woken
}

/// The Blueprints a catalog change may unblock: those not past loading their bundle yet.
fn waiting_for_content(cache: &Store<Blueprint>) -> Vec<ObjectRef<Blueprint>> {
    cache
        .state()
        .iter()
        .filter(|b| {
            let phase = b.status.as_ref().and_then(|s| s.phase);
            matches!(phase, None | Some(BlueprintPhase::Pending))
        })
        .map(|b| ObjectRef::from_obj(b.as_ref()))
        .collect()
}

/// What a Blueprint that depends on another reads of it (see `observe::dependency`).
#[derive(Debug, PartialEq)]
struct AsDependency {
    package: String,
    phase: Option<BlueprintPhase>,
    version: Option<String>,
    leaving: bool,
}

impl AsDependency {
    fn of(blueprint: &Blueprint) -> Self {
        let status = blueprint.status.as_ref();
        AsDependency {
            package: blueprint.spec.package.clone(),
            phase: status.and_then(|s| s.phase),
            version: status.and_then(|s| s.version.clone()),
            leaving: blueprint.metadata.deletion_timestamp.is_some(),
        }
    }
}

fn dependents_of(cache: &Store<Blueprint>, changed: &Blueprint) -> Vec<ObjectRef<Blueprint>> {
    let namespace = changed.namespace();
    cache
        .state()
        .iter()
        .filter(|b| b.namespace() == namespace)
        .filter(|b| {
            b.spec
                .dependencies
                .iter()
                .any(|d| d.package == changed.spec.package)
        })
        .map(|b| ObjectRef::from_obj(b.as_ref()))
        .collect()
}

pub async fn reconcile(blueprint: Arc<Blueprint>, ctx: Arc<Context>) -> Result<Action, Error> {
    let namespace = blueprint.namespace().unwrap_or_default();
    let name = blueprint.name_any();
    let api = Api::<Blueprint>::namespaced(ctx.shell.client.clone(), &namespace);
    // The plan decides from the newest state: while the watch cache does not show this
    // controller's last write yet, the Blueprint is read from the API server. Anyone else's
    // change the cache missed fails the guarded writes below (409) and is decided again.
    let fresh = if ctx.own_writes.shown_in(blueprint.as_ref()) {
        Some(blueprint.clone())
    } else {
        api.get_opt(&name)
            .await
            .map_err(|source| Error::Read {
                what: format!("Blueprint {namespace}/{name}"),
                source,
            })?
            .map(Arc::new)
    };
    let Some(fresh) = fresh else {
        let uid = blueprint.uid().unwrap_or_default();
        ctx.own_writes.forget(&uid);
        ctx.csv_writes.forget(&uid);
        ctx.revision_writes.forget(&uid);
        ctx.progress.forget(&uid);
        ctx.rehearsals.forget(&uid);
        return Ok(Action::await_change());
    };
    // Before the caches listed, a CSV or a dependency not listed yet would look missing.
    synced(&ctx.csvs, "ClusterServiceVersion").await?;
    synced(&ctx.blueprints, "Blueprint").await?;
    synced(ctx.revisions.store(), "revision Secret").await?;
    let ctx = &*ctx;
    runner::with_finalizer(
        &api,
        finalizers::BLUEPRINT_CLEANUP,
        fresh,
        |blueprint| async move {
            let observed = observe::observe(&ctx.sources(), &blueprint).await?;
            execute(&blueprint, ctx, &observed, Recall::Allowed).await
        },
        |blueprint| async move {
            let uid = blueprint.uid().unwrap_or_default();
            // Going away: nothing more is remembered of it.
            ctx.memo.forget(&uid);
            ctx.csv_writes.forget(&uid);
            ctx.revision_writes.forget(&uid);
            ctx.own_writes.forget(&uid);
            ctx.progress.forget(&uid);
            cleanup(&blueprint, ctx).await
        },
    )
    .await
}

pub(crate) fn owner(blueprint: &Blueprint) -> Owner {
    Owner {
        name: blueprint.name_any(),
        namespace: blueprint.namespace().unwrap_or_default(),
        uid: blueprint.uid().unwrap_or_default(),
    }
}

/// Whether a reconcile may stand on the memo's validation of the last apply.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Recall {
    Allowed,
    /// The memo's validation led to something it cannot serve (another plan, a preview):
    /// load and validate.
    Refused,
}

/// Decides from `observed` and carries the decision out. With the memo refused, the same
/// observation is decided again: nothing is read twice.
async fn execute(
    blueprint: &Blueprint,
    ctx: &Context,
    observed: &observe::Observed,
    recall: Recall,
) -> Result<Action, Error> {
    let name = blueprint.name_any();
    let uid = blueprint.uid().unwrap_or_default();
    let generation = blueprint.metadata.generation.unwrap_or_default();
    let status = blueprint.status.clone().unwrap_or_default();
    let now = Timestamp::now();
    let mut facts = Facts::default();
    let mut loaded = None;
    let mut recalled = false;
    let mut validated: Option<ContentRequest> = None;
    let mut decided = None;
    // The plan asks for at most a content check, a rollback-source check, a preview and one
    // operand step (snapshot, restore or rehearsal).
    for _ in 0..8 {
        let decision = plan::decide(&Input {
            name: &name,
            generation: blueprint.metadata.generation.unwrap_or_default(),
            spec: &blueprint.spec,
            status: &status,
            stored: &observed.stored,
            csvs: &observed.csvs,
            dependencies: &observed.dependencies,
            facts: &facts,
            now,
        });
        match &decision.action {
            Step::Check(Need::Validate(request)) => {
                // The memo stands only on the revision's Secret as stored and sealed: one
                // deleted or edited since is stored again or refused by a full validation.
                let stored = observed
                    .stored
                    .iter()
                    .any(|s| s.revision == request.revision);
                if !stored || observed.tampered(request.revision).is_some() {
                    ctx.memo.forget(&uid);
                }
                let remembered = (recall == Recall::Allowed && stored)
                    .then(|| {
                        let now = std::time::Instant::now();
                        ctx.memo
                            .validation(&uid, generation, request, &observed.csvs, now)
                    })
                    .flatten();
                if let Some(remembered) = remembered {
                    facts.validation = Some(remembered.validation);
                    facts.plan_digest = remembered.plan_digest;
                    recalled = true;
                    continue;
                }
                validated = Some(request.clone());
                // Boxed, as the preview below: each is large and runs once per revision.
                let (validation, content) = Box::pin(content::validate(
                    &ctx.applier,
                    &ctx.sources(),
                    &ctx.store,
                    &ctx.trust,
                    blueprint,
                    request,
                    observed,
                ))
                .await?;
                facts.validation = Some(validation);
                facts.plan_digest = content
                    .as_ref()
                    .map(|l| crate::preview::binding(l, request.crds).digest());
                loaded = content;
            }
            Step::Check(Need::Preview(_)) if recalled => {
                return Box::pin(execute(blueprint, ctx, observed, Recall::Refused)).await;
            }
            Step::Check(Need::Preview(request)) => {
                let Some(loaded) = &loaded else {
                    return Err(Error::Plan {
                        name,
                        message: "a preview came without validated content".into(),
                    });
                };
                let installer = installer_for(ctx, loaded, &name)?;
                let preview_ctx = crate::preview::Context {
                    manager: &ctx.applier,
                    installer: &installer,
                    key: &ctx.seal_key,
                    known_kinds: &observed.kinds,
                    now,
                };
                let preview = Box::pin(crate::preview::preview(
                    &preview_ctx,
                    blueprint,
                    loaded,
                    request,
                ))
                .await?;
                facts.preview = Some(preview);
            }
            Step::Check(Need::RollbackSource { revision }) => {
                let verdict = content::rollback_source(
                    &ctx.shell.client,
                    &ctx.seal_key,
                    blueprint,
                    *revision,
                )
                .await?;
                facts.rollback_source = Some((*revision, verdict));
            }
            Step::Check(Need::Snapshot { revision, base }) => {
                let keeper = crate::operands::Keeper {
                    applier: &ctx.applier,
                    key: &ctx.seal_key,
                };
                let taken = keeper.snapshot(blueprint, *revision, *base).await?;
                facts.snapshot = Some((*revision, taken));
            }
            Step::Check(Need::RestoreOperands { revision, base }) => {
                let keeper = crate::operands::Keeper {
                    applier: &ctx.applier,
                    key: &ctx.seal_key,
                };
                let restored = keeper.restore(blueprint, *base, false).await?;
                info!(revision, base, ?restored, "operands restored");
                facts.restore = Some((*revision, restored));
            }
            Step::Check(Need::Rehearse { revision, base }) => {
                let now = std::time::Instant::now();
                let crds = crate::operands::crd_versions(&ctx.shell.client, &observed.crds).await?;
                let verdict = match ctx.rehearsals.recall(&uid, *revision, &crds, now) {
                    Some(verdict) => verdict,
                    None => {
                        let verdict = rehearse(ctx, blueprint, *base).await?;
                        ctx.rehearsals
                            .record(&uid, *revision, crds, now, verdict.clone());
                        verdict
                    }
                };
                facts.rehearsal = Some((*revision, verdict));
            }
            _ => {
                decided = Some(decision);
                break;
            }
        }
    }
    let Some(mut decision) = decided else {
        return Err(Error::Plan {
            name,
            message: "it kept asking for facts".into(),
        });
    };

    if let Step::Apply(apply_plan) = &decision.action
        && recalled
        && !ctx.memo.applied(&uid, apply_plan)
    {
        return Box::pin(execute(blueprint, ctx, observed, Recall::Refused)).await;
    }
    if let Step::Apply(apply_plan) = &decision.action
        && !recalled
    {
        let Some(loaded) = &loaded else {
            return Err(Error::Plan {
                name,
                message: "an apply came without validated content".into(),
            });
        };
        let identity = loaded.placement.permit.identity.username();
        let installer = installer_for(ctx, loaded, &name)?;
        let writers = apply::Writers {
            manager: &ctx.applier,
            installer: &installer,
            seal_key: &ctx.seal_key,
        };
        ctx.csv_writes.writing(&uid);
        let applied = apply::apply_revision(
            &writers,
            blueprint,
            &owner(blueprint),
            loaded,
            apply_plan,
            &observed.kinds,
        )
        .await;
        let applied = match applied {
            Ok(repaired) => {
                for drift in &repaired {
                    info!(object = %drift.object, "put back fields someone else changed");
                    let notice = windlass_kit::repair_notice(drift);
                    ctx.shell
                        .events
                        .publish(&blueprint.object_ref(&()), &notice)
                        .await;
                }
                Ok(())
            }
            Err(error) => Err(error),
        };
        if let Err(error) = applied {
            ctx.memo.forget(&uid);
            // The install identity may not create or grant something: the API server's words
            // name the verb, the resource and the namespace.
            if error.is_forbidden() {
                set_condition(
                    &mut decision.status.conditions,
                    Condition::new(
                        conditions::blueprint::INSTALL_PERMITTED,
                        ConditionStatus::False,
                        reasons::policy::INSTALL_FORBIDDEN,
                        format!(
                            "installing as {}: {}",
                            identity.as_deref().unwrap_or("the manager"),
                            error.api_message()
                        ),
                    )
                    .observed(blueprint.metadata.generation),
                    now,
                );
            }
            // Say so on the object; the error itself retries with backoff.
            if let Some(step) = decision
                .status
                .plan
                .iter_mut()
                .find(|s| s.name == steps::OBJECTS)
            {
                step.status = "Blocked".into();
                step.message = format!("retrying: {error}");
            }
            write_status(ctx, blueprint, &decision).await?;
            return Err(error);
        }
        if let (Some(request), Some(validation)) = (validated, facts.validation.clone()) {
            let applied = Applied {
                generation,
                request,
                validation,
                plan_digest: facts.plan_digest.clone(),
                plan: apply_plan.clone(),
            };
            ctx.memo.record(&uid, applied, std::time::Instant::now());
        }
    }
    let (written, held) = write_status(ctx, blueprint, &decision).await?;
    if let Some(bookkeeping) = &decision.bookkeeping {
        // Guarded by the resourceVersion the status was written at: a change someone made in
        // between throws this decision away.
        let patch = json!({
            "metadata": {"resourceVersion": written.resource_version()},
            "spec": bookkeeping,
        });
        let recorded =
            Api::<Blueprint>::namespaced(ctx.shell.client.clone(), &owner(blueprint).namespace)
                .patch(
                    &name,
                    &PatchParams {
                        field_manager: Some(FIELD_MANAGER.into()),
                        ..PatchParams::default()
                    },
                    &Patch::Merge(&patch),
                )
                .await
                .map_err(|source| Error::Bookkeeping {
                    name: name.clone(),
                    revision: bookkeeping.revision,
                    source,
                })?;
        ctx.own_writes.wrote(&recorded);
        info!(revision = bookkeeping.revision, "revision recorded");
    }
    prune_revisions(ctx, blueprint, &decision.prune_revisions).await?;
    // A held status is written when its hold ends, unless a change comes first.
    Ok(Action::requeue(held.map_or(decision.requeue, |wait| {
        wait.min(decision.requeue)
    })))
}

/// Would a rollback to revision `base` apply now? Its stored CSV's APIs must be served by
/// the live CRDs, and its operand restore must pass a server-side dry run.
async fn rehearse(
    ctx: &Context,
    blueprint: &Blueprint,
    base: i64,
) -> Result<Result<String, plan::Refusal>, Error> {
    let failed = |message: String| plan::Refusal {
        reason: reasons::blueprint::REHEARSAL_FAILED,
        message,
    };
    let source =
        content::rollback_source(&ctx.shell.client, &ctx.seal_key, blueprint, base).await?;
    if let Err(refusal) = source {
        return Ok(Err(failed(format!(
            "a rollback to revision {base} would fail: {}",
            refusal.message
        ))));
    }
    let keeper = crate::operands::Keeper {
        applier: &ctx.applier,
        key: &ctx.seal_key,
    };
    let operands = match keeper.restore(blueprint, base, true).await? {
        Ok(summary) => summary,
        Err(refusal) if refusal.reason == reasons::blueprint::NO_SNAPSHOT => refusal.message,
        Err(refusal) => {
            return Ok(Err(failed(format!(
                "a rollback to revision {base} would not restore its operands: {}",
                refusal.message
            ))));
        }
    };
    Ok(Ok(format!(
        "rehearsed (server-side dry run): a rollback to revision {base} would apply, the live \
         CRDs serve every API version its CSV owns; {operands}"
    )))
}

/// The applier acting as the install identity of `loaded`'s placement.
// The reconcile's one error type; this runs once per reconcile, so its size costs nothing.
#[allow(clippy::result_large_err)]
fn installer_for(ctx: &Context, loaded: &content::Loaded, name: &str) -> Result<Applier, Error> {
    let identity = loaded.placement.permit.identity.username();
    ctx.identities
        .client_for(identity.as_deref())
        .map(|client| ctx.applier.with_client(client))
        .map_err(|e| Error::Plan {
            name: name.to_string(),
            message: format!("a client acting as {identity:?}: {e}"),
        })
}

/// Writes the status when it changed, guarded by the resourceVersion the decision was made
/// from (a conflict means someone changed the Blueprint since: decide again). Publishes the
/// decision's Events once the status that justifies them is written. Returns the Blueprint as
/// written, whose resourceVersion guards the bookkeeping patch, and how long a status that only
/// rewords progress was held back ([`ProgressHold`]; never one that comes with bookkeeping).
async fn write_status(
    ctx: &Context,
    blueprint: &Blueprint,
    decision: &Decision,
) -> Result<(Blueprint, Option<Duration>), Error> {
    if blueprint.status.as_ref() == Some(&decision.status) {
        return Ok((blueprint.clone(), None));
    }
    let uid = blueprint.uid().unwrap_or_default();
    let now = std::time::Instant::now();
    let old = blueprint.status.clone().unwrap_or_default();
    if decision.bookkeeping.is_none()
        && let Some(wait) = ctx.progress.wait(&uid, &old, &decision.status, now)
    {
        return Ok((blueprint.clone(), Some(wait)));
    }
    let api = Api::<Blueprint>::namespaced(ctx.shell.client.clone(), &owner(blueprint).namespace);
    let written = status::apply_status(
        &api,
        &blueprint.name_any(),
        &decision.status,
        blueprint.resource_version().as_deref(),
    )
    .await
    .map_err(|source| Error::Status {
        name: blueprint.name_any(),
        source,
    })?;
    ctx.own_writes.wrote(&written);
    ctx.progress.wrote(&uid, now);
    for notice in &decision.notes {
        ctx.shell
            .events
            .publish(&blueprint.object_ref(&()), notice)
            .await;
    }
    Ok((written, None))
}

async fn prune_revisions(
    ctx: &Context,
    blueprint: &Blueprint,
    revisions: &[i64],
) -> Result<(), Error> {
    let secrets = Api::<Secret>::namespaced(ctx.shell.client.clone(), &owner(blueprint).namespace);
    ctx.revision_writes
        .writing(&blueprint.uid().unwrap_or_default());
    for revision in revisions {
        // The plan and the operand snapshot first: they are found through their revision,
        // which must outlive them.
        crate::preview::store::delete(&ctx.shell.client, blueprint, *revision).await?;
        crate::operands::delete(&ctx.shell.client, blueprint, *revision).await?;
        let name = revision::secret_name(&blueprint.name_any(), *revision);
        match secrets.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(source) => {
                return Err(Error::Delete {
                    kind: "Secret".into(),
                    name,
                    source,
                });
            }
        }
    }
    Ok(())
}

/// The finalizer: cluster-scoped objects go (CRDs only when asked); namespaced ones follow the
/// Blueprint through their ownerReferences; custom resources always stay.
async fn cleanup(blueprint: &Blueprint, ctx: &Context) -> Result<Action, Error> {
    let sources = ctx.sources();
    let observed = observe::observe(&sources, blueprint).await?;
    let current =
        content::stored_content(&sources, blueprint, &observed, blueprint.spec.revision).await?;
    // Asked for, and granted by a policy now (the ask alone is anyone's who may write the
    // Blueprint); the package and catalog are the sealed revision's, not the spec's.
    let delete_crds = match &current {
        Some(content) if blueprint.spec.crd_deletion_policy == CrdDeletionPolicy::Delete => {
            crate::permit::may_delete_crds(&ctx.applier, &ctx.policy_lists, blueprint, content)
                .await?
        }
        _ => false,
    };
    let package = current
        .as_ref()
        .map_or(blueprint.spec.package.as_str(), |c| c.package.as_str());
    let removed = apply::cleanup(
        &ctx.applier,
        &owner(blueprint),
        package,
        &observed.kinds,
        &observed.crds,
        delete_crds,
    )
    .await?;
    let message = if removed.is_empty() {
        "nothing cluster-scoped to remove; custom resources are kept".to_string()
    } else {
        format!("removed {}; custom resources are kept", removed.join(", "))
    };
    let notice = Notice::normal("Cleanup", message).action("Cleanup");
    ctx.shell
        .events
        .publish(&blueprint.object_ref(&()), &notice)
        .await;
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use kube::runtime::{reflector, watcher::Event};
    use windlass_api::blueprint::{BlueprintSpec, BlueprintStatus};

    use super::*;

    fn blueprint(name: &str, phase: Option<BlueprintPhase>) -> Blueprint {
        let mut bp = Blueprint::new(name, BlueprintSpec::default());
        bp.metadata.namespace = Some("team-a".into());
        bp.status = phase.map(|phase| BlueprintStatus {
            phase: Some(phase),
            ..BlueprintStatus::default()
        });
        bp
    }

    #[test]
    fn a_catalog_change_wakes_only_blueprints_still_waiting_for_their_bundle() {
        let (cache, mut writer) = reflector::store();
        for (name, phase) in [
            ("new", None),
            ("waiting", Some(BlueprintPhase::Pending)),
            ("installed", Some(BlueprintPhase::Succeeded)),
            ("installing", Some(BlueprintPhase::Installing)),
            ("failed", Some(BlueprintPhase::Failed)),
            ("rolled-back", Some(BlueprintPhase::RolledBack)),
        ] {
            writer.apply_watcher_event(&Event::Apply(blueprint(name, phase)));
        }
        let mut woken: Vec<String> = waiting_for_content(&cache)
            .into_iter()
            .map(|r| r.name)
            .collect();
        woken.sort();
        assert_eq!(woken, ["new", "waiting"]);
    }

    #[test]
    fn dependents_read_a_blueprints_phase_and_version_not_its_progress() {
        let installing = blueprint("db", Some(BlueprintPhase::Installing));
        let mut progressed = installing.clone();
        progressed.status.as_mut().unwrap().plan = vec![windlass_api::blueprint::PlanStep {
            name: "Objects".into(),
            status: "Done".into(),
            message: String::new(),
        }];
        assert_eq!(AsDependency::of(&installing), AsDependency::of(&progressed));
        let succeeded = blueprint("db", Some(BlueprintPhase::Succeeded));
        assert_ne!(AsDependency::of(&installing), AsDependency::of(&succeeded));
        let mut upgraded = succeeded.clone();
        upgraded.status.as_mut().unwrap().version = Some("1.1.0".into());
        assert_ne!(AsDependency::of(&succeeded), AsDependency::of(&upgraded));
        let mut leaving = succeeded.clone();
        leaving.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::now()),
        );
        assert_ne!(AsDependency::of(&succeeded), AsDependency::of(&leaving));
    }
}
