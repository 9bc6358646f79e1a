//! The Subscription controller: resolves what a user asked for against the served catalogs and
//! keeps one Blueprint per Subscription, plus a Subscription per dependency.
//!
//! The deciding logic is pure and lives in its own modules: [`resolution`] (which bundle, which
//! dependencies), [`intent`] (the Blueprint's intent fields and who owns its target),
//! [`dependencies`] (what the namespace runs, who needs whom, dependency Subscriptions) and
//! [`state`] (the Subscription's status and Events) and [`delisting`] (what a delisted package,
//! version or removed catalog means for it). [`catalogs`] reads the served catalogs and their
//! health; [`reconcile`] only gathers, applies and reports.

pub mod catalogs;
pub mod delisting;
pub mod dependencies;
pub mod intent;
pub mod reconcile;
pub mod resolution;
pub mod state;

pub use reconcile::{Context, Error, run};
pub use resolution::{InstalledPackage, Resolution, ResolutionFailure, ResolutionInput, resolve};
