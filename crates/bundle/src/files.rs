//! A bundle's files held in memory, read from a directory or unpacked from an archive.
//!
//! Every source (directory, `.tgz` pack, image layer) becomes a [`FileTree`] first, so one
//! parser serves them all and the limits below apply everywhere.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// Caps that keep a hostile or broken bundle from exhausting memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Total bytes of all files after decompression.
    pub max_total_bytes: u64,
    /// Number of regular files.
    pub max_files: usize,
}

impl Default for Limits {
    /// Generous for real bundles (the largest corpus bundle is a few MB) yet far from harmful.
    fn default() -> Self {
        Limits {
            max_total_bytes: 256 * 1024 * 1024,
            max_files: 10_000,
        }
    }
}

/// Files keyed by their `/`-separated path relative to the bundle root, sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileTree {
    pub files: BTreeMap<String, Vec<u8>>,
}

/// Why a directory could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: symbolic link points outside the bundle ({})", path.display(), target.display())]
    LinkEscapes { path: PathBuf, target: PathBuf },
    #[error("{}: more than {limit} files", path.display())]
    TooManyFiles { path: PathBuf, limit: usize },
    #[error("{}: more than {limit} bytes in all", path.display())]
    TooLarge { path: PathBuf, limit: u64 },
}

impl FileTree {
    /// Files directly or indirectly under `dir/` (no trailing slash needed), with their full keys.
    pub fn under<'a>(&'a self, dir: &'a str) -> impl Iterator<Item = (&'a str, &'a [u8])> + 'a {
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        self.files
            .range(prefix.clone()..)
            .take_while(move |(k, _)| k.starts_with(&prefix))
            .map(|(k, v)| (k.as_str(), v.as_slice()))
    }

    pub fn get(&self, path: &str) -> Option<&[u8]> {
        self.files.get(path).map(Vec::as_slice)
    }

    pub fn total_bytes(&self) -> u64 {
        self.files.values().map(|v| v.len() as u64).sum()
    }

    /// Reads every regular file under `root`. Symbolic links are followed only while they stay
    /// inside `root`; hidden entries (`.git`, `.DS_Store`) are skipped.
    pub fn read_dir(root: &Path, limits: Limits) -> Result<FileTree, ReadError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| ReadError::Io { path, source }
        };
        let canonical_root = root.canonicalize().map_err(io(root))?;
        let mut tree = FileTree::default();
        let mut total = 0u64;
        let mut stack = vec![canonical_root.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).map_err(io(&dir))? {
                let entry = entry.map_err(io(&dir))?;
                let path = entry.path();
                if entry.file_name().to_string_lossy().starts_with('.') {
                    continue;
                }
                let mut file_type = entry.file_type().map_err(io(&path))?;
                if file_type.is_symlink() {
                    let target = path.canonicalize().map_err(io(&path))?;
                    if !target.starts_with(&canonical_root) {
                        return Err(ReadError::LinkEscapes { path, target });
                    }
                    file_type = std::fs::metadata(&target).map_err(io(&path))?.file_type();
                }
                if file_type.is_dir() {
                    stack.push(path);
                } else if file_type.is_file() {
                    if tree.files.len() >= limits.max_files {
                        return Err(ReadError::TooManyFiles {
                            path: root.to_path_buf(),
                            limit: limits.max_files,
                        });
                    }
                    let bytes = std::fs::read(&path).map_err(io(&path))?;
                    total += bytes.len() as u64;
                    if total > limits.max_total_bytes {
                        return Err(ReadError::TooLarge {
                            path: root.to_path_buf(),
                            limit: limits.max_total_bytes,
                        });
                    }
                    tree.files
                        .insert(relative_key(&canonical_root, &path), bytes);
                }
            }
        }
        Ok(tree)
    }
}

fn relative_key(root: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap_or(path);
    relative
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_nested_files_with_relative_keys_and_skips_hidden_ones() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("manifests")).unwrap();
        std::fs::write(dir.path().join("manifests/a.yaml"), "a: 1").unwrap();
        std::fs::write(dir.path().join(".DS_Store"), "x").unwrap();
        let tree = FileTree::read_dir(dir.path(), Limits::default()).unwrap();
        assert_eq!(
            tree.files.keys().collect::<Vec<_>>(),
            vec!["manifests/a.yaml"]
        );
        assert_eq!(tree.under("manifests").count(), 1);
        assert_eq!(tree.under("manifest").count(), 0);
    }

    #[cfg(unix)]
    #[test]
    fn refuses_a_symlink_leaving_the_bundle() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("link.yaml"))
            .unwrap();
        let error = FileTree::read_dir(dir.path(), Limits::default()).unwrap_err();
        assert!(matches!(error, ReadError::LinkEscapes { .. }), "{error}");
    }

    #[test]
    fn enforces_file_count_and_size_limits() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..3 {
            std::fs::write(dir.path().join(format!("{i}.yaml")), "0123456789").unwrap();
        }
        let few = Limits {
            max_total_bytes: 1 << 20,
            max_files: 2,
        };
        assert!(matches!(
            FileTree::read_dir(dir.path(), few),
            Err(ReadError::TooManyFiles { .. })
        ));
        let small = Limits {
            max_total_bytes: 25,
            max_files: 100,
        };
        assert!(matches!(
            FileTree::read_dir(dir.path(), small),
            Err(ReadError::TooLarge { .. })
        ));
    }
}
