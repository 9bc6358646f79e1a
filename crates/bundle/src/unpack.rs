//! Safe unpacking of tar (optionally gzip-compressed) archives into memory.
//!
//! Archives come from registries and strangers: every entry path is checked, links may not
//! leave the archive root, device files are refused, and the total size and file count are
//! capped while decompressing (so a gzip bomb stops at the cap, not at the end).

use std::collections::BTreeMap;
use std::io::Read;

use crate::files::{FileTree, Limits};

/// Why an archive was refused. Each variant names the offending entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnpackError {
    #[error("archive entry `{entry}`: `..` is not allowed in paths")]
    ParentDir { entry: String },
    #[error("archive entry `{entry}`: absolute paths are not allowed")]
    Absolute { entry: String },
    #[error("archive entry `{entry}`: link target `{target}` is outside the archive")]
    LinkEscapes { entry: String, target: String },
    #[error("archive entry `{entry}`: link target `{target}` does not exist in the archive")]
    DanglingLink { entry: String, target: String },
    #[error("archive entry `{entry}`: {kind} entries are not allowed")]
    SpecialFile { entry: String, kind: String },
    #[error("archive is larger than {limit} bytes unpacked (at entry `{entry}`)")]
    TooLarge { entry: String, limit: u64 },
    #[error("archive has more than {limit} files (at entry `{entry}`)")]
    TooManyFiles { entry: String, limit: usize },
    #[error("archive is not a readable tar stream: {message}")]
    Corrupt { message: String },
}

/// Unpacks a `.tar` or `.tar.gz` (detected by the gzip magic bytes).
pub fn unpack(bytes: &[u8], limits: Limits) -> Result<FileTree, UnpackError> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        unpack_tar(flate2::read::GzDecoder::new(bytes), limits)
    } else {
        unpack_tar(bytes, limits)
    }
}

/// Normalises an entry path to a `/`-joined key inside the root, refusing escapes.
fn entry_key(raw: &str) -> Result<String, UnpackError> {
    if raw.starts_with('/') || raw.starts_with('\\') || raw.contains(":\\") {
        return Err(UnpackError::Absolute { entry: raw.into() });
    }
    let mut parts = Vec::new();
    for part in raw.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(UnpackError::ParentDir { entry: raw.into() }),
            other => parts.push(other),
        }
    }
    Ok(parts.join("/"))
}

/// Resolves a link target relative to the link's directory, refusing anything outside the root.
fn link_key(entry: &str, target: &str) -> Result<String, UnpackError> {
    let escapes = || UnpackError::LinkEscapes {
        entry: entry.into(),
        target: target.into(),
    };
    if target.starts_with('/') {
        return Err(escapes());
    }
    let mut parts: Vec<&str> = entry.split('/').collect();
    parts.pop();
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop().ok_or_else(escapes)?;
            }
            other => parts.push(other),
        }
    }
    Ok(parts.join("/"))
}

fn unpack_tar<R: Read>(reader: R, limits: Limits) -> Result<FileTree, UnpackError> {
    let corrupt = |e: std::io::Error| UnpackError::Corrupt {
        message: e.to_string(),
    };
    let mut archive = tar::Archive::new(reader);
    let mut files = BTreeMap::new();
    let mut links: Vec<(String, String, String)> = Vec::new();
    let mut total = 0u64;
    for entry in archive.entries().map_err(corrupt)? {
        let mut entry = entry.map_err(corrupt)?;
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let key = entry_key(&raw)?;
        let kind = entry.header().entry_type();
        if kind.is_dir()
            || kind.is_pax_global_extensions()
            || kind.is_pax_local_extensions()
            || kind.is_gnu_longname()
            || kind.is_gnu_longlink()
        {
            continue;
        }
        if kind.is_symlink() || kind.is_hard_link() {
            let target = entry
                .link_name_bytes()
                .map(|t| String::from_utf8_lossy(&t).into_owned())
                .unwrap_or_default();
            // Hard link names are relative to the archive root, symlinks to the link's folder.
            let resolved = if kind.is_hard_link() {
                entry_key(&target).map_err(|_| UnpackError::LinkEscapes {
                    entry: raw.clone(),
                    target: target.clone(),
                })?
            } else {
                link_key(&key, &target)?
            };
            links.push((raw, key, resolved));
            continue;
        }
        if !(kind.is_file() || kind.is_contiguous()) {
            let name = match kind {
                tar::EntryType::Char => "character device",
                tar::EntryType::Block => "block device",
                tar::EntryType::Fifo => "fifo",
                _ => "unsupported",
            };
            return Err(UnpackError::SpecialFile {
                entry: raw,
                kind: name.into(),
            });
        }
        if key.is_empty() {
            continue;
        }
        if files.len() >= limits.max_files {
            return Err(UnpackError::TooManyFiles {
                entry: raw,
                limit: limits.max_files,
            });
        }
        // Read at most one byte past the remaining budget: enough to know it was exceeded.
        let remaining = limits.max_total_bytes.saturating_sub(total);
        let mut bytes = Vec::new();
        (&mut entry)
            .take(remaining + 1)
            .read_to_end(&mut bytes)
            .map_err(corrupt)?;
        total += bytes.len() as u64;
        if total > limits.max_total_bytes {
            return Err(UnpackError::TooLarge {
                entry: raw,
                limit: limits.max_total_bytes,
            });
        }
        files.insert(key, bytes);
    }
    for (raw, key, target) in links {
        let Some(bytes) = files.get(&target).cloned() else {
            return Err(UnpackError::DanglingLink { entry: raw, target });
        };
        if files.len() >= limits.max_files {
            return Err(UnpackError::TooManyFiles {
                entry: raw,
                limit: limits.max_files,
            });
        }
        total += bytes.len() as u64;
        if total > limits.max_total_bytes {
            return Err(UnpackError::TooLarge {
                entry: raw,
                limit: limits.max_total_bytes,
            });
        }
        files.insert(key, bytes);
    }
    Ok(FileTree { files })
}

/// Writes a tree as a deterministic `.tar.gz` (sorted paths, zero mtimes, fixed modes), so the
/// same bundle always packs to the same digest.
pub fn pack(tree: &FileTree) -> std::io::Result<Vec<u8>> {
    let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut builder = tar::Builder::new(encoder);
    let mut dirs = std::collections::BTreeSet::new();
    for path in tree.files.keys() {
        let mut prefix = String::new();
        for part in path
            .split('/')
            .rev()
            .skip(1)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            prefix = if prefix.is_empty() {
                part.to_string()
            } else {
                format!("{prefix}/{part}")
            };
            dirs.insert(prefix.clone());
        }
    }
    for dir in &dirs {
        let mut header = tar::Header::new_ustar();
        header.set_entry_type(tar::EntryType::Directory);
        header.set_mode(0o755);
        header.set_mtime(0);
        header.set_size(0);
        builder.append_data(&mut header, format!("{dir}/"), std::io::empty())?;
    }
    for (path, bytes) in &tree.files {
        let mut header = tar::Header::new_ustar();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_size(bytes.len() as u64);
        builder.append_data(&mut header, path, bytes.as_slice())?;
    }
    builder.into_inner()?.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds a tar by hand so tests can write entries the `tar` builder would refuse.
    fn raw_tar(entries: &[(&str, tar::EntryType, &[u8], Option<&str>)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (path, kind, data, link) in entries {
            let mut header = tar::Header::new_gnu();
            let name = header.as_old_mut().name.as_mut();
            name[..path.len()].copy_from_slice(path.as_bytes());
            header.set_entry_type(*kind);
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            if let Some(link) = link {
                let field = &mut header.as_old_mut().linkname;
                field[..link.len()].copy_from_slice(link.as_bytes());
            }
            header.set_cksum();
            out.extend_from_slice(header.as_bytes());
            out.extend_from_slice(data);
            out.resize(out.len().div_ceil(512) * 512, 0);
        }
        out.extend_from_slice(&[0; 1024]);
        out
    }

    fn gz(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    const FILE: tar::EntryType = tar::EntryType::Regular;

    #[test]
    fn pack_and_unpack_round_trip() {
        let mut tree = FileTree::default();
        tree.files.insert(
            "manifests/csv.yaml".into(),
            b"kind: ClusterServiceVersion".to_vec(),
        );
        tree.files.insert(
            "metadata/annotations.yaml".into(),
            b"annotations: {}".to_vec(),
        );
        let packed = pack(&tree).unwrap();
        assert_eq!(pack(&tree).unwrap(), packed, "packing is deterministic");
        assert_eq!(unpack(&packed, Limits::default()).unwrap(), tree);
    }

    #[test]
    fn refuses_unsafe_entries_naming_them() {
        let cases: Vec<(Vec<u8>, UnpackError)> = vec![
            (
                raw_tar(&[("../etc/passwd", FILE, b"x", None)]),
                UnpackError::ParentDir {
                    entry: "../etc/passwd".into(),
                },
            ),
            (
                raw_tar(&[("a/../../b", FILE, b"x", None)]),
                UnpackError::ParentDir {
                    entry: "a/../../b".into(),
                },
            ),
            (
                raw_tar(&[("/etc/passwd", FILE, b"x", None)]),
                UnpackError::Absolute {
                    entry: "/etc/passwd".into(),
                },
            ),
            (
                raw_tar(&[(
                    "manifests/x.yaml",
                    tar::EntryType::Symlink,
                    b"",
                    Some("../../etc/passwd"),
                )]),
                UnpackError::LinkEscapes {
                    entry: "manifests/x.yaml".into(),
                    target: "../../etc/passwd".into(),
                },
            ),
            (
                raw_tar(&[("x.yaml", tar::EntryType::Symlink, b"", Some("/etc/passwd"))]),
                UnpackError::LinkEscapes {
                    entry: "x.yaml".into(),
                    target: "/etc/passwd".into(),
                },
            ),
            (
                raw_tar(&[("x", tar::EntryType::Link, b"", Some("../y"))]),
                UnpackError::LinkEscapes {
                    entry: "x".into(),
                    target: "../y".into(),
                },
            ),
            (
                raw_tar(&[("dev", tar::EntryType::Char, b"", None)]),
                UnpackError::SpecialFile {
                    entry: "dev".into(),
                    kind: "character device".into(),
                },
            ),
        ];
        for (archive, expected) in cases {
            assert_eq!(unpack(&archive, Limits::default()).unwrap_err(), expected);
            assert_eq!(
                unpack(&gz(&archive), Limits::default()).unwrap_err(),
                expected
            );
        }
    }

    #[test]
    fn links_inside_the_archive_are_resolved() {
        let archive = raw_tar(&[
            ("manifests/real.yaml", FILE, b"a: 1", None),
            (
                "manifests/alias.yaml",
                tar::EntryType::Symlink,
                b"",
                Some("./real.yaml"),
            ),
            (
                "copy.yaml",
                tar::EntryType::Link,
                b"",
                Some("manifests/real.yaml"),
            ),
        ]);
        let tree = unpack(&archive, Limits::default()).unwrap();
        assert_eq!(tree.get("manifests/alias.yaml"), Some(&b"a: 1"[..]));
        assert_eq!(tree.get("copy.yaml"), Some(&b"a: 1"[..]));
    }

    #[test]
    fn a_gzip_bomb_stops_at_the_size_cap() {
        // 64 MiB of zeros compress to about 64 KiB; the cap is 1 MiB.
        let zeros = vec![0u8; 64 << 20];
        let archive = gz(&raw_tar(&[("bomb", FILE, &zeros, None)]));
        assert!(archive.len() < 1 << 20);
        let limits = Limits {
            max_total_bytes: 1 << 20,
            max_files: 10,
        };
        assert_eq!(
            unpack(&archive, limits).unwrap_err(),
            UnpackError::TooLarge {
                entry: "bomb".into(),
                limit: 1 << 20
            }
        );
    }

    #[test]
    fn the_file_count_is_capped() {
        let names: Vec<String> = (0..5).map(|i| format!("f{i}")).collect();
        let entries: Vec<_> = names
            .iter()
            .map(|n| (n.as_str(), FILE, &b""[..], None))
            .collect();
        let limits = Limits {
            max_total_bytes: 1 << 20,
            max_files: 4,
        };
        assert!(matches!(
            unpack(&raw_tar(&entries), limits),
            Err(UnpackError::TooManyFiles { limit: 4, .. })
        ));
    }

    #[test]
    fn garbage_is_reported_not_panicked_on() {
        assert!(unpack(&[0x1f, 0x8b, 1, 2, 3], Limits::default()).is_err());
        assert!(matches!(
            unpack(&[7u8; 700], Limits::default()),
            Err(UnpackError::Corrupt { .. })
        ));
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..2048)) {
            let _ = unpack(&bytes, Limits { max_total_bytes: 1 << 16, max_files: 16 });
        }
    }
}
