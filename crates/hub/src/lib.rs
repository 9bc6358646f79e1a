//! The hub's pure side: everything the hub page and its read API show, computed from catalog
//! content and cluster objects handed in, with no cluster or network access. The server
//! (`windlass-hub-server`) reads catalogs and acts as the signed-in person; this crate decides
//! what they see and what an action writes.
//!
//! - [`metadata`]: a bundle's display metadata, from its CSV or its `olm.csv.metadata`.
//! - [`index`]: one summary per (catalog, package); search and filters.
//! - [`detail`]: one package in full: channels, versions, upgrade graph, APIs, samples.
//! - [`graph`]: the upgrade graph as an SVG picture.
//! - [`markdown`]: catalog markdown to sanitized HTML.
//! - [`pages`], [`html`]: the pages; [`assets`]: the script and stylesheet they load.
//! - [`api`]: the read API's bodies.
//! - [`instances`]: an installed package's installs and the instances of the CRDs they own,
//!   as the person may read them, and what to reclaim after a delist.
//! - [`actions`]: what install, approve, roll back and resume write.
//! - [`delisting`]: what delist and relist write into a Catalog's `spec.delisted` (shared with
//!   `windlass catalog delist | relist`).
//! - [`security`]: the CSP, CSRF tokens, origin checks, cookies and icon types.
//! - [`synthetic`]: generated catalogs for tests and the benchmark.

pub mod actions;
pub mod api;
pub mod assets;
pub mod delisting;
pub mod detail;
pub mod graph;
pub mod html;
pub mod index;
pub mod instances;
pub mod markdown;
pub mod metadata;
pub mod pages;
pub mod security;
pub mod synthetic;

pub use detail::PackageDetail;
pub use index::{CatalogContent, HubIndex, PackageSummary, Query};
pub use metadata::BundleMetadata;
