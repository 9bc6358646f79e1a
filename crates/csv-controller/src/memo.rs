//! What this process last applied for each CSV. While an operator starts, its Deployments'
//! status changes wake the CSV several times; each of those reconciles only has to judge the
//! Deployments' health. Building, applying and pruning the same objects again would cost a
//! dozen requests and change nothing.
//!
//! The memo stands only for the same generation of the CSV, for [`FRESH`] after the apply
//! (the periodic resync comes later and repairs drift as before), and while the Deployments
//! keep the generation they had after it (a Deployment edited or deleted by hand is applied
//! again at once). An apply that found another install serving a CRD's conversion stands for
//! nothing: waiting for that install to go away, each pass judges it again. A restart starts
//! empty.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use windlass_api::csv::ObjectReference;

/// How long after an apply its objects are taken as still applied.
pub const FRESH: Duration = Duration::from_secs(120);

/// A Deployment of the strategy by name, and the generation it was seen at (`None`: missing).
pub type DeploymentMark = (String, Option<i64>);

struct Entry {
    generation: Option<i64>,
    external: Vec<ObjectReference>,
    deployments: Vec<DeploymentMark>,
    waits_for_conversion: bool,
    at: Instant,
}

/// The last apply of each CSV, by uid.
#[derive(Default)]
pub struct Memo {
    entries: Mutex<HashMap<String, Entry>>,
}

impl Memo {
    /// Records an apply of `generation` after which the Deployments were seen as `deployments`;
    /// `external` are the objects it wrote outside the CSV's ownership, `waits_for_conversion`
    /// whether another install serves the conversion of one of its CRDs.
    pub fn record(
        &self,
        uid: &str,
        generation: Option<i64>,
        external: Vec<ObjectReference>,
        deployments: Vec<DeploymentMark>,
        waits_for_conversion: bool,
        now: Instant,
    ) {
        let entry = Entry {
            generation,
            external,
            deployments,
            waits_for_conversion,
            at: now,
        };
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.insert(uid.to_string(), entry);
    }

    /// When the last apply of this generation is recent enough to stand for a new one (and
    /// every conversion it judged is served by this install): the Deployments as it left them.
    pub fn applied(
        &self,
        uid: &str,
        generation: Option<i64>,
        now: Instant,
    ) -> Option<Vec<DeploymentMark>> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(uid)
            .filter(|e| {
                e.generation == generation
                    && now.duration_since(e.at) < FRESH
                    && !e.waits_for_conversion
            })
            .map(|e| e.deployments.clone())
    }

    /// The external objects of the last apply, when the Deployments are as it left them;
    /// otherwise the memo is forgotten and `None` says to apply again.
    pub fn unchanged(
        &self,
        uid: &str,
        deployments: &[DeploymentMark],
    ) -> Option<Vec<ObjectReference>> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let entry = entries.get(uid)?;
        if entry.deployments.as_slice() == deployments {
            return Some(entry.external.clone());
        }
        entries.remove(uid);
        None
    }

    pub fn forget(&self, uid: &str) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.remove(uid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn external() -> Vec<ObjectReference> {
        vec![ObjectReference {
            api_version: "rbac.authorization.k8s.io/v1".into(),
            kind: "ClusterRole".into(),
            name: "acme-db-reader".into(),
            ..ObjectReference::default()
        }]
    }

    fn memo(at: Instant) -> Memo {
        let memo = Memo::default();
        let deployments = vec![("acme-db-operator".to_string(), Some(1))];
        memo.record("uid-1", Some(2), external(), deployments, false, at);
        memo
    }

    #[test]
    fn a_deployment_progressing_after_the_apply_needs_no_new_apply() {
        let start = Instant::now();
        let memo = memo(start);
        let seen = [("acme-db-operator".to_string(), Some(1))];
        let left = memo.applied("uid-1", Some(2), start + Duration::from_secs(5));
        assert_eq!(left.as_deref(), Some(&seen[..]));
        assert_eq!(memo.unchanged("uid-1", &seen), Some(external()));
    }

    #[test]
    fn another_generation_an_old_apply_or_another_csv_applies_again() {
        let start = Instant::now();
        let memo = memo(start);
        assert_eq!(memo.applied("uid-1", Some(3), start), None);
        assert_eq!(memo.applied("uid-1", Some(2), start + FRESH), None);
        assert_eq!(memo.applied("uid-2", Some(2), start), None);
    }

    #[test]
    fn an_apply_waiting_for_another_installs_conversion_applies_again() {
        let start = Instant::now();
        let memo = Memo::default();
        let deployments = vec![("acme-gateway-operator".to_string(), Some(1))];
        memo.record("uid-1", Some(2), external(), deployments, true, start);
        assert_eq!(memo.applied("uid-1", Some(2), start), None);
    }

    #[test]
    fn a_deployment_edited_or_deleted_after_the_apply_applies_again() {
        for seen in [
            vec![("acme-db-operator".to_string(), Some(2))],
            vec![("acme-db-operator".to_string(), None)],
        ] {
            let memo = memo(Instant::now());
            assert_eq!(memo.unchanged("uid-1", &seen), None, "{seen:?}");
            let left = memo.applied("uid-1", Some(2), Instant::now());
            assert_eq!(left, None, "forgotten");
        }
    }
}
