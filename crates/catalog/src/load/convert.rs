//! From a loaded bundle (its CSV and metadata) to the catalog's view of it.

use std::collections::BTreeSet;

use windlass_bundle::Bundle as LoadedBundle;
use windlass_bundle::metadata::Dependency;

use crate::model::{Bundle, ChannelEntry, Gvk, Name, Property, RawJson, RelatedImage};

/// The catalog bundle: `olm.package`, owned APIs as `olm.gvk`, dependencies as
/// `olm.package.required` / `olm.gvk.required`, then `properties.yaml` entries; duplicates removed.
pub fn catalog_bundle(
    loaded: &LoadedBundle,
    package: &str,
    version: semver::Version,
    image: Option<String>,
) -> Bundle {
    let csv = &loaded.csv;
    let mut properties = vec![Property::Package {
        package_name: package.into(),
        version: version.to_string().into(),
    }];
    for crd in csv.owned_crds() {
        properties.push(Property::Gvk(Gvk {
            group: crd.group().into(),
            version: crd.version.as_str().into(),
            kind: crd.kind.as_str().into(),
        }));
    }
    for api in csv.owned_apiservices() {
        properties.push(Property::Gvk(Gvk {
            group: api.group.as_str().into(),
            version: api.version.as_str().into(),
            kind: api.kind.as_str().into(),
        }));
    }
    for dependency in &loaded.dependencies {
        properties.push(match dependency {
            Dependency::Package {
                package_name,
                version,
            } => Property::PackageRequired {
                package_name: package_name.as_str().into(),
                version_range: version.as_str().into(),
            },
            Dependency::Gvk {
                group,
                version,
                kind,
            } => Property::GvkRequired(Gvk {
                group: group.as_str().into(),
                version: version.as_str().into(),
                kind: kind.as_str().into(),
            }),
            Dependency::Other { type_, value } => Property::Other {
                type_: type_.as_str().into(),
                value: RawJson::from_value(value),
            },
        });
    }
    for crd in csv.required_crds() {
        properties.push(Property::GvkRequired(Gvk {
            group: crd.group().into(),
            version: crd.version.as_str().into(),
            kind: crd.kind.as_str().into(),
        }));
    }
    for api in csv.required_apiservices() {
        properties.push(Property::GvkRequired(Gvk {
            group: api.group.as_str().into(),
            version: api.version.as_str().into(),
            kind: api.kind.as_str().into(),
        }));
    }
    for raw in &loaded.properties {
        // The bundle's own `olm.package` was already derived from the CSV.
        if raw["type"] == "olm.package" {
            continue;
        }
        if let Ok(property) = serde_json::from_value::<Property>(raw.clone()) {
            properties.push(property);
        }
    }
    let mut seen = Vec::with_capacity(properties.len());
    properties.retain(|p| {
        if seen.contains(p) {
            false
        } else {
            seen.push(p.clone());
            true
        }
    });
    Bundle {
        name: csv.name().to_string(),
        package: package.into(),
        version,
        related_images: related_images(loaded, image.as_deref()),
        image,
        properties,
    }
}

/// The CSV's `relatedImages`, then deployment images it forgot and the bundle image itself
/// (unnamed), as `opm render` lists them so mirroring tools see every image.
pub fn related_images(loaded: &LoadedBundle, bundle_image: Option<&str>) -> Vec<RelatedImage> {
    let mut out: Vec<RelatedImage> = Vec::new();
    let mut seen = BTreeSet::new();
    for related in &loaded.csv.spec.related_images {
        if !related.image.is_empty() && seen.insert(related.image.clone()) {
            out.push(RelatedImage {
                name: related.name.clone(),
                image: related.image.clone(),
            });
        }
    }
    let deployment_images = loaded
        .csv
        .deployments()
        .iter()
        .flat_map(|d| d.images())
        .map(String::from);
    for image in bundle_image
        .map(String::from)
        .into_iter()
        .chain(deployment_images)
    {
        if !image.is_empty() && seen.insert(image.clone()) {
            out.push(RelatedImage {
                name: String::new(),
                image,
            });
        }
    }
    out
}

/// The bundle's place in a channel: its upgrade edges as the CSV declares them.
pub fn channel_entry(loaded: &LoadedBundle) -> ChannelEntry {
    csv_entry(&loaded.csv)
}

/// [`channel_entry`] from the CSV alone.
pub fn csv_entry(csv: &windlass_bundle::ClusterServiceVersion) -> ChannelEntry {
    ChannelEntry {
        name: csv.name().into(),
        replaces: csv
            .spec
            .replaces
            .as_deref()
            .filter(|r| !r.trim().is_empty())
            .map(Name::from),
        skips: csv
            .spec
            .skips
            .iter()
            .filter(|s| !s.trim().is_empty())
            .map(Name::from)
            .collect(),
        skip_range: csv.skip_range().map(Name::from),
    }
}
