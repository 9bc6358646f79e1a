//! Waiting for a watch cache's first complete list before deciding from it.
//!
//! Right after a start, a reflector's store is empty until its first list arrives, while the
//! controller may already be reconciling. Read then, "not listed yet" looks like "does not
//! exist": a Subscription would install its starting version over what runs, a Blueprint would
//! hand over to no CSV. Every reconcile that decides from a cache waits for it first.

use std::time::Duration;

use kube::runtime::reflector::{Lookup, Store, store::WriterDropped};
use tokio::time::Instant;

/// How long a reconcile waits for a first list before it fails and is retried with backoff (a
/// watch that cannot list, say for a missing permission, must not hold a reconcile forever).
pub const SYNC_WAIT: Duration = Duration::from_secs(30);

/// A cache that had no complete list yet, or whose watch stopped.
#[derive(Debug, thiserror::Error)]
pub enum NotSynced {
    #[error("the {what} cache has no complete list after {}s; retrying", SYNC_WAIT.as_secs())]
    Waiting { what: &'static str },
    #[error("the {what} cache stopped (the manager is shutting down)")]
    Gone { what: &'static str },
}

/// How often a waiter looks at a store that is not ready yet. A store's readiness future keeps
/// one waker, the last poller's, so of several reconciles waiting at once only one would be woken
/// by the first list; the others would sleep until their bound (30 s for the first installs after
/// a start). Looking again this often bounds what a lost wake-up costs.
const LOOK_AGAIN: Duration = Duration::from_millis(50);

/// Returns once `store` holds a complete list of `what` (at once, after the first time).
pub async fn synced<K>(store: &Store<K>, what: &'static str) -> Result<(), NotSynced>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    match ready_within(store, SYNC_WAIT).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(NotSynced::Waiting { what }),
        Err(_) => Err(NotSynced::Gone { what }),
    }
}

/// Whether `store` had its first complete list within `limit` (at once, after the first time);
/// any number of tasks may wait at the same time.
pub async fn ready_within<K>(store: &Store<K>, limit: Duration) -> Result<bool, WriterDropped>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    let deadline = Instant::now() + limit;
    loop {
        let look = LOOK_AGAIN.min(deadline.saturating_duration_since(Instant::now()));
        // A timeout polls the wait once more when it fires, so a store that became ready
        // without waking this task is seen here.
        match tokio::time::timeout(look, store.wait_until_ready()).await {
            Ok(ready) => return ready.map(|()| true),
            Err(_) if Instant::now() >= deadline => return Ok(false),
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::runtime::{reflector::store, watcher::Event};

    #[tokio::test]
    async fn a_store_is_synced_after_its_first_complete_list_only() {
        let (reader, mut writer) = store::<ConfigMap>();
        let early = tokio::time::timeout(Duration::from_millis(50), synced(&reader, "ConfigMap"));
        assert!(early.await.is_err(), "no list yet: still waiting");
        writer.apply_watcher_event(&Event::Init);
        let listed = ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some("settings".into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        writer.apply_watcher_event(&Event::InitApply(listed));
        let partial = tokio::time::timeout(Duration::from_millis(50), synced(&reader, "ConfigMap"));
        assert!(partial.await.is_err(), "a list under way is not complete");
        writer.apply_watcher_event(&Event::InitDone);
        synced(&reader, "ConfigMap").await.expect("listed");
    }

    #[tokio::test(start_paused = true)]
    async fn every_waiter_hears_of_the_first_list_at_once() {
        let (reader, mut writer) = store::<ConfigMap>();
        let start = Instant::now();
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let reader = reader.clone();
                tokio::spawn(async move {
                    synced(&reader, "ConfigMap").await.expect("listed");
                    Instant::now()
                })
            })
            .collect();
        // Every waiter has polled (and left its waker) before the list completes.
        tokio::time::sleep(Duration::from_millis(10)).await;
        writer.apply_watcher_event(&Event::Init);
        writer.apply_watcher_event(&Event::InitDone);
        for waiter in waiters {
            let woken = waiter.await.expect("the waiter ran") - start;
            assert!(
                woken < Duration::from_secs(1),
                "a waiter heard of the list only after {woken:?}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_store_never_listed_is_waited_for_until_the_bound() {
        let (reader, _writer) = store::<ConfigMap>();
        let start = Instant::now();
        assert!(!ready_within(&reader, Duration::from_secs(2)).await.unwrap());
        let waited = Instant::now() - start;
        assert!(waited >= Duration::from_secs(2) && waited < Duration::from_millis(2100));
    }

    #[tokio::test]
    async fn a_dropped_writer_is_reported_as_gone() {
        let (reader, writer) = store::<ConfigMap>();
        drop(writer);
        assert!(matches!(
            synced(&reader, "ConfigMap").await,
            Err(NotSynced::Gone { what: "ConfigMap" })
        ));
    }
}
