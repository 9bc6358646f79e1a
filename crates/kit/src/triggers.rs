//! What wakes a reconcile, narrowed to what the reconcile reads: every write to a watched
//! object (a status patch included) is a watch event, and a reconcile that reads nothing it
//! changed is a request to the API server for nothing.

use std::{
    collections::{HashMap, HashSet, hash_map::DefaultHasher},
    hash::{Hash, Hasher},
};

use futures::{Stream, StreamExt, stream};
use kube::{
    Resource,
    core::PartialObjectMeta,
    runtime::watcher::{self, Event},
};

/// A hash of what a reconcile reads of its own object besides the status: generation (the
/// spec), labels, annotations, owners, finalizers and the deletion mark. A predicate for
/// `predicate_filter`, so a controller is not woken by its own status writes.
pub fn besides_status<K: Resource>(object: &K) -> Option<u64> {
    let meta = object.meta();
    let mut hasher = DefaultHasher::new();
    meta.generation.hash(&mut hasher);
    meta.labels.hash(&mut hasher);
    meta.annotations.hash(&mut hasher);
    meta.finalizers.hash(&mut hasher);
    for owner in meta.owner_references.iter().flatten() {
        (&owner.uid, &owner.kind, &owner.name, owner.controller).hash(&mut hasher);
    }
    meta.deletion_timestamp
        .as_ref()
        .map(|t| t.0.to_string())
        .hash(&mut hasher);
    Some(hasher.finish())
}

type Key = (Option<String>, String);

fn key_of<K: Resource>(object: &K) -> Key {
    let meta = object.meta();
    (
        meta.namespace.clone(),
        meta.name.clone().unwrap_or_default(),
    )
}

/// Which objects exist, from watch events: tells when one appears or goes, never when one
/// only changes. A re-list (after a watch expired) reports the objects that went meanwhile.
pub struct Membership<K> {
    known: HashMap<Key, K>,
    relisted: Option<HashSet<Key>>,
}

impl<K> Default for Membership<K> {
    fn default() -> Self {
        Membership {
            known: HashMap::new(),
            relisted: None,
        }
    }
}

impl<K: Resource + Clone> Membership<K> {
    /// The objects that appeared or went with this event.
    pub fn on(&mut self, event: Event<K>) -> Vec<K> {
        match event {
            Event::Init => {
                self.relisted = Some(HashSet::new());
                Vec::new()
            }
            Event::InitApply(object) => {
                if let Some(relisted) = &mut self.relisted {
                    relisted.insert(key_of(&object));
                }
                self.arrived(object)
            }
            Event::Apply(object) => self.arrived(object),
            Event::Delete(object) => {
                self.known.remove(&key_of(&object));
                vec![object]
            }
            Event::InitDone => {
                let Some(relisted) = self.relisted.take() else {
                    return Vec::new();
                };
                let gone: Vec<Key> = self
                    .known
                    .keys()
                    .filter(|key| !relisted.contains(*key))
                    .cloned()
                    .collect();
                gone.iter()
                    .filter_map(|key| self.known.remove(key))
                    .collect()
            }
        }
    }

    fn arrived(&mut self, object: K) -> Vec<K> {
        let key = key_of(&object);
        if self.known.contains_key(&key) {
            return Vec::new();
        }
        self.known.insert(key, object.clone());
        vec![object]
    }
}

/// The objects of a watch as they appear and go, each once: later changes to an object are
/// left out. For a controller that depends on whether objects exist, not on what they say;
/// given a reflector's events, its store holds each object before its arrival is passed on.
pub fn arrivals_and_departures<K, S>(
    events: S,
) -> impl Stream<Item = Result<K, watcher::Error>> + Send
where
    K: Resource + Clone + Send + 'static,
    S: Stream<Item = Result<Event<K>, watcher::Error>> + Send,
{
    let mut membership = Membership::<K>::default();
    events
        .map(move |event| match event {
            Ok(event) => membership.on(event).into_iter().map(Ok).collect(),
            Err(error) => vec![Err(error)],
        })
        .flat_map(stream::iter)
}

/// Drops what a controller reading only metadata never needs to hold.
pub fn without_managed_fields<K>(object: &mut PartialObjectMeta<K>) {
    object.metadata.managed_fields = None;
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::*;

    fn object(name: &str, resource_version: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("team-a".into()),
                resource_version: Some(resource_version.into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    fn names(objects: Vec<ConfigMap>) -> Vec<String> {
        objects
            .into_iter()
            .map(|o| o.metadata.name.unwrap_or_default())
            .collect()
    }

    #[test]
    fn an_object_is_told_when_it_appears_and_when_it_goes_never_when_it_changes() {
        let mut membership = Membership::default();
        assert_eq!(names(membership.on(Event::Apply(object("a", "1")))), ["a"]);
        assert!(membership.on(Event::Apply(object("a", "2"))).is_empty());
        assert_eq!(names(membership.on(Event::Delete(object("a", "3")))), ["a"]);
        assert_eq!(names(membership.on(Event::Apply(object("a", "4")))), ["a"]);
    }

    #[test]
    fn a_relist_tells_what_went_while_the_watch_was_down_and_what_is_new() {
        let mut membership = Membership::default();
        membership.on(Event::Apply(object("kept", "1")));
        membership.on(Event::Apply(object("gone", "1")));
        assert!(membership.on(Event::Init).is_empty());
        assert!(
            membership
                .on(Event::InitApply(object("kept", "5")))
                .is_empty()
        );
        assert_eq!(
            names(membership.on(Event::InitApply(object("new", "6")))),
            ["new"]
        );
        assert_eq!(names(membership.on(Event::InitDone)), ["gone"]);
        // Gone for good: a later change of another object tells nothing about it.
        assert!(membership.on(Event::Apply(object("kept", "7"))).is_empty());
    }

    #[test]
    fn status_writes_do_not_change_the_hash_spec_metadata_and_deletion_do() {
        let mut live = object("a", "1");
        let before = besides_status(&live);
        live.metadata.resource_version = Some("2".into());
        live.data = Some([("status".to_string(), "written".to_string())].into());
        assert_eq!(besides_status(&live), before, "resourceVersion and content");
        let changes: [fn(&mut ConfigMap); 6] = [
            |o| o.metadata.generation = Some(2),
            |o| o.metadata.labels = Some([("l".to_string(), "v".to_string())].into()),
            |o| o.metadata.annotations = Some([("a".to_string(), "v".to_string())].into()),
            |o| o.metadata.finalizers = Some(vec!["windlass.dev/cleanup".into()]),
            |o| {
                o.metadata.owner_references = Some(vec![
                    k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                        uid: "0000-1111".into(),
                        ..Default::default()
                    },
                ])
            },
            |o| {
                o.metadata.deletion_timestamp =
                    Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                        "2026-01-01T00:00:00Z".parse().unwrap(),
                    ))
            },
        ];
        for change in changes {
            let mut changed = live.clone();
            change(&mut changed);
            assert_ne!(besides_status(&changed), before);
        }
    }
}
