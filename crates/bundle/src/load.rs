//! Loading one bundle: a bundle directory, a package-manifest version folder or a `.tgz` pack.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::csv::{ClusterServiceVersion, CsvFieldError};
use crate::files::{FileTree, Limits, ReadError};
use crate::metadata::{self, Annotations, Dependency};
use crate::unpack::UnpackError;
use crate::yaml::{self, YamlError};

/// One object of the bundle, as written, with the file it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Manifest {
    /// Path inside the bundle, for example `manifests/etcd.crd.yaml`.
    pub file: String,
    pub object: Value,
}

impl Manifest {
    pub fn kind(&self) -> &str {
        self.object["kind"].as_str().unwrap_or_default()
    }

    pub fn api_version(&self) -> &str {
        self.object["apiVersion"].as_str().unwrap_or_default()
    }

    pub fn name(&self) -> &str {
        self.object["metadata"]["name"].as_str().unwrap_or_default()
    }
}

/// Which on-disk layout a bundle came in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `manifests/` + `metadata/` (directories, packs, images).
    Bundle,
    /// One flat version folder of a package-manifest package.
    PackageManifest,
}

/// Something the reader tolerated; lint reports these, loading goes on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadNote {
    /// A mapping repeated a key; the last value was kept.
    DuplicateKey(YamlError),
    /// A file that is not YAML or JSON was ignored.
    IgnoredFile(String),
    /// A manifest named a kind only one API serves but no `apiVersion`; it is applied with
    /// that version (see [`crate::legacy_apis::implied_api_version`]).
    MissingApiVersion {
        file: String,
        /// 1-based position of the document in the file.
        document: usize,
        kind: String,
        api_version: &'static str,
    },
}

/// One loaded bundle.
#[derive(Clone, Debug, PartialEq)]
pub struct Bundle {
    /// Where it was read from (path or image reference), for messages.
    pub source: String,
    pub layout: Layout,
    pub csv: ClusterServiceVersion,
    /// The file holding the CSV.
    pub csv_file: String,
    /// Every object of the bundle (the CSV included), in file order.
    pub manifests: Vec<Manifest>,
    /// `metadata/annotations.yaml`; for a package-manifest folder, built from the package file
    /// when the catalog reader knows it.
    pub annotations: Annotations,
    pub dependencies: Vec<Dependency>,
    /// `metadata/properties.yaml` entries, verbatim.
    pub properties: Vec<Value>,
    pub notes: Vec<LoadNote>,
}

/// Why a bundle could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{bundle}: {error}")]
    Unpack { bundle: String, error: UnpackError },
    #[error(transparent)]
    Yaml(#[from] YamlError),
    #[error("{bundle}: no ClusterServiceVersion found")]
    NoCsv { bundle: String },
    #[error("{bundle}: more than one ClusterServiceVersion ({})", files.join(", "))]
    ManyCsvs { bundle: String, files: Vec<String> },
    #[error("{file}: {error}")]
    Csv { file: String, error: CsvFieldError },
    #[error("{file}: {message}")]
    Metadata { file: String, message: String },
    /// A manifest that is not a Kubernetes object and cannot be repaired; `document` is
    /// 1-based, `csv` names the bundle when its CSV could be read.
    #[error("{file}: document {document}{}: {reason}", csv.as_ref().map(|c| format!(" (bundle {c})")).unwrap_or_default())]
    NotAnObject {
        file: String,
        document: usize,
        csv: Option<String>,
        reason: String,
    },
}

impl BundleError {
    /// For a manifest that is not a Kubernetes object: the file inside the bundle, the 1-based
    /// document, the CSV name when it was readable, and what is wrong.
    pub fn bad_document(&self) -> Option<(&str, usize, Option<&str>, &str)> {
        match self {
            BundleError::NotAnObject {
                file,
                document,
                csv,
                reason,
            } => Some((file, *document, csv.as_deref(), reason)),
            _ => None,
        }
    }
}

const ANNOTATIONS: &str = "metadata/annotations.yaml";
const DEPENDENCIES: &str = "metadata/dependencies.yaml";
const PROPERTIES: &str = "metadata/properties.yaml";

fn is_manifest_file(path: &str) -> bool {
    [".yaml", ".yml", ".json"]
        .iter()
        .any(|ext| path.to_ascii_lowercase().ends_with(ext))
}

/// Loads a bundle directory, a package-manifest version folder, or a `.tgz`/`.tar` pack.
pub fn load_bundle(path: &Path) -> Result<Bundle, BundleError> {
    load_bundle_with(path, Limits::default())
}

/// [`load_bundle`] with explicit size limits.
pub fn load_bundle_with(path: &Path, limits: Limits) -> Result<Bundle, BundleError> {
    let (tree, source) = read_source(path, limits)?;
    from_files(&tree, &source)
}

/// Reads a directory or an archive into memory without interpreting it.
pub fn read_source(path: &Path, limits: Limits) -> Result<(FileTree, String), BundleError> {
    let source = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| BundleError::Io {
        path: source.clone(),
        source: e,
    })?;
    let tree = if meta.is_dir() {
        FileTree::read_dir(path, limits)?
    } else {
        let bytes = std::fs::read(path).map_err(|e| BundleError::Io {
            path: source.clone(),
            source: e,
        })?;
        crate::unpack::unpack(&bytes, limits).map_err(|error| BundleError::Unpack {
            bundle: source.clone(),
            error,
        })?
    };
    Ok((tree, source))
}

/// Annotations for a package-manifest version folder, from its parent's `*.package.yaml`: the
/// package, the channels whose `currentCSV` is this CSV (else the default channel), the default.
fn package_manifest_annotations(folder: &Path, csv_name: &str) -> Option<Annotations> {
    let parent = folder.parent()?;
    for entry in std::fs::read_dir(parent).ok()?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".package.yaml") || name.ends_with(".package.yml") {
            let text = std::fs::read_to_string(entry.path()).ok()?;
            let doc = yaml::parse_one(&name, &text).ok()?.documents.pop()?;
            let package = doc["packageName"].as_str()?.to_string();
            let default = doc["defaultChannel"].as_str().map(String::from);
            let mut channels: Vec<String> = doc["channels"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|c| c["currentCSV"].as_str() == Some(csv_name))
                .filter_map(|c| c["name"].as_str().map(String::from))
                .collect();
            if channels.is_empty() {
                channels.extend(default.clone());
            }
            return Some(Annotations::for_package(
                &package,
                &channels,
                default.as_deref(),
            ));
        }
    }
    None
}

/// Interprets an in-memory tree as a bundle. `source` names it in messages.
pub fn from_files(tree: &FileTree, source: &str) -> Result<Bundle, BundleError> {
    let layout = if tree.under("manifests").next().is_some() {
        Layout::Bundle
    } else {
        Layout::PackageManifest
    };
    let mut notes = Vec::new();
    let mut manifests = Vec::new();
    let candidates: Vec<(&str, &[u8])> = match layout {
        Layout::Bundle => tree.under("manifests").collect(),
        Layout::PackageManifest => tree
            .files
            .iter()
            // Like OLM's directory loader: the version folder's own files are the manifests;
            // `metadata/` (dependencies, properties) is read as metadata below.
            .filter(|(k, _)| !k.ends_with(".package.yaml") && !k.contains('/'))
            .map(|(k, v)| (k.as_str(), v.as_slice()))
            .collect(),
    };
    for (file, bytes) in candidates {
        if !is_manifest_file(file) {
            notes.push(LoadNote::IgnoredFile(file.to_string()));
            continue;
        }
        let text = decode(file, bytes)?;
        let parsed = yaml::parse_documents(file, &text)?;
        if let Some(dup) = parsed.duplicate_key {
            notes.push(LoadNote::DuplicateKey(dup));
        }
        for (index, object) in parsed.documents.into_iter().enumerate() {
            manifests.push((
                index + 1,
                Manifest {
                    file: file.to_string(),
                    object,
                },
            ));
        }
    }
    let manifests = check_objects(manifests, &mut notes)?;
    let csv_files: Vec<&Manifest> = manifests
        .iter()
        .filter(|m| m.kind() == "ClusterServiceVersion")
        .collect();
    let csv_manifest = match csv_files.as_slice() {
        [] => {
            return Err(BundleError::NoCsv {
                bundle: source.to_string(),
            });
        }
        [one] => *one,
        many => {
            return Err(BundleError::ManyCsvs {
                bundle: source.to_string(),
                files: many.iter().map(|m| m.file.clone()).collect(),
            });
        }
    };
    let csv = ClusterServiceVersion::from_value(&csv_manifest.object).map_err(|error| {
        BundleError::Csv {
            file: csv_manifest.file.clone(),
            error,
        }
    })?;
    let csv_file = csv_manifest.file.clone();

    let metadata_doc =
        |file: &str, notes: &mut Vec<LoadNote>| -> Result<Option<Value>, BundleError> {
            let Some(bytes) = tree.get(file) else {
                return Ok(None);
            };
            let parsed = yaml::parse_one(file, &decode(file, bytes)?)?;
            if let Some(dup) = parsed.duplicate_key {
                notes.push(LoadNote::DuplicateKey(dup));
            }
            Ok(parsed.documents.into_iter().next())
        };
    let annotations = match metadata_doc(ANNOTATIONS, &mut notes)? {
        Some(doc) => {
            Annotations::from_document(&doc).map_err(|m| metadata_error(ANNOTATIONS, m))?
        }
        None => Annotations::default(),
    };
    let dependencies = match metadata_doc(DEPENDENCIES, &mut notes)? {
        Some(doc) => metadata::dependencies_from_document(&doc)
            .map_err(|m| metadata_error(DEPENDENCIES, m))?,
        None => Vec::new(),
    };
    let properties = match metadata_doc(PROPERTIES, &mut notes)? {
        Some(doc) => {
            metadata::properties_from_document(&doc).map_err(|m| metadata_error(PROPERTIES, m))?
        }
        None => Vec::new(),
    };
    let mut bundle = Bundle {
        source: source.to_string(),
        layout,
        csv,
        csv_file,
        manifests,
        annotations,
        dependencies,
        properties,
        notes,
    };
    if layout == Layout::PackageManifest
        && let Some(annotations) =
            package_manifest_annotations(Path::new(source), bundle.csv.name())
    {
        bundle.annotations = annotations;
    }
    Ok(bundle)
}

/// Every manifest must be a Kubernetes object: a string `kind` and a string `apiVersion`, or
/// no `apiVersion` where the kind implies it (repaired when converted, noted here). The first
/// that is neither refuses the bundle, naming its file, document and (when readable) the CSV.
fn check_objects(
    manifests: Vec<(usize, Manifest)>,
    notes: &mut Vec<LoadNote>,
) -> Result<Vec<Manifest>, BundleError> {
    let defined = crate::legacy_apis::kinds_defined_by_crds(manifests.iter().map(|(_, m)| m));
    let mut refused = None;
    for (document, manifest) in &manifests {
        let object = &manifest.object;
        let reason = match (object.get("kind"), object.get("apiVersion")) {
            (Some(Value::String(_)), Some(Value::String(_))) => continue,
            (Some(Value::String(kind)), None | Some(Value::Null)) => {
                match crate::legacy_apis::implied_api_version(kind, &defined) {
                    Some(api_version) => {
                        notes.push(LoadNote::MissingApiVersion {
                            file: manifest.file.clone(),
                            document: *document,
                            kind: kind.clone(),
                            api_version,
                        });
                        continue;
                    }
                    None => crate::legacy_apis::missing_api_version_reason(kind, &defined),
                }
            }
            (Some(Value::String(_)), Some(_)) => "apiVersion is not a string".to_string(),
            (None | Some(Value::Null), _) => "not a Kubernetes object: it has no kind".to_string(),
            (Some(_), _) => "kind is not a string".to_string(),
        };
        refused.get_or_insert((manifest.file.clone(), *document, reason));
    }
    if let Some((file, document, reason)) = refused {
        let csv = manifests
            .iter()
            .find(|(_, m)| m.kind() == "ClusterServiceVersion")
            .map(|(_, m)| m.name().to_string())
            .filter(|n| !n.is_empty());
        return Err(BundleError::NotAnObject {
            file,
            document,
            csv,
            reason,
        });
    }
    Ok(manifests.into_iter().map(|(_, m)| m).collect())
}

fn metadata_error(file: &str, message: String) -> BundleError {
    BundleError::Metadata {
        file: file.to_string(),
        message,
    }
}

fn decode(file: &str, bytes: &[u8]) -> Result<String, BundleError> {
    String::from_utf8(bytes.to_vec()).map_err(|e| {
        BundleError::Yaml(YamlError {
            file: file.to_string(),
            line: None,
            column: None,
            message: format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        })
    })
}

impl Bundle {
    /// The package: from the annotations, or `None` for a package-manifest folder read alone.
    pub fn package(&self) -> Option<&str> {
        self.annotations.package()
    }

    /// Objects of one kind, in file order.
    pub fn objects_of_kind<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Manifest> + 'a {
        self.manifests.iter().filter(move |m| m.kind() == kind)
    }

    /// The bundle's CRDs as `apiextensions.k8s.io/v1`, legacy `v1beta1` ones converted through
    /// [`crate::crd::to_v1`], each with its file. `manifests` keeps the CRDs as written, so the
    /// change list of the conversion stays available to `bundle manifests` and lint.
    pub fn crds_v1(
        &self,
    ) -> Vec<(
        &str,
        Result<crate::crd::Converted, crate::crd::ConvertError>,
    )> {
        self.objects_of_kind("CustomResourceDefinition")
            .map(|m| (m.file.as_str(), crate::crd::to_v1(&m.object)))
            .collect()
    }

    /// Where the CSV's file lives, as a path a person can open.
    pub fn path_of(&self, file: &str) -> PathBuf {
        Path::new(&self.source).join(file)
    }
}

#[cfg(test)]
mod tests;
