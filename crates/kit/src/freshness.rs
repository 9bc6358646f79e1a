//! Reading one's own writes from a watch cache. A reconcile that writes an object and is woken
//! again before the watch has delivered that write would decide from the state before it;
//! reading the object from the API server on every reconcile avoids that at the cost of a
//! request each time. Instead, each controller remembers the resourceVersion its last write to
//! an object returned and reads the API server only while the cache is older than that.
//!
//! Resource versions of one resource type are comparable as increasing integers (a conformance
//! requirement since Kubernetes 1.35). A version that is not a plain decimal number cannot be
//! compared, and is treated as stale: the fallback is the read the cache saves.

use std::{cmp::Ordering, collections::HashMap, sync::Mutex};

use kube::Resource;

/// Orders two resourceVersions of the same resource type; `None` when either is not a decimal
/// number (empty, signed, with leading zeros or other characters).
pub fn compare_resource_versions(a: &str, b: &str) -> Option<Ordering> {
    let decimal = |v: &str| {
        !v.is_empty()
            && v.bytes().all(|b| b.is_ascii_digit())
            && (v.len() == 1 || !v.starts_with('0'))
    };
    if !decimal(a) || !decimal(b) {
        return None;
    }
    Some(a.len().cmp(&b.len()).then_with(|| a.cmp(b)))
}

/// The resourceVersion each object (by uid) had after this controller last wrote it, until the
/// cache shows that write. Entries go once the cache has caught up, so it holds only the
/// objects written in the last moments.
#[derive(Default)]
pub struct OwnWrites {
    pending: Mutex<HashMap<String, String>>,
}

impl OwnWrites {
    /// Records `written`, the object as a write returned it.
    pub fn wrote<K: Resource>(&self, written: &K) {
        let meta = written.meta();
        let (Some(uid), Some(version)) = (&meta.uid, &meta.resource_version) else {
            return;
        };
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let newer = pending
            .get(uid)
            .is_none_or(|known| compare_resource_versions(version, known) != Some(Ordering::Less));
        if newer {
            pending.insert(uid.clone(), version.clone());
        }
    }

    /// Whether `cached` already shows every write recorded for it: true when none is pending,
    /// or its resourceVersion is at least the last one written.
    pub fn shown_in<K: Resource>(&self, cached: &K) -> bool {
        let meta = cached.meta();
        let Some(uid) = &meta.uid else {
            return true;
        };
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let Some(written) = pending.get(uid) else {
            return true;
        };
        let caught_up = meta.resource_version.as_deref().is_some_and(|cached| {
            matches!(
                compare_resource_versions(cached, written),
                Some(Ordering::Equal | Ordering::Greater)
            )
        });
        if caught_up {
            pending.remove(uid);
        }
        caught_up
    }

    /// Drops what is known of `uid` (the object is gone).
    pub fn forget(&self, uid: &str) {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(uid);
    }

    /// How many objects have a write the cache has not shown yet.
    pub fn pending(&self) -> usize {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::*;

    fn object(uid: &str, version: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                uid: Some(uid.into()),
                resource_version: Some(version.into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    #[test]
    fn versions_compare_as_integers_and_odd_ones_not_at_all() {
        assert_eq!(compare_resource_versions("9", "10"), Some(Ordering::Less));
        assert_eq!(
            compare_resource_versions("100", "99"),
            Some(Ordering::Greater)
        );
        assert_eq!(compare_resource_versions("42", "42"), Some(Ordering::Equal));
        assert_eq!(compare_resource_versions("0", "1"), Some(Ordering::Less));
        for odd in ["", "012", "-1", "1a", " 1", "1.0"] {
            assert_eq!(compare_resource_versions(odd, "5"), None, "{odd:?}");
            assert_eq!(compare_resource_versions("5", odd), None, "{odd:?}");
        }
    }

    #[test]
    fn a_cache_older_than_the_last_write_is_stale_until_it_catches_up() {
        let writes = OwnWrites::default();
        assert!(writes.shown_in(&object("a", "5")), "nothing written yet");
        writes.wrote(&object("a", "10"));
        assert!(!writes.shown_in(&object("a", "9")));
        assert!(writes.shown_in(&object("b", "1")), "another object");
        assert_eq!(writes.pending(), 1);
        assert!(writes.shown_in(&object("a", "10")));
        assert_eq!(writes.pending(), 0, "caught up: forgotten");
        assert!(
            writes.shown_in(&object("a", "9")),
            "nothing pending any more"
        );
    }

    #[test]
    fn the_newest_write_counts_and_an_odd_version_is_never_taken_as_fresh() {
        let writes = OwnWrites::default();
        writes.wrote(&object("a", "20"));
        writes.wrote(&object("a", "15"));
        assert!(
            !writes.shown_in(&object("a", "18")),
            "the write at 20 is not shown"
        );
        assert!(!writes.shown_in(&object("a", "x")));
        writes.forget("a");
        assert!(writes.shown_in(&object("a", "x")));
    }
}
