//! `windlass bundle lint | pack`: local bundle checks and packaging.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use windlass_bundle::{Limits, from_files, load::read_source};
use windlass_catalog::lint::{Finding, Level, Report, lint_bundle};

#[derive(clap::Args)]
pub struct LintArgs {
    /// Bundle directories, package-manifest version folders or .tgz packs.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    #[arg(short = 'o', long, default_value = "text", value_parser = ["text", "json"])]
    pub output: String,
}

#[derive(clap::Args)]
pub struct PackArgs {
    /// A bundle directory or package-manifest version folder.
    pub dir: PathBuf,
    /// Where to write the pack; defaults to `<csv-name>.tgz` in the current directory.
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
}

/// Lints one path; a bundle that cannot be read is itself an error finding.
pub fn lint_path(path: &Path) -> Report {
    match windlass_bundle::load_bundle(path) {
        Ok(bundle) => lint_bundle(&bundle),
        Err(error) => Report {
            findings: vec![Finding {
                level: Level::Error,
                check: "unreadable-bundle",
                file: path.display().to_string(),
                field: None,
                message: error.to_string(),
            }],
        },
    }
}

/// Prints a report in the chosen format and returns the exit code: 1 when it has errors.
pub fn print_report(report: &Report, output: &str) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    if output == "json" {
        let doc = serde_json::json!({
            "findings": report.findings,
            "errors": report.count(Level::Error),
            "warnings": report.count(Level::Warning),
        });
        serde_json::to_writer_pretty(&mut out, &doc)?;
        writeln!(out)?;
    } else {
        for finding in &report.findings {
            writeln!(out, "{finding}")?;
        }
        writeln!(
            out,
            "{} error(s), {} warning(s)",
            report.count(Level::Error),
            report.count(Level::Warning)
        )?;
    }
    Ok(if report.has_errors() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

pub fn lint(args: LintArgs) -> anyhow::Result<ExitCode> {
    let mut report = Report::default();
    for path in &args.paths {
        report.findings.extend(lint_path(path).findings);
    }
    print_report(&report, &args.output)
}

/// Writes `bytes` to `path` through a temporary file in the same folder, so a failure leaves
/// nothing half-written behind.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.partial",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("moving {} to {}", tmp.display(), path.display()))
}

pub fn pack(args: PackArgs) -> anyhow::Result<ExitCode> {
    let (tree, source) = read_source(&args.dir, Limits::default())?;
    let bundle = from_files(&tree, &source)?;
    let report = lint_bundle(&bundle);
    if report.has_errors() {
        eprintln!("not packed: lint found errors");
        for finding in report.findings.iter().filter(|f| f.level == Level::Error) {
            eprintln!("{finding}");
        }
        return Ok(ExitCode::from(1));
    }
    let (bytes, manifest) = windlass_bundle::pack::pack_bundle(&bundle, &tree)?;
    let output = args
        .output
        .unwrap_or_else(|| PathBuf::from(format!("{}.tgz", manifest.name)));
    write_atomically(&output, &bytes)?;
    println!(
        "packed {} {} ({} files, {} related images) into {}",
        manifest.name,
        manifest.version,
        manifest.files.len(),
        manifest.related_images.len(),
        output.display()
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata: {name: demo.v1.0.0}\nspec:\n  version: 1.0.0\n  displayName: Demo\n  description: d\n  provider: {name: Acme}\n  installModes: [{type: AllNamespaces, supported: true}]\n  install:\n    strategy: deployment\n    spec:\n      deployments:\n      - name: d\n        spec: {template: {spec: {containers: [{name: m, image: 'example.com/m:1'}]}}}\n  relatedImages: [{name: m, image: 'example.com/m:1'}]\n";

    fn bundle_dir(csv: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("b/manifests")).unwrap();
        std::fs::create_dir_all(dir.path().join("b/metadata")).unwrap();
        std::fs::write(dir.path().join("b/manifests/csv.yaml"), csv).unwrap();
        std::fs::write(dir.path().join("b/metadata/annotations.yaml"), "annotations:\n  operators.operatorframework.io.bundle.package.v1: demo\n  operators.operatorframework.io.bundle.channels.v1: stable\n").unwrap();
        dir
    }

    #[test]
    fn pack_writes_a_loadable_archive_for_a_clean_bundle() {
        let dir = bundle_dir(CSV);
        let out = dir.path().join("demo.tgz");
        let code = pack(PackArgs {
            dir: dir.path().join("b"),
            output: Some(out.clone()),
        })
        .unwrap();
        assert_eq!(code, ExitCode::SUCCESS);
        let bundle = windlass_bundle::load_bundle(&out).unwrap();
        assert_eq!(bundle.package(), Some("demo"));
        assert!(!lint_path(&out).has_errors());
    }

    #[test]
    fn pack_refuses_a_bundle_with_lint_errors_and_writes_nothing() {
        let dir = bundle_dir(&CSV.replace(
            "  installModes: [{type: AllNamespaces, supported: true}]\n",
            "",
        ));
        let out = dir.path().join("demo.tgz");
        let code = pack(PackArgs {
            dir: dir.path().join("b"),
            output: Some(out.clone()),
        })
        .unwrap();
        assert_eq!(code, ExitCode::from(1));
        assert!(!out.exists());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no partial file left behind"
        );
    }

    #[test]
    fn an_unreadable_bundle_is_an_error_finding_naming_the_file_and_line() {
        let dir = bundle_dir("kind: [broken\n");
        let report = lint_path(&dir.path().join("b"));
        assert!(report.has_errors());
        assert!(
            report.findings[0].message.contains("manifests/csv.yaml:"),
            "{}",
            report.findings[0].message
        );
    }
}
