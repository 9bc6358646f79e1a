//! A catalog turned into numbered bundles, packages and APIs, built once and shared by every
//! resolution against that catalog (a controller resolves many subscriptions per catalog change).

use std::collections::HashMap;

use windlass_catalog::{
    Bundle, Catalog, Package,
    model::Gvk,
    range::{VersionRange, precedence},
    validate::channel_heads,
};

pub(crate) type BundleId = u32;
pub(crate) type PkgId = u32;
pub(crate) type GvkId = u32;

/// What one bundle needs from the rest of the installation.
#[derive(Debug)]
pub(crate) enum Req<'c> {
    /// `olm.package.required`: `cands` are the package's bundles in the range, best first.
    Package {
        name: &'c str,
        range: &'c str,
        pkg: Option<PkgId>,
        /// The range could not be read; the requirement can never be met.
        bad_range: Option<String>,
        cands: Vec<BundleId>,
    },
    /// `olm.gvk.required` (and CSV `required` CRDs): any owner of the API.
    Gvk(GvkId),
}

#[derive(Debug)]
pub(crate) struct BundleInfo<'c> {
    pub bundle: &'c Bundle,
    pub pkg: PkgId,
    pub provides: Vec<GvkId>,
    pub requires: Vec<Req<'c>>,
}

#[derive(Debug)]
pub(crate) struct PackageInfo<'c> {
    pub package: &'c Package,
    /// Every bundle of the package, best first for a dependency: default channel head, then
    /// the default channel's entries, then higher versions.
    pub bundles: Vec<BundleId>,
}

#[derive(Debug)]
pub(crate) struct Index<'c> {
    pub bundles: Vec<BundleInfo<'c>>,
    pub packages: Vec<PackageInfo<'c>>,
    pub pkg_ids: HashMap<&'c str, PkgId>,
    pub gvks: Vec<&'c Gvk>,
    pub gvk_ids: HashMap<&'c Gvk, GvkId>,
    /// Owners of each API, best first (package order, then the package's own preference).
    pub providers: Vec<Vec<BundleId>>,
}

impl<'c> Index<'c> {
    pub fn build(catalog: &'c Catalog) -> Index<'c> {
        let mut index = Index {
            bundles: Vec::new(),
            packages: Vec::with_capacity(catalog.packages.len()),
            pkg_ids: HashMap::with_capacity(catalog.packages.len()),
            gvks: Vec::new(),
            gvk_ids: HashMap::new(),
            providers: Vec::new(),
        };
        for (i, name) in catalog.packages.keys().enumerate() {
            index.pkg_ids.insert(name.as_str(), i as PkgId);
        }
        for (name, package) in &catalog.packages {
            let pkg = index.pkg_ids[name.as_str()];
            let first = index.bundles.len() as BundleId;
            for bundle in package.bundles.values() {
                let provides = bundle.provided_gvks().map(|g| index.gvk_id(g)).collect();
                index.bundles.push(BundleInfo {
                    bundle,
                    pkg,
                    provides,
                    requires: Vec::new(),
                });
            }
            let mut ids: Vec<BundleId> = (first..index.bundles.len() as BundleId).collect();
            let rank = preference_rank(package);
            ids.sort_by(|a, b| {
                let (ba, bb) = (
                    index.bundles[*a as usize].bundle,
                    index.bundles[*b as usize].bundle,
                );
                rank(ba)
                    .cmp(&rank(bb))
                    .then_with(|| precedence(&bb.version, &ba.version))
                    .then_with(|| ba.name.cmp(&bb.name))
            });
            index.packages.push(PackageInfo {
                package,
                bundles: ids,
            });
        }
        // Requirements need every package numbered first.
        for id in 0..index.bundles.len() {
            let bundle = index.bundles[id].bundle;
            let mut requires = Vec::new();
            for (name, range) in bundle.required_packages() {
                let pkg = index.pkg_ids.get(name).copied();
                let (parsed, bad_range) = match VersionRange::parse(range) {
                    Ok(r) => (Some(r), None),
                    Err(e) => (None, Some(e.to_string())),
                };
                let cands = match (pkg, &parsed) {
                    (Some(p), Some(r)) => index.packages[p as usize]
                        .bundles
                        .iter()
                        .copied()
                        .filter(|b| r.matches(&index.bundles[*b as usize].bundle.version))
                        .collect(),
                    _ => Vec::new(),
                };
                requires.push(Req::Package {
                    name,
                    range,
                    pkg,
                    bad_range,
                    cands,
                });
            }
            for gvk in bundle.required_gvks() {
                requires.push(Req::Gvk(index.gvk_id(gvk)));
            }
            index.bundles[id].requires = requires;
        }
        index.providers = vec![Vec::new(); index.gvks.len()];
        for pkg in &index.packages {
            for &b in &pkg.bundles {
                for &g in &index.bundles[b as usize].provides {
                    index.providers[g as usize].push(b);
                }
            }
        }
        index
    }

    fn gvk_id(&mut self, gvk: &'c Gvk) -> GvkId {
        if let Some(id) = self.gvk_ids.get(gvk) {
            return *id;
        }
        let id = self.gvks.len() as GvkId;
        self.gvks.push(gvk);
        self.gvk_ids.insert(gvk, id);
        id
    }

    pub fn bundle(&self, id: BundleId) -> &BundleInfo<'c> {
        &self.bundles[id as usize]
    }

    pub fn package(&self, id: PkgId) -> &PackageInfo<'c> {
        &self.packages[id as usize]
    }

    /// The bundle of `pkg` at `version` (by semver precedence), if the catalog has it.
    pub fn find_version(&self, pkg: PkgId, version: &semver::Version) -> Option<BundleId> {
        self.package(pkg)
            .bundles
            .iter()
            .copied()
            .find(|b| precedence(&self.bundle(*b).bundle.version, version).is_eq())
    }

    pub fn find_name(&self, pkg: PkgId, name: &str) -> Option<BundleId> {
        self.package(pkg)
            .bundles
            .iter()
            .copied()
            .find(|b| self.bundle(*b).bundle.name == name)
    }
}

/// 0: head of the default channel, 1: in the default channel, 2: elsewhere.
fn preference_rank(package: &Package) -> impl Fn(&Bundle) -> u8 + '_ {
    let default = package.default_channel();
    let head: Option<&str> = default.and_then(|c| match channel_heads(c).as_slice() {
        [one] => Some(*one),
        _ => None,
    });
    let in_default: std::collections::HashSet<&str> = default
        .iter()
        .flat_map(|c| c.entries.iter().map(|e| e.name.as_str()))
        .collect();
    move |b: &Bundle| {
        if head == Some(b.name.as_str()) {
            0
        } else if in_default.contains(b.name.as_str()) {
            1
        } else {
            2
        }
    }
}
