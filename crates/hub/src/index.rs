//! The hub's index over the catalogs a person may see: one summary per (catalog, package),
//! searched and filtered in memory.
//!
//! Each summary keeps a lower-cased haystack (name, display name, descriptions, provider,
//! keywords), so a search is a scan of short strings with no allocation per package.

use std::{borrow::Cow, collections::BTreeMap, sync::Arc, time::SystemTime};

use serde::Serialize;
use windlass_catalog::{Bundle, Catalog, Package, listing::Delisting};

use crate::{
    markdown,
    metadata::{BundleMetadata, Provider},
};

/// The provider types a filter may ask for, in the order the page offers them.
pub const PROVIDER_TYPES: [&str; 4] = ["platform", "certified", "community", "custom"];

/// One catalog's content as the hub serves it.
#[derive(Debug)]
pub struct CatalogContent {
    /// The Catalog object's name.
    pub name: String,
    pub display_name: Option<String>,
    /// Higher wins when two catalogs offer a package of the same name.
    pub priority: i32,
    /// The digest the content was read at.
    pub digest: String,
    /// Shared with whoever read it: a large catalog is never copied for the hub.
    pub catalog: Arc<Catalog>,
    /// Metadata read from bundles' CSVs, by CSV name, where the hub could read them (the
    /// built-in catalog, bundle images); otherwise the `olm.csv.metadata` properties count.
    pub csv_metadata: BTreeMap<String, BundleMetadata>,
    /// When the hub read this content: the `Last-Modified` of its read API.
    pub loaded_at: SystemTime,
    /// What the Catalog's spec delists now (it changes without the content changing).
    pub delisting: Delisting,
}

impl CatalogContent {
    /// The package as new installs may choose from it: `None` when the catalog delists it
    /// whole, else without its delisted versions (channels spliced around them); copied only
    /// when something of it is delisted.
    pub fn listed<'a>(&self, package: &'a Package) -> Option<Cow<'a, Package>> {
        match self.delisting.entry(&package.name) {
            None => Some(Cow::Borrowed(package)),
            Some(_) => self.delisting.listed(package).map(Cow::Owned),
        }
    }

    /// Whether the catalog delists the whole package.
    pub fn delists_whole(&self, package: &str) -> bool {
        self.delisting.whole(package).is_some()
    }

    /// The metadata of one bundle: read from its CSV, else from its `olm.csv.metadata`
    /// property, else nothing but the package's own description.
    pub fn bundle_metadata(&self, package: &Package, bundle: &Bundle) -> BundleMetadata {
        if let Some(meta) = self.csv_metadata.get(&bundle.name) {
            return meta.clone();
        }
        let mut meta = BundleMetadata::from_properties(&bundle.properties).unwrap_or_default();
        if meta.description.is_none() {
            meta.description = package.description.clone();
        }
        meta
    }
}

/// The bundle a package is presented by: the head of its default channel, else its highest
/// version.
pub fn representative(package: &Package) -> Option<&Bundle> {
    let head = package.default_channel().and_then(|channel| {
        let heads = windlass_catalog::validate::channel_heads(channel);
        match heads.as_slice() {
            [one] => package.bundles.get(*one),
            _ => None,
        }
    });
    head.or_else(|| {
        package
            .bundles
            .values()
            .max_by(|a, b| a.version.cmp(&b.version))
    })
}

/// A package as the list shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageSummary {
    pub catalog: String,
    pub name: String,
    pub display_name: String,
    pub short_description: String,
    pub provider: Provider,
    pub keywords: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_channel: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latest_version: Option<String>,
    pub has_icon: bool,
    /// The catalog delists the whole package: new installs cannot choose it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub delisted: bool,
    #[serde(skip)]
    haystack: String,
    #[serde(skip)]
    sort_key: String,
}

impl PackageSummary {
    fn of(content: &CatalogContent, package: &Package) -> PackageSummary {
        // Presented by what new installs get; a package delisted whole by what it had.
        let listed = content.listed(package);
        let head = representative(listed.as_deref().unwrap_or(package));
        let meta = head
            .map(|b| content.bundle_metadata(package, b))
            .unwrap_or_default();
        let display_name = meta.title(&package.name).to_string();
        let short_description = meta
            .short_description
            .clone()
            .or_else(|| {
                meta.description
                    .as_deref()
                    .map(|d| markdown::summary(d, 160))
            })
            .unwrap_or_default();
        let haystack = [
            package.name.as_str(),
            display_name.as_str(),
            short_description.as_str(),
            meta.provider.name.as_deref().unwrap_or_default(),
            meta.keywords.join(" ").as_str(),
        ]
        .join("\n")
        .to_lowercase();
        PackageSummary {
            catalog: content.name.clone(),
            name: package.name.clone(),
            sort_key: display_name.to_lowercase(),
            display_name,
            short_description,
            provider: meta.provider,
            keywords: meta.keywords,
            default_channel: package.default_channel.clone(),
            latest_version: head.map(|b| b.version.to_string()),
            has_icon: package.icon.is_some(),
            delisted: listed.is_none(),
            haystack,
        }
    }
}

/// What a search asks for. Empty fields do not filter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query {
    /// Words that must all appear (case-insensitive) in the name, display name, description,
    /// provider or keywords.
    pub q: String,
    pub provider_type: Option<String>,
    /// A keyword the package must carry (case-insensitive).
    pub keyword: Option<String>,
    pub catalog: Option<String>,
    /// Also packages a catalog delists whole (`delisted=include`), which new installs cannot
    /// choose and are otherwise left out.
    pub delisted: bool,
}

impl Query {
    /// From a URL query string (`q=&providerType=&keyword=&catalog=&delisted=include`).
    pub fn parse(query: &str) -> Query {
        let mut out = Query::default();
        for (key, value) in form_urlencoded::parse(query.as_bytes()) {
            let value = value.trim().to_string();
            let some = (!value.is_empty()).then_some(value.clone());
            match key.as_ref() {
                "q" => out.q = value,
                "providerType" => out.provider_type = some,
                "keyword" => out.keyword = some,
                "catalog" => out.catalog = some,
                "delisted" => out.delisted = value == "include",
                _ => {}
            }
        }
        out
    }
}

/// Every package of every catalog, ready to search.
#[derive(Debug, Default)]
pub struct HubIndex {
    catalogs: Vec<Arc<CatalogContent>>,
    /// Sorted by display name, then catalog.
    packages: Vec<PackageSummary>,
}

impl HubIndex {
    pub fn new(mut catalogs: Vec<Arc<CatalogContent>>) -> HubIndex {
        catalogs.sort_by(|a, b| b.priority.cmp(&a.priority).then(a.name.cmp(&b.name)));
        let mut packages: Vec<PackageSummary> = catalogs
            .iter()
            .flat_map(|content| {
                content
                    .catalog
                    .packages
                    .values()
                    .map(|p| PackageSummary::of(content, p))
            })
            .collect();
        packages.sort_by(|a, b| {
            (&a.sort_key, &a.name, &a.catalog).cmp(&(&b.sort_key, &b.name, &b.catalog))
        });
        HubIndex { catalogs, packages }
    }

    /// The catalogs, highest priority first.
    pub fn catalogs(&self) -> &[Arc<CatalogContent>] {
        &self.catalogs
    }

    pub fn catalog(&self, name: &str) -> Option<&Arc<CatalogContent>> {
        self.catalogs.iter().find(|c| c.name == name)
    }

    pub fn len(&self) -> usize {
        self.packages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.packages.is_empty()
    }

    /// The packages matching `query`: a package named exactly as the query first, then names
    /// starting with it, then the rest by display name.
    pub fn search(&self, query: &Query) -> Vec<&PackageSummary> {
        let q = query.q.to_lowercase();
        let words: Vec<&str> = q.split_whitespace().collect();
        let keyword = query.keyword.as_ref().map(|k| k.to_lowercase());
        let mut hits: Vec<(u8, &PackageSummary)> = self
            .packages
            .iter()
            .filter(|p| query.delisted || !p.delisted)
            .filter(|p| query.catalog.as_ref().is_none_or(|c| &p.catalog == c))
            .filter(|p| {
                query
                    .provider_type
                    .as_ref()
                    .is_none_or(|t| p.provider.provider_type.eq_ignore_ascii_case(t))
            })
            .filter(|p| {
                keyword
                    .as_ref()
                    .is_none_or(|k| p.keywords.iter().any(|pk| pk.to_lowercase() == *k))
            })
            .filter(|p| words.iter().all(|w| p.haystack.contains(w)))
            .map(|p| {
                let rank = if q.is_empty() {
                    2
                } else if p.name == q {
                    0
                } else if p.name.starts_with(q.as_str()) {
                    1
                } else {
                    2
                };
                (rank, p)
            })
            .collect();
        hits.sort_by_key(|(rank, _)| *rank);
        hits.into_iter().map(|(_, p)| p).collect()
    }

    /// The keywords in use, most used first (at most `max`), for the filter.
    pub fn keywords(&self, max: usize) -> Vec<(String, usize)> {
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for keyword in self.packages.iter().flat_map(|p| &p.keywords) {
            *counts.entry(keyword.to_lowercase()).or_default() += 1;
        }
        let mut out: Vec<(String, usize)> = counts.into_iter().collect();
        out.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        out.truncate(max);
        out
    }

    /// A package by name: from `catalog` when given, else from the highest-priority catalog
    /// that offers it without delisting it whole (as Subscriptions without a catalog resolve),
    /// else from the highest-priority one that delists it.
    pub fn package(
        &self,
        name: &str,
        catalog: Option<&str>,
    ) -> Option<(&Arc<CatalogContent>, &Package)> {
        let mut offering = self
            .catalogs
            .iter()
            .filter(|c| catalog.is_none_or(|wanted| c.name == wanted))
            .filter_map(|c| c.catalog.packages.get(name).map(|p| (c, p)));
        let first = offering.next()?;
        if !first.0.delists_whole(name) {
            return Some(first);
        }
        Some(
            offering
                .find(|(c, _)| !c.delists_whole(name))
                .unwrap_or(first),
        )
    }

    /// The catalogs that offer a package of this name, highest priority first.
    pub fn offering(&self, name: &str) -> Vec<&str> {
        self.catalogs
            .iter()
            .filter(|c| c.catalog.packages.contains_key(name))
            .map(|c| c.name.as_str())
            .collect()
    }
}

#[cfg(test)]
#[path = "index_tests.rs"]
mod tests;
