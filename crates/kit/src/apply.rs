//! Server-side apply of any kind under windlass's one field manager, resolved through
//! discovery and compared with the live object first, so a settled reconcile writes nothing.

use std::{
    collections::HashMap,
    fmt,
    sync::{Arc, Mutex},
};

use kube::{
    Api, Client,
    api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams},
    core::{ApiResource, GroupVersionKind},
    discovery::{self, Scope as ResourceScope},
};
use serde_json::Value;
use windlass_api::FIELD_MANAGER;

use crate::{ListFloor, compare::up_to_date};

/// One object: `(apiVersion, kind, namespace, name)`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    pub api_version: String,
    pub kind: String,
    /// `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectKey {
    /// The key of a manifest; missing fields read as empty (the apply then says what is wrong).
    pub fn of(object: &Value) -> ObjectKey {
        let text = |pointer: &str| {
            object
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        ObjectKey {
            api_version: text("/apiVersion"),
            kind: text("/kind"),
            namespace: object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .filter(|ns| !ns.is_empty())
                .map(str::to_string),
            name: text("/metadata/name"),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {ns}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// What an apply did.
#[derive(Clone, Debug, PartialEq)]
pub enum Applied {
    /// The object did not exist.
    Created,
    /// It existed and differed.
    Updated,
    /// It existed, and someone else had changed fields windlass sets: the apply put them
    /// back. Which fields, what was found, what was restored and who changed them.
    Repaired(windlass_preview::Drift),
    /// It already was what we would write: nothing was sent.
    Unchanged,
}

impl Applied {
    pub fn wrote(self) -> bool {
        self != Applied::Unchanged
    }
}

/// Why an apply, read or delete failed; each variant names the object.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("{key}: not an object with apiVersion, kind and metadata.name")]
    Malformed { key: ObjectKey },
    #[error("{key}: the cluster serves no {api_version} {kind}: {source}", api_version = key.api_version, kind = key.kind)]
    Discovery { key: ObjectKey, source: kube::Error },
    #[error("reading {key}: {source}")]
    Read { key: ObjectKey, source: kube::Error },
    #[error("applying {key}: {source}")]
    Write { key: ObjectKey, source: kube::Error },
    #[error("deleting {key}: {source}")]
    Delete { key: ObjectKey, source: kube::Error },
    #[error("listing {api_version} {kind} labelled {selector}: {source}")]
    List {
        api_version: String,
        kind: String,
        selector: String,
        source: kube::Error,
    },
}

impl ApplyError {
    fn api_status(&self) -> Option<&kube::core::Status> {
        match self {
            ApplyError::Discovery { source, .. }
            | ApplyError::Read { source, .. }
            | ApplyError::Write { source, .. }
            | ApplyError::Delete { source, .. }
            | ApplyError::List { source, .. } => match source {
                kube::Error::Api(status) => Some(status),
                _ => None,
            },
            ApplyError::Malformed { .. } => None,
        }
    }

    /// The API server's status code, when it answered.
    pub fn status_code(&self) -> Option<u16> {
        self.api_status().map(|status| status.code)
    }

    /// What the API server said, in its own words, when it answered (for conditions: the
    /// full error also carries the whole status object).
    pub fn api_message(&self) -> Option<&str> {
        self.api_status().map(|status| status.message.as_str())
    }

    /// Someone changed the object since it was read: decide again.
    pub fn is_conflict(&self) -> bool {
        self.status_code() == Some(409)
    }

    /// The identity the write was made as may not do it (RBAC).
    pub fn is_forbidden(&self) -> bool {
        self.status_code() == Some(403)
    }
}

type Resources = HashMap<(String, String), (ApiResource, bool)>;
type Floors = HashMap<(String, String), Arc<ListFloor>>;

/// Applies, reads, lists and deletes objects of any kind. Kinds are resolved through discovery
/// once and remembered; clones (and [`Applier::with_client`]) share what was learnt, and the
/// newest version of each kind they wrote or listed (see [`Applier::list`]).
#[derive(Clone)]
pub struct Applier {
    client: Client,
    resources: Arc<Mutex<Resources>>,
    floors: Arc<Mutex<Floors>>,
}

impl Applier {
    pub fn new(client: Client) -> Applier {
        Applier {
            client,
            resources: Arc::default(),
            floors: Arc::default(),
        }
    }

    /// The same applier acting as another identity (an impersonating client), sharing the
    /// discovery it learnt: what the API server allows is then decided for that identity.
    pub fn with_client(&self, client: Client) -> Applier {
        Applier {
            client,
            resources: self.resources.clone(),
            floors: self.floors.clone(),
        }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The resource serving `apiVersion`/`kind`, and whether it is namespaced.
    pub async fn resource(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<(ApiResource, bool), kube::Error> {
        let key = (api_version.to_string(), kind.to_string());
        if let Some(found) = self.lock().get(&key) {
            return Ok(found.clone());
        }
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (resource, capabilities) = discovery::pinned_kind(&self.client, &gvk).await?;
        let found = (resource, capabilities.scope == ResourceScope::Namespaced);
        self.lock().insert(key, found.clone());
        Ok(found)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Resources> {
        self.resources.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The newest version of `apiVersion`/`kind` this applier (and its clones) wrote, deleted
    /// or listed: for a typed list of that kind that must show those writes.
    pub fn floor(&self, api_version: &str, kind: &str) -> Arc<ListFloor> {
        self.floors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((api_version.to_string(), kind.to_string()))
            .or_default()
            .clone()
    }

    async fn api_for(&self, key: &ObjectKey) -> Result<(Api<DynamicObject>, bool), ApplyError> {
        if key.api_version.is_empty() || key.kind.is_empty() || key.name.is_empty() {
            return Err(ApplyError::Malformed { key: key.clone() });
        }
        let (resource, namespaced) =
            self.resource(&key.api_version, &key.kind)
                .await
                .map_err(|source| ApplyError::Discovery {
                    key: key.clone(),
                    source,
                })?;
        let api = match (&key.namespace, namespaced) {
            (Some(ns), true) => Api::namespaced_with(self.client.clone(), ns, &resource),
            _ => Api::all_with(self.client.clone(), &resource),
        };
        Ok((api, namespaced))
    }

    /// The live object as JSON (managedFields included), or `None`.
    pub async fn get(&self, key: &ObjectKey) -> Result<Option<Value>, ApplyError> {
        let (api, _) = self.api_for(key).await?;
        let live = api
            .get_opt(&key.name)
            .await
            .map_err(|source| ApplyError::Read {
                key: key.clone(),
                source,
            })?;
        Ok(live.map(|o| serde_json::to_value(o).unwrap_or_default()))
    }

    /// Server-side applies `object` (forced, one field manager) unless the live object already
    /// is what it says ([`up_to_date`]).
    pub async fn apply(&self, object: &Value) -> Result<Applied, ApplyError> {
        let live = self.get(&ObjectKey::of(object)).await?;
        self.apply_over(object, live.as_ref()).await
    }

    /// [`Applier::apply`] compared against `live`, the object as the caller has just read it
    /// (`None`: it does not exist), instead of reading it again.
    pub async fn apply_over(
        &self,
        object: &Value,
        live: Option<&Value>,
    ) -> Result<Applied, ApplyError> {
        if let Some(live) = live
            && up_to_date(object, live)
        {
            return Ok(Applied::Unchanged);
        }
        let repaired = live.and_then(|live| windlass_preview::diff::repaired(object, live));
        self.send(&ObjectKey::of(object), object, false).await?;
        Ok(match (live, repaired) {
            (Some(_), Some(drift)) => Applied::Repaired(drift),
            (Some(_), None) => Applied::Updated,
            (None, _) => Applied::Created,
        })
    }

    /// What the API server would make of `object` (a server-side dry-run apply), without
    /// changing anything: admission, validation and RBAC all run.
    pub async fn dry_run(&self, object: &Value) -> Result<Value, ApplyError> {
        let key = ObjectKey::of(object);
        self.send(&key, object, true).await
    }

    async fn send(
        &self,
        key: &ObjectKey,
        object: &Value,
        dry_run: bool,
    ) -> Result<Value, ApplyError> {
        let (api, _) = self.api_for(key).await?;
        let mut params = PatchParams::apply(FIELD_MANAGER).force();
        params.dry_run = dry_run;
        let written = api
            .patch(&key.name, &params, &Patch::Apply(object))
            .await
            .map_err(|source| ApplyError::Write {
                key: key.clone(),
                source,
            })?;
        if !dry_run {
            self.floor(&key.api_version, &key.kind).wrote(&written);
        }
        Ok(serde_json::to_value(written).unwrap_or_default())
    }

    /// Deletes the object (in the background); `false` when it was already gone.
    pub async fn delete(&self, key: &ObjectKey) -> Result<bool, ApplyError> {
        let (api, _) = self.api_for(key).await?;
        match api.delete(&key.name, &DeleteParams::background()).await {
            Ok(deleted) => {
                // An object kept by its finalizers comes back marked; lists must show the mark.
                if let Some(marked) = deleted.left() {
                    self.floor(&key.api_version, &key.kind).wrote(&marked);
                }
                Ok(true)
            }
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
            Err(source) => Err(ApplyError::Delete {
                key: key.clone(),
                source,
            }),
        }
    }

    /// Objects of a kind carrying `selector`, in `namespace` (every namespace when `None`, and
    /// always for cluster-scoped kinds), from the API server's cache and never older than what
    /// this applier last wrote or listed of that kind: every write it made shows, others' a
    /// moment later. For a pass that is repeated (pruning), where a moment behind costs nothing.
    pub async fn list(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        selector: &str,
    ) -> Result<Vec<DynamicObject>, ApplyError> {
        self.list_with(api_version, kind, namespace, selector, Freshness::Cached)
            .await
    }

    /// As [`Applier::list`], but the cluster as it is now: for a decision made once (removing
    /// what an uninstall leaves, a precondition), which must not miss a write of another
    /// process.
    pub async fn list_current(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        selector: &str,
    ) -> Result<Vec<DynamicObject>, ApplyError> {
        self.list_with(api_version, kind, namespace, selector, Freshness::Current)
            .await
    }

    /// [`Applier::list`] or [`Applier::list_current`], as `freshness` says.
    pub async fn list_with(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        selector: &str,
        freshness: Freshness,
    ) -> Result<Vec<DynamicObject>, ApplyError> {
        let fail = |source| ApplyError::List {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            selector: selector.to_string(),
            source,
        };
        let (resource, namespaced) = self.resource(api_version, kind).await.map_err(fail)?;
        let api: Api<DynamicObject> = match (namespace, namespaced) {
            (Some(ns), true) => Api::namespaced_with(self.client.clone(), ns, &resource),
            _ => Api::all_with(self.client.clone(), &resource),
        };
        let floor = self.floor(api_version, kind);
        let params = ListParams::default().labels(selector);
        let listed = match freshness {
            Freshness::Cached => floor.list(&api, &params).await,
            Freshness::Current => floor.list_consistent(&api, &params).await,
        };
        listed.map(|list| list.items).map_err(fail)
    }
}

/// How fresh a list must be (see [`Applier::list`] and [`Applier::list_current`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Freshness {
    /// From the API server's cache, never older than what this applier wrote or listed.
    Cached,
    /// The cluster as it is now.
    Current,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_read_and_print_like_kubectl() {
        let namespaced = ObjectKey::of(&json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "db", "namespace": "team-a"},
        }));
        assert_eq!(namespaced.to_string(), "Deployment team-a/db");
        let cluster = ObjectKey::of(&json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "db", "namespace": ""},
        }));
        assert_eq!(cluster.namespace, None);
        assert_eq!(cluster.to_string(), "ClusterRole db");
    }
}
