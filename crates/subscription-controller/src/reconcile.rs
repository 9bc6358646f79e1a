//! The reconciler: dereference (the namespace's Subscriptions and Blueprints, the served
//! catalogs) -> resolve -> build the Blueprint -> apply it and the dependency Subscriptions ->
//! status. Every write goes through one field manager and is skipped when nothing changed, and
//! each step is idempotent, so the manager may stop at any point and the next reconcile finishes
//! the job.
//!
//! No finalizer: the Blueprint (controller ownerReference) and the dependency Subscriptions
//! (one ownerReference per requester) are garbage-collected with their owners, and the
//! Blueprint's own finalizer removes what it installed.

use std::{
    collections::HashMap,
    future::Future,
    sync::{Arc, Mutex},
    time::Duration,
};

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::ObjectMeta, jiff::Timestamp};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{Patch, PatchParams, PostParams},
    runtime::{
        WatchStreamExt,
        controller::Action,
        reflector::{self, ObjectRef, Store, reflector},
        watcher::{self, watcher},
    },
};
use serde_json::json;
use windlass_api::{
    Blueprint, Catalog, FIELD_MANAGER, Subscription,
    blueprint::ResolvedBundle,
    names::{annotations, controllers},
    subscription::SubscriptionSpec,
};
use windlass_catalog_store::CatalogStore;
use windlass_kit::{
    Metrics, Notice, OwnWrites, ProgressHold, ReconcileError, Scope, Shell, Stage, runner, status,
    synced::{NotSynced, ready_within, synced},
    triggers,
};

use crate::{
    catalogs, delisting,
    dependencies::{self, DependencyChange, NeighbourView},
    intent::{self, Target},
    resolution::{Resolution, ResolutionFailure, reasons},
    state::{self, Observation},
};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("reading {what}: {source}")]
    Read { what: String, source: kube::Error },
    #[error("applying Blueprint {name}: {source}")]
    Apply { name: String, source: kube::Error },
    #[error("removing the resume annotation from Blueprint {name}: {source}")]
    Resume { name: String, source: kube::Error },
    #[error("{action} dependency Subscription {name}: {source}")]
    Dependency {
        action: &'static str,
        name: String,
        source: kube::Error,
    },
    #[error("writing the status of Subscription {name}: {source}")]
    Status { name: String, source: kube::Error },
    #[error(transparent)]
    NotSynced(#[from] NotSynced),
}

impl ReconcileError for Error {
    fn stage(&self) -> Stage {
        match self {
            Error::Read { .. } | Error::NotSynced(_) => Stage::Read,
            Error::Apply { .. } | Error::Resume { .. } | Error::Dependency { .. } => Stage::Apply,
            Error::Status { .. } => Stage::Report,
        }
    }

    fn is_conflict(&self) -> bool {
        let source = match self {
            Error::NotSynced(_) => return false,
            Error::Read { source, .. }
            | Error::Apply { source, .. }
            | Error::Resume { source, .. }
            | Error::Dependency { source, .. }
            | Error::Status { source, .. } => source,
        };
        matches!(source, kube::Error::Api(s) if s.code == 409)
    }
}

/// What every reconcile shares.
pub struct Context {
    pub shell: Shell,
    pub store: Arc<CatalogStore>,
    /// Catalog objects, for their health (the store only has what was read successfully).
    pub catalogs: Store<Catalog>,
    /// When this controller started (catalogs may still be loading shortly after).
    pub started: Timestamp,
    /// The Subscriptions in scope (the controller's own cache).
    pub subscriptions: Store<Subscription>,
    /// The Blueprints in scope, their `managedFields` trimmed to the target's owners.
    pub blueprints: Store<Blueprint>,
    /// This controller's last writes of Subscription status and of Blueprints, until the
    /// caches show them.
    pub own_writes: OwnWrites,
    /// When this controller last wrote each Subscription's status: reworded progress waits.
    pub progress: ProgressHold,
}

/// How long to wait before trying again when a bundle could not be read, or the catalogs are
/// still being read after a start.
const RETRY: Duration = Duration::from_secs(30);

/// Runs the controller over `scope` until `shutdown` resolves.
pub async fn run(
    client: Client,
    scope: Scope,
    store: Arc<CatalogStore>,
    metrics: Arc<dyn Metrics>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let (catalogs, catalog_writer) = reflector::store::<Catalog>();
    let catalog_health = catalogs::catalog_phase_changes(Api::all(client.clone()), catalog_writer);
    let served = catalogs::served_content_changes(store.changes());
    let subscriptions = scope.api::<Subscription>(&client);
    let blueprints = scope.api::<Blueprint>(&client);
    // A reconcile does its whole work in one pass; its own status write needs no other.
    let controller = runner::controller_for_changes(
        subscriptions,
        watcher::Config::default(),
        triggers::besides_status,
    );
    let known = controller.store();
    let (blueprint_cache, blueprint_writer) = reflector::store::<Blueprint>();
    let blueprint_changes = reflector(
        blueprint_writer,
        watcher(blueprints, watcher::Config::default()).modify(intent::keep_target_owners),
    )
    .touched_objects();
    let ctx = Arc::new(Context {
        shell: Shell::new(client, scope, controllers::SUBSCRIPTION, metrics),
        store,
        catalogs,
        started: Timestamp::now(),
        subscriptions: known.clone(),
        blueprints: blueprint_cache,
        own_writes: OwnWrites::default(),
        progress: ProgressHold::default(),
    });
    // What the other Subscriptions last saw of each Blueprint (a few hundred bytes each); a
    // Blueprint leaves the map when it is being deleted (its finalizer makes sure that is seen).
    let neighbour_views: Mutex<HashMap<ObjectRef<Blueprint>, NeighbourView>> = Mutex::default();
    let results = controller
        // Instead of `.owns(Blueprint)`: a Blueprint matters to its own Subscription, and to
        // every other one in the namespace when what they read from it changes (what is
        // installed there, who requires whom); one watch serves both.
        .watches_stream(
            blueprint_changes,
            move |blueprint: Blueprint| {
                let Some(namespace) = blueprint.namespace() else {
                    return Vec::new();
                };
                let own = ObjectRef::<Blueprint>::new(&blueprint.name_any()).within(&namespace);
                let view = NeighbourView::of(&blueprint);
                let mut seen = neighbour_views.lock().unwrap_or_else(|e| e.into_inner());
                let unchanged = match seen.get(&own) {
                    Some(before) => *before == view,
                    None => view.inert(),
                };
                if view.leaving() {
                    seen.remove(&own);
                } else {
                    seen.insert(own, view);
                }
                drop(seen);
                let mut refs: Vec<ObjectRef<Subscription>> = if unchanged {
                    Vec::new()
                } else {
                    known
                        .state()
                        .iter()
                        .filter(|s| s.namespace().as_deref() == Some(namespace.as_str()))
                        .map(|s| ObjectRef::from_obj(&**s))
                        .collect()
                };
                refs.push(ObjectRef::new(&blueprint.name_any()).within(&namespace));
                refs
            },
        )
        .reconcile_all_on(served)
        .reconcile_all_on(catalog_health)
        .graceful_shutdown_on(shutdown)
        .run(
            |sub, ctx: Arc<Context>| async move {
                runner::observed(
                    ctx.shell.metrics.as_ref(),
                    sub.as_ref(),
                    Box::pin(reconcile(sub.clone(), ctx.clone())),
                )
                .await
            },
            runner::error_policy,
            ctx,
        );
    runner::drain(results).await;
}

/// Everything read from the namespace for one reconcile.
struct NamespaceView {
    subscriptions: Vec<Subscription>,
    blueprints: Vec<Blueprint>,
}

pub async fn reconcile(sub: Arc<Subscription>, ctx: Arc<Context>) -> Result<Action, Error> {
    let namespace = sub.namespace().unwrap_or_default();
    let name = sub.name_any();
    // Before both caches listed, a missing Blueprint would look uninstalled.
    synced(&ctx.subscriptions, "Subscription").await?;
    synced(&ctx.blueprints, "Blueprint").await?;
    let seen = read_namespace(&ctx, &sub).await?;
    let Some(sub) = seen.subscriptions.iter().find(|s| s.name_any() == name) else {
        let uid = sub.uid().unwrap_or_default();
        ctx.own_writes.forget(&uid);
        ctx.progress.forget(&uid);
        return Ok(Action::await_change());
    };
    if sub.metadata.deletion_timestamp.is_some() {
        // Its Blueprint, and dependencies nobody else needs, go with it (ownerReferences).
        return Ok(Action::await_change());
    }
    let live = seen
        .blueprints
        .iter()
        .find(|b| b.name_any() == name)
        .cloned();
    let installed = dependencies::installed_packages(&seen.blueprints);
    let requesters = dependencies::requesters(sub, &seen.subscriptions, &seen.blueprints);
    let required_by = dependencies::required_by(&requesters);
    let requester_specs: Vec<SubscriptionSpec> =
        requesters.iter().map(|s| s.spec.clone()).collect();
    let resume = live.as_ref().is_some_and(intent::wants_resume);
    let pin = live
        .as_ref()
        .and_then(|b| intent::pinned_by(b.managed_fields()))
        .filter(|_| !resume);
    // The reflector is empty until its first list; health and the loading check need it. A
    // reflector that cannot list must not hold every reconcile, hence the bound.
    let _ = ready_within(&ctx.catalogs, RETRY).await;

    // What is installed and no longer offered keeps its target: nothing is resolved for it.
    let target_bundle = live.as_ref().and_then(|b| b.spec.bundle.clone());
    let delisted_install = match &target_bundle {
        Some(bundle) => {
            let catalogs_api = Api::<Catalog>::all(ctx.shell.client.clone());
            catalogs::source_of(&ctx.store, &catalogs_api, bundle)
                .await
                .map_err(|source| Error::Read {
                    what: format!("Catalog {}", bundle.catalog.as_deref().unwrap_or_default()),
                    source,
                })?
                .and_then(|state| delisting::installed(&sub.spec, bundle, state.as_source()))
        }
        None => None,
    };
    let (mut resolution, delisted) = match delisted_install {
        Some(delisted) => (Err(delisted.failure()), Some(delisted)),
        None => catalogs::resolve(
            &ctx.store,
            &sub.spec,
            &installed,
            &requester_specs,
            target_bundle.is_none(),
        ),
    };
    if delisted.is_none()
        && let Err(failure) = &resolution
        && failure.may_be_catalogs_loading()
        && catalogs::still_loading(
            &ctx.store,
            &ctx.catalogs,
            sub.spec.catalog.as_deref(),
            ctx.started,
        )
    {
        // Reporting "not found" for what is only "not read yet" would flip the status (and
        // send Events) on every restart; the store's change signal ends the wait.
        return Ok(Action::requeue(RETRY));
    }
    // A pinned target keeps its own bundle, so the catalog's choice is not read then.
    if pin.is_none()
        && let Ok(found) = &mut resolution
        && let Err(failure) = catalogs::pin_digest(&ctx.store, found, live.as_ref()).await
    {
        resolution = Err(failure);
    }

    let blueprint = apply_blueprint(&ctx, sub, &resolution, live, pin.is_some(), resume).await?;
    if resume && let Some(b) = &blueprint {
        clear_resume(&ctx, sub, b).await?;
    }
    let dependency_problems = match &blueprint {
        Some(b) => {
            let problems =
                ensure_dependencies(&ctx, sub, &b.spec.dependencies, &seen.subscriptions).await?;
            (!b.spec.dependencies.is_empty()).then_some(problems)
        }
        None => None,
    };

    let mut views = catalogs::views(
        &ctx.store,
        &ctx.catalogs,
        &sub.spec,
        &resolution,
        blueprint.as_ref(),
    );
    // A removed catalog is the Delisted condition's news, not an unhealthy source.
    if delisted
        .as_ref()
        .is_some_and(|d| d.reason == windlass_api::names::reasons::delisting::CATALOG_REMOVED)
    {
        let removed = target_bundle.as_ref().and_then(|b| b.catalog.as_deref());
        views.retain(|v| Some(v.name.as_str()) != removed);
    }
    let unhealthy = state::catalog_problems(&views);
    let old = sub.status.clone().unwrap_or_default();
    let new = state::next_status(
        &old,
        &Observation {
            generation: sub.metadata.generation,
            blueprint: blueprint.as_ref(),
            pin: pin.as_ref(),
            resolution: &resolution,
            unhealthy_catalogs: &unhealthy,
            required_by: &required_by,
            dependency_problems: dependency_problems.as_deref(),
            delisted: delisted.as_ref(),
        },
        Timestamp::now(),
    );
    if sub.status.as_ref() != Some(&new) {
        let uid = sub.uid().unwrap_or_default();
        let now = std::time::Instant::now();
        // The Blueprint's progress reworded moments after the last write waits for the next.
        if let Some(wait) = ctx.progress.wait(&uid, &old, &new, now) {
            return Ok(Action::requeue(wait));
        }
        let api = Api::<Subscription>::namespaced(ctx.shell.client.clone(), &namespace);
        let written = status::apply_status(&api, &name, &new, None)
            .await
            .map_err(|source| Error::Status {
                name: name.clone(),
                source,
            })?;
        ctx.own_writes.wrote(&written);
        ctx.progress.wrote(&uid, now);
        for notice in state::notices(&old, &new) {
            ctx.shell
                .events
                .publish(&sub.object_ref(&()), &notice)
                .await;
        }
    }
    Ok(match &resolution {
        Err(f) if f.reason == reasons::BUNDLE_UNAVAILABLE => Action::requeue(RETRY),
        _ => Action::await_change(),
    })
}

/// The namespace's Subscriptions and Blueprints from the caches. Where a cache does not show
/// this controller's last write yet (of `sub`'s status, or of its Blueprint), that object is
/// read from the API server instead: the status is compared against what was written, not
/// written (and announced) twice. Every other object a cache shows late wakes this reconcile
/// again when its change arrives.
async fn read_namespace(ctx: &Context, sub: &Subscription) -> Result<NamespaceView, Error> {
    let namespace = sub.namespace().unwrap_or_default();
    let name = sub.name_any();
    let in_namespace = |object: &ObjectMeta| object.namespace.as_deref() == Some(&namespace);
    let mut subscriptions: Vec<Subscription> = ctx
        .subscriptions
        .state()
        .iter()
        .filter(|s| in_namespace(&s.metadata) && s.metadata.name.as_deref() != Some(&name))
        .map(|s| (**s).clone())
        .collect();
    let mut blueprints: Vec<Blueprint> = ctx
        .blueprints
        .state()
        .iter()
        .filter(|b| in_namespace(&b.metadata) && b.metadata.name.as_deref() != Some(&name))
        .map(|b| (**b).clone())
        .collect();
    let read = |what: &str| {
        let what = format!("{what} {namespace}/{name}");
        move |source| Error::Read { what, source }
    };
    let own = if ctx.own_writes.shown_in(sub) {
        Some(sub.clone())
    } else {
        Api::<Subscription>::namespaced(ctx.shell.client.clone(), &namespace)
            .get_opt(&name)
            .await
            .map_err(read("Subscription"))?
    };
    subscriptions.extend(own);
    let cached = ctx
        .blueprints
        .get(&ObjectRef::new(&name).within(&namespace));
    let blueprint = match cached {
        Some(b) if ctx.own_writes.shown_in(b.as_ref()) => Some((*b).clone()),
        Some(_) => {
            let mut fresh = Api::<Blueprint>::namespaced(ctx.shell.client.clone(), &namespace)
                .get_opt(&name)
                .await
                .map_err(read("Blueprint"))?;
            if let Some(fresh) = &mut fresh {
                intent::keep_target_owners(fresh);
            }
            fresh
        }
        None => None,
    };
    blueprints.extend(blueprint);
    // In name order, as a list returns them: what is derived from them is stable.
    subscriptions.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    blueprints.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    Ok(NamespaceView {
        subscriptions,
        blueprints,
    })
}

/// Applies the Blueprint when its intent changed and returns it as it now is. Nothing is
/// applied while nothing was ever resolved, or while the Blueprint is being deleted. A resume
/// always applies: even when the pinned target equals the catalog's choice, the forced apply is
/// what makes the target this controller's again.
async fn apply_blueprint(
    ctx: &Context,
    sub: &Subscription,
    resolution: &Result<Resolution, ResolutionFailure>,
    live: Option<Blueprint>,
    pinned: bool,
    resume: bool,
) -> Result<Option<Blueprint>, Error> {
    if live
        .as_ref()
        .is_some_and(|b| b.metadata.deletion_timestamp.is_some())
    {
        return Ok(live);
    }
    let target = match (resolution, &live) {
        (Ok(_), Some(l)) if pinned => Target::kept(&l.spec),
        (Ok(found), _) => Target::resolved(found),
        (Err(_), Some(l)) => Target::kept(&l.spec),
        (Err(_), None) => return Ok(None),
    };
    let desired = intent::desired_blueprint(sub, target, !pinned);
    if !resume
        && let Some(l) = &live
        && intent::is_current(l, &desired)
    {
        return Ok(live);
    }
    let name = sub.name_any();
    let api = Api::<Blueprint>::namespaced(
        ctx.shell.client.clone(),
        &sub.namespace().unwrap_or_default(),
    );
    let applied = api
        .patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&desired.document()),
        )
        .await
        .map_err(|source| Error::Apply {
            name: name.clone(),
            source,
        })?;
    ctx.own_writes.wrote(&applied);
    Ok(Some(applied))
}

/// The resume was applied above (target included, forced): now the annotation goes.
async fn clear_resume(
    ctx: &Context,
    sub: &Subscription,
    blueprint: &Blueprint,
) -> Result<(), Error> {
    let name = blueprint.name_any();
    let cleared = Api::<Blueprint>::namespaced(
        ctx.shell.client.clone(),
        &sub.namespace().unwrap_or_default(),
    )
    .patch(
        &name,
        &PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        },
        &Patch::Merge(json!({"metadata": {"annotations": {annotations::RESUME: null}}})),
    )
    .await
    .map_err(|source| Error::Resume {
        name: name.clone(),
        source,
    })?;
    ctx.own_writes.wrote(&cleared);
    let note = format!(
        "the target follows the catalog again: {}",
        blueprint.spec.cluster_service_version_name
    );
    let notice = Notice::normal("Resumed", note);
    ctx.shell
        .events
        .publish(&sub.object_ref(&()), &notice)
        .await;
    Ok(())
}

/// Creates and (dis)owns dependency Subscriptions; returns the problems a person must fix.
async fn ensure_dependencies(
    ctx: &Context,
    sub: &Subscription,
    dependencies: &[ResolvedBundle],
    subscriptions: &[Subscription],
) -> Result<Vec<String>, Error> {
    let api = Api::<Subscription>::namespaced(
        ctx.shell.client.clone(),
        &sub.namespace().unwrap_or_default(),
    );
    let mut problems = Vec::new();
    for change in dependencies::plan(sub, dependencies, subscriptions) {
        match change {
            DependencyChange::Create { metadata, spec } => {
                let subscription = Subscription {
                    metadata: *metadata,
                    spec: *spec,
                    status: None,
                };
                let name = subscription.name_any();
                let params = PostParams {
                    field_manager: Some(FIELD_MANAGER.into()),
                    ..Default::default()
                };
                match api.create(&params, &subscription).await {
                    Ok(_) => {
                        let note = format!("created Subscription {name} for a dependency");
                        let notice = Notice::normal("DependencySubscribed", note);
                        ctx.shell.events.publish(&sub.object_ref(&()), &notice).await;
                    }
                    // Also when another requester created it meanwhile (409): the retry finds
                    // it and adds this Subscription as an owner.
                    Err(source) => {
                        return Err(Error::Dependency {
                            action: "creating",
                            name,
                            source,
                        });
                    }
                }
            }
            DependencyChange::SetOwners {
                name,
                resource_version,
                owners,
            } => {
                // resourceVersion makes the merge patch conditional: owners another requester
                // added meanwhile are not overwritten (a conflict retries with a fresh list).
                let patch = json!({"metadata": {
                    "resourceVersion": resource_version,
                    "ownerReferences": owners,
                }});
                let params = PatchParams {
                    field_manager: Some(FIELD_MANAGER.into()),
                    ..Default::default()
                };
                api.patch(&name, &params, &Patch::Merge(patch))
                    .await
                    .map_err(|source| Error::Dependency {
                        action: "setting the owners of",
                        name,
                        source,
                    })?;
            }
            DependencyChange::NameTaken {
                package,
                name,
                holds,
            } => problems.push(format!(
                "dependency {package} needs a Subscription, but {name} already exists for package {holds}; create a Subscription for {package} (any name) and it will be used"
            )),
        }
    }
    Ok(problems)
}
