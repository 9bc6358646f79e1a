//! The apply stage: server-side apply under windlass's one field manager, in order (CRDs,
//! the bundle's other objects, then the CSV), followed by the removal of what the revision no
//! longer ships. Custom resources are never deleted; CRDs only by the finalizer, when asked.

use std::collections::{BTreeSet, HashMap};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, Resource, ResourceExt,
    api::{ListParams, Patch, PatchParams},
    core::ApiResource,
};
use serde_json::{Value, json};
use windlass_api::names::annotations;
use windlass_api::{
    Blueprint, ClusterServiceVersion, FIELD_MANAGER, csv::CsvGrant, policy::ClusterScopedGrant,
};
use windlass_kit::{Applier, ObjectKey};
use windlass_revisions::SealKey;
use windlass_tenancy::Identity;

use crate::{
    Error,
    build::{self, CsvSettings, Owner},
    content::Loaded,
    names,
    plan::{ApplyPlan, CrdPolicy},
};

const CRD_KIND: &str = "CustomResourceDefinition";
const CRD_API_VERSION: &str = "apiextensions.k8s.io/v1";

/// Which resources are custom resources (a CRD serves them), learnt once per pass: custom
/// resources are never deleted.
#[derive(Default)]
struct CustomResources(HashMap<String, bool>);

impl CustomResources {
    async fn contains(&mut self, applier: &Applier, resource: &ApiResource) -> Result<bool, Error> {
        if resource.group.is_empty() {
            return Ok(false);
        }
        let crd = format!("{}.{}", resource.plural, resource.group);
        if let Some(known) = self.0.get(&crd) {
            return Ok(*known);
        }
        let found = Api::<CustomResourceDefinition>::all(applier.client().clone())
            .get_opt(&crd)
            .await
            .map_err(|source| Error::Read {
                what: format!("CRD {crd}"),
                source,
            })?
            .is_some();
        self.0.insert(crd, found);
        Ok(found)
    }
}

/// The live definition of CRD `name`, if there is one, as the API server sent it (what an
/// apply compares against).
async fn current_crd(applier: &Applier, name: &str) -> Result<Option<Value>, Error> {
    let key = ObjectKey {
        api_version: CRD_API_VERSION.into(),
        kind: CRD_KIND.into(),
        namespace: None,
        name: name.into(),
    };
    Ok(applier.get(&key).await?)
}

/// The resource serving a kind, or `None` when the cluster no longer serves it (then it holds
/// nothing to remove either).
async fn served(applier: &Applier, api_version: &str, kind: &str) -> Option<(ApiResource, bool)> {
    applier.resource(api_version, kind).await.ok()
}

/// Who writes a revision: the manager (cluster-scoped objects, the CSV, sealed with its key) and
/// the install identity (namespaced objects).
pub struct Writers<'a> {
    pub manager: &'a Applier,
    pub installer: &'a Applier,
    pub seal_key: &'a SealKey,
}

/// Applies a revision: clear supersedes cycles, CRDs, other objects, the CSV; then remove
/// CSVs that hand over nothing and objects the revision no longer ships. Namespaced objects
/// are applied and removed by `installer` (acting as the install identity), cluster-scoped
/// ones (which the namespace's policies granted) and the CSV by the manager. `known_kinds` are the
/// kinds any stored revision ships, where leftovers may be.
pub async fn apply_revision(
    writers: &Writers<'_>,
    blueprint: &Blueprint,
    owner: &Owner,
    loaded: &Loaded,
    plan: &ApplyPlan,
    known_kinds: &[(String, String)],
) -> Result<Vec<windlass_preview::Drift>, Error> {
    let mut repaired = Vec::new();
    let Writers {
        manager: applier,
        installer,
        seal_key,
    } = *writers;
    let namespace = owner.namespace.as_str();
    let csvs = Api::<ClusterServiceVersion>::namespaced(applier.client().clone(), namespace);
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

    let placement = &loaded.placement;
    let mut desired: BTreeSet<ObjectKey> = BTreeSet::new();
    for manifest in &loaded.converted.objects {
        let live = loaded.live_crds.get(manifest.name());
        let (object, writer, read) = if manifest.kind() == CRD_KIND {
            // A rollback keeps the newer definition of a CRD that exists.
            if plan.content.crds == CrdPolicy::KeepLive && live.is_some() {
                continue;
            }
            // Withdrawn from a running install: the live CRDs stay as they are (they hold
            // every namespace's custom resources); none is created or changed.
            if !placement.has(ClusterScopedGrant::CustomResourceDefinitions) {
                continue;
            }
            // CRDs are shared: another Blueprint may have written (or removed) this one since it
            // was checked. Then it is checked again; the apply itself is guarded by the
            // resourceVersion checked (see build::crd).
            let now = current_crd(applier, manifest.name()).await?;
            let version = |crd: Option<&Value>| {
                crd.and_then(|c| c.pointer("/metadata/resourceVersion"))
                    .cloned()
            };
            if version(now.as_ref()) != version(live) {
                return Err(Error::Stale {
                    what: format!("CRD {}", manifest.name()),
                });
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
            // Compared against the read just made: the same version as `live`.
            (
                build::crd(&manifest.object, live, owner, &from),
                applier,
                Some(now),
            )
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
            // A cluster-scoped object the permit no longer grants is not applied, so the pass
            // below removes it.
            if !namespaced && !placement.has(crate::permit::object_grant(manifest.kind())) {
                continue;
            }
            // Namespaced objects as the install identity: the API server decides what it
            // may create.
            let writer = if namespaced { installer } else { applier };
            // Fields the Subscription leaves to people are never applied.
            let object = build::object(&manifest.object, namespaced, owner);
            (loaded.content.config.without_ignored(&object), writer, None)
        };
        let applied = match read {
            Some(live) => writer.apply_over(&object, live.as_ref()).await?,
            None => writer.apply(&object).await?,
        };
        if let windlass_kit::Applied::Repaired(drift) = applied {
            repaired.push(drift);
        }
        desired.insert(ObjectKey::of(&object));
    }

    let csv = sealed_csv(
        seal_key,
        blueprint,
        owner,
        loaded,
        plan.content.revision,
        plan.supersedes.clone(),
    )?;
    applier.apply(&csv).await?;
    for name in &plan.delete_csvs {
        let key = ObjectKey::of(&json!({
            "apiVersion": ClusterServiceVersion::api_version(&()),
            "kind": ClusterServiceVersion::kind(&()),
            "metadata": {"name": name, "namespace": namespace},
        }));
        applier.delete(&key).await?;
    }

    let mut kinds: BTreeSet<(String, String)> = known_kinds.iter().cloned().collect();
    kinds.extend(
        desired
            .iter()
            .map(|key| (key.api_version.clone(), key.kind.clone())),
    );
    let selector = names::selector(&owner.name, namespace);
    let mut custom = CustomResources::default();
    for (api_version, kind) in kinds.iter().filter(|(_, kind)| kind != CRD_KIND) {
        let Some((resource, namespaced)) = served(applier, api_version, kind).await else {
            continue;
        };
        if custom.contains(applier, &resource).await? {
            continue;
        }
        let scope = namespaced.then_some(namespace);
        for object in applier.list(api_version, kind, scope, &selector).await? {
            let key = ObjectKey {
                api_version: api_version.clone(),
                kind: kind.clone(),
                namespace: object.namespace(),
                name: object.name_any(),
            };
            if !desired.contains(&key) {
                if key.namespace.is_some() {
                    installer.delete(&key).await?;
                } else {
                    applier.delete(&key).await?;
                }
            }
        }
    }
    Ok(repaired)
}

/// The ClusterServiceVersion of revision `revision` of `loaded`, sealed: what the apply writes
/// and the preview dry-runs.
// The one error type of the controller; built once per apply, its size costs nothing.
#[allow(clippy::result_large_err)]
pub fn sealed_csv(
    seal_key: &SealKey,
    blueprint: &Blueprint,
    owner: &Owner,
    loaded: &Loaded,
    revision: i64,
    supersedes: Option<String>,
) -> Result<Value, Error> {
    let placement = &loaded.placement;
    let settings = CsvSettings {
        owner,
        revision,
        supersedes,
        progress_deadline_seconds: blueprint.spec.progress_deadline_seconds,
        conversions: loaded
            .converted
            .changes
            .iter()
            .map(|(file, change)| format!("{file}: {change}"))
            .collect(),
        target_namespaces: placement.targets.clone(),
        install_service_account: match &placement.permit.identity {
            Identity::ServiceAccount { name, .. } => Some(name.clone()),
            Identity::Manager => None,
        },
        grant: CsvGrant {
            blueprint_uid: owner.uid.clone(),
            revision,
            policy: placement.permit.policy.clone(),
            policy_generation: placement.permit.policy_generation,
            cluster_scoped: placement.csv_grants(),
        },
    };
    let name = &loaded.content.cluster_service_version_name;
    let mut csv = build::csv(&loaded.content, &settings).map_err(|e| Error::Build {
        name: name.clone(),
        message: e.to_string(),
    })?;
    // The CSV controller acts only on CSVs that carry windlass's seal.
    let seal = windlass_revisions::csv::seal_spec(seal_key, &owner.namespace, name, &csv["spec"]);
    if let Some(annotations) = csv
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.insert(
            windlass_api::names::seal::ANNOTATION.into(),
            Value::String(seal),
        );
    }
    Ok(csv)
}

/// The finalizer's work: remove the cluster-scoped objects this Blueprint applied (namespaced
/// ones go with it through their ownerReferences). CRDs only when `delete_crds`, `package`
/// manages them and no other windlass CSV still owns them; custom resources never. Returns
/// what was removed.
pub async fn cleanup(
    applier: &Applier,
    owner: &Owner,
    package: &str,
    known_kinds: &[(String, String)],
    crds: &[String],
    delete_crds: bool,
) -> Result<Vec<String>, Error> {
    let selector = names::selector(&owner.name, &owner.namespace);
    let mut removed = Vec::new();
    let mut custom = CustomResources::default();
    for (api_version, kind) in known_kinds {
        if kind == CRD_KIND {
            continue;
        }
        let Some((resource, namespaced)) = served(applier, api_version, kind).await else {
            continue;
        };
        if namespaced || custom.contains(applier, &resource).await? {
            continue;
        }
        for object in applier
            .list_current(api_version, kind, None, &selector)
            .await?
        {
            let key = ObjectKey {
                api_version: api_version.clone(),
                kind: kind.clone(),
                namespace: None,
                name: object.name_any(),
            };
            applier.delete(&key).await?;
            removed.push(key.to_string());
        }
    }
    if delete_crds && !crds.is_empty() {
        // CRDs carry no Blueprint labels (they are shared); the stored revisions name them.
        // Only those this package manages go, and none another windlass CSV owns.
        let others = crds_owned_elsewhere(applier.client(), &selector).await?;
        let crd_api = Api::<CustomResourceDefinition>::all(applier.client().clone());
        for name in crds.iter().filter(|c| !others.contains(*c)) {
            let live = crd_api.get_opt(name).await.map_err(|source| Error::Read {
                what: format!("CRD {name}"),
                source,
            })?;
            let ours = live.as_ref().is_some_and(|crd| {
                crd.annotations()
                    .get(annotations::CRD_PACKAGE)
                    .map(String::as_str)
                    == Some(package)
            });
            if !ours {
                tracing::info!(crd = %name, "not deleted: another package or owner manages it");
                continue;
            }
            let key = ObjectKey {
                api_version: CRD_API_VERSION.into(),
                kind: CRD_KIND.into(),
                namespace: None,
                name: name.clone(),
            };
            if applier.delete(&key).await? {
                removed.push(key.to_string());
            }
            // With the CRD gone, so is the manager's read (and snapshot and restore) of its
            // custom resources.
            for role in [
                windlass_api::names::custom_resource_reader(name),
                windlass_api::names::custom_resource_keeper(name),
            ] {
                let key = ObjectKey {
                    api_version: "rbac.authorization.k8s.io/v1".into(),
                    kind: "ClusterRole".into(),
                    namespace: None,
                    name: role,
                };
                if applier.delete(&key).await? {
                    removed.push(key.to_string());
                }
            }
        }
    }
    Ok(removed)
}

/// CRDs that a windlass CSV of some other Blueprint owns: shared, so never deleted.
async fn crds_owned_elsewhere(client: &kube::Client, own: &str) -> Result<BTreeSet<String>, Error> {
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
        .flat_map(|c| c.spec.definition.crd_names().owned)
        .collect())
}
