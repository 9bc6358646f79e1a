//! Why a request has no answer, as short text for people and a serialisable tree for conditions.
//!
//! The search has already proven there is no answer; this module only finds a readable reason:
//! 1. a subscription that fails on its own (with the installed packages) is explained alone;
//! 2. otherwise the smallest group of subscriptions that cannot coexist is found (a failing
//!    prefix, then deletion of members that are not needed for the failure), the others are
//!    resolved, and the last one is explained against what they chose.
//!
//! An explanation walks a requirement's candidates (best first, a few of them) and says for each
//! why it was rejected: its package already holds another version, an API it owns already has
//! an owner, or one of its own requirements cannot be met (explained in turn, a few levels deep).

use std::fmt::{self, Write as _};

use semver::Version;
use serde::Serialize;

use super::{
    Compiled,
    index::{BundleId, Index, PackageReq, Req},
    search::{self, Cands, Clash, Ob, Origin, State, Stats, candidates, obligations_of, ordered},
};
use crate::policy::Policy;

/// Candidates examined per requirement; the rest are counted.
const SHOWN: usize = 3;
/// Requirement levels followed below the subscription.
const DEPTH: usize = 4;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BundleRef {
    pub package: String,
    pub bundle: String,
    pub version: Version,
}

impl BundleRef {
    pub(crate) fn of(ix: &Index<'_>, b: BundleId) -> BundleRef {
        let bundle = ix.bundle(b).bundle;
        BundleRef {
            package: bundle.package.to_string(),
            bundle: bundle.name.clone(),
            version: bundle.version.clone(),
        }
    }
}

impl fmt::Display for BundleRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} {})", self.bundle, self.package, self.version)
    }
}

/// What was asked for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Requirement {
    Subscription {
        package: String,
        channel: Option<String>,
        range: Option<String>,
    },
    Package {
        package: String,
        range: String,
    },
    Api {
        group: String,
        version: String,
        kind: String,
    },
    KeepInstalled {
        package: String,
        version: Version,
    },
    /// An `olm.constraint`: `constraint` is its one-line form, `message` its `failureMessage`.
    Constraint {
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        constraint: String,
    },
}

/// A requirement that fails before any single candidate is weighed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Problem {
    NoSuchPackage {
        package: String,
    },
    NoSuchChannel {
        package: String,
        channel: String,
        channels: Vec<String>,
    },
    NoDefaultChannel {
        package: String,
        channels: Vec<String>,
    },
    NothingInChannel {
        package: String,
        channel: String,
        range: Option<String>,
        installed: Option<String>,
        policy: Policy,
        available: Vec<BundleRef>,
        /// How many of `available` the range accepts (all when there is no range).
        in_range: usize,
    },
    BadRange {
        package: String,
        range: String,
        error: String,
    },
    NothingInRange {
        package: String,
        range: String,
        available: Vec<BundleRef>,
    },
    NoOwner {
        api: String,
    },
    /// The constraint cannot be read or compiled; the bundle carrying it is never chosen.
    BadConstraint {
        error: String,
    },
    /// No bundle in the catalog satisfies the constraint. `considered` lists the best of the
    /// bundles that were weighed (those of the package or API it names, or every bundle), and
    /// `more_considered` how many others were.
    NoBundleSatisfies {
        considered: Vec<BundleRef>,
        more_considered: usize,
    },
    /// The package already holds a version the requirement does not accept.
    PackageHeld {
        holder: BundleRef,
        needed_by: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Because {
    /// Another bundle of the same package is already chosen (one version per package).
    PackageHeld {
        holder: BundleRef,
        needed_by: String,
    },
    /// An API this bundle owns already has an owner (one owner per API).
    ApiOwned { api: String, owner: BundleRef },
    /// One of this bundle's own requirements cannot be met.
    Unmet { cause: Box<Cause> },
    /// Each requirement can be met, but not together with the rest of the installation.
    ConflictsWithRest,
    /// Not followed further (explanations stay short).
    NotExplored,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rejection {
    pub bundle: BundleRef,
    pub because: Because,
}

/// Why one requirement could not be met.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cause {
    pub needed_by: String,
    pub requirement: Requirement,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<Problem>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<Rejection>,
    /// Candidates not shown (rejected as well).
    #[serde(skip_serializing_if = "is_zero")]
    pub more_rejected: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// No installation satisfies the request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(rename_all = "camelCase")]
pub struct Unsatisfiable {
    /// A CamelCase constant for condition reasons.
    pub reason: String,
    /// One line for a condition message.
    pub message: String,
    /// The subscriptions the explanation involves.
    pub subscriptions: Vec<String>,
    /// What the other involved subscriptions resolved to (for conflicts between them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<String>,
    pub cause: Cause,
}

pub(crate) fn explain(ix: &Index<'_>, c: &Compiled<'_>) -> Unsatisfiable {
    let lists = c.lists();
    let ex = Explainer {
        ix,
        c,
        lists: &lists,
    };
    let mut base = State::new(ix);
    // The installed packages alone may already clash (two owners of one API).
    let mut prefix: Vec<Ob> = Vec::new();
    for pin in &c.pins {
        let mut obs = prefix.clone();
        obs.push(*pin);
        let mut trial = State::new(ix);
        if !ex.run(&mut trial, &mut obs) {
            let mut before = State::new(ix);
            ex.run(&mut before, &mut prefix.clone());
            let cause = ex.cause(&before, *pin, 0);
            return Unsatisfiable {
                reason: "InstalledPackagesConflict".into(),
                message: format!("the installed packages conflict: {}", cause.needed_by),
                subscriptions: Vec::new(),
                context: Vec::new(),
                cause,
            };
        }
        prefix.push(*pin);
    }
    ex.run(&mut base, &mut c.pins.clone());
    // Each question below is asked of the whole problem (pins included, from scratch), so a
    // choice made for the installed packages' own needs is never taken as fixed.
    let solve = |set: &[Ob]| {
        let mut s = State::new(ix);
        let mut obs: Vec<Ob> = c.pins.iter().chain(set).copied().collect();
        ex.run(&mut s, &mut obs).then_some(s)
    };
    for sub in &c.subs {
        if solve(std::slice::from_ref(sub)).is_none() {
            let cause = ex.cause(&base, *sub, 0);
            return Unsatisfiable {
                reason: "SubscriptionUnsatisfiable".into(),
                message: format!("cannot resolve {}", cause.needed_by),
                subscriptions: vec![cause.needed_by.clone()],
                context: Vec::new(),
                cause,
            };
        }
    }
    // Every subscription works alone: find the smallest failing prefix (failure is monotone in
    // the prefix), then drop members the failure does not need.
    let fails = |set: &[Ob]| solve(set).is_none();
    let (mut lo, mut hi) = (1, c.subs.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        if fails(&c.subs[..mid]) {
            hi = mid
        } else {
            lo = mid + 1
        }
    }
    let last = c.subs[hi.saturating_sub(1).min(c.subs.len().saturating_sub(1))];
    let mut group: Vec<Ob> = c.subs[..hi.saturating_sub(1)].to_vec();
    let mut i = 0;
    while i < group.len() {
        let mut without = group.clone();
        without.remove(i);
        without.push(last);
        if fails(&without) {
            group.remove(i);
        } else {
            i += 1;
        }
    }
    let ctx = solve(&group).unwrap_or_else(|| base.clone());
    let context: Vec<String> = group
        .iter()
        .map(|ob| {
            let s = solve(std::slice::from_ref(ob)).unwrap_or_else(|| base.clone());
            let mut chosen: Vec<String> = s
                .chosen()
                .filter(|b| base.assigned[ix.bundle(*b).pkg as usize].is_none())
                .map(|b| BundleRef::of(ix, b).to_string())
                .collect();
            chosen.sort();
            format!(
                "{} resolves to {}",
                ex.label(ob.origin()),
                chosen.join(", ")
            )
        })
        .collect();
    let cause = ex.cause(&ctx, last, 0);
    let mut subscriptions: Vec<String> = group.iter().map(|o| ex.label(o.origin())).collect();
    subscriptions.push(cause.needed_by.clone());
    Unsatisfiable {
        reason: "SubscriptionsConflict".into(),
        message: format!(
            "these subscriptions cannot be installed together: {}",
            subscriptions.join("; ")
        ),
        subscriptions,
        context,
        cause,
    }
}

struct Explainer<'a, 'c> {
    ix: &'a Index<'c>,
    c: &'a Compiled<'a>,
    lists: &'a search::Lists<'a>,
}

impl Explainer<'_, '_> {
    fn run(&self, state: &mut State, obs: &mut Vec<Ob>) -> bool {
        search::search(self.ix, self.lists, state, obs, &mut Stats::default())
    }

    fn label(&self, origin: Origin) -> String {
        origin_label(self.ix, self.c, origin)
    }

    fn cause(&self, state: &State, ob: Ob, depth: usize) -> Cause {
        let ix = self.ix;
        let mut cause = Cause {
            needed_by: self.label(ob.origin()),
            requirement: self.requirement(ob),
            problem: None,
            rejected: Vec::new(),
            more_rejected: 0,
        };
        let order = match ob {
            Ob::Never {
                why: Cands::Local(i),
                ..
            } => {
                cause.problem = self.c.notes.get(i as usize).cloned().flatten();
                return cause;
            }
            Ob::Never {
                why: Cands::Req(b, r),
                ..
            } => {
                match ix.requires(b)[r as usize] {
                    Req::Package(i) => {
                        let PackageReq {
                            name,
                            range,
                            bad_range,
                            ..
                        } = ix.package_req(i);
                        cause.problem = Some(match bad_range {
                            Some(error) => Problem::BadRange {
                                package: name.to_string(),
                                range: range.to_string(),
                                error: error.clone(),
                            },
                            None => Problem::NoSuchPackage {
                                package: name.to_string(),
                            },
                        });
                    }
                    Req::Constraint(c) => {
                        if let Err(error) = &ix.constraints[c as usize].parsed {
                            cause.problem = Some(Problem::BadConstraint {
                                error: error.clone(),
                            });
                        }
                    }
                    Req::Gvk(_) => {}
                }
                return cause;
            }
            Ob::Pkg { pkg, cands, .. } => {
                if let Some((holder, origin)) = state.assigned[pkg as usize] {
                    cause.problem = Some(Problem::PackageHeld {
                        holder: BundleRef::of(ix, holder),
                        needed_by: self.label(origin),
                    });
                    return cause;
                }
                if candidates(ix, self.lists, cands).is_empty() {
                    let mut available: Vec<BundleRef> = ix
                        .package(pkg)
                        .bundles
                        .iter()
                        .map(|b| BundleRef::of(ix, *b))
                        .collect();
                    available.sort_by(|a, b| {
                        windlass_catalog::range::precedence(&b.version, &a.version)
                    });
                    available.truncate(8);
                    if let Requirement::Package { package, range } = &cause.requirement {
                        cause.problem = Some(Problem::NothingInRange {
                            package: package.clone(),
                            range: range.clone(),
                            available,
                        });
                    }
                    return cause;
                }
                ordered(ix, self.lists, ob)
            }
            Ob::Constraint {
                cands: Cands::Req(b, r),
                ..
            } => {
                if ix.constraint_cands(b, r).ordered.is_empty() {
                    cause.problem = Some(constraint::nothing_satisfies(ix, b, r));
                    return cause;
                }
                ordered(ix, self.lists, ob)
            }
            Ob::Constraint { .. } => Vec::new(),
            Ob::Gvk { gvk, .. } => {
                if ix.providers[gvk as usize].is_empty() {
                    cause.problem = Some(Problem::NoOwner {
                        api: api_label(ix, gvk),
                    });
                    return cause;
                }
                ordered(ix, self.lists, ob)
            }
        };
        cause.more_rejected = order.len().saturating_sub(SHOWN);
        for b in order.into_iter().take(SHOWN) {
            let because = self.why_not(state, b, ob.origin(), depth);
            cause.rejected.push(Rejection {
                bundle: BundleRef::of(ix, b),
                because,
            });
        }
        cause
    }

    fn why_not(&self, state: &State, b: BundleId, origin: Origin, depth: usize) -> Because {
        let ix = self.ix;
        match state.clash(ix, b) {
            Some(Clash::Package(holder)) => {
                let by = state.assigned[ix.bundle(holder).pkg as usize].map(|(_, o)| o);
                return Because::PackageHeld {
                    holder: BundleRef::of(ix, holder),
                    needed_by: by.map(|o| self.label(o)).unwrap_or_default(),
                };
            }
            Some(Clash::Api(g, owner)) => {
                return Because::ApiOwned {
                    api: api_label(ix, g),
                    owner: BundleRef::of(ix, owner),
                };
            }
            None => {}
        }
        if depth >= DEPTH {
            return Because::NotExplored;
        }
        let mut with = state.clone();
        with.assign(ix, b, origin);
        let reqs = obligations_of(ix, b);
        for k in 0..reqs.len() {
            let mut trial = with.clone();
            if !self.run(&mut trial, &mut reqs[..=k].to_vec()) {
                let mut before = with.clone();
                self.run(&mut before, &mut reqs[..k].to_vec());
                return Because::Unmet {
                    cause: Box::new(self.cause(&before, reqs[k], depth + 1)),
                };
            }
        }
        Because::ConflictsWithRest
    }

    fn requirement(&self, ob: Ob) -> Requirement {
        let ix = self.ix;
        let bundle_req = |b: BundleId, r: u32| match ix.requires(b)[r as usize] {
            Req::Package(i) => {
                let req = ix.package_req(i);
                Requirement::Package {
                    package: req.name.to_string(),
                    range: req.range.to_string(),
                }
            }
            Req::Gvk(g) => gvk_requirement(ix, g),
            Req::Constraint(c) => {
                constraint::requirement(ix.bundle(b).bundle, r, &ix.constraints[c as usize].parsed)
            }
        };
        match (ob, ob.origin()) {
            (Ob::Gvk { gvk, .. }, _) => gvk_requirement(ix, gvk),
            (
                Ob::Pkg {
                    cands: Cands::Req(b, r),
                    ..
                }
                | Ob::Constraint {
                    cands: Cands::Req(b, r),
                    ..
                }
                | Ob::Never {
                    why: Cands::Req(b, r),
                    ..
                },
                _,
            ) => bundle_req(b, r),
            (_, Origin::Subscription(i)) => {
                let sub = &self.c.request.subscriptions[i as usize];
                Requirement::Subscription {
                    package: sub.package.clone(),
                    channel: sub.channel.clone(),
                    range: sub.range.as_ref().map(|r| r.to_string()),
                }
            }
            (_, Origin::Installed(pkg)) => {
                let b = self.c.installed[pkg as usize];
                let package = ix.package(pkg).package.name.clone();
                let version = b.map_or_else(
                    || Version::new(0, 0, 0),
                    |b| ix.bundle(b).bundle.version.clone(),
                );
                Requirement::KeepInstalled { package, version }
            }
            (_, Origin::Bundle(_)) => Requirement::Package {
                package: String::new(),
                range: String::new(),
            },
        }
    }
}

fn gvk_requirement(ix: &Index<'_>, g: u32) -> Requirement {
    let gvk = ix.gvks[g as usize];
    Requirement::Api {
        group: gvk.group.to_string(),
        version: gvk.version.to_string(),
        kind: gvk.kind.to_string(),
    }
}

fn api_label(ix: &Index<'_>, g: u32) -> String {
    let gvk = ix.gvks[g as usize];
    format!("{}/{} {}", gvk.group, gvk.version, gvk.kind)
}

pub(crate) fn origin_label(ix: &Index<'_>, c: &Compiled<'_>, origin: Origin) -> String {
    match origin {
        Origin::Subscription(i) => {
            let sub = &c.request.subscriptions[i as usize];
            let mut s = format!("subscription to {}", sub.package);
            if let Some(ch) = &sub.channel {
                let _ = write!(s, " (channel {ch})");
            }
            if let Some(r) = &sub.range {
                let _ = write!(s, " (versions {r})");
            }
            s
        }
        Origin::Installed(pkg) => format!("installed package {}", ix.package(pkg).package.name),
        Origin::Bundle(b) => BundleRef::of(ix, b).to_string(),
    }
}

mod constraint;
mod text;
