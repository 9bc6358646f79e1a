//! The custom resources an installed operator manages, for its package's page and read API:
//! the package's installs the person may read (Subscriptions and their Blueprints), the CRDs
//! their ClusterServiceVersions own, and the instances of those CRDs in the namespaces the
//! person may read, with their status conditions; after a delist, what to reclaim.
//!
//! The server reads as the person and hands in what it got ([`Gathered`]), refusals included.
//! This module decides what it reads next (which CSVs, which kinds, which namespaces once a
//! cluster-wide list is refused) and, in [`view`], what is shown.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde_json::Value;
use windlass_api::{Blueprint, Subscription, csv::Definition};
use windlass_catalog::Package;

use crate::index::{CatalogContent, representative};

pub mod view;

pub use view::{Instances, Reclaim};

/// At most this many instances of one CRD are listed; the rest are counted.
pub const MAX_PER_KIND: usize = 200;
/// At most this many installs are listed; the rest are counted.
pub const MAX_INSTALLS: usize = 200;
/// At most this many namespaces are read one by one when a cluster-wide list is refused.
pub const MAX_NAMESPACES: usize = 50;

/// A CRD a ClusterServiceVersion owns, at the version it names.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnedKind {
    /// `<plural>.<group>`.
    pub crd: String,
    pub group: String,
    pub version: String,
    pub kind: String,
    #[serde(skip)]
    pub plural: String,
}

impl OwnedKind {
    /// From a CRD's name (`<plural>.<group>`), a version and a kind; `None` when the name has
    /// no group or a part is empty (an API service, say, which has no instances to list).
    pub fn new(crd: &str, version: &str, kind: &str) -> Option<OwnedKind> {
        let (plural, group) = crd.split_once('.')?;
        if [plural, group, version, kind].iter().any(|p| p.is_empty()) {
            return None;
        }
        Some(OwnedKind {
            crd: crd.to_string(),
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
            plural: plural.to_string(),
        })
    }
}

/// The CRDs a CSV definition owns (`spec.customresourcedefinitions.owned`), reading nothing
/// else of it; entries without a usable name, version or kind are left out.
pub fn owned_kinds(definition: &Definition) -> Vec<OwnedKind> {
    let mut kinds: Vec<OwnedKind> = definition
        .owned_crds()
        .iter()
        .filter_map(|o| OwnedKind::new(&o.name, &o.version, &o.kind))
        .collect();
    kinds.sort();
    kinds.dedup_by(|a, b| a.crd == b.crd);
    kinds
}

/// Where a list reached: across every namespace, or (the API server refused that) the
/// namespaces read one by one, and those it refused too.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reach {
    /// Read across every namespace at once.
    pub all_namespaces: bool,
    /// The API server's refusal of the cluster-wide list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// The namespaces read one by one instead.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// The namespaces the API server refused as well.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_readable: Vec<String>,
    /// Namespaces left unread, past [`MAX_NAMESPACES`].
    #[serde(skip_serializing_if = "is_zero")]
    pub not_tried: usize,
}

impl Reach {
    /// A cluster-wide list that went through.
    pub fn everywhere() -> Reach {
        Reach {
            all_namespaces: true,
            ..Reach::default()
        }
    }

    /// Whether something was refused or left unread.
    pub fn partial(&self) -> bool {
        !self.all_namespaces
            && (self.refusal.is_some() || !self.not_readable.is_empty() || self.not_tried > 0)
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One install of the package, as the person could read it.
#[derive(Clone, Debug)]
pub struct Install {
    pub subscription: Subscription,
    /// Its Blueprint; absent until it is made, or when the person may not read it.
    pub blueprint: Option<Blueprint>,
}

impl Install {
    pub fn namespace(&self) -> &str {
        self.subscription
            .metadata
            .namespace
            .as_deref()
            .unwrap_or("")
    }

    pub fn name(&self) -> &str {
        self.subscription.metadata.name.as_deref().unwrap_or("")
    }

    /// The CSV it runs: the one that last Succeeded, else the one being installed.
    pub fn csv_name(&self) -> Option<&str> {
        let status = self.subscription.status.as_ref();
        status
            .and_then(|s| s.installed_csv.as_deref())
            .or_else(|| status.and_then(|s| s.current_csv.as_deref()))
            .or_else(|| {
                self.blueprint
                    .as_ref()
                    .map(|b| b.spec.cluster_service_version_name.as_str())
            })
            .filter(|n| !n.is_empty())
    }

    /// The catalog it installs from, where recorded: the bundle its Blueprint resolved, else
    /// the Subscription's `spec.catalog`.
    pub fn catalog(&self) -> Option<&str> {
        self.blueprint
            .as_ref()
            .and_then(|b| b.spec.bundle.as_ref())
            .and_then(|b| b.catalog.as_deref())
            .or(self.subscription.spec.catalog.as_deref())
    }

    /// The namespaces its operator watches (`None`: every namespace): the Blueprint's (else
    /// the Subscription's) `targetNamespaces`; when neither names any, every namespace if the
    /// bundle supports AllNamespaces, else the install's own, as the Subscription's field
    /// documents.
    pub fn watched(&self, content: &CatalogContent, package: &Package) -> Option<Vec<String>> {
        let named = self
            .blueprint
            .as_ref()
            .and_then(|b| b.spec.target_namespaces.as_ref())
            .or(self.subscription.spec.target_namespaces.as_ref());
        match named {
            Some(list) if list.is_empty() || list.iter().any(String::is_empty) => None,
            Some(list) => Some(list.clone()),
            None => {
                let all = bundle_of(self, package)
                    .or_else(|| representative(package))
                    .map(|b| content.bundle_metadata(package, b))
                    .is_some_and(|m| {
                        m.install_modes
                            .iter()
                            .any(|m| m.type_ == "AllNamespaces" && m.supported)
                    });
                (!all).then(|| vec![self.namespace().to_string()])
            }
        }
    }
}

fn bundle_of<'a>(install: &Install, package: &'a Package) -> Option<&'a windlass_catalog::Bundle> {
    install.csv_name().and_then(|csv| package.bundles.get(csv))
}

/// Whether a Subscription subscribes to `package` and may install it from `catalog` (it names
/// that catalog, or none).
pub fn subscribes_to(subscription: &Subscription, package: &str, catalog: &str) -> bool {
    subscription.spec.package == package
        && subscription
            .spec
            .catalog
            .as_deref()
            .is_none_or(|c| c == catalog)
}

/// The installs of `catalog`'s `package` among the Subscriptions read, each with its Blueprint
/// among those read; one that names no catalog counts unless its Blueprint resolved from
/// another. Sorted by namespace and name.
pub fn installs(
    subscriptions: Vec<Subscription>,
    blueprints: &[Blueprint],
    package: &str,
    catalog: &str,
) -> Vec<Install> {
    let mut out: Vec<Install> = subscriptions
        .into_iter()
        .filter(|s| subscribes_to(s, package, catalog))
        .map(|subscription| {
            let wanted = subscription
                .status
                .as_ref()
                .and_then(|s| s.blueprint.clone())
                .or_else(|| subscription.metadata.name.clone())
                .unwrap_or_default();
            let blueprint = blueprints
                .iter()
                .find(|b| {
                    b.metadata.namespace == subscription.metadata.namespace
                        && b.metadata.name.as_deref() == Some(wanted.as_str())
                })
                .cloned();
            Install {
                subscription,
                blueprint,
            }
        })
        .filter(|i| i.catalog().is_none_or(|c| c == catalog))
        .collect();
    out.sort_by(|a, b| (a.namespace(), a.name()).cmp(&(b.namespace(), b.name())));
    out
}

/// The CSVs to read, as `(namespace, name)`: one per CSV name, in the first namespace that
/// runs it, since installs of one version share their CSV's definition.
pub fn csvs_to_read(installs: &[Install]) -> Vec<(String, String)> {
    let mut seen = BTreeSet::new();
    installs
        .iter()
        .filter_map(|i| i.csv_name().map(|csv| (i.namespace(), csv)))
        .filter(|(_, csv)| seen.insert(csv.to_string()))
        .map(|(ns, csv)| (ns.to_string(), csv.to_string()))
        .collect()
}

/// What an install's CSV owns: as read from the cluster (`owned`, by CSV name), else the
/// catalog's copy of that bundle (the person may not read CSVs), else the version the package
/// is presented by.
pub fn kinds_of(
    install: &Install,
    owned: &BTreeMap<String, Vec<OwnedKind>>,
    content: &CatalogContent,
    package: &Package,
) -> Vec<OwnedKind> {
    if let Some(kinds) = install.csv_name().and_then(|csv| owned.get(csv)) {
        return kinds.clone();
    }
    let Some(bundle) = bundle_of(install, package).or_else(|| representative(package)) else {
        return Vec::new();
    };
    let mut kinds: Vec<OwnedKind> = content
        .bundle_metadata(package, bundle)
        .owned_apis
        .iter()
        // API services are named by their group alone: only CRDs have instances to list.
        .filter(|api| api.name.ends_with(&format!(".{}", api.group)))
        .filter_map(|api| OwnedKind::new(&api.name, &api.version, &api.kind))
        .collect();
    kinds.sort();
    kinds.dedup_by(|a, b| a.crd == b.crd);
    kinds
}

/// The kinds whose instances to list: every CRD the installs' CSVs own, once each.
pub fn kinds_to_list(
    installs: &[Install],
    owned: &BTreeMap<String, Vec<OwnedKind>>,
    content: &CatalogContent,
    package: &Package,
) -> Vec<OwnedKind> {
    let mut by_crd: BTreeMap<String, OwnedKind> = BTreeMap::new();
    for install in installs {
        for kind in kinds_of(install, owned, content, package) {
            by_crd.entry(kind.crd.clone()).or_insert(kind);
        }
    }
    by_crd.into_values().collect()
}

/// The namespaces to read one by one when a cluster-wide list of instances is refused: where
/// the package is installed and the namespaces those installs watch by name, then the ones
/// the person named (`known`: their default, the page's). At most [`MAX_NAMESPACES`]; the
/// count left out is returned with them.
pub fn namespaces_to_try(
    installs: &[Install],
    content: &CatalogContent,
    package: &Package,
    known: &[String],
) -> (Vec<String>, usize) {
    let mut out: Vec<String> = Vec::new();
    let mut push = |ns: &str| {
        if !ns.is_empty() && !out.iter().any(|o| o == ns) {
            out.push(ns.to_string());
        }
    };
    for install in installs {
        push(install.namespace());
    }
    for install in installs {
        for ns in install.watched(content, package).unwrap_or_default() {
            push(&ns);
        }
    }
    for ns in known {
        push(ns);
    }
    let left_out = out.len().saturating_sub(MAX_NAMESPACES);
    out.truncate(MAX_NAMESPACES);
    (out, left_out)
}

/// One custom resource as read: its metadata and its `status`.
#[derive(Clone, Debug, Default)]
pub struct Object {
    pub metadata: ObjectMeta,
    pub status: Option<Value>,
}

/// The instances of one kind, as read.
#[derive(Clone, Debug, Default)]
pub struct Objects {
    pub reach: Reach,
    pub items: Vec<Object>,
    /// How many more the API server holds beyond those read, where it counted them.
    pub more: u64,
    /// A list had more without saying how many.
    pub more_uncounted: bool,
}

/// One kind and its instances, or why they could not be read (the API server does not serve
/// the kind, or refused the only list there is).
#[derive(Clone, Debug)]
pub struct KindRead {
    pub kind: OwnedKind,
    pub read: Result<Objects, String>,
}

/// Everything the server read as the person, for [`Instances::build`].
#[derive(Clone, Debug, Default)]
pub struct Gathered {
    /// Where Subscriptions were read.
    pub subscriptions: Reach,
    /// The package's installs among them ([`installs`]).
    pub installs: Vec<Install>,
    /// What each CSV read from the cluster owns, by CSV name.
    pub owned: BTreeMap<String, Vec<OwnedKind>>,
    pub kinds: Vec<KindRead>,
}

#[cfg(test)]
mod tests;
