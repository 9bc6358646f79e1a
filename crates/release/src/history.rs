//! ClusterVersion history: one entry per release the cluster moved to, newest first, merged
//! and pruned the way the CVO does it.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// The CVO keeps at most this many entries.
pub const MAX_HISTORY: usize = 100;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum UpdateState {
    /// Every manifest was applied and the cluster was healthy at this release.
    Completed,
    /// The update started and did not (yet) complete.
    Partial,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    pub state: UpdateState,
    pub started_time: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Timestamp>,
    pub version: String,
    /// The payload image, by digest.
    pub image: String,
    /// Whether the payload's signatures were verified.
    pub verified: bool,
    /// What was overridden to start this update (forced preconditions, accepted risks).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub accepted_risks: String,
    /// windlass's own: the irreversible run levels this update has started applying. Rolling back
    /// past this entry is refused once it is not empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub crossed_irreversible: Vec<String>,
}

/// The release the cluster is asked to run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Desired {
    pub version: String,
    pub image: String,
}

fn same_release(entry: &mut HistoryEntry, desired: &Desired) -> bool {
    if !desired.image.is_empty() && desired.image == entry.image {
        if desired.version.is_empty() {
            return true;
        }
        if entry.version.is_empty() || desired.version == entry.version {
            entry.version = desired.version.clone();
            return true;
        }
    }
    if !desired.version.is_empty()
        && desired.version == entry.version
        && (entry.image.is_empty() || desired.image == entry.image)
    {
        entry.image = desired.image.clone();
        return true;
    }
    false
}

/// Records that the cluster is moving to (or, with `completed`, has reached) `desired`: the
/// newest entry is updated when it is the same release, otherwise it is closed and a new entry
/// goes on top. Without an image nothing is recorded (the update could not be reproduced).
pub fn record(
    history: &mut Vec<HistoryEntry>,
    desired: &Desired,
    verified: bool,
    now: Timestamp,
    completed: bool,
    accepted_risks: &str,
) {
    if desired.image.is_empty() {
        return;
    }
    let state = if completed {
        UpdateState::Completed
    } else {
        UpdateState::Partial
    };
    let fresh = |state| HistoryEntry {
        state,
        started_time: now,
        completion_time: (state == UpdateState::Completed).then_some(now),
        version: desired.version.clone(),
        image: desired.image.clone(),
        verified: false,
        accepted_risks: accepted_risks.to_string(),
        crossed_irreversible: Vec::new(),
    };
    let merged = match history.first_mut() {
        Some(last) => {
            if same_release(last, desired) {
                if completed {
                    last.state = UpdateState::Completed;
                    last.completion_time.get_or_insert(now);
                }
                last.accepted_risks = accepted_risks.to_string();
                true
            } else {
                last.completion_time.get_or_insert(now);
                false
            }
        }
        None => false,
    };
    if !merged {
        history.insert(0, fresh(state));
    }
    if verified {
        history[0].verified = true;
    }
    prune(history, MAX_HISTORY);
}

/// Notes that the newest update has started applying irreversible level `level`.
pub fn record_irreversible(history: &mut [HistoryEntry], level: &str) {
    if let Some(entry) = history.first_mut()
        && !entry.crossed_irreversible.iter().any(|l| l == level)
    {
        entry.crossed_irreversible.push(level.to_string());
    }
}

const FINAL_ENTRIES: usize = 4;
const MOST_IMPORTANT: f64 = 1000.0;
const INTERESTING: f64 = 30.0;
const PARTIAL_MINOR: f64 = 20.0;
const PARTIAL_Z_STREAM: f64 = -20.0;
const INDEX_WEIGHT: f64 = -1.01;

/// Removes the least informative entries until at most `max` remain. Each entry is ranked as
/// the CVO ranks it: the five newest, the oldest (initial) and the most recent completed entry
/// are kept; the first and last completed update of each minor are interesting; partial updates
/// inside a minor transition are worth more than partial updates inside a z-stream; newer
/// entries win ties.
pub fn prune(history: &mut Vec<HistoryEntry>, max: usize) {
    let kept = kept_after_pruning(history, max);
    let mut index = 0;
    history.retain(|_| {
        let keep = kept.contains(&index);
        index += 1;
        keep
    });
}

/// The indices (into `history`, in order) of the entries [`prune`] keeps, for callers that
/// keep history in a type of their own.
pub fn kept_after_pruning(history: &[HistoryEntry], max: usize) -> Vec<usize> {
    let mut indices: Vec<usize> = (0..history.len()).collect();
    let mut history = history.to_vec();
    while history.len() > max {
        let initial = history.len() - 1;
        let most_recent_completed = history
            .iter()
            .position(|e| e.state == UpdateState::Completed);
        let mut lowest = (f64::MAX, 0usize);
        for i in 0..history.len() {
            let mut rank = 0.0;
            if i == initial || i <= FINAL_ENTRIES || Some(i) == most_recent_completed {
                rank = MOST_IMPORTANT;
            } else if first_or_last_completed_in_minor(i, &history, initial) {
                rank += INTERESTING;
            } else if partial_between(i, &history, initial, same_minor) {
                rank += PARTIAL_MINOR;
            } else if partial_between(i, &history, initial, same_z_stream) {
                rank += PARTIAL_Z_STREAM;
            }
            rank += INDEX_WEIGHT * i as f64;
            if rank < lowest.0 {
                lowest = (rank, i);
            }
        }
        history.remove(lowest.1);
        indices.remove(lowest.1);
    }
    indices
}

fn older_completed(i: usize, h: &[HistoryEntry]) -> usize {
    (i + 1..h.len())
        .find(|&j| h[j].state == UpdateState::Completed)
        .unwrap_or(i)
}

fn newer_completed(i: usize, h: &[HistoryEntry]) -> usize {
    (0..i)
        .rev()
        .find(|&j| h[j].state == UpdateState::Completed)
        .unwrap_or(i)
}

fn part(version: &str, index: usize) -> &str {
    version.split('.').nth(index).unwrap_or("")
}

fn same_minor(a: &HistoryEntry, b: &HistoryEntry) -> bool {
    part(&a.version, 1) == part(&b.version, 1)
}

/// The CVO compares the minor and the third dot-separated field (patch, with any suffix).
fn same_z_stream(a: &HistoryEntry, b: &HistoryEntry) -> bool {
    same_minor(a, b) && part(&a.version, 2) == part(&b.version, 2)
}

fn first_or_last_completed_in_minor(i: usize, h: &[HistoryEntry], initial: usize) -> bool {
    if h[i].state == UpdateState::Partial {
        return false;
    }
    if i == 0 || i == initial {
        return true;
    }
    let older = older_completed(i, h);
    if older == i || !same_minor(&h[i], &h[older]) {
        return true;
    }
    let newer = newer_completed(i, h);
    newer == i || !same_minor(&h[i], &h[newer])
}

/// A partial entry between two completed ones that `same` says differ.
fn partial_between(
    i: usize,
    h: &[HistoryEntry],
    initial: usize,
    same: fn(&HistoryEntry, &HistoryEntry) -> bool,
) -> bool {
    if h[i].state == UpdateState::Completed || i == 0 || i == initial {
        return false;
    }
    let older = older_completed(i, h);
    if older == i {
        return false;
    }
    let newer = newer_completed(i, h);
    newer != i && !same(&h[older], &h[newer])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).unwrap()
    }

    fn desired(version: &str) -> Desired {
        Desired {
            version: version.into(),
            image: format!("r@sha256:{version}"),
        }
    }

    #[test]
    fn record_merges_the_same_release_and_opens_a_new_entry_for_another() {
        let mut h = Vec::new();
        record(&mut h, &desired("4.1.0"), false, at(0), false, "");
        record(&mut h, &desired("4.1.0"), true, at(10), true, "");
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].state, UpdateState::Completed);
        assert_eq!(h[0].completion_time, Some(at(10)));
        assert!(h[0].verified);
        record(
            &mut h,
            &desired("4.1.1"),
            false,
            at(20),
            false,
            "Forced: unsigned",
        );
        assert_eq!(h.len(), 2);
        assert_eq!(
            (
                h[0].version.as_str(),
                h[0].state,
                h[0].started_time,
                h[0].completion_time
            ),
            ("4.1.1", UpdateState::Partial, at(20), None)
        );
        assert_eq!(h[0].accepted_risks, "Forced: unsigned");
        assert_eq!(
            h[1].completion_time,
            Some(at(10)),
            "a completed entry keeps its time"
        );
        // Moving on from a partial update closes it.
        record(&mut h, &desired("4.1.0"), true, at(30), false, "");
        assert_eq!(h[1].state, UpdateState::Partial);
        assert_eq!(h[1].completion_time, Some(at(30)));
        record(
            &mut h,
            &Desired {
                version: "4.1.2".into(),
                image: String::new(),
            },
            false,
            at(40),
            false,
            "",
        );
        assert_eq!(h.len(), 3, "no image, no entry");
        record_irreversible(&mut h, "40");
        record_irreversible(&mut h, "40");
        assert_eq!(h[0].crossed_irreversible, vec!["40"]);
    }

    fn entry(version: &str, state: UpdateState) -> HistoryEntry {
        HistoryEntry {
            state,
            started_time: at(0),
            completion_time: None,
            version: version.into(),
            image: format!("r@sha256:{version}"),
            verified: true,
            accepted_risks: String::new(),
            crossed_irreversible: Vec::new(),
        }
    }

    fn versions(h: &[HistoryEntry]) -> Vec<&str> {
        h.iter().map(|e| e.version.as_str()).collect()
    }

    use UpdateState::{Completed as C, Partial as P};

    #[test]
    fn pruning_keeps_recent_initial_and_interesting_entries() {
        // Table from newest to oldest, pruned by one entry.
        type Case<'a> = (&'a [(&'a str, UpdateState)], &'a str);
        let table: &[Case] = &[
            // The oldest partial z-stream entry between two completed z-streams goes first.
            (
                &[
                    ("4.2.3", C),
                    ("4.2.2", C),
                    ("4.2.1", C),
                    ("4.2.0", C),
                    ("4.1.9", C),
                    ("4.1.8", C),
                    ("4.1.7", P),
                    ("4.1.6", C),
                ],
                "4.1.7",
            ),
            // A partial update inside a minor transition and the first completed update of a
            // minor both outrank a completed update in the middle of a minor.
            (
                &[
                    ("4.3.0", C),
                    ("4.2.9", C),
                    ("4.2.8", C),
                    ("4.2.7", C),
                    ("4.2.6", C),
                    ("4.2.5", C),
                    ("4.2.4", C),
                    ("4.2.1", P),
                    ("4.1.0", C),
                ],
                "4.2.5",
            ),
            // Without such a middle entry, the partial one goes before the first of its minor.
            (
                &[
                    ("4.3.0", C),
                    ("4.2.9", C),
                    ("4.2.8", C),
                    ("4.2.7", C),
                    ("4.2.6", C),
                    ("4.2.5", C),
                    ("4.2.1", P),
                    ("4.1.0", C),
                ],
                "4.2.1",
            ),
            // Among equals the older goes first.
            (
                &[
                    ("4.2.8", C),
                    ("4.2.7", C),
                    ("4.2.6", C),
                    ("4.2.5", C),
                    ("4.2.4", C),
                    ("4.2.3", C),
                    ("4.2.2", C),
                    ("4.2.0", C),
                ],
                "4.2.2",
            ),
        ];
        for (entries, removed) in table {
            let mut h: Vec<HistoryEntry> = entries.iter().map(|(v, s)| entry(v, *s)).collect();
            let before = versions(&h)
                .into_iter()
                .map(String::from)
                .collect::<Vec<_>>();
            prune(&mut h, entries.len() - 1);
            let after = versions(&h);
            let gone: Vec<&String> = before
                .iter()
                .filter(|v| !after.contains(&v.as_str()))
                .collect();
            assert_eq!(gone, vec![removed], "{before:?} -> {after:?}");
        }
    }

    #[test]
    fn pruning_a_long_history_keeps_the_bound_the_newest_and_the_initial_entry() {
        let mut h = Vec::new();
        for i in 0..250 {
            let version = format!("4.{}.{}", i / 20, i % 20);
            record(&mut h, &desired(&version), true, at(i), i % 3 != 0, "");
        }
        assert_eq!(h.len(), MAX_HISTORY);
        assert_eq!(h[0].version, "4.12.9");
        assert_eq!(h[1].version, "4.12.8");
        assert_eq!(
            h.last().unwrap().version,
            "4.0.0",
            "the initial entry stays"
        );
        for pair in h.windows(2) {
            assert!(pair[0].started_time > pair[1].started_time, "newest first");
        }
        // The indices kept name the same entries pruning keeps.
        let mut longer = h.clone();
        longer.insert(0, entry("4.13.0", P));
        let kept = kept_after_pruning(&longer, MAX_HISTORY);
        let chosen: Vec<HistoryEntry> = kept.iter().map(|&i| longer[i].clone()).collect();
        prune(&mut longer, MAX_HISTORY);
        assert_eq!(chosen, longer);
    }

    #[test]
    fn entries_serialise_in_camel_case() {
        let mut e = entry("4.1.0", C);
        e.completion_time = Some(at(5));
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json["state"], "Completed");
        assert_eq!(json["startedTime"], "2023-11-14T22:13:20Z");
        assert_eq!(json["completionTime"], "2023-11-14T22:13:25Z");
        assert!(json.get("acceptedRisks").is_none());
    }
}
