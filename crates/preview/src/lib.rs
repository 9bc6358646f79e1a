//! Plan previews: what a Blueprint revision will change, computed before it changes anything,
//! so a person can approve exactly that.
//!
//! Pure code on plain JSON. The Blueprint controller gathers the inputs (the objects it would
//! apply, the live objects, what a server-side dry-run apply returned, the CRD safety findings)
//! and this crate turns them into a [`Plan`]:
//!
//! - [`diff`]: the field-level difference between a live object and what the dry-run apply
//!   returned, and the out-of-band edits of a live object (fields windlass applied whose live
//!   value differs), with Secret values never shown;
//! - [`managed`]: who owns a field now (from `managedFields`), to name who edited it;
//! - [`rbac`]: the permissions an operator gains and loses, per ServiceAccount, namespace or
//!   cluster-wide, from the Roles and bindings before and after;
//! - [`images`]: the container images that change;
//! - [`binding`]: what approving binds (content, settings, install identity) and its digest;
//! - [`summary`]: the short summary a status carries, what changed between two plans, and
//!   shrinking a plan that would not fit its Secret;
//! - [`render`]: the plan as a person reads it (`windlass plan`).

pub mod binding;
pub mod diff;
pub mod images;
pub mod managed;
mod model;
pub mod rbac;
pub mod readiness;
pub mod render;
pub mod summary;

#[cfg(test)]
mod sample;

pub use binding::{Binding, BoundObject, canonical_json, object_hash, sha256_hex};
pub use model::{
    CrdAction, CrdChange, CrdFinding, CrdVerdict, Drift, FORMAT, FieldChange, Grant, ImageChange,
    ObjectAction, ObjectChange, ObjectRef, Plan, PlanKind, RbacDelta, Release,
};
