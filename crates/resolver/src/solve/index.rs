//! A catalog turned into numbered bundles, packages and APIs, built once and shared by every
//! resolution against that catalog (a controller resolves many subscriptions per catalog change).

use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;

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

/// What one bundle needs from the rest of the installation. Small and shared: a catalog of
/// 100,000 bundles holds hundreds of thousands of these, in one list.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Req {
    /// `olm.package.required`: `Index::package_reqs[i]`, shared by every bundle that names
    /// the same package and range (the versions of a package mostly repeat one).
    Package(u32),
    /// `olm.gvk.required` (and CSV `required` CRDs): any owner of the API.
    Gvk(GvkId),
    /// `olm.constraint`: some bundle of the installation (this one included) satisfies the
    /// predicate. The constraint is `Index::constraints[i]`, shared by every bundle that
    /// carries the same one.
    Constraint(u32),
}

/// One distinct `olm.package.required` (package and range as written).
#[derive(Debug)]
pub(crate) struct PackageReq<'c> {
    pub name: &'c str,
    pub range: &'c str,
    pub pkg: Option<PkgId>,
    /// The range could not be read; the requirement can never be met.
    pub bad_range: Option<String>,
    /// The package's bundles in the range, best first; worked out once.
    pub cands: Vec<BundleId>,
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
    /// Where this bundle's APIs start in `Index::provided` (they end where the next
    /// bundle's start): one list for the catalog, not one allocation per bundle.
    provides_from: u32,
    /// The same, in `Index::required`.
    requires_from: u32,
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
    /// Every bundle's provided APIs, bundle after bundle (see `BundleInfo::provides_from`).
    provided: Vec<GvkId>,
    /// Every bundle's requirements, bundle after bundle.
    required: Vec<Req>,
    pub package_reqs: Vec<PackageReq<'c>>,
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
        let bundle_count: usize = catalog.packages.values().map(|p| p.bundles.len()).sum();
        let two_threads = bundle_count >= PARALLEL_BUNDLES
            && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
        Index::build_on(catalog, bundle_count, two_threads)
    }

    /// [`Index::build`], on two threads or one.
    fn build_on(catalog: &'c Catalog, bundle_count: usize, two_threads: bool) -> Index<'c> {
        let mut index = Index {
            bundles: Vec::with_capacity(bundle_count),
            packages: Vec::with_capacity(catalog.packages.len()),
            pkg_ids: HashMap::with_capacity_and_hasher(
                catalog.packages.len(),
                FastHasher::default(),
            ),
            gvks: Vec::new(),
            gvk_ids: HashMap::default(),
            provided: Vec::with_capacity(bundle_count),
            required: Vec::with_capacity(bundle_count),
            package_reqs: Vec::new(),
            providers: Vec::new(),
            constraints: Vec::new(),
            cel_properties: Vec::new(),
        };
        for (i, name) in catalog.packages.keys().enumerate() {
            index.pkg_ids.insert(name.as_str(), i as PkgId);
        }
        // Ids are handed out package by package, in catalog order.
        let mut firsts = Vec::with_capacity(catalog.packages.len());
        let mut next: BundleId = 0;
        for package in catalog.packages.values() {
            firsts.push(next);
            next += package.bundles.len() as BundleId;
        }
        // Ordering each package's bundles needs nothing from numbering their APIs and
        // requirements: in a large catalog a second thread starts on the orders while this
        // one numbers, then both take the next package until none is left.
        let orders = if two_threads {
            windlass_catalog::work::in_turns(
                catalog.packages.values().collect(),
                1,
                || index.number_bundles(catalog),
                |i, package: &Package| package_order(package, firsts[i]),
            )
        } else {
            index.number_bundles(catalog);
            catalog
                .packages
                .values()
                .zip(&firsts)
                .map(|(package, first)| package_order(package, *first))
                .collect()
        };
        index.packages = catalog
            .packages
            .values()
            .zip(orders)
            .map(|(package, bundles)| PackageInfo { package, bundles })
            .collect();
        // A required package's candidates follow its bundles' order, known only now.
        for req in &mut index.package_reqs {
            if let (Some(p), Ok(range)) = (req.pkg, VersionRange::parse(req.range)) {
                req.cands = index.packages[p as usize]
                    .bundles
                    .iter()
                    .copied()
                    .filter(|b| range.matches(&index.bundles[*b as usize].bundle.version))
                    .collect();
            }
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
                let (from, to) = index.provides_range(b);
                for &g in &index.provided[from..to] {
                    index.providers[g as usize].push(b);
                }
            }
        }
        index
    }

    /// Numbers every bundle, with the APIs it owns and what it requires, in catalog order.
    fn number_bundles(&mut self, catalog: &'c Catalog) {
        let mut requirements = Requirements::default();
        let mut last_provided = None;
        for (pkg, package) in catalog.packages.values().enumerate() {
            for bundle in package.bundles.values() {
                self.bundles.push(BundleInfo {
                    bundle,
                    pkg: pkg as PkgId,
                    provides_from: self.provided.len() as u32,
                    requires_from: self.required.len() as u32,
                });
                for gvk in bundle.provided_gvks() {
                    let id = self.gvk_id_after(gvk, &mut last_provided);
                    self.provided.push(id);
                }
                requirements.add(self, bundle);
            }
        }
    }

    /// The APIs bundle `b` owns.
    pub fn provides(&self, b: BundleId) -> &[GvkId] {
        let (from, to) = self.provides_range(b);
        &self.provided[from..to]
    }

    fn provides_range(&self, b: BundleId) -> (usize, usize) {
        let from = self.bundles[b as usize].provides_from as usize;
        let to = self
            .bundles
            .get(b as usize + 1)
            .map_or(self.provided.len(), |n| n.provides_from as usize);
        (from, to)
    }

    /// What bundle `b` needs; `Cands::Req(b, r)` is `requires(b)[r]`.
    pub fn requires(&self, b: BundleId) -> &[Req] {
        let from = self.bundles[b as usize].requires_from as usize;
        let to = self
            .bundles
            .get(b as usize + 1)
            .map_or(self.required.len(), |n| n.requires_from as usize);
        &self.required[from..to]
    }

    pub fn package_req(&self, i: u32) -> &PackageReq<'c> {
        &self.package_reqs[i as usize]
    }

    /// `gvk`'s id, trying `last` (the previous answer at the same place) before the table:
    /// the versions of a package mostly own and require the same APIs.
    fn gvk_id_after(&mut self, gvk: &'c Gvk, last: &mut Option<(&'c Gvk, GvkId)>) -> GvkId {
        if let Some((seen, id)) = *last
            && seen == gvk
        {
            return id;
        }
        let id = self.gvk_id(gvk);
        *last = Some((gvk, id));
        id
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
        match self.requires(b).get(r as usize) {
            Some(Req::Constraint(c)) => self.constraints.get(*c as usize),
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

/// Numbers each distinct requirement once while the index is built.
#[derive(Default)]
struct Requirements<'c> {
    /// (package, range as written) -> `Index::package_reqs` entry.
    packages: HashMap<(&'c str, &'c str), u32, FastHasher>,
    /// The last package requirement and API requirement seen, tried before the tables.
    last_package: Option<(&'c str, &'c str, u32)>,
    last_gvk: Option<(&'c Gvk, GvkId)>,
    /// Constraint JSON text -> `Index::constraints` entry.
    constraints: HashMap<String, u32>,
}

impl<'c> Requirements<'c> {
    /// Appends `bundle`'s requirements to `index.required`.
    fn add(&mut self, index: &mut Index<'c>, bundle: &'c Bundle) {
        for (name, range) in bundle.required_packages() {
            if let Some((n, r, id)) = self.last_package
                && (n, r) == (name, range)
            {
                index.required.push(Req::Package(id));
                continue;
            }
            let next = index.package_reqs.len() as u32;
            let id = *self.packages.entry((name, range)).or_insert(next);
            self.last_package = Some((name, range, id));
            if id == next {
                let bad_range = VersionRange::parse(range).err().map(|e| e.to_string());
                index.package_reqs.push(PackageReq {
                    name,
                    range,
                    pkg: index.pkg_ids.get(name).copied(),
                    bad_range,
                    cands: Vec::new(),
                });
            }
            index.required.push(Req::Package(id));
        }
        for gvk in bundle.required_gvks() {
            let id = index.gvk_id_after(gvk, &mut self.last_gvk);
            index.required.push(Req::Gvk(id));
        }
        for value in bundle.constraint_values() {
            let next = index.constraints.len() as u32;
            let id = *self.constraints.entry(value.to_string()).or_insert(next);
            if id == next {
                index.constraints.push(ConstraintInfo {
                    parsed: Constraint::parse(&value).map_err(|e| e.to_string()),
                    cands: OnceLock::new(),
                });
            }
            index.required.push(Req::Constraint(id));
        }
    }
}

/// From this many bundles on, [`Index::build`] uses a second thread.
const PARALLEL_BUNDLES: usize = 10_000;

/// A package's bundle ids (numbered from `first` in the package's own order), best first for
/// a dependency: default channel head, then the default channel's entries, then higher
/// versions.
fn package_order(package: &Package, first: BundleId) -> Vec<BundleId> {
    let bundles: Vec<&Bundle> = package.bundles.values().collect();
    // Ranked once per bundle, not once per comparison: a package of many versions would
    // otherwise look every name up again at each step of the sort.
    let rank = preference_rank(package);
    let ranks: Vec<u8> = bundles.iter().map(|b| rank(b)).collect();
    let mut order: Vec<u32> = (0..bundles.len() as u32).collect();
    order.sort_by(|a, b| {
        let (ba, bb) = (bundles[*a as usize], bundles[*b as usize]);
        ranks[*a as usize]
            .cmp(&ranks[*b as usize])
            .then_with(|| precedence(&bb.version, &ba.version))
            .then_with(|| ba.name.cmp(&bb.name))
    });
    order.into_iter().map(|i| first + i).collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_built_by_two_threads_is_the_one_built_by_one() {
        let mut catalog = crate::synthetic::generate_with_constraints(30, 6, 3);
        // A package whose default channel head is not its newest version, so its order is
        // not just by version.
        let package = catalog.packages.get_mut("pkg00003").expect("generated");
        let channel = package.channels.values_mut().next().expect("generated");
        channel.entries.pop();
        let count = catalog.packages.values().map(|p| p.bundles.len()).sum();
        let one = Index::build_on(&catalog, count, false);
        let two = Index::build_on(&catalog, count, true);
        assert_eq!(format!("{one:?}"), format!("{two:?}"));
        // Requirements are numbered once: every bundle of a package shares its one.
        assert!(
            one.package_reqs.len() < count / 2,
            "{}",
            one.package_reqs.len()
        );
        for b in 0..count as BundleId {
            let bundle = one.bundle(b).bundle;
            let provided: Vec<&Gvk> = one
                .provides(b)
                .iter()
                .map(|g| one.gvks[*g as usize])
                .collect();
            assert_eq!(provided, bundle.provided_gvks().collect::<Vec<_>>());
            assert_eq!(
                one.requires(b).len(),
                bundle.required_packages().count()
                    + bundle.required_gvks().count()
                    + bundle.constraint_values().count()
            );
        }
        let head = one.package(one.pkg_ids["pkg00003"]).bundles[0];
        assert_ne!(
            one.bundle(head).bundle.version,
            catalog.packages["pkg00003"]
                .bundles
                .values()
                .map(|b| b.version.clone())
                .max()
                .expect("bundles"),
            "the default channel's head leads"
        );
    }
}
