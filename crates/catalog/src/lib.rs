//! The in-memory catalog model shared by lint, rendering and the resolver.
//!
//! A catalog is packages -> channels -> entries -> bundles. Upgrade edges (`replaces`, `skips`,
//! `olm.skipRange`) are kept here as plain data; the graph algorithms live in the resolver.

pub mod constraint;
pub mod fbc;
pub mod lint;
pub mod listing;
pub mod load;
pub mod model;
pub mod name;
pub mod provider;
pub mod range;
pub mod validate;
pub mod work;

pub use constraint::Constraint;
pub use load::{LoadError, load_catalog, load_catalogs};
pub use model::{Bundle, Catalog, Channel, ChannelEntry, Deprecation, Package, Property};
pub use provider::{Provider, ProviderType};
