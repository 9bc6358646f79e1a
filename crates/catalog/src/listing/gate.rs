//! The listing gate: only versions that pass lint are offered.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::lint::{Level, lint_bundle};
use crate::load::{IssueKind, Loaded};
use crate::model::{Catalog, Package};
use crate::validate::{ChannelProblem, Severity, validate_channel};

/// A version the catalog has but does not offer, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldBack {
    pub package: String,
    /// The CSV name (or the folder, when the CSV could not be read).
    pub bundle: String,
    pub version: Option<semver::Version>,
    /// Where it was read: a folder, an image, or a catalog file.
    pub source: String,
    /// The lint errors, each naming its file and field.
    pub findings: Vec<String>,
}

/// What a catalog offers after the gate.
#[derive(Clone, Debug, Default)]
pub struct Listing {
    /// Every package and version that passed.
    pub catalog: Catalog,
    /// Versions held back, in package and bundle order.
    pub held_back: Vec<HeldBack>,
    /// What cost the catalog content without being one version's (a file or blob that could
    /// not be read, a package file), or is wrong with a package as a whole (its default
    /// channel).
    pub problems: Vec<String>,
}

/// [`gate_with`] without a previous read.
pub fn gate(loaded: Loaded) -> Listing {
    gate_with(loaded, None)
}

/// Runs the listing gate over what one read produced. Bundles read from folders or images
/// ([`Loaded::bundles`]) are linted whole, so they must have been read with their manifests;
/// a file-based catalog carries no CSVs, and its bundles are checked for what it does carry
/// (versions, images, constraints, channels).
///
/// `previous` is what was offered before: when a channel ends up with several heads, the
/// heads it did not offer before are held back; without one that was offered before, the
/// channel is not offered at all.
pub fn gate_with(loaded: Loaded, previous: Option<&Catalog>) -> Listing {
    let Loaded {
        mut catalog,
        bundles,
        issues,
        package_sources,
    } = loaded;
    let mut gate = Gate::default();

    for issue in &issues {
        let named = issue.package.as_ref().zip(issue.bundle.as_ref());
        if issue.loses_content() {
            match named {
                // Already out of the catalog; say so with the version it was.
                Some((package, bundle)) => gate.held_back.push(HeldBack {
                    package: package.clone(),
                    bundle: bundle.clone(),
                    version: None,
                    source: issue.file.clone(),
                    findings: vec![format!("error: {}", issue.describe())],
                }),
                None => gate.problems.push(format!("error: {issue}")),
            }
        } else if issue.severity == Severity::Error {
            match (issue.kind, named) {
                (IssueKind::BadConstraint, Some((package, bundle))) => gate.refuse(
                    package,
                    bundle,
                    &issue.file,
                    format!("error: {}", issue.describe()),
                ),
                // Bundle lint reports the constraints of bundles it reads itself.
                (IssueKind::BadConstraint, None) => {}
                _ => gate.problems.push(format!("error: {issue}")),
            }
        }
    }

    // Read order of the bundles that came with their CSV, for "the first one stays".
    let mut order: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for (i, source) in bundles.iter().enumerate() {
        let csv = source.bundle.csv.name();
        order.entry((source.package.as_str(), csv)).or_insert(i);
        let errors: Vec<String> = lint_bundle(&source.bundle)
            .findings
            .iter()
            .filter(|f| f.level == Level::Error)
            .map(ToString::to_string)
            .collect();
        for finding in errors {
            gate.refuse(
                &source.package,
                csv,
                &source.dir.display().to_string(),
                finding,
            );
        }
    }
    let sources: BTreeMap<(&str, &str), String> = bundles
        .iter()
        .map(|s| {
            (
                (s.package.as_str(), s.bundle.csv.name()),
                s.dir.display().to_string(),
            )
        })
        .collect();

    let source_of = |package: &str, bundle: &str| {
        sources
            .get(&(package, bundle))
            .cloned()
            .or_else(|| {
                package_sources
                    .get(package)
                    .map(|p| p.display().to_string())
            })
            .unwrap_or_else(|| package.to_string())
    };
    refuse_csv_names_in_two_packages(&catalog, previous, &order, &source_of, &mut gate);

    for (name, package) in &catalog.packages {
        let source_of = |bundle: &str| source_of(name, bundle);
        // A version offered under two CSV names: the one read first stays.
        let mut by_version: BTreeMap<&semver::Version, Vec<&str>> = BTreeMap::new();
        for bundle in package.bundles.values() {
            by_version
                .entry(&bundle.version)
                .or_default()
                .push(&bundle.name);
        }
        for (version, mut names) in by_version.into_iter().filter(|(_, n)| n.len() > 1) {
            names.sort_by_key(|n| (order.get(&(name.as_str(), *n)).copied(), *n));
            let first = names[0];
            for later in &names[1..] {
                gate.refuse(
                    name,
                    later,
                    &source_of(later),
                    format!(
                        "error[already-added] {}: version {version} of package {name} is already added as {first} from {}; {later} is refused",
                        source_of(later),
                        source_of(first)
                    ),
                );
            }
        }
        for bundle in package.bundles.values() {
            for (i, related) in bundle.related_images.iter().enumerate() {
                if related.image.trim().is_empty() {
                    gate.refuse(
                        name,
                        &bundle.name,
                        &source_of(&bundle.name),
                        format!(
                            "error[related-images] {} (relatedImages[{i}].image): is empty",
                            source_of(&bundle.name)
                        ),
                    );
                }
            }
        }
    }

    for (name, bundles) in &gate.refused {
        if let Some(package) = catalog.packages.get_mut(name) {
            let names: BTreeSet<String> = bundles.keys().cloned().collect();
            for bundle in &names {
                gate.versions.insert(
                    (name.clone(), bundle.clone()),
                    package.bundles.get(bundle).map(|b| b.version.clone()),
                );
            }
            super::without_bundles(package, &names);
        }
    }

    for (name, package) in catalog.packages.iter_mut() {
        let before = previous.and_then(|p| p.packages.get(name));
        let file = package_sources
            .get(name)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| name.clone());
        gate.channels(package, before, &file);
    }
    catalog.packages.retain(|_, p| !p.bundles.is_empty());
    for package in catalog.packages.values() {
        default_channel_problems(package, &mut gate.problems);
    }
    gate.finish(catalog)
}

/// Bundles are located, pulled and installed by CSV name, so one name in two packages would
/// let one package's content install as the other's: only one copy is offered. The package
/// that offered it before keeps it (a new source cannot take a name away); otherwise the one
/// read first, then the first by package name.
fn refuse_csv_names_in_two_packages(
    catalog: &Catalog,
    previous: Option<&Catalog>,
    order: &BTreeMap<(&str, &str), usize>,
    source_of: &dyn Fn(&str, &str) -> String,
    gate: &mut Gate,
) {
    let mut owner: HashMap<&str, &str> = HashMap::new();
    let mut shared: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (name, package) in &catalog.packages {
        for csv in package.bundles.keys() {
            match owner.entry(csv.as_str()) {
                Entry::Vacant(slot) => {
                    slot.insert(name.as_str());
                }
                Entry::Occupied(first) => {
                    shared
                        .entry(csv.as_str())
                        .or_insert_with(|| BTreeSet::from([*first.get()]))
                        .insert(name.as_str());
                }
            }
        }
    }
    for (csv, packages) in shared {
        let offered_before = |package: &str| {
            previous
                .and_then(|p| p.packages.get(package))
                .is_some_and(|p| p.bundles.contains_key(csv))
        };
        let keeper = packages
            .iter()
            .copied()
            .min_by_key(|package| {
                (
                    !offered_before(package),
                    order.get(&(*package, csv)).copied().unwrap_or(usize::MAX),
                    *package,
                )
            })
            .expect("a shared name has two packages");
        for other in packages.iter().copied().filter(|p| *p != keeper) {
            let source = source_of(other, csv);
            gate.refuse(
                other,
                csv,
                &source,
                format!(
                    "error[already-added] {source}: CSV {csv} is already offered by package {keeper} from {}; package {other}'s {csv} is refused (a CSV name must be unique in a catalog)",
                    source_of(keeper, csv)
                ),
            );
        }
    }
}

#[derive(Default)]
struct Gate {
    /// Bundles refused, by package, with their findings and source.
    refused: BTreeMap<String, BTreeMap<String, (String, Vec<String>)>>,
    /// The versions of refused bundles, as the catalog had them.
    versions: BTreeMap<(String, String), Option<semver::Version>>,
    held_back: Vec<HeldBack>,
    problems: Vec<String>,
}

impl Gate {
    fn refuse(&mut self, package: &str, bundle: &str, source: &str, finding: String) {
        let (_, findings) = self
            .refused
            .entry(package.to_string())
            .or_default()
            .entry(bundle.to_string())
            .or_insert_with(|| (source.to_string(), Vec::new()));
        if !findings.contains(&finding) {
            findings.push(finding);
        }
    }

    /// Takes out of each channel the entries that make it invalid, until every channel is
    /// valid; bundles no channel lists any more are held back with what their channels said.
    fn channels(&mut self, package: &mut Package, before: Option<&Package>, source: &str) {
        let channelled: BTreeSet<String> = package
            .channels
            .values()
            .flat_map(|c| c.entries.iter().map(|e| e.name.to_string()))
            .collect();
        let mut why: BTreeMap<String, Vec<String>> = BTreeMap::new();
        // Each pass removes at least one entry or channel, so this ends.
        loop {
            let mut changed = false;
            let names: Vec<String> = package.channels.keys().cloned().collect();
            for channel_name in names {
                let problems: Vec<ChannelProblem> =
                    validate_channel(package, &package.channels[&channel_name])
                        .into_iter()
                        .filter(|p| p.severity() == Severity::Error)
                        .collect();
                let Some(problem) = problems.into_iter().next() else {
                    continue;
                };
                changed = true;
                let message = format!("error[channel] {problem}");
                let channel = package
                    .channels
                    .get_mut(&channel_name)
                    .expect("listed above");
                let entries: Vec<String> = match &problem {
                    ChannelProblem::BadSkipRange { entry, .. } => vec![entry.clone()],
                    ChannelProblem::Cycle { chain, .. } => chain.clone(),
                    ChannelProblem::Stranded { entries, .. } => entries.clone(),
                    ChannelProblem::DuplicateEntry { entry, .. } => {
                        // The first listing stays; the repeat is no bundle's fault.
                        let mut seen = false;
                        channel.entries.retain(|e| {
                            let repeat = e.name == entry.as_str() && seen;
                            seen |= e.name == entry.as_str();
                            !repeat
                        });
                        self.problems
                            .push(format!("{message}; the repeat is ignored"));
                        continue;
                    }
                    ChannelProblem::UnknownBundle { entry, .. } => {
                        super::splice::splice(channel, &BTreeSet::from([entry.clone()]));
                        self.problems
                            .push(format!("{message}; the entry is ignored"));
                        continue;
                    }
                    ChannelProblem::SeveralHeads { heads, .. } => {
                        let offered: BTreeSet<&str> = before
                            .and_then(|p| p.channels.get(&channel_name))
                            .map(|c| c.entries.iter().map(|e| e.name.as_str()).collect())
                            .unwrap_or_default();
                        let new: Vec<String> = heads
                            .iter()
                            .filter(|h| !offered.contains(h.as_str()))
                            .cloned()
                            .collect();
                        if !new.is_empty() && new.len() < heads.len() {
                            new
                        } else {
                            channel.entries.iter().map(|e| e.name.to_string()).collect()
                        }
                    }
                    ChannelProblem::NoHead { .. } => {
                        channel.entries.iter().map(|e| e.name.to_string()).collect()
                    }
                    // Warnings only; filtered out above.
                    ChannelProblem::DanglingReplaces { .. }
                    | ChannelProblem::DanglingSkip { .. } => Vec::new(),
                };
                for entry in &entries {
                    let reasons = why.entry(entry.clone()).or_default();
                    if !reasons.contains(&message) {
                        reasons.push(message.clone());
                    }
                }
                super::splice::splice(channel, &entries.into_iter().collect());
            }
            package.channels.retain(|_, c| !c.entries.is_empty());
            if !changed {
                break;
            }
        }
        let still: BTreeSet<String> = package
            .channels
            .values()
            .flat_map(|c| c.entries.iter().map(|e| e.name.to_string()))
            .collect();
        let lost: BTreeSet<String> = channelled
            .difference(&still)
            .filter(|name| package.bundles.contains_key(*name))
            .cloned()
            .collect();
        for bundle in &lost {
            let findings = why.remove(bundle).unwrap_or_else(|| {
                vec![format!(
                    "error[channel] package {}: {bundle} is in no valid channel",
                    package.name
                )]
            });
            self.versions.insert(
                (package.name.clone(), bundle.clone()),
                package.bundles.get(bundle).map(|b| b.version.clone()),
            );
            for finding in findings {
                self.refuse(&package.name, bundle, source, finding);
            }
        }
        package.bundles.retain(|name, _| !lost.contains(name));
    }

    fn finish(mut self, catalog: Catalog) -> Listing {
        for (package, bundles) in std::mem::take(&mut self.refused) {
            for (bundle, (source, findings)) in bundles {
                let version = self
                    .versions
                    .get(&(package.clone(), bundle.clone()))
                    .cloned()
                    .flatten();
                self.held_back.push(HeldBack {
                    package: package.clone(),
                    bundle,
                    version,
                    source,
                    findings,
                });
            }
        }
        self.held_back.sort_by(|a, b| {
            (&a.package, &a.bundle, &a.source).cmp(&(&b.package, &b.bundle, &b.source))
        });
        Listing {
            catalog,
            held_back: self.held_back,
            problems: self.problems,
        }
    }
}

/// A default channel that does not exist, or none among several channels: new Subscriptions
/// must then name a channel.
fn default_channel_problems(package: &Package, problems: &mut Vec<String>) {
    let name = &package.name;
    let channels = || {
        package
            .channels
            .keys()
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    };
    match &package.default_channel {
        Some(default) if !package.channels.contains_key(default) => problems.push(format!(
            "error[default-channel] package {name}: default channel {default} is not offered ({}); Subscriptions must name a channel",
            channels()
        )),
        None if package.channels.len() > 1 => problems.push(format!(
            "error[default-channel] package {name}: several channels ({}) and no default channel; Subscriptions must name a channel",
            channels()
        )),
        _ => {}
    }
}
