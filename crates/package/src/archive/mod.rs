//! The package archive: one reproducible `.tgz` holding the package manifest, its icon, and
//! one OCI image layout (`images/`) with the bundle image and every related image, all their
//! platforms, every manifest and blob byte for byte as the source registry served it.
//!
//! Entries come in a fixed order, so the same images always give the same bytes and a reader
//! can push as it reads:
//!
//! 1. `manifest.yaml`, then the icon (when the manifest names one);
//! 2. the directories `images/`, `images/blobs/`, `images/blobs/sha256/`;
//! 3. `images/oci-layout` and `images/index.json` (each image under the reference the
//!    package names it by);
//! 4. every manifest blob, image by image, each index before the manifests it lists;
//! 5. every config and layer blob, sorted by digest.
//!
//! Every entry is a regular file or directory owned by root, dated 1970, mode 0644 or 0755;
//! the gzip header carries no time or name. Reading an archive back ([`read`]) refuses
//! anything else, checks every digest and size, and stops at size and file-count limits.

pub mod read;
pub mod write;

use crate::layout::ImageSet;

pub use read::{ArchiveError, BlobInfo, BlobSink, Discard, ReadLimits, ReadPackage, read_archive};
pub use write::{ArchiveWriter, BlobWriter, GZIP_LEVEL, WriteError};

/// The layout's folder in the archive.
pub const IMAGES_DIR: &str = "images/";
pub const BLOBS_DIR: &str = "images/blobs/sha256/";
pub const LAYOUT_PATH: &str = "images/oci-layout";
pub const INDEX_PATH: &str = "images/index.json";
/// The directories an archive holds, in order.
pub const DIRECTORIES: [&str; 3] = ["images/", "images/blobs/", "images/blobs/sha256/"];
const ENTRY_MODE: u32 = 0o644;
const DIR_MODE: u32 = 0o755;

/// `images/blobs/sha256/<hex>` for `sha256:<hex>`.
pub fn blob_path(digest: &str) -> String {
    format!(
        "{BLOBS_DIR}{}",
        digest.strip_prefix("sha256:").unwrap_or(digest)
    )
}

/// Everything an archive holds besides the configs and layers, which are streamed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Contents {
    /// `manifest.yaml`, exactly as the package folder has it.
    pub manifest_yaml: Vec<u8>,
    /// The icon file: its name (as `spec.icon` gives it) and bytes.
    pub icon: Option<(String, Vec<u8>)>,
    pub images: ImageSet,
}

impl Contents {
    /// The configs and layers, in the order they are written: by digest.
    pub fn blob_order(&self) -> Vec<(String, u64)> {
        self.images
            .blobs
            .iter()
            .filter(|(digest, _)| !self.images.manifests.contains_key(*digest))
            .map(|(digest, blob)| (digest.clone(), blob.size))
            .collect()
    }
}

#[cfg(test)]
mod tests;
