//! Lists served from the API server's watch cache without going back in time.
//!
//! A list with no resourceVersion is a consistent read: the API server first makes sure its
//! cache holds etcd's latest revision, which it learns from progress notifications that come
//! about a tenth of a second apart while writes go on elsewhere in the cluster. On an install's
//! path that wait, paid several times, is most of the time an install takes. A list "not older
//! than" a version the cache already holds is answered at once.
//!
//! [`ListFloor`] keeps the newest resourceVersion this process has seen of one kind of list:
//! what earlier lists returned and what its own writes returned. Listing not older than it
//! shows every write this process made and never an older state than it saw before; writes of
//! others are seen as soon as the cache holds them (moments), as with any informer. Until
//! something has been seen, and when the cache cannot answer in time, the list is consistent.

use std::{cmp::Ordering, fmt::Debug, sync::Mutex};

use kube::{
    Api, Resource,
    api::{ListParams, ObjectList, VersionMatch},
};
use serde::de::DeserializeOwned;

use crate::freshness::compare_resource_versions;

/// The newest resourceVersion seen of one kind of list (see the module documentation).
#[derive(Default)]
pub struct ListFloor {
    seen: Mutex<Option<String>>,
}

impl ListFloor {
    /// Takes `version` (a list's or a write's) as seen, when it is newer than what was.
    pub fn raise(&self, version: &str) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let newer = match seen.as_deref() {
            None => compare_resource_versions(version, version).is_some(),
            Some(known) => compare_resource_versions(version, known) == Some(Ordering::Greater),
        };
        if newer {
            *seen = Some(version.to_string());
        }
    }

    /// Takes the version `written` came back with as seen.
    pub fn wrote<K: Resource>(&self, written: &K) {
        if let Some(version) = &written.meta().resource_version {
            self.raise(version);
        }
    }

    /// `params` asking for a list not older than what was seen; unchanged (consistent) until
    /// something was.
    pub fn params(&self, params: &ListParams) -> ListParams {
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
        match seen {
            Some(version) => params
                .clone()
                .at(&version)
                .matching(VersionMatch::NotOlderThan),
            None => params.clone(),
        }
    }

    /// Lists `api` not older than what was seen, and takes the answer's version as seen. When
    /// the API server cannot answer that (its cache did not catch up in time, or it refuses the
    /// version), the list is made consistent instead.
    pub async fn list<K>(
        &self,
        api: &Api<K>,
        params: &ListParams,
    ) -> Result<ObjectList<K>, kube::Error>
    where
        K: Resource + Clone + DeserializeOwned + Debug,
    {
        let floored = self.params(params);
        if floored.resource_version.is_none() {
            return self.list_consistent(api, params).await;
        }
        match api.list(&floored).await {
            Err(kube::Error::Api(status)) if matches!(status.code, 410 | 504) => {
                self.list_consistent(api, params).await
            }
            listed => Ok(self.took(listed?)),
        }
    }

    /// Lists `api` consistently (the cluster as it is now), and takes the answer's version as
    /// seen: for a decision that must not rest on a cache a moment behind.
    pub async fn list_consistent<K>(
        &self,
        api: &Api<K>,
        params: &ListParams,
    ) -> Result<ObjectList<K>, kube::Error>
    where
        K: Resource + Clone + DeserializeOwned + Debug,
    {
        Ok(self.took(api.list(params).await?))
    }

    /// Takes the version `listed` was answered at as seen.
    fn took<K: Clone>(&self, listed: ObjectList<K>) -> ObjectList<K> {
        if let Some(version) = &listed.metadata.resource_version {
            self.raise(version);
        }
        listed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(floor: &ListFloor) -> (Option<String>, Option<VersionMatch>) {
        let params = floor.params(&ListParams::default().labels("app=db"));
        assert_eq!(params.label_selector.as_deref(), Some("app=db"));
        (params.resource_version, params.version_match)
    }

    #[test]
    fn nothing_seen_asks_for_a_consistent_list() {
        assert_eq!(asked(&ListFloor::default()), (None, None));
    }

    #[test]
    fn the_newest_version_seen_is_the_floor_and_never_goes_back() {
        let floor = ListFloor::default();
        floor.raise("120");
        assert_eq!(
            asked(&floor),
            (Some("120".into()), Some(VersionMatch::NotOlderThan))
        );
        floor.raise("99");
        assert_eq!(asked(&floor).0.as_deref(), Some("120"), "older: ignored");
        floor.raise("1000");
        assert_eq!(asked(&floor).0.as_deref(), Some("1000"));
    }

    #[test]
    fn a_version_that_cannot_be_compared_is_never_a_floor() {
        let floor = ListFloor::default();
        floor.raise("");
        floor.raise("abc");
        assert_eq!(asked(&floor), (None, None));
        floor.raise("7");
        floor.raise("x9");
        assert_eq!(asked(&floor).0.as_deref(), Some("7"));
    }
}
