//! The Package view controller: keeps one cluster-scoped `Package` per package each Catalog
//! serves, so `kubectl get packages.windlass.dev` answers "what can we install here?" with the
//! default channel, the version a new install gets, the provider and whether it is listed.
//!
//! The views are computed ([`view`], pure) from what this process's Catalog controller serves:
//! after the listing gate, with the Catalog's `spec.delisted`. They are a view: installs are
//! resolved from the served catalogs, never from these objects. Each view is owned by its
//! Catalog (deleted with it) and written only by the manager; a hand edit is put back.
//!
//! Cheap for large catalogs: the views of a catalog are computed once per content and
//! delisting, the live views are read from a watch cache, and only views that differ are
//! written (a settled cluster gets no writes). Writes go out a few at a time.

pub mod view;

use std::{
    collections::HashMap,
    future::Future,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, Preconditions},
    runtime::{
        WatchStreamExt,
        controller::Action,
        reflector::{self, Store},
        watcher,
    },
};
use serde_json::json;
use tracing::info;
use windlass_api::{Catalog, FIELD_MANAGER, Package, names::controllers};
use windlass_catalog_store::{CatalogStore, ListingState, ServedCatalog};
use windlass_kit::{
    Metrics, ReconcileError, Scope, Shell, Stage, runner, status,
    synced::{NotSynced, synced},
};

use crate::view::{DesiredView, LiveView};

/// Views written at once.
const PARALLEL_WRITES: usize = 8;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("writing Package {name}: {source}")]
    Write {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("deleting Package {name}: {source}")]
    Delete {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error(transparent)]
    NotSynced(#[from] NotSynced),
}

impl ReconcileError for Error {
    fn stage(&self) -> Stage {
        match self {
            Error::Write { .. } | Error::Delete { .. } => Stage::Apply,
            Error::NotSynced(_) => Stage::Read,
        }
    }

    fn is_conflict(&self) -> bool {
        matches!(
            self,
            Error::Write { source, .. } | Error::Delete { source, .. }
                if matches!(source, kube::Error::Api(s) if s.code == 409)
        )
    }
}

/// The views of one catalog, computed for the content and delisting they were computed from.
struct Computed {
    digest: String,
    listing: ListingState,
    views: Arc<[DesiredView]>,
}

pub struct Context {
    shell: Shell,
    store: Arc<CatalogStore>,
    /// Every Package in the cluster, from one watch.
    live: Store<Package>,
    computed: Mutex<HashMap<String, Computed>>,
}

/// Runs the controller until `shutdown` resolves. It reads what this process's Catalog
/// controller serves, so it runs beside it.
pub async fn run(
    client: Client,
    store: Arc<CatalogStore>,
    metrics: Arc<dyn Metrics>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let (live, writer) = reflector::store::<Package>();
    // Any change to a view (a hand edit, a deletion) is compared again; the comparison is in
    // memory, so our own writes cost little.
    let views_changed = watcher(
        Api::<Package>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .reflect(writer)
    .touched_objects()
    .filter_map(|event| futures::future::ready(event.ok().map(|_| ())));
    let served_changed = futures::stream::unfold(store.changes(), |mut rx| async move {
        rx.changed().await.ok()?;
        Some(((), rx))
    });
    let ctx = Arc::new(Context {
        shell: Shell::new(
            client.clone(),
            Scope::cluster(),
            controllers::PACKAGE_VIEW,
            metrics,
        ),
        store,
        live,
        computed: Mutex::default(),
    });
    let results = runner::controller_for(Api::<Catalog>::all(client), watcher::Config::default())
        // A burst of view events (our own writes) becomes one comparison per catalog.
        .with_config(runner::controller_config().debounce(Duration::from_millis(500)))
        .reconcile_all_on(views_changed)
        .reconcile_all_on(served_changed)
        .graceful_shutdown_on(shutdown)
        .run(
            |catalog, ctx: Arc<Context>| async move {
                runner::observed(
                    ctx.shell.metrics.as_ref(),
                    catalog.as_ref(),
                    reconcile(catalog.clone(), ctx.clone()),
                )
                .await
            },
            runner::error_policy,
            ctx,
        );
    runner::drain(results).await;
}

impl Context {
    /// The views `served` should have, computed again only when its content or listing moved.
    fn views(&self, name: &str, served: &ServedCatalog) -> Arc<[DesiredView]> {
        let mut computed = self.computed.lock().expect("view cache poisoned");
        if let Some(done) = computed.get(name)
            && done.digest == served.digest
            && done.listing == served.listing
        {
            return done.views.clone();
        }
        let views: Arc<[DesiredView]> = view::desired(name, served).into();
        computed.insert(
            name.to_string(),
            Computed {
                digest: served.digest.clone(),
                listing: served.listing.clone(),
                views: views.clone(),
            },
        );
        views
    }
}

pub async fn reconcile(catalog: Arc<Catalog>, ctx: Arc<Context>) -> Result<Action, Error> {
    let name = catalog.name_any();
    let uid = catalog.uid().unwrap_or_default();
    if catalog.metadata.deletion_timestamp.is_some() {
        // Its views are garbage-collected with it (they name it as owner).
        return Ok(Action::await_change());
    }
    // Comparing against a cache that has not listed yet would rewrite every view.
    synced(&ctx.live, "Package").await?;
    let desired = match ctx.store.get(&name) {
        Some(served) => ctx.views(&name, &served),
        // Not read yet (just after a start): the views stay as they are, unless the
        // Catalog's status says nothing is served from it any more.
        None if nothing_served(&catalog) => Arc::from([]),
        None => return Ok(Action::await_change()),
    };
    let live = ctx.live.state();
    let live_views: Vec<LiveView> = live
        .iter()
        .map(|p| LiveView {
            name: p.metadata.name.as_deref().unwrap_or_default(),
            labels: p.metadata.labels.as_ref().unwrap_or(&EMPTY),
            owners: p
                .owner_references()
                .iter()
                .map(|o| o.uid.as_str())
                .collect(),
            status: p.status.as_ref(),
        })
        .collect();
    let plan = view::plan(&name, &uid, &desired, &live_views);
    if plan.apply.is_empty() && plan.delete.is_empty() {
        return Ok(Action::await_change());
    }
    let started = Instant::now();
    let api = Api::<Package>::all(ctx.shell.client.clone());
    let owner = owner(&catalog);
    let writes = plan.apply.len();
    // Owned work items: a stream of futures borrowing from the plan trips the compiler's
    // higher-ranked lifetime checks inside the controller's future.
    let work: Vec<(DesiredView, bool)> = plan
        .apply
        .iter()
        .map(|(view, with_metadata)| ((*view).clone(), *with_metadata))
        .collect();
    futures::stream::iter(work.into_iter().map(|(view, with_metadata)| {
        let api = api.clone();
        let owner = owner.clone();
        async move { write(&api, &view, with_metadata, &owner).await }
    }))
    .buffer_unordered(PARALLEL_WRITES)
    .try_collect::<Vec<()>>()
    .await?;
    for gone in &plan.delete {
        let uid = live
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some(gone.as_str()))
            .and_then(|p| p.uid());
        let params = DeleteParams {
            preconditions: uid.map(|uid| Preconditions {
                uid: Some(uid),
                resource_version: None,
            }),
            ..Default::default()
        };
        match api.delete(gone, &params).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
            Err(source) => {
                return Err(Error::Delete {
                    name: gone.clone(),
                    source,
                });
            }
        }
    }
    info!(
        catalog = %name,
        written = writes,
        deleted = plan.delete.len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "package views updated"
    );
    Ok(Action::await_change())
}

static EMPTY: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();

/// Whether the Catalog has been read and serves nothing (its content was refused or never
/// read successfully): its views go.
fn nothing_served(catalog: &Catalog) -> bool {
    catalog
        .status
        .as_ref()
        .is_some_and(|s| s.phase.is_some() && s.resolved_digest.is_none())
}

fn owner(catalog: &Catalog) -> OwnerReference {
    OwnerReference {
        api_version: Catalog::api_version(&()).into_owned(),
        kind: Catalog::kind(&()).into_owned(),
        name: catalog.name_any(),
        uid: catalog.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(false),
    }
}

/// Applies a view: its metadata (labels, owner) when asked, then its status.
async fn write(
    api: &Api<Package>,
    view: &DesiredView,
    with_metadata: bool,
    owner: &OwnerReference,
) -> Result<(), Error> {
    let fail = |source| Error::Write {
        name: view.name.clone(),
        source,
    };
    if with_metadata {
        let object = json!({
            "apiVersion": Package::api_version(&()),
            "kind": Package::kind(&()),
            "metadata": {
                "name": view.name,
                "labels": view.labels,
                "ownerReferences": [owner],
            },
            "spec": {},
        });
        api.patch(
            &view.name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&object),
        )
        .await
        .map_err(fail)?;
    }
    status::apply_status(api, &view.name, &view.status, None)
        .await
        .map_err(fail)?;
    Ok(())
}
