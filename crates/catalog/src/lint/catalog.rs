//! Checks across a catalog: what reading found, every bundle, versions added twice, channel
//! validity and default channels.

use std::collections::BTreeMap;
use std::path::Path;

use super::{Level, Report, lint_bundle};
use crate::load::{IssueKind, LoadError, Loaded, read_catalogs};
use crate::validate::validate_channel;

/// Reads the catalogs at `paths` and lints them together.
pub fn lint_catalog(paths: &[std::path::PathBuf]) -> Result<Report, LoadError> {
    Ok(lint_loaded(&read_catalogs(paths)?))
}

fn issue_check(kind: IssueKind) -> &'static str {
    match kind {
        IssueKind::UnreadableBundle => "unreadable-bundle",
        IssueKind::BadVersion => "version-semver",
        IssueKind::DuplicateBundle => "already-added",
        IssueKind::MissingCurrentCsv => "current-csv",
        IssueKind::NoChannel => "no-channel",
        IssueKind::PackageMismatch => "package-name",
        IssueKind::DuplicateKey => "duplicate-key",
        IssueKind::IgnoredFile => "ignored-file",
        IssueKind::UnknownSchema => "unknown-schema",
        IssueKind::BadPackageFile => "package-file",
        IssueKind::BadBlob => "bad-blob",
        IssueKind::UnreadableFile => "unreadable-file",
        IssueKind::HeadLeftOut => "channel-head",
        IssueKind::BadConstraint => "constraint",
    }
}

/// Lints what one read produced.
pub fn lint_loaded(loaded: &Loaded) -> Report {
    let mut report = Report::default();
    for issue in &loaded.issues {
        // Bundle lint reports the reader's notes and the constraints of bundles read from
        // folders itself, with the bundle's context (the field inside the file).
        if matches!(issue.kind, IssueKind::DuplicateKey | IssueKind::IgnoredFile)
            || (issue.kind == IssueKind::BadConstraint
                && loaded
                    .bundles
                    .iter()
                    .any(|s| issue.package.as_ref() == Some(&s.package)))
        {
            continue;
        }
        let level = if issue.severity == crate::validate::Severity::Error {
            Level::Error
        } else {
            Level::Warning
        };
        report.push(
            level,
            issue_check(issue.kind),
            issue.file.clone(),
            None,
            issue.describe(),
        );
    }
    for source in &loaded.bundles {
        report.findings.extend(lint_bundle(&source.bundle).findings);
        folder_version(source, &mut report);
    }
    for (name, package) in &loaded.catalog.packages {
        let file = loaded
            .package_sources
            .get(name)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| name.clone());
        let mut by_version: BTreeMap<&semver::Version, Vec<&str>> = BTreeMap::new();
        for bundle in package.bundles.values() {
            by_version
                .entry(&bundle.version)
                .or_default()
                .push(&bundle.name);
        }
        for (version, names) in by_version.into_iter().filter(|(_, n)| n.len() > 1) {
            report.push(
                Level::Error,
                "already-added",
                &file,
                None,
                format!(
                    "package {name}: version {version} is added more than once ({})",
                    names.join(", ")
                ),
            );
        }
        for channel in package.channels.values() {
            for problem in validate_channel(package, channel) {
                report.push(
                    problem.severity().into(),
                    "channel",
                    &file,
                    Some(&format!("channels[{}]", channel.name)),
                    problem.to_string(),
                );
            }
        }
        match &package.default_channel {
            Some(default)
                if !package.channels.contains_key(default) && !package.channels.is_empty() =>
            {
                report.push(
                    Level::Error,
                    "default-channel",
                    &file,
                    Some("defaultChannel"),
                    format!(
                        "package {name}: default channel {default} does not exist ({})",
                        package
                            .channels
                            .keys()
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            }
            None if package.channels.len() > 1 => report.push(
                Level::Error,
                "default-channel",
                &file,
                Some("defaultChannel"),
                format!("package {name}: several channels and no default channel"),
            ),
            _ => {}
        }
    }
    report.sort();
    report
}

/// A version folder named like a version must hold that version.
fn folder_version(source: &crate::load::SourceBundle, report: &mut Report) {
    let Some(folder) = Path::new(&source.dir)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
    else {
        return;
    };
    let Ok(folder_version) = semver::Version::parse(folder.trim_start_matches('v')) else {
        return;
    };
    let Ok(version) = source.bundle.csv.version() else {
        return;
    };
    if folder_version != version {
        report.push(
            Level::Error,
            "version-folder",
            source
                .bundle
                .path_of(&source.bundle.csv_file)
                .display()
                .to_string(),
            Some("spec.version"),
            format!("version {version} differs from its folder name {folder}"),
        );
    }
}
