//! The member clusters: clients built from their kubeconfig Secrets, what each shows of the
//! rollout's target, and the writes the hub makes there. Every call to a member is bounded in
//! time, so one that does not answer counts as unreachable instead of stalling the rollout.

use std::{collections::HashMap, sync::Mutex, time::Duration};

use k8s_openapi::api::core::v1::Secret;
use kube::{
    Api, Client, Config, ResourceExt,
    api::{Patch, PatchParams},
    config::{KubeConfigOptions, Kubeconfig},
};
use windlass_api::{
    Blueprint, ClusterVersion, FLEET_FIELD_MANAGER, Subscription,
    clusterversion::CLUSTER_VERSION_NAME,
    fleet::RolloutTarget,
    names::{FLEET_KUBECONFIG_KEYS, labels},
};
use windlass_fleet::{
    Action, Member, Seen,
    observe::{
        cluster_version_patch, cluster_version_view, subscription_body, subscription_name,
        subscription_view,
    },
};

/// How long one member may take to answer one request.
pub const MEMBER_TIMEOUT: Duration = Duration::from_secs(8);

/// A member as registered in the hub.
#[derive(Clone)]
pub struct Registered {
    pub member: Member,
    pub secret: String,
    pub resource_version: String,
    pub kubeconfig: Option<String>,
}

/// The members registered in the hub's namespace: one per Secret labelled
/// `windlass.dev/fleet-member`, named by the label's value (or the Secret's name when empty).
pub fn registered(secrets: &[Secret]) -> Vec<Registered> {
    secrets
        .iter()
        .filter_map(|secret| {
            let labels = secret.metadata.labels.clone().unwrap_or_default();
            let value = labels.get(labels::FLEET_MEMBER)?.clone();
            let name = if value.is_empty() {
                secret.name_any()
            } else {
                value
            };
            let kubeconfig = FLEET_KUBECONFIG_KEYS.iter().find_map(|key| {
                secret
                    .data
                    .as_ref()
                    .and_then(|d| d.get(*key))
                    .and_then(|b| String::from_utf8(b.0.clone()).ok())
            });
            Some(Registered {
                member: Member { name, labels },
                secret: secret.name_any(),
                resource_version: secret.resource_version().unwrap_or_default(),
                kubeconfig,
            })
        })
        .collect()
}

/// Clients of the members, rebuilt when their Secret changes.
#[derive(Default)]
pub struct Clients {
    built: Mutex<HashMap<String, (String, Client)>>,
}

impl Clients {
    pub async fn client(&self, member: &Registered) -> Result<Client, String> {
        let cached = self
            .built
            .lock()
            .expect("not poisoned")
            .get(&member.secret)
            .filter(|(version, _)| *version == member.resource_version)
            .map(|(_, client)| client.clone());
        if let Some(client) = cached {
            return Ok(client);
        }
        let text = member.kubeconfig.as_deref().ok_or_else(|| {
            format!(
                "Secret {} has no kubeconfig (key {})",
                member.secret,
                FLEET_KUBECONFIG_KEYS.join(" or ")
            )
        })?;
        let kubeconfig = Kubeconfig::from_yaml(text).map_err(|e| {
            format!(
                "Secret {}: the kubeconfig does not parse: {e}",
                member.secret
            )
        })?;
        let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .map_err(|e| {
                format!(
                    "Secret {}: the kubeconfig is not usable: {e}",
                    member.secret
                )
            })?;
        config.connect_timeout = Some(MEMBER_TIMEOUT);
        config.read_timeout = Some(MEMBER_TIMEOUT);
        config.write_timeout = Some(MEMBER_TIMEOUT);
        let client = Client::try_from(config)
            .map_err(|e| format!("Secret {}: no client: {e}", member.secret))?;
        self.built.lock().expect("not poisoned").insert(
            member.secret.clone(),
            (member.resource_version.clone(), client.clone()),
        );
        Ok(client)
    }

    /// Forgets clients whose Secret is gone.
    pub fn retain(&self, secrets: &[String]) {
        self.built
            .lock()
            .expect("not poisoned")
            .retain(|secret, _| secrets.contains(secret));
    }
}

async fn bounded<T>(
    what: &str,
    call: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> Result<T, String> {
    match tokio::time::timeout(MEMBER_TIMEOUT, call).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(kube::Error::Api(status))) => {
            Err(format!("{what}: {} ({})", status.message, status.code))
        }
        Ok(Err(error)) => Err(format!("{what}: {error}")),
        Err(_) => Err(format!(
            "{what}: no answer within {} s",
            MEMBER_TIMEOUT.as_secs()
        )),
    }
}

/// What the member shows of the target, and the name of the Blueprint it installs with.
pub struct Looked {
    pub seen: Seen,
    pub blueprint: Option<String>,
}

pub async fn look(client: &Client, target: &RolloutTarget) -> Looked {
    match look_inner(client, target).await {
        Ok(looked) => looked,
        Err(error) => Looked {
            seen: Seen::Unreachable(error),
            blueprint: None,
        },
    }
}

async fn look_inner(client: &Client, target: &RolloutTarget) -> Result<Looked, String> {
    if let Some(sub_target) = &target.subscription {
        let namespace = &sub_target.namespace;
        let name = subscription_name(sub_target);
        let subscriptions = Api::<Subscription>::namespaced(client.clone(), namespace);
        let subscription = bounded(
            &format!("reading Subscription {namespace}/{name}"),
            subscriptions.get_opt(name),
        )
        .await?;
        let blueprint_name = subscription
            .as_ref()
            .and_then(|s| s.status.as_ref())
            .and_then(|s| s.blueprint.clone());
        let blueprint = match &blueprint_name {
            Some(bp) => {
                let blueprints = Api::<Blueprint>::namespaced(client.clone(), namespace);
                bounded(
                    &format!("reading Blueprint {namespace}/{bp}"),
                    blueprints.get_opt(bp),
                )
                .await?
            }
            None => None,
        };
        return Ok(Looked {
            seen: Seen::View(subscription_view(
                sub_target,
                subscription.as_ref(),
                blueprint.as_ref(),
            )),
            blueprint: blueprint_name,
        });
    }
    let cv_target = target
        .cluster_version
        .as_ref()
        .expect("validated: one target");
    let versions = Api::<ClusterVersion>::all(client.clone());
    let live = bounded(
        "reading ClusterVersion version",
        versions.get_opt(CLUSTER_VERSION_NAME),
    )
    .await?;
    Ok(Looked {
        seen: Seen::View(cluster_version_view(cv_target, live.as_ref())),
        blueprint: None,
    })
}

/// Makes one write in a member.
pub async fn act(
    client: &Client,
    target: &RolloutTarget,
    blueprint: Option<&str>,
    action: &Action,
) -> Result<(), String> {
    let apply = PatchParams::apply(FLEET_FIELD_MANAGER).force();
    let merge = PatchParams::default();
    if let Some(sub_target) = &target.subscription {
        let namespace = &sub_target.namespace;
        let subscriptions = Api::<Subscription>::namespaced(client.clone(), namespace);
        let blueprints = Api::<Blueprint>::namespaced(client.clone(), namespace);
        let blueprint_of = || {
            blueprint.ok_or_else(|| {
                format!(
                    "Subscription {namespace}/{} names no Blueprint yet",
                    subscription_name(sub_target)
                )
            })
        };
        return match action {
            Action::Apply { manual, .. } => {
                let name = subscription_name(sub_target);
                let body = subscription_body(sub_target, *manual);
                bounded(
                    &format!("writing Subscription {namespace}/{name}"),
                    subscriptions.patch(name, &apply, &Patch::Apply(&body)),
                )
                .await
                .map(|_| ())
            }
            Action::Approve { digest, .. } => {
                let name = blueprint_of()?;
                let patch = windlass_hub::actions::approve_patch(Some(digest))
                    .map_err(|e| e.to_string())?;
                bounded(
                    &format!("approving Blueprint {namespace}/{name}"),
                    blueprints.patch(name, &merge, &Patch::Merge(&patch)),
                )
                .await
                .map(|_| ())
            }
            Action::RollBack { to, force, .. } => {
                let name = blueprint_of()?;
                let patch = windlass_hub::actions::rollback_patch(to, *force);
                bounded(
                    &format!("rolling back Blueprint {namespace}/{name} to {to}"),
                    blueprints.patch(name, &apply, &Patch::Apply(&patch)),
                )
                .await
                .map(|_| ())
            }
        };
    }
    let cv_target = target
        .cluster_version
        .as_ref()
        .expect("validated: one target");
    let versions = Api::<ClusterVersion>::all(client.clone());
    let patch = match action {
        Action::Apply { manual, .. } => cluster_version_patch(cv_target, *manual),
        Action::Approve { digest, .. } => {
            serde_json::json!({ "spec": { "desiredUpdate": { "approvedPlan": digest } } })
        }
        Action::RollBack { to, .. } => {
            serde_json::json!({ "spec": { "desiredUpdate": { "version": to, "image": null, "approvedPlan": null } } })
        }
    };
    bounded(
        "writing ClusterVersion version",
        versions.patch(CLUSTER_VERSION_NAME, &merge, &Patch::Merge(&patch)),
    )
    .await
    .map(|_| ())
}
