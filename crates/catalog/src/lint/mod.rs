//! Lint for bundles and catalogs: every finding names the file and field, says what is wrong
//! and how bad it is. Errors make `windlass ... lint` exit 1; warnings and notes do not.

mod bundle;
mod catalog;

use std::fmt;

use serde::Serialize;

pub use bundle::{ProviderDisplay, lint_bundle, provider_display};
pub use catalog::{lint_catalog, lint_loaded};

/// How bad a finding is. `Info` reports facts a bundle author should see (provider display).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Info,
    Warning,
    Error,
}

impl From<crate::validate::Severity> for Level {
    fn from(s: crate::validate::Severity) -> Self {
        match s {
            crate::validate::Severity::Warning => Level::Warning,
            crate::validate::Severity::Error => Level::Error,
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Info => "info",
            Level::Warning => "warning",
            Level::Error => "error",
        })
    }
}

/// One lint result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub level: Level,
    /// A stable check name, for example `csv-required-field` (for filtering and tests).
    pub check: &'static str,
    /// The file concerned (a path a person can open).
    pub file: String,
    /// The field inside the file, as a JSON path, when one is concerned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}] {}", self.level, self.check, self.file)?;
        if let Some(field) = &self.field {
            write!(f, " ({field})")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// All findings of one lint run, in a stable order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    pub findings: Vec<Finding>,
}

impl Report {
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.level == Level::Error)
    }

    pub fn count(&self, level: Level) -> usize {
        self.findings.iter().filter(|f| f.level == level).count()
    }

    pub(crate) fn push(
        &mut self,
        level: Level,
        check: &'static str,
        file: impl Into<String>,
        field: Option<&str>,
        message: impl Into<String>,
    ) {
        self.findings.push(Finding {
            level,
            check,
            file: file.into(),
            field: field.map(String::from),
            message: message.into(),
        });
    }

    pub(crate) fn sort(&mut self) {
        self.findings.sort_by(|a, b| {
            (&a.file, b.level, a.check, &a.message).cmp(&(&b.file, a.level, b.check, &b.message))
        });
        self.findings.dedup();
    }
}
