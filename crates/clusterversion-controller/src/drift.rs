//! Noticing drift at once: one metadata-only watch per kind the applied payload keeps, selected
//! by the label windlass puts on every payload object ([`labels::RELEASE_MANAGED`]). A hand
//! edit, a deletion or a removed label wakes the ClusterVersion reconcile, which compares every
//! manifest with the live object and writes only what differs.
//!
//! Why this scales: a watch per kind is what the API allows (there is no watch across kinds),
//! and the label selector is applied by the API server, so the cluster's other Deployments,
//! ConfigMaps, ... never reach the manager; only object metadata is sent, and an update that
//! leaves `generation`, labels and annotations alone (a rollout's status) wakes nothing. The set
//! of watches follows the payload: kinds a new release no longer ships are unwatched.
//!
//! The same watches speed an update up: while it waits on a level, every change of a payload
//! object wakes the reconcile ([`DriftWatch::wake_on_any_change`]), so the level is judged again
//! the moment a rollout's status moves instead of on the next poll.

use std::{
    collections::{BTreeSet, HashMap},
    hash::{DefaultHasher, Hash, Hasher},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use futures::{Stream, StreamExt};
use kube::{
    Api,
    api::{DynamicObject, PartialObjectMeta},
    runtime::{
        WatchStreamExt,
        watcher::{self, Event},
    },
};
use tokio::{sync::mpsc, task::JoinHandle};
use windlass_api::names::labels::{RELEASE_MANAGED, RELEASE_MANAGED_VALUE};
use windlass_kit::Applier;

/// A kind, as `(apiVersion, kind)`.
pub type Kind = (String, String);

/// The watches on the applied payload's kinds, and the channel their changes wake the
/// reconcile through.
pub struct DriftWatch {
    wake: mpsc::Sender<()>,
    watches: Mutex<HashMap<Kind, JoinHandle<()>>>,
    /// While an update waits on a level, any change of a payload object wakes the reconcile
    /// (a rollout's status included), so the next level starts as soon as this one is healthy.
    eager: Arc<AtomicBool>,
    /// Kinds the cluster did not serve, and when that was seen: not asked again for a while.
    unserved: Mutex<HashMap<Kind, Instant>>,
}

/// How long a kind the cluster did not serve is left before discovery is asked again.
const UNSERVED_RETRY: Duration = Duration::from_secs(30);

impl DriftWatch {
    /// The watch set (empty) and the stream of wake-ups for the controller (each reconciles
    /// the one ClusterVersion).
    pub fn new() -> (DriftWatch, impl Stream<Item = ()> + Send) {
        // One pending wake-up is as good as many: the reconcile looks at every object.
        let (wake, woken) = mpsc::channel(1);
        let triggers = receiver_stream(woken);
        (
            DriftWatch {
                wake,
                watches: Mutex::default(),
                eager: Arc::default(),
                unserved: Mutex::default(),
            },
            triggers,
        )
    }

    /// Watches exactly `kinds` from now on (as the release ServiceAccount, which may read what
    /// it applies): new kinds are watched, kinds no longer kept are unwatched.
    pub async fn follow(&self, applier: &Applier, kinds: &BTreeSet<Kind>) {
        let missing: Vec<Kind> = {
            let mut watches = self.lock();
            watches.retain(|kind, task| {
                let keep = kinds.contains(kind) && !task.is_finished();
                if !keep {
                    task.abort();
                }
                keep
            });
            kinds
                .iter()
                .filter(|k| !watches.contains_key(*k))
                .cloned()
                .collect()
        };
        for kind in missing {
            let (api_version, name) = &kind;
            let recently_unserved = self
                .unserved
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&kind)
                .is_some_and(|at| at.elapsed() < UNSERVED_RETRY);
            if recently_unserved {
                continue;
            }
            // A kind the cluster does not serve (yet: a CRD of the payload not established)
            // is looked up again a little later.
            let resource = match applier.resource(api_version, name).await {
                Ok((resource, _)) => resource,
                Err(error) => {
                    tracing::warn!(%api_version, kind = %name, %error, "drift of this kind is noticed on the resync only");
                    self.unserved
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(kind.clone(), Instant::now());
                    continue;
                }
            };
            let api = Api::<PartialObjectMeta<DynamicObject>>::all_with(
                applier.client().clone(),
                &resource,
            );
            let task = tokio::spawn(watch_kind(api, self.wake.clone(), self.eager.clone()));
            self.lock().insert(kind, task);
        }
    }

    /// Whether any change of a payload object (status too) wakes the reconcile: on while an
    /// update waits on a level, off once the cluster is settled (then only what someone
    /// changed does).
    pub fn wake_on_any_change(&self, on: bool) {
        self.eager.store(on, Ordering::Relaxed);
    }

    /// A sender that wakes the reconcile too, for what else needs to (a timer).
    pub fn waker(&self) -> mpsc::Sender<()> {
        self.wake.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Kind, JoinHandle<()>>> {
        self.watches.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for DriftWatch {
    fn drop(&mut self) {
        for task in self.lock().values() {
            task.abort();
        }
    }
}

fn receiver_stream(mut receiver: mpsc::Receiver<()>) -> impl Stream<Item = ()> + Send {
    futures::stream::poll_fn(move |cx| receiver.poll_recv(cx))
}

/// What of an object's metadata says it was changed by someone: its `generation` (or, for
/// kinds without one, any new resource version), labels and annotations.
fn fingerprint(meta: &kube::api::ObjectMeta) -> u64 {
    let mut hasher = DefaultHasher::new();
    match meta.generation {
        Some(generation) => generation.hash(&mut hasher),
        None => meta.resource_version.hash(&mut hasher),
    }
    meta.labels.hash(&mut hasher);
    meta.annotations.hash(&mut hasher);
    meta.deletion_timestamp.is_some().hash(&mut hasher);
    hasher.finish()
}

async fn watch_kind(
    api: Api<PartialObjectMeta<DynamicObject>>,
    wake: mpsc::Sender<()>,
    eager: Arc<AtomicBool>,
) {
    let config =
        watcher::Config::default().labels(&format!("{RELEASE_MANAGED}={RELEASE_MANAGED_VALUE}"));
    let mut seen: HashMap<String, u64> = HashMap::new();
    let mut events = std::pin::pin!(watcher::watcher(api, config).default_backoff());
    let nudge = || {
        // Full: a wake-up is pending already.
        let _ = wake.try_send(());
    };
    while let Some(event) = events.next().await {
        match event {
            Ok(Event::Init) => seen.clear(),
            Ok(Event::InitApply(object)) => {
                seen.insert(uid(&object), fingerprint(&object.metadata));
            }
            // After a (re)list, what changed while nobody watched is looked at once.
            Ok(Event::InitDone) => nudge(),
            Ok(Event::Apply(object)) => {
                let print = fingerprint(&object.metadata);
                let changed = seen.insert(uid(&object), print) != Some(print);
                if changed || eager.load(Ordering::Relaxed) {
                    nudge();
                }
            }
            Ok(Event::Delete(object)) => {
                seen.remove(&uid(&object));
                nudge();
            }
            Err(error) => tracing::debug!(%error, "watching payload objects"),
        }
    }
}

fn uid(object: &PartialObjectMeta<DynamicObject>) -> String {
    object.metadata.uid.clone().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use kube::api::ObjectMeta;

    use super::*;

    #[test]
    fn a_status_update_leaves_the_fingerprint_and_a_spec_or_label_change_does_not() {
        let deployment = ObjectMeta {
            generation: Some(2),
            resource_version: Some("10".into()),
            labels: Some(BTreeMap::from([(RELEASE_MANAGED.into(), "true".into())])),
            ..ObjectMeta::default()
        };
        let status_written = ObjectMeta {
            resource_version: Some("11".into()),
            ..deployment.clone()
        };
        assert_eq!(fingerprint(&deployment), fingerprint(&status_written));
        let scaled = ObjectMeta {
            generation: Some(3),
            ..deployment.clone()
        };
        assert_ne!(fingerprint(&deployment), fingerprint(&scaled));
        let annotated = ObjectMeta {
            annotations: Some(BTreeMap::from([("a".into(), "b".into())])),
            ..deployment.clone()
        };
        assert_ne!(fingerprint(&deployment), fingerprint(&annotated));
        // A ConfigMap has no generation: every new version is a change.
        let config_map = ObjectMeta {
            resource_version: Some("5".into()),
            ..ObjectMeta::default()
        };
        let edited = ObjectMeta {
            resource_version: Some("6".into()),
            ..ObjectMeta::default()
        };
        assert_ne!(fingerprint(&config_map), fingerprint(&edited));
    }
}
