//! Everything about one package, as `GET /api/v1/packages/<name>` returns it and the package
//! page shows it: channels with their versions and upgrade graphs, install modes, owned and
//! required APIs, required packages, the provider, and the sample objects.

use serde::Serialize;
use windlass_catalog::Package;
use windlass_resolver::graph::{UpgradeGraph, compare_nodes};

use crate::{
    index::{CatalogContent, representative},
    metadata::BundleMetadata,
};

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageDetail {
    pub catalog: String,
    pub name: String,
    pub display_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_channel: Option<String>,
    /// The version the package is presented by (its default channel's head).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latest_version: Option<String>,
    /// The presented version's metadata: descriptions, provider, keywords, install modes,
    /// owned and required APIs, samples.
    #[serde(flatten)]
    pub metadata: BundleMetadata,
    /// Packages the presented version needs, with their version ranges.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub required_packages: Vec<RequiredPackage>,
    pub channels: Vec<ChannelDetail>,
    /// Every version, newest first, with the channels it is in.
    pub versions: Vec<VersionDetail>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deprecations: Vec<String>,
    /// What the catalog delists of the package; absent when nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delisted: Option<DelistedDetail>,
    #[serde(skip)]
    pub has_icon: bool,
}

/// What a catalog delists of one package, and why.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DelistedDetail {
    /// The Catalog whose `spec.delisted` says so.
    pub catalog: String,
    /// The whole package: new installs cannot choose any version.
    pub whole: bool,
    /// The delisted versions the catalog has, newest first (empty when whole).
    pub versions: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// "version 1.0.1 of package acme-db is delisted by catalog vendor (CVE-1)", one per
    /// version.
    pub messages: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequiredPackage {
    pub package: String,
    pub version_range: String,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelDetail {
    pub name: String,
    /// The channel head; absent when the channel has no single head.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// Versions in this channel, newest first.
    pub entries: Vec<EntryDetail>,
    /// The upgrade graph: which version may follow which, and by which rule.
    pub edges: Vec<EdgeDetail>,
    /// What is wrong with the channel (no single head, a cycle, ...).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryDetail {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skips: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip_range: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct EdgeDetail {
    pub from: String,
    pub to: String,
    /// replaces | skips | skipRange
    pub kind: &'static str,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionDetail {
    pub name: String,
    pub version: String,
    pub channels: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// The catalog delists this version (or the whole package).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub delisted: bool,
}

impl PackageDetail {
    pub fn of(content: &CatalogContent, package: &Package) -> PackageDetail {
        // Channels, graphs and the head show what new installs get: delisted versions spliced
        // out. A package delisted whole shows what it had.
        let listed = content.listed(package);
        let shown = listed.as_deref().unwrap_or(package);
        let head = representative(shown);
        let metadata = head
            .map(|b| content.bundle_metadata(shown, b))
            .unwrap_or_default();
        let delisted = delisted_detail(content, package);
        let channels = shown
            .channels
            .values()
            .map(|channel| {
                let graph = UpgradeGraph::build(shown, channel);
                let mut nodes: Vec<_> = graph.nodes().collect();
                nodes.sort_by(|a, b| compare_nodes(b, a));
                ChannelDetail {
                    name: channel.name.clone(),
                    head: graph.head().map(|h| h.name.clone()),
                    entries: nodes
                        .iter()
                        .map(|node| {
                            let entry = channel.entry(&node.name);
                            EntryDetail {
                                name: node.name.clone(),
                                version: node.version.as_ref().map(ToString::to_string),
                                replaces: entry
                                    .and_then(|e| e.replaces.as_ref())
                                    .map(ToString::to_string),
                                skips: entry
                                    .map(|e| e.skips.iter().map(ToString::to_string).collect())
                                    .unwrap_or_default(),
                                skip_range: entry
                                    .and_then(|e| e.skip_range.as_ref())
                                    .map(ToString::to_string),
                            }
                        })
                        .collect(),
                    edges: graph
                        .edges()
                        .into_iter()
                        .map(|(from, to, kind)| EdgeDetail {
                            from: from.name.clone(),
                            to: to.name.clone(),
                            kind: kind.as_str(),
                        })
                        .collect(),
                    problems: graph.problems().iter().map(ToString::to_string).collect(),
                }
            })
            .collect();
        let mut versions: Vec<VersionDetail> = package
            .bundles
            .values()
            .map(|bundle| VersionDetail {
                name: bundle.name.clone(),
                version: bundle.version.to_string(),
                channels: package
                    .channels
                    .values()
                    .filter(|c| c.entry(&bundle.name).is_some())
                    .map(|c| c.name.clone())
                    .collect(),
                image: bundle.image.clone().filter(|i| !i.is_empty()),
                delisted: content
                    .delisting
                    .covering(&package.name, &bundle.version)
                    .is_some(),
            })
            .collect();
        versions.sort_by(|a, b| {
            let parse = |v: &str| semver::Version::parse(v).ok();
            parse(&b.version).cmp(&parse(&a.version))
        });
        PackageDetail {
            catalog: content.name.clone(),
            name: package.name.clone(),
            display_name: metadata.title(&package.name).to_string(),
            default_channel: package.default_channel.clone(),
            latest_version: head.map(|b| b.version.to_string()),
            required_packages: head
                .map(|b| {
                    b.required_packages()
                        .map(|(package, range)| RequiredPackage {
                            package: package.to_string(),
                            version_range: range.to_string(),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            metadata,
            channels,
            versions,
            deprecations: package
                .deprecations
                .iter()
                .map(|d| {
                    let what = if d.reference.name.is_empty() {
                        d.reference.schema.clone()
                    } else {
                        format!("{} {}", d.reference.schema, d.reference.name)
                    };
                    format!("{what}: {}", d.message)
                })
                .collect(),
            delisted,
            has_icon: package.icon.is_some(),
        }
    }

    pub fn channel(&self, name: &str) -> Option<&ChannelDetail> {
        self.channels.iter().find(|c| c.name == name)
    }
}

fn delisted_detail(content: &CatalogContent, package: &Package) -> Option<DelistedDetail> {
    let entry = content.delisting.entry(&package.name)?;
    let mut versions: Vec<&semver::Version> = package
        .bundles
        .values()
        .map(|b| &b.version)
        .filter(|v| entry.covers(v))
        .collect();
    versions.sort();
    versions.dedup();
    versions.reverse();
    let messages = if entry.whole_package() {
        content
            .delisting
            .whole(&package.name)
            .map(|d| d.by(&content.name))
            .into_iter()
            .collect()
    } else {
        versions
            .iter()
            .filter_map(|v| content.delisting.covering(&package.name, v))
            .map(|d| d.by(&content.name))
            .collect()
    };
    Some(DelistedDetail {
        catalog: content.name.clone(),
        whole: entry.whole_package(),
        versions: if entry.whole_package() {
            Vec::new()
        } else {
            versions.iter().map(ToString::to_string).collect()
        },
        reason: (!entry.reason.trim().is_empty()).then(|| entry.reason.trim().to_string()),
        messages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic;

    #[test]
    fn a_package_detail_lists_channels_versions_graph_and_metadata() {
        let content = synthetic::content("synthetic", synthetic::catalog(1, 4));
        let package = &content.catalog.packages["synthetic-0"];
        let detail = PackageDetail::of(&content, package);
        assert_eq!(detail.display_name, "Synthetic Operator 0");
        assert_eq!(detail.latest_version.as_deref(), Some("1.3.0"));
        let stable = detail.channel("stable").unwrap();
        assert_eq!(stable.head.as_deref(), Some("synthetic-0.v1.3.0"));
        let versions: Vec<_> = stable
            .entries
            .iter()
            .map(|e| e.version.clone().unwrap())
            .collect();
        assert_eq!(versions, ["1.3.0", "1.2.0", "1.1.0", "1.0.0"]);
        let kinds = |kind: &str| stable.edges.iter().filter(|e| e.kind == kind).count();
        assert_eq!(kinds("replaces"), 3);
        assert_eq!(kinds("skips"), 1);
        // 1.3.0's skipRange reaches 1.0.0 and 1.1.0 (1.2.0 is its replaces edge).
        assert_eq!(kinds("skipRange"), 2);
        assert_eq!(detail.versions[0].channels, ["stable"]);
        assert_eq!(detail.metadata.owned_apis[0].kind, "Widget0");
        assert_eq!(detail.metadata.examples.len(), 1);
        let json = serde_json::to_value(&detail).unwrap();
        assert_eq!(json["provider"]["type"], "certified");
        assert_eq!(json["installModes"][0]["type"], "OwnNamespace");
        assert_eq!(json["channels"][0]["edges"][0]["kind"], "replaces");
    }

    #[test]
    fn delisted_versions_are_marked_and_spliced_out_of_the_channels() {
        let mut content = synthetic::content("vendor", synthetic::catalog(1, 4));
        content.delisting = windlass_catalog::listing::Delisting::from_entries([(
            "synthetic-0",
            ["1.3.0".to_string(), "1.1.0".to_string()].as_slice(),
            "CVE-1",
        )])
        .0;
        let package = &content.catalog.packages["synthetic-0"];
        let detail = PackageDetail::of(&content, package);
        assert_eq!(detail.latest_version.as_deref(), Some("1.2.0"));
        let stable = detail.channel("stable").unwrap();
        assert_eq!(stable.head.as_deref(), Some("synthetic-0.v1.2.0"));
        let shown: Vec<_> = stable
            .entries
            .iter()
            .filter_map(|e| e.version.clone())
            .collect();
        assert_eq!(shown, ["1.2.0", "1.0.0"]);
        let flags: Vec<_> = detail
            .versions
            .iter()
            .map(|v| (v.version.as_str(), v.delisted))
            .collect();
        assert_eq!(
            flags,
            [
                ("1.3.0", true),
                ("1.2.0", false),
                ("1.1.0", true),
                ("1.0.0", false)
            ]
        );
        let delisted = detail.delisted.as_ref().unwrap();
        assert!(!delisted.whole);
        assert_eq!(delisted.versions, ["1.3.0", "1.1.0"]);
        assert_eq!(
            delisted.messages[0],
            "version 1.3.0 of package synthetic-0 is delisted by catalog vendor (CVE-1)"
        );
        let json = serde_json::to_value(&detail).unwrap();
        assert_eq!(json["delisted"]["catalog"], "vendor");
        assert_eq!(json["versions"][0]["delisted"], true);
        assert!(json["versions"][1].get("delisted").is_none());
    }

    #[test]
    fn a_package_delisted_whole_shows_what_it_had() {
        let mut content = synthetic::content("vendor", synthetic::catalog(1, 2));
        content.delisting = windlass_catalog::listing::Delisting::from_entries([(
            "synthetic-0",
            [].as_slice(),
            "",
        )])
        .0;
        let detail = PackageDetail::of(&content, &content.catalog.packages["synthetic-0"]);
        assert_eq!(detail.latest_version.as_deref(), Some("1.1.0"));
        assert!(detail.versions.iter().all(|v| v.delisted));
        let delisted = detail.delisted.unwrap();
        assert!(delisted.whole && delisted.versions.is_empty() && delisted.reason.is_none());
        assert_eq!(
            delisted.messages,
            ["package synthetic-0 is delisted by catalog vendor"]
        );
        let plain = synthetic::content("vendor", synthetic::catalog(1, 2));
        assert!(
            PackageDetail::of(&plain, &plain.catalog.packages["synthetic-0"])
                .delisted
                .is_none()
        );
    }
}
