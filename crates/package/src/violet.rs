//! ACP's package manifest, as its packaging tool violet writes it into a package folder's
//! `manifest.yaml`, read into [`PackageManifest`] and written back from it field for field.
//!
//! The format, one YAML document:
//!
//! ```yaml
//! apiVersion: app.alauda.io/v1alpha1
//! kind: PackageManifest
//! metadata:
//!   name: topolvm-operator      # the operator package (or chart) name
//! spec:
//!   type: bundle                # bundle: an OLM bundle image; chart: an OCI Helm chart
//!   artifact: harbor.demo.io/acp/topolvm-operator-bundle:v3.11.0
//!   version: 2.3.0
//!   arch:                       # platforms every image must offer, as --platforms names them
//!   - linux/amd64
//!   info:                       # how the hub shows it
//!     displayName: NativeStor
//!     description: Local storage for Kubernetes
//!     icon: icon.svg            # a file beside manifest.yaml
//!     keywords: [storage]
//!     links: [{name: Docs, url: 'https://...'}]
//!   relatedImages:              # every image besides the artifact
//!   - harbor.demo.io/acp/topolvm-operator:v3.11.0
//! ```
//!
//! `relatedImages` entries are plain references or `{name, image}` as a CSV lists them; each is
//! written back the way it was read. Fields this reader does not act on are kept and written
//! back unchanged (lint names them as warnings) rather than refused: a package made by a
//! newer violet must still read.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::lint::{ARCHITECTURES, Report};
use crate::manifest::{
    ArtifactType, Fields, Link, ManifestError, Metadata, PackageManifest, PackageSpec, RelatedImage,
};

/// `kind` of violet's manifest.
pub const KIND: &str = "PackageManifest";
/// `apiVersion` windlass writes and expects.
pub const API_VERSION: &str = "app.alauda.io/v1alpha1";
/// OLM's PackageManifest, which a cluster serves: same kind, not a package folder.
const OLM_GROUP: &str = "packages.operators.coreos.com/";
/// The platforms' operating system: images for a cluster's nodes.
const OS: &str = "linux";

pub const FIELDS: Fields = Fields {
    bundle: "spec.artifact",
    chart: "spec.artifact",
    display_name: "spec.info.displayName",
    icon: "spec.info.icon",
    keywords: "spec.info.keywords",
    links: "spec.info.links",
    architectures: "spec.arch",
    related_images: "spec.relatedImages",
};

type Extra = Map<String, Value>;

/// The file as written: every field optional, so that what was absent stays absent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VioletFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<FileMetadata>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<FileSpec>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileMetadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileSpec {
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<FileInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub related_images: Option<Vec<FileImage>>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keywords: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<Link>>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// One `relatedImages` entry, in either spelling.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FileImage {
    Reference(String),
    Named(NamedImage),
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamedImage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default)]
    pub image: String,
    #[serde(flatten)]
    pub extra: Extra,
}

impl VioletFile {
    /// What a new manifest starts from: the fields a person fills in are present, empty.
    fn skeleton() -> VioletFile {
        VioletFile {
            api_version: Some(API_VERSION.into()),
            kind: Some(KIND.into()),
            metadata: Some(FileMetadata::default()),
            spec: Some(FileSpec {
                type_: Some(ArtifactType::Bundle.as_str().into()),
                artifact: Some(String::new()),
                version: Some(String::new()),
                arch: Some(Vec::new()),
                related_images: Some(Vec::new()),
                ..Default::default()
            }),
            extra: Extra::new(),
        }
    }

    fn spec(&self) -> FileSpec {
        self.spec.clone().unwrap_or_default()
    }

    /// The field path of related image `index`'s reference.
    pub fn related_image_field(&self, index: usize) -> String {
        let named = self
            .spec
            .as_ref()
            .and_then(|s| s.related_images.as_ref())
            .and_then(|images| images.get(index))
            .is_some_and(|image| matches!(image, FileImage::Named(_)));
        if named {
            format!("spec.relatedImages[{index}].image")
        } else {
            format!("spec.relatedImages[{index}]")
        }
    }
}

/// The architecture a platform names (`linux/arm64` -> `arm64`, `linux/arm/v7` -> `arm`),
/// when it is one images are published for.
pub fn architecture_of(platform: &str) -> Option<&str> {
    let mut parts = platform.split('/');
    let (os, arch) = (parts.next()?, parts.next()?);
    let variant_ok = parts.next().is_none_or(|v| !v.is_empty()) && parts.next().is_none();
    (os == OS && variant_ok && ARCHITECTURES.contains(&arch)).then_some(arch)
}

/// The platforms a package promises, as violet spells them: as written in violet's file, else
/// `linux/<arch>` for each architecture.
pub fn platforms(manifest: &PackageManifest) -> Vec<String> {
    match manifest
        .violet
        .as_ref()
        .and_then(|f| f.spec.as_ref())
        .and_then(|s| s.arch.clone())
    {
        Some(written) => written,
        None => manifest
            .spec
            .architectures
            .iter()
            .map(|a| format!("{OS}/{a}"))
            .collect(),
    }
}

/// The architectures the platforms name, each once, in order.
fn architectures(platforms: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for arch in platforms.iter().filter_map(|p| architecture_of(p)) {
        if !out.iter().any(|a| a == arch) {
            out.push(arch.to_string());
        }
    }
    out
}

fn artifact_type(written: Option<&str>) -> ArtifactType {
    match written {
        Some("chart") => ArtifactType::Chart,
        _ => ArtifactType::Bundle,
    }
}

/// Reads violet's manifest (`document`, one parsed YAML document) into the model.
pub(crate) fn from_document(
    file: &str,
    document: &Value,
) -> Result<PackageManifest, ManifestError> {
    let api_version = document["apiVersion"].as_str().unwrap_or_default();
    if api_version.starts_with(OLM_GROUP) {
        return Err(ManifestError::Field {
            file: file.into(),
            field: "apiVersion".into(),
            message: format!(
                "{api_version} is OLM's PackageManifest, the package list a cluster serves; a package folder holds an OperatorPackage ({}) or violet's PackageManifest ({API_VERSION})",
                crate::manifest::API_VERSION
            ),
        });
    }
    let violet: VioletFile =
        serde_path_to_error::deserialize(document).map_err(|e| ManifestError::Field {
            file: file.into(),
            field: e.path().to_string(),
            message: e.inner().to_string(),
        })?;
    let spec = violet.spec();
    let info = spec.info.clone().unwrap_or_default();
    let artifact = spec.artifact.clone().unwrap_or_default();
    let chart = artifact_type(spec.type_.as_deref()) == ArtifactType::Chart;
    let (bundle, chart) = if chart {
        (String::new(), artifact)
    } else {
        (artifact, String::new())
    };
    Ok(PackageManifest {
        api_version: violet.api_version.clone().unwrap_or_default(),
        kind: KIND.into(),
        metadata: Metadata {
            name: violet
                .metadata
                .as_ref()
                .and_then(|m| m.name.clone())
                .unwrap_or_default(),
        },
        spec: PackageSpec {
            version: spec.version.clone().unwrap_or_default(),
            bundle,
            chart,
            display_name: info.display_name.unwrap_or_default(),
            description: info.description.unwrap_or_default(),
            icon: info.icon.unwrap_or_default(),
            keywords: info.keywords.unwrap_or_default(),
            links: info.links.unwrap_or_default(),
            architectures: architectures(spec.arch.as_deref().unwrap_or_default()),
            related_images: spec
                .related_images
                .unwrap_or_default()
                .into_iter()
                .map(|image| match image {
                    FileImage::Reference(image) => RelatedImage {
                        name: String::new(),
                        image,
                    },
                    FileImage::Named(named) => RelatedImage {
                        name: named.name.unwrap_or_default(),
                        image: named.image,
                    },
                })
                .collect(),
        },
        violet: Some(Box::new(violet)),
    })
}

/// The same package in violet's format (a new file, for one read in windlass's).
pub fn convert(manifest: &PackageManifest) -> PackageManifest {
    if manifest.is_violet() {
        return manifest.clone();
    }
    PackageManifest {
        api_version: API_VERSION.into(),
        kind: KIND.into(),
        violet: Some(Box::new(VioletFile::skeleton())),
        ..manifest.clone()
    }
}

/// Sets a field from the model; one that was absent stays absent while the model has nothing.
fn put(slot: &mut Option<String>, value: &str) {
    if !value.is_empty() || slot.is_some() {
        *slot = Some(value.to_string());
    }
}

fn put_list<T>(slot: &mut Option<Vec<T>>, value: Vec<T>) {
    if !value.is_empty() || slot.is_some() {
        *slot = Some(value);
    }
}

/// The model as violet's file: the file it was read from with the model's values in place, so
/// spellings, fields windlass does not read and absent fields come back as they were.
pub fn to_file(manifest: &PackageManifest) -> VioletFile {
    let mut file = manifest
        .violet
        .as_deref()
        .cloned()
        .unwrap_or_else(VioletFile::skeleton);
    put(&mut file.api_version, &manifest.api_version);
    file.kind = Some(KIND.into());
    let metadata = file.metadata.get_or_insert_with(Default::default);
    put(&mut metadata.name, &manifest.metadata.name);
    let model = &manifest.spec;
    let spec = file.spec.get_or_insert_with(Default::default);
    let (artifact, kind) = manifest.artifact();
    if artifact_type(spec.type_.as_deref()) != kind {
        spec.type_ = Some(kind.as_str().into());
    }
    put(&mut spec.artifact, artifact);
    put(&mut spec.version, &model.version);
    let written = spec.arch.clone().unwrap_or_default();
    if architectures(&written) != model.architectures {
        spec.arch = Some(
            model
                .architectures
                .iter()
                .map(|a| format!("{OS}/{a}"))
                .collect(),
        );
    }
    let mut info = spec.info.clone().unwrap_or_default();
    put(&mut info.display_name, &model.display_name);
    put(&mut info.description, &model.description);
    put(&mut info.icon, &model.icon);
    put_list(&mut info.keywords, model.keywords.clone());
    put_list(&mut info.links, model.links.clone());
    if spec.info.is_some() || info != FileInfo::default() {
        spec.info = Some(info);
    }
    let written = spec.related_images.clone().unwrap_or_default();
    let images = model
        .related_images
        .iter()
        .enumerate()
        .map(
            |(i, related)| match (written.get(i), related.name.is_empty()) {
                (Some(FileImage::Named(named)), _) => {
                    let mut named = named.clone();
                    put(&mut named.name, &related.name);
                    named.image = related.image.clone();
                    FileImage::Named(named)
                }
                (_, true) => FileImage::Reference(related.image.clone()),
                (_, false) => FileImage::Named(NamedImage {
                    name: Some(related.name.clone()),
                    image: related.image.clone(),
                    extra: Extra::new(),
                }),
            },
        )
        .collect();
    put_list(&mut spec.related_images, images);
    file
}

pub(crate) fn to_yaml(manifest: &PackageManifest) -> String {
    serde_saphyr::to_string(&to_file(manifest)).expect("a violet manifest serialises")
}

/// The checks of what only violet's format has: its apiVersion, `spec.type`, `spec.arch`,
/// and the fields windlass does not read.
pub(crate) fn lint(file: &VioletFile, report: &mut Report) {
    match file.api_version.as_deref().unwrap_or_default() {
        "" => report.error(
            "apiVersion",
            format!("apiVersion must not be empty (violet's PackageManifest is {API_VERSION})"),
        ),
        API_VERSION => {}
        other => report.warning(
            "apiVersion",
            format!(
                "apiVersion `{other}` is not {API_VERSION}, the version of violet's PackageManifest windlass knows; read as that"
            ),
        ),
    }
    let spec = file.spec();
    match spec.type_.as_deref() {
        None => report.warning("spec.type", "spec.type is missing: read as bundle"),
        Some("bundle" | "chart") => {}
        Some(other) => report.error(
            "spec.type",
            format!("spec.type `{other}` must be bundle or chart"),
        ),
    }
    let platforms = spec.arch.clone().unwrap_or_default();
    if platforms.is_empty() {
        report.warning(
            "spec.arch",
            "spec.arch is empty: the images' platforms are not checked, and each image is carried with every platform it has",
        );
    }
    let known: Vec<String> = ARCHITECTURES.iter().map(|a| format!("{OS}/{a}")).collect();
    let mut seen = Vec::new();
    for (i, platform) in platforms.iter().enumerate() {
        let field = format!("spec.arch[{i}]");
        match architecture_of(platform) {
            None => report.error(
                &field,
                format!(
                    "{field} `{platform}` is not a platform images are published for ({})",
                    known.join(", ")
                ),
            ),
            Some(_) if seen.contains(&platform) => {
                report.error(&field, format!("{field} `{platform}` is listed twice"))
            }
            Some(_) => seen.push(platform),
        }
    }
    let mut unknown = |path: &str, extra: &Extra, allowed: &[&str]| {
        for key in extra.keys().filter(|k| !allowed.contains(&k.as_str())) {
            let field = format!("{path}{key}");
            report.warning(
                &field,
                format!("{field} is not a field windlass reads; it is kept as written"),
            );
        }
    };
    unknown("", &file.extra, &[]);
    if let Some(metadata) = &file.metadata {
        unknown("metadata.", &metadata.extra, &["labels", "annotations"]);
    }
    unknown("spec.", &spec.extra, &[]);
    if let Some(info) = &spec.info {
        unknown("spec.info.", &info.extra, &[]);
    }
    for (i, image) in spec.related_images.iter().flatten().enumerate() {
        if let FileImage::Named(named) = image {
            unknown(&format!("spec.relatedImages[{i}]."), &named.extra, &[]);
        }
    }
}

#[cfg(test)]
mod tests;
