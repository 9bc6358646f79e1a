//! The package-manifest layout: `<pkg>.package.yaml` plus one folder per version.
//!
//! A channel is the `replaces` chain walked from its `currentCSV` through the bundles the folder
//! holds, plus the bundles those entries skip; a chain may end on a CSV that was pruned away.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{
    IssueKind, LoadError, LoadIssue, Loaded, ReadOptions, add_bundle, convert, entries,
    load_parallel,
};
use crate::model::{Channel, Package};
use crate::validate::Severity;

/// `<pkg>.package.yaml`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PackageFile {
    pub package_name: String,
    #[serde(default)]
    pub default_channel: Option<String>,
    #[serde(default)]
    pub channels: Vec<PackageChannel>,
}

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PackageChannel {
    pub name: String,
    #[serde(rename = "currentCSV")]
    pub current_csv: String,
}

/// Reads and types a package file; errors name the file and field.
pub fn read_package_file(file: &Path) -> Result<PackageFile, LoadError> {
    let text = std::fs::read_to_string(file).map_err(|source| LoadError::Io {
        path: file.to_path_buf(),
        source,
    })?;
    let display = file.display().to_string();
    let doc = windlass_bundle::yaml::parse_one(&display, &text)?
        .documents
        .pop()
        .unwrap_or_default();
    serde_path_to_error::deserialize(&doc).map_err(|e| LoadError::Invalid {
        file: file.to_path_buf(),
        message: format!("{}: {}", e.path(), e.inner()),
    })
}

pub(super) fn read(
    packages: &[(PathBuf, PathBuf)],
    loaded: &mut Loaded,
    options: ReadOptions,
) -> Result<(), LoadError> {
    // Read every package file first, then every version folder of every package in one
    // parallel pass: packages differ wildly in size, so per-package parallelism idles.
    let mut plans = Vec::new();
    let mut work = Vec::new();
    for (dir, file) in packages {
        let package_file = match read_package_file(file) {
            Ok(p) => p,
            Err(e) => {
                loaded.issues.push(LoadIssue::new(
                    Severity::Error,
                    IssueKind::BadPackageFile,
                    None,
                    file.display().to_string(),
                    format!("{e}; package left out"),
                ));
                continue;
            }
        };
        let versions: Vec<PathBuf> = entries(dir)?.into_iter().filter(|p| p.is_dir()).collect();
        let range = work.len()..work.len() + versions.len();
        work.extend(versions);
        plans.push((dir.clone(), file.clone(), package_file, range));
    }
    let mut results = load_parallel(&work, options).into_iter();
    for (dir, file, package_file, range) in plans {
        let name = package_file.package_name.clone();
        let mut package = Package {
            name: name.clone(),
            default_channel: package_file.default_channel.clone(),
            ..Default::default()
        };
        let mut entries_by_name = BTreeMap::new();
        // Bundles left out whose CSV still reads: their edges let a channel whose head was
        // left out be served from what that head replaces.
        let mut left_out = BTreeMap::new();
        for folder in &work[range] {
            match results.next().expect("one result per folder") {
                Ok(bundle) => {
                    let entry = convert::channel_entry(&bundle);
                    let head_description = (
                        bundle.csv.spec.description.clone(),
                        bundle.csv.spec.icon.first().cloned(),
                        crate::provider::Provider::from_csv(&bundle.csv),
                    );
                    if let Some(csv_name) = add_bundle(&mut package, folder, bundle, loaded) {
                        entries_by_name.insert(csv_name, (entry, head_description));
                    }
                }
                Err(e) => {
                    loaded
                        .issues
                        .push(super::unreadable_bundle(Some(&name), folder, &e));
                    if let Some(csv) = csv_alone(folder) {
                        left_out.insert(csv.name().to_string(), convert::csv_entry(&csv));
                    }
                }
            }
        }
        let file_display = file.display().to_string();
        for declared in &package_file.channels {
            let mut channel = Channel {
                name: declared.name.clone(),
                package: name.as_str().into(),
                entries: Vec::new(),
            };
            let head_left_out = left_out.contains_key(&declared.current_csv);
            if head_left_out {
                loaded.issues.push(LoadIssue::new(
                    Severity::Warning,
                    IssueKind::HeadLeftOut,
                    Some(&name),
                    file_display.clone(),
                    format!(
                        "channel {}: its head {} was left out; the channel is served from the bundles it replaces and skips",
                        declared.name, declared.current_csv
                    ),
                ));
            } else if !entries_by_name.contains_key(&declared.current_csv) {
                loaded.issues.push(LoadIssue::new(
                    Severity::Error,
                    IssueKind::MissingCurrentCsv,
                    Some(&name),
                    file_display.clone(),
                    format!(
                        "channel {}: currentCSV {} is not in the package folder",
                        declared.name, declared.current_csv
                    ),
                ));
                continue;
            }
            // Walk replaces from the head; add skipped bundles the folder has. `seen` stops cycles
            // (validation reports them from the edges).
            let mut seen = BTreeSet::new();
            let mut queue = vec![declared.current_csv.clone()];
            while let Some(current) = queue.pop() {
                let (entry, served) = match entries_by_name.get(&current) {
                    Some((entry, _)) => (entry, true),
                    None => match left_out.get(&current) {
                        Some(entry) => (entry, false),
                        None => continue,
                    },
                };
                if !seen.insert(current.clone()) {
                    continue;
                }
                if served {
                    channel.entries.push(entry.clone());
                }
                for skipped in entry.skips.iter().rev() {
                    queue.push(skipped.to_string());
                }
                if let Some(replaced) = &entry.replaces {
                    queue.push(replaced.to_string());
                }
            }
            package.channels.insert(channel.name.clone(), channel);
        }
        // The package description, icon and provider come from the default channel's head, as
        // opm takes the first two.
        let head = package
            .default_channel
            .as_ref()
            .and_then(|c| package_file.channels.iter().find(|pc| &pc.name == c))
            .and_then(|pc| entries_by_name.get(&pc.current_csv));
        if let Some((_, (description, icon, provider))) = head {
            package.provider = (!provider.is_empty()).then(|| provider.clone());
            package.description = description.clone();
            package.icon = icon
                .as_ref()
                .and_then(|i| serde_json::to_value(i).ok())
                .map(|v| crate::model::RawJson::from_value(&v));
        }
        report_unchannelled(&package, &dir, loaded);
        loaded.package_sources.insert(name.clone(), file.clone());
        loaded.catalog.packages.insert(name, package);
    }
    Ok(())
}

/// The CSV of a version folder that did not load as a bundle, if that one file still reads.
fn csv_alone(folder: &Path) -> Option<windlass_bundle::ClusterServiceVersion> {
    entries(folder).ok()?.into_iter().find_map(|file| {
        let name = file.file_name()?.to_string_lossy().into_owned();
        if !(name.ends_with(".yaml") || name.ends_with(".yml") || name.ends_with(".json")) {
            return None;
        }
        let text = std::fs::read_to_string(&file).ok()?;
        let documents = windlass_bundle::yaml::parse_documents(&name, &text).ok()?;
        documents
            .documents
            .iter()
            .filter(|d| d["kind"] == "ClusterServiceVersion")
            .find_map(|d| windlass_bundle::ClusterServiceVersion::from_value(d).ok())
    })
}

/// Bundles no channel lists are kept (nothing is lost) and reported.
pub(super) fn report_unchannelled(package: &Package, dir: &Path, loaded: &mut Loaded) {
    let listed: BTreeSet<&str> = package
        .channels
        .values()
        .flat_map(|c| c.entries.iter().map(|e| e.name.as_str()))
        .collect();
    for name in package
        .bundles
        .keys()
        .filter(|n| !listed.contains(n.as_str()))
    {
        loaded.issues.push(LoadIssue::new(
            Severity::Warning,
            IssueKind::NoChannel,
            Some(&package.name),
            dir.display().to_string(),
            format!("bundle {name} is in no channel: no subscription can reach it"),
        ));
    }
}
