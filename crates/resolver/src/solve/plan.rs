//! A successful resolution as a list of steps, dependencies before the bundles that need them.

use std::collections::{BTreeMap, BTreeSet};

use semver::Version;
use serde::Serialize;
use windlass_catalog::range::precedence;

use super::{
    Compiled,
    explain::origin_label,
    index::{BundleId, Index, Req},
    search::{Origin, State, Stats},
};

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "camelCase")]
pub enum Action {
    Install,
    Upgrade { from: Version },
    Downgrade { from: Version },
    Keep,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub package: String,
    pub bundle: String,
    pub version: Version,
    #[serde(flatten)]
    pub action: Action,
    /// Who needs this bundle: subscriptions, installed packages, other bundles.
    pub required_by: Vec<String>,
    /// Bundles (CSV names) this one needs, all earlier in the plan unless they form a cycle.
    pub depends_on: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub steps: Vec<Step>,
    pub warnings: Vec<String>,
    /// How many choices the search made (a measure of effort, for tuning).
    pub decisions: u64,
}

impl Plan {
    /// The steps that change something (install, upgrade, downgrade).
    pub fn changes(&self) -> impl Iterator<Item = &Step> {
        self.steps.iter().filter(|s| s.action != Action::Keep)
    }
}

pub(crate) fn build(ix: &Index<'_>, c: &Compiled<'_>, state: &State, stats: Stats) -> Plan {
    let chosen: BTreeSet<BundleId> = state.chosen().collect();
    let mut deps: BTreeMap<BundleId, BTreeSet<BundleId>> = BTreeMap::new();
    let mut needed_by: BTreeMap<BundleId, Vec<String>> = BTreeMap::new();
    for &b in &chosen {
        let info = ix.bundle(b);
        if let Some((_, origin)) = state.assigned[info.pkg as usize]
            && !matches!(origin, Origin::Bundle(_))
        {
            needed_by
                .entry(b)
                .or_default()
                .push(origin_label(ix, c, origin));
        }
        for (r, req) in ix.requires(b).iter().enumerate() {
            let dep = match *req {
                Req::Package(i) => ix
                    .package_req(i)
                    .pkg
                    .and_then(|p| state.assigned[p as usize].map(|(d, _)| d)),
                Req::Gvk(g) => state.owner[g as usize],
                Req::Constraint(_) => state.satisfier(ix, b, r as u32),
            };
            if let Some(d) = dep.filter(|d| *d != b) {
                deps.entry(b).or_default().insert(d);
                needed_by
                    .entry(d)
                    .or_default()
                    .push(origin_label(ix, c, Origin::Bundle(b)));
            }
        }
    }
    let order = dependency_order(&chosen, &deps, |b| {
        let info = ix.bundle(b);
        (info.bundle.package.clone(), info.bundle.name.clone())
    });
    let steps = order
        .into_iter()
        .map(|b| {
            let info = ix.bundle(b);
            let bundle = info.bundle;
            let action = match c.installed[info.pkg as usize] {
                Some(i) if i == b => Action::Keep,
                _ => match c
                    .request
                    .installed
                    .iter()
                    .find(|i| i.package == bundle.package)
                {
                    None => Action::Install,
                    Some(i) => match precedence(&bundle.version, &i.version) {
                        std::cmp::Ordering::Greater => Action::Upgrade {
                            from: i.version.clone(),
                        },
                        std::cmp::Ordering::Less => Action::Downgrade {
                            from: i.version.clone(),
                        },
                        std::cmp::Ordering::Equal => Action::Keep,
                    },
                },
            };
            let mut required_by = needed_by.remove(&b).unwrap_or_default();
            required_by.sort();
            required_by.dedup();
            let mut depends_on: Vec<String> = deps
                .get(&b)
                .into_iter()
                .flatten()
                .map(|d| ix.bundle(*d).bundle.name.clone())
                .collect();
            depends_on.sort();
            Step {
                package: bundle.package.to_string(),
                bundle: bundle.name.clone(),
                version: bundle.version.clone(),
                action,
                required_by,
                depends_on,
            }
        })
        .collect();
    Plan {
        steps,
        warnings: c.warnings.clone(),
        decisions: stats.decisions,
    }
}

/// Dependencies first. Bundles on a dependency cycle are kept together (in name order); among
/// independent bundles the one first in name order goes first, so the order is the same for the
/// same input.
fn dependency_order<K: Ord>(
    chosen: &BTreeSet<BundleId>,
    deps: &BTreeMap<BundleId, BTreeSet<BundleId>>,
    key: impl Fn(BundleId) -> K,
) -> Vec<BundleId> {
    use petgraph::graph::{DiGraph, NodeIndex};
    let mut g: DiGraph<BundleId, ()> = DiGraph::new();
    let nodes: BTreeMap<BundleId, NodeIndex> =
        chosen.iter().map(|b| (*b, g.add_node(*b))).collect();
    for (b, ds) in deps {
        for d in ds {
            if let (Some(from), Some(to)) = (nodes.get(d), nodes.get(b)) {
                g.add_edge(*from, *to, ());
            }
        }
    }
    let mut sccs: Vec<Vec<BundleId>> = petgraph::algo::tarjan_scc(&g)
        .into_iter()
        .map(|c| {
            let mut members: Vec<BundleId> = c.into_iter().map(|n| g[n]).collect();
            members.sort_by_key(|b| key(*b));
            members
        })
        .collect();
    let mut scc_of: BTreeMap<BundleId, usize> = BTreeMap::new();
    for (i, c) in sccs.iter().enumerate() {
        for b in c {
            scc_of.insert(*b, i);
        }
    }
    let mut indegree = vec![0usize; sccs.len()];
    let mut dependents: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); sccs.len()];
    for (b, ds) in deps {
        for d in ds {
            if let (Some(&from), Some(&to)) = (scc_of.get(d), scc_of.get(b))
                && from != to
                && dependents[from].insert(to)
            {
                indegree[to] += 1;
            }
        }
    }
    let mut ready: BTreeSet<(K, usize)> = (0..sccs.len())
        .filter(|i| indegree[*i] == 0)
        .map(|i| (key(sccs[i][0]), i))
        .collect();
    let mut order = Vec::with_capacity(chosen.len());
    while let Some((_, i)) = ready.pop_first() {
        order.append(&mut sccs[i]);
        for &t in &dependents[i] {
            indegree[t] -= 1;
            if indegree[t] == 0 {
                ready.insert((key(sccs[t][0]), t));
            }
        }
    }
    order
}
