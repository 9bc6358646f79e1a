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
    #[serde(skip)]
    pub has_icon: bool,
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
}

impl PackageDetail {
    pub fn of(content: &CatalogContent, package: &Package) -> PackageDetail {
        let head = representative(package);
        let metadata = head
            .map(|b| content.bundle_metadata(package, b))
            .unwrap_or_default();
        let channels = package
            .channels
            .values()
            .map(|channel| {
                let graph = UpgradeGraph::build(package, channel);
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
            has_icon: package.icon.is_some(),
        }
    }

    pub fn channel(&self, name: &str) -> Option<&ChannelDetail> {
        self.channels.iter().find(|c| c.name == name)
    }
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
}
