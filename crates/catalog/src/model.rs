//! Plain data types for a catalog. Nothing here talks to a cluster or a registry.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::name::{Name, RawJson};

/// Every package a catalog offers, keyed by package name (sorted, so output is deterministic).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Catalog {
    pub packages: BTreeMap<String, Package>,
}

/// One operator package: its channels and the bundles those channels refer to.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Package {
    pub name: String,
    pub default_channel: Option<String>,
    pub description: Option<String>,
    /// `{base64data, mediatype}` as file-based catalogs carry it; kept verbatim.
    pub icon: Option<RawJson>,
    /// Keyed by channel name.
    pub channels: BTreeMap<String, Channel>,
    /// Keyed by bundle (CSV) name.
    pub bundles: BTreeMap<String, Bundle>,
    pub deprecations: Vec<Deprecation>,
    /// Who publishes the package: from the newest bundle's CSV, or the `olm.package` blob's
    /// provider property.
    pub provider: Option<crate::provider::Provider>,
}

/// A named upgrade stream inside a package.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Channel {
    pub name: String,
    pub package: Name,
    /// In catalog order; the order carries no meaning for upgrades, edges do.
    pub entries: Vec<ChannelEntry>,
}

/// One bundle's place in a channel, with the edges that lead into it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelEntry {
    /// The bundle (CSV) name.
    pub name: Name,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<Name>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skips: Vec<Name>,
    /// A blang/semver range as written in the bundle's `olm.skipRange` annotation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_range: Option<Name>,
}

/// A bundle as a catalog sees it: identity, version and the properties resolution needs.
#[derive(Clone, Debug, PartialEq)]
pub struct Bundle {
    /// The CSV name, unique within the package.
    pub name: String,
    pub package: Name,
    pub version: semver::Version,
    /// Bundle image reference when the bundle came from (or was pushed to) a registry.
    pub image: Option<String>,
    pub properties: Vec<Property>,
    pub related_images: Vec<RelatedImage>,
}

/// An image the operator uses, listed so mirrors and air-gapped installs can find it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelatedImage {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    pub image: String,
}

/// A group/version/kind a bundle provides or requires.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Gvk {
    pub group: Name,
    pub version: Name,
    pub kind: Name,
}

/// A bundle property in file-based-catalog form: `{"type": ..., "value": ...}`.
///
/// The kinds windlass acts on are typed, with interned strings; everything else is kept as
/// compact JSON text so rendering a catalog never drops what its author wrote.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value")]
pub enum Property {
    /// `olm.package`: the bundle's own package and version (exactly one per bundle).
    #[serde(rename = "olm.package")]
    Package {
        #[serde(rename = "packageName")]
        package_name: Name,
        version: Name,
    },
    /// `olm.gvk`: an API the bundle owns.
    #[serde(rename = "olm.gvk")]
    Gvk(Gvk),
    /// `olm.package.required`: another package in a version range.
    #[serde(rename = "olm.package.required")]
    PackageRequired {
        #[serde(rename = "packageName")]
        package_name: Name,
        #[serde(rename = "versionRange")]
        version_range: Name,
    },
    /// `olm.gvk.required`: an API some other bundle must own.
    #[serde(rename = "olm.gvk.required")]
    GvkRequired(Gvk),
    /// Any other property type (`olm.constraint`, `olm.csv.metadata`, ...), kept as written.
    #[serde(untagged)]
    Other {
        #[serde(rename = "type")]
        type_: Name,
        value: RawJson,
    },
}

/// An `olm.deprecations` entry: a package, channel or bundle marked deprecated, with why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deprecation {
    pub reference: DeprecationReference,
    pub message: String,
}

/// What a deprecation points at: `schema` is `olm.package`, `olm.channel` or `olm.bundle`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeprecationReference {
    pub schema: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

impl Bundle {
    /// APIs this bundle owns (its `olm.gvk` properties).
    pub fn provided_gvks(&self) -> impl Iterator<Item = &Gvk> {
        self.properties.iter().filter_map(|p| match p {
            Property::Gvk(gvk) => Some(gvk),
            _ => None,
        })
    }

    /// APIs this bundle needs some other bundle to own (`olm.gvk.required`).
    pub fn required_gvks(&self) -> impl Iterator<Item = &Gvk> {
        self.properties.iter().filter_map(|p| match p {
            Property::GvkRequired(gvk) => Some(gvk),
            _ => None,
        })
    }

    /// The values of this bundle's `olm.constraint` properties, as written (parse them with
    /// [`crate::Constraint::parse`]). Read from the kept JSON text on each call: few bundles
    /// carry constraints, so they are not kept parsed.
    pub fn constraint_values(&self) -> impl Iterator<Item = serde_json::Value> + '_ {
        self.properties.iter().filter_map(|p| match p {
            Property::Other { type_, value } if type_ == crate::constraint::CONSTRAINT_TYPE => {
                Some(value.to_value())
            }
            _ => None,
        })
    }

    /// Packages this bundle needs, each with the version range as written.
    pub fn required_packages(&self) -> impl Iterator<Item = (&str, &str)> {
        self.properties.iter().filter_map(|p| match p {
            Property::PackageRequired {
                package_name,
                version_range,
            } => Some((package_name.as_str(), version_range.as_str())),
            _ => None,
        })
    }
}

impl Package {
    /// The channel a subscription uses when it names none: the declared default, or the only
    /// channel when there is exactly one.
    pub fn default_channel(&self) -> Option<&Channel> {
        match &self.default_channel {
            Some(name) => self.channels.get(name),
            None if self.channels.len() == 1 => self.channels.values().next(),
            None => None,
        }
    }
}

impl Channel {
    pub fn entry(&self, name: &str) -> Option<&ChannelEntry> {
        self.entries.iter().find(|e| e.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_round_trip_in_file_based_catalog_form() {
        let json = serde_json::json!([
            {"type": "olm.package", "value": {"packageName": "etcd", "version": "0.9.4"}},
            {"type": "olm.gvk", "value": {"group": "etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdCluster"}},
            {"type": "olm.package.required", "value": {"packageName": "prometheus", "versionRange": ">=0.47.0 <0.48.0"}},
            {"type": "olm.gvk.required", "value": {"group": "monitoring.coreos.com", "version": "v1", "kind": "Prometheus"}},
            {"type": "olm.constraint", "value": {"failureMessage": "x", "cel": {"rule": "true"}}}
        ]);
        let props: Vec<Property> = serde_json::from_value(json.clone()).unwrap();
        assert!(matches!(props[0], Property::Package { .. }));
        assert!(matches!(props[1], Property::Gvk(_)));
        assert!(matches!(props[2], Property::PackageRequired { .. }));
        assert!(matches!(props[3], Property::GvkRequired(_)));
        assert!(matches!(&props[4], Property::Other { type_, .. } if type_ == "olm.constraint"));
        assert_eq!(serde_json::to_value(&props).unwrap(), json);
    }
}
