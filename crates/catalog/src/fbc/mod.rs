//! File-based catalogs: reading `olm.package` / `olm.channel` / `olm.bundle` /
//! `olm.deprecations` blobs (JSON or YAML streams) and rendering a catalog in the same shape
//! `opm render` emits.
//!
//! Reading decodes each blob by its schema straight into the model (see [`decode`]) and never
//! stops at a bad blob or file: what cannot be read is reported in [`Loaded::issues`] with its
//! file, document, package and bundle, and left out.

mod assemble;
mod decode;
mod files;
mod pipeline;
mod render;
mod stream;

use std::path::{Path, PathBuf};

pub use render::{blobs, render, write_json, write_yaml};

use crate::load::{IssueKind, LoadError, LoadIssue, Loaded};
use crate::validate::Severity;
use assemble::Assembler;
use files::Item;

fn is_json(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "json")
}

fn is_catalog_file(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e == "json" || e == "yaml" || e == "yml")
}

/// Reads a file-based catalog: one file, or every `.json`/`.yaml`/`.yml` file under a folder.
/// A single file that cannot be opened is an error; inside a folder it is a problem.
pub fn read(path: &Path) -> Result<Loaded, LoadError> {
    let mut files = Vec::new();
    collect(path, &mut files)?;
    let mut assembler = Assembler::default();
    if path.is_file() {
        let display = path.display().to_string();
        let index = assembler.file(display.clone());
        let unreadable = |source: std::io::Error| LoadError::Io {
            path: path.to_path_buf(),
            source,
        };
        if is_json(path) {
            std::fs::File::open(path)
                .and_then(|f| stream::read_json(f, index, &mut assembler))
                .map_err(unreadable)?;
        } else {
            let bytes = std::fs::read(path).map_err(unreadable)?;
            read_yaml_bytes(&bytes, index, &display, &mut assembler);
        }
    } else {
        read_folder(&files, &mut assembler);
    }
    Ok(finish(assembler, path))
}

/// How many bytes of a folder's files are read ahead and decoded together.
const WINDOW: usize = 16 << 20;

/// A folder's files, in order, a window of them at a time (see [`files`]); a JSON file larger
/// than a window streams on its own.
fn read_folder(paths: &[PathBuf], assembler: &mut Assembler) {
    let mut window: Vec<(&Path, std::io::Result<Vec<u8>>)> = Vec::new();
    let mut held = 0;
    for path in paths {
        let large = is_json(path) && std::fs::metadata(path).is_ok_and(|m| m.len() > WINDOW as u64);
        if large {
            read_window(std::mem::take(&mut window), assembler);
            held = 0;
            let display = path.display().to_string();
            let index = assembler.file(display.clone());
            if let Err(e) =
                std::fs::File::open(path).and_then(|f| stream::read_json(f, index, assembler))
            {
                assembler.issues.push(unreadable_file(display, &e));
            }
            continue;
        }
        let read = std::fs::read(path);
        held += read.as_ref().map_or(0, Vec::len);
        window.push((path, read));
        if held >= WINDOW {
            read_window(std::mem::take(&mut window), assembler);
            held = 0;
        }
    }
    read_window(window, assembler);
}

fn read_window(window: Vec<(&Path, std::io::Result<Vec<u8>>)>, assembler: &mut Assembler) {
    let mut items = Vec::with_capacity(window.len());
    for (path, read) in &window {
        let display = path.display().to_string();
        let index = assembler.file(display.clone());
        items.push(match read {
            Ok(bytes) if is_json(path) => Item::Json { file: index, bytes },
            Ok(bytes) => Item::Other(Box::new(move |assembler: &mut Assembler| {
                read_yaml_bytes(bytes, index, &display, assembler)
            })),
            Err(e) => {
                let issue = unreadable_file(display, e);
                Item::Other(Box::new(move |assembler: &mut Assembler| {
                    assembler.issues.push(issue)
                }))
            }
        });
    }
    files::read_in_order(items, assembler);
}

fn unreadable_file(display: String, error: &std::io::Error) -> LoadIssue {
    LoadIssue::new(
        Severity::Error,
        IssueKind::UnreadableFile,
        None,
        display,
        format!("{error}; the file is left out"),
    )
}

fn read_yaml_bytes(bytes: &[u8], index: u32, display: &str, assembler: &mut Assembler) {
    match std::str::from_utf8(bytes) {
        Ok(text) => stream::read_yaml(text, index, assembler),
        Err(e) => assembler.issues.push(LoadIssue::new(
            Severity::Error,
            IssueKind::UnreadableFile,
            None,
            display,
            format!(
                "not UTF-8 text (byte {}); the file is left out",
                e.valid_up_to()
            ),
        )),
    }
}

/// The label naming the folder of a catalog image that holds its file-based catalog.
pub const CONFIGS_LABEL: &str = "operators.operatorframework.io.index.configs.v1";

/// Reads a file-based catalog held in memory (a pulled catalog image): every `.json`, `.yaml`
/// and `.yml` file under `dir` (empty: the whole tree).
pub fn read_tree(
    tree: &windlass_bundle::FileTree,
    dir: &str,
    source: &str,
) -> Result<Loaded, LoadError> {
    let mut assembler = Assembler::default();
    read_files(
        tree.files
            .iter()
            .filter(|(k, _)| in_catalog(k, dir))
            .map(|(k, v)| (k.as_str(), v.as_slice())),
        source,
        &mut assembler,
    );
    Ok(finish(assembler, Path::new(source)))
}

/// [`read_tree`], letting go of the files' bytes a window at a time, so the raw files and the
/// catalog read from them are not both held whole (a large catalog image is tens of megabytes
/// of JSON).
pub fn read_tree_owned(
    tree: windlass_bundle::FileTree,
    dir: &str,
    source: &str,
) -> Result<Loaded, LoadError> {
    let mut assembler = Assembler::default();
    let mut window = Vec::new();
    let mut held = 0;
    for (key, bytes) in tree.files {
        if !in_catalog(&key, dir) {
            continue;
        }
        held += bytes.len();
        window.push((key, bytes));
        if held >= WINDOW {
            let files = std::mem::take(&mut window);
            read_files(
                files.iter().map(|(k, v)| (k.as_str(), v.as_slice())),
                source,
                &mut assembler,
            );
            held = 0;
        }
    }
    read_files(
        window.iter().map(|(k, v)| (k.as_str(), v.as_slice())),
        source,
        &mut assembler,
    );
    Ok(finish(assembler, Path::new(source)))
}

/// The catalog files of a tree under `dir`, in order, decoded together (see [`files`]).
fn read_files<'a>(
    files: impl Iterator<Item = (&'a str, &'a [u8])>,
    source: &str,
    assembler: &mut Assembler,
) {
    let mut items = Vec::new();
    for (key, bytes) in files {
        let display = Path::new(source).join(key).display().to_string();
        let index = assembler.file(display.clone());
        items.push(if is_json(Path::new(key)) {
            Item::Json { file: index, bytes }
        } else {
            Item::Other(Box::new(move |assembler: &mut Assembler| {
                read_yaml_bytes(bytes, index, &display, assembler)
            }))
        });
    }
    files::read_in_order(items, assembler);
}

/// Whether the tree's file `key` is a catalog file under `dir` (empty: anywhere).
fn in_catalog(key: &str, dir: &str) -> bool {
    let dir = dir.trim_matches('/');
    let inside = dir.is_empty()
        || key
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'));
    inside && is_catalog_file(Path::new(key))
}

fn finish(assembler: Assembler, origin: &Path) -> Loaded {
    let (catalog, issues) = assembler.finish();
    let package_sources = catalog
        .packages
        .keys()
        .map(|name| (name.clone(), origin.to_path_buf()))
        .collect();
    Loaded {
        catalog,
        bundles: Vec::new(),
        issues,
        package_sources,
    }
}

/// A catalog as the files of a catalog image: `configs/<package>/catalog.json`, one per
/// package, each the rendered blobs of that package.
pub fn image_tree(catalog: &crate::model::Catalog) -> std::io::Result<windlass_bundle::FileTree> {
    let mut tree = windlass_bundle::FileTree::default();
    for (name, package) in &catalog.packages {
        let single = crate::model::Catalog {
            packages: [(name.clone(), package.clone())].into(),
        };
        let mut bytes = Vec::new();
        write_json(render(&single), &mut bytes)?;
        tree.files
            .insert(format!("configs/{name}/catalog.json"), bytes);
    }
    Ok(tree)
}

fn collect(path: &Path, out: &mut Vec<std::path::PathBuf>) -> Result<(), LoadError> {
    if path.is_file() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    for entry in crate::load::entries(path)? {
        if entry.is_dir() {
            collect(&entry, out)?;
        } else if is_catalog_file(&entry) {
            out.push(entry);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
