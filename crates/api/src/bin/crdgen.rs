//! Writes the windlass CRDs as YAML, one file per kind, into the directories given.
//! `make crds` runs it for `config/crd` and the Helm chart's `crds/`.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dirs: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if dirs.is_empty() {
        return Err("usage: crdgen DIR...".into());
    }
    for dir in &dirs {
        std::fs::create_dir_all(dir)?;
        for (file, yaml) in windlass_api::crd_files()? {
            std::fs::write(dir.join(&file), yaml)?;
        }
    }
    Ok(())
}
