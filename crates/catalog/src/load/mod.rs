//! Reading catalogs: a directory of packages (package-manifest or bundle layout), one package,
//! one bundle, or a file-based catalog (directory or single file).
//!
//! Reading never stops at the first bad bundle: [`read_catalog`] returns everything it could
//! read plus a list of [`LoadIssue`]s, so lint and render can show every problem at once.
//! [`load_catalog`] is the strict form for callers that need a complete catalog or an error.

mod bundle_layout;

pub use bundle_layout::read_images;
pub mod convert;
mod package_manifest;

pub use package_manifest::{PackageChannel, PackageFile, read_package_file};

use std::path::{Path, PathBuf};

use windlass_bundle::{Bundle as LoadedBundle, BundleError, LoadNote};

use crate::model::Catalog;
use crate::validate::Severity;

/// Why a catalog could not be read at all (or, from [`load_catalog`], completely).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not a catalog (no package file, no bundle folders and no file-based-catalog blobs)", path.display())]
    NotACatalog { path: PathBuf },
    #[error("{}: {message}", file.display())]
    Invalid { file: PathBuf, message: String },
    #[error(transparent)]
    Yaml(#[from] windlass_bundle::yaml::YamlError),
    #[error("package {package} is defined by both {} and {}", first.display(), second.display())]
    PackageTwice {
        package: String,
        first: PathBuf,
        second: PathBuf,
    },
    /// The strict loader refuses a catalog whose reading left a problem behind.
    #[error("{issue}")]
    Incomplete { issue: LoadIssue },
}

/// Something found while reading; the catalog was read around it.
///
/// Problems that cost the catalog content ([`LoadIssue::loses_content`]) name what was left
/// out: the package and bundle when known, the file, and the document inside it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LoadIssue {
    pub severity: Severity,
    pub kind: IssueKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// The bundle (CSV name, or its folder when the CSV could not be read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bundle: Option<String>,
    /// The file or folder concerned (with a `:line` when known).
    pub file: String,
    /// The 1-based position of the document in `file`, when one document is concerned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document: Option<usize>,
    pub message: String,
}

impl std::fmt::Display for LoadIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.file)?;
        if let Some(document) = self.document {
            write!(f, " (document {document})")?;
        }
        write!(f, ": {}{}", self.subject(), self.message)
    }
}

impl LoadIssue {
    /// `package p, bundle b: ` as far as they are known.
    fn subject(&self) -> String {
        match (&self.package, &self.bundle) {
            (Some(p), Some(b)) => format!("package {p}, bundle {b}: "),
            (Some(p), None) => format!("package {p}: "),
            (None, Some(b)) => format!("bundle {b}: "),
            (None, None) => String::new(),
        }
    }

    /// Everything but the file: document, package, bundle and what is wrong.
    pub fn describe(&self) -> String {
        let document = self
            .document
            .map(|d| format!("document {d}: "))
            .unwrap_or_default();
        format!("{document}{}{}", self.subject(), self.message)
    }
}

impl std::error::Error for LoadIssue {}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum IssueKind {
    /// A bundle could not be read; it is missing from the catalog.
    UnreadableBundle,
    /// `spec.version` is missing or not semver; the bundle is missing from the catalog.
    BadVersion,
    /// Two bundles in one package carry the same CSV name; the second is missing.
    DuplicateBundle,
    /// A package-manifest channel's `currentCSV` is not in the package folder.
    MissingCurrentCsv,
    /// A bundle that no channel lists.
    NoChannel,
    /// The bundle's package annotation differs from the folder it sits in.
    PackageMismatch,
    /// A YAML mapping repeated a key; the last value was kept.
    DuplicateKey,
    /// A file that is not YAML or JSON was ignored.
    IgnoredFile,
    /// A file-based-catalog blob of a schema windlass does not know was ignored.
    UnknownSchema,
    /// The package file itself is unusable.
    BadPackageFile,
    /// A file-based-catalog blob that could not be decoded; it is missing from the catalog.
    BadBlob,
    /// A catalog file (or the rest of it, after a syntax error) could not be read.
    UnreadableFile,
    /// A channel's head bundle was left out; the channel is served from what it replaces.
    HeadLeftOut,
    /// An `olm.constraint` cannot be read or compiled; the bundle stays in the catalog, but
    /// resolution never chooses it.
    BadConstraint,
}

impl LoadIssue {
    pub(crate) fn new(
        severity: Severity,
        kind: IssueKind,
        package: Option<&str>,
        file: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        LoadIssue {
            severity,
            kind,
            package: package.map(String::from),
            bundle: None,
            file: file.into(),
            document: None,
            message: message.into(),
        }
    }

    pub(crate) fn bundle(mut self, bundle: Option<&str>) -> Self {
        self.bundle = bundle.map(String::from);
        self
    }

    pub(crate) fn document(mut self, document: Option<usize>) -> Self {
        self.document = document;
        self
    }

    /// Whether the catalog lost content because of this issue.
    pub fn loses_content(&self) -> bool {
        matches!(
            self.kind,
            IssueKind::UnreadableBundle
                | IssueKind::BadVersion
                | IssueKind::DuplicateBundle
                | IssueKind::BadPackageFile
                | IssueKind::BadBlob
                | IssueKind::UnreadableFile
        )
    }
}

/// A bundle read from a folder, kept with its CSV so lint can look inside.
#[derive(Clone, Debug)]
pub struct SourceBundle {
    pub package: String,
    pub dir: PathBuf,
    pub bundle: LoadedBundle,
}

/// What a read keeps besides the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadOptions {
    /// Keep every bundle's manifests in [`Loaded::bundles`] (lint needs them; rendering and
    /// resolution do not, and CRD schemas are most of a catalog's memory).
    pub keep_manifests: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            keep_manifests: true,
        }
    }
}

/// Everything one read produced.
#[derive(Clone, Debug, Default)]
pub struct Loaded {
    pub catalog: Catalog,
    /// Bundles read from folders (empty for file-based catalogs, which carry no CSVs).
    pub bundles: Vec<SourceBundle>,
    pub issues: Vec<LoadIssue>,
    /// The package files / folders each package came from, for messages and the corpus check.
    pub package_sources: std::collections::BTreeMap<String, PathBuf>,
}

const LEAN: ReadOptions = ReadOptions {
    keep_manifests: false,
};

/// The strict reader: the catalog, or the first problem that made it incomplete.
pub fn load_catalog(path: &Path) -> Result<Catalog, LoadError> {
    strict(read_catalog_with(path, LEAN)?)
}

/// [`load_catalog`] over several roots merged; a package defined twice is an error.
pub fn load_catalogs(paths: &[PathBuf]) -> Result<Catalog, LoadError> {
    strict(read_catalogs_with(paths, LEAN)?)
}

fn strict(loaded: Loaded) -> Result<Catalog, LoadError> {
    match loaded.issues.into_iter().find(LoadIssue::loses_content) {
        Some(issue) => Err(LoadError::Incomplete { issue }),
        None => Ok(loaded.catalog),
    }
}

/// Reads several roots into one catalog.
pub fn read_catalogs(paths: &[PathBuf]) -> Result<Loaded, LoadError> {
    read_catalogs_with(paths, ReadOptions::default())
}

/// [`read_catalogs`] with explicit options.
pub fn read_catalogs_with(paths: &[PathBuf], options: ReadOptions) -> Result<Loaded, LoadError> {
    let mut merged = Loaded::default();
    for path in paths {
        let loaded = read_catalog_with(path, options)?;
        for (name, package) in loaded.catalog.packages {
            let source = loaded
                .package_sources
                .get(&name)
                .cloned()
                .unwrap_or_else(|| path.clone());
            if let Some(first) = merged.package_sources.get(&name) {
                return Err(LoadError::PackageTwice {
                    package: name,
                    first: first.clone(),
                    second: source,
                });
            }
            merged.package_sources.insert(name.clone(), source);
            merged.catalog.packages.insert(name, package);
        }
        merged.bundles.extend(loaded.bundles);
        merged.issues.extend(loaded.issues);
    }
    Ok(merged)
}

/// What a directory holds.
enum Shape {
    PackageManifest(PathBuf),
    SingleBundle,
    BundlePackage,
    Packages(Vec<PathBuf>),
    FileBased,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> LoadError + '_ {
    move |source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Sorted, non-hidden entries of a directory.
pub(crate) fn entries(dir: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        if !entry.file_name().to_string_lossy().starts_with('.') {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

fn package_file(dir: &Path) -> Result<Option<PathBuf>, LoadError> {
    Ok(entries(dir)?.into_iter().find(|p| {
        p.is_file()
            && p.file_name().is_some_and(|n| {
                let n = n.to_string_lossy();
                n.ends_with(".package.yaml") || n.ends_with(".package.yml")
            })
    }))
}

fn is_bundle_dir(dir: &Path) -> bool {
    dir.join("manifests").is_dir()
}

fn is_bundle_package(dir: &Path) -> Result<bool, LoadError> {
    Ok(entries(dir)?.iter().any(|p| p.is_dir() && is_bundle_dir(p)))
}

fn shape(dir: &Path) -> Result<Shape, LoadError> {
    if let Some(file) = package_file(dir)? {
        return Ok(Shape::PackageManifest(file));
    }
    if is_bundle_dir(dir) {
        return Ok(Shape::SingleBundle);
    }
    if is_bundle_package(dir)? {
        return Ok(Shape::BundlePackage);
    }
    let mut packages = Vec::new();
    for child in entries(dir)? {
        if child.is_dir() && (package_file(&child)?.is_some() || is_bundle_package(&child)?) {
            packages.push(child);
        }
    }
    Ok(if packages.is_empty() {
        Shape::FileBased
    } else {
        Shape::Packages(packages)
    })
}

/// Reads one root, collecting issues instead of stopping at them.
pub fn read_catalog(path: &Path) -> Result<Loaded, LoadError> {
    read_catalog_with(path, ReadOptions::default())
}

/// [`read_catalog`] with explicit options.
pub fn read_catalog_with(path: &Path, options: ReadOptions) -> Result<Loaded, LoadError> {
    let meta = std::fs::metadata(path).map_err(io(path))?;
    if meta.is_file() {
        return crate::fbc::read(path);
    }
    let mut loaded = Loaded::default();
    match shape(path)? {
        Shape::PackageManifest(file) => {
            package_manifest::read(&[(path.to_path_buf(), file)], &mut loaded, options)?
        }
        Shape::SingleBundle => bundle_layout::read_single(path, &mut loaded)?,
        Shape::BundlePackage => bundle_layout::read(&[path.to_path_buf()], &mut loaded, options)?,
        Shape::Packages(dirs) => {
            let mut manifests = Vec::new();
            let mut bundles = Vec::new();
            for dir in dirs {
                match package_file(&dir)? {
                    Some(file) => manifests.push((dir, file)),
                    None => bundles.push(dir),
                }
            }
            package_manifest::read(&manifests, &mut loaded, options)?;
            bundle_layout::read(&bundles, &mut loaded, options)?;
        }
        Shape::FileBased => {
            let fbc = crate::fbc::read(path)?;
            // Files that held only problems are a catalog with problems, not no catalog.
            if fbc.catalog.packages.is_empty() && fbc.issues.is_empty() {
                return Err(LoadError::NotACatalog {
                    path: path.to_path_buf(),
                });
            }
            return Ok(fbc);
        }
    }
    loaded
        .issues
        .sort_by(|a, b| (&a.package, &a.file).cmp(&(&b.package, &b.file)));
    Ok(loaded)
}

/// Loads bundle folders on every core, keeping input order in the output.
pub(crate) fn load_parallel(
    dirs: &[PathBuf],
    options: ReadOptions,
) -> Vec<Result<LoadedBundle, BundleError>> {
    let load = |dir: &PathBuf| {
        windlass_bundle::load_bundle(dir).map(|mut bundle| {
            if !options.keep_manifests {
                // Dropped in the worker, so a lean read never holds every schema at once.
                bundle.manifests = Vec::new();
            }
            bundle
        })
    };
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(dirs.len())
        .max(1);
    if workers == 1 {
        return dirs.iter().map(load).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<Option<Result<LoadedBundle, BundleError>>> =
        (0..dirs.len()).map(|_| None).collect();
    let chunks: Vec<Vec<(usize, Result<LoadedBundle, BundleError>)>> =
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    scope.spawn(|| {
                        let load = &load;
                        let mut done = Vec::new();
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(dir) = dirs.get(i) else { break };
                            done.push((i, load(dir)));
                        }
                        done
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        });
    for (i, result) in chunks.into_iter().flatten() {
        results[i] = Some(result);
    }
    results
        .into_iter()
        .zip(dirs)
        .map(|(r, d)| {
            r.unwrap_or_else(|| {
                Err(BundleError::Io {
                    path: d.display().to_string(),
                    source: std::io::Error::other("bundle reader thread panicked"),
                })
            })
        })
        .collect()
}

/// A bundle folder that could not be read: named by its CSV when that was readable, else by
/// its folder; a bad document names its file and position.
pub(crate) fn unreadable_bundle(
    package: Option<&str>,
    dir: &Path,
    error: &BundleError,
) -> LoadIssue {
    let folder = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string());
    match error.bad_document() {
        Some((file, document, csv, reason)) => LoadIssue::new(
            Severity::Error,
            IssueKind::UnreadableBundle,
            package,
            dir.join(file).display().to_string(),
            format!("{reason}; bundle left out"),
        )
        .bundle(Some(csv.unwrap_or(&folder)))
        .document(Some(document)),
        None => LoadIssue::new(
            Severity::Error,
            IssueKind::UnreadableBundle,
            package,
            dir.display().to_string(),
            format!("{error}; bundle left out"),
        )
        .bundle(Some(&folder)),
    }
}

/// Turns the reader's notes into issues.
pub(crate) fn note_issues(
    package: &str,
    dir: &Path,
    bundle: &LoadedBundle,
    issues: &mut Vec<LoadIssue>,
) {
    for note in &bundle.notes {
        let issue = match note {
            LoadNote::DuplicateKey(e) => LoadIssue::new(
                Severity::Warning,
                IssueKind::DuplicateKey,
                Some(package),
                format!(
                    "{}{}",
                    dir.join(&e.file).display(),
                    e.line.map(|l| format!(":{l}")).unwrap_or_default()
                ),
                format!("{} (the last value is used)", e.message),
            ),
            LoadNote::IgnoredFile(file) => LoadIssue::new(
                Severity::Warning,
                IssueKind::IgnoredFile,
                Some(package),
                dir.join(file).display().to_string(),
                "not a YAML or JSON file; ignored",
            ),
            // Repaired when the bundle is converted; lint reports it with the bundle's context.
            LoadNote::MissingApiVersion { .. } => continue,
        };
        issues.push(issue);
    }
}

/// Adds a loaded bundle to its package, or records why it cannot be added.
pub(crate) fn add_bundle(
    package: &mut crate::model::Package,
    dir: &Path,
    bundle: LoadedBundle,
    loaded: &mut Loaded,
) -> Option<String> {
    let name = package.name.clone();
    note_issues(&name, dir, &bundle, &mut loaded.issues);
    let csv_path = dir.join(&bundle.csv_file).display().to_string();
    let csv_name = bundle.csv.name().to_string();
    let version = match bundle.csv.version() {
        Ok(v) => v,
        Err(e) => {
            loaded.issues.push(
                LoadIssue::new(
                    Severity::Error,
                    IssueKind::BadVersion,
                    Some(&name),
                    csv_path,
                    format!("{e}; bundle left out"),
                )
                .bundle(Some(&csv_name)),
            );
            return None;
        }
    };
    if let Some(existing) = package.bundles.get(&csv_name) {
        // Name both copies: the one kept and the one refused.
        let first = existing
            .image
            .clone()
            .or_else(|| {
                loaded
                    .bundles
                    .iter()
                    .find(|s| s.package == name && s.bundle.csv.name() == csv_name)
                    .map(|s| s.dir.display().to_string())
            })
            .unwrap_or_else(|| "an earlier bundle".into());
        loaded.issues.push(
            LoadIssue::new(
                Severity::Error,
                IssueKind::DuplicateBundle,
                Some(&name),
                csv_path,
                format!(
                    "CSV {csv_name} is already added from {first} (version {}); this copy from {} (version {version}) is refused",
                    existing.version,
                    dir.display()
                ),
            )
            .bundle(Some(&csv_name)),
        );
        return None;
    }
    for unusable in crate::constraint::unusable_in_bundle(&bundle) {
        loaded.issues.push(LoadIssue::new(
            Severity::Error,
            IssueKind::BadConstraint,
            Some(&name),
            bundle.path_of(unusable.file).display().to_string(),
            format!(
                "{}: {} (bundle {csv_name}); resolution never chooses this bundle",
                unusable.field, unusable.error.problem
            ),
        ));
    }
    package.bundles.insert(
        csv_name.clone(),
        convert::catalog_bundle(&bundle, &name, version, None),
    );
    loaded.bundles.push(SourceBundle {
        package: name,
        dir: dir.to_path_buf(),
        bundle,
    });
    Some(csv_name)
}

#[cfg(test)]
pub(crate) mod tests;
