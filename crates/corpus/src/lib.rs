//! Where the OperatorHub corpus is, for the tests and benchmarks that read it.
//!
//! The corpus (real OperatorHub bundles; data, not part of this repository) is a folder holding
//! `operatorhub/<package>/...`. It is looked for at `WINDLASS_CORPUS` when that is set, else at
//! `../shared/corpus` beside the checkout:
//!
//! - found: the caller gets its `operatorhub/` folder;
//! - `WINDLASS_CORPUS` unset and nothing beside the checkout: the caller skips. The skip is said
//!   on stderr at once and recorded in the file named by `WINDLASS_SKIPPED_TESTS`, which
//!   `make test` sets and summarises at the end;
//! - `WINDLASS_CORPUS=skip`: skipped on purpose, recorded the same way;
//! - `WINDLASS_CORPUS` set to a folder that is not a corpus: the test fails. CI sets it, so there
//!   a missing corpus cannot pass unnoticed.

use std::ffi::OsString;
use std::io::Write;
use std::panic::Location;
use std::path::{Path, PathBuf};

/// The environment variable naming the corpus folder (or `skip`).
pub const CORPUS_ENV: &str = "WINDLASS_CORPUS";
/// The environment variable naming the file that skips are appended to, one line each:
/// `file<TAB>test<TAB>reason`.
pub const SKIPPED_TESTS_ENV: &str = "WINDLASS_SKIPPED_TESTS";
/// How a person gets the corpus, for every message that reports its absence.
pub const HOW_TO_GET: &str = "the corpus is a folder holding operatorhub/<package>/... (the \
    upstream-community-operators tree of operator-framework/community-operators, snapshot of \
    2021-07-21); put it at ../shared/corpus beside the checkout or set WINDLASS_CORPUS to it \
    (CONTRIBUTING.md, \"The corpus\")";

/// What the environment and the file system say about the corpus.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Located {
    /// The corpus's `operatorhub/` folder.
    Found(PathBuf),
    /// No corpus for this run, and that is allowed; the reason is for a person.
    Skipped(String),
    /// A corpus was asked for and is not there; the message is for a person.
    Missing(String),
}

/// `../shared/corpus` beside the checkout this crate belongs to.
pub fn default_root() -> PathBuf {
    let repository = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("this crate lives at crates/corpus in the repository");
    repository
        .parent()
        .unwrap_or(repository)
        .join("shared/corpus")
}

/// Decides from the value of `WINDLASS_CORPUS` and the default location.
pub fn locate_from(setting: Option<OsString>, default_root: &Path) -> Located {
    let setting = setting.filter(|value| !value.is_empty());
    match setting {
        Some(value) if value == "skip" => Located::Skipped(format!("{CORPUS_ENV}=skip")),
        Some(value) => {
            let root = PathBuf::from(value);
            let operatorhub = root.join("operatorhub");
            if operatorhub.is_dir() {
                Located::Found(operatorhub)
            } else {
                Located::Missing(format!(
                    "{CORPUS_ENV} is {}, which holds no operatorhub/ folder; {HOW_TO_GET}",
                    root.display()
                ))
            }
        }
        None if !default_root.exists() => Located::Skipped(format!(
            "no corpus at {} and {CORPUS_ENV} is not set",
            default_root.display()
        )),
        None => {
            let operatorhub = default_root.join("operatorhub");
            if operatorhub.is_dir() {
                Located::Found(operatorhub)
            } else {
                Located::Missing(format!(
                    "{} exists but holds no operatorhub/ folder; {HOW_TO_GET}",
                    default_root.display()
                ))
            }
        }
    }
}

/// Decides from this process's environment.
pub fn locate() -> Located {
    locate_from(std::env::var_os(CORPUS_ENV), &default_root())
}

/// The corpus's `operatorhub/` folder for the calling test or benchmark, or `None` when it has
/// to skip: then the skip has been announced and recorded, and the caller returns. Panics when
/// a corpus was asked for (`WINDLASS_CORPUS` set) and is not there.
#[track_caller]
pub fn operatorhub_or_skip() -> Option<PathBuf> {
    match locate() {
        Located::Found(operatorhub) => Some(operatorhub),
        Located::Missing(message) => panic!("{message}"),
        Located::Skipped(reason) => {
            record_skip(Location::caller().file(), &reason);
            None
        }
    }
}

/// Says on stderr that the current test skipped, and appends it to `WINDLASS_SKIPPED_TESTS`.
fn record_skip(file: &str, reason: &str) {
    let test = current_test();
    // Written to the stderr handle, not with eprintln!, which the test harness captures and
    // shows only for failures.
    let _ = writeln!(
        std::io::stderr(),
        "skipped {test} ({file}): {reason}; {HOW_TO_GET}"
    );
    if let Some(record) = std::env::var_os(SKIPPED_TESTS_ENV).filter(|p| !p.is_empty()) {
        let record = PathBuf::from(record);
        if let Err(error) = append_skip(&record, file, &test, reason) {
            panic!(
                "recording the skip in {} ({SKIPPED_TESTS_ENV}): {error}",
                record.display()
            );
        }
    }
}

/// The running test's name: libtest names each test's thread after it; a benchmark runs on
/// `main` and has none.
fn current_test() -> String {
    match std::thread::current().name() {
        Some(name) if name != "main" => name.to_string(),
        _ => "-".to_string(),
    }
}

fn append_skip(record: &Path, file: &str, test: &str, reason: &str) -> std::io::Result<()> {
    // One short write per line with O_APPEND, so parallel tests and test binaries never
    // interleave within a line.
    let line = format!("{file}\t{test}\t{reason}\n");
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(record)?
        .write_all(line.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus_with_operatorhub() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("operatorhub")).unwrap();
        dir
    }

    #[test]
    fn the_setting_wins_over_the_default_location() {
        let set = corpus_with_operatorhub();
        let default = corpus_with_operatorhub();
        assert_eq!(
            locate_from(Some(set.path().into()), default.path()),
            Located::Found(set.path().join("operatorhub"))
        );
    }

    #[test]
    fn the_default_location_is_used_when_nothing_is_set() {
        let default = corpus_with_operatorhub();
        for setting in [None, Some(OsString::new())] {
            assert_eq!(
                locate_from(setting, default.path()),
                Located::Found(default.path().join("operatorhub"))
            );
        }
    }

    #[test]
    fn nothing_set_and_nothing_beside_the_checkout_skips() {
        let empty = tempfile::tempdir().unwrap();
        let absent = empty.path().join("shared/corpus");
        let Located::Skipped(reason) = locate_from(None, &absent) else {
            panic!("expected a skip");
        };
        assert!(reason.contains(&absent.display().to_string()), "{reason}");
        assert!(reason.contains(CORPUS_ENV), "{reason}");
    }

    #[test]
    fn skip_skips_even_when_a_corpus_is_there() {
        let default = corpus_with_operatorhub();
        assert_eq!(
            locate_from(Some("skip".into()), default.path()),
            Located::Skipped("WINDLASS_CORPUS=skip".into())
        );
    }

    #[test]
    fn a_setting_that_is_not_a_corpus_fails_and_says_how_to_get_one() {
        let default = corpus_with_operatorhub();
        let empty = tempfile::tempdir().unwrap();
        for bad in [empty.path().to_path_buf(), empty.path().join("absent")] {
            let Located::Missing(message) = locate_from(Some(bad.clone().into()), default.path())
            else {
                panic!("expected {} to be refused", bad.display());
            };
            assert!(message.contains(&bad.display().to_string()), "{message}");
            assert!(message.contains(HOW_TO_GET), "{message}");
        }
    }

    #[test]
    fn a_default_location_without_operatorhub_fails() {
        let default = tempfile::tempdir().unwrap();
        assert!(matches!(
            locate_from(None, default.path()),
            Located::Missing(_)
        ));
    }

    #[test]
    fn the_default_location_is_beside_the_checkout() {
        let root = default_root();
        assert!(root.ends_with("shared/corpus"), "{}", root.display());
        let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let checkout = checkout.canonicalize().unwrap();
        assert_eq!(
            root.parent().and_then(Path::parent),
            checkout.parent(),
            "{}",
            root.display()
        );
    }

    #[test]
    fn skips_are_appended_one_line_each() {
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("skipped.tsv");
        append_skip(&record, "crates/x/tests/corpus.rs", &current_test(), "why").unwrap();
        append_skip(&record, "e2e/tests/e2e/y.rs", "y::z", "why not").unwrap();
        let text = std::fs::read_to_string(&record).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "crates/x/tests/corpus.rs\ttests::skips_are_appended_one_line_each\twhy",
                "e2e/tests/e2e/y.rs\ty::z\twhy not",
            ]
        );
    }
}
