//! `manifest.yaml`: what a package folder says about the operator it carries to an air-gapped
//! site: its name and version, the bundle image, how the hub shows it (display name, icon,
//! keywords, links), the architectures it runs on and every image it needs.

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
    /// The bundle image (`quay.io/acme/db-bundle@sha256:...`).
    #[serde(default)]
    pub bundle: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_name: String,
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
    /// Reads a manifest; `file` names it in errors. Unknown fields are errors naming the
    /// field (a typo must not silently drop what it meant to say).
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
        serde_path_to_error::deserialize(document).map_err(|e| ManifestError::Field {
            file: file.into(),
            field: e.path().to_string(),
            message: e.inner().to_string(),
        })
    }

    /// The manifest as YAML, fields in a fixed order.
    pub fn to_yaml(&self) -> String {
        serde_saphyr::to_string(self).expect("a package manifest serialises")
    }

    /// The bundle image first, then each related image, each once, in the manifest's order.
    pub fn images(&self) -> Vec<&str> {
        let mut images: Vec<&str> = Vec::new();
        let all = std::iter::once(self.spec.bundle.as_str())
            .chain(self.spec.related_images.iter().map(|r| r.image.as_str()));
        for image in all {
            if !image.is_empty() && !images.contains(&image) {
                images.push(image);
            }
        }
        images
    }
}

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
