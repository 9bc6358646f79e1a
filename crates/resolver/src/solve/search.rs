//! The complete backtracking search.
//!
//! Obligations are met in order; when one has a choice, its candidates are tried best first
//! and the search backtracks chronologically on a dead end. Every solution assigns each
//! obligation one of its candidates, and the search tries every candidate of every obligation it
//! reaches, so if any installation satisfies all obligations the search finds one (the first in
//! preference order): it is complete. It keeps no recursion, so deep dependency chains cannot
//! overflow the stack.

use super::index::{BundleId, GvkId, Index, PackageReq, PkgId, Req};

/// Who asked for something, kept so explanations can say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    Subscription(u32),
    Installed(PkgId),
    Bundle(BundleId),
}

/// Where an obligation's candidates come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cands {
    /// Requirement `req` of bundle `bundle` (candidates precomputed in the index).
    Req(BundleId, u32),
    /// A list the request built (subscriptions, installed packages).
    Local(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ob {
    Pkg {
        pkg: PkgId,
        cands: Cands,
        origin: Origin,
    },
    Gvk {
        gvk: GvkId,
        origin: Origin,
    },
    /// Some chosen bundle must satisfy constraint `cands` (always a `Cands::Req`).
    Constraint {
        cands: Cands,
        origin: Origin,
    },
    /// Cannot be met at all (unknown package, unreadable range, missing channel...): `why`
    /// points at the requirement (or the request's note) that says which.
    Never {
        why: Cands,
        origin: Origin,
    },
}

impl Ob {
    pub fn origin(&self) -> Origin {
        match self {
            Ob::Pkg { origin, .. }
            | Ob::Gvk { origin, .. }
            | Ob::Constraint { origin, .. }
            | Ob::Never { origin, .. } => *origin,
        }
    }
}

/// The partial installation: one bundle per package, one owner per API.
#[derive(Clone, Debug)]
pub(crate) struct State {
    pub assigned: Vec<Option<(BundleId, Origin)>>,
    pub owner: Vec<Option<BundleId>>,
    trail: Vec<BundleId>,
}

impl State {
    pub fn new(index: &Index<'_>) -> State {
        State {
            assigned: vec![None; index.packages.len()],
            owner: vec![None; index.gvks.len()],
            trail: Vec::new(),
        }
    }

    /// Why `b` cannot join: its package holds another bundle, or an API it owns has an owner.
    pub fn clash(&self, index: &Index<'_>, b: BundleId) -> Option<Clash> {
        let info = index.bundle(b);
        if let Some((held, _)) = self.assigned[info.pkg as usize] {
            return (held != b).then_some(Clash::Package(held));
        }
        index
            .provides(b)
            .iter()
            .find_map(|g| self.owner[*g as usize].map(|o| Clash::Api(*g, o)))
    }

    /// Add `b`; the caller checked `clash` and `b` is not yet in.
    pub fn assign(&mut self, index: &Index<'_>, b: BundleId, origin: Origin) {
        let info = index.bundle(b);
        self.assigned[info.pkg as usize] = Some((b, origin));
        for g in index.provides(b) {
            self.owner[*g as usize] = Some(b);
        }
        self.trail.push(b);
    }

    fn undo_to(&mut self, index: &Index<'_>, len: usize) {
        while self.trail.len() > len {
            let Some(b) = self.trail.pop() else { break };
            let info = index.bundle(b);
            self.assigned[info.pkg as usize] = None;
            for g in index.provides(b) {
                self.owner[*g as usize] = None;
            }
        }
    }

    pub fn chosen(&self) -> impl Iterator<Item = BundleId> + '_ {
        self.trail.iter().copied()
    }

    /// A chosen bundle that satisfies constraint requirement `r` of bundle `b`, if any.
    pub fn satisfier(&self, index: &Index<'_>, b: BundleId, r: u32) -> Option<BundleId> {
        let cands = index.constraint_cands(b, r);
        let held =
            |c: BundleId| self.assigned[index.bundle(c).pkg as usize].is_some_and(|(h, _)| h == c);
        // Walk whichever list is shorter: the choices so far, or the constraint's candidates.
        if cands.ordered.len() <= self.trail.len() {
            cands.ordered.iter().copied().find(|c| held(*c))
        } else {
            self.trail.iter().copied().find(|c| cands.contains(*c))
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Clash {
    Package(BundleId),
    Api(GvkId, BundleId),
}

/// What the search needs from the request beyond the index.
pub(crate) struct Lists<'a> {
    pub local: &'a [Vec<BundleId>],
    /// Installed bundle per package (tried first wherever it is a candidate).
    pub installed: &'a [Option<BundleId>],
}

pub(crate) fn candidates<'a>(
    index: &'a Index<'_>,
    lists: &'a Lists<'_>,
    cands: Cands,
) -> &'a [BundleId] {
    match cands {
        Cands::Req(b, r) => match index.requires(b)[r as usize] {
            Req::Package(i) => &index.package_req(i).cands,
            Req::Constraint(_) => &index.constraint_cands(b, r).ordered,
            Req::Gvk(_) => &[],
        },
        Cands::Local(i) => &lists.local[i as usize],
    }
}

/// The obligations bundle `b` brings.
pub(crate) fn obligations_of(index: &Index<'_>, b: BundleId) -> Vec<Ob> {
    let origin = Origin::Bundle(b);
    index
        .requires(b)
        .iter()
        .enumerate()
        .map(|(r, req)| match *req {
            Req::Package(i) => match index.package_req(i) {
                PackageReq {
                    pkg: Some(pkg),
                    bad_range: None,
                    ..
                } => Ob::Pkg {
                    pkg: *pkg,
                    cands: Cands::Req(b, r as u32),
                    origin,
                },
                _ => Ob::Never {
                    why: Cands::Req(b, r as u32),
                    origin,
                },
            },
            Req::Gvk(g) => Ob::Gvk { gvk: g, origin },
            Req::Constraint(c) if index.constraints[c as usize].parsed.is_ok() => Ob::Constraint {
                cands: Cands::Req(b, r as u32),
                origin,
            },
            Req::Constraint(_) => Ob::Never {
                why: Cands::Req(b, r as u32),
                origin,
            },
        })
        .collect()
}

struct Frame {
    pos: usize,
    order: Vec<BundleId>,
    next: usize,
    trail_len: usize,
    obs_len: usize,
}

/// Search counters, for benchmarks and budgets.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Stats {
    pub decisions: u64,
}

/// Meet `obs` (and everything the chosen bundles bring) on top of `state`. On success `state`
/// holds the answer; on failure it is back where it started.
pub(crate) fn search(
    index: &Index<'_>,
    lists: &Lists<'_>,
    state: &mut State,
    obs: &mut Vec<Ob>,
    stats: &mut Stats,
) -> bool {
    let base_trail = state.trail.len();
    let base_obs = obs.len();
    let mut frames: Vec<Frame> = Vec::new();
    let mut pos = 0;
    'outer: loop {
        // Advance over obligations that need no choice.
        let mut dead = false;
        while pos < obs.len() {
            match obs[pos] {
                Ob::Never { .. } => {
                    dead = true;
                    break;
                }
                Ob::Gvk { gvk, .. } if state.owner[gvk as usize].is_some() => pos += 1,
                Ob::Constraint {
                    cands: Cands::Req(b, r),
                    ..
                } if state.satisfier(index, b, r).is_some() => pos += 1,
                Ob::Pkg { pkg, cands, .. } if state.assigned[pkg as usize].is_some() => {
                    let held = state.assigned[pkg as usize].map(|(b, _)| b);
                    if held.is_some_and(|h| candidates(index, lists, cands).contains(&h)) {
                        pos += 1;
                    } else {
                        dead = true;
                        break;
                    }
                }
                ob => {
                    let order = ordered(index, lists, ob);
                    frames.push(Frame {
                        pos,
                        order,
                        next: 0,
                        trail_len: state.trail.len(),
                        obs_len: obs.len(),
                    });
                    break;
                }
            }
        }
        if !dead && pos >= obs.len() {
            return true;
        }
        // Try the next candidate of the newest choice point, backtracking as needed.
        loop {
            let Some(frame) = frames.last_mut() else {
                state.undo_to(index, base_trail);
                obs.truncate(base_obs);
                return false;
            };
            state.undo_to(index, frame.trail_len);
            obs.truncate(frame.obs_len);
            while frame.next < frame.order.len() {
                let b = frame.order[frame.next];
                frame.next += 1;
                if state.clash(index, b).is_some() {
                    continue;
                }
                stats.decisions += 1;
                let origin = obs[frame.pos].origin();
                state.assign(index, b, origin);
                obs.extend(obligations_of(index, b));
                pos = frame.pos + 1;
                continue 'outer;
            }
            frames.pop();
        }
    }
}

/// `list` and those of its bundles that are installed now.
fn installed_among<'a>(
    index: &Index<'_>,
    lists: &Lists<'_>,
    list: &'a [BundleId],
) -> (&'a [BundleId], Vec<BundleId>) {
    let installed = list
        .iter()
        .copied()
        .filter(|b| lists.installed[index.bundle(*b).pkg as usize] == Some(*b))
        .collect();
    (list, installed)
}

/// Candidates of a choice, best first: the installed bundle leads wherever it qualifies.
pub(crate) fn ordered(index: &Index<'_>, lists: &Lists<'_>, ob: Ob) -> Vec<BundleId> {
    let (list, installed): (&[BundleId], Vec<BundleId>) = match ob {
        Ob::Pkg { pkg, cands, .. } => (
            candidates(index, lists, cands),
            lists.installed[pkg as usize].into_iter().collect(),
        ),
        Ob::Gvk { gvk, .. } => installed_among(index, lists, &index.providers[gvk as usize]),
        Ob::Constraint { cands, .. } => {
            installed_among(index, lists, candidates(index, lists, cands))
        }
        Ob::Never { .. } => (&[], Vec::new()),
    };
    let mut order: Vec<BundleId> = installed
        .iter()
        .copied()
        .filter(|b| list.contains(b))
        .collect();
    order.extend(list.iter().copied().filter(|b| !installed.contains(b)));
    order
}
