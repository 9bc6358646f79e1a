//! The ClusterServiceVersions Blueprints own, read from the watch that wakes their Blueprints
//! instead of listed on every reconcile. The cache keeps only what the plan reads of a CSV.
//!
//! After this controller writes a Blueprint's CSVs (applies one, hands over, deletes), the cache
//! may not show it for a moment, and a plan made from it would apply again what was just
//! applied. So from such a write until a list of that Blueprint's CSVs matches the cache
//! object for object (resourceVersions included), its CSVs are listed from the API server.

use std::{collections::HashSet, sync::Mutex};

use kube::{ResourceExt, runtime::reflector::Store};
use windlass_api::{ClusterServiceVersion, csv::ClusterServiceVersionSpec, names::annotations};

/// Trims a cached CSV to what [`crate::observe`] reads: identity, owners, generation, the
/// revision annotation, `spec.supersedes`, the policy of `spec.grant` and the status' phase, reason, message, times and
/// observed generation. The bundle's definition (often most of a CSV) stays out.
pub fn trim(csv: &mut ClusterServiceVersion) {
    csv.metadata.managed_fields = None;
    if let Some(notes) = &mut csv.metadata.annotations {
        notes.retain(|key, _| key == annotations::REVISION);
    }
    csv.spec = ClusterServiceVersionSpec {
        supersedes: csv.spec.supersedes.take(),
        // Which policy permitted it: a change of that policy wakes its Blueprint.
        grant: csv
            .spec
            .grant
            .take()
            .map(|grant| windlass_api::csv::CsvGrant {
                policy: grant.policy,
                ..Default::default()
            }),
        ..ClusterServiceVersionSpec::default()
    };
    if let Some(status) = &mut csv.status {
        status.requirements = Vec::new();
        status.external_objects = Vec::new();
        status.conditions = Vec::new();
    }
}

/// The Blueprints (by uid) whose objects of one kind (CSVs, revision Secrets) this controller
/// wrote since the cache last matched a list of them.
#[derive(Default)]
pub struct PendingWrites(Mutex<HashSet<String>>);

impl PendingWrites {
    /// This controller is about to write objects of the Blueprint `uid`.
    pub fn writing(&self, uid: &str) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(uid.to_string());
    }

    /// Whether the Blueprint's objects must be listed: a write of them may not be cached yet.
    pub fn must_list(&self, uid: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(uid)
    }

    /// After a list: once the cache holds the same CSVs at the same resourceVersions, it shows
    /// every write made before the list, and the cache serves again.
    pub fn listed(
        &self,
        uid: &str,
        listed: &[ClusterServiceVersion],
        cached: &[ClusterServiceVersion],
    ) {
        if same_versions(listed, cached) {
            self.forget(uid);
        }
    }

    /// [`Self::listed`] for objects given by their sorted names and resourceVersions.
    pub fn listed_versions(
        &self,
        uid: &str,
        listed: &[(String, Option<String>)],
        cached: &[(String, Option<String>)],
    ) {
        if listed == cached {
            self.forget(uid);
        }
    }

    pub fn forget(&self, uid: &str) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(uid);
    }
}

/// The CSVs in the cache in `namespace` owned by the Blueprint `uid`.
pub fn owned(
    cache: &Store<ClusterServiceVersion>,
    namespace: &str,
    uid: &str,
) -> Vec<ClusterServiceVersion> {
    cache
        .state()
        .iter()
        .filter(|csv| csv.metadata.namespace.as_deref() == Some(namespace))
        .filter(|csv| csv.owner_references().iter().any(|o| o.uid == uid))
        .map(|csv| (**csv).clone())
        .collect()
}

fn same_versions(a: &[ClusterServiceVersion], b: &[ClusterServiceVersion]) -> bool {
    let versions = |csvs: &[ClusterServiceVersion]| {
        let mut v: Vec<(String, Option<String>)> = csvs
            .iter()
            .map(|c| (c.name_any(), c.resource_version()))
            .collect();
        v.sort();
        v
    };
    versions(a) == versions(b)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use kube::api::ObjectMeta;
    use serde_json::json;
    use windlass_api::csv::{ClusterServiceVersionStatus, CsvPhase};

    use super::*;

    fn csv(name: &str, version: &str) -> ClusterServiceVersion {
        ClusterServiceVersion {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("team-a".into()),
                resource_version: Some(version.into()),
                ..ObjectMeta::default()
            },
            spec: ClusterServiceVersionSpec::default(),
            status: None,
        }
    }

    #[test]
    fn trimming_keeps_what_the_plan_reads() {
        let mut full = csv("acme-db.v1.1.0", "7");
        full.metadata.generation = Some(3);
        full.metadata.annotations = Some(BTreeMap::from([
            (annotations::REVISION.to_string(), "2".to_string()),
            (
                "kubectl.kubernetes.io/last-applied-configuration".into(),
                "{}".into(),
            ),
        ]));
        full.spec.definition = json!({"spec": {"description": "x".repeat(10_000)}}).into();
        full.spec.supersedes = Some("acme-db.v1.0.0".into());
        full.spec.target_namespaces = vec!["team-a".into()];
        full.status = Some(ClusterServiceVersionStatus {
            phase: Some(CsvPhase::Succeeded),
            reason: "InstallSucceeded".into(),
            message: "done".into(),
            observed_generation: Some(3),
            ..ClusterServiceVersionStatus::default()
        });
        let mut cached = full.clone();
        trim(&mut cached);
        assert_eq!(
            crate::observe::observed_csv(&cached),
            crate::observe::observed_csv(&full)
        );
        assert_eq!(cached.spec.definition.to_value(), serde_json::Value::Null);
        assert_eq!(cached.annotations().len(), 1);
    }

    #[test]
    fn the_cache_serves_again_once_a_list_matches_it() {
        let writes = PendingWrites::default();
        assert!(!writes.must_list("uid-1"));
        writes.writing("uid-1");
        assert!(writes.must_list("uid-1"));
        // The cache is behind the list (an older version, or the new CSV missing).
        writes.listed("uid-1", &[csv("a", "8")], &[csv("a", "7")]);
        assert!(writes.must_list("uid-1"));
        writes.listed("uid-1", &[csv("a", "8"), csv("b", "9")], &[csv("a", "8")]);
        assert!(writes.must_list("uid-1"));
        writes.listed(
            "uid-1",
            &[csv("b", "9"), csv("a", "8")],
            &[csv("a", "8"), csv("b", "9")],
        );
        assert!(!writes.must_list("uid-1"));
        assert!(!writes.must_list("uid-2"));
    }
}
