//! Channel validation: heads, cycles, stranded entries, dangling edges.
//!
//! The rules follow OLM's catalog model: the head is the one entry no other entry replaces or
//! skips; walking `replaces` from the head must not loop and must reach every entry that nobody
//! skips; the tail of that walk may replace an entry the channel does not have (older versions are
//! routinely pruned from catalogs). Every problem names the entries involved so a catalog author
//! can fix it without a graph viewer.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;

use serde::Serialize;

use crate::model::{Channel, Name, Package};
use crate::name::FastHasher;
use crate::range::VersionRange;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warning,
    Error,
}

/// One thing wrong with a channel. `Display` gives the message for people.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum ChannelProblem {
    /// Every entry is replaced or skipped by another one, so there is nothing to install.
    NoHead { package: String, channel: String },
    /// More than one entry is left unreplaced: subscribers would not know which is newest.
    SeveralHeads {
        package: String,
        channel: String,
        heads: Vec<String>,
    },
    /// `replaces` loops; `chain` starts and ends with the same entry.
    Cycle {
        package: String,
        channel: String,
        chain: Vec<String>,
    },
    /// Entries that no upgrade from the head's chain reaches and nobody skips.
    Stranded {
        package: String,
        channel: String,
        entries: Vec<String>,
    },
    /// An entry's `replaces` names an entry the channel lacks, and it is not the chain's tail.
    DanglingReplaces {
        package: String,
        channel: String,
        entry: String,
        missing: String,
    },
    /// An entry skips an entry the channel lacks (common after pruning; worth knowing).
    DanglingSkip {
        package: String,
        channel: String,
        entry: String,
        missing: String,
    },
    /// The `olm.skipRange` of an entry cannot be parsed.
    BadSkipRange {
        package: String,
        channel: String,
        entry: String,
        range: String,
        error: String,
    },
    /// The same entry is listed twice in the channel.
    DuplicateEntry {
        package: String,
        channel: String,
        entry: String,
    },
    /// A channel entry names a bundle the package does not have.
    UnknownBundle {
        package: String,
        channel: String,
        entry: String,
    },
}

impl ChannelProblem {
    pub fn severity(&self) -> Severity {
        match self {
            ChannelProblem::DanglingReplaces { .. } | ChannelProblem::DanglingSkip { .. } => {
                Severity::Warning
            }
            _ => Severity::Error,
        }
    }
}

impl fmt::Display for ChannelProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ChannelProblem::*;
        match self {
            NoHead { package, channel } => write!(
                f,
                "package {package} channel {channel}: no channel head (every entry is replaced or skipped by another)"
            ),
            SeveralHeads {
                package,
                channel,
                heads,
            } => write!(
                f,
                "package {package} channel {channel}: several channel heads ({}); exactly one entry may be left unreplaced",
                heads.join(", ")
            ),
            Cycle {
                package,
                channel,
                chain,
            } => write!(
                f,
                "package {package} channel {channel}: replaces chain loops: {}",
                chain.join(" -> ")
            ),
            Stranded {
                package,
                channel,
                entries,
            } => write!(
                f,
                "package {package} channel {channel}: stranded entries {} are neither on the replaces chain from the head nor skipped",
                entries.join(", ")
            ),
            DanglingReplaces {
                package,
                channel,
                entry,
                missing,
            } => write!(
                f,
                "package {package} channel {channel}: {entry} replaces {missing}, which is not in the channel"
            ),
            DanglingSkip {
                package,
                channel,
                entry,
                missing,
            } => write!(
                f,
                "package {package} channel {channel}: {entry} skips {missing}, which is not in the channel"
            ),
            BadSkipRange {
                package,
                channel,
                entry,
                range,
                error,
            } => write!(
                f,
                "package {package} channel {channel}: {entry} has olm.skipRange {range:?} that cannot be read: {error}"
            ),
            DuplicateEntry {
                package,
                channel,
                entry,
            } => {
                write!(
                    f,
                    "package {package} channel {channel}: entry {entry} is listed twice"
                )
            }
            UnknownBundle {
                package,
                channel,
                entry,
            } => write!(
                f,
                "package {package} channel {channel}: entry {entry} names a bundle the package does not have"
            ),
        }
    }
}

/// The single entry no other entry replaces or skips, or the list of candidates when there is
/// not exactly one (empty: no head; several: ambiguous).
pub fn channel_heads(channel: &Channel) -> Vec<&str> {
    // Hashed, not ordered: loading a catalog asks this of every channel, and the heads are
    // sorted below anyway.
    let mut incoming: HashSet<&str, FastHasher> =
        HashSet::with_capacity_and_hasher(channel.entries.len(), FastHasher::default());
    for e in &channel.entries {
        incoming.extend(e.replaces.as_deref());
        incoming.extend(e.skips.iter().map(Name::as_str));
    }
    let mut heads: Vec<&str> = channel
        .entries
        .iter()
        .map(|e| e.name.as_str())
        .filter(|n| !incoming.contains(n))
        .collect();
    heads.sort_unstable();
    heads.dedup();
    heads
}

/// Every problem of one channel, errors and warnings, in a stable order.
pub fn validate_channel(package: &Package, channel: &Channel) -> Vec<ChannelProblem> {
    let pkg = || package.name.clone();
    let ch = || channel.name.clone();
    let mut problems = Vec::new();
    if channel.entries.is_empty() {
        return problems;
    }

    let names: BTreeSet<&str> = channel.entries.iter().map(|e| e.name.as_str()).collect();
    let mut by_name: BTreeMap<&str, &crate::model::ChannelEntry> = BTreeMap::new();
    for e in &channel.entries {
        if by_name.insert(e.name.as_str(), e).is_some() {
            problems.push(ChannelProblem::DuplicateEntry {
                package: pkg(),
                channel: ch(),
                entry: e.name.to_string(),
            });
        }
        if !package.bundles.is_empty() && !package.bundles.contains_key(e.name.as_str()) {
            problems.push(ChannelProblem::UnknownBundle {
                package: pkg(),
                channel: ch(),
                entry: e.name.to_string(),
            });
        }
        if let Some(range) = &e.skip_range
            && let Err(err) = VersionRange::parse(range)
        {
            problems.push(ChannelProblem::BadSkipRange {
                package: pkg(),
                channel: ch(),
                entry: e.name.to_string(),
                range: range.to_string(),
                error: err.to_string(),
            });
        }
        for skip in &e.skips {
            if !names.contains(skip.as_str()) {
                problems.push(ChannelProblem::DanglingSkip {
                    package: pkg(),
                    channel: ch(),
                    entry: e.name.to_string(),
                    missing: skip.to_string(),
                });
            }
        }
    }

    for chain in replaces_cycles(&by_name) {
        problems.push(ChannelProblem::Cycle {
            package: pkg(),
            channel: ch(),
            chain,
        });
    }

    let heads = channel_heads(channel);
    let head = match heads.as_slice() {
        [] => {
            problems.push(ChannelProblem::NoHead {
                package: pkg(),
                channel: ch(),
            });
            return problems;
        }
        [one] => *one,
        several => {
            problems.push(ChannelProblem::SeveralHeads {
                package: pkg(),
                channel: ch(),
                heads: several.iter().map(|s| s.to_string()).collect(),
            });
            return problems;
        }
    };

    // Walk the replaces chain from the head; a loop here was reported above.
    let mut on_chain: BTreeSet<&str> = BTreeSet::new();
    let mut cur = Some(head);
    while let Some(name) = cur {
        if !on_chain.insert(name) {
            break;
        }
        cur = by_name.get(name).and_then(|e| e.replaces.as_deref());
    }
    let skipped: BTreeSet<&str> = channel
        .entries
        .iter()
        .flat_map(|e| e.skips.iter().map(Name::as_str))
        .collect();
    let stranded: Vec<String> = by_name
        .keys()
        .filter(|n| !on_chain.contains(*n) && !skipped.contains(*n))
        .map(|n| n.to_string())
        .collect();
    if !stranded.is_empty() {
        problems.push(ChannelProblem::Stranded {
            package: pkg(),
            channel: ch(),
            entries: stranded,
        });
    }

    // A missing `replaces` target is expected only at the tail of the head's chain.
    for e in by_name.values() {
        if let Some(r) = &e.replaces
            && !by_name.contains_key(r.as_str())
            && !on_chain.contains(e.name.as_str())
        {
            problems.push(ChannelProblem::DanglingReplaces {
                package: pkg(),
                channel: ch(),
                entry: e.name.to_string(),
                missing: r.to_string(),
            });
        }
    }
    problems
}

/// Each loop in the `replaces` pointers once, starting at its alphabetically first entry.
fn replaces_cycles(by_name: &BTreeMap<&str, &crate::model::ChannelEntry>) -> Vec<Vec<String>> {
    let mut done: BTreeSet<&str> = BTreeSet::new();
    let mut cycles = Vec::new();
    for &start in by_name.keys() {
        let mut path: Vec<&str> = Vec::new();
        let mut cur = Some(start);
        while let Some(name) = cur {
            if done.contains(name) {
                break;
            }
            if let Some(pos) = path.iter().position(|p| *p == name) {
                let mut ring: Vec<&str> = path[pos..].to_vec();
                let min = ring
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, n)| **n)
                    .map_or(0, |(i, _)| i);
                ring.rotate_left(min);
                let mut chain: Vec<String> = ring.iter().map(|s| s.to_string()).collect();
                chain.push(chain[0].clone());
                cycles.push(chain);
                break;
            }
            path.push(name);
            cur = by_name.get(name).and_then(|e| e.replaces.as_deref());
        }
        done.extend(path);
    }
    cycles
}

#[cfg(test)]
mod tests;
