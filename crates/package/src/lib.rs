//! Operator packages for air-gapped sites: everything one operator version needs, carried
//! into a site's own registry as one file.
//!
//! A package folder holds [`manifest`]`.yaml` (name, version, bundle image or Helm chart, how
//! the hub shows it, architectures, every related image), in windlass's format or in ACP's as
//! violet writes it ([`violet`]), which [`lint`] checks, alone and against the bundle's CSV
//! ([`images`] finds what a CSV runs) or the chart ([`chart`]). [`archive`] writes and reads the
//! package archive: a reproducible `.tgz` with the manifest and one OCI image layout
//! ([`layout`]) of the bundle image (or chart) and every related image, digests preserved.
//! [`push`] decides where each image goes in the site's registry and which mirror rules lead
//! there. Pure: the CLI pulls and pushes.

pub mod archive;
pub mod chart;
pub mod images;
pub mod layout;
pub mod lint;
pub mod manifest;
pub mod push;
pub mod violet;

pub use manifest::{MANIFEST_FILE, PackageManifest};

/// `sha256:<hex>` of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{:x}", sha2::Sha256::digest(bytes))
}
