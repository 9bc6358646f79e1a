//! Waiting for a watch cache's first complete list before deciding from it.
//!
//! Right after a start, a reflector's store is empty until its first list arrives, while the
//! controller may already be reconciling. Read then, "not listed yet" looks like "does not
//! exist": a Subscription would install its starting version over what runs, a Blueprint would
//! hand over to no CSV. Every reconcile that decides from a cache waits for it first.

use std::time::Duration;

use kube::runtime::reflector::{Lookup, Store};

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

/// Returns once `store` holds a complete list of `what` (at once, after the first time).
pub async fn synced<K>(store: &Store<K>, what: &'static str) -> Result<(), NotSynced>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    match tokio::time::timeout(SYNC_WAIT, store.wait_until_ready()).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(_)) => Err(NotSynced::Gone { what }),
        Err(_) => Err(NotSynced::Waiting { what }),
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
