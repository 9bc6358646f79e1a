//! The other objects the verdict on the release reads, watched so a change is acted on at once
//! rather than on the resync: the admin gates and acks of the manager's namespace (an admin's
//! acknowledgement starts a waiting update) and the ClusterOperators (a Degraded operator makes
//! the release Failing; its recovery clears it).

use std::{
    collections::HashMap,
    hash::{DefaultHasher, Hash, Hasher},
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    api::{DynamicObject, PartialObjectMeta},
    runtime::{
        WatchStreamExt,
        watcher::{self, Event},
    },
};
use tokio::{sync::mpsc, task::JoinHandle};
use windlass_api::names::{ADMIN_ACKS_CONFIG_MAP, ADMIN_GATES_CONFIG_MAP};
use windlass_kit::Applier;

/// How often a cluster that does not serve ClusterOperators is asked again.
const UNSERVED_RETRY: Duration = Duration::from_secs(60);

/// Starts the watches; each wakes the reconcile through `wake`.
pub fn start(
    client: &kube::Client,
    namespace: &str,
    applier: &Applier,
    wake: mpsc::Sender<()>,
) -> Vec<JoinHandle<()>> {
    let mut tasks: Vec<JoinHandle<()>> = [ADMIN_GATES_CONFIG_MAP, ADMIN_ACKS_CONFIG_MAP]
        .into_iter()
        .map(|name| {
            let api = Api::<PartialObjectMeta<ConfigMap>>::namespaced(client.clone(), namespace);
            let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
            let wake = wake.clone();
            tokio::spawn(async move {
                let mut events = std::pin::pin!(watcher::watcher(api, config).default_backoff());
                while let Some(event) = events.next().await {
                    if matches!(event, Ok(Event::Apply(_) | Event::Delete(_))) {
                        let _ = wake.try_send(());
                    }
                }
            })
        })
        .collect();
    let applier = applier.clone();
    tasks.push(tokio::spawn(async move {
        loop {
            // As the release ServiceAccount, which reads them for the preconditions too.
            match applier
                .resource("config.openshift.io/v1", "ClusterOperator")
                .await
            {
                Ok((resource, _)) => {
                    let api = Api::<DynamicObject>::all_with(applier.client().clone(), &resource);
                    watch_operators(api, wake.clone()).await;
                }
                Err(_) => tokio::time::sleep(UNSERVED_RETRY).await,
            }
        }
    }));
    tasks
}

/// What of a ClusterOperator the verdict reads: its conditions' types and statuses, and its
/// versions.
fn health_print(operator: &DynamicObject) -> u64 {
    let mut hasher = DefaultHasher::new();
    let status = &operator.data["status"];
    for condition in status["conditions"].as_array().into_iter().flatten() {
        condition["type"].to_string().hash(&mut hasher);
        condition["status"].to_string().hash(&mut hasher);
        condition["message"].to_string().hash(&mut hasher);
    }
    status["versions"].to_string().hash(&mut hasher);
    hasher.finish()
}

async fn watch_operators(api: Api<DynamicObject>, wake: mpsc::Sender<()>) {
    let mut seen: HashMap<String, u64> = HashMap::new();
    let mut events =
        std::pin::pin!(watcher::watcher(api, watcher::Config::default()).default_backoff());
    while let Some(event) = events.next().await {
        let changed = match event {
            Ok(Event::Init) => {
                seen.clear();
                false
            }
            Ok(Event::InitApply(operator)) => {
                seen.insert(
                    operator.metadata.uid.clone().unwrap_or_default(),
                    health_print(&operator),
                );
                false
            }
            Ok(Event::InitDone) => true,
            Ok(Event::Apply(operator)) => {
                let print = health_print(&operator);
                seen.insert(operator.metadata.uid.clone().unwrap_or_default(), print) != Some(print)
            }
            Ok(Event::Delete(operator)) => {
                seen.remove(&operator.metadata.uid.clone().unwrap_or_default());
                true
            }
            // The API went away (its CRD deleted): look it up again.
            Err(watcher::Error::InitialListFailed(kube::Error::Api(s)))
            | Err(watcher::Error::WatchStartFailed(kube::Error::Api(s)))
                if s.code == 404 =>
            {
                tokio::time::sleep(UNSERVED_RETRY).await;
                return;
            }
            Err(error) => {
                tracing::debug!(%error, "watching ClusterOperators");
                false
            }
        };
        if changed {
            let _ = wake.try_send(());
        }
    }
}
