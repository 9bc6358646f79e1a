//! Writing a package archive as a stream: the manifest and layout first, then every blob in
//! the order [`Contents::blob_order`] gives, each checked against its digest and size as it
//! passes. Nothing is held in memory but the manifests.

use std::io::Write;

use sha2::{Digest, Sha256};

use super::{
    BLOBS_DIR, Contents, DIR_MODE, DIRECTORIES, ENTRY_MODE, INDEX_PATH, LAYOUT_PATH, blob_path,
};
use crate::layout::OCI_LAYOUT;
use crate::manifest::MANIFEST_FILE;

/// gzip level of the archive. Layers are compressed already and make up nearly all of it; a
/// higher level spends much more time for almost nothing.
pub const GZIP_LEVEL: u32 = 1;

/// Why an archive could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("writing the archive: {0}")]
    Io(#[from] std::io::Error),
    #[error("blob {digest}: expected {expected} next (blobs are written in digest order)")]
    OutOfOrder { digest: String, expected: String },
    #[error("blob {digest} is not part of the package")]
    Unknown { digest: String },
    #[error("blob {digest}: the registry sent {actual} bytes, the manifest lists {expected}")]
    Size {
        digest: String,
        expected: u64,
        actual: u64,
    },
    #[error("blob {digest}: the content the registry sent hashes to {actual}")]
    Digest { digest: String, actual: String },
    #[error("blob {0} was never written")]
    Missing(String),
}

/// A tar stream inside deterministic gzip: fixed headers (root-owned, dated 1970, fixed
/// modes), so the same content always gives the same bytes.
struct TarGz<W: Write> {
    gzip: flate2::write::GzEncoder<W>,
}

impl<W: Write> TarGz<W> {
    fn new(out: W) -> TarGz<W> {
        TarGz {
            gzip: flate2::GzBuilder::new()
                .mtime(0)
                .operating_system(255)
                .write(out, flate2::Compression::new(GZIP_LEVEL)),
        }
    }

    fn header(&mut self, path: &str, kind: tar::EntryType, size: u64) -> std::io::Result<()> {
        let mut header = tar::Header::new_ustar();
        header.set_path(path)?;
        header.set_entry_type(kind);
        header.set_mode(if kind.is_dir() { DIR_MODE } else { ENTRY_MODE });
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        header.set_size(size);
        header.set_cksum();
        self.gzip.write_all(header.as_bytes())
    }

    fn pad(&mut self, size: u64) -> std::io::Result<()> {
        let rest = (512 - size % 512) % 512;
        self.gzip.write_all(&[0; 512][..rest as usize])
    }

    fn file(&mut self, path: &str, bytes: &[u8]) -> std::io::Result<()> {
        self.header(path, tar::EntryType::Regular, bytes.len() as u64)?;
        self.gzip.write_all(bytes)?;
        self.pad(bytes.len() as u64)
    }

    fn dir(&mut self, path: &str) -> std::io::Result<()> {
        self.header(path, tar::EntryType::Directory, 0)
    }

    fn finish(mut self) -> std::io::Result<W> {
        // The end-of-archive marker: two empty blocks.
        self.gzip.write_all(&[0; 1024])?;
        self.gzip.finish()
    }
}

/// Writes a package archive. [`ArchiveWriter::start`] writes everything but the blobs; the
/// caller then streams each blob of [`ArchiveWriter::next_blob`] in turn.
pub struct ArchiveWriter<W: Write> {
    tar: TarGz<W>,
    /// Blobs still to write, in order, with their sizes.
    pending: std::collections::VecDeque<(String, u64)>,
}

impl<W: Write> ArchiveWriter<W> {
    /// Writes the package manifest, the icon, the layout and every manifest blob.
    pub fn start(out: W, contents: &Contents) -> Result<ArchiveWriter<W>, WriteError> {
        let mut tar = TarGz::new(out);
        tar.file(MANIFEST_FILE, &contents.manifest_yaml)?;
        if let Some((name, bytes)) = &contents.icon {
            tar.file(name, bytes)?;
        }
        for dir in DIRECTORIES {
            tar.dir(dir)?;
        }
        tar.file(LAYOUT_PATH, OCI_LAYOUT.as_bytes())?;
        tar.file(INDEX_PATH, &contents.images.index_json())?;
        for descriptor in contents.images.manifest_order() {
            let stored = &contents.images.manifests[&descriptor.digest];
            tar.file(&blob_path(&descriptor.digest), &stored.bytes)?;
        }
        debug_assert!(BLOBS_DIR.ends_with('/'));
        Ok(ArchiveWriter {
            tar,
            pending: contents.blob_order().into(),
        })
    }

    /// The next blob to write and its size; `None` once every blob is written.
    pub fn next_blob(&self) -> Option<&(String, u64)> {
        self.pending.front()
    }

    /// Starts writing blob `digest`, which must be [`ArchiveWriter::next_blob`].
    pub fn blob(&mut self, digest: &str) -> Result<BlobWriter<'_, W>, WriteError> {
        let Some((expected, size)) = self.pending.front().cloned() else {
            return Err(WriteError::Unknown {
                digest: digest.into(),
            });
        };
        if expected != digest {
            return Err(WriteError::OutOfOrder {
                digest: digest.into(),
                expected,
            });
        }
        self.tar
            .header(&blob_path(digest), tar::EntryType::Regular, size)?;
        Ok(BlobWriter {
            archive: self,
            digest: expected,
            size,
            written: 0,
            hasher: Sha256::new(),
        })
    }

    /// Ends the archive; every blob must have been written.
    pub fn finish(self) -> Result<W, WriteError> {
        if let Some((digest, _)) = self.pending.front() {
            return Err(WriteError::Missing(digest.clone()));
        }
        Ok(self.tar.finish()?)
    }
}

/// One blob being written: its bytes are counted and hashed as they pass.
pub struct BlobWriter<'a, W: Write> {
    archive: &'a mut ArchiveWriter<W>,
    digest: String,
    size: u64,
    written: u64,
    hasher: Sha256,
}

impl<W: Write> BlobWriter<'_, W> {
    /// Appends a chunk of the blob.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), WriteError> {
        self.written += chunk.len() as u64;
        if self.written > self.size {
            return Err(WriteError::Size {
                digest: self.digest.clone(),
                expected: self.size,
                actual: self.written,
            });
        }
        self.hasher.update(chunk);
        self.archive.tar.gzip.write_all(chunk)?;
        Ok(())
    }

    /// Ends the blob, checking its size and digest.
    pub fn finish(self) -> Result<(), WriteError> {
        if self.written != self.size {
            return Err(WriteError::Size {
                digest: self.digest,
                expected: self.size,
                actual: self.written,
            });
        }
        let actual = format!("sha256:{:x}", self.hasher.finalize());
        if actual != self.digest {
            return Err(WriteError::Digest {
                digest: self.digest,
                actual,
            });
        }
        self.archive.tar.pad(self.size)?;
        self.archive.pending.pop_front();
        Ok(())
    }
}
