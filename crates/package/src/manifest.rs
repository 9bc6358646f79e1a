//! `manifest.yaml`: what a package folder says about the operator it carries to an air-gapped
//! site: its name and version, the bundle image (or, for a Helm chart, the chart), how the hub
//! shows it (display name, description, icon, keywords, links), the architectures it runs on
//! and every image it needs.
//!
//! [`PackageManifest`] is the one in-memory model of both formats a folder may hold: windlass's
//! own `OperatorPackage` (what serde reads and writes here) and ACP's `PackageManifest` as
//! violet writes it ([`crate::violet`]), which is converted into this model on reading and
//! back, field for field, on writing. [`PackageManifest::parse`] tells them apart by `kind`.

use serde::{Deserialize, Serialize};

/// The manifest's file name in a package folder and at the root of an archive.
pub const MANIFEST_FILE: &str = "manifest.yaml";
/// `apiVersion` of a package manifest (a file format; nothing of it is served by a cluster).
pub const API_VERSION: &str = "packages.windlass.dev/v1alpha1";
/// `kind` of a package manifest.
pub const KIND: &str = "OperatorPackage";
/// Largest manifest read.
pub const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;

/// A package manifest. Empty strings are kept (not refused while reading) so that lint names
/// every missing field at once.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PackageManifest {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub metadata: Metadata,
    #[serde(default)]
    pub spec: PackageSpec,
    /// The violet file this was read from (everything of it the model has no field for, and
    /// how each field was spelled), when the folder holds ACP's format; `None` for windlass's.
    #[serde(skip)]
    pub violet: Option<Box<crate::violet::VioletFile>>,
}

/// What a package carries as its main artifact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArtifactType {
    /// An OLM bundle image, installed through a Catalog.
    Bundle,
    /// A Helm chart in an OCI registry.
    Chart,
}

impl ArtifactType {
    /// As violet's `spec.type` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ArtifactType::Bundle => "bundle",
            ArtifactType::Chart => "chart",
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metadata {
    /// The operator package's name, as catalogs list it.
    #[serde(default)]
    pub name: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PackageSpec {
    /// The operator version (semver), as the bundle's CSV has it.
    #[serde(default)]
    pub version: String,
    /// The bundle image (`quay.io/acme/db-bundle@sha256:...`). Left out of a chart's file.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub bundle: String,
    /// An OCI Helm chart (`registry.example/charts/db:1.1.0`), carried instead of a bundle.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub chart: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// A file beside `manifest.yaml` (`icon.svg`, `icon.png`), carried in the archive.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub icon: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<Link>,
    /// CPU architectures every image must offer (`amd64`, `arm64`, ...).
    #[serde(default)]
    pub architectures: Vec<String>,
    /// Every image the operator runs or deploys, besides the bundle image.
    #[serde(default)]
    pub related_images: Vec<RelatedImage>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub url: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelatedImage {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default)]
    pub image: String,
}

/// Why a manifest could not be read at all (lint reports what is wrong with one that reads).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    #[error("{file}: {message}")]
    Yaml { file: String, message: String },
    #[error("{file}: {field}: {message}")]
    Field {
        file: String,
        field: String,
        message: String,
    },
    #[error(
        "{file}: holds {0} YAML documents; a package manifest is one",
        documents
    )]
    Documents { file: String, documents: usize },
    #[error("{file}: larger than {MAX_MANIFEST_BYTES} bytes")]
    TooLarge { file: String },
}

impl PackageManifest {
    /// Reads a manifest in either format; `file` names it in errors. In windlass's format an
    /// unknown field is an error naming it (a typo must not silently drop what it meant to
    /// say); violet's format is read as violet writes it ([`crate::violet`]).
    pub fn parse(file: &str, text: &str) -> Result<PackageManifest, ManifestError> {
        if text.len() as u64 > MAX_MANIFEST_BYTES {
            return Err(ManifestError::TooLarge { file: file.into() });
        }
        let documents = windlass_bundle::yaml::parse_documents(file, text)
            .map_err(|e| ManifestError::Yaml {
                file: file.into(),
                message: e
                    .to_string()
                    .trim_start_matches(file)
                    .trim_start_matches(": ")
                    .into(),
            })?
            .documents;
        let [document] = documents.as_slice() else {
            return Err(ManifestError::Documents {
                file: file.into(),
                documents: documents.len(),
            });
        };
        if document["kind"] == crate::violet::KIND {
            return crate::violet::from_document(file, document);
        }
        serde_path_to_error::deserialize(document).map_err(|e| ManifestError::Field {
            file: file.into(),
            field: e.path().to_string(),
            message: e.inner().to_string(),
        })
    }

    /// The manifest as YAML in the format it was read in (a new one: windlass's), fields in
    /// a fixed order.
    pub fn to_yaml(&self) -> String {
        if self.violet.is_some() {
            return crate::violet::to_yaml(self);
        }
        serde_saphyr::to_string(self).expect("a package manifest serialises")
    }

    /// The same package as windlass's `OperatorPackage`.
    pub fn to_windlass(&self) -> PackageManifest {
        PackageManifest {
            api_version: API_VERSION.into(),
            kind: KIND.into(),
            violet: None,
            ..self.clone()
        }
    }

    /// Whether the folder holds ACP's format.
    pub fn is_violet(&self) -> bool {
        self.violet.is_some()
    }

    /// The main artifact, the image reference a package always carries first.
    pub fn artifact(&self) -> (&str, ArtifactType) {
        if self.spec.bundle.is_empty() && !self.spec.chart.is_empty() {
            (&self.spec.chart, ArtifactType::Chart)
        } else {
            (&self.spec.bundle, ArtifactType::Bundle)
        }
    }

    /// Where each field lives in the file the manifest was read from, for findings.
    pub fn fields(&self) -> &'static Fields {
        if self.is_violet() {
            &crate::violet::FIELDS
        } else {
            &WINDLASS_FIELDS
        }
    }

    /// The field path of related image `index`'s reference.
    pub fn related_image_field(&self, index: usize) -> String {
        match &self.violet {
            Some(file) => file.related_image_field(index),
            None => format!("spec.relatedImages[{index}].image"),
        }
    }

    /// The artifact first, then each related image, each once, in the manifest's order.
    pub fn images(&self) -> Vec<&str> {
        let mut images: Vec<&str> = Vec::new();
        let all = std::iter::once(self.artifact().0)
            .chain(self.spec.related_images.iter().map(|r| r.image.as_str()));
        for image in all {
            if !image.is_empty() && !images.contains(&image) {
                images.push(image);
            }
        }
        images
    }
}

/// The path of each model field in one file format, so that a finding names the field as the
/// person reading their own file sees it.
#[derive(Debug, PartialEq, Eq)]
pub struct Fields {
    pub bundle: &'static str,
    pub chart: &'static str,
    pub display_name: &'static str,
    pub icon: &'static str,
    pub keywords: &'static str,
    pub links: &'static str,
    pub architectures: &'static str,
    pub related_images: &'static str,
}

pub const WINDLASS_FIELDS: Fields = Fields {
    bundle: "spec.bundle",
    chart: "spec.chart",
    display_name: "spec.displayName",
    icon: "spec.icon",
    keywords: "spec.keywords",
    links: "spec.links",
    architectures: "spec.architectures",
    related_images: "spec.relatedImages",
};

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = "\
apiVersion: packages.windlass.dev/v1alpha1
kind: OperatorPackage
metadata:
  name: acme-db
spec:
  version: 1.1.0
  bundle: quay.io/acme/acme-db-bundle:1.1.0
  displayName: Acme DB
  icon: icon.svg
  keywords: [database, acme]
  links:
  - {name: Docs, url: 'https://acme.example/docs'}
  architectures: [amd64, arm64]
  relatedImages:
  - {name: operator, image: 'quay.io/acme/db-operator:1.1.0'}
  - {name: again, image: 'quay.io/acme/acme-db-bundle:1.1.0'}
";

    #[test]
    fn a_manifest_reads_and_writes_back_the_same() {
        let manifest = PackageManifest::parse("manifest.yaml", MANIFEST).unwrap();
        assert_eq!(manifest.metadata.name, "acme-db");
        assert_eq!(manifest.spec.links[0].url, "https://acme.example/docs");
        assert_eq!(
            manifest.images(),
            [
                "quay.io/acme/acme-db-bundle:1.1.0",
                "quay.io/acme/db-operator:1.1.0"
            ]
        );
        let again = PackageManifest::parse("m", &manifest.to_yaml()).unwrap();
        assert_eq!(again, manifest);
    }

    #[test]
    fn unknown_fields_and_bad_yaml_name_the_field_or_line() {
        let typo = MANIFEST.replace("  relatedImages:", "  relatedImage:");
        let error = PackageManifest::parse("manifest.yaml", &typo)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("manifest.yaml: spec.relatedImage: unknown field `relatedImage`"),
            "{error}"
        );
        let nested = MANIFEST.replace(
            "image: 'quay.io/acme/db-operator",
            "imag: 'quay.io/acme/db-operator",
        );
        let error = PackageManifest::parse("manifest.yaml", &nested)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("spec.relatedImages[0].imag: unknown field `imag`"),
            "{error}"
        );
        let broken = PackageManifest::parse("manifest.yaml", "spec: [unclosed").unwrap_err();
        assert!(
            broken.to_string().starts_with("manifest.yaml: "),
            "{broken}"
        );
        let two = PackageManifest::parse("manifest.yaml", "a: 1\n---\nb: 2\n").unwrap_err();
        assert!(two.to_string().contains("2 YAML documents"), "{two}");
    }

    #[test]
    fn missing_fields_read_as_empty_for_lint_to_name() {
        let manifest = PackageManifest::parse("m", "kind: OperatorPackage\n").unwrap();
        assert_eq!(manifest.spec.bundle, "");
        assert!(manifest.images().is_empty());
    }
}
