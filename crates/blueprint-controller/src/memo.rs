//! What this process last applied for each Blueprint. An install wakes its Blueprint several
//! times while the CSV progresses (Installing, Succeeded, each Deployment's
//! status); each of those reconciles only has to judge that progress. Loading, validating and
//! applying the same content again would cost a dozen requests and change nothing.
//!
//! The memo vouches for a validation only while nothing it rests on moved: the same
//! generation of the Blueprint, the same content request, the revision's Secret still stored
//! and sealed, the Blueprint's CSVs as they were after the apply (none gone, none with its spec
//! edited, none waiting for its requirements: applying again is what repairs a CRD someone
//! narrowed since), and only for [`FRESH`]: the periodic resync comes later and goes the whole
//! way, repairing drift as before. An apply is skipped only when the plan equals the one applied. A
//! restart starts empty.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use windlass_api::CsvPhase;

use crate::plan::{ApplyPlan, ContentRequest, ObservedCsv, Validation};

/// How long after an apply its validation stands in for a new one. Shorter than the resync of
/// a settled Blueprint, so every resync validates and applies.
pub const FRESH: Duration = Duration::from_secs(120);

/// The CSVs of a Blueprint as one reconcile saw them: what a change of theirs (a deletion, an
/// edited spec) shows in.
#[derive(Clone, Debug, PartialEq, Eq)]
struct CsvMark {
    name: String,
    generation: Option<i64>,
    deleting: bool,
}

fn marks(csvs: &[ObservedCsv]) -> Vec<CsvMark> {
    let mut marks: Vec<CsvMark> = csvs
        .iter()
        .map(|c| CsvMark {
            name: c.name.clone(),
            generation: c.generation,
            deleting: c.deleting,
        })
        .collect();
    marks.sort_by(|a, b| a.name.cmp(&b.name));
    marks
}

/// One apply that succeeded.
pub struct Applied {
    pub generation: i64,
    pub request: ContentRequest,
    pub validation: Validation,
    pub plan_digest: Option<String>,
    pub plan: ApplyPlan,
}

struct Entry {
    applied: Applied,
    /// The CSVs as the first reconcile after the apply saw them (the apply's own writes
    /// included).
    csvs: Option<Vec<CsvMark>>,
    at: Instant,
}

/// The last apply of each Blueprint, by uid.
#[derive(Default)]
pub struct Memo {
    entries: Mutex<HashMap<String, Entry>>,
}

/// A validation the memo stands in for.
pub struct Remembered {
    pub validation: Validation,
    pub plan_digest: Option<String>,
}

impl Memo {
    /// The validation of the last apply, when it still stands for `request` (see the module
    /// documentation); `csvs` are the Blueprint's CSVs as observed now.
    pub fn validation(
        &self,
        uid: &str,
        generation: i64,
        request: &ContentRequest,
        csvs: &[ObservedCsv],
        now: Instant,
    ) -> Option<Remembered> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let entry = entries.get_mut(uid)?;
        let seen = marks(csvs);
        let stands = entry.applied.generation == generation
            && entry.applied.request == *request
            && now.duration_since(entry.at) < FRESH
            && csvs.iter().any(|c| {
                c.name == request.csv_name && !c.deleting && c.phase != Some(CsvPhase::Pending)
            })
            && entry.csvs.as_ref().is_none_or(|before| *before == seen);
        if !stands {
            entries.remove(uid);
            return None;
        }
        entry.csvs.get_or_insert(seen);
        Some(Remembered {
            validation: entry.applied.validation.clone(),
            plan_digest: entry.applied.plan_digest.clone(),
        })
    }

    /// Whether `plan` is the plan last applied (then applying it again changes nothing).
    pub fn applied(&self, uid: &str, plan: &ApplyPlan) -> bool {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.get(uid).is_some_and(|e| e.applied.plan == *plan)
    }

    pub fn record(&self, uid: &str, applied: Applied, now: Instant) {
        let entry = Entry {
            applied,
            csvs: None,
            at: now,
        };
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.insert(uid.to_string(), entry);
    }

    pub fn forget(&self, uid: &str) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.remove(uid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{CrdPolicy, Source};

    fn request(revision: i64) -> ContentRequest {
        ContentRequest {
            revision,
            csv_name: "acme-db.v1.1.0".into(),
            source: Source::Stored { revision },
            crds: CrdPolicy::Apply,
            running: true,
        }
    }

    fn plan(revision: i64) -> ApplyPlan {
        ApplyPlan {
            content: request(revision),
            supersedes: None,
            clear_supersedes: Vec::new(),
            delete_csvs: Vec::new(),
        }
    }

    fn csv(name: &str, generation: i64) -> ObservedCsv {
        ObservedCsv {
            name: name.into(),
            generation: Some(generation),
            ..ObservedCsv::default()
        }
    }

    fn ready() -> Validation {
        Validation::Ready {
            kept_crds: Vec::new(),
            verified_by: vec!["release-key".into()],
            image_rewrites: Vec::new(),
            withdrawn: None,
            findings: Vec::new(),
        }
    }

    fn memo(at: Instant) -> Memo {
        let memo = Memo::default();
        let applied = Applied {
            generation: 3,
            request: request(2),
            validation: ready(),
            plan_digest: Some("sha256:plan".into()),
            plan: plan(2),
        };
        memo.record("uid-1", applied, at);
        memo
    }

    #[test]
    fn the_csv_progressing_after_an_apply_reuses_its_validation_and_skips_the_same_plan() {
        let start = Instant::now();
        let memo = memo(start);
        let csvs = [csv("acme-db.v1.1.0", 1)];
        let later = start + Duration::from_secs(5);
        let found = memo
            .validation("uid-1", 3, &request(2), &csvs, later)
            .expect("the apply's validation");
        assert_eq!(found.validation, ready());
        assert_eq!(found.plan_digest.as_deref(), Some("sha256:plan"));
        assert!(memo.applied("uid-1", &plan(2)));
        // Another plan (an old CSV to remove now) is applied.
        let mut other = plan(2);
        other.delete_csvs.push("acme-db.v1.0.0".into());
        assert!(!memo.applied("uid-1", &other));
        // Still standing for the next reconcile with the CSVs unchanged.
        assert!(
            memo.validation("uid-1", 3, &request(2), &csvs, later)
                .is_some()
        );
    }

    #[test]
    fn anything_the_validation_rests_on_changing_goes_the_whole_way() {
        let start = Instant::now();
        let soon = start + Duration::from_secs(5);
        let csvs = vec![csv("acme-db.v1.1.0", 1)];
        let cases: Vec<(&str, i64, ContentRequest, Vec<ObservedCsv>, Instant)> = vec![
            ("another generation", 4, request(2), csvs.clone(), soon),
            ("another revision", 3, request(3), csvs.clone(), soon),
            ("the CSV gone", 3, request(2), Vec::new(), soon),
            (
                "the CSV being deleted",
                3,
                request(2),
                vec![ObservedCsv {
                    deleting: true,
                    ..csv("acme-db.v1.1.0", 1)
                }],
                soon,
            ),
            (
                "older than FRESH",
                3,
                request(2),
                csvs.clone(),
                start + FRESH,
            ),
            (
                "the CSV waiting for its requirements",
                3,
                request(2),
                vec![ObservedCsv {
                    phase: Some(CsvPhase::Pending),
                    ..csv("acme-db.v1.1.0", 1)
                }],
                soon,
            ),
        ];
        for (what, generation, request, seen, now) in cases {
            let memo = memo(start);
            assert!(
                memo.validation("uid-1", generation, &request, &seen, now)
                    .is_none(),
                "{what}"
            );
            // Forgotten: the next reconcile loads and applies, and records again.
            assert!(!memo.applied("uid-1", &plan(2)), "{what}");
        }
    }

    #[test]
    fn a_csv_edited_after_the_first_look_goes_the_whole_way() {
        let start = Instant::now();
        let memo = memo(start);
        let soon = start + Duration::from_secs(1);
        let seen = [csv("acme-db.v1.1.0", 1)];
        assert!(
            memo.validation("uid-1", 3, &request(2), &seen, soon)
                .is_some()
        );
        let edited = [csv("acme-db.v1.1.0", 2)];
        assert!(
            memo.validation("uid-1", 3, &request(2), &edited, soon)
                .is_none()
        );
        assert!(
            memo.validation("uid-2", 3, &request(2), &seen, soon)
                .is_none()
        );
    }
}
