//! Reads and actions in the cluster, always with the person's own client: what the API server
//! refuses is refused, with its own words, and nothing else is written. Delist and relist are
//! in [`crate::delisting`].

use kube::{
    Api, Client, ResourceExt,
    api::{ListParams, Patch, PatchParams, PostParams},
};
use windlass_api::{Blueprint, Subscription, names::HUB_FIELD_MANAGER};
use windlass_hub::{
    actions::{self, ActionError, InstallRequest},
    pages::{Installed, Listing},
};

/// An action's outcome for the person: an HTTP status and a message, and where to look next.
#[derive(Debug)]
pub struct Outcome {
    pub status: u16,
    pub message: String,
    pub location: Option<String>,
}

impl Outcome {
    pub(crate) fn ok(message: String, location: Option<String>) -> Outcome {
        Outcome {
            status: 200,
            message,
            location,
        }
    }

    pub(crate) fn refused(error: ActionError) -> Outcome {
        let status = match error {
            ActionError::InvalidField { .. } => 400,
            _ => 409,
        };
        Outcome {
            status,
            message: error.to_string(),
            location: None,
        }
    }

    /// The API server's answer, as it gave it: a 403 stays a 403 with its message.
    pub(crate) fn api(what: &str, error: kube::Error) -> Outcome {
        match error {
            kube::Error::Api(status) => Outcome {
                status: status.code,
                message: format!("{what}: the API server refused: {}", status.message),
                location: None,
            },
            other => Outcome {
                status: 502,
                message: format!("{what}: {other}"),
                location: None,
            },
        }
    }
}

/// The Subscriptions of a namespace with their Blueprints, or the API server's refusal.
pub async fn installed(client: &Client, namespace: &str) -> Listing {
    let refusal = |e: kube::Error| match e {
        kube::Error::Api(status) => status.message,
        other => other.to_string(),
    };
    let subscriptions = Api::<Subscription>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await
        .map_err(refusal)?;
    let blueprints = Api::<Blueprint>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await
        .map_err(refusal)?;
    let mut out: Vec<Installed> = subscriptions
        .items
        .into_iter()
        .map(|subscription| {
            let wanted = subscription
                .status
                .as_ref()
                .and_then(|s| s.blueprint.clone())
                .unwrap_or_else(|| subscription.name_any());
            let blueprint = blueprints
                .items
                .iter()
                .find(|b| b.name_any() == wanted)
                .cloned();
            Installed {
                subscription,
                blueprint,
            }
        })
        .collect();
    out.sort_by_key(|i| i.subscription.name_any());
    Ok(out)
}

/// Creates the Subscription the install form describes.
pub async fn install(client: &Client, form: &InstallRequest) -> Outcome {
    let object = match form.subscription() {
        Ok(object) => object,
        Err(error) => return Outcome::refused(error),
    };
    let subscription: Subscription = match serde_json::from_value(object) {
        Ok(s) => s,
        Err(e) => {
            return Outcome {
                status: 400,
                message: e.to_string(),
                location: None,
            };
        }
    };
    let params = PostParams {
        field_manager: Some(HUB_FIELD_MANAGER.into()),
        ..Default::default()
    };
    let what = format!("creating Subscription {}/{}", form.namespace, form.package);
    match Api::<Subscription>::namespaced(client.clone(), &form.namespace)
        .create(&params, &subscription)
        .await
    {
        Ok(created) => Outcome::ok(
            format!(
                "Subscription {}/{} created ({} approval).",
                form.namespace,
                created.name_any(),
                if form.approval == "Manual" {
                    "Manual"
                } else {
                    "Automatic"
                }
            ),
            Some(format!(
                "/installed?{}",
                windlass_hub::html::query(&[("namespace", &form.namespace)])
            )),
        ),
        Err(error) => Outcome::api(&what, error),
    }
}

/// Approves the plan the person was shown (`plan`, its digest; empty: a bare approval).
pub async fn approve(client: &Client, namespace: &str, name: &str, plan: &str) -> Outcome {
    let patch = match actions::approve_patch(Some(plan)) {
        Ok(patch) => patch,
        Err(error) => return Outcome::refused(error),
    };
    let blueprints = Api::<Blueprint>::namespaced(client.clone(), namespace);
    let params = PatchParams {
        field_manager: Some(HUB_FIELD_MANAGER.into()),
        ..Default::default()
    };
    match blueprints.patch(name, &params, &Patch::Merge(patch)).await {
        Ok(_) => Outcome::ok(format!("Blueprint {namespace}/{name} approved."), None),
        Err(error) => Outcome::api(&format!("approving Blueprint {namespace}/{name}"), error),
    }
}

/// Sends the Blueprint back to the version that Succeeded before, as `windlass rollback` does.
pub async fn rollback(client: &Client, namespace: &str, name: &str) -> Outcome {
    let blueprints = Api::<Blueprint>::namespaced(client.clone(), namespace);
    let blueprint = match blueprints.get(name).await {
        Ok(b) => b,
        Err(error) => return Outcome::api(&format!("reading Blueprint {namespace}/{name}"), error),
    };
    let target = match actions::rollback_target(&blueprint, None) {
        Ok(target) => target,
        Err(error) => return Outcome::refused(error),
    };
    match blueprints
        .patch(
            name,
            &PatchParams::apply(HUB_FIELD_MANAGER).force(),
            &Patch::Apply(actions::rollback_patch(&target.to, false)),
        )
        .await
    {
        Ok(_) => Outcome::ok(
            format!(
                "Blueprint {namespace}/{name}: rolling back from {} to {}. The Subscription will not move the target until you resume it.",
                target.from, target.to
            ),
            None,
        ),
        Err(error) => Outcome::api(&format!("rolling back Blueprint {namespace}/{name}"), error),
    }
}

/// Hands the target back to the Subscription, as `windlass resume` does.
pub async fn resume(client: &Client, namespace: &str, subscription: &str) -> Outcome {
    let name = match Api::<Subscription>::namespaced(client.clone(), namespace)
        .get(subscription)
        .await
    {
        Ok(sub) => sub
            .status
            .and_then(|s| s.blueprint)
            .unwrap_or_else(|| subscription.to_string()),
        Err(error) => {
            return Outcome::api(
                &format!("reading Subscription {namespace}/{subscription}"),
                error,
            );
        }
    };
    let params = PatchParams {
        field_manager: Some(HUB_FIELD_MANAGER.into()),
        ..Default::default()
    };
    match Api::<Blueprint>::namespaced(client.clone(), namespace)
        .patch(&name, &params, &Patch::Merge(actions::resume_patch()))
        .await
    {
        Ok(_) => Outcome::ok(
            format!(
                "Blueprint {namespace}/{name}: the Subscription takes the target back and follows its channel again."
            ),
            None,
        ),
        Err(error) => Outcome::api(&format!("resuming Blueprint {namespace}/{name}"), error),
    }
}
