//! The apply stage: server-side apply under windlass's one field manager, in order (CRDs,
//! the bundle's other objects, then the CSV), followed by the removal of what the revision no
//! longer ships. Custom resources are never deleted; CRDs only by the finalizer, when asked.

use std::collections::{BTreeSet, HashMap};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams},
    core::{ApiResource, GroupVersionKind},
    discovery::{self, Scope},
};
use serde_json::{Value, json};
use windlass_api::{Blueprint, ClusterServiceVersion, FIELD_MANAGER};

use crate::{
    Error,
    build::{self, CsvSettings, Owner},
    content::Loaded,
    names,
    plan::{ApplyPlan, CrdPolicy},
};

const CRD_KIND: &str = "CustomResourceDefinition";

/// One object, as the stage knows it: `(apiVersion, kind, namespace, name)`.
type Key = (String, String, Option<String>, String);

/// Applies and deletes arbitrary kinds, resolving each kind through discovery once.
pub struct Applier {
    client: Client,
    resources: HashMap<(String, String), (ApiResource, bool)>,
    custom: HashMap<String, bool>,
}

impl Applier {
    pub fn new(client: Client) -> Applier {
        Applier {
            client,
            resources: HashMap::new(),
            custom: HashMap::new(),
        }
    }

    /// The resource and whether it is namespaced.
    async fn resource(
        &mut self,
        api_version: &str,
        kind: &str,
    ) -> Result<(ApiResource, bool), kube::Error> {
        let key = (api_version.to_string(), kind.to_string());
        if let Some(found) = self.resources.get(&key) {
            return Ok(found.clone());
        }
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (resource, capabilities) = discovery::pinned_kind(&self.client, &gvk).await?;
        let found = (resource, capabilities.scope == Scope::Namespaced);
        self.resources.insert(key, found.clone());
        Ok(found)
    }

    fn api(&self, resource: &ApiResource, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, resource),
            None => Api::all_with(self.client.clone(), resource),
        }
    }

    /// Whether objects of this resource are custom resources (a CRD serves them).
    async fn is_custom_resource(&mut self, resource: &ApiResource) -> Result<bool, Error> {
        if resource.group.is_empty() {
            return Ok(false);
        }
        let crd = format!("{}.{}", resource.plural, resource.group);
        if let Some(known) = self.custom.get(&crd) {
            return Ok(*known);
        }
        let found = Api::<CustomResourceDefinition>::all(self.client.clone())
            .get_opt(&crd)
            .await
            .map_err(|source| Error::Read {
                what: format!("CRD {crd}"),
                source,
            })?
            .is_some();
        self.custom.insert(crd, found);
        Ok(found)
    }

    /// Server-side applies a built object; returns its key.
    async fn apply(&mut self, object: &Value) -> Result<Key, Error> {
        let text = |pointer: &str| {
            object
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let (api_version, kind, name) =
            (text("/apiVersion"), text("/kind"), text("/metadata/name"));
        let namespace = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .map(str::to_string);
        let (resource, _) =
            self.resource(&api_version, &kind)
                .await
                .map_err(|source| Error::Discovery {
                    api_version: api_version.clone(),
                    kind: kind.clone(),
                    name: name.clone(),
                    source,
                })?;
        self.api(&resource, namespace.as_deref())
            .patch(
                &name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(object),
            )
            .await
            .map_err(|source| Error::Apply {
                kind: kind.clone(),
                name: name.clone(),
                source,
            })?;
        Ok((api_version, kind, namespace, name))
    }

    async fn delete(
        &mut self,
        resource: &ApiResource,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<(), Error> {
        match self
            .api(resource, namespace)
            .delete(name, &DeleteParams::background())
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(source) => Err(Error::Delete {
                kind: resource.kind.clone(),
                name: name.to_string(),
                source,
            }),
        }
    }

    /// Objects of a kind that carry this Blueprint's labels.
    async fn labelled(
        &mut self,
        resource: &ApiResource,
        namespace: Option<&str>,
        selector: &str,
    ) -> Result<Vec<DynamicObject>, Error> {
        self.api(resource, namespace)
            .list(&ListParams::default().labels(selector))
            .await
            .map(|list| list.items)
            .map_err(|source| Error::Read {
                what: format!("{} labelled {selector}", resource.kind),
                source,
            })
    }
}

/// Applies a revision: clear supersedes cycles, CRDs, other objects, the CSV; then remove
/// CSVs that hand over nothing and objects the revision no longer ships. `known_kinds` are the
/// kinds any stored revision ships, where leftovers may be.
pub async fn apply_revision(
    client: &Client,
    blueprint: &Blueprint,
    owner: &Owner,
    loaded: &Loaded,
    plan: &ApplyPlan,
    known_kinds: &[(String, String)],
) -> Result<(), Error> {
    let namespace = owner.namespace.as_str();
    let csvs = Api::<ClusterServiceVersion>::namespaced(client.clone(), namespace);
    // First, so the CSV applied below never finds another naming it as its successor.
    for name in &plan.clear_supersedes {
        let patch = json!({"spec": {"supersedes": null}});
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..PatchParams::default()
        };
        match csvs.patch(name, &params, &Patch::Merge(&patch)).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(source) => {
                return Err(Error::Apply {
                    kind: "ClusterServiceVersion".into(),
                    name: name.clone(),
                    source,
                });
            }
        }
    }

    let mut applier = Applier::new(client.clone());
    let mut desired: BTreeSet<Key> = BTreeSet::new();
    for manifest in &loaded.converted.objects {
        let live = loaded.live_crds.get(manifest.name());
        let object = if manifest.kind() == CRD_KIND {
            // A rollback keeps the newer definition of a CRD that exists.
            if plan.content.crds == CrdPolicy::KeepLive && live.is_some() {
                continue;
            }
            let from = build::BundleId {
                package: &loaded.content.package,
                version: &loaded.content.version,
            };
            if let Some(live) = live
                && build::live_crd_is_newer(live, &from)
            {
                tracing::debug!(
                    crd = manifest.name(),
                    "keeping the newer definition a later version of the package applied"
                );
                continue;
            }
            build::crd(&manifest.object, live, owner, &from)
        } else {
            let (_, namespaced) = applier
                .resource(manifest.api_version(), manifest.kind())
                .await
                .map_err(|source| Error::Discovery {
                    api_version: manifest.api_version().to_string(),
                    kind: manifest.kind().to_string(),
                    name: manifest.name().to_string(),
                    source,
                })?;
            build::object(&manifest.object, namespaced, owner)
        };
        desired.insert(applier.apply(&object).await?);
    }

    let conversions = loaded
        .converted
        .changes
        .iter()
        .map(|(file, change)| format!("{file}: {change}"))
        .collect();
    let settings = CsvSettings {
        owner,
        revision: plan.content.revision,
        supersedes: plan.supersedes.clone(),
        progress_deadline_seconds: blueprint.spec.progress_deadline_seconds,
        conversions,
    };
    let csv = build::csv(&loaded.content, &settings).map_err(|e| Error::Build {
        name: loaded.content.cluster_service_version_name.clone(),
        message: e.to_string(),
    })?;
    csvs.patch(
        &loaded.content.cluster_service_version_name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&csv),
    )
    .await
    .map_err(|source| Error::Apply {
        kind: "ClusterServiceVersion".into(),
        name: loaded.content.cluster_service_version_name.clone(),
        source,
    })?;
    for name in &plan.delete_csvs {
        match csvs.delete(name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(source) => {
                return Err(Error::Delete {
                    kind: "ClusterServiceVersion".into(),
                    name: name.clone(),
                    source,
                });
            }
        }
    }

    let mut kinds: BTreeSet<(String, String)> = known_kinds.iter().cloned().collect();
    kinds.extend(
        desired
            .iter()
            .map(|(api_version, kind, _, _)| (api_version.clone(), kind.clone())),
    );
    let selector = names::selector(&owner.name, namespace);
    for (api_version, kind) in kinds.iter().filter(|(_, kind)| kind != CRD_KIND) {
        // A kind the cluster no longer serves holds nothing to remove.
        let Ok((resource, namespaced)) = applier.resource(api_version, kind).await else {
            continue;
        };
        if applier.is_custom_resource(&resource).await? {
            continue;
        }
        let scope = namespaced.then_some(namespace);
        for object in applier.labelled(&resource, scope, &selector).await? {
            let key = (
                api_version.clone(),
                kind.clone(),
                object.namespace(),
                object.name_any(),
            );
            if !desired.contains(&key) {
                applier
                    .delete(&resource, object.namespace().as_deref(), &object.name_any())
                    .await?;
            }
        }
    }
    Ok(())
}

/// The finalizer's work: remove the cluster-scoped objects this Blueprint applied (namespaced
/// ones go with it through their ownerReferences). CRDs only when `delete_crds` and no other
/// windlass CSV still owns them; custom resources never. Returns what was removed.
pub async fn cleanup(
    client: &Client,
    owner: &Owner,
    known_kinds: &[(String, String)],
    crds: &[String],
    delete_crds: bool,
) -> Result<Vec<String>, Error> {
    let mut applier = Applier::new(client.clone());
    let selector = names::selector(&owner.name, &owner.namespace);
    let mut removed = Vec::new();
    for (api_version, kind) in known_kinds {
        if kind == CRD_KIND {
            continue;
        }
        let Ok((resource, namespaced)) = applier.resource(api_version, kind).await else {
            continue;
        };
        if namespaced || applier.is_custom_resource(&resource).await? {
            continue;
        }
        for object in applier.labelled(&resource, None, &selector).await? {
            let name = object.name_any();
            applier.delete(&resource, None, &name).await?;
            removed.push(format!("{kind} {name}"));
        }
    }
    if delete_crds && !crds.is_empty() {
        // CRDs carry no Blueprint labels (they are shared); the stored revisions name them.
        let others = crds_owned_elsewhere(client, &selector).await?;
        let definitions = Api::<CustomResourceDefinition>::all(client.clone());
        for name in crds.iter().filter(|c| !others.contains(*c)) {
            match definitions.delete(name, &Default::default()).await {
                Ok(_) => removed.push(format!("{CRD_KIND} {name}")),
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(source) => {
                    return Err(Error::Apply {
                        kind: CRD_KIND.into(),
                        name: name.clone(),
                        source,
                    });
                }
            }
        }
    }
    Ok(removed)
}

/// CRDs that a windlass CSV of some other Blueprint owns: shared, so never deleted.
async fn crds_owned_elsewhere(client: &Client, own: &str) -> Result<BTreeSet<String>, Error> {
    let all = Api::<ClusterServiceVersion>::all(client.clone())
        .list(&ListParams::default())
        .await
        .map_err(|source| Error::Read {
            what: "ClusterServiceVersions".into(),
            source,
        })?;
    let ours: BTreeSet<String> = Api::<ClusterServiceVersion>::all(client.clone())
        .list(&ListParams::default().labels(own))
        .await
        .map_err(|source| Error::Read {
            what: format!("ClusterServiceVersions labelled {own}"),
            source,
        })?
        .items
        .iter()
        .filter_map(|c| c.uid())
        .collect();
    Ok(all
        .items
        .iter()
        .filter(|c| c.uid().is_none_or(|uid| !ours.contains(&uid)))
        .flat_map(|c| {
            c.spec.definition["spec"]["customresourcedefinitions"]["owned"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|o| o["name"].as_str().map(str::to_string))
                .collect::<Vec<_>>()
        })
        .collect())
}
