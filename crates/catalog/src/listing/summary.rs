//! One package as a hub shows it.

use std::collections::BTreeSet;

use crate::model::Package;
use crate::provider::Provider;
use crate::validate::channel_heads;

use super::DelistEntry;

/// A channel and the version new installs of it get.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelSummary {
    pub name: String,
    /// The CSV new installs of the channel get; `None` when every version is delisted.
    pub head: Option<String>,
    pub version: Option<semver::Version>,
}

/// What a hub page says about one package of one catalog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackageSummary {
    pub package: String,
    pub default_channel: Option<String>,
    /// The version new installs of the default channel get (the newest listed version when
    /// the package has no usable default channel).
    pub latest_version: Option<semver::Version>,
    pub provider: Option<Provider>,
    /// Whether new installs may choose any version of the package.
    pub listed: bool,
    /// Every channel, with what new installs of it get.
    pub channels: Vec<ChannelSummary>,
    /// Versions new installs may choose, newest first.
    pub versions: Vec<semver::Version>,
    /// Versions delisted by the catalog's admin, newest first.
    pub delisted_versions: Vec<semver::Version>,
    /// Why, when anything is delisted.
    pub delisted_reason: Option<String>,
}

/// Summarizes `package` as offered (after the listing gate), with what its catalog delists.
pub fn summarize(package: &Package, delisted: Option<&DelistEntry>) -> PackageSummary {
    let listed = match delisted {
        Some(entry) if entry.whole_package() => None,
        Some(entry) => {
            let names: BTreeSet<String> = package
                .bundles
                .values()
                .filter(|b| entry.covers(&b.version))
                .map(|b| b.name.clone())
                .collect();
            let mut listed = package.clone();
            super::without_bundles(&mut listed, &names);
            Some(listed)
        }
        None => Some(package.clone()),
    };
    let newest_first = |versions: BTreeSet<semver::Version>| versions.into_iter().rev().collect();
    let (versions, delisted_versions): (BTreeSet<_>, BTreeSet<_>) = package
        .bundles
        .values()
        .map(|b| b.version.clone())
        .partition(|v| !delisted.is_some_and(|d| d.covers(v)));
    let channels: Vec<ChannelSummary> = package
        .channels
        .keys()
        .map(|name| {
            let head = listed
                .as_ref()
                .and_then(|p| Some((p, p.channels.get(name)?)))
                .and_then(|(p, channel)| {
                    // Several heads (a channel the gate would refuse) show the newest.
                    channel_heads(channel)
                        .into_iter()
                        .filter_map(|h| p.bundles.get(h))
                        .max_by(|a, b| a.version.cmp(&b.version))
                });
            ChannelSummary {
                name: name.clone(),
                head: head.map(|b| b.name.clone()),
                version: head.map(|b| b.version.clone()),
            }
        })
        .collect();
    let latest_version = package
        .default_channel
        .as_ref()
        .and_then(|d| channels.iter().find(|c| &c.name == d))
        .and_then(|c| c.version.clone())
        .or_else(|| match package.default_channel() {
            // No usable default channel: the newest version anyone may install.
            None => versions.iter().next_back().cloned(),
            Some(_) => None,
        });
    PackageSummary {
        package: package.name.clone(),
        default_channel: package.default_channel.clone(),
        latest_version,
        provider: package.provider.clone(),
        listed: !versions.is_empty(),
        channels,
        versions: newest_first(versions),
        delisted_versions: newest_first(delisted_versions),
        delisted_reason: delisted
            .map(|d| d.reason.trim().to_string())
            .filter(|r| !r.is_empty()),
    }
}
