//! The built-in catalog: the repository's `bundles/` folder, compiled into the binary (see
//! `build.rs`), written out once to a private temporary folder and read like any catalog folder.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::Arc,
};

use sha2::{Digest, Sha256};
use windlass_catalog::{
    Catalog,
    listing::{Delisting, gate},
    load::{ReadOptions, read_catalog_with},
};

use windlass_catalog_store::{BundleLocation, ListingState};

include!(concat!(env!("OUT_DIR"), "/builtin.rs"));

/// The embedded files: (path relative to the catalog root, content), sorted by path.
pub fn files() -> &'static [(&'static str, &'static [u8])] {
    FILES
}

/// `sha256:<hex>` over files sorted by path. Each file contributes its path, its length and its
/// bytes, so moving bytes between files or renaming a file changes the digest.
pub fn content_digest<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> String {
    let mut sorted: Vec<(&str, &[u8])> = files.into_iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    let mut hasher = Sha256::new();
    for (path, bytes) in sorted {
        hasher.update((path.len() as u64).to_le_bytes());
        hasher.update(path.as_bytes());
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    format!("sha256:{:x}", hasher.finalize())
}

/// The digest of one bundle folder (`<package>/<version>`): its own files, paths taken
/// relative to the folder, so the same bundle has the same digest wherever it sits.
pub fn folder_digest<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    folder: &str,
) -> String {
    let prefix = format!("{}/", folder.trim_end_matches('/'));
    content_digest(
        files
            .into_iter()
            .filter_map(|(path, bytes)| Some((path.strip_prefix(&prefix)?, bytes))),
    )
}

#[derive(Debug, thiserror::Error)]
pub enum BuiltinError {
    #[error("writing the built-in catalog to {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("reading the built-in catalog: {0}")]
    Read(#[from] windlass_catalog::LoadError),
    #[error("the built-in catalog has bundle {csv_name} in {} outside its folder", dir.display())]
    Outside { csv_name: String, dir: PathBuf },
}

/// The built-in catalog, read from its files on disk. The folder lives (and is removed) with
/// this value.
#[derive(Debug)]
pub struct BuiltinCatalog {
    pub catalog: Arc<Catalog>,
    /// Digest over every embedded file.
    pub digest: String,
    /// Each bundle's folder and content digest, by CSV name.
    pub bundles: Arc<BTreeMap<String, BundleLocation>>,
    /// What the listing gate held back (nothing, for the samples as shipped).
    pub listing: ListingState,
    dir: tempfile::TempDir,
}

impl BuiltinCatalog {
    /// Writes the embedded files to a new private temporary folder and reads them.
    pub fn materialize() -> Result<BuiltinCatalog, BuiltinError> {
        let dir = tempfile::Builder::new()
            .prefix("windlass-builtin-")
            .tempdir()
            .map_err(|source| BuiltinError::Write {
                path: std::env::temp_dir(),
                source,
            })?;
        write_files(dir.path(), files())?;
        // Manifests kept: the listing gate lints every bundle whole, like any other catalog's.
        let loaded = read_catalog_with(
            dir.path(),
            ReadOptions {
                keep_manifests: true,
            },
        )?;
        let sources: Vec<(String, PathBuf)> = loaded
            .bundles
            .iter()
            .map(|s| (s.bundle.csv.name().to_string(), s.dir.clone()))
            .collect();
        let listing = gate(loaded);
        let mut bundles = BTreeMap::new();
        for (csv_name, source_dir) in sources {
            let offered = listing
                .catalog
                .packages
                .values()
                .any(|p| p.bundles.contains_key(&csv_name));
            if !offered {
                continue;
            }
            let relative =
                source_dir
                    .strip_prefix(dir.path())
                    .map_err(|_| BuiltinError::Outside {
                        csv_name: csv_name.clone(),
                        dir: source_dir.clone(),
                    })?;
            let folder = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            let digest = folder_digest(files().iter().copied(), &folder);
            bundles.insert(
                csv_name,
                BundleLocation::Directory {
                    path: source_dir.clone(),
                    digest,
                },
            );
        }
        Ok(BuiltinCatalog {
            catalog: Arc::new(listing.catalog),
            digest: content_digest(files().iter().copied()),
            bundles: Arc::new(bundles),
            listing: ListingState {
                held_back: listing.held_back,
                problems: listing.problems,
                delisting: Delisting::default(),
            },
            dir,
        })
    }

    /// Where the files were written.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

fn write_files(root: &Path, files: &[(&str, &[u8])]) -> Result<(), BuiltinError> {
    for (relative, bytes) in files {
        let path = root.join(relative);
        let write = |source| BuiltinError::Write {
            path: path.clone(),
            source,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(write)?;
        }
        std::fs::write(&path, bytes).map_err(write)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_table_holds_the_four_sample_packages() {
        let builtin = BuiltinCatalog::materialize().unwrap();
        let packages: Vec<&str> = builtin
            .catalog
            .packages
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            packages,
            ["acme-cache", "acme-db", "acme-gateway", "acme-monitor"]
        );
        // The samples pass the listing gate as shipped.
        assert_eq!(builtin.listing, ListingState::default());
        let db = &builtin.catalog.packages["acme-db"];
        assert_eq!(db.default_channel.as_deref(), Some("candidate"));
        assert_eq!(db.bundles.len(), 4);
        assert_eq!(builtin.catalog.packages["acme-monitor"].bundles.len(), 2);
        assert_eq!(builtin.catalog.packages["acme-gateway"].bundles.len(), 1);
        assert_eq!(builtin.catalog.packages["acme-cache"].bundles.len(), 3);
        // Every bundle has a folder to be read from, and it reads back.
        assert_eq!(builtin.bundles.len(), 10);
        let BundleLocation::Directory { path, digest } = &builtin.bundles["acme-db.v1.1.1"] else {
            panic!("built-in bundles live in folders");
        };
        assert!(path.starts_with(builtin.path()));
        assert!(
            digest.starts_with("sha256:") && digest.len() == 71,
            "{digest}"
        );
        let bundle = windlass_bundle::load_bundle(path).unwrap();
        assert_eq!(bundle.csv.name(), "acme-db.v1.1.1");
        assert_eq!(bundle.package(), Some("acme-db"));
    }

    #[test]
    fn only_package_folders_are_embedded() {
        assert!(files().iter().all(|(path, _)| path.contains('/')));
        assert!(
            files()
                .iter()
                .any(|(path, _)| *path == "acme-db/acme-db.package.yaml")
        );
        assert!(
            files().windows(2).all(|w| w[0].0 < w[1].0),
            "sorted, no repeats"
        );
    }

    #[test]
    fn digests_are_stable_across_reads_and_differ_per_bundle() {
        let first = BuiltinCatalog::materialize().unwrap();
        let second = BuiltinCatalog::materialize().unwrap();
        assert_ne!(first.path(), second.path(), "each read gets its own folder");
        assert_eq!(first.digest, second.digest);
        let digests = |b: &BuiltinCatalog| -> Vec<String> {
            b.bundles
                .values()
                .map(|l| match l {
                    BundleLocation::Directory { digest, .. } => digest.clone(),
                    BundleLocation::Image { .. } => unreachable!(),
                })
                .collect()
        };
        assert_eq!(digests(&first), digests(&second));
        let mut unique = digests(&first);
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 10, "every bundle has its own content");
        assert_eq!(first.digest, content_digest(files().iter().copied()));
    }

    #[test]
    fn the_content_digest_depends_on_names_and_bytes_not_order() {
        let a = content_digest([("x/a", b"1".as_slice()), ("x/b", b"2".as_slice())]);
        let reordered = content_digest([("x/b", b"2".as_slice()), ("x/a", b"1".as_slice())]);
        let renamed = content_digest([("x/a", b"1".as_slice()), ("x/c", b"2".as_slice())]);
        let shifted = content_digest([("x/a", b"12".as_slice()), ("x/b", b"".as_slice())]);
        assert_eq!(a, reordered);
        assert_ne!(a, renamed);
        assert_ne!(a, shifted);
        // Known value: pins the framing so digests recorded in clusters stay valid.
        assert_eq!(
            content_digest(std::iter::empty()),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            folder_digest(
                [("p/1/a", b"1".as_slice()), ("p/2/a", b"2".as_slice())],
                "p/1"
            ),
            content_digest([("a", b"1".as_slice())])
        );
    }
}

#[cfg(test)]
#[path = "builtin_tests.rs"]
mod store_tests;
