//! OLM bundle formats: everything windlass reads from or writes for a single bundle.
//!
//! Every source (directory, package-manifest folder, `.tgz` pack, image layer) is read into a
//! [`files::FileTree`] first and interpreted by one parser, [`load::from_files`].

pub mod crd;
pub mod csv;
pub mod files;
pub mod legacy_apis;
pub mod load;
pub mod metadata;
pub mod pack;
pub mod unpack;
pub mod yaml;

pub use csv::ClusterServiceVersion;
pub use files::{FileTree, Limits};
pub use load::{
    Bundle, BundleError, Layout, LoadNote, Manifest, from_files, load_bundle, load_bundle_with,
};
