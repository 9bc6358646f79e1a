//! What a catalog offers, as a hub decides it: the listing gate and delisting.
//!
//! - [`gate`]: a version is offered only once it passes lint (required CSV fields, images,
//!   versions, constraints, channel validity). One that fails is held back with the findings,
//!   and everything else is offered. A CSV name offered twice keeps its first copy; the second
//!   is refused as already added, naming both sources; so is a CSV name another package of
//!   the catalog already offers (bundles are located by CSV name).
//! - [`Delisting`]: a cluster admin takes a package, or some of its versions, off the hub. New
//!   installs cannot choose them; what is installed keeps running.
//! - [`summarize`]: one package as a hub shows it (channels, versions, provider, listed or not).
//!
//! Taking a version out of a channel splices the channel around it ([`splice`]): what
//! replaced the removed entry now replaces what the removed entry replaced, and skips it, so
//! upgrades pass over it instead of the channel breaking in two.

mod delist;
mod gate;
mod splice;
mod summary;

pub use delist::{DelistEntry, Delisted, Delisting, DelistingProblem, parse_version};
pub use gate::{HeldBack, Listing, gate, gate_with};
pub use splice::without_bundles;
pub use summary::{ChannelSummary, PackageSummary, summarize};

#[cfg(test)]
mod tests;
