//! Taking over what another tool installed, in place: nothing is deleted or restarted. Only
//! ownership changes (owner references, labels, annotations), and what the other tool must let
//! go of is said first.
//!
//! `olm` reads an OLM v0 install (its Subscription, ClusterServiceVersion, OperatorGroup,
//! CatalogSource, InstallPlans and the live objects the CSV owns) and plans its adoption: the
//! windlass Catalog and Subscription that describe exactly what runs, the ownership changes of
//! each object windlass takes over, the OLM objects windlass replaces with its own, every
//! difference between OLM's view and the cluster, and what cannot be adopted and why.
//! `restarts` reads the plan preview windlass makes of the adopting revision and names every
//! change that would restart or reschedule the operator's pods, which adoption refuses.

pub mod helm;
pub mod olm;
mod olm_objects;
mod olm_owned;
pub mod restarts;
pub mod text;

pub use olm::{Adoption, CatalogPlan, OlmInstall, Replaced, TakeOver, plan};
pub use olm_objects::{ObjectKey, owned_by};
