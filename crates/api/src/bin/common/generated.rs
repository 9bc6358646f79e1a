//! Writing or checking the files a generator makes (shared by the generators in this folder).

use std::path::{Path, PathBuf};

/// Writes each `(dir, [(file name, text)])`, or with `check` writes nothing and fails naming
/// every file that differs, telling to run `make {target}` (the generator's source is `source`).
pub fn write_or_check(
    outputs: Vec<(PathBuf, Vec<(&'static str, String)>)>,
    check: bool,
    source: &str,
    target: &str,
) -> Result<(), String> {
    let mut stale = Vec::new();
    for (dir, files) in outputs {
        for (name, text) in files {
            let path = dir.join(name);
            if check {
                if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                    stale.push(path.display().to_string());
                }
            } else {
                write(&path, &text)?;
            }
        }
    }
    if !stale.is_empty() {
        return Err(format!(
            "{} differ from {source}; run `make {target}` and commit the result",
            stale.join(", ")
        ));
    }
    Ok(())
}

/// `[--check] DIR DIR` from the command line: whether to check, and the two directories.
pub fn args(usage: &str) -> Result<(bool, String, String), String> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let check = args.first().is_some_and(|a| a == "--check");
    if check {
        args.remove(0);
    }
    match <[String; 2]>::try_from(args) {
        Ok([plain, chart]) => Ok((check, plain, chart)),
        Err(_) => Err(format!("usage: {usage}")),
    }
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}
