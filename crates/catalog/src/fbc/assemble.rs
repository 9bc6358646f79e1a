//! Blobs into packages. Each blob is checked on its own: one that lacks what its schema needs
//! is reported with where it was and left out, and everything else is kept.

use std::collections::{BTreeMap, HashMap};

use super::decode::{Fields, Schema};
use crate::load::{IssueKind, LoadIssue};
use crate::model::{Bundle, Catalog, Channel, Package, Property};
use crate::name::{FastHasher, Interner, Name};
use crate::validate::Severity;

/// Where a blob was read: the file (an index into the assembler's file list), the 1-based
/// document number and the line it starts on (0 when not worked out: lines are counted only
/// for messages).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Place {
    pub file: u32,
    pub document: u32,
    pub line: u32,
}

#[derive(Default)]
struct Parts {
    package: Package,
    /// In reading order, with where each came from; sorted into the package at the end.
    bundles: Vec<(Bundle, Place)>,
    channels: Vec<Channel>,
}

/// Collects decoded blobs into a catalog.
#[derive(Default)]
pub(crate) struct Assembler {
    pub interner: Interner,
    files: Vec<String>,
    index: HashMap<Name, usize, FastHasher>,
    parts: Vec<Parts>,
    pub issues: Vec<LoadIssue>,
}

impl Assembler {
    /// Registers a file; blobs read from it carry the returned index.
    pub fn file(&mut self, display: String) -> u32 {
        self.files.push(display);
        (self.files.len() - 1) as u32
    }

    /// `file:line` as a person opens it.
    pub fn at(&self, place: Place) -> String {
        at(&self.files, place)
    }

    fn parts(&mut self, package: &Name) -> &mut Parts {
        let next = self.parts.len();
        let i = *self.index.entry(package.clone()).or_insert(next);
        if i == next {
            self.parts.push(Parts {
                package: Package {
                    name: package.to_string(),
                    ..Default::default()
                },
                ..Default::default()
            });
        }
        &mut self.parts[i]
    }

    /// A problem with one blob.
    pub fn problem(
        &mut self,
        place: Place,
        kind: IssueKind,
        package: Option<&str>,
        bundle: Option<&str>,
        message: impl Into<String>,
    ) {
        let severity = if kind == IssueKind::UnknownSchema {
            Severity::Warning
        } else {
            Severity::Error
        };
        let issue = LoadIssue::new(severity, kind, package, self.at(place), message)
            .bundle(bundle)
            .document(Some(place.document as usize));
        self.issues.push(issue);
    }

    /// Adds one decoded blob; `line` finds the line it starts on, for a message.
    pub fn add(&mut self, fields: Fields, place: Place, line: impl FnOnce() -> u32) {
        let at = |line: u32| Place { line, ..place };
        let Some(schema) = fields.schema.clone() else {
            let (package, name) = (fields.package.as_deref(), fields.name.as_deref());
            return self.problem(
                at(line()),
                IssueKind::BadBlob,
                package,
                None,
                format!(
                    "a blob{} has no `schema`; left out",
                    name.map(|n| format!(" named {n}")).unwrap_or_default()
                ),
            );
        };
        let what = match &schema {
            Schema::Package => "olm.package",
            Schema::Channel => "olm.channel",
            Schema::Bundle => "olm.bundle",
            Schema::Deprecations => "olm.deprecations",
            Schema::Other(other) => {
                let message = format!("blob of schema {other} ignored");
                let package = fields.package.clone();
                return self.problem(
                    at(line()),
                    IssueKind::UnknownSchema,
                    package.as_deref(),
                    None,
                    message,
                );
            }
        };
        let missing = |field: &str| format!("{what} blob has no `{field}`; left out");
        match schema {
            Schema::Package => {
                let Some(name) = fields.name else {
                    return self.problem(
                        at(line()),
                        IssueKind::BadBlob,
                        None,
                        None,
                        missing("name"),
                    );
                };
                let name = self.interner.intern(&name);
                let package = &mut self.parts(&name).package;
                package.default_channel = fields.default_channel;
                package.description = fields.description;
                package.icon = fields.icon;
                package.provider = crate::provider::Provider::from_properties(&fields.properties);
            }
            Schema::Channel => {
                let (Some(name), Some(package)) = (fields.name, fields.package.clone()) else {
                    let package = fields.package.map(String::from);
                    return self.problem(
                        at(line()),
                        IssueKind::BadBlob,
                        package.as_deref(),
                        None,
                        missing(if package.is_none() { "package" } else { "name" }),
                    );
                };
                let channel = Channel {
                    name,
                    package: package.clone(),
                    entries: fields.channel_entries,
                };
                self.parts(&package).channels.push(channel);
            }
            Schema::Bundle => {
                let (Some(name), Some(package)) = (fields.name, fields.package.clone()) else {
                    let package = fields.package.map(String::from);
                    return self.problem(
                        at(line()),
                        IssueKind::BadBlob,
                        package.as_deref(),
                        None,
                        missing(if package.is_none() { "package" } else { "name" }),
                    );
                };
                let version = fields.properties.iter().find_map(|p| match p {
                    Property::Package { version, .. } => Some(version),
                    _ => None,
                });
                let version =
                    match version.map(|v| semver::Version::parse(v.trim_start_matches('v'))) {
                        Some(Ok(v)) => v,
                        other => {
                            let why = match other {
                                Some(Err(e)) => format!("olm.package version is not semver: {e}"),
                                _ => "no olm.package property".to_string(),
                            };
                            return self.problem(
                                at(line()),
                                IssueKind::BadVersion,
                                Some(&package),
                                Some(&name),
                                format!("{why}; bundle left out"),
                            );
                        }
                    };
                // A bundle whose constraint cannot be read stays listed, but resolution never
                // chooses it; say so, naming the file (the bundle and field locate it inside,
                // and findings group by file).
                for (i, property) in fields.properties.iter().enumerate() {
                    let Property::Other { type_, value } = property else {
                        continue;
                    };
                    if type_ != crate::constraint::CONSTRAINT_TYPE {
                        continue;
                    }
                    if let Err(e) = crate::constraint::Constraint::parse(&value.to_value()) {
                        let field = match e.field.as_str() {
                            "" => format!("properties[{i}].value"),
                            inner => format!("properties[{i}].value.{inner}"),
                        };
                        self.problem(
                            at(0),
                            IssueKind::BadConstraint,
                            Some(&package),
                            Some(&name),
                            format!(
                                "olm.bundle {name}: {field}: {}; resolution never chooses this bundle",
                                e.problem
                            ),
                        );
                    }
                }
                let bundle = Bundle {
                    name,
                    package: package.clone(),
                    version,
                    image: fields.image.filter(|i| !i.is_empty()),
                    properties: fields.properties,
                    related_images: fields.related_images,
                };
                self.parts(&package).bundles.push((bundle, place));
            }
            Schema::Deprecations => {
                let Some(package) = fields.package else {
                    return self.problem(
                        at(line()),
                        IssueKind::BadBlob,
                        None,
                        None,
                        missing("package"),
                    );
                };
                self.parts(&package)
                    .package
                    .deprecations
                    .extend(fields.deprecations);
            }
            Schema::Other(_) => unreachable!("handled above"),
        }
    }

    /// The catalog, and every problem found while reading it.
    pub fn finish(self) -> (Catalog, Vec<LoadIssue>) {
        let parallel = self.parts.len() >= PARALLEL_PACKAGES
            && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
        self.finish_on(parallel)
    }

    /// [`Assembler::finish`], on two threads or one.
    pub(super) fn finish_on(mut self, two_threads: bool) -> (Catalog, Vec<LoadIssue>) {
        let parts = std::mem::take(&mut self.parts);
        let files = &self.files;
        let finished: Vec<(Package, Vec<LoadIssue>)> = if two_threads {
            // Each package's problems go back in reading order.
            crate::work::in_turns(parts, 1, || {}, |_, parts| finish_package(parts, files))
        } else {
            parts
                .into_iter()
                .map(|parts| finish_package(parts, files))
                .collect()
        };
        let mut packages = Vec::with_capacity(finished.len());
        for (package, issues) in finished {
            self.issues.extend(issues);
            packages.push((package.name.clone(), package));
        }
        let catalog = Catalog {
            packages: BTreeMap::from_iter(packages),
        };
        (catalog, self.issues)
    }
}

/// From this many packages on, [`Assembler::finish`] uses a second thread.
const PARALLEL_PACKAGES: usize = 256;

/// One package: its bundles by name (a second bundle of one name is refused), its channels,
/// its provider.
fn finish_package(parts: Parts, files: &[String]) -> (Package, Vec<LoadIssue>) {
    let mut issues = Vec::new();
    let mut package = parts.package;
    let mut bundles = parts.bundles;
    // Stable: of two bundles with one name, the one read first stays first.
    bundles.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    let mut kept: Vec<(String, Bundle)> = Vec::with_capacity(bundles.len());
    let mut first_place: Option<Place> = None;
    for (bundle, place) in bundles {
        if let Some((name, _)) = kept.last()
            && *name == bundle.name
        {
            let first = first_place.unwrap_or(place);
            let message = format!(
                "is already added at {} (document {}); this copy is refused",
                at(files, first),
                first.document
            );
            issues.push(
                LoadIssue::new(
                    Severity::Error,
                    IssueKind::DuplicateBundle,
                    Some(&package.name),
                    at(files, place),
                    message,
                )
                .bundle(Some(&bundle.name))
                .document(Some(place.document as usize)),
            );
            continue;
        }
        first_place = Some(place);
        kept.push((bundle.name.clone(), bundle));
    }
    package.bundles = BTreeMap::from_iter(kept);
    package.channels = parts
        .channels
        .into_iter()
        .map(|c| (c.name.clone(), c))
        .collect();
    if package.provider.is_none() {
        package.provider = head_bundle(&package).and_then(crate::provider::Provider::from_bundle);
    }
    (package, issues)
}

/// `file:line` as a person opens it.
fn at(files: &[String], place: Place) -> String {
    let file = &files[place.file as usize];
    match place.line {
        0 => file.clone(),
        line => format!("{file}:{line}"),
    }
}

/// The bundle a package is described by: its default channel's head, else its newest bundle.
fn head_bundle(package: &Package) -> Option<&Bundle> {
    let head =
        package.default_channel().and_then(|channel| {
            match crate::validate::channel_heads(channel).as_slice() {
                [one] => package.bundles.get(*one),
                _ => None,
            }
        });
    head.or_else(|| {
        package
            .bundles
            .values()
            .max_by(|a, b| a.version.cmp(&b.version))
    })
}
