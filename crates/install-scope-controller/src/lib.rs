//! The InstallScope controller: keeps, in every namespace that has a Subscription or that an
//! InstallPolicy selects, one `InstallScope` saying what operators installed there may do, so
//! `kubectl get installscopes -A` answers "what may this namespace install?".
//!
//! The view is computed by `windlass_tenancy::install_scope` from the same policies every
//! install is decided from; installs never read it back. It is reconciled per Namespace and
//! recomputed when a policy changes, a Subscription comes or goes, or the view itself changes (a hand edit is put
//! back). A namespace neither selected nor subscribing has none (one left over is deleted).

use std::{collections::BTreeMap, future::Future, sync::Arc, time::Duration};

use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, Patch, PatchParams},
    core::PartialObjectMeta,
    runtime::{
        WatchStreamExt,
        controller::Action,
        reflector::{self, ObjectRef, Store, reflector},
        watcher::{self, watcher},
    },
};
use serde_json::json;
use windlass_api::{
    FIELD_MANAGER, InstallPolicy, InstallScope, Subscription,
    names::{controllers, labels},
    scope::INSTALL_SCOPE_NAME,
};
use windlass_kit::{
    Metrics, ReconcileError, Scope, Shell, Stage, runner, status,
    synced::{NotSynced, synced},
    triggers,
};
use windlass_tenancy::{NamespaceFacts, install_scope, scope::selecting};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("reading {what}: {source}")]
    Read {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error(transparent)]
    NotSynced(#[from] NotSynced),
    #[error("writing InstallScope {namespace}/{INSTALL_SCOPE_NAME}: {source}")]
    Write {
        namespace: String,
        #[source]
        source: kube::Error,
    },
}

impl ReconcileError for Error {
    fn stage(&self) -> Stage {
        match self {
            Error::Read { .. } | Error::NotSynced(_) => Stage::Read,
            Error::Write { .. } => Stage::Report,
        }
    }

    fn is_conflict(&self) -> bool {
        match self {
            Error::Read { source, .. } | Error::Write { source, .. } => {
                matches!(source, kube::Error::Api(s) if s.code == 409)
            }
            Error::NotSynced(_) => false,
        }
    }
}

pub struct Context {
    pub shell: Shell,
    /// Every InstallPolicy, as watched: a policy change is in it before it wakes a namespace.
    pub policies: Store<InstallPolicy>,
    /// Every Subscription's metadata, as watched: an arrival or departure is in it before it
    /// wakes its namespace.
    pub subscriptions: Store<PartialObjectMeta<Subscription>>,
}

/// Runs the controller over `scope` until `shutdown` resolves.
pub async fn run(
    client: Client,
    scope: Scope,
    metrics: Arc<dyn Metrics>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let namespaces = Api::<Namespace>::all(client.clone());
    let mut config = watcher::Config::default();
    if let Some(only) = scope.only() {
        config = config.fields(&format!("metadata.name={only}"));
    }
    let subscriptions = scope.api::<PartialObjectMeta<Subscription>>(&client);
    let views = scope.api::<InstallScope>(&client);
    let policies = Api::<InstallPolicy>::all(client.clone());
    let (policy_cache, policy_writer) = reflector::store::<InstallPolicy>();
    let policy_changes = reflector(
        policy_writer,
        watcher(policies, watcher::Config::default())
            .default_backoff()
            .modify(|policy| policy.metadata.managed_fields = None),
    )
    .touched_objects();
    let (subscription_cache, subscription_writer) = reflector::store();
    let subscription_events = reflector(
        subscription_writer,
        watcher(subscriptions, watcher::Config::default())
            .default_backoff()
            .modify(triggers::without_managed_fields),
    );
    let ctx = Arc::new(Context {
        shell: Shell::new(client, scope, controllers::INSTALL_SCOPE, metrics),
        policies: policy_cache,
        subscriptions: subscription_cache,
    });
    let controller = runner::controller_for(namespaces, config);
    let known = controller.store();
    let results = controller
        // Any policy may select any namespace (labels, names): recompute every view.
        .watches_stream(policy_changes, move |_policy| {
            known
                .state()
                .iter()
                .map(|ns| ObjectRef::from_obj(&**ns))
                .collect::<Vec<_>>()
        })
        // Whether a namespace has Subscriptions is what the view reads of them: their status
        // writes (many per install) wake nothing.
        .watches_stream(
            triggers::arrivals_and_departures(subscription_events),
            |sub: PartialObjectMeta<Subscription>| sub.namespace().map(|ns| ObjectRef::new(&ns)),
        )
        .watches(views, watcher::Config::default(), |view: InstallScope| {
            view.namespace().map(|ns| ObjectRef::new(&ns))
        })
        .graceful_shutdown_on(shutdown)
        .run(
            |namespace, ctx: Arc<Context>| async move {
                runner::observed(
                    ctx.shell.metrics.as_ref(),
                    namespace.as_ref(),
                    reconcile(namespace.clone(), ctx.clone()),
                )
                .await
            },
            runner::error_policy,
            ctx,
        );
    runner::drain(results).await;
}

pub async fn reconcile(namespace: Arc<Namespace>, ctx: Arc<Context>) -> Result<Action, Error> {
    let name = namespace.name_any();
    if namespace.metadata.deletion_timestamp.is_some() {
        // Nothing can be written into a namespace being deleted; the view goes with it.
        return Ok(Action::await_change());
    }
    let client = &ctx.shell.client;
    // Until both caches hold a complete list, a view computed from them could take away what
    // a policy grants.
    synced(&ctx.policies, "InstallPolicy").await?;
    synced(&ctx.subscriptions, "Subscription").await?;
    let policies: Vec<InstallPolicy> = ctx
        .policies
        .state()
        .iter()
        .map(|policy| (**policy).clone())
        .collect();
    let empty = BTreeMap::new();
    let facts = NamespaceFacts {
        name: &name,
        labels: namespace.metadata.labels.as_ref().unwrap_or(&empty),
    };
    let subscribed = ctx
        .subscriptions
        .state()
        .iter()
        .any(|subscription| subscription.namespace().as_deref() == Some(name.as_str()));
    let views = Api::<InstallScope>::namespaced(client.clone(), &name);
    let live = views
        .get_opt(INSTALL_SCOPE_NAME)
        .await
        .map_err(|source| Error::Read {
            what: format!("InstallScope {name}/{INSTALL_SCOPE_NAME}"),
            source,
        })?;
    let write_error = |source| Error::Write {
        namespace: name.clone(),
        source,
    };
    if !subscribed && selecting(&facts, &policies).is_empty() {
        if live.is_some() {
            views
                .delete(INSTALL_SCOPE_NAME, &DeleteParams::default())
                .await
                .map(|_| ())
                .or_else(|e| match e {
                    kube::Error::Api(s) if s.code == 404 => Ok(()),
                    other => Err(other),
                })
                .map_err(write_error)?;
        }
        return Ok(Action::await_change());
    }
    let desired = install_scope(&facts, &policies);
    let live_status = match &live {
        Some(view) => view.status.clone(),
        None => {
            let object = json!({
                "apiVersion": "windlass.dev/v1alpha1",
                "kind": "InstallScope",
                "metadata": {
                    "name": INSTALL_SCOPE_NAME,
                    "labels": { labels::MANAGED_BY: labels::MANAGED_BY_VALUE },
                },
                "spec": {},
            });
            views
                .patch(
                    INSTALL_SCOPE_NAME,
                    &PatchParams::apply(FIELD_MANAGER).force(),
                    &Patch::Apply(&object),
                )
                .await
                .map_err(write_error)?;
            None
        }
    };
    if live_status.as_ref() != Some(&desired) {
        status::apply_status(&views, INSTALL_SCOPE_NAME, &desired, None)
            .await
            .map_err(write_error)?;
    }
    // Policies and Subscriptions are watched; the resync only covers a missed event.
    Ok(Action::requeue(Duration::from_secs(600)))
}
