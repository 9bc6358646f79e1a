//! Where an update stands, in words, and how long the rest should take judging by earlier
//! updates' level durations.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use windlass_api::clusterversion::LevelDurations;

use crate::manifest::ObjectRef;
use crate::plan::{Plan, RunLevel};

/// The key a level's duration is recorded under: `manifests/00` for updater levels, `30` for
/// release levels, `-` for the files without a run level. Stable across releases, so timings of
/// one update estimate the next.
pub fn level_key(updater: bool, level: &RunLevel) -> String {
    let name = level.level.as_deref().unwrap_or("-");
    if updater {
        format!("manifests/{name}")
    } else {
        name.to_string()
    }
}

impl Plan {
    /// [`level_key`] of every level, in apply order.
    pub fn level_keys(&self) -> Vec<String> {
        self.updater
            .iter()
            .map(|l| level_key(true, l))
            .chain(self.levels.iter().map(|l| level_key(false, l)))
            .collect()
    }
}

/// How long one level took in an earlier update.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LevelTiming {
    pub level: String,
    pub seconds: f64,
    pub manifests: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum EstimateBasis {
    /// The median of this level's durations in earlier updates.
    SameLevel,
    /// No earlier timing of this level: the average time per manifest of earlier updates.
    PerManifest,
    /// No earlier update recorded anything.
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LevelEstimate {
    pub level: String,
    pub manifests: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_seconds: Option<f64>,
    pub basis: EstimateBasis,
}

/// The expected duration of every level of `plan`, from earlier updates' timings (each update a
/// list of level timings).
pub fn estimate_levels(plan: &Plan, earlier: &[Vec<LevelTiming>]) -> Vec<LevelEstimate> {
    let mut by_level: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let (mut total_seconds, mut total_manifests) = (0.0, 0usize);
    for timing in earlier.iter().flatten() {
        by_level
            .entry(&timing.level)
            .or_default()
            .push(timing.seconds);
        total_seconds += timing.seconds;
        total_manifests += timing.manifests;
    }
    let per_manifest = (total_manifests > 0).then(|| total_seconds / total_manifests as f64);
    let levels = plan
        .updater
        .iter()
        .map(|l| (true, l))
        .chain(plan.levels.iter().map(|l| (false, l)));
    levels
        .map(|(updater, level)| {
            let key = level_key(updater, level);
            let manifests = level.manifests().count();
            let (expected_seconds, basis) = match by_level.get_mut(key.as_str()) {
                Some(samples) => (Some(median(samples)), EstimateBasis::SameLevel),
                None => match per_manifest {
                    Some(rate) => (Some(rate * manifests as f64), EstimateBasis::PerManifest),
                    None => (None, EstimateBasis::Unknown),
                },
            };
            LevelEstimate {
                level: key,
                manifests,
                expected_seconds,
                basis,
            }
        })
        .collect()
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    let mid = samples.len() / 2;
    if samples.len().is_multiple_of(2) {
        (samples[mid - 1] + samples[mid]) / 2.0
    } else {
        samples[mid]
    }
}

/// Seconds left when level `current` (an index into `estimates`) has run for `elapsed` seconds;
/// `None` when some remaining level has no estimate.
pub fn remaining_seconds(estimates: &[LevelEstimate], current: usize, elapsed: f64) -> Option<f64> {
    let now = estimates.get(current)?.expected_seconds?;
    let later: Option<f64> = estimates[current + 1..]
        .iter()
        .map(|e| e.expected_seconds)
        .sum();
    Some((now - elapsed).max(0.0) + later?)
}

/// How many durations of each level are kept to estimate the next update.
pub const KEPT_DURATIONS: usize = 5;

/// Every kept duration as a timing [`estimate_levels`] reads.
pub fn kept_timings(kept: &[LevelDurations]) -> Vec<LevelTiming> {
    kept.iter()
        .flat_map(|level| {
            level.seconds.iter().map(|seconds| LevelTiming {
                level: level.level.clone(),
                seconds: *seconds as f64,
                manifests: level.manifests.max(0) as usize,
            })
        })
        .collect()
}

/// Adds a completed update's level durations (`(level key, manifests, seconds)`, in apply
/// order) to what is kept: each level keeps its last [`KEPT_DURATIONS`], and levels the update
/// did not have keep theirs (a later release may bring them back).
pub fn keep_durations(kept: &mut Vec<LevelDurations>, finished: &[(String, usize, i64)]) {
    for (level, manifests, seconds) in finished {
        let entry = match kept.iter().position(|k| &k.level == level) {
            Some(i) => &mut kept[i],
            None => {
                kept.push(LevelDurations {
                    level: level.clone(),
                    manifests: 0,
                    seconds: Vec::new(),
                });
                kept.last_mut().expect("just pushed")
            }
        };
        entry.manifests = *manifests as i64;
        entry.seconds.push((*seconds).max(0));
        let excess = entry.seconds.len().saturating_sub(KEPT_DURATIONS);
        entry.seconds.drain(..excess);
    }
}

/// `about 2 min left`, `less than a minute left`, or why there is no estimate.
pub fn remaining_words(remaining_seconds: Option<f64>) -> String {
    match remaining_seconds.map(|s| s.round().max(0.0) as u64) {
        Some(s) if s < 60 => "less than a minute left".into(),
        Some(s) => format!("about {} left", format_duration(s)),
        None => "no estimate yet (no earlier update to learn from)".into(),
    }
}

/// What a level waits for before it is healthy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "for")]
pub enum WaitReason {
    /// A Deployment, DaemonSet or StatefulSet rolling out.
    RollOut { updated: i64, desired: i64 },
    /// A CRD becoming Established.
    Established,
    /// A Job completing.
    Complete,
    /// An APIService or ClusterOperator becoming Available.
    Available,
    /// A ClusterOperator reporting the payload's version.
    AtVersion { version: String },
    /// A Subscription's operator reaching Succeeded.
    Succeeded,
    /// A windlass Subscription's Blueprint reaching Succeeded at the version it is pinned to
    /// (any version when it is not pinned); `now` says where it stands.
    OperatorAt {
        version: Option<String>,
        now: String,
    },
    /// A deleted object going away.
    Deleted,
}

impl fmt::Display for WaitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitReason::RollOut { updated, desired } => {
                write!(f, "to roll out ({updated}/{desired} updated)")
            }
            WaitReason::Established => f.write_str("to be Established"),
            WaitReason::Complete => f.write_str("to complete"),
            WaitReason::Available => f.write_str("to be Available"),
            WaitReason::AtVersion { version } => write!(f, "to report version {version}"),
            WaitReason::Succeeded => f.write_str("to reach Succeeded"),
            WaitReason::OperatorAt { version, now } => match version {
                Some(version) => write!(f, "to run version {version} ({now})"),
                None => write!(f, "to be installed ({now})"),
            },
            WaitReason::Deleted => f.write_str("to be deleted"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Waiting {
    pub object: ObjectRef,
    pub reason: WaitReason,
    pub seconds: u64,
}

/// Where an update stands: the level being applied (1-based position among all levels), the
/// component, what it waits for, and the estimate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    pub level: String,
    pub position: usize,
    pub levels: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<Waiting>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_seconds: Option<u64>,
}

/// `45 s`, `3 min`, `1 h 5 min`.
pub fn format_duration(seconds: u64) -> String {
    if seconds < 60 {
        format!("{seconds} s")
    } else if seconds < 3600 {
        format!("{} min", (seconds + 30) / 60)
    } else {
        let minutes = (seconds + 30) / 60;
        format!("{} h {} min", minutes / 60, minutes % 60)
    }
}

impl fmt::Display for Progress {
    /// `level 30 (4 of 10 levels), component dns: waiting for Deployment dns/dns-operator to
    /// roll out (2/3 updated) for 45 s; about 2 min left`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.level.as_str() {
            "-" => "the files without a run level".to_string(),
            key => format!("level {key}"),
        };
        write!(f, "{level} ({} of {} levels)", self.position, self.levels)?;
        if let Some(component) = &self.component {
            write!(f, ", component {component}")?;
        }
        match &self.waiting {
            Some(w) => write!(
                f,
                ": waiting for {} {} for {}",
                w.object,
                w.reason,
                format_duration(w.seconds)
            )?,
            None => f.write_str(": applying")?,
        }
        write!(
            f,
            "; {}",
            remaining_words(self.remaining_seconds.map(|s| s as f64))
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{ComponentTasks, PlannedManifest, Step};

    fn level(name: &str, manifests: usize) -> RunLevel {
        let planned = |i| PlannedManifest {
            file: format!("release-manifests/0000_{name}_c_{i}.yaml"),
            document: 0,
            object: ObjectRef {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                namespace: Some("ns".into()),
                name: format!("m{i}"),
            },
            action: crate::Action::Apply,
            irreversible: false,
            images: vec![],
            body: serde_json::Value::Null,
        };
        RunLevel {
            level: Some(name.into()),
            irreversible: false,
            steps: vec![Step {
                components: vec![ComponentTasks {
                    component: Some("c".into()),
                    manifests: (0..manifests).map(planned).collect(),
                }],
            }],
        }
    }

    fn plan() -> Plan {
        Plan {
            version: "4.2.0".into(),
            updater: vec![level("00", 1)],
            levels: vec![level("10", 2), level("20", 4), level("30", 3)],
            excluded: vec![],
            manifest_digest: String::new(),
        }
    }

    fn timing(level: &str, seconds: f64, manifests: usize) -> LevelTiming {
        LevelTiming {
            level: level.into(),
            seconds,
            manifests,
        }
    }

    #[test]
    fn levels_are_estimated_from_their_own_median_or_the_per_manifest_rate() {
        let earlier = vec![
            vec![
                timing("manifests/00", 2.0, 1),
                timing("10", 10.0, 2),
                timing("20", 30.0, 4),
            ],
            vec![
                timing("manifests/00", 4.0, 1),
                timing("10", 20.0, 2),
                timing("20", 50.0, 4),
            ],
            vec![timing("10", 60.0, 2)],
        ];
        let estimates = estimate_levels(&plan(), &earlier);
        let got: Vec<(&str, Option<f64>, EstimateBasis)> = estimates
            .iter()
            .map(|e| (e.level.as_str(), e.expected_seconds, e.basis))
            .collect();
        // 176 s over 16 manifests: 11 s a manifest for the level never seen before.
        assert_eq!(
            got,
            vec![
                ("manifests/00", Some(3.0), EstimateBasis::SameLevel),
                ("10", Some(20.0), EstimateBasis::SameLevel),
                ("20", Some(40.0), EstimateBasis::SameLevel),
                ("30", Some(33.0), EstimateBasis::PerManifest),
            ]
        );
        assert_eq!(remaining_seconds(&estimates, 2, 15.0), Some(25.0 + 33.0));
        assert_eq!(remaining_seconds(&estimates, 2, 100.0), Some(33.0));
        let unknown = estimate_levels(&plan(), &[]);
        assert!(unknown.iter().all(|e| e.basis == EstimateBasis::Unknown));
        assert_eq!(remaining_seconds(&unknown, 0, 0.0), None);
        assert_eq!(plan().level_keys(), vec!["manifests/00", "10", "20", "30"]);
    }

    #[test]
    fn each_level_keeps_its_last_durations_and_they_estimate_the_next_update() {
        let mut kept = Vec::new();
        for round in 0..7 {
            keep_durations(
                &mut kept,
                &[
                    ("manifests/00".to_string(), 1, 2),
                    ("10".to_string(), 2, 10 + round),
                ],
            );
        }
        keep_durations(&mut kept, &[("20".to_string(), 4, 40)]);
        assert_eq!(kept.len(), 3);
        assert_eq!(kept[1].seconds, vec![12, 13, 14, 15, 16]);
        assert_eq!(kept[2].seconds, vec![40]);
        let estimates = estimate_levels(&plan(), &[kept_timings(&kept)]);
        let expected: Vec<Option<f64>> = estimates.iter().map(|e| e.expected_seconds).collect();
        // Level 30 was never seen: the rate per manifest of every kept duration (10 + 70 + 40
        // seconds over 5 + 10 + 4 manifests) times its 3 manifests.
        let rate = (10.0 + 70.0 + 40.0) / 19.0;
        assert_eq!(
            expected,
            vec![Some(2.0), Some(14.0), Some(40.0), Some(rate * 3.0)]
        );
        assert_eq!(remaining_words(Some(59.4)), "less than a minute left");
        assert_eq!(remaining_words(Some(150.0)), "about 3 min left");
        assert!(remaining_words(None).starts_with("no estimate yet"));
    }

    #[test]
    fn progress_reads_as_a_sentence() {
        let progress = Progress {
            level: "30".into(),
            position: 4,
            levels: 10,
            component: Some("dns".into()),
            waiting: Some(Waiting {
                object: ObjectRef {
                    api_version: "apps/v1".into(),
                    kind: "Deployment".into(),
                    namespace: Some("platform-dns".into()),
                    name: "dns-operator".into(),
                },
                reason: WaitReason::RollOut {
                    updated: 2,
                    desired: 3,
                },
                seconds: 45,
            }),
            remaining_seconds: Some(110),
        };
        assert_eq!(
            progress.to_string(),
            "level 30 (4 of 10 levels), component dns: waiting for Deployment platform-dns/dns-operator to roll out (2/3 updated) for 45 s; about 2 min left"
        );
        let early = Progress {
            level: "-".into(),
            position: 10,
            levels: 10,
            component: None,
            waiting: None,
            remaining_seconds: None,
        };
        assert_eq!(
            early.to_string(),
            "the files without a run level (10 of 10 levels): applying; no estimate yet (no earlier update to learn from)"
        );
        for (seconds, text) in [
            (0, "0 s"),
            (59, "59 s"),
            (60, "1 min"),
            (89, "1 min"),
            (90, "2 min"),
            (3600, "1 h 0 min"),
            (3929, "1 h 5 min"),
        ] {
            assert_eq!(format_duration(seconds), text);
        }
    }
}
