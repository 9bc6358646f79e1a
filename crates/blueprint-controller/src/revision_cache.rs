//! The revision Secrets of every Blueprint, read from one metadata-only watch instead of listed
//! (whole, data included) on every reconcile.
//!
//! A plan reads a revision Secret's labels and annotations; its data only to check the seal and,
//! for the current revision, what it was installed with. Both are worked out once per version of
//! the Secret (its uid and resourceVersion: any edit of what the seal covers makes a new
//! version) and remembered, so a settled Blueprint costs no request for its revisions.
//!
//! After this controller writes a Blueprint's revision Secrets (stores one, prunes), the cache
//! may not show that for a moment, and a plan made from it would store again what was just
//! stored. So from such a write until a list of the Blueprint's revision Secrets matches the
//! cache, they are listed from the API server ([`crate::csv_cache::PendingWrites`]).

use std::{
    collections::{BTreeSet, HashMap},
    sync::{Arc, Mutex},
};

use futures::{FutureExt, StreamExt, future::BoxFuture};
use k8s_openapi::api::core::v1::Secret;
use kube::{
    Api,
    api::{ObjectMeta, PartialObjectMeta},
    runtime::{
        WatchStreamExt,
        reflector::{self, ObjectRef, Store, reflector},
        watcher::{self, watcher},
    },
};
use tracing::warn;
use windlass_api::names::labels;
use windlass_revisions::SealError;

use crate::{names, plan::Settings};

/// The revision Secrets' metadata, and what their data was found to hold.
#[derive(Clone)]
pub struct RevisionCache {
    store: Store<PartialObjectMeta<Secret>>,
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    /// The names of the revision Secrets of each Blueprint, by namespace and Blueprint label:
    /// a superset (a deletion missed while the watch was down leaves a name the store no
    /// longer holds), always read through the store.
    names: Mutex<HashMap<(String, String), BTreeSet<String>>>,
    /// By Secret uid.
    checked: Mutex<HashMap<String, Checked>>,
}

/// One version of a revision Secret, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Checked {
    pub resource_version: String,
    /// The Blueprint and revision the seal was checked for (it covers both).
    pub blueprint_uid: String,
    pub revision: i64,
    /// The seal's verdict; when it holds, what the revision was installed with if that was
    /// decoded (only the current revision's is).
    pub outcome: Result<Option<Settings>, SealError>,
}

impl RevisionCache {
    /// The cache and the watch that fills it, to be driven for as long as the cache is read.
    pub fn watch(api: Api<PartialObjectMeta<Secret>>) -> (RevisionCache, BoxFuture<'static, ()>) {
        let (store, writer) = reflector::store();
        let cache = RevisionCache {
            store,
            shared: Arc::default(),
        };
        let shared = cache.shared.clone();
        let config = watcher::Config::default().labels(labels::REVISION);
        let watch = reflector(
            writer,
            watcher(api, config)
                .default_backoff()
                .modify(|meta| meta.metadata.managed_fields = None),
        )
        .for_each(move |event| {
            match event {
                Ok(event) => shared.observe(&event),
                Err(error) => warn!(%error, "revision Secret watch failed; retrying"),
            }
            futures::future::ready(())
        })
        .boxed();
        (cache, watch)
    }

    /// A cache over `store`, which no watch of this module fills (for tests: a Blueprint whose
    /// Secrets were written is listed from then on).
    pub fn over(store: Store<PartialObjectMeta<Secret>>) -> RevisionCache {
        RevisionCache {
            store,
            shared: Arc::default(),
        }
    }

    pub fn store(&self) -> &Store<PartialObjectMeta<Secret>> {
        &self.store
    }

    /// The cached metadata of the revision Secrets of Blueprint `name` in `namespace`.
    pub fn of(&self, namespace: &str, name: &str) -> Vec<ObjectMeta> {
        let key = (namespace.to_string(), names::label_value(name));
        let candidates: Vec<String> = self
            .shared
            .names
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .map(|names| names.iter().cloned().collect())
            .unwrap_or_default();
        candidates
            .iter()
            .filter_map(|secret| {
                self.store
                    .get(&ObjectRef::new(secret).within(namespace))
                    .map(|m| m.metadata.clone())
            })
            .filter(|m| m.labels.as_ref().and_then(|l| l.get(labels::BLUEPRINT)) == Some(&key.1))
            .collect()
    }

    /// What was found of this version of a Secret, when it was checked for this Blueprint.
    pub fn checked(&self, meta: &ObjectMeta, blueprint_uid: &str) -> Option<Checked> {
        let uid = meta.uid.as_deref()?;
        let version = meta.resource_version.as_deref()?;
        self.shared
            .checked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(uid)
            .filter(|c| c.resource_version == version && c.blueprint_uid == blueprint_uid)
            .cloned()
    }

    /// Remembers what was found of the version of the Secret `meta` describes.
    pub fn remember(&self, meta: &ObjectMeta, checked: Checked) {
        if let Some(uid) = &meta.uid {
            self.shared
                .checked
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(uid.clone(), checked);
        }
    }
}

impl Shared {
    /// Keeps the index and the checks in step with what the store was just told.
    fn observe(&self, event: &watcher::Event<PartialObjectMeta<Secret>>) {
        match event {
            watcher::Event::Apply(meta) | watcher::Event::InitApply(meta) => {
                self.index(&meta.metadata)
            }
            watcher::Event::Delete(meta) => self.forget(&meta.metadata),
            watcher::Event::Init | watcher::Event::InitDone => {}
        }
    }

    fn index(&self, meta: &ObjectMeta) {
        let (Some(namespace), Some(name), Some(blueprint)) = (
            &meta.namespace,
            &meta.name,
            meta.labels.as_ref().and_then(|l| l.get(labels::BLUEPRINT)),
        ) else {
            return;
        };
        self.names
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((namespace.clone(), blueprint.clone()))
            .or_default()
            .insert(name.clone());
    }

    fn forget(&self, meta: &ObjectMeta) {
        if let (Some(namespace), Some(name), Some(blueprint)) = (
            &meta.namespace,
            &meta.name,
            meta.labels.as_ref().and_then(|l| l.get(labels::BLUEPRINT)),
        ) {
            let mut names = self.names.lock().unwrap_or_else(|e| e.into_inner());
            let key = (namespace.clone(), blueprint.clone());
            if let Some(set) = names.get_mut(&key) {
                set.remove(name);
                if set.is_empty() {
                    names.remove(&key);
                }
            }
        }
        if let Some(uid) = &meta.uid {
            self.checked
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(uid);
        }
    }
}

/// The names and resourceVersions of `metas`, sorted: equal for a list and the cache when the
/// cache shows every write the list does.
pub fn versions<'a>(
    metas: impl IntoIterator<Item = &'a ObjectMeta>,
) -> Vec<(String, Option<String>)> {
    let mut versions: Vec<_> = metas
        .into_iter()
        .map(|m| {
            (
                m.name.clone().unwrap_or_default(),
                m.resource_version.clone(),
            )
        })
        .collect();
    versions.sort();
    versions
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use kube::runtime::reflector::store::Writer;

    use super::*;

    fn secret(
        namespace: &str,
        name: &str,
        blueprint: &str,
        uid: &str,
        version: &str,
    ) -> PartialObjectMeta<Secret> {
        PartialObjectMeta {
            types: None,
            metadata: ObjectMeta {
                namespace: Some(namespace.into()),
                name: Some(name.into()),
                uid: Some(uid.into()),
                resource_version: Some(version.into()),
                labels: Some(BTreeMap::from([
                    (labels::BLUEPRINT.to_string(), names::label_value(blueprint)),
                    (labels::REVISION.to_string(), "1".to_string()),
                ])),
                ..ObjectMeta::default()
            },
            _phantom: Default::default(),
        }
    }

    fn tell(
        cache: &RevisionCache,
        writer: &mut Writer<PartialObjectMeta<Secret>>,
        event: watcher::Event<PartialObjectMeta<Secret>>,
    ) {
        writer.apply_watcher_event(&event);
        cache.shared.observe(&event);
    }

    fn names_of(metas: Vec<ObjectMeta>) -> Vec<String> {
        metas.into_iter().filter_map(|m| m.name).collect()
    }

    fn checked(version: &str) -> Checked {
        Checked {
            resource_version: version.into(),
            blueprint_uid: "bp-1".into(),
            revision: 1,
            outcome: Ok(None),
        }
    }

    #[test]
    fn a_blueprints_secrets_are_found_by_its_label_in_its_namespace_only() {
        let (store, mut writer) = reflector::store();
        let cache = RevisionCache::over(store);
        tell(&cache, &mut writer, watcher::Event::Init);
        for s in [
            secret("team-a", "db.r1", "db", "s1", "5"),
            secret("team-a", "db.r2", "db", "s2", "6"),
            secret("team-a", "db-two.r1", "db-two", "s3", "7"),
            secret("team-b", "db.r1", "db", "s4", "8"),
        ] {
            tell(&cache, &mut writer, watcher::Event::InitApply(s));
        }
        tell(&cache, &mut writer, watcher::Event::InitDone);
        assert_eq!(names_of(cache.of("team-a", "db")), ["db.r1", "db.r2"]);
        assert_eq!(names_of(cache.of("team-a", "db-two")), ["db-two.r1"]);
        assert_eq!(names_of(cache.of("team-b", "db")), ["db.r1"]);
        assert!(cache.of("team-c", "db").is_empty());

        tell(
            &cache,
            &mut writer,
            watcher::Event::Delete(secret("team-a", "db.r1", "db", "s1", "5")),
        );
        assert_eq!(names_of(cache.of("team-a", "db")), ["db.r2"]);
        // Relabelled to another Blueprint (by hand): no longer this one's.
        tell(
            &cache,
            &mut writer,
            watcher::Event::Apply(secret("team-a", "db.r2", "other", "s2", "9")),
        );
        assert!(cache.of("team-a", "db").is_empty());
        assert_eq!(names_of(cache.of("team-a", "other")), ["db.r2"]);
    }

    #[test]
    fn a_check_holds_for_one_version_of_one_secret_for_one_blueprint() {
        let (store, mut writer) = reflector::store();
        let cache = RevisionCache::over(store);
        let first = secret("team-a", "db.r1", "db", "s1", "5");
        tell(&cache, &mut writer, watcher::Event::Apply(first.clone()));
        cache.remember(&first.metadata, checked("5"));
        assert_eq!(cache.checked(&first.metadata, "bp-1"), Some(checked("5")));
        // Another Blueprint (same name, recreated) does not stand on it.
        assert_eq!(cache.checked(&first.metadata, "bp-2"), None);
        // An edit makes a new version, which is checked again.
        let edited = secret("team-a", "db.r1", "db", "s1", "6");
        tell(&cache, &mut writer, watcher::Event::Apply(edited.clone()));
        assert_eq!(cache.checked(&edited.metadata, "bp-1"), None);
        // A deleted Secret's checks go with it.
        tell(&cache, &mut writer, watcher::Event::Delete(first.clone()));
        assert_eq!(cache.checked(&first.metadata, "bp-1"), None);
    }
}
