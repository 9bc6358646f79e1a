//! The bundle layout: `<pkg>/<version>/manifests/` with `metadata/annotations.yaml` naming the
//! package and channels. Channel membership comes from each bundle's annotations.

use std::path::{Path, PathBuf};

use super::{
    IssueKind, LoadError, LoadIssue, Loaded, ReadOptions, add_bundle, convert, entries,
    load_parallel,
};
use crate::model::{Channel, Package};
use crate::validate::Severity;

/// What the newest bundle seen so far says about its package: its default channel,
/// description, icon and provider become the package's.
struct NewestFacts {
    version: semver::Version,
    default_channel: Option<String>,
    description: Option<String>,
    icon: Option<crate::model::RawJson>,
    provider: crate::provider::Provider,
}

type Newest = Option<NewestFacts>;

impl NewestFacts {
    fn describe(self, package: &mut Package) {
        package.default_channel = self.default_channel;
        package.description = self.description;
        package.icon = self.icon;
        package.provider = (!self.provider.is_empty()).then_some(self.provider);
    }
}

pub(super) fn read(
    packages: &[PathBuf],
    loaded: &mut Loaded,
    options: ReadOptions,
) -> Result<(), LoadError> {
    let mut work = Vec::new();
    let mut plans = Vec::new();
    for dir in packages {
        let versions: Vec<PathBuf> = entries(dir)?
            .into_iter()
            .filter(|p| p.is_dir() && p.join("manifests").is_dir())
            .collect();
        plans.push((dir.clone(), work.len()..work.len() + versions.len()));
        work.extend(versions);
    }
    let mut results = load_parallel(&work, options).into_iter();
    for (dir, range) in plans {
        let folder_name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut package = Package {
            name: folder_name.clone(),
            ..Default::default()
        };
        let mut newest: Newest = None;
        for folder in &work[range] {
            let bundle = match results.next().expect("one result per folder") {
                Ok(b) => b,
                Err(e) => {
                    loaded
                        .issues
                        .push(super::unreadable_bundle(Some(&folder_name), folder, &e));
                    continue;
                }
            };
            place(&mut package, folder, bundle, &mut newest, loaded);
        }
        if let Some(facts) = newest {
            facts.describe(&mut package);
        }
        if semver_mode(&dir) {
            apply_semver_mode(&mut package);
        }
        super::package_manifest::report_unchannelled(&package, &dir, loaded);
        loaded
            .package_sources
            .insert(package.name.clone(), dir.clone());
        loaded
            .catalog
            .packages
            .insert(package.name.clone(), package);
    }
    Ok(())
}

/// Whether the package's `ci.yaml` asks for `updateGraph: semver-mode`: OperatorHub then
/// builds the upgrade graph from version order instead of each CSV's `replaces`.
fn semver_mode(dir: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(dir.join("ci.yaml")) else {
        return false;
    };
    windlass_bundle::yaml::parse_one("ci.yaml", &text)
        .ok()
        .and_then(|d| d.documents.into_iter().next())
        .is_some_and(|d| d["updateGraph"] == "semver-mode")
}

/// In semver mode each entry replaces the next lower version of its channel; skips and
/// skip ranges stay as the bundles declare them. Entries are listed newest first.
pub(crate) fn apply_semver_mode(package: &mut Package) {
    let versions: std::collections::BTreeMap<String, semver::Version> = package
        .bundles
        .iter()
        .map(|(n, b)| (n.clone(), b.version.clone()))
        .collect();
    for channel in package.channels.values_mut() {
        channel.entries.sort_by(|a, b| {
            versions
                .get(b.name.as_str())
                .cmp(&versions.get(a.name.as_str()))
                .then_with(|| a.name.cmp(&b.name))
        });
        let names: Vec<crate::model::Name> =
            channel.entries.iter().map(|e| e.name.clone()).collect();
        for (i, entry) in channel.entries.iter_mut().enumerate() {
            entry.replaces = names.get(i + 1).cloned();
        }
    }
}

/// Adds one bundle and its channel entries; the newest bundle's default channel and
/// description become the package's.
fn place(
    package: &mut Package,
    folder: &Path,
    bundle: windlass_bundle::Bundle,
    newest: &mut Newest,
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
    let default = bundle
        .annotations
        .default_channel()
        .map(String::from)
        .or_else(|| channels.first().cloned());
    let description = bundle.csv.spec.description.clone();
    let icon = bundle
        .csv
        .spec
        .icon
        .first()
        .and_then(|i| serde_json::to_value(i).ok())
        .map(|v| crate::model::RawJson::from_value(&v));
    let version = bundle.csv.version().ok();
    let provider = crate::provider::Provider::from_csv(&bundle.csv);
    if add_bundle(package, folder, bundle, loaded).is_none() {
        return;
    }
    for channel in channels {
        package
            .channels
            .entry(channel.clone())
            .or_insert_with(|| Channel {
                name: channel.clone(),
                package: package.name.as_str().into(),
                entries: Vec::new(),
            })
            .entries
            .push(entry.clone());
    }
    if let Some(version) = version
        && newest.as_ref().is_none_or(|n| version > n.version)
    {
        *newest = Some(NewestFacts {
            version,
            default_channel: default,
            description,
            icon,
            provider,
        });
    }
}

/// A folder that is itself one bundle: a package of one bundle, named by its annotations.
pub(super) fn read_single(dir: &Path, loaded: &mut Loaded) -> Result<(), LoadError> {
    let bundle = match windlass_bundle::load_bundle(dir) {
        Ok(b) => b,
        Err(e) => {
            loaded.issues.push(super::unreadable_bundle(None, dir, &e));
            return Ok(());
        }
    };
    let name = bundle
        .package()
        .map(String::from)
        .ok_or_else(|| LoadError::Invalid {
            file: dir.join("metadata/annotations.yaml"),
            message: "no package annotation: cannot tell which package this bundle belongs to"
                .into(),
        })?;
    let mut package = Package {
        name: name.clone(),
        ..Default::default()
    };
    let mut newest = None;
    place(&mut package, dir, bundle, &mut newest, loaded);
    if let Some(facts) = newest {
        facts.describe(&mut package);
    }
    loaded
        .package_sources
        .insert(name.clone(), dir.to_path_buf());
    loaded.catalog.packages.insert(name, package);
    Ok(())
}

/// Bundles pulled from images, grouped into packages by their package annotation; each
/// catalog bundle records the image it came from. An image that names no package is reported
/// and left out.
pub fn read_images(images: Vec<(windlass_bundle::Bundle, String)>) -> Result<Loaded, LoadError> {
    let mut loaded = Loaded::default();
    let mut packages: std::collections::BTreeMap<String, (Package, Newest)> =
        std::collections::BTreeMap::new();
    for (bundle, image) in images {
        let Some(name) = bundle.package().map(String::from) else {
            loaded.issues.push(
                LoadIssue::new(
                    Severity::Error,
                    IssueKind::UnreadableBundle,
                    None,
                    image.clone(),
                    "the image has no package annotation or label; bundle left out",
                )
                .bundle(Some(bundle.csv.name())),
            );
            continue;
        };
        let (package, newest) = packages.entry(name.clone()).or_insert_with(|| {
            (
                Package {
                    name: name.clone(),
                    ..Default::default()
                },
                None,
            )
        });
        let csv_name = bundle.csv.name().to_string();
        // A CSV added before keeps its own image; this copy is refused by `place`.
        let added_before = package.bundles.contains_key(&csv_name);
        place(package, Path::new(&image), bundle, newest, &mut loaded);
        if !added_before && let Some(b) = package.bundles.get_mut(&csv_name) {
            b.related_images.insert(
                0,
                crate::model::RelatedImage {
                    name: String::new(),
                    image: image.clone(),
                },
            );
            b.image = Some(image.clone());
        }
        loaded
            .package_sources
            .entry(name)
            .or_insert_with(|| PathBuf::from(&image));
    }
    for (name, (mut package, newest)) in packages {
        if let Some(facts) = newest {
            facts.describe(&mut package);
        }
        loaded.catalog.packages.insert(name, package);
    }
    Ok(loaded)
}
