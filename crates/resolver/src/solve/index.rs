//! A catalog turned into numbered bundles, packages and APIs, built once and shared by every
//! resolution against that catalog (a controller resolves many subscriptions per catalog change).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, OnceLock};

use windlass_catalog::{
    Bundle, Catalog, Constraint, Package,
    constraint::{Candidate, CelProperties, Predicate},
    model::Gvk,
    name::FastHasher,
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
        /// Shared by every bundle that names the same package and range (the versions of a
        /// package mostly repeat one), so it is worked out once.
        cands: Arc<[BundleId]>,
    },
    /// `olm.gvk.required` (and CSV `required` CRDs): any owner of the API.
    Gvk(GvkId),
    /// `olm.constraint`: some bundle of the installation (this one included) satisfies the
    /// predicate. The constraint is `Index::constraints[i]`, shared by every bundle that
    /// carries the same one.
    Constraint(u32),
}

/// One distinct `olm.constraint` of the catalog.
#[derive(Debug)]
pub(crate) struct ConstraintInfo {
    /// An unusable constraint (`Err`, with the reason) can never be met.
    pub parsed: Result<Constraint, String>,
    /// Filled the first time a resolution reaches the constraint: evaluating a CEL rule over a
    /// whole catalog is paid only for constraints that matter, and once.
    cands: OnceLock<ConstraintCands>,
}

/// The bundles that satisfy one constraint.
#[derive(Debug, Default)]
pub(crate) struct ConstraintCands {
    /// Best first: package order, then each package's own preference.
    pub ordered: Vec<BundleId>,
    /// The same, sorted by id, to test membership.
    sorted: Vec<BundleId>,
}

impl ConstraintCands {
    pub fn contains(&self, b: BundleId) -> bool {
        self.sorted.binary_search(&b).is_ok()
    }
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
    pub pkg_ids: HashMap<&'c str, PkgId, FastHasher>,
    pub gvks: Vec<&'c Gvk>,
    pub gvk_ids: HashMap<&'c Gvk, GvkId, FastHasher>,
    /// Owners of each API, best first (package order, then the package's own preference).
    pub providers: Vec<Vec<BundleId>>,
    /// The distinct constraints bundles carry (versions of a package often repeat one).
    pub constraints: Vec<ConstraintInfo>,
    /// Each bundle's properties as CEL rules see them, built on first use; empty when no
    /// constraint in the catalog has a CEL rule.
    cel_properties: Vec<OnceLock<CelProperties>>,
}

impl<'c> Index<'c> {
    pub fn build(catalog: &'c Catalog) -> Index<'c> {
        let mut index = Index {
            bundles: Vec::new(),
            packages: Vec::with_capacity(catalog.packages.len()),
            pkg_ids: HashMap::with_capacity_and_hasher(
                catalog.packages.len(),
                FastHasher::default(),
            ),
            gvks: Vec::new(),
            gvk_ids: HashMap::default(),
            providers: Vec::new(),
            constraints: Vec::new(),
            cel_properties: Vec::new(),
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
            // Ranked once per bundle, not once per comparison: a package of many versions
            // would otherwise look every name up again at each step of the sort.
            let rank = preference_rank(package);
            let ranks: Vec<u8> = index.bundles[first as usize..]
                .iter()
                .map(|b| rank(b.bundle))
                .collect();
            let rank_of = |id: BundleId| ranks[(id - first) as usize];
            ids.sort_by(|a, b| {
                let (ba, bb) = (
                    index.bundles[*a as usize].bundle,
                    index.bundles[*b as usize].bundle,
                );
                rank_of(*a)
                    .cmp(&rank_of(*b))
                    .then_with(|| precedence(&bb.version, &ba.version))
                    .then_with(|| ba.name.cmp(&bb.name))
            });
            index.packages.push(PackageInfo {
                package,
                bundles: ids,
            });
        }
        // Requirements need every package numbered first.
        let mut constraint_ids: HashMap<String, u32> = HashMap::new();
        // (package, range as written) -> (candidates, why the range is unreadable)
        type Shared = (Arc<[BundleId]>, Option<String>);
        let mut package_reqs: HashMap<(&str, &str), Shared, FastHasher> = HashMap::default();
        for id in 0..index.bundles.len() {
            let bundle = index.bundles[id].bundle;
            let mut requires = Vec::new();
            for (name, range) in bundle.required_packages() {
                let pkg = index.pkg_ids.get(name).copied();
                let (cands, bad_range) = package_reqs
                    .entry((name, range))
                    .or_insert_with(|| {
                        let parsed = VersionRange::parse(range);
                        let cands = match (pkg, &parsed) {
                            (Some(p), Ok(r)) => index.packages[p as usize]
                                .bundles
                                .iter()
                                .copied()
                                .filter(|b| r.matches(&index.bundles[*b as usize].bundle.version))
                                .collect(),
                            _ => Arc::default(),
                        };
                        (cands, parsed.err().map(|e| e.to_string()))
                    })
                    .clone();
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
            for value in bundle.constraint_values() {
                let next = index.constraints.len() as u32;
                let id = *constraint_ids.entry(value.to_string()).or_insert(next);
                if id == next {
                    index.constraints.push(ConstraintInfo {
                        parsed: Constraint::parse(&value).map_err(|e| e.to_string()),
                        cands: OnceLock::new(),
                    });
                }
                requires.push(Req::Constraint(id));
            }
            index.bundles[id].requires = requires;
        }
        if index
            .constraints
            .iter()
            .any(|c| c.parsed.as_ref().is_ok_and(Constraint::uses_cel))
        {
            index.cel_properties = (0..index.bundles.len()).map(|_| OnceLock::new()).collect();
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

    /// The constraint requirement `r` of bundle `b` is, if it is one.
    pub fn constraint_of(&self, b: BundleId, r: u32) -> Option<&ConstraintInfo> {
        match &self.bundle(b).requires[r as usize] {
            Req::Constraint(c) => self.constraints.get(*c as usize),
            _ => None,
        }
    }

    /// The bundles satisfying requirement `r` of bundle `b`, a constraint (computed once).
    pub fn constraint_cands(&self, b: BundleId, r: u32) -> &ConstraintCands {
        static NONE: ConstraintCands = ConstraintCands {
            ordered: Vec::new(),
            sorted: Vec::new(),
        };
        match self.constraint_of(b, r) {
            Some(ConstraintInfo {
                parsed: Ok(constraint),
                cands,
            }) => cands.get_or_init(|| self.satisfying(constraint)),
            _ => &NONE,
        }
    }

    /// Every bundle satisfying `constraint`, best first. Only the bundles that can satisfy it
    /// are weighed: a package's bundles, an API's owners, or (for CEL rules and `not`) all.
    fn satisfying(&self, constraint: &Constraint) -> ConstraintCands {
        let matches = |b: BundleId| {
            let bundle = self.bundle(b).bundle;
            match self.cel_properties.get(b as usize) {
                Some(cell) => {
                    let props = cell.get_or_init(|| CelProperties::of(bundle));
                    constraint.matches(&Candidate::with_properties(bundle, props))
                }
                None => constraint.matches(&Candidate::new(bundle)),
            }
        };
        let ordered: Vec<BundleId> = self
            .weighed(constraint)
            .into_iter()
            .filter(|b| matches(*b))
            .collect();
        let mut sorted = ordered.clone();
        sorted.sort_unstable();
        ConstraintCands { ordered, sorted }
    }

    /// The bundles weighed for requirement `r` of bundle `b`, a constraint, best first.
    pub fn constraint_considered(&self, b: BundleId, r: u32) -> Vec<BundleId> {
        match self.constraint_of(b, r).map(|c| &c.parsed) {
            Some(Ok(c)) => self.weighed(c),
            _ => Vec::new(),
        }
    }

    /// The bundles in the constraint's scope, best first.
    fn weighed(&self, constraint: &Constraint) -> Vec<BundleId> {
        match self.scope(constraint) {
            None => self
                .packages
                .iter()
                .flat_map(|p| p.bundles.iter().copied())
                .collect(),
            Some(scope) => {
                let pkgs: BTreeSet<PkgId> = scope.iter().map(|b| self.bundle(*b).pkg).collect();
                pkgs.into_iter()
                    .flat_map(|p| self.package(p).bundles.iter().copied())
                    .filter(|b| scope.contains(b))
                    .collect()
            }
        }
    }

    /// The bundles that can possibly satisfy `constraint`; `None` for any bundle at all.
    fn scope(&self, constraint: &Constraint) -> Option<BTreeSet<BundleId>> {
        match &constraint.predicate {
            Predicate::Package { package, .. } => Some(
                self.pkg_ids
                    .get(package.as_str())
                    .map(|p| self.package(*p).bundles.iter().copied().collect())
                    .unwrap_or_default(),
            ),
            Predicate::Gvk(gvk) => Some(
                self.gvk_ids
                    .get(gvk)
                    .map(|g| self.providers[*g as usize].iter().copied().collect())
                    .unwrap_or_default(),
            ),
            // Every member must hold, so the narrowest member's scope bounds the whole.
            Predicate::All(members) => members
                .iter()
                .filter_map(|m| self.scope(m))
                .min_by_key(BTreeSet::len),
            Predicate::Any(members) => {
                members
                    .iter()
                    .map(|m| self.scope(m))
                    .try_fold(BTreeSet::new(), |mut acc, s| {
                        acc.extend(s?);
                        Some(acc)
                    })
            }
            Predicate::Cel(_) | Predicate::Not(_) => None,
        }
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
    let in_default: std::collections::HashSet<&str, FastHasher> = default
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
