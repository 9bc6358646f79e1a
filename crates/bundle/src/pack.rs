//! `.tgz` packs: one bundle in bundle layout plus `windlass-pack.json`, a manifest naming the
//! bundle, its version, display information and every image it needs.

use serde::{Deserialize, Serialize};

use crate::csv::RelatedImage;
use crate::files::FileTree;
use crate::load::{Bundle, Layout};
use crate::metadata::Annotations;

/// Name of the manifest file at the root of a pack.
pub const PACK_MANIFEST: &str = "windlass-pack.json";

/// What a pack holds, readable without unpacking the manifests.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackManifest {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub channels: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_channel: Option<String>,
    /// `spec.relatedImages` plus deployment images it does not list.
    pub related_images: Vec<RelatedImage>,
    /// Bundle files with their SHA-256, so a pack can be checked after copying.
    pub files: Vec<PackedFile>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackedFile {
    pub path: String,
    pub sha256: String,
}

#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error("{0}: spec.version is missing or not semver; a pack needs a version")]
    NoVersion(String),
    #[error("cannot write the archive: {0}")]
    Io(#[from] std::io::Error),
}

/// The bundle's files in bundle layout: a package-manifest folder's files move under
/// `manifests/`, its `metadata/` files (dependencies, properties) stay where they are, since
/// the loader reads them there in either layout, and `metadata/annotations.yaml` is generated.
pub fn bundle_layout_tree(bundle: &Bundle, tree: &FileTree) -> FileTree {
    let mut out = FileTree::default();
    match bundle.layout {
        Layout::Bundle => {
            for (path, bytes) in &tree.files {
                if path.starts_with("manifests/") || path.starts_with("metadata/") {
                    out.files.insert(path.clone(), bytes.clone());
                }
            }
        }
        Layout::PackageManifest => {
            for (path, bytes) in &tree.files {
                if path.starts_with("metadata/") {
                    out.files.insert(path.clone(), bytes.clone());
                }
            }
            for manifest in &bundle.manifests {
                if let Some(bytes) = tree.get(&manifest.file) {
                    out.files.insert(
                        format!(
                            "manifests/{}",
                            manifest.file.rsplit('/').next().unwrap_or(&manifest.file)
                        ),
                        bytes.to_vec(),
                    );
                }
            }
            if !bundle.annotations.0.is_empty() {
                out.files.insert(
                    "metadata/annotations.yaml".into(),
                    annotations_yaml(&bundle.annotations).into_bytes(),
                );
            }
        }
    }
    out
}

fn annotations_yaml(annotations: &Annotations) -> String {
    let doc = serde_json::json!({ "annotations": annotations.0 });
    serde_saphyr::to_string(&doc).unwrap_or_default()
}

/// Builds the pack: the bundle-layout tree plus [`PACK_MANIFEST`], as a deterministic `.tgz`.
pub fn pack_bundle(bundle: &Bundle, tree: &FileTree) -> Result<(Vec<u8>, PackManifest), PackError> {
    use sha2::{Digest, Sha256};
    let version = bundle
        .csv
        .version()
        .map_err(|_| PackError::NoVersion(bundle.csv_file.clone()))?;
    let mut layout = bundle_layout_tree(bundle, tree);
    let mut related = bundle.csv.spec.related_images.clone();
    for image in bundle.csv.deployments().iter().flat_map(|d| d.images()) {
        if !related.iter().any(|r| r.image == image) {
            related.push(RelatedImage {
                name: String::new(),
                image: image.to_string(),
            });
        }
    }
    let manifest = PackManifest {
        name: bundle.csv.name().to_string(),
        package: bundle.package().map(String::from),
        version: version.to_string(),
        display_name: bundle.csv.spec.display_name.clone(),
        description: bundle.csv.spec.description.clone(),
        provider: bundle
            .csv
            .spec
            .provider
            .as_ref()
            .and_then(|p| p.name.clone()),
        channels: bundle.annotations.channels(),
        default_channel: bundle.annotations.default_channel().map(String::from),
        related_images: related,
        files: layout
            .files
            .iter()
            .map(|(path, bytes)| PackedFile {
                path: path.clone(),
                sha256: format!("{:x}", Sha256::digest(bytes)),
            })
            .collect(),
    };
    let json = serde_json::to_vec_pretty(&manifest).expect("the pack manifest serialises");
    layout.files.insert(PACK_MANIFEST.into(), json);
    Ok((crate::unpack::pack(&layout)?, manifest))
}

/// Reads the manifest of a pack's unpacked tree, if it has one.
pub fn read_pack_manifest(tree: &FileTree) -> Option<PackManifest> {
    serde_json::from_slice(tree.get(PACK_MANIFEST)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::Limits;

    const CSV: &str = "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata: {name: demo.v1.0.0}\nspec:\n  version: 1.0.0\n  displayName: Demo\n  install:\n    strategy: deployment\n    spec:\n      deployments:\n      - name: d\n        spec: {template: {spec: {containers: [{name: m, image: 'example.com/m:1'}]}}}\n";

    #[test]
    fn a_package_manifest_folder_packs_into_bundle_layout_and_loads_back() {
        let dependencies = "dependencies:\n- type: olm.constraint\n  value:\n    failureMessage: needs db\n    cel: {rule: \"properties.exists(p, p.type == 'olm.package')\"}\n";
        let properties = "properties:\n- {type: example.com/tier, value: gold}\n";
        let tree = FileTree {
            files: [
                ("demo.csv.yaml".to_string(), CSV.as_bytes().to_vec()),
                (
                    "metadata/dependencies.yaml".to_string(),
                    dependencies.as_bytes().to_vec(),
                ),
                (
                    "metadata/properties.yaml".to_string(),
                    properties.as_bytes().to_vec(),
                ),
            ]
            .into(),
        };
        let mut bundle = crate::from_files(&tree, "demo/1.0.0").unwrap();
        bundle.annotations = Annotations::for_package("demo", &["stable".into()], None);
        let (bytes, manifest) = pack_bundle(&bundle, &tree).unwrap();
        assert_eq!(manifest.version, "1.0.0");
        assert_eq!(
            manifest.related_images,
            vec![RelatedImage {
                name: String::new(),
                image: "example.com/m:1".into()
            }]
        );
        assert_eq!(
            manifest
                .files
                .iter()
                .map(|f| f.path.as_str())
                .collect::<Vec<_>>(),
            vec![
                "manifests/demo.csv.yaml",
                "metadata/annotations.yaml",
                "metadata/dependencies.yaml",
                "metadata/properties.yaml"
            ]
        );
        let unpacked = crate::unpack::unpack(&bytes, Limits::default()).unwrap();
        assert_eq!(read_pack_manifest(&unpacked), Some(manifest));
        let back = crate::from_files(&unpacked, "demo.tgz").unwrap();
        assert_eq!(back.package(), Some("demo"));
        assert_eq!(back.csv, bundle.csv);
        assert_eq!(
            back.dependencies.len(),
            1,
            "the dependencies travel with it"
        );
        assert_eq!(back.dependencies, bundle.dependencies);
        assert_eq!(back.properties, bundle.properties);
        assert_eq!(back.properties.len(), 1);
    }

    #[test]
    fn a_bundle_without_a_version_does_not_pack() {
        let tree = FileTree {
            files: [(
                "c.yaml".to_string(),
                CSV.replace("  version: 1.0.0\n", "").into_bytes(),
            )]
            .into(),
        };
        let bundle = crate::from_files(&tree, "x").unwrap();
        assert!(matches!(
            pack_bundle(&bundle, &tree),
            Err(PackError::NoVersion(_))
        ));
    }
}
