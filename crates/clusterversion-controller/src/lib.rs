//! The ClusterVersion controller: moves the platform to the release `spec.desiredUpdate` names,
//! run level by run level, and says where it stands.
//!
//! - The payload is pulled by digest (a tag is pinned once and recorded), read and checked by
//!   `windlass_release`, and planned: updater levels (`manifests/`) first, then every release
//!   level in order.
//! - Each level is applied (server-side apply, one field manager, compare before write;
//!   create-only and delete manifests as the CVO treats them), then waited on until every object
//!   is healthy (`windlass_release::health`) before the next level starts. What a level waits
//!   for, and for how long, is in `status.progress` and the `Progressing` condition; a level not
//!   healthy within `spec.levelDeadlineSeconds` is `Failing`, naming the object, and is retried.
//! - Progress lives in `status.levels`, so a restarted manager resumes at the level it was in.
//! - Once complete, the cluster is kept matching the payload: every object the payload applies
//!   carries the label `windlass.dev/release-managed`, one metadata-only watch per kind the
//!   payload ships wakes the reconcile when such an object is edited or deleted ([`drift`]),
//!   and the reconcile compares each manifest with the live object before writing, so drift is
//!   put back within moments and a settled cluster gets no writes. `spec.overrides` with
//!   `unmanaged: true` leaves an object alone. The resync stays as a safety net.
//! - Payload objects are applied as the release ServiceAccount (impersonated), which the cluster
//!   admin binds to what a platform release may create; the manager itself holds no such rights.
//!
//! - Before an update starts, the payload's digest is verified against every TrustPolicy
//!   ([`verify`]); a payload no rule covers, or one the rules refuse, starts only with `force`,
//!   recorded in history as unverified with what was overridden.
//!
//! - Each applied payload's files are kept in a sealed Secret of the manager's namespace, so
//!   going back never pulls. Asking for an older release (by digest) is a rollback: allowed
//!   within the same major.minor, across it only with `force`, never past an update that
//!   started an irreversible level. With `spec.rollback.automatic`, a failing update goes back
//!   to the release before it by itself (unless it started an irreversible level), and the
//!   failed release is held back until the spec changes.
//!
//! - A forward minor or major update waits while a component reports `Upgradeable=False`
//!   (OpenShift ClusterOperators), unless `acceptRisks` names it or `force` is set; either is
//!   recorded in history. A patch update is never blocked by it.
//!
//! - With `spec.upstream` and `spec.channel`, the update service's graph is fetched (every
//!   `spec.updateCheckIntervalSeconds`, 5 minutes by default) and `status.availableUpdates` and
//!   `status.conditionalUpdates` say where the cluster may go; `desiredUpdate.version` alone
//!   names a release through it ([`updates`]). On every poll the `PromQL` risks of conditional
//!   updates are evaluated against `spec.prometheus` ([`promql`]); a risk that could not be
//!   evaluated leaves its update not recommended, saying why.

pub mod drift;
mod gates;
mod inclusion;
mod levels;
pub mod openshift;
mod payloads;
mod plan_preview;
mod preconditions;
pub mod promql;
pub mod readiness;
mod record;
pub mod rollback;
mod signals;
mod signature_stores;
mod store;
mod update;
pub mod updates;
pub mod verify;

use std::{collections::HashMap, future::Future, sync::Arc, sync::Mutex, time::Duration};

use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference, Secret};
use kube::{
    Api, Client, Resource, ResourceExt,
    runtime::{controller::Action, watcher},
};
use windlass_api::{ClusterVersion, names::controllers};

pub use openshift::ReleaseApi;
use windlass_bundle::FileTree;
use windlass_kit::{
    Applier, Identities, Metrics, ReconcileError, Scope, Shell, Stage, TrustGate, runner,
};
use windlass_release::{Payload, Plan};
use windlass_revisions::SealKey;

pub use update::reconcile;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("acting as the release ServiceAccount {account}: {source}")]
    Identity {
        account: String,
        #[source]
        source: kube::Error,
    },
    #[error("building the update service client: {0}")]
    Http(String),
    #[error("writing the ClusterVersion status: {source}")]
    Status {
        #[source]
        source: kube::Error,
    },
}

impl ReconcileError for Error {
    fn stage(&self) -> Stage {
        match self {
            Error::Identity { .. } | Error::Http(_) => Stage::Read,
            Error::Status { .. } => Stage::Report,
        }
    }

    fn is_conflict(&self) -> bool {
        matches!(self, Error::Status { source: kube::Error::Api(s) } if s.code == 409)
    }
}

/// A pulled and planned payload, by digest.
pub struct Loaded {
    pub image: String,
    pub payload: Payload,
    pub plan: Plan,
    /// The payload's files, as stored for rollbacks.
    pub files: FileTree,
    /// Read from the copy stored in the cluster rather than pulled.
    pub from_store: bool,
}

pub struct Context {
    pub shell: Shell,
    /// Applies payload objects as the release ServiceAccount.
    pub applier: Applier,
    /// Payloads already pulled, by the image reference asked for (tags are pinned once).
    pub payloads: Mutex<HashMap<String, Arc<Loaded>>>,
    /// The manager's namespace, where TrustPolicies' key material and stored payloads are.
    pub namespace: String,
    /// Seals stored payloads.
    pub seal_key: SealKey,
    /// Checks payload signatures against the TrustPolicies (verdicts cached by digest).
    pub trust: Arc<TrustGate>,
    /// Asks update services.
    pub http: reqwest::Client,
    /// Update graphs and the answers to their risks' queries, by what was asked.
    pub graphs: Mutex<HashMap<updates::GraphKey, updates::Retrieved>>,
    /// Wakes the reconcile when the update service is due to be asked again.
    pub update_checks: updates::CheckTimer,
    /// Watches the applied payload's objects and wakes the reconcile when one drifts.
    pub drift: drift::DriftWatch,
    /// Which ClusterVersion kind is read and written.
    pub api: ReleaseApi,
}

impl Context {
    /// The Secrets of the manager's namespace (stored payloads).
    pub fn secrets(&self) -> Api<Secret> {
        Api::namespaced(self.shell.client.clone(), &self.namespace)
    }

    /// The ConfigMaps of the manager's namespace (admin gates and acks, kept state).
    pub fn config_maps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.shell.client.clone(), &self.namespace)
    }

    /// What Events about `version` are reported on: the object of the API being served.
    pub fn object_ref(&self, version: &ClusterVersion) -> ObjectReference {
        let mut reference = version.object_ref(&());
        if self.api == ReleaseApi::OpenShift {
            reference.api_version = Some(windlass_api::openshift::API_VERSION.to_string());
        }
        reference
    }
}

/// Who applies a release: `system:serviceaccount:<namespace>:<name>`.
pub struct Options {
    pub release_account_namespace: String,
    pub release_account_name: String,
    /// The manager's signature checks, shared with the other controllers.
    pub trust: Arc<TrustGate>,
    /// The ClusterVersion API served.
    pub api: ReleaseApi,
}

/// The release ServiceAccount's default name, in the manager's namespace.
pub const RELEASE_SERVICE_ACCOUNT: &str = "windlass-release";

/// Runs the controller until `shutdown` resolves.
pub async fn run(
    client: Client,
    identities: Identities,
    options: Options,
    seal_key: SealKey,
    metrics: Arc<dyn Metrics>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) -> Result<(), Error> {
    let account = Identities::service_account(
        &options.release_account_namespace,
        &options.release_account_name,
    );
    let release_client =
        identities
            .client_for(Some(&account))
            .map_err(|source| Error::Identity {
                account: account.clone(),
                source,
            })?;
    let (drift, drifted) = drift::DriftWatch::new();
    let ctx = Arc::new(Context {
        shell: Shell::new(
            client.clone(),
            Scope::cluster(),
            controllers::CLUSTER_VERSION,
            metrics,
        ),
        applier: Applier::new(release_client),
        payloads: Mutex::default(),
        namespace: options.release_account_namespace.clone(),
        seal_key,
        trust: options.trust.clone(),
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| Error::Http(e.to_string()))?,
        graphs: Mutex::default(),
        update_checks: updates::CheckTimer::new(drift.waker()),
        drift,
        api: options.api,
    });
    let signals = signals::start(&client, &ctx.namespace, &ctx.applier, ctx.drift.waker());
    let _stop_signals = AbortOnDrop(signals);
    if options.api == ReleaseApi::OpenShift {
        run_openshift(client, ctx, drifted, shutdown).await;
        return Ok(());
    }
    drive(
        Api::<ClusterVersion>::all(client),
        ctx,
        drifted,
        shutdown,
        |version, ctx| async move { reconcile(version, ctx).await },
    )
    .await;
    Ok(())
}

/// Runs the controller over `api`'s objects: only the one named `version` is acted on, through
/// `decide`, whichever API adapter it is.
async fn drive<K, F, Fut>(
    api: Api<K>,
    ctx: Arc<Context>,
    drifted: impl futures::Stream<Item = ()> + Send + 'static,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
    decide: F,
) where
    K: Resource<DynamicType = ()>
        + Clone
        + k8s_openapi::serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
    F: Fn(Arc<K>, Arc<Context>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, Error>> + Send + 'static,
{
    let results = runner::controller_for(api, watcher::Config::default())
        .reconcile_all_on(drifted)
        .graceful_shutdown_on(shutdown)
        .run(
            move |object: Arc<K>, ctx: Arc<Context>| {
                let decide = decide.clone();
                async move {
                    if object.name_any() != windlass_api::clusterversion::CLUSTER_VERSION_NAME {
                        tracing::warn!(name = %object.name_any(), "only the ClusterVersion named `version` is acted on");
                        return Ok(Action::await_change());
                    }
                    runner::observed(
                        ctx.shell.metrics.as_ref(),
                        object.as_ref(),
                        Box::pin(decide(object.clone(), ctx.clone())),
                    )
                    .await
                }
            },
            runner::error_policy,
            ctx,
        );
    runner::drain(results).await;
}

/// Stops the watches it holds when the controller stops.
struct AbortOnDrop(Vec<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// The controller over OpenShift's ClusterVersion: each reconcile decides on the windlass
/// ClusterVersion it stands for ([`openshift`]).
async fn run_openshift(
    client: Client,
    ctx: Arc<Context>,
    drifted: impl futures::Stream<Item = ()> + Send + 'static,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    drive(
        Api::<windlass_api::openshift::ClusterVersion>::all(client),
        ctx,
        drifted,
        shutdown,
        |version, ctx| async move {
            let uid = version.uid().unwrap_or_default();
            let kept = openshift::kept_status(&ctx.config_maps(), &uid)
                .await
                .map_err(|source| Error::Status { source })?;
            let status =
                kept.unwrap_or_else(|| openshift::imported_status(version.status.as_ref()));
            let spec = match openshift::spec_of(&version) {
                Ok(spec) => spec,
                Err(message) => {
                    let windlass = openshift::as_windlass(&version, Default::default(), status);
                    return record::refuse_spec(&ctx, &windlass, message).await;
                }
            };
            reconcile(
                Arc::new(openshift::as_windlass(&version, spec, status)),
                ctx,
            )
            .await
        },
    )
    .await;
}

/// How often a settled cluster is compared with its release even when no watch said anything
/// changed (a watch that could not be started, an event lost to a restart).
pub const RESYNC: Duration = Duration::from_secs(300);
/// How soon a level being waited on is looked at again.
pub const WAIT: Duration = Duration::from_secs(2);
