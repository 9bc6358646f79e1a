//! The Blueprint controller: executes the plan a Subscription resolved (dependencies, CRDs,
//! the bundle's objects, the ClusterServiceVersion), keeps every revision in the cluster as a
//! Secret, and rolls back a failed upgrade from the stored revision, automatically or when a
//! person points the target at an earlier version.
//!
//! The deciding logic is pure ([`plan`], [`build`], [`revision`]; CRD upgrade safety is
//! `windlass_bundle::crd::safety`, plan previews `windlass_preview`); the rest only gathers
//! ([`observe`], [`content`], [`permit`] with `windlass_tenancy` deciding, [`preview`]),
//! applies ([`apply`], remembering each apply in [`memo`]) and reports ([`reconcile`]).

pub mod apply;
pub mod build;
pub mod content;
pub mod csv_cache;
mod error;
pub mod memo;
pub mod names;
pub mod observe;
pub mod operands;
pub mod permit;
pub mod plan;
pub mod preview;
pub mod readiness;
pub mod reconcile;
pub mod revision;
pub mod revision_cache;

#[cfg(test)]
mod samples;

pub use error::Error;
pub use reconcile::{Checks, Context, run};
