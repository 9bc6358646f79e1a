//! Upgrade graphs and dependency resolution over the catalog model.
//!
//! Pure library: plain values in, plain values out, no cluster access.
//!
//! - [`graph::UpgradeGraph`]: one channel's upgrade edges (`replaces`, `skips`, `olm.skipRange`)
//!   on petgraph, with its head and validation findings.
//! - [`policy`]: successor policies (`olm`, `semver`, `any`) and [`policy::upgrade_path`].
//! - [`rollback::check_rollback`]: whether a rollback may go ahead, and whether it was forced.
//! - [`solve::Resolver`]: which bundles to install for a set of subscriptions, in dependency
//!   order, or an [`solve::Unsatisfiable`] explanation (short text plus a serialisable tree).
//! - [`render`]: the upgrade graph as Graphviz dot or Mermaid.
//!
//! An `olm.constraint` requirement (a predicate over one candidate bundle, see
//! `windlass_catalog::constraint`) is met like an API requirement: by any chosen bundle that
//! satisfies it, the bundle carrying it included. Its candidates are computed the first time a
//! resolution reaches it and kept with the [`Resolver`], so a CEL rule is evaluated once per
//! catalog bundle it can concern, not once per request.
//!
//! # Why a search of our own rather than a SAT or PubGrub library
//!
//! The problem (one bundle per package, one owner per API, package, API and `olm.constraint`
//! requirements, ordered preferences) is small per request: OLM catalogs hold thousands of bundles, but a
//! subscription touches a handful of packages. What matters is (1) completeness, (2) preferences
//! applied in a fixed order so the same input gives the same answer, and (3) explanations in the
//! catalog's own terms. `pubgrub` models "one version per package" natively but not "one owner
//! per API" across packages, which would need virtual packages per API and would surface in its
//! derivation trees; `resolvo` (CDCL) can encode both but its conflict reports speak in its own
//! clause vocabulary. A depth-first search over the obligations, trying each candidate best
//! first and backtracking chronologically, is complete by construction (every candidate of every
//! obligation it reaches is tried, so any solution's choices are eventually followed) and its
//! first answer is the preferred one. Its worst case is exponential, like every complete solver
//! for this NP-complete problem; in practice catalogs have few real conflicts, and the benches
//! show the bulk sizes the issue asks for. Completeness is checked by property tests against a
//! brute-force enumeration of every combination on small random catalogs.

pub mod graph;
pub mod policy;
pub mod render;
pub mod rollback;
pub mod solve;
pub mod synthetic;

pub use graph::{EdgeKind, UpgradeGraph};
pub use policy::{Policy, UpgradePath, upgrade_path};
pub use rollback::{
    RollbackDecision, RollbackReason, RollbackRefused, RollbackRequest, check_rollback,
};
pub use semver;
pub use solve::{Installed, Plan, Request, Resolver, Subscription, Unsatisfiable, resolve};
