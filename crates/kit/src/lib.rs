//! The controller kit: the shell every windlass controller shares, so each controller is only
//! its own pipeline.
//!
//! Every reconcile reads the same way, in the same five stages ([`Stage`]):
//! **read** the cluster, **decide** (pure, in the controller's own modules), **build** the
//! desired objects, **apply** them, **report** status and Events. The kit provides the parts
//! that are not the controller's own decision:
//!
//! - [`Scope`]: which namespace a controller watches and reconciles (explicit, never read from
//!   the environment);
//! - [`Applier`]: server-side apply of any kind, resolved through discovery, that compares
//!   with the live object first ([`compare::up_to_date`]) so a settled reconcile writes nothing;
//! - [`status::apply_status`]: the one way status is written (server-side apply, optionally
//!   guarded by the resourceVersion the decision was made from);
//! - [`Events`] and [`Notice`]: Kubernetes Events with the API's size limits respected;
//! - [`runner`]: the controller every reconciler runs in (a bound on reconciles in flight, a
//!   cache without `managedFields`), the reconcile span, timing and metrics ([`Metrics`]), the
//!   error policy and the finalizer wrapper;
//! - [`freshness::OwnWrites`]: reading a controller's own writes from its watch cache, going
//!   to the API server only while the cache has not shown the last one yet;
//! - [`ProgressHold`]: status changes that only reword progress messages wait a few seconds
//!   after the object's last status write, so a fast install writes its transitions only;
//! - [`ListFloor`]: lists answered from the API server's watch cache at once, never older than
//!   what this process saw or wrote;
//! - [`synced`]: waiting for a watch cache's first complete list before deciding from it;
//! - [`seal_key`]: the manager's sealing key for stored revisions (`windlass_revisions`);
//! - [`mirrors`]: the cluster's ImageMirrorSets as one set of rules, kept current by a watch;
//! - [`trust`]: signature checks of images against the cluster's TrustPolicies, shared by every
//!   controller that pulls ([`TrustGate`]).

pub mod apply;
pub mod compare;
pub mod events;
pub mod freshness;
pub mod identity;
pub mod list_floor;
pub mod mirrors;
pub mod progress;
pub mod runner;
pub mod scope;
pub mod seal_key;
pub mod status;
pub mod synced;
pub mod triggers;
pub mod trust;

pub use apply::{Applied, Applier, ApplyError, Freshness, ObjectKey};
pub use events::{Events, Notice, repair_notice};
pub use freshness::OwnWrites;
pub use identity::Identities;
pub use list_floor::ListFloor;
pub use progress::ProgressHold;
pub use runner::{Metrics, ReconcileError, Stage};
pub use scope::Scope;
pub use trust::TrustGate;

use std::sync::Arc;

use kube::Client;

/// What every controller's context holds besides its own caches: the client, the scope it
/// reconciles, its Events and its metrics.
#[derive(Clone)]
pub struct Shell {
    pub client: Client,
    pub scope: Scope,
    pub events: Events,
    pub metrics: Arc<dyn Metrics>,
}

impl Shell {
    /// `controller` names the Event source (one of [`windlass_api::names::controllers`]).
    pub fn new(client: Client, scope: Scope, controller: &str, metrics: Arc<dyn Metrics>) -> Shell {
        Shell {
            events: Events::new(client.clone(), controller),
            client,
            scope,
            metrics,
        }
    }
}
