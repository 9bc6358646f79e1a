//! The images a bundle needs at a site: what its CSV lists in `relatedImages` and what its
//! Deployments run or hand to the operator (`RELATED_IMAGE_*`).

use windlass_bundle::csv::ClusterServiceVersion;
use windlass_mirror::pod::pod_images;

use crate::manifest::{API_VERSION, KIND, PackageManifest, RelatedImage};

/// One image and the first place the CSV names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageUse {
    pub image: String,
    /// `is in spec.relatedImages as db`, `Deployment x container y runs`.
    pub used_by: String,
}

/// Every image the CSV names, each once, in order: `relatedImages`, then each Deployment's
/// images.
pub fn bundle_images(csv: &ClusterServiceVersion) -> Vec<ImageUse> {
    let mut out: Vec<ImageUse> = Vec::new();
    let mut add = |image: &str, used_by: String| {
        if !image.is_empty() && !out.iter().any(|u| u.image == image) {
            out.push(ImageUse {
                image: image.to_string(),
                used_by,
            });
        }
    };
    for related in &csv.spec.related_images {
        let used_by = if related.name.is_empty() {
            "is in the CSV's relatedImages".to_string()
        } else {
            format!("is in the CSV's relatedImages as {}", related.name)
        };
        add(&related.image, used_by);
    }
    for deployment in csv.deployments() {
        for site in pod_images(&deployment.spec["template"]["spec"]) {
            add(
                &site.image,
                format!("Deployment {} {}", deployment.name, site.place),
            );
        }
    }
    out
}

/// A manifest filled from a bundle: its version, display information and every image, with
/// `bundle` as the bundle image. `name` is the package name to give it.
pub fn manifest_from_bundle(
    name: &str,
    bundle: &str,
    csv: &ClusterServiceVersion,
    icon: Option<&str>,
    architectures: &[String],
) -> PackageManifest {
    let mut manifest = PackageManifest {
        api_version: API_VERSION.into(),
        kind: KIND.into(),
        ..Default::default()
    };
    manifest.metadata.name = name.to_string();
    let spec = &mut manifest.spec;
    spec.version = csv.spec.version.clone().unwrap_or_default();
    spec.bundle = bundle.to_string();
    spec.display_name = csv.spec.display_name.clone().unwrap_or_default();
    spec.icon = icon.unwrap_or_default().to_string();
    spec.keywords = strings(&csv.spec.extra.get("keywords").cloned());
    spec.links = csv
        .spec
        .extra
        .get("links")
        .and_then(|l| l.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|link| {
            Some(crate::manifest::Link {
                name: link["name"].as_str()?.to_string(),
                url: link["url"].as_str()?.to_string(),
            })
        })
        .collect();
    spec.architectures = architectures.to_vec();
    let related_names: Vec<(&str, &str)> = csv
        .spec
        .related_images
        .iter()
        .map(|r| (r.image.as_str(), r.name.as_str()))
        .collect();
    spec.related_images = bundle_images(csv)
        .into_iter()
        .filter(|u| u.image != bundle)
        .map(|u| RelatedImage {
            name: related_names
                .iter()
                .find(|(image, _)| *image == u.image)
                .map(|(_, name)| name.to_string())
                .unwrap_or_default(),
            image: u.image,
        })
        .collect();
    manifest
}

fn strings(value: &Option<serde_json::Value>) -> Vec<String> {
    value
        .as_ref()
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .filter(|s| !s.trim().is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv() -> ClusterServiceVersion {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {"name": "acme-db.v1.1.0"},
            "spec": {
                "version": "1.1.0",
                "displayName": "Acme DB",
                "keywords": ["database", ""],
                "links": [{"name": "Docs", "url": "https://acme.example"}, {"name": "no url"}],
                "relatedImages": [
                    {"name": "db", "image": "quay.io/acme/db:1"},
                    {"name": "op", "image": "quay.io/acme/op:1"},
                ],
                "install": {"strategy": "deployment", "spec": {"deployments": [{
                    "name": "acme-db-operator",
                    "spec": {"template": {"spec": {
                        "initContainers": [{"name": "init", "image": "quay.io/acme/init:1"}],
                        "containers": [{
                            "name": "manager",
                            "image": "quay.io/acme/op:1",
                            "env": [{"name": "RELATED_IMAGE_BACKUP", "value": "quay.io/acme/backup:1"}],
                        }],
                    }}},
                }]}},
            },
        }))
        .unwrap()
    }

    #[test]
    fn every_image_is_listed_once_with_where_it_is_used() {
        let uses = bundle_images(&csv());
        let listed: Vec<(&str, &str)> = uses
            .iter()
            .map(|u| (u.image.as_str(), u.used_by.as_str()))
            .collect();
        assert_eq!(
            listed,
            [
                ("quay.io/acme/db:1", "is in the CSV's relatedImages as db"),
                ("quay.io/acme/op:1", "is in the CSV's relatedImages as op"),
                (
                    "quay.io/acme/init:1",
                    "Deployment acme-db-operator init container init runs"
                ),
                (
                    "quay.io/acme/backup:1",
                    "Deployment acme-db-operator container manager names in RELATED_IMAGE_BACKUP"
                ),
            ]
        );
    }

    #[test]
    fn a_manifest_from_a_bundle_carries_its_images_and_display_information() {
        let manifest = manifest_from_bundle(
            "acme-db",
            "quay.io/acme/bundle:1",
            &csv(),
            Some("icon.svg"),
            &["amd64".to_string()],
        );
        assert_eq!(manifest.spec.version, "1.1.0");
        assert_eq!(manifest.spec.display_name, "Acme DB");
        assert_eq!(manifest.spec.keywords, ["database"]);
        assert_eq!(manifest.spec.links.len(), 1);
        let images: Vec<(&str, &str)> = manifest
            .spec
            .related_images
            .iter()
            .map(|r| (r.name.as_str(), r.image.as_str()))
            .collect();
        assert_eq!(
            images,
            [
                ("db", "quay.io/acme/db:1"),
                ("op", "quay.io/acme/op:1"),
                ("", "quay.io/acme/init:1"),
                ("", "quay.io/acme/backup:1"),
            ]
        );
        let report = crate::lint::lint_against_bundle(&manifest, &csv());
        assert!(!report.has_errors(), "{:?}", report.findings);
        let lint = crate::lint::lint_manifest(&manifest, Some(10));
        assert!(!lint.has_errors(), "{:?}", lint.findings);
    }
}
