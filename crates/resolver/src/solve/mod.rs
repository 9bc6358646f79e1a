//! Dependency resolution: which bundles to install, in what order, or why nothing fits.

mod explain;
mod index;
mod plan;
mod search;

use semver::Version;
use serde::{Deserialize, Serialize};
use windlass_catalog::{Catalog, range::VersionRange};

pub use explain::{Because, BundleRef, Cause, Problem, Rejection, Requirement, Unsatisfiable};
pub use plan::{Action, Plan, Step};

use crate::{graph::UpgradeGraph, policy::Policy};
use index::{BundleId, Index};
use search::{Cands, Lists, Ob, Origin, State, Stats};

/// A package that is installed now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Installed {
    pub package: String,
    pub version: Version,
    /// The CSV name, when known; it finds the entry even if two bundles share a version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<String>,
}

/// What a user subscribed to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subscription {
    pub package: String,
    /// `None`: the package's default channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<VersionRange>,
    /// For an installed package: which other versions it may move to (`olm`/`semver`: those
    /// reachable along the channel's edges; `any`: every version in the channel, downgrades too).
    #[serde(default)]
    pub policy: Policy,
}

/// Everything one resolution looks at.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// Installed packages. Those without a subscription stay exactly as they are.
    pub installed: Vec<Installed>,
    pub subscriptions: Vec<Subscription>,
}

/// A catalog prepared for resolution; build once, resolve many times.
pub struct Resolver<'c> {
    catalog: &'c Catalog,
    index: Index<'c>,
}

/// Resolve one request against one catalog (builds a [`Resolver`] each call).
pub fn resolve(catalog: &Catalog, request: &Request) -> Result<Plan, Box<Unsatisfiable>> {
    Resolver::new(catalog).resolve(request)
}

/// The request turned into obligations over the index.
pub(crate) struct Compiled<'r> {
    pub request: &'r Request,
    pub local: Vec<Vec<BundleId>>,
    /// Why a `Never` obligation from the request cannot be met (indexed by `Cands::Local`).
    pub notes: Vec<Option<Problem>>,
    pub installed: Vec<Option<BundleId>>,
    /// Obligations of installed packages nobody subscribed to (they stay as they are).
    pub pins: Vec<Ob>,
    /// One obligation per subscription, in request order.
    pub subs: Vec<Ob>,
    pub warnings: Vec<String>,
}

impl<'r> Compiled<'r> {
    fn lists(&self) -> Lists<'_> {
        Lists {
            local: &self.local,
            installed: &self.installed,
        }
    }
}

impl<'c> Resolver<'c> {
    pub fn new(catalog: &'c Catalog) -> Resolver<'c> {
        Resolver {
            catalog,
            index: Index::build(catalog),
        }
    }

    /// The bundles to install, upgrade or keep, in dependency order; or why none fit.
    pub fn resolve(&self, request: &Request) -> Result<Plan, Box<Unsatisfiable>> {
        let compiled = self.compile(request);
        let lists = compiled.lists();
        let mut state = State::new(&self.index);
        let mut obs: Vec<Ob> = compiled
            .pins
            .iter()
            .chain(&compiled.subs)
            .copied()
            .collect();
        let mut stats = Stats::default();
        if search::search(&self.index, &lists, &mut state, &mut obs, &mut stats) {
            Ok(plan::build(&self.index, &compiled, &state, stats))
        } else {
            Err(Box::new(explain::explain(&self.index, &compiled)))
        }
    }

    fn compile<'r>(&self, request: &'r Request) -> Compiled<'r> {
        let ix = &self.index;
        let mut c = Compiled {
            request,
            local: Vec::new(),
            notes: Vec::new(),
            installed: vec![None; ix.packages.len()],
            pins: Vec::new(),
            subs: Vec::new(),
            warnings: Vec::new(),
        };
        for inst in &request.installed {
            let Some(&pkg) = ix.pkg_ids.get(inst.package.as_str()) else {
                c.warnings.push(format!(
                    "installed package {} {} is not in the catalog; what it owns is unknown",
                    inst.package, inst.version
                ));
                continue;
            };
            let found = inst.bundle.as_deref().and_then(|n| ix.find_name(pkg, n));
            match found.or_else(|| ix.find_version(pkg, &inst.version)) {
                Some(b) => c.installed[pkg as usize] = Some(b),
                None => c.warnings.push(format!(
                    "installed {} {} is not in the catalog; what it owns is unknown",
                    inst.package, inst.version
                )),
            }
        }
        let subscribed: Vec<&str> = request
            .subscriptions
            .iter()
            .map(|s| s.package.as_str())
            .collect();
        for (pkg, b) in c.installed.clone().iter().enumerate() {
            let Some(b) = b else { continue };
            if subscribed.contains(&ix.package(pkg as u32).package.name.as_str()) {
                continue;
            }
            let list = c.local.len() as u32;
            c.local.push(vec![*b]);
            c.notes.push(None);
            c.pins.push(Ob::Pkg {
                pkg: pkg as u32,
                cands: Cands::Local(list),
                origin: Origin::Installed(pkg as u32),
            });
        }
        for (i, sub) in request.subscriptions.iter().enumerate() {
            let origin = Origin::Subscription(i as u32);
            let slot = c.local.len() as u32;
            match self.subscription_candidates(sub, &c) {
                Ok((pkg, list)) => {
                    c.local.push(list);
                    c.notes.push(None);
                    c.subs.push(Ob::Pkg {
                        pkg,
                        cands: Cands::Local(slot),
                        origin,
                    });
                }
                Err(problem) => {
                    c.local.push(Vec::new());
                    c.notes.push(Some(*problem));
                    c.subs.push(Ob::Never {
                        why: Cands::Local(slot),
                        origin,
                    });
                }
            }
        }
        c
    }

    /// The bundles a subscription may be satisfied by, best first.
    fn subscription_candidates(
        &self,
        sub: &Subscription,
        c: &Compiled<'_>,
    ) -> Result<(u32, Vec<BundleId>), Box<Problem>> {
        let ix = &self.index;
        let pkg = *ix.pkg_ids.get(sub.package.as_str()).ok_or_else(|| {
            Box::new(Problem::NoSuchPackage {
                package: sub.package.clone(),
            })
        })?;
        let package = &self.catalog.packages[&sub.package];
        let channel = match &sub.channel {
            Some(name) => package.channels.get(name).ok_or_else(|| {
                Box::new(Problem::NoSuchChannel {
                    package: sub.package.clone(),
                    channel: name.clone(),
                    channels: package.channels.keys().cloned().collect(),
                })
            })?,
            None => package.default_channel().ok_or_else(|| {
                Box::new(Problem::NoDefaultChannel {
                    package: sub.package.clone(),
                    channels: package.channels.keys().cloned().collect(),
                })
            })?,
        };
        let graph = UpgradeGraph::build(package, channel);
        let in_range = |b: BundleId| {
            sub.range
                .as_ref()
                .is_none_or(|r| r.matches(&ix.bundle(b).bundle.version))
        };
        let installed = c.installed[pkg as usize];
        let installed_version = request_version(c.request, &sub.package);
        // Which entries the subscription may land on.
        let allowed: Vec<&str> = match (installed_version, sub.policy) {
            (Some(_), Policy::Any) | (None, _) => {
                channel.entries.iter().map(|e| e.name.as_str()).collect()
            }
            (Some(v), policy) => {
                let name = installed.map(|b| ix.bundle(b).bundle.name.as_str());
                let firsts: Vec<&str> = match name.filter(|n| graph.node(n).is_some()) {
                    Some(n) => vec![n],
                    None => graph
                        .successors_of_external(name, v, channel)
                        .into_iter()
                        .map(|(n, _)| n.name.as_str())
                        .collect(),
                };
                let mut out: Vec<&str> = graph
                    .reachable_from(firsts.iter().copied())
                    .into_iter()
                    .filter(|n| {
                        policy != Policy::Semver
                            || n.version.as_ref().is_some_and(|nv| {
                                windlass_catalog::range::precedence(nv, v).is_gt()
                            })
                    })
                    .map(|n| n.name.as_str())
                    .collect();
                if name.is_none_or(|n| graph.node(n).is_none()) {
                    out.extend(firsts);
                }
                out
            }
        };
        let head = graph.head().map(|h| h.name.as_str());
        let mut list: Vec<BundleId> = Vec::new();
        if let Some(b) = installed.filter(|b| in_range(*b)) {
            list.push(b);
        }
        let mut rest: Vec<BundleId> = allowed
            .iter()
            .filter_map(|n| ix.find_name(pkg, n))
            .filter(|b| in_range(*b) && Some(*b) != installed)
            .collect();
        rest.sort_by(|a, b| {
            let (ba, bb) = (ix.bundle(*a).bundle, ix.bundle(*b).bundle);
            (head != Some(ba.name.as_str()))
                .cmp(&(head != Some(bb.name.as_str())))
                .then_with(|| windlass_catalog::range::precedence(&bb.version, &ba.version))
                .then_with(|| ba.name.cmp(&bb.name))
        });
        rest.dedup();
        list.extend(rest);
        if list.is_empty() {
            let mut available: Vec<BundleRef> = channel
                .entries
                .iter()
                .filter_map(|e| ix.find_name(pkg, &e.name))
                .map(|b| BundleRef::of(ix, b))
                .collect();
            available.sort_by(|a, b| windlass_catalog::range::precedence(&b.version, &a.version));
            let in_range = available
                .iter()
                .filter(|a| sub.range.as_ref().is_none_or(|r| r.matches(&a.version)))
                .count();
            return Err(Box::new(Problem::NothingInChannel {
                in_range,
                package: sub.package.clone(),
                channel: channel.name.clone(),
                range: sub.range.as_ref().map(|r| r.to_string()),
                installed: installed_version.map(|v| v.to_string()),
                policy: sub.policy,
                available,
            }));
        }
        Ok((pkg, list))
    }
}

fn request_version<'r>(request: &'r Request, package: &str) -> Option<&'r Version> {
    request
        .installed
        .iter()
        .find(|i| i.package == package)
        .map(|i| &i.version)
}

#[cfg(test)]
mod constraint_tests;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
