//! The catalogs as the Subscription controller sees them: what the store serves (to resolve
//! against and to pin bundle digests), the Catalog objects (for their health), and the signals
//! that make every Subscription resolve again.

use std::collections::{BTreeMap, BTreeSet};

use futures::{Stream, StreamExt};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::{
    Api, ResourceExt,
    runtime::{
        WatchStreamExt as _,
        reflector::{ObjectRef, Store, store::Writer},
        watcher,
    },
};
use windlass_api::{
    Blueprint, Catalog, blueprint::ResolvedBundle, catalog::CatalogPhase, condition::find,
    subscription::SubscriptionSpec,
};
use windlass_catalog_store::{CatalogStore, StoreError};

use crate::{
    delisting::{self, Delisted},
    resolution::{self, InstalledPackage, Resolution, ResolutionFailure, ResolutionInput, reasons},
    state::CatalogView,
};

/// Fires whenever the store serves new content.
pub fn served_content_changes(
    changes: tokio::sync::watch::Receiver<u64>,
) -> impl Stream<Item = ()> + Send {
    futures::stream::unfold(changes, |mut rx| async move {
        rx.changed().await.ok()?;
        Some(((), rx))
    })
}

/// Keeps the Catalog reflector filled and fires when a Catalog's phase changes (not on every
/// poll, which only moves timestamps) or a Catalog is deleted (installs from it are then
/// delisted).
pub fn catalog_phase_changes(
    api: Api<Catalog>,
    writer: Writer<Catalog>,
) -> impl Stream<Item = ()> + Send {
    let mut phases = BTreeMap::new();
    watcher(api, watcher::Config::default())
        .default_backoff()
        .reflect(writer)
        .filter_map(move |event| {
            let changed = match event {
                Ok(watcher::Event::Apply(catalog) | watcher::Event::InitApply(catalog)) => {
                    let phase = catalog.status.as_ref().and_then(|s| s.phase);
                    phases.insert(catalog.name_any(), phase) != Some(phase)
                }
                Ok(watcher::Event::Delete(catalog)) => {
                    phases.remove(&catalog.name_any());
                    true
                }
                Ok(watcher::Event::Init | watcher::Event::InitDone) | Err(_) => false,
            };
            futures::future::ready(changed.then_some(()))
        })
}

/// Resolves against what the store serves: the catalog the Subscription names, or all of them
/// merged by priority, without what they delist. A Subscription that has installed nothing yet
/// (`first_install`) and asks for a delisted package or `startingCSV` is refused, and the
/// refusal is returned as well.
pub fn resolve(
    store: &CatalogStore,
    spec: &SubscriptionSpec,
    installed: &[InstalledPackage],
    requesters: &[SubscriptionSpec],
    first_install: bool,
) -> (Result<Resolution, ResolutionFailure>, Option<Delisted>) {
    let selection = match store.select(spec.catalog.as_deref()) {
        Ok(selection) => selection,
        Err(error) => {
            let failure = match error {
                StoreError::NoCatalogs => ResolutionFailure::new(
                    reasons::NO_CATALOG,
                    "no catalog is served (create a Catalog, or enable the built-in one)",
                ),
                other => ResolutionFailure::new(reasons::CATALOG_NOT_SERVED, other.to_string()),
            };
            return (Err(failure), None);
        }
    };
    if first_install && let Some(refusal) = delisting::refused(spec, &selection.delisted) {
        return (Err(refusal.failure()), Some(refusal));
    }
    let origins = selection
        .origin
        .iter()
        .map(|(package, served)| (package.clone(), served.name.clone()))
        .collect();
    let result = resolution::resolve(&ResolutionInput {
        subscription: spec,
        catalog: &selection.catalog,
        origins: &origins,
        installed,
        requesters,
    })
    .map_err(|failure| delisting::explain(failure, spec, &selection.delisted));
    (result, None)
}

/// What is known of the catalog `bundle` was installed from: served (with its delisting),
/// gone, or there but not served. Asked of the API server when the store does not serve it,
/// so a deletion is never mistaken for a catalog that is only being read.
pub async fn source_of(
    store: &CatalogStore,
    api: &Api<Catalog>,
    bundle: &ResolvedBundle,
) -> Result<Option<SourceState>, kube::Error> {
    let Some(catalog) = bundle.catalog.as_deref() else {
        return Ok(None);
    };
    if let Some(served) = store.get(catalog) {
        return Ok(Some(SourceState::Served(served.listing.delisting.clone())));
    }
    Ok(Some(match api.get_opt(catalog).await? {
        Some(object) if object.metadata.deletion_timestamp.is_none() => SourceState::NotServed,
        _ => SourceState::Removed,
    }))
}

/// [`delisting::Source`], owned.
#[derive(Clone, Debug)]
pub enum SourceState {
    Served(windlass_catalog::listing::Delisting),
    Removed,
    NotServed,
}

impl SourceState {
    pub fn as_source(&self) -> delisting::Source<'_> {
        match self {
            SourceState::Served(delisting) => delisting::Source::Served(delisting),
            SourceState::Removed => delisting::Source::Removed,
            SourceState::NotServed => delisting::Source::NotServed,
        }
    }
}

/// How long a Catalog that is neither served nor failed counts as still being read.
const LOADING_GRACE: SignedDuration = SignedDuration::from_secs(120);

/// Whether a Catalog the Subscription may resolve against (the one it names, or any) has been
/// neither served nor failed yet, shortly after the manager started or the Catalog was created.
/// The store fills catalog by catalog, so "not found" may only mean "not read yet"; past the
/// grace period it is reported, so a Catalog stuck elsewhere cannot hide the answer for ever.
pub fn still_loading(
    store: &CatalogStore,
    catalogs: &Store<Catalog>,
    only: Option<&str>,
    started: Timestamp,
) -> bool {
    let now = Timestamp::now();
    let recent = |t: Timestamp| now.duration_since(t) < LOADING_GRACE;
    catalogs.state().iter().any(|c| {
        let name = c.name_any();
        let phase = c.status.as_ref().and_then(|s| s.phase);
        let created = c.metadata.creation_timestamp.as_ref().map(|t| t.0);
        only.is_none_or(|n| n == name)
            && store.get(&name).is_none()
            && phase != Some(CatalogPhase::Unreachable)
            && (recent(started) || created.is_some_and(recent))
    })
}

/// Pins the target's content digest without reading the bundle (a location pinned by digest
/// answers at once, a tag with one manifest request): content is pulled only by the Blueprint
/// controller, once the namespace's policies allow the install. The digest the Blueprint
/// already has for the same bundle is passed along, so a tag the store read for this catalog
/// costs nothing on every reconcile; content republished under a pinned name shows up as a
/// new digest.
pub async fn pin_digest(
    store: &CatalogStore,
    resolution: &mut Resolution,
    live: Option<&Blueprint>,
) -> Result<(), ResolutionFailure> {
    let target = &mut resolution.target;
    let Some(catalog) = target.catalog.clone() else {
        return Ok(());
    };
    let known = live
        .and_then(|b| b.spec.bundle.as_ref())
        .filter(|b| {
            b.cluster_service_version_name == target.cluster_service_version_name
                && b.catalog == target.catalog
        })
        .and_then(|b| b.digest.clone());
    let csv_name = target.cluster_service_version_name.clone();
    match store.digest_of(&catalog, &csv_name, known.as_deref()).await {
        Ok(digest) => target.digest = Some(digest),
        Err(error) => {
            return Err(ResolutionFailure::new(
                reasons::BUNDLE_UNAVAILABLE,
                format!("{csv_name} was resolved but its bundle cannot be read: {error}"),
            ));
        }
    }
    Ok(())
}

/// The catalogs a Subscription uses (the one it names, or those its bundles come from), as
/// [`crate::state::catalog_problems`] judges them.
pub fn views(
    store: &CatalogStore,
    catalogs: &Store<Catalog>,
    spec: &SubscriptionSpec,
    resolution: &Result<Resolution, ResolutionFailure>,
    blueprint: Option<&Blueprint>,
) -> Vec<CatalogView> {
    let mut names: BTreeSet<String> = spec.catalog.iter().cloned().collect();
    let bundles: Vec<&ResolvedBundle> = match (resolution, blueprint) {
        (Ok(r), _) => std::iter::once(&r.target).chain(&r.dependencies).collect(),
        (Err(_), Some(b)) => b.spec.bundle.iter().chain(&b.spec.dependencies).collect(),
        (Err(_), None) => Vec::new(),
    };
    names.extend(bundles.iter().filter_map(|b| b.catalog.clone()));
    names
        .into_iter()
        .map(|name| {
            let object = catalogs.get(&ObjectRef::new(&name));
            let status = object.as_ref().and_then(|c| c.status.clone());
            CatalogView {
                phase: object
                    .as_ref()
                    .map(|_| status.as_ref().and_then(|s| s.phase)),
                message: status
                    .as_ref()
                    .and_then(|s| find(&s.conditions, "Serving").map(|c| c.message.clone()))
                    .unwrap_or_default(),
                served: store.get(&name).is_some(),
                name,
            }
        })
        .collect()
}
