//! Reading a package archive back, as a stream, from a stranger: every entry path is checked
//! (no `..`, no absolute paths, no links or devices), the unpacked size and the number of
//! entries are capped before anything is read, every manifest and blob is checked against its
//! digest and size, and an archive that ends early, or lacks something its images need, is
//! refused. Configs and layers go to a [`BlobSink`] as they are read (the push streams them to
//! a registry); what a reader keeps in memory is the manifests.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;

use sha2::{Digest, Sha256};

use super::{BLOBS_DIR, DIRECTORIES, INDEX_PATH, LAYOUT_PATH};
use crate::layout::{
    self, Descriptor, ImageSet, LayoutError, MAX_MANIFEST_BYTES, OCI_LAYOUT, TopImage,
};
use crate::lint::{MAX_ICON_BYTES, icon_media_type};
use crate::manifest::{MANIFEST_FILE, MAX_MANIFEST_BYTES as MAX_PACKAGE_MANIFEST, PackageManifest};

/// Caps on what reading one archive may unpack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadLimits {
    /// Total bytes of all entries, unpacked.
    pub max_total_bytes: u64,
    /// Number of entries (files and directories).
    pub max_entries: usize,
}

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits {
            max_total_bytes: 32 * 1024 * 1024 * 1024,
            max_entries: 20_000,
        }
    }
}

/// Why an archive was refused. Each variant names the entry, blob or image concerned.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("the archive is truncated: it ends {where_} (the file was cut short while copying?)")]
    Truncated { where_: String },
    #[error("the archive is not a readable .tgz: {message}")]
    Corrupt { message: String },
    #[error("archive entry `{entry}`: {why}")]
    UnsafeEntry { entry: String, why: String },
    #[error(
        "the archive is larger than {limit} bytes unpacked (at entry `{entry}`); raise the limit if it is expected"
    )]
    TooLarge { entry: String, limit: u64 },
    #[error("the archive has more than {limit} entries (at entry `{entry}`)")]
    TooManyEntries { entry: String, limit: usize },
    #[error("archive entry `{entry}`: {why}")]
    Unexpected { entry: String, why: String },
    #[error("archive entry `{entry}` appears twice")]
    Duplicate { entry: String },
    #[error("{0}")]
    Manifest(#[from] crate::manifest::ManifestError),
    #[error("{0}")]
    Layout(#[from] LayoutError),
    #[error("blob {digest}: {why}")]
    Blob { digest: String, why: String },
    #[error("the archive is incomplete: {what} is missing (was it truncated?)")]
    Missing { what: String },
    #[error("{digest}: {message}")]
    Sink { digest: String, message: String },
}

/// One config or layer, as the reader hands it over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlobInfo {
    pub digest: String,
    pub size: u64,
    /// The images (indexes into [`ImageSet::images`]) that use it.
    pub images: BTreeSet<usize>,
}

/// Where configs and layers go while an archive is read.
pub trait BlobSink {
    /// Takes one blob. `content` yields exactly its bytes; what the sink leaves unread is
    /// read (and checked) by the reader. An `Err` stops the reading.
    fn blob(
        &mut self,
        images: &ImageSet,
        blob: &BlobInfo,
        content: &mut dyn Read,
    ) -> Result<(), String>;
}

/// A sink that only lets the reader check each blob.
pub struct Discard;

impl BlobSink for Discard {
    fn blob(&mut self, _: &ImageSet, _: &BlobInfo, _: &mut dyn Read) -> Result<(), String> {
        Ok(())
    }
}

/// What an archive holds, every digest checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadPackage {
    pub manifest: PackageManifest,
    pub manifest_yaml: Vec<u8>,
    pub icon: Option<(String, Vec<u8>)>,
    pub images: ImageSet,
    /// Total bytes of configs and layers read.
    pub blob_bytes: u64,
}

/// Hashes and counts what passes through it.
struct Checked<'a, R: Read> {
    inner: &'a mut R,
    hasher: Sha256,
    read: u64,
}

impl<R: Read> Read for Checked<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.read += n as u64;
        Ok(n)
    }
}

/// Where the reader is in the archive's fixed order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    Start,
    Manifest,
    Icon,
    Layout,
    Index,
    Blobs,
}

struct State {
    stage: Stage,
    manifest: Option<(PackageManifest, Vec<u8>)>,
    icon: Option<(String, Vec<u8>)>,
    layout_seen: bool,
    images: ImageSet,
    /// Manifests listed by what was read so far and not read yet: descriptor and the image.
    expected_manifests: BTreeMap<String, (Descriptor, usize)>,
    seen: BTreeSet<String>,
    blob_bytes: u64,
}

/// Reads a package archive (`.tgz`), handing each config and layer to `sink`.
pub fn read_archive(
    input: impl Read,
    limits: ReadLimits,
    sink: &mut dyn BlobSink,
) -> Result<ReadPackage, ArchiveError> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(input));
    let mut state = State {
        stage: Stage::Start,
        manifest: None,
        icon: None,
        layout_seen: false,
        images: ImageSet::default(),
        expected_manifests: BTreeMap::new(),
        seen: BTreeSet::new(),
        blob_bytes: 0,
    };
    let mut total = 0u64;
    let mut count = 0usize;
    let mut last = String::from("at its start");
    let entries = archive.entries().map_err(|e| io_error(e, &last))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| io_error(e, &last))?;
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let path = safe_path(&raw, entry.header().entry_type())?;
        count += 1;
        if count > limits.max_entries {
            return Err(ArchiveError::TooManyEntries {
                entry: raw,
                limit: limits.max_entries,
            });
        }
        let size = entry.header().size().map_err(|e| ArchiveError::Corrupt {
            message: format!("entry `{raw}`: {e}"),
        })?;
        total = total.saturating_add(size);
        if total > limits.max_total_bytes {
            return Err(ArchiveError::TooLarge {
                entry: raw,
                limit: limits.max_total_bytes,
            });
        }
        last = format!("in entry `{raw}`");
        if !state.seen.insert(path.clone()) {
            return Err(ArchiveError::Duplicate { entry: raw });
        }
        if entry.header().entry_type().is_dir() {
            if !DIRECTORIES.contains(&path.as_str()) {
                return Err(unexpected(&raw, "is a directory a package does not have"));
            }
            continue;
        }
        state.read_entry(&raw, &path, size, &mut entry, sink)?;
        last = format!("after entry `{raw}`");
    }
    // The rest of the stream, so that gzip checks its trailer (length and CRC): a file cut
    // inside it still holds every entry, but is not what was written.
    let mut rest = archive.into_inner();
    let padding = std::io::copy(
        &mut (&mut rest).take(limits.max_total_bytes.saturating_sub(total)),
        &mut std::io::sink(),
    )
    .map_err(|e| io_error(e, "after the end-of-archive marker"))?;
    total += padding;
    if total >= limits.max_total_bytes {
        return Err(ArchiveError::TooLarge {
            entry: "(after the end-of-archive marker)".into(),
            limit: limits.max_total_bytes,
        });
    }
    state.finish()
}

fn io_error(error: std::io::Error, where_: &str) -> ArchiveError {
    if error.kind() == std::io::ErrorKind::UnexpectedEof {
        ArchiveError::Truncated {
            where_: where_.to_string(),
        }
    } else {
        ArchiveError::Corrupt {
            message: format!("{error} ({where_})"),
        }
    }
}

fn unexpected(entry: &str, why: &str) -> ArchiveError {
    ArchiveError::Unexpected {
        entry: entry.to_string(),
        why: why.to_string(),
    }
}

/// The entry's path, normalised (`./a` is `a`, directories end in `/`); refuses anything
/// that is not a plain file or directory inside the archive.
fn safe_path(raw: &str, kind: tar::EntryType) -> Result<String, ArchiveError> {
    let refuse = |why: &str| ArchiveError::UnsafeEntry {
        entry: raw.to_string(),
        why: why.to_string(),
    };
    if raw.starts_with('/') || raw.starts_with('\\') || raw.contains(":\\") {
        return Err(refuse("absolute paths are not allowed"));
    }
    let mut parts = Vec::new();
    for part in raw.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(refuse("`..` is not allowed in paths")),
            other if other.contains('\\') => return Err(refuse("`\\` is not allowed in paths")),
            other => parts.push(other),
        }
    }
    if parts.is_empty() {
        return Err(refuse("the path is empty"));
    }
    if kind.is_symlink() || kind.is_hard_link() {
        return Err(refuse("links are not allowed in a package"));
    }
    let path = parts.join("/");
    if kind.is_dir() {
        return Ok(format!("{path}/"));
    }
    if !(kind.is_file() || kind.is_contiguous()) {
        return Err(refuse(&format!("{kind:?} entries are not allowed")));
    }
    Ok(path)
}

/// Reads an entry whole, refusing more than `max` bytes.
fn read_small(
    entry: &mut impl Read,
    raw: &str,
    size: u64,
    max: u64,
) -> Result<Vec<u8>, ArchiveError> {
    if size > max {
        return Err(unexpected(
            raw,
            &format!("is {size} bytes, more than {max}"),
        ));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    entry
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(e, &format!("in entry `{raw}`")))?;
    if bytes.len() as u64 != size {
        return Err(ArchiveError::Truncated {
            where_: format!("in entry `{raw}`"),
        });
    }
    Ok(bytes)
}

impl State {
    fn read_entry<R: Read>(
        &mut self,
        raw: &str,
        path: &str,
        size: u64,
        entry: &mut R,
        sink: &mut dyn BlobSink,
    ) -> Result<(), ArchiveError> {
        if path == MANIFEST_FILE {
            if self.stage != Stage::Start {
                return Err(unexpected(raw, "must be the archive's first entry"));
            }
            let bytes = read_small(entry, raw, size, MAX_PACKAGE_MANIFEST)?;
            let text = String::from_utf8(bytes.clone())
                .map_err(|_| unexpected(raw, "is not UTF-8 text"))?;
            let manifest = PackageManifest::parse(MANIFEST_FILE, &text)?;
            self.stage = if manifest.spec.icon.is_empty() {
                Stage::Icon
            } else {
                Stage::Manifest
            };
            self.manifest = Some((manifest, bytes));
            return Ok(());
        }
        let Some((manifest, _)) = &self.manifest else {
            return Err(unexpected(
                raw,
                &format!("comes before {MANIFEST_FILE}, which must be first"),
            ));
        };
        if self.stage == Stage::Manifest {
            let icon = manifest.spec.icon.clone();
            if path != icon {
                return Err(unexpected(
                    raw,
                    &format!("expected the icon `{icon}` here, which {MANIFEST_FILE} names"),
                ));
            }
            if icon_media_type(&icon).is_none() {
                return Err(unexpected(
                    raw,
                    "is not an icon file name (.svg, .png, .jpg, .gif)",
                ));
            }
            let bytes = read_small(entry, raw, size, MAX_ICON_BYTES)?;
            self.icon = Some((icon, bytes));
            self.stage = Stage::Icon;
            return Ok(());
        }
        if path == LAYOUT_PATH {
            if self.stage != Stage::Icon {
                return Err(unexpected(raw, "is out of place"));
            }
            let bytes = read_small(entry, raw, size, 1024)?;
            let version: serde_json::Value = serde_json::from_slice(&bytes)
                .map_err(|e| unexpected(raw, &format!("is not JSON: {e}")))?;
            let expected: serde_json::Value =
                serde_json::from_str(OCI_LAYOUT).expect("the layout marker is JSON");
            if version != expected {
                return Err(unexpected(raw, &format!("must be {OCI_LAYOUT}")));
            }
            self.layout_seen = true;
            self.stage = Stage::Layout;
            return Ok(());
        }
        if path == INDEX_PATH {
            if self.stage != Stage::Layout {
                return Err(unexpected(raw, &format!("must follow {LAYOUT_PATH}")));
            }
            let bytes = read_small(entry, raw, size, MAX_MANIFEST_BYTES)?;
            let images = layout::read_index(&bytes).map_err(|why| unexpected(raw, &why))?;
            self.check_images(raw, &images)?;
            for (index, image) in images.iter().enumerate() {
                self.expected_manifests
                    .entry(image.descriptor.digest.clone())
                    .or_insert_with(|| (image.descriptor.clone(), index));
            }
            self.images.images = images;
            self.stage = Stage::Index;
            return Ok(());
        }
        let Some(hex) = path.strip_prefix(BLOBS_DIR) else {
            return Err(unexpected(raw, "is not part of a package"));
        };
        if self.stage < Stage::Index {
            return Err(unexpected(raw, &format!("comes before {INDEX_PATH}")));
        }
        let digest = format!("sha256:{hex}");
        if !windlass_mirror::is_sha256_digest(&digest) || hex.contains('/') {
            return Err(unexpected(raw, "is not named by a sha256 digest"));
        }
        if let Some((descriptor, image)) = self.expected_manifests.remove(&digest) {
            if self.stage == Stage::Blobs {
                return Err(unexpected(
                    raw,
                    "is a manifest after configs and layers; an archive lists every manifest first",
                ));
            }
            if size != descriptor.size {
                return Err(ArchiveError::Blob {
                    digest,
                    why: format!("is {size} bytes, but is listed as {}", descriptor.size),
                });
            }
            let bytes = read_small(entry, raw, size, MAX_MANIFEST_BYTES)?;
            let children = self.images.add_manifest(image, &descriptor, bytes)?;
            for child in children {
                if !self.images.manifests.contains_key(&child.digest) {
                    self.expected_manifests
                        .entry(child.digest.clone())
                        .or_insert((child, image));
                }
            }
            return Ok(());
        }
        let Some(blob) = self.images.blobs.get(&digest) else {
            return Err(unexpected(
                raw,
                "is a blob no manifest read before it lists",
            ));
        };
        if self.images.manifests.contains_key(&digest) {
            return Err(ArchiveError::Duplicate { entry: raw.into() });
        }
        if size != blob.size {
            return Err(ArchiveError::Blob {
                digest,
                why: format!("is {size} bytes, but its manifest lists {}", blob.size),
            });
        }
        self.stage = Stage::Blobs;
        let info = BlobInfo {
            digest: digest.clone(),
            size,
            images: blob.images.clone(),
        };
        let mut checked = Checked {
            inner: entry,
            hasher: Sha256::new(),
            read: 0,
        };
        sink.blob(&self.images, &info, &mut checked)
            .map_err(|message| ArchiveError::Sink {
                digest: digest.clone(),
                message,
            })?;
        std::io::copy(&mut checked, &mut std::io::sink())
            .map_err(|e| io_error(e, &format!("in entry `{raw}`")))?;
        if checked.read != size {
            return Err(ArchiveError::Truncated {
                where_: format!("in entry `{raw}`"),
            });
        }
        let actual = format!("sha256:{:x}", checked.hasher.finalize());
        if actual != digest {
            return Err(ArchiveError::Blob {
                digest,
                why: format!("its content hashes to {actual}"),
            });
        }
        self.blob_bytes += size;
        Ok(())
    }

    /// `index.json` must list exactly the images the package manifest names.
    fn check_images(&self, entry: &str, images: &[TopImage]) -> Result<(), ArchiveError> {
        let Some((manifest, _)) = &self.manifest else {
            return Ok(());
        };
        let named: Vec<&str> = manifest.images();
        let listed: Vec<&str> = images.iter().map(|i| i.reference.as_str()).collect();
        if let Some(missing) = named.iter().find(|n| !listed.contains(n)) {
            return Err(ArchiveError::Missing {
                what: format!("image {missing}, which {MANIFEST_FILE} names"),
            });
        }
        if let Some(extra) = listed.iter().find(|l| !named.contains(l)) {
            return Err(unexpected(
                entry,
                &format!("lists {extra}, which {MANIFEST_FILE} does not name"),
            ));
        }
        if listed.len() != named.len() {
            return Err(unexpected(entry, "lists an image twice"));
        }
        Ok(())
    }

    fn finish(self) -> Result<ReadPackage, ArchiveError> {
        let Some((manifest, manifest_yaml)) = self.manifest else {
            return Err(ArchiveError::Missing {
                what: MANIFEST_FILE.to_string(),
            });
        };
        if self.stage == Stage::Manifest {
            return Err(ArchiveError::Missing {
                what: format!("the icon {}", manifest.spec.icon),
            });
        }
        if !self.layout_seen {
            return Err(ArchiveError::Missing {
                what: LAYOUT_PATH.to_string(),
            });
        }
        if self.stage < Stage::Index {
            return Err(ArchiveError::Missing {
                what: INDEX_PATH.to_string(),
            });
        }
        if let Some((digest, (_, image))) = self.expected_manifests.iter().next() {
            return Err(ArchiveError::Missing {
                what: format!(
                    "manifest {digest} of image {}",
                    self.images.images[*image].reference
                ),
            });
        }
        for (digest, blob) in &self.images.blobs {
            if !self.seen.contains(&super::blob_path(digest)) {
                let image = blob
                    .images
                    .iter()
                    .next()
                    .map(|i| self.images.images[*i].reference.clone())
                    .unwrap_or_default();
                return Err(ArchiveError::Missing {
                    what: format!("blob {digest} of image {image}"),
                });
            }
        }
        Ok(ReadPackage {
            manifest,
            manifest_yaml,
            icon: self.icon,
            images: self.images,
            blob_bytes: self.blob_bytes,
        })
    }
}
