//! Delisting: a package, or some of its versions, taken off a catalog by its admin.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{Catalog, Package};

/// One delisted package: all of it (no versions), or the versions listed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DelistEntry {
    /// Empty: the whole package.
    pub versions: BTreeSet<semver::Version>,
    /// Why, for the people whose installs it stops (may be empty).
    pub reason: String,
}

impl DelistEntry {
    pub fn whole_package(&self) -> bool {
        self.versions.is_empty()
    }

    /// Whether `version` is delisted by this entry.
    pub fn covers(&self, version: &semver::Version) -> bool {
        self.whole_package() || self.versions.contains(version)
    }
}

/// Something wrong with what a catalog's delisting says, for its status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DelistingProblem {
    /// `spec.delisted[package=acme-db].versions[1]`.
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for DelistingProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// What a catalog's admin delisted, by package.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Delisting {
    pub packages: BTreeMap<String, DelistEntry>,
}

/// A package or version a catalog delists, for messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delisted<'a> {
    pub package: &'a str,
    /// `None`: the whole package.
    pub version: Option<&'a semver::Version>,
    pub reason: &'a str,
}

impl Delisted<'_> {
    /// "version 1.0.1 of package acme-db is delisted by catalog vendor (CVE-1)".
    pub fn by(&self, catalog: &str) -> String {
        let what = match self.version {
            None => format!("package {} is delisted", self.package),
            Some(version) => format!("version {version} of package {} is delisted", self.package),
        };
        match self.reason.trim() {
            "" => format!("{what} by catalog {catalog}"),
            reason => format!("{what} by catalog {catalog} ({reason})"),
        }
    }
}

impl std::fmt::Display for Delisted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.version {
            None => write!(f, "package {} is delisted", self.package)?,
            Some(version) => write!(
                f,
                "version {version} of package {} is delisted",
                self.package
            )?,
        }
        if !self.reason.trim().is_empty() {
            write!(f, " ({})", self.reason.trim())?;
        }
        Ok(())
    }
}

/// A version as an admin writes it: `1.0.1` or `v1.0.1`.
pub fn parse_version(text: &str) -> Result<semver::Version, semver::Error> {
    semver::Version::parse(text.trim().trim_start_matches('v'))
}

impl Delisting {
    /// From `(package, versions, reason)` entries as a Catalog's spec lists them. Versions
    /// that are not semver are left out and reported, so the rest of the entry still holds.
    pub fn from_entries<'a>(
        entries: impl IntoIterator<Item = (&'a str, &'a [String], &'a str)>,
    ) -> (Delisting, Vec<DelistingProblem>) {
        let mut delisting = Delisting::default();
        let mut problems = Vec::new();
        for (package, versions, reason) in entries {
            let mut parsed = BTreeSet::new();
            for (i, text) in versions.iter().enumerate() {
                match parse_version(text) {
                    Ok(version) => {
                        parsed.insert(version);
                    }
                    Err(error) => problems.push(DelistingProblem {
                        field: format!("spec.delisted[package={package}].versions[{i}]"),
                        message: format!("{text:?} is not a semantic version ({error}); ignored"),
                    }),
                }
            }
            // Every version unreadable: nothing is delisted rather than the whole package.
            if !versions.is_empty() && parsed.is_empty() {
                continue;
            }
            delisting.packages.insert(
                package.to_string(),
                DelistEntry {
                    versions: parsed,
                    reason: reason.to_string(),
                },
            );
        }
        (delisting, problems)
    }

    pub fn is_empty(&self) -> bool {
        self.packages.is_empty()
    }

    pub fn entry(&self, package: &str) -> Option<&DelistEntry> {
        self.packages.get(package)
    }

    /// Whether the whole package is delisted, and why.
    pub fn whole(&self, package: &str) -> Option<Delisted<'_>> {
        let (name, entry) = self.packages.get_key_value(package)?;
        entry.whole_package().then_some(Delisted {
            package: name,
            version: None,
            reason: &entry.reason,
        })
    }

    /// Whether `version` of `package` is delisted (alone or with its whole package), and why.
    pub fn covering(&self, package: &str, version: &semver::Version) -> Option<Delisted<'_>> {
        let (name, entry) = self.packages.get_key_value(package)?;
        if !entry.covers(version) {
            return None;
        }
        Some(Delisted {
            package: name,
            version: (!entry.whole_package())
                .then(|| entry.versions.get(version))
                .flatten(),
            reason: &entry.reason,
        })
    }

    /// The package as new installs may choose from it: `None` when it is delisted whole,
    /// otherwise without its delisted versions (channels spliced around them).
    pub fn listed(&self, package: &Package) -> Option<Package> {
        let Some(entry) = self.packages.get(&package.name) else {
            return Some(package.clone());
        };
        if entry.whole_package() {
            return None;
        }
        let names: BTreeSet<String> = package
            .bundles
            .values()
            .filter(|b| entry.versions.contains(&b.version))
            .map(|b| b.name.clone())
            .collect();
        let mut listed = package.clone();
        super::without_bundles(&mut listed, &names);
        Some(listed)
    }

    /// Entries that name a package or version the catalog does not offer (maybe yet, maybe
    /// mistyped): they delist nothing.
    pub fn unmatched(&self, catalog: &Catalog) -> Vec<DelistingProblem> {
        let mut problems = Vec::new();
        for (name, entry) in &self.packages {
            let field = format!("spec.delisted[package={name}]");
            let Some(package) = catalog.packages.get(name) else {
                problems.push(DelistingProblem {
                    field,
                    message: format!("the catalog offers no package {name}"),
                });
                continue;
            };
            let offered: BTreeSet<&semver::Version> =
                package.bundles.values().map(|b| &b.version).collect();
            let missing: Vec<String> = entry
                .versions
                .iter()
                .filter(|v| !offered.contains(v))
                .map(ToString::to_string)
                .collect();
            if !missing.is_empty() {
                problems.push(DelistingProblem {
                    field: format!("{field}.versions"),
                    message: format!("package {name} has no version {}", missing.join(", ")),
                });
            }
        }
        problems
    }
}
