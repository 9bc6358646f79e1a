//! The ClusterServiceVersion controller: installs what a CSV's install strategy describes
//! (ServiceAccounts, RBAC, Deployments, webhooks), reports health in OLM's phases, hands over
//! to a successor CSV, and cleans up cluster-scoped objects through a finalizer.
//!
//! The deciding logic is pure and lives in its own modules ([`desired`], [`webhooks`],
//! [`requirements`], [`health`], [`phase`]); [`reconcile`] only gathers, applies and reports.

pub mod ca_store;
pub mod certs;
pub mod desired;
pub mod health;
pub mod memo;
pub mod names;
pub mod phase;
pub mod reconcile;
pub mod requirements;
pub mod webhooks;

pub use reconcile::{Context, Error, Keys, run};
