//! The bundle layout: `<pkg>/<version>/manifests/` with `metadata/annotations.yaml` naming the
//! package and channels. Channel membership comes from each bundle's annotations.

use std::path::{Path, PathBuf};

use super::{IssueKind, LoadError, LoadIssue, Loaded, add_bundle, convert, entries, load_parallel};
use crate::model::{Channel, Package};
use crate::validate::Severity;

pub(super) fn read(packages: &[PathBuf], loaded: &mut Loaded) -> Result<(), LoadError> {
    let mut work = Vec::new();
    let mut plans = Vec::new();
    for dir in packages {
        let versions: Vec<PathBuf> = entries(dir)?.into_iter().filter(|p| p.is_dir() && p.join("manifests").is_dir()).collect();
        plans.push((dir.clone(), work.len()..work.len() + versions.len()));
        work.extend(versions);
    }
    let mut results = load_parallel(&work).into_iter();
    for (dir, range) in plans {
        let folder_name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let mut package = Package { name: folder_name.clone(), ..Default::default() };
        let mut newest: Option<(semver::Version, Option<String>, Option<String>, Option<serde_json::Value>)> = None;
        for folder in &work[range] {
            let bundle = match results.next().expect("one result per folder") {
                Ok(b) => b,
                Err(e) => {
                    loaded.issues.push(LoadIssue::new(Severity::Error, IssueKind::UnreadableBundle, Some(&folder_name), folder.display().to_string(), e.to_string()));
                    continue;
                }
            };
            place(&mut package, folder, bundle, &mut newest, loaded);
        }
        if let Some((_, default, description, icon)) = newest {
            package.default_channel = default;
            package.description = description;
            package.icon = icon;
        }
        super::package_manifest::report_unchannelled(&package, &dir, loaded);
        loaded.package_sources.insert(package.name.clone(), dir.clone());
        loaded.catalog.packages.insert(package.name.clone(), package);
    }
    Ok(())
}

/// Adds one bundle and its channel entries; the newest bundle's default channel and
/// description become the package's.
#[allow(clippy::type_complexity)]
fn place(
    package: &mut Package,
    folder: &Path,
    bundle: windlass_bundle::Bundle,
    newest: &mut Option<(semver::Version, Option<String>, Option<String>, Option<serde_json::Value>)>,
    loaded: &mut Loaded,
) {
    if let Some(declared) = bundle.package()
        && declared != package.name
    {
        loaded.issues.push(LoadIssue::new(
            Severity::Warning,
            IssueKind::PackageMismatch,
            Some(&package.name),
            folder.join("metadata/annotations.yaml").display().to_string(),
            format!("annotation names package {declared} but the bundle sits in folder {}; the folder wins", package.name),
        ));
    }
    let entry = convert::channel_entry(&bundle);
    let channels = bundle.annotations.channels();
    let default = bundle.annotations.default_channel().map(String::from).or_else(|| channels.first().cloned());
    let description = bundle.csv.spec.description.clone();
    let icon = bundle.csv.spec.icon.first().and_then(|i| serde_json::to_value(i).ok());
    let version = bundle.csv.version().ok();
    if add_bundle(package, folder, bundle, loaded).is_none() {
        return;
    }
    for channel in channels {
        package
            .channels
            .entry(channel.clone())
            .or_insert_with(|| Channel { name: channel.clone(), package: package.name.clone(), entries: Vec::new() })
            .entries
            .push(entry.clone());
    }
    if let Some(version) = version
        && newest.as_ref().is_none_or(|(v, ..)| &version > v)
    {
        *newest = Some((version, default, description, icon));
    }
}

/// A folder that is itself one bundle: a package of one bundle, named by its annotations.
pub(super) fn read_single(dir: &Path, loaded: &mut Loaded) -> Result<(), LoadError> {
    let bundle = match windlass_bundle::load_bundle(dir) {
        Ok(b) => b,
        Err(e) => {
            loaded.issues.push(LoadIssue::new(Severity::Error, IssueKind::UnreadableBundle, None, dir.display().to_string(), e.to_string()));
            return Ok(());
        }
    };
    let name = bundle.package().map(String::from).ok_or_else(|| LoadError::Invalid {
        file: dir.join("metadata/annotations.yaml"),
        message: "no package annotation: cannot tell which package this bundle belongs to".into(),
    })?;
    let mut package = Package { name: name.clone(), ..Default::default() };
    let mut newest = None;
    place(&mut package, dir, bundle, &mut newest, loaded);
    if let Some((_, default, description, icon)) = newest {
        package.default_channel = default;
        package.description = description;
        package.icon = icon;
    }
    loaded.package_sources.insert(name.clone(), dir.to_path_buf());
    loaded.catalog.packages.insert(name, package);
    Ok(())
}
