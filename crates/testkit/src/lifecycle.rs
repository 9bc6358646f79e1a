//! Helpers for lifecycle scenarios: subscribe, wait on a Blueprint or Subscription with a
//! predicate, approve. A wait that times out prints the object and the manager's log, so a
//! failing scenario says what it saw.

use std::time::{Duration, Instant};

use kube::{
    Api, Client,
    api::{Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use windlass_api::{Blueprint, Subscription, blueprint::BlueprintPhase};

/// Creates a Subscription from a JSON `spec`.
pub async fn subscribe(client: &Client, namespace: &str, name: &str, spec: Value) -> Subscription {
    let subscription: Subscription = serde_json::from_value(json!({
        "apiVersion": "windlass.dev/v1alpha1",
        "kind": "Subscription",
        "metadata": { "name": name, "namespace": namespace },
        "spec": spec,
    }))
    .expect("a valid Subscription");
    Api::<Subscription>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &subscription)
        .await
        .unwrap_or_else(|e| panic!("creating Subscription {namespace}/{name}: {e}"))
}

/// Polls an object until `ready` holds, panicking after `timeout` with the object as YAML and
/// the tail of the manager's log.
pub async fn wait_object<K, F>(
    api: &Api<K>,
    name: &str,
    what: &str,
    timeout: Duration,
    ready: F,
) -> K
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
    F: Fn(&K) -> bool,
{
    let deadline = Instant::now() + timeout;
    let mut last = None;
    loop {
        if let Ok(Some(object)) = api.get_opt(name).await {
            if ready(&object) {
                return object;
            }
            last = Some(object);
        }
        if Instant::now() > deadline {
            let shown = last
                .as_ref()
                .map(|o| serde_saphyr::to_string(o).unwrap_or_else(|_| format!("{o:?}")))
                .unwrap_or_else(|| "(not found)".into());
            panic!(
                "timed out after {timeout:?} waiting for {name}: {what}\nlast seen:\n{shown}\nmanager log:\n{}",
                crate::manager_log_tail(40)
            );
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Waits until the Blueprint satisfies `ready`.
pub async fn wait_blueprint<F>(
    client: &Client,
    namespace: &str,
    name: &str,
    what: &str,
    timeout: Duration,
    ready: F,
) -> Blueprint
where
    F: Fn(&Blueprint) -> bool,
{
    let api = Api::<Blueprint>::namespaced(client.clone(), namespace);
    wait_object(&api, name, what, timeout, ready).await
}

/// Waits until the Subscription satisfies `ready`.
pub async fn wait_subscription<F>(
    client: &Client,
    namespace: &str,
    name: &str,
    what: &str,
    timeout: Duration,
    ready: F,
) -> Subscription
where
    F: Fn(&Subscription) -> bool,
{
    let api = Api::<Subscription>::namespaced(client.clone(), namespace);
    wait_object(&api, name, what, timeout, ready).await
}

/// The Blueprint's phase (`None` before it has one).
pub fn phase(blueprint: &Blueprint) -> Option<BlueprintPhase> {
    blueprint.status.as_ref().and_then(|s| s.phase)
}

/// Whether the Blueprint is in `phase` at `version`.
pub fn is_at(blueprint: &Blueprint, phase: BlueprintPhase, version: &str) -> bool {
    self::phase(blueprint) == Some(phase)
        && blueprint.status.as_ref().and_then(|s| s.version.as_deref()) == Some(version)
}

/// Approves the Blueprint's current plan, as a person would.
pub async fn approve(client: &Client, namespace: &str, name: &str) {
    Api::<Blueprint>::namespaced(client.clone(), namespace)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "approved": true } })),
        )
        .await
        .unwrap_or_else(|e| panic!("approving Blueprint {namespace}/{name}: {e}"));
}

/// The condition of `type_` on a list, if any.
pub fn condition<'a>(
    conditions: &'a [windlass_api::Condition],
    type_: &str,
) -> Option<&'a windlass_api::Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}
