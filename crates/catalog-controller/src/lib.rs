//! Catalogs in the cluster.
//!
//! The Catalog controller turns each `Catalog` object into served content in the
//! `windlass_catalog_store::CatalogStore`:
//! the built-in catalog compiled into the manager, a file-based-catalog image or a list of
//! bundle images. The Subscription controller resolves against the store; the Blueprint
//! controller fetches bundle content from it, cached by digest so installs and rollbacks do not
//! pull twice.
//!
//! - [`builtin`]: the repository's `bundles/` folder, embedded at build time.
//! - [`source`]: reading each kind of source (pure parsing plus registry pulls).
//! - [`credentials`]: pull Secrets.
//! - [`status`]: what a Catalog's status says after a poll (pure).
//! - [`reconcile`]: the controller ([`run`]) and [`ensure_builtin`].

pub mod builtin;
pub mod credentials;
pub mod reconcile;
pub mod source;
pub mod status;

pub use builtin::BuiltinCatalog;
pub use reconcile::{Options, ensure_builtin, run};
pub use source::{Content, Reader, SourceError};
