//! Compiles the repository's `bundles/` folder into the crate as the built-in catalog: a static
//! table of (path relative to `bundles/`, file bytes). Only files inside package folders are
//! embedded; top-level files (the README) are documentation, not catalog content.

use std::{
    env,
    fmt::Write as _,
    fs,
    path::{Path, PathBuf},
};

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest_dir.join("../../bundles");
    let root = root
        .canonicalize()
        .unwrap_or_else(|e| panic!("the built-in catalog {}: {e}", root.display()));
    println!("cargo:rerun-if-changed={}", root.display());
    println!("cargo:rerun-if-changed=build.rs");

    let mut files = Vec::new();
    for entry in sorted_entries(&root) {
        if entry.is_dir() {
            collect(&root, &entry, &mut files);
        }
    }
    files.sort();
    let mut out = String::from(
        "/// Every file of the built-in catalog: (path relative to `bundles/`, content), sorted.\n\
         pub(crate) static FILES: &[(&str, &[u8])] = &[\n",
    );
    for (relative, absolute) in &files {
        writeln!(
            out,
            "    ({relative:?}, include_bytes!({:?})),",
            absolute.display().to_string()
        )
        .expect("writing to a String");
    }
    out.push_str("];\n");
    let target = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo")).join("builtin.rs");
    fs::write(&target, out).unwrap_or_else(|e| panic!("writing {}: {e}", target.display()));
}

/// Non-hidden entries of a folder, sorted by name.
fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| {
            !path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    entries.sort();
    entries
}

fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) {
    for entry in sorted_entries(dir) {
        if entry.is_dir() {
            collect(root, &entry, files);
        } else {
            let relative = entry
                .strip_prefix(root)
                .expect("inside the root")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            files.push((relative, entry));
        }
    }
}
