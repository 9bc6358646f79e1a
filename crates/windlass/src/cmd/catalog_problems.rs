//! What the catalog commands do with what reading a catalog left out: print it on stderr and
//! serve the rest, or, with `--strict` (for CI), stop.

use std::process::ExitCode;

use windlass_catalog::load::{LoadIssue, Loaded};

#[derive(clap::Args, Clone, Copy, Debug, Default)]
pub struct StrictArgs {
    /// Fail (exit 1) when any bundle, file or document of the catalog could not be read,
    /// instead of serving the rest.
    #[arg(long)]
    pub strict: bool,
}

/// How a read went, for the exit code.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Go on with the catalog (problems, if any, were printed).
    Serve,
    /// Stop with this code: `--strict` and something was left out, or nothing was read.
    Stop(ExitCode),
}

/// One line per issue: `error:` for what left part of the catalog out, `warning:` otherwise.
pub fn lines(issues: &[LoadIssue]) -> Vec<String> {
    issues
        .iter()
        .map(|issue| {
            let level = if issue.loses_content() {
                "error"
            } else {
                "warning"
            };
            format!("{level}: {issue}")
        })
        .collect()
}

/// Prints the issues of a read on stderr and decides whether the command goes on.
pub fn report(loaded: &Loaded, strict: StrictArgs) -> Verdict {
    for line in lines(&loaded.issues) {
        eprintln!("{line}");
    }
    let (verdict, summary) = judge(loaded, strict);
    if let Some(summary) = summary {
        eprintln!("{summary}");
    }
    verdict
}

fn judge(loaded: &Loaded, strict: StrictArgs) -> (Verdict, Option<String>) {
    let lost = loaded.issues.iter().filter(|i| i.loses_content()).count();
    if loaded.catalog.packages.is_empty() {
        return (
            Verdict::Stop(ExitCode::FAILURE),
            Some("nothing could be read from the catalog".into()),
        );
    }
    match (lost, strict.strict) {
        (0, _) => (Verdict::Serve, None),
        (n, true) => (
            Verdict::Stop(ExitCode::FAILURE),
            Some(format!(
                "{n} problem(s) left part of the catalog out; --strict makes that fatal"
            )),
        ),
        (n, false) => (
            Verdict::Serve,
            Some(format!(
                "{n} problem(s) left part of the catalog out; everything else is served (--strict makes this fatal)"
            )),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use windlass_catalog::load::read_catalog;

    fn loaded_with(files: &[(&str, &str)]) -> Loaded {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        read_catalog(dir.path()).unwrap()
    }

    const GOOD: &str = r#"{"schema": "olm.package", "name": "p"}
{"schema": "olm.bundle", "name": "p.v1.0.0", "package": "p", "properties": [{"type": "olm.package", "value": {"packageName": "p", "version": "1.0.0"}}]}
"#;

    #[test]
    fn problems_are_served_around_unless_strict() {
        let loaded = loaded_with(&[
            ("a.json", GOOD),
            (
                "b.json",
                r#"{"schema": "olm.bundle", "name": "q.v1", "package": "q"}"#,
            ),
        ]);
        let lenient = judge(&loaded, StrictArgs { strict: false });
        assert_eq!(lenient.0, Verdict::Serve);
        assert!(lenient.1.unwrap().contains("1 problem(s)"));
        assert_eq!(
            judge(&loaded, StrictArgs { strict: true }).0,
            Verdict::Stop(ExitCode::FAILURE)
        );
        let printed = lines(&loaded.issues);
        assert_eq!(printed.len(), 1);
        assert!(
            printed[0].starts_with("error: ")
                && printed[0].contains(
                    "b.json:1 (document 1): package q, bundle q.v1: no olm.package property"
                ),
            "{}",
            printed[0]
        );
    }

    #[test]
    fn a_clean_catalog_is_served_and_an_empty_read_stops() {
        let clean = loaded_with(&[("a.json", GOOD)]);
        assert_eq!(
            judge(&clean, StrictArgs { strict: true }),
            (Verdict::Serve, None)
        );
        let nothing = loaded_with(&[("a.json", "{\"schema\": \"olm.bundle\"}")]);
        assert_eq!(
            judge(&nothing, StrictArgs::default()).0,
            Verdict::Stop(ExitCode::FAILURE)
        );
    }
}
