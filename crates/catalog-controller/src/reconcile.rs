//! The Catalog reconciler: read the pull Secret -> read the source -> serve -> status.
//!
//! Polls are remembered per Catalog (uid, generation, time, outcome), so a reconcile that our
//! own status write triggers does not pull again; the registry is asked again only when the
//! spec changed or the poll interval passed. Status is written only when it changed.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use futures::StreamExt;
use k8s_openapi::{api::core::v1::Secret, jiff::Timestamp};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{DeleteParams, Patch, PatchParams},
    runtime::{
        Controller, WatchStreamExt,
        controller::Action,
        events::{Event, EventType, Recorder, Reporter},
        watcher,
    },
};
use serde_json::json;
use tracing::{Instrument, info, warn};
use windlass_api::{
    Catalog, CatalogSpec, CatalogStatus, FIELD_MANAGER, MANAGED_BY_LABEL,
    catalog::CatalogSourceType, observe::ReconcileMetrics,
};

use crate::{
    credentials::{self, Credentials},
    source::{Reader, SourceError, keep_serving},
    status::{self, Failure, Observation, Transition},
    store::CatalogStore,
};

/// Name of the Catalog `ensure_builtin` manages.
pub const BUILTIN_NAME: &str = "builtin";
/// Its priority: below every user catalog (default 0), so theirs win.
pub const BUILTIN_PRIORITY: i32 = -100;
pub const BUILTIN_DISPLAY_NAME: &str = "windlass built-in samples";
/// `spec.pollIntervalSeconds` when unset.
pub const DEFAULT_POLL_INTERVAL_SECONDS: i64 = 600;
/// Where pull Secrets live when `POD_NAMESPACE` is unset.
pub const DEFAULT_NAMESPACE: &str = "windlass-system";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("writing the status of catalog {name}: {source}")]
    Status { name: String, source: kube::Error },
}

impl Error {
    /// A stable label for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Status { .. } => "status",
        }
    }
}

/// How the controller runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// The manager's namespace: Catalogs' pull Secrets are read there.
    pub namespace: String,
    /// Only Catalogs matching this label selector (all when `None`).
    pub label_selector: Option<String>,
    /// How soon a failed poll is tried again (never later than the poll interval).
    pub retry_after_failure: Duration,
}

impl Options {
    /// `POD_NAMESPACE` (default `windlass-system`), every Catalog, retry failures after 60 s.
    pub fn from_env() -> Options {
        Options {
            namespace: std::env::var("POD_NAMESPACE")
                .ok()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| DEFAULT_NAMESPACE.to_string()),
            label_selector: None,
            retry_after_failure: Duration::from_secs(60),
        }
    }
}

/// One poll's result, remembered until the next poll is due.
#[derive(Clone, Debug)]
struct Poll {
    uid: String,
    generation: Option<i64>,
    at: Instant,
    polled_at: Timestamp,
    failure: Option<Failure>,
    without_image: Vec<String>,
}

/// Which Catalog object each served name belongs to, and the uids of deleted ones, so content
/// read while its Catalog was being deleted is never served afterwards.
#[derive(Default)]
struct Gate {
    serving: HashMap<String, String>,
    deleted: HashSet<String>,
}

/// What every reconcile shares.
pub struct Context {
    client: Client,
    store: Arc<CatalogStore>,
    metrics: Arc<dyn ReconcileMetrics>,
    recorder: Recorder,
    reader: Reader,
    options: Options,
    polls: Mutex<HashMap<String, Poll>>,
    gate: Mutex<Gate>,
}

/// The poll interval a spec asks for.
pub fn poll_interval(spec: &CatalogSpec) -> Duration {
    let seconds = spec
        .poll_interval_seconds
        .filter(|s| *s > 0)
        .unwrap_or(DEFAULT_POLL_INTERVAL_SECONDS);
    Duration::from_secs(seconds as u64)
}

/// Where a catalog's content comes from, for messages.
pub fn describe_source(spec: &CatalogSpec) -> String {
    match spec.source.type_ {
        CatalogSourceType::BuiltIn => "the built-in catalog".into(),
        CatalogSourceType::Image => format!("image {}", spec.source.image.as_deref().unwrap_or("")),
        CatalogSourceType::BundleImages => {
            format!("{} bundle images", spec.source.bundle_images.len())
        }
    }
}

/// Runs the controller until `shutdown` resolves, with [`Options::from_env`].
pub async fn run(
    client: Client,
    store: Arc<CatalogStore>,
    metrics: Arc<dyn ReconcileMetrics>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    run_with(client, store, metrics, Options::from_env(), shutdown).await
}

/// [`run`] with explicit options.
pub async fn run_with(
    client: Client,
    store: Arc<CatalogStore>,
    metrics: Arc<dyn ReconcileMetrics>,
    options: Options,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "windlass-catalog".into(),
            instance: None,
        },
    );
    let mut config = watcher::Config::default();
    if let Some(selector) = &options.label_selector {
        config = config.labels(selector);
    }
    let ctx = Arc::new(Context {
        client: client.clone(),
        store,
        metrics,
        recorder,
        reader: Reader::new(),
        options,
        polls: Mutex::default(),
        gate: Mutex::default(),
    });
    let catalogs = Api::<Catalog>::all(client);
    let deletions = tokio::spawn(forget_deleted(
        catalogs.clone(),
        config.clone(),
        ctx.clone(),
    ));
    Controller::new(catalogs, config)
        .graceful_shutdown_on(shutdown)
        .run(reconcile_timed, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(error) = result {
                warn!(%error, "catalog reconcile failed");
            }
        })
        .await;
    deletions.abort();
}

/// Stops serving Catalogs that were deleted. kube's Controller does not reconcile deleted
/// objects, and the store is memory, so there is nothing a finalizer would need to clean in
/// the cluster; a second watch hears of deletions instead.
async fn forget_deleted(api: Api<Catalog>, config: watcher::Config, ctx: Arc<Context>) {
    let mut listed = HashSet::new();
    let mut events = watcher(api.clone(), config).default_backoff().boxed();
    while let Some(event) = events.next().await {
        match event {
            Ok(watcher::Event::Delete(catalog)) => {
                ctx.forget(&catalog.name_any(), &catalog.uid().unwrap_or_default())
            }
            Ok(watcher::Event::Init) => listed.clear(),
            Ok(watcher::Event::InitApply(catalog)) => {
                listed.insert(catalog.uid().unwrap_or_default());
            }
            // A re-list after a gap: deletions in the gap have no Delete event. Ask about each
            // served Catalog the list did not show (it may also be newer than the list).
            Ok(watcher::Event::InitDone) => {
                let missing: Vec<(String, String)> = ctx
                    .gate
                    .lock()
                    .expect("catalog gate poisoned")
                    .serving
                    .iter()
                    .filter(|(_, uid)| !listed.contains(*uid))
                    .map(|(n, u)| (n.clone(), u.clone()))
                    .collect();
                for (name, uid) in missing {
                    match api.get_opt(&name).await {
                        Ok(Some(live)) if live.uid().as_deref() == Some(uid.as_str()) => {}
                        Ok(_) => ctx.forget(&name, &uid),
                        Err(error) => warn!(%error, catalog = %name, "checking a catalog"),
                    }
                }
            }
            Ok(watcher::Event::Apply(_)) => {}
            Err(error) => warn!(%error, "watching catalogs for deletion"),
        }
    }
}

impl Context {
    /// Catalog `name` with `uid` is gone: stop serving it.
    fn forget(&self, name: &str, uid: &str) {
        let mut gate = self.gate.lock().expect("catalog gate poisoned");
        gate.deleted.insert(uid.to_string());
        if gate.serving.get(name).map(String::as_str) == Some(uid) {
            gate.serving.remove(name);
            self.store.remove(name);
            info!(catalog = %name, "catalog deleted; no longer served");
        }
        let mut polls = self.polls.lock().expect("poll records poisoned");
        if polls.get(name).is_some_and(|p| p.uid == uid) {
            polls.remove(name);
        }
    }

    /// The credentials of the Catalog's pull Secret (none without one).
    async fn credentials(&self, spec: &CatalogSpec) -> Result<Credentials, SourceError> {
        let Some(name) = spec.source.pull_secret.as_deref().filter(|n| !n.is_empty()) else {
            return Ok(Credentials::new());
        };
        let namespace = &self.options.namespace;
        let fail = |message: String| SourceError::PullSecret {
            namespace: namespace.clone(),
            name: name.to_string(),
            message,
        };
        let secret = Api::<Secret>::namespaced(self.client.clone(), namespace)
            .get_opt(name)
            .await
            .map_err(|e| fail(e.to_string()))?
            .ok_or_else(|| fail("not found".into()))?;
        credentials::from_secret(&secret).map_err(|e| fail(e.to_string()))
    }

    /// Reads the catalog and serves it, unless its object was deleted meanwhile. `None` then.
    async fn poll(&self, catalog: &Catalog, uid: &str) -> Option<Poll> {
        let name = catalog.name_any();
        let spec = &catalog.spec;
        let outcome = match self.credentials(spec).await {
            Ok(credentials) => self
                .reader
                .read(&name, &spec.source, &credentials, &self.store)
                .await
                .map(|content| (content, credentials)),
            Err(error) => Err(error),
        };
        let mut gate = self.gate.lock().expect("catalog gate poisoned");
        if gate.deleted.contains(uid) {
            return None;
        }
        let polled_at = Timestamp::now();
        let at = Instant::now();
        let (failure, without_image) = match outcome {
            Ok((content, credentials)) => {
                let without_image = content.without_image.clone();
                self.store
                    .serve(content.serve_as(&name, spec.priority, &spec.source, credentials));
                gate.serving.insert(name.clone(), uid.to_string());
                (None, without_image)
            }
            Err(error) => {
                warn!(catalog = %name, %error, "polling catalog failed");
                keep_serving(&self.store, &name, spec.priority);
                (Some(Failure::from(&error)), Vec::new())
            }
        };
        Some(Poll {
            uid: uid.to_string(),
            generation: catalog.metadata.generation,
            at,
            polled_at,
            failure,
            without_image,
        })
    }

    /// How long after a poll the next one is due.
    fn wait_after(&self, poll: &Poll, spec: &CatalogSpec) -> Option<Duration> {
        let interval = poll_interval(spec);
        match (&poll.failure, spec.source.type_) {
            (Some(_), _) => Some(interval.min(self.options.retry_after_failure)),
            // The built-in catalog cannot change while the manager runs.
            (None, CatalogSourceType::BuiltIn) => None,
            (None, _) => Some(interval),
        }
    }
}

async fn reconcile_timed(catalog: Arc<Catalog>, ctx: Arc<Context>) -> Result<Action, Error> {
    let start = Instant::now();
    let span = tracing::info_span!("reconcile", catalog = %catalog.name_any());
    let result = reconcile(catalog, ctx.clone()).instrument(span).await;
    let label = match &result {
        Ok((_, poll_failure)) => *poll_failure,
        Err(error) => Some(error.metric_label()),
    };
    ctx.metrics.reconciled(start.elapsed(), label);
    result.map(|(action, _)| action)
}

fn error_policy(_catalog: Arc<Catalog>, error: &Error, _ctx: Arc<Context>) -> Action {
    warn!(%error, "requeueing");
    Action::requeue(Duration::from_secs(10))
}

/// One pass; also returns the metric label of a poll that failed in this pass.
async fn reconcile(
    catalog: Arc<Catalog>,
    ctx: Arc<Context>,
) -> Result<(Action, Option<&'static str>), Error> {
    let name = catalog.name_any();
    let uid = catalog.uid().unwrap_or_default();
    let previous = ctx
        .polls
        .lock()
        .expect("poll records poisoned")
        .get(&name)
        .cloned();
    let due = match &previous {
        None => true,
        Some(poll) if poll.uid != uid || poll.generation != catalog.metadata.generation => true,
        Some(poll) => ctx
            .wait_after(poll, &catalog.spec)
            .is_some_and(|wait| poll.at.elapsed() >= wait),
    };
    let mut failure_label = None;
    let source = describe_source(&catalog.spec);
    let poll = if due {
        if let Some(pending) = status::pending(
            catalog.status.as_ref(),
            catalog.metadata.generation,
            &source,
            Timestamp::now(),
        ) {
            write_status(&ctx.client, &name, &pending).await?;
        }
        let Some(poll) = ctx.poll(&catalog, &uid).await else {
            return Ok((Action::await_change(), None));
        };
        failure_label = poll.failure.as_ref().map(|f| f.metric_label);
        ctx.polls
            .lock()
            .expect("poll records poisoned")
            .insert(name.clone(), poll.clone());
        poll
    } else {
        previous.expect("not due means polled before")
    };

    let served = ctx.store.get(&name);
    let observation = Observation {
        generation: catalog.metadata.generation,
        failure: poll.failure.as_ref(),
        served: served.as_deref(),
        without_image: &poll.without_image,
        source: &source,
        polled_at: poll.polled_at,
    };
    if let Some(update) = status::next(catalog.status.as_ref(), &observation) {
        write_status(&ctx.client, &name, &update.status).await?;
        if let Some(transition) = update.transition {
            publish(&ctx, &catalog, transition).await;
        }
    }
    let action = match ctx.wait_after(&poll, &catalog.spec) {
        None => Action::await_change(),
        Some(wait) => Action::requeue(
            wait.saturating_sub(poll.at.elapsed())
                .max(Duration::from_secs(1)),
        ),
    };
    Ok((action, failure_label))
}

async fn write_status(client: &Client, name: &str, status: &CatalogStatus) -> Result<(), Error> {
    let patch = json!({
        "apiVersion": Catalog::api_version(&()),
        "kind": Catalog::kind(&()),
        "status": status,
    });
    Api::<Catalog>::all(client.clone())
        .patch_status(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await
        .map(|_| ())
        .map_err(|source| Error::Status {
            name: name.to_string(),
            source,
        })
}

async fn publish(ctx: &Context, catalog: &Catalog, transition: Transition) {
    let (type_, reason, note) = match transition {
        Transition::Serving { message } => (EventType::Normal, "Serving", message),
        Transition::ContentChanged { message } => (EventType::Normal, "ContentUpdated", message),
        Transition::Unreachable { reason, message } => (EventType::Warning, reason, message),
    };
    let event = Event {
        type_,
        reason: reason.into(),
        note: Some(truncate(note, 1000)),
        action: "Poll".into(),
        secondary: None,
    };
    if let Err(error) = ctx.recorder.publish(&event, &catalog.object_ref(&())).await {
        warn!(%error, "publishing an event");
    }
}

fn truncate(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut cut = max;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    text
}

/// The `builtin` Catalog as `ensure_builtin` applies it.
pub fn builtin_catalog() -> serde_json::Value {
    json!({
        "apiVersion": Catalog::api_version(&()),
        "kind": Catalog::kind(&()),
        "metadata": {
            "name": BUILTIN_NAME,
            "labels": { MANAGED_BY_LABEL: FIELD_MANAGER },
        },
        "spec": {
            "source": { "type": "BuiltIn" },
            "priority": BUILTIN_PRIORITY,
            "displayName": BUILTIN_DISPLAY_NAME,
        },
    })
}

/// Whether windlass created this Catalog (so turning the built-in catalog off may delete it).
pub fn created_by_windlass(catalog: &Catalog) -> bool {
    catalog.labels().get(MANAGED_BY_LABEL).map(String::as_str) == Some(FIELD_MANAGER)
}

/// Creates (server-side apply) the `builtin` Catalog when `enabled`; otherwise deletes a
/// `builtin` Catalog that windlass created (one a person made without the managed-by label
/// stays).
pub async fn ensure_builtin(client: &Client, enabled: bool) -> Result<(), kube::Error> {
    let api = Api::<Catalog>::all(client.clone());
    if enabled {
        api.patch(
            BUILTIN_NAME,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&builtin_catalog()),
        )
        .await?;
        return Ok(());
    }
    let Some(existing) = api.get_opt(BUILTIN_NAME).await? else {
        return Ok(());
    };
    if !created_by_windlass(&existing) {
        return Ok(());
    }
    match api.delete(BUILTIN_NAME, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use windlass_api::catalog::CatalogSource;

    #[test]
    fn the_poll_interval_defaults_to_ten_minutes() {
        let mut spec = CatalogSpec::default();
        assert_eq!(poll_interval(&spec), Duration::from_secs(600));
        spec.poll_interval_seconds = Some(30);
        assert_eq!(poll_interval(&spec), Duration::from_secs(30));
        spec.poll_interval_seconds = Some(0);
        assert_eq!(poll_interval(&spec), Duration::from_secs(600));
    }

    #[test]
    fn sources_are_described_for_people() {
        let mut spec = CatalogSpec::default();
        assert_eq!(describe_source(&spec), "the built-in catalog");
        spec.source = CatalogSource {
            type_: CatalogSourceType::Image,
            image: Some("r/c:1".into()),
            ..Default::default()
        };
        assert_eq!(describe_source(&spec), "image r/c:1");
    }

    #[test]
    fn the_builtin_catalog_is_a_valid_low_priority_catalog_marked_as_ours() {
        let catalog: Catalog = serde_json::from_value(builtin_catalog()).unwrap();
        assert_eq!(catalog.name_any(), "builtin");
        assert_eq!(catalog.spec.source.type_, CatalogSourceType::BuiltIn);
        assert_eq!(catalog.spec.priority, -100);
        assert!(catalog.spec.priority < CatalogSpec::default().priority);
        assert_eq!(
            catalog.spec.display_name.as_deref(),
            Some("windlass built-in samples")
        );
        assert!(created_by_windlass(&catalog));
        let mut theirs = catalog.clone();
        theirs.metadata.labels = None;
        assert!(!created_by_windlass(&theirs));
    }

    #[test]
    fn long_event_notes_are_cut_on_a_character_boundary() {
        assert_eq!(truncate("ééé".into(), 3), "é");
        assert_eq!(truncate("short".into(), 10), "short");
    }
}
