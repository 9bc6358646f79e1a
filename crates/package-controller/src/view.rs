//! The Package views one served catalog should have, and what it takes to get there (pure).

use std::collections::{BTreeMap, BTreeSet};

use windlass_api::{
    PackageStatus,
    names::{labels, package_view},
    package::{PackageChannel, PackageProvider},
};
use windlass_catalog::listing::summarize;
use windlass_catalog_store::ServedCatalog;

/// One Package object as it should be.
#[derive(Clone, Debug, PartialEq)]
pub struct DesiredView {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub status: PackageStatus,
}

/// The views of every package `served` has (delisted ones included, shown as not listed).
pub fn desired(catalog: &str, served: &ServedCatalog) -> Vec<DesiredView> {
    let delisting = &served.listing.delisting;
    served
        .catalog
        .packages
        .values()
        .map(|package| {
            let summary = summarize(package, delisting.entry(&package.name));
            let held_back: BTreeSet<String> = served
                .listing
                .held_back
                .iter()
                // A refused second copy of a CSV the catalog offers is not a missing version.
                .filter(|h| h.package == package.name && !package.bundles.contains_key(&h.bundle))
                .map(|h| {
                    h.version
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_else(|| h.bundle.clone())
                })
                .collect();
            let versions = |list: &[semver::Version]| -> Vec<String> {
                list.iter().map(ToString::to_string).collect()
            };
            let delisted_versions = versions(&summary.delisted_versions);
            let delisted_summary =
                match (delisting.entry(&package.name), delisted_versions.is_empty()) {
                    (Some(entry), _) if entry.whole_package() => "all".to_string(),
                    (_, true) => String::new(),
                    (_, false) => delisted_versions.join(","),
                };
            let status = PackageStatus {
                package: package.name.clone(),
                catalog: catalog.to_string(),
                default_channel: summary.default_channel.clone(),
                latest_version: summary.latest_version.as_ref().map(ToString::to_string),
                provider: summary.provider.as_ref().map(|p| PackageProvider {
                    name: p.name.clone(),
                    names: p.names.clone(),
                    type_: p.type_.to_string(),
                    url: p.url.clone(),
                }),
                listed: summary.listed,
                channel_summary: summary
                    .channels
                    .iter()
                    .map(|c| {
                        format!(
                            "{}={}",
                            c.name,
                            c.version
                                .as_ref()
                                .map(ToString::to_string)
                                .unwrap_or_else(|| "-".into())
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(","),
                channels: summary
                    .channels
                    .iter()
                    .map(|c| PackageChannel {
                        name: c.name.clone(),
                        head: c.head.clone(),
                        version: c.version.as_ref().map(ToString::to_string),
                    })
                    .collect(),
                versions: versions(&summary.versions),
                delisted_versions,
                delisted_summary,
                delisted_reason: summary.delisted_reason.clone(),
                held_back: held_back.into_iter().collect(),
            };
            DesiredView {
                name: package_view::name(catalog, &package.name),
                labels: view_labels(catalog, &package.name),
                status,
            }
        })
        .collect()
}

/// The labels of a view: windlass manages it; its catalog and package when they fit.
pub fn view_labels(catalog: &str, package: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::from([(
        labels::MANAGED_BY.to_string(),
        labels::MANAGED_BY_VALUE.to_string(),
    )]);
    if let Some(value) = package_view::label_value(catalog) {
        out.insert(labels::CATALOG.to_string(), value.to_string());
    }
    if let Some(value) = package_view::label_value(package) {
        out.insert(labels::PACKAGE.to_string(), value.to_string());
    }
    out
}

/// A view as it is in the cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveView<'a> {
    pub name: &'a str,
    pub labels: &'a BTreeMap<String, String>,
    /// The owners' uids.
    pub owners: Vec<&'a str>,
    pub status: Option<&'a PackageStatus>,
}

/// What to write: views to apply (metadata when `with_metadata`, else status only), and the
/// views to delete.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan<'a> {
    pub apply: Vec<(&'a DesiredView, bool)>,
    pub delete: Vec<String>,
}

/// Compares the desired views of catalog `catalog` (uid `catalog_uid`) with the live views
/// that belong to it (by name, label or status), so a settled catalog writes nothing.
pub fn plan<'a>(
    catalog: &str,
    catalog_uid: &str,
    desired: &'a [DesiredView],
    live: &[LiveView<'_>],
) -> Plan<'a> {
    let by_name: BTreeMap<&str, &LiveView> = live.iter().map(|l| (l.name, l)).collect();
    let mut plan = Plan::default();
    for view in desired {
        match by_name.get(view.name.as_str()) {
            None => plan.apply.push((view, true)),
            Some(live) => {
                let metadata_ok = view
                    .labels
                    .iter()
                    .all(|(k, v)| live.labels.get(k) == Some(v))
                    && live.owners.contains(&catalog_uid);
                let status_ok = live.status == Some(&view.status);
                if !metadata_ok || !status_ok {
                    plan.apply.push((view, !metadata_ok));
                }
            }
        }
    }
    let wanted: BTreeSet<&str> = desired.iter().map(|d| d.name.as_str()).collect();
    for view in live {
        let ours = view.labels.get(labels::CATALOG).map(String::as_str) == Some(catalog)
            || view.status.is_some_and(|s| s.catalog == catalog);
        if ours && !wanted.contains(view.name) {
            plan.delete.push(view.name.to_string());
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use windlass_catalog::{
        Catalog, Channel, ChannelEntry, Package, Provider, ProviderType,
        listing::{Delisting, HeldBack},
        model::Bundle,
    };
    use windlass_catalog_store::{ListingState, ServedCatalog};

    use super::*;

    fn bundle(package: &str, version: &str) -> Bundle {
        Bundle {
            name: format!("{package}.v{version}"),
            package: package.into(),
            version: semver::Version::parse(version).unwrap(),
            image: None,
            properties: Vec::new(),
            related_images: Vec::new(),
        }
    }

    /// `acme-db` 1.0.0 <- 1.0.1 <- 1.1.0 on stable (default) and 1.1.0 alone on fast.
    fn served(delisted: &[(&str, &[&str], &str)]) -> ServedCatalog {
        let versions = ["1.0.0", "1.0.1", "1.1.0"];
        let mut package = Package {
            name: "acme-db".into(),
            default_channel: Some("stable".into()),
            provider: Some(Provider {
                name: Some("Acme".into()),
                names: BTreeMap::from([("zh".into(), "阿克米".into())]),
                type_: ProviderType::Certified,
                url: None,
            }),
            ..Default::default()
        };
        let mut entries = Vec::new();
        for (i, version) in versions.iter().enumerate() {
            let b = bundle("acme-db", version);
            entries.push(ChannelEntry {
                name: b.name.as_str().into(),
                replaces: (i > 0).then(|| format!("acme-db.v{}", versions[i - 1]).into()),
                ..Default::default()
            });
            package.bundles.insert(b.name.clone(), b);
        }
        package.channels.insert(
            "stable".into(),
            Channel {
                name: "stable".into(),
                package: "acme-db".into(),
                entries,
            },
        );
        package.channels.insert(
            "fast".into(),
            Channel {
                name: "fast".into(),
                package: "acme-db".into(),
                entries: vec![ChannelEntry {
                    name: "acme-db.v1.1.0".into(),
                    ..Default::default()
                }],
            },
        );
        let owned: Vec<(String, Vec<String>, String)> = delisted
            .iter()
            .map(|(p, v, r)| {
                (
                    p.to_string(),
                    v.iter().map(|s| s.to_string()).collect(),
                    r.to_string(),
                )
            })
            .collect();
        let delisting = Delisting::from_entries(
            owned
                .iter()
                .map(|(p, v, r)| (p.as_str(), v.as_slice(), r.as_str())),
        )
        .0;
        ServedCatalog {
            name: "vendor".into(),
            priority: 0,
            digest: "sha256:1".into(),
            catalog: std::sync::Arc::new(Catalog {
                packages: [("acme-db".to_string(), package)].into(),
            }),
            bundles: Default::default(),
            registry: Default::default(),
            credentials: BTreeMap::new(),
            verification: None,
            pulled_from: None,
            listing: ListingState {
                held_back: vec![
                    HeldBack {
                        package: "acme-db".into(),
                        bundle: "acme-db.v1.2.0".into(),
                        version: Some(semver::Version::new(1, 2, 0)),
                        source: "r/acme-db:1.2.0".into(),
                        findings: vec!["error[csv-required-field] ...".into()],
                    },
                    // The refused second copy of a CSV that is offered.
                    HeldBack {
                        package: "acme-db".into(),
                        bundle: "acme-db.v1.0.0".into(),
                        version: None,
                        source: "r/other:1.0.0".into(),
                        findings: vec!["error: already added".into()],
                    },
                ],
                problems: Vec::new(),
                delisting,
            },
        }
    }

    #[test]
    fn a_view_says_what_new_installs_get_and_what_is_held_back() {
        let views = desired("vendor", &served(&[]));
        assert_eq!(views.len(), 1);
        let view = &views[0];
        assert_eq!(view.name, "acme-db.vendor");
        assert_eq!(view.labels[labels::CATALOG], "vendor");
        assert_eq!(view.labels[labels::PACKAGE], "acme-db");
        let status = &view.status;
        assert_eq!(status.latest_version.as_deref(), Some("1.1.0"));
        assert_eq!(status.default_channel.as_deref(), Some("stable"));
        assert!(status.listed);
        assert_eq!(status.versions, ["1.1.0", "1.0.1", "1.0.0"]);
        assert_eq!(status.channel_summary, "fast=1.1.0,stable=1.1.0");
        let provider = status.provider.as_ref().unwrap();
        assert_eq!(
            (provider.name.as_deref(), provider.type_.as_str()),
            (Some("Acme"), "certified")
        );
        assert_eq!(provider.names["zh"], "阿克米");
        assert_eq!(status.held_back, ["1.2.0"]);
        assert_eq!(status.delisted_summary, "");
    }

    #[test]
    fn delisted_versions_and_packages_show_as_not_listed() {
        let views = desired("vendor", &served(&[("acme-db", &["1.1.0"], "CVE-2")]));
        let status = &views[0].status;
        assert!(status.listed);
        assert_eq!(status.latest_version.as_deref(), Some("1.0.1"));
        assert_eq!(status.versions, ["1.0.1", "1.0.0"]);
        assert_eq!(status.delisted_versions, ["1.1.0"]);
        assert_eq!(status.delisted_summary, "1.1.0");
        assert_eq!(status.delisted_reason.as_deref(), Some("CVE-2"));
        // The fast channel had only 1.1.0: nothing to install from it now.
        assert_eq!(status.channel_summary, "fast=-,stable=1.0.1");

        let views = desired("vendor", &served(&[("acme-db", &[], "retired")]));
        let status = &views[0].status;
        assert!(!status.listed);
        assert_eq!(status.latest_version, None);
        assert!(status.versions.is_empty());
        assert_eq!(status.delisted_summary, "all");
    }

    fn live<'a>(view: &'a DesiredView, owner: &'a str) -> LiveView<'a> {
        LiveView {
            name: &view.name,
            labels: &view.labels,
            owners: vec![owner],
            status: Some(&view.status),
        }
    }

    #[test]
    fn a_settled_catalog_writes_nothing_and_edits_are_put_back() {
        let views = desired("vendor", &served(&[]));
        let settled = [live(&views[0], "uid-1")];
        assert_eq!(plan("vendor", "uid-1", &views, &settled), Plan::default());

        // Nothing there yet: created with its metadata.
        let created = plan("vendor", "uid-1", &views, &[]);
        assert_eq!(created.apply, [(&views[0], true)]);

        // A hand edit of the status: only the status is written back.
        let mut edited_status = views[0].status.clone();
        edited_status.listed = false;
        let edited = [LiveView {
            status: Some(&edited_status),
            ..live(&views[0], "uid-1")
        }];
        assert_eq!(
            plan("vendor", "uid-1", &views, &edited).apply,
            [(&views[0], false)]
        );

        // A Catalog of the same name made again (another uid): owners are set again.
        assert_eq!(
            plan("vendor", "uid-2", &views, &settled).apply,
            [(&views[0], true)]
        );
    }

    #[test]
    fn views_of_packages_the_catalog_no_longer_has_are_deleted() {
        let views = desired("vendor", &served(&[]));
        let gone_labels = view_labels("vendor", "old-package");
        let gone_status = PackageStatus {
            package: "old-package".into(),
            catalog: "vendor".into(),
            ..Default::default()
        };
        let other_labels = view_labels("community", "x");
        let live_views = [
            live(&views[0], "uid-1"),
            LiveView {
                name: "old-package.vendor",
                labels: &gone_labels,
                owners: vec!["uid-1"],
                status: Some(&gone_status),
            },
            // Another catalog's view is none of this catalog's business.
            LiveView {
                name: "x.community",
                labels: &other_labels,
                owners: vec!["uid-9"],
                status: None,
            },
        ];
        let plan = plan("vendor", "uid-1", &views, &live_views);
        assert!(plan.apply.is_empty());
        assert_eq!(plan.delete, ["old-package.vendor"]);
    }
}
