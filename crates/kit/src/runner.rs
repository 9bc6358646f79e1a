//! Running a reconciler: one span per reconcile, timing and metrics by stage, the error policy,
//! the finalizer wrapper and the log of failed reconciles.

use std::{fmt, future::Future, sync::Arc, time::Duration, time::Instant};

use futures::{FutureExt, Stream, StreamExt};
use kube::{
    Api, Resource, ResourceExt,
    runtime::{
        Controller, Predicate, PredicateConfig, WatchStreamExt,
        controller::{self, Action},
        finalizer::{self, Event as Finalizer},
        reflector::{self, reflector},
        watcher::{self, watcher},
    },
};
use serde::{Serialize, de::DeserializeOwned};
use tracing::{Instrument, warn};

/// How many objects one controller reconciles at once. Without a bound, a burst of new objects
/// (a thousand Subscriptions created together) starts every reconcile at once, each holding
/// its bundle content, revisions and plans in memory while they all wait on the same API
/// server; a few in flight keep the API server as busy and the manager's memory flat.
pub const RECONCILE_CONCURRENCY: u16 = 8;

/// The runtime settings every controller starts with.
pub fn controller_config() -> controller::Config {
    controller::Config::default().concurrency(RECONCILE_CONCURRENCY)
}

/// How many changes a shared watch holds for a subscriber that has not taken them yet; beyond
/// that the watch waits for it.
const SHARED_WATCH_BUFFER: usize = 1024;

/// A controller whose own watch also feeds other triggers of it.
pub struct SharedController<K: Resource + Clone + fmt::Debug + 'static>
where
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    pub controller: Controller<K>,
    /// Each yields every changed object once the controller's cache holds that change, for
    /// `watches_shared_stream`: a reconcile it wakes reads the change from the cache. (A
    /// second watch of the same kind sees a change at its own moment, possibly before the
    /// cache does, and a reconcile woken by it may decide from the state before.)
    pub subscribers: Vec<reflector::ReflectHandle<K>>,
    /// The watch feeding the cache and the subscribers: runs until dropped (see [`drain_with`]).
    pub watch: futures::future::BoxFuture<'static, ()>,
}

/// [`controller_for`] whose watch also feeds `subscribers` other triggers.
pub fn shared_controller_for<K>(
    api: Api<K>,
    config: watcher::Config,
    subscribers: usize,
) -> SharedController<K>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default + Clone + Eq + std::hash::Hash + fmt::Debug + Unpin + Send + Sync,
{
    let (reader, writer) = reflector::store_shared(SHARED_WATCH_BUFFER);
    let own = writer
        .subscribe()
        .expect("a shared store can be subscribed to");
    let subscribers = (0..subscribers)
        .map(|_| {
            writer
                .subscribe()
                .expect("a shared store can be subscribed to")
        })
        .collect();
    let watch = trimmed_watch(api, config)
        .reflect_shared(writer)
        .for_each(|event| async move {
            if let Err(error) = event {
                warn!(%error, "watch failed; retrying");
            }
        })
        .boxed();
    SharedController {
        controller: Controller::for_shared_stream(own, reader).with_config(controller_config()),
        subscribers,
        watch,
    }
}

/// A controller over `api` whose cache keeps each object without its `managedFields`: for a
/// ClusterServiceVersion they mirror every field path of its definition and can be as large
/// as the rest of it, and no reconcile reads them from the cache (what needs them reads the
/// object from the API server).
pub fn controller_for<K>(api: Api<K>, config: watcher::Config) -> Controller<K>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default + Clone + Eq + std::hash::Hash + fmt::Debug + Unpin,
{
    let (reader, writer) = reflector::store();
    let objects = reflector(writer, trimmed_watch(api, config)).applied_objects();
    Controller::for_stream(objects, reader).with_config(controller_config())
}

/// The same, woken by a change of an object only when `predicate` (a hash of what the
/// reconcile reads of it) changed: [`crate::triggers::besides_status`] keeps a controller from
/// being woken by its own status writes. Only for a reconcile that finishes its work in one
/// pass (it never waits for its own status to come back).
pub fn controller_for_changes<K, P>(
    api: Api<K>,
    config: watcher::Config,
    predicate: P,
) -> Controller<K>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default + Clone + Eq + std::hash::Hash + fmt::Debug + Unpin,
    P: Predicate<K> + Send + Unpin + 'static,
{
    let (reader, writer) = reflector::store();
    let objects = reflector(writer, trimmed_watch(api, config))
        .applied_objects()
        .predicate_filter(predicate, PredicateConfig::default());
    Controller::for_stream(objects, reader).with_config(controller_config())
}

fn trimmed_watch<K>(
    api: Api<K>,
    config: watcher::Config,
) -> impl Stream<Item = watcher::Result<watcher::Event<K>>> + Send
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default + Clone,
{
    // Backing off after a failed list or watch keeps an API server outage from becoming a
    // busy loop of retries.
    watcher(api, config)
        .default_backoff()
        .modify(|object: &mut K| object.meta_mut().managed_fields = None)
}

/// The stages every reconcile goes through, in order. Errors say which stage failed, and the
/// metrics count failures by stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Reading the object and what it points to from the cluster (and registries).
    Read,
    /// Deciding what should be (pure); fails only on an internal contradiction.
    Decide,
    /// Building the desired objects.
    Build,
    /// Applying and deleting objects.
    Apply,
    /// Writing status and bookkeeping.
    Report,
    /// Removing what an object created, when it is deleted.
    Cleanup,
}

impl Stage {
    /// The metric label: `read`, `decide`, `build`, `apply`, `report` or `cleanup`.
    pub fn label(self) -> &'static str {
        match self {
            Stage::Read => "read",
            Stage::Decide => "decide",
            Stage::Build => "build",
            Stage::Apply => "apply",
            Stage::Report => "report",
            Stage::Cleanup => "cleanup",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// What every controller's error tells the kit.
pub trait ReconcileError: std::error::Error + Send + Sync + 'static {
    /// The stage that failed.
    fn stage(&self) -> Stage;

    /// Whether someone changed an object since it was read (retry at once, decide again).
    fn is_conflict(&self) -> bool {
        false
    }

    /// When to try again.
    fn retry_after(&self) -> Duration {
        if self.is_conflict() {
            Duration::from_secs(1)
        } else {
            Duration::from_secs(10)
        }
    }
}

/// How the manager observes reconciles (count, duration, failures by stage).
pub trait Metrics: Send + Sync {
    fn reconciled(&self, duration: Duration, failed_stage: Option<&'static str>);
}

/// Runs one reconcile inside a span naming the object, and records its duration and outcome.
pub async fn observed<K, E, F>(metrics: &dyn Metrics, object: &K, reconcile: F) -> Result<Action, E>
where
    K: Resource<DynamicType = ()>,
    E: ReconcileError,
    F: Future<Output = Result<Action, E>>,
{
    let span = tracing::info_span!(
        "reconcile",
        kind = %K::kind(&()),
        namespace = %object.meta().namespace.as_deref().unwrap_or_default(),
        name = %object.meta().name.as_deref().unwrap_or_default(),
    );
    let start = Instant::now();
    let result = reconcile.instrument(span).await;
    metrics.reconciled(
        start.elapsed(),
        result.as_ref().err().map(|e| e.stage().label()),
    );
    result
}

/// The error policy every controller uses: log, then retry after what the error asks.
pub fn error_policy<K, E: ReconcileError, C>(object: Arc<K>, error: &E, _ctx: Arc<C>) -> Action
where
    K: Resource<DynamicType = ()>,
{
    if !error.is_conflict() {
        warn!(
            kind = %K::kind(&()),
            name = %object.meta().name.as_deref().unwrap_or_default(),
            stage = %error.stage(),
            %error,
            "reconcile failed; retrying"
        );
    }
    Action::requeue(error.retry_after())
}

/// Drives a controller's result stream to its end (the controller's shutdown), logging
/// failures the error policy has not already told about.
/// [`drain`] while `watch` (a [`SharedController`]'s) runs; it stops with the controller.
pub async fn drain_with<S, T, E>(watch: futures::future::BoxFuture<'static, ()>, results: S)
where
    S: Stream<Item = Result<T, E>>,
    E: fmt::Display,
{
    futures::pin_mut!(results);
    let drained = drain(results);
    futures::pin_mut!(drained);
    futures::future::select(watch, drained).await;
}

pub async fn drain<S, T, E>(results: S)
where
    S: Stream<Item = Result<T, E>>,
    E: fmt::Display,
{
    results
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "reconcile ended with an error");
            }
        })
        .await;
}

/// What a finalizer's failure became: the controller's own error, or the finalizer's.
pub trait FromFinalizerError: Sized {
    fn from_finalizer(object: String, message: String) -> Self;
}

/// Runs `apply` for a live object and `cleanup` for one being deleted, keeping `finalizer` on
/// the object until `cleanup` succeeded (kube's finalizer helper, with errors mapped back to
/// the controller's own).
pub async fn with_finalizer<K, E, A, AF, C, CF>(
    api: &Api<K>,
    finalizer_name: &str,
    object: Arc<K>,
    apply: A,
    cleanup: C,
) -> Result<Action, E>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + fmt::Debug,
    E: ReconcileError + FromFinalizerError,
    A: FnOnce(Arc<K>) -> AF,
    AF: Future<Output = Result<Action, E>>,
    C: FnOnce(Arc<K>) -> CF,
    CF: Future<Output = Result<Action, E>>,
{
    let name = object.name_any();
    finalizer::finalizer(api, finalizer_name, object, |event| async move {
        match event {
            Finalizer::Apply(object) => apply(object).await,
            Finalizer::Cleanup(object) => cleanup(object).await,
        }
    })
    .await
    .map_err(|error| match error {
        finalizer::Error::ApplyFailed(e) | finalizer::Error::CleanupFailed(e) => e,
        other => E::from_finalizer(name, other.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("boom")]
    struct Conflict;

    impl ReconcileError for Conflict {
        fn stage(&self) -> Stage {
            Stage::Report
        }
        fn is_conflict(&self) -> bool {
            true
        }
    }

    #[test]
    fn conflicts_retry_at_once_and_stages_label_metrics() {
        assert_eq!(Conflict.retry_after(), Duration::from_secs(1));
        assert_eq!(Stage::Report.label(), "report");
        assert_eq!(Stage::Cleanup.to_string(), "cleanup");
    }
}
