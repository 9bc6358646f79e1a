//! File-based catalogs: reading `olm.package` / `olm.channel` / `olm.bundle` /
//! `olm.deprecations` blobs (JSON or YAML streams) and rendering a catalog in the same shape
//! `opm render` emits.
//!
//! Reading decodes each blob by its schema straight into the model (see [`decode`]) and never
//! stops at a bad blob or file: what cannot be read is reported in [`Loaded::issues`] with its
//! file, document, package and bundle, and left out.

mod assemble;
mod decode;
mod pipeline;
mod render;
mod stream;

use std::path::Path;

pub use render::{blobs, render, write_json, write_yaml};

use crate::load::{IssueKind, LoadError, LoadIssue, Loaded};
use crate::validate::Severity;
use assemble::Assembler;

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
    let single = path.is_file();
    let mut assembler = Assembler::default();
    for file in files {
        let display = file.display().to_string();
        let index = assembler.file(display.clone());
        let unreadable = |source: std::io::Error| LoadError::Io {
            path: file.clone(),
            source,
        };
        let result = if is_json(&file) {
            std::fs::File::open(&file)
                .and_then(|f| stream::read_json(f, index, &mut assembler))
                .map_err(unreadable)
        } else {
            match std::fs::read(&file) {
                Ok(bytes) => {
                    read_yaml_bytes(&bytes, index, &display, &mut assembler);
                    Ok(())
                }
                Err(e) => Err(unreadable(e)),
            }
        };
        match result {
            Ok(()) => {}
            Err(e) if single => return Err(e),
            Err(e) => assembler.issues.push(LoadIssue::new(
                Severity::Error,
                IssueKind::UnreadableFile,
                None,
                display,
                format!("{e}; the file is left out"),
            )),
        }
    }
    let (catalog, issues) = assembler.finish();
    let package_sources = catalog
        .packages
        .keys()
        .map(|name| (name.clone(), path.to_path_buf()))
        .collect();
    Ok(Loaded {
        catalog,
        bundles: Vec::new(),
        issues,
        package_sources,
    })
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
    Ok(read_files(
        tree.files.iter().map(|(k, v)| (k.as_str(), v.as_slice())),
        dir,
        source,
    ))
}

/// [`read_tree`], letting go of each file's bytes as soon as it is read, so the raw files and
/// the catalog read from them are not both held whole (a large catalog image is tens of
/// megabytes of JSON).
pub fn read_tree_owned(
    tree: windlass_bundle::FileTree,
    dir: &str,
    source: &str,
) -> Result<Loaded, LoadError> {
    let dir = dir.to_string();
    let mut assembler = Assembler::default();
    for (key, bytes) in tree.files {
        read_file(&key, &bytes, &dir, source, &mut assembler);
    }
    Ok(finish(assembler, source))
}

fn read_files<'a>(
    files: impl Iterator<Item = (&'a str, &'a [u8])>,
    dir: &str,
    source: &str,
) -> Loaded {
    let mut assembler = Assembler::default();
    for (key, bytes) in files {
        read_file(key, bytes, dir, source, &mut assembler);
    }
    finish(assembler, source)
}

/// One file of a tree, when it is a catalog file under `dir`.
fn read_file(key: &str, bytes: &[u8], dir: &str, source: &str, assembler: &mut Assembler) {
    let dir = dir.trim_matches('/');
    let inside = dir.is_empty()
        || key
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'));
    let path = Path::new(key);
    if !inside || !is_catalog_file(path) {
        return;
    }
    let display = Path::new(source).join(key).display().to_string();
    let index = assembler.file(display.clone());
    if is_json(path) {
        stream::read_json_bytes(bytes, index, assembler);
    } else {
        read_yaml_bytes(bytes, index, &display, assembler);
    }
}

fn finish(assembler: Assembler, source: &str) -> Loaded {
    let (catalog, issues) = assembler.finish();
    let package_sources = catalog
        .packages
        .keys()
        .map(|name| (name.clone(), std::path::PathBuf::from(source)))
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
