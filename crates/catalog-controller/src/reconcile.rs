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
    runtime::{WatchStreamExt, controller::Action, watcher},
};
use serde_json::json;
use tracing::{info, warn};
use windlass_api::{
    Catalog, CatalogSpec, CatalogStatus, FIELD_MANAGER,
    catalog::CatalogSourceType,
    names::{controllers, labels},
};
use windlass_kit::{
    Metrics, Notice, ReconcileError, Scope, Shell, Stage, TrustGate, runner, status as status_write,
};

use crate::{
    credentials::{self, Credentials},
    source::{self as sources, Reader, SourceError, keep_serving},
    status::{self, Failure, Observation, Transition},
};
use windlass_catalog_store::CatalogStore;

/// Name of the Catalog `ensure_builtin` manages.
pub const BUILTIN_NAME: &str = "builtin";
/// Its priority: below every user catalog (default 0), so theirs win.
pub const BUILTIN_PRIORITY: i32 = -100;
pub const BUILTIN_DISPLAY_NAME: &str = "windlass built-in samples";
/// `spec.pollIntervalSeconds` when unset.
pub const DEFAULT_POLL_INTERVAL_SECONDS: i64 = 600;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("writing the status of catalog {name}: {source}")]
    Status { name: String, source: kube::Error },
}

impl ReconcileError for Error {
    fn stage(&self) -> Stage {
        match self {
            Error::Status { .. } => Stage::Report,
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
    /// Checks catalog images against the TrustPolicies before they are served.
    pub trust: Arc<TrustGate>,
}

impl Options {
    /// Pull Secrets in `namespace`, every Catalog, failures retried after 60 s, catalog images
    /// checked by `trust`.
    pub fn new(namespace: impl Into<String>, trust: Arc<TrustGate>) -> Options {
        Options {
            namespace: namespace.into(),
            label_selector: None,
            retry_after_failure: Duration::from_secs(60),
            trust,
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
    shell: Shell,
    store: Arc<CatalogStore>,
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

/// Runs the controller until `shutdown` resolves. Catalogs are cluster-scoped: every manager
/// that runs this controller serves them all.
pub async fn run(
    client: Client,
    store: Arc<CatalogStore>,
    metrics: Arc<dyn Metrics>,
    options: Options,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let mut config = watcher::Config::default();
    if let Some(selector) = &options.label_selector {
        config = config.labels(selector);
    }
    let ctx = Arc::new(Context {
        shell: Shell::new(
            client.clone(),
            Scope::cluster(),
            controllers::CATALOG,
            metrics,
        ),
        store,
        reader: Reader::checking_signatures(options.trust.clone()),
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
    // New mirror rules can change where every image is read from: read each catalog again.
    let mirrors_changed = {
        let ctx = ctx.clone();
        futures::stream::unfold(ctx.store.mirror_changes(), move |mut changes| {
            let ctx = ctx.clone();
            async move {
                changes.changed().await.ok()?;
                ctx.polls.lock().expect("poll records poisoned").clear();
                Some(((), changes))
            }
        })
    };
    let results = runner::controller_for(catalogs, config)
        .reconcile_all_on(mirrors_changed)
        .graceful_shutdown_on(shutdown)
        .run(reconcile_observed, runner::error_policy, ctx);
    runner::drain(results).await;
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
        let secret = Api::<Secret>::namespaced(self.shell.client.clone(), namespace)
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
        let delisting = sources::delisting(spec).0;
        let (failure, without_image) = match outcome {
            Ok((content, credentials)) => {
                let without_image = content.without_image.clone();
                self.store.serve(content.serve_as(
                    &name,
                    spec.priority,
                    &spec.source,
                    credentials,
                    delisting,
                ));
                gate.serving.insert(name.clone(), uid.to_string());
                (None, without_image)
            }
            Err(error) => {
                warn!(catalog = %name, %error, "polling catalog failed");
                keep_serving(&self.store, &name, spec.priority, &delisting);
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

/// One reconcile, observed like every controller's. A failed poll is not an error of the
/// reconcile (it is reported in the Catalog's status and retried on its own schedule), but the
/// metrics count it under what failed (`pull`, `invalid_content`, ...).
async fn reconcile_observed(catalog: Arc<Catalog>, ctx: Arc<Context>) -> Result<Action, Error> {
    let start = Instant::now();
    let span = tracing::info_span!("reconcile", kind = "Catalog", name = %catalog.name_any());
    let result = tracing::Instrument::instrument(reconcile(catalog, ctx.clone()), span).await;
    let label = match &result {
        Ok((_, poll_failure)) => *poll_failure,
        Err(error) => Some(error.stage().label()),
    };
    ctx.shell.metrics.reconciled(start.elapsed(), label);
    result.map(|(action, _)| action)
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
    let mut poll_failure = None;
    let source = describe_source(&catalog.spec);
    let poll = if due {
        if let Some(pending) = status::pending(
            catalog.status.as_ref(),
            catalog.metadata.generation,
            &source,
            Timestamp::now(),
        ) {
            write_status(&ctx.shell.client, &name, &pending).await?;
        }
        let Some(poll) = ctx.poll(&catalog, &uid).await else {
            return Ok((Action::await_change(), None));
        };
        poll_failure = poll.failure.as_ref().map(|f| f.metric_label);
        ctx.polls
            .lock()
            .expect("poll records poisoned")
            .insert(name.clone(), poll.clone());
        poll
    } else {
        previous.expect("not due means polled before")
    };

    // What the spec delists applies at once, without reading the source again.
    let (delisting, mut delisting_problems) = sources::delisting(&catalog.spec);
    keep_serving(&ctx.store, &name, catalog.spec.priority, &delisting);
    let served = ctx.store.get(&name);
    if let Some(served) = &served {
        delisting_problems.extend(delisting.unmatched(&served.catalog));
    }
    let delisting_problems: Vec<String> =
        delisting_problems.iter().map(ToString::to_string).collect();
    let observation = Observation {
        generation: catalog.metadata.generation,
        failure: poll.failure.as_ref(),
        served: served.as_deref(),
        without_image: &poll.without_image,
        source: &source,
        polled_at: poll.polled_at,
        delisting_problems: &delisting_problems,
    };
    if let Some(update) = status::next(catalog.status.as_ref(), &observation) {
        write_status(&ctx.shell.client, &name, &update.status).await?;
        if let Some(transition) = update.transition {
            publish(&ctx, &catalog, transition).await;
        }
        if let Some(notice) = status::listing_notice(catalog.status.as_ref(), &update.status) {
            ctx.shell
                .events
                .publish(&catalog.object_ref(&()), &notice.action("Listing"))
                .await;
        }
    }
    let action = match ctx.wait_after(&poll, &catalog.spec) {
        None => Action::await_change(),
        Some(wait) => Action::requeue(
            wait.saturating_sub(poll.at.elapsed())
                .max(Duration::from_secs(1)),
        ),
    };
    Ok((action, poll_failure))
}

async fn write_status(client: &Client, name: &str, status: &CatalogStatus) -> Result<(), Error> {
    status_write::apply_status(&Api::<Catalog>::all(client.clone()), name, status, None)
        .await
        .map(|_| ())
        .map_err(|source| Error::Status {
            name: name.to_string(),
            source,
        })
}

async fn publish(ctx: &Context, catalog: &Catalog, transition: Transition) {
    let notice = match transition {
        Transition::Serving { message } => Notice::normal("Serving", message),
        Transition::ContentChanged { message } => Notice::normal("ContentUpdated", message),
        Transition::Unreachable { reason, message } => Notice::warning(reason, message),
    };
    ctx.shell
        .events
        .publish(&catalog.object_ref(&()), &notice.action("Poll"))
        .await;
}

/// The `builtin` Catalog as `ensure_builtin` applies it.
pub fn builtin_catalog() -> serde_json::Value {
    json!({
        "apiVersion": Catalog::api_version(&()),
        "kind": Catalog::kind(&()),
        "metadata": {
            "name": BUILTIN_NAME,
            "labels": { labels::MANAGED_BY: labels::MANAGED_BY_VALUE },
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
    catalog.labels().get(labels::MANAGED_BY).map(String::as_str) == Some(labels::MANAGED_BY_VALUE)
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
}
