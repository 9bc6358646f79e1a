//! The objects a revision writes, built as the apply stage and the ClusterServiceVersion's
//! controller build them, and what writing each would change: a server-side dry-run apply, as
//! the identity that will write it, compared with the live object.

use std::collections::BTreeSet;

use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use windlass_api::{ClusterServiceVersion, names};
use windlass_bundle::csv::ClusterServiceVersion as OlmCsv;
use windlass_csv_controller::desired::{InstallContext, build as csv_objects};
use windlass_kit::{Applier, ObjectKey, compare::up_to_date};
use windlass_preview::{ObjectAction, ObjectChange, ObjectRef, diff};

use crate::{Error, build::Owner};

/// Who writes what: the manager (cluster-scoped objects, the ClusterServiceVersion) and the
/// install identity (namespaced objects), as the apply stage splits them.
pub struct Writers<'a> {
    pub manager: &'a Applier,
    pub installer: &'a Applier,
    /// The install identity's user name, `manager` when it is the manager.
    pub identity: &'a str,
}

/// One object to look at, and who writes it.
pub struct Desired {
    pub object: Value,
    pub namespaced: bool,
    pub from_csv: bool,
}

/// Fields shown nowhere: the CSV's seal changes with its spec (the spec's changes are shown),
/// and the ownerReferences of what a CSV creates name the CSV of the moment.
fn shown(change: &windlass_preview::FieldChange, from_csv: bool) -> bool {
    let seal = format!(
        "metadata.annotations[{}]",
        serde_json::to_string(names::seal::ANNOTATION).unwrap_or_default()
    );
    change.path != seal && !(from_csv && change.path.starts_with("metadata.ownerReferences"))
}

/// What applying `desired` would do: read the live object, and unless it already is what
/// would be written, dry-run the apply as its writer. A refusal is recorded, not raised: the
/// apply would be refused the same way, which is what a person approving needs to know.
pub async fn examine(writers: &Writers<'_>, desired: &Desired) -> Result<ObjectChange, Error> {
    let writer = if desired.namespaced {
        writers.installer
    } else {
        writers.manager
    };
    let by = if desired.namespaced {
        writers.identity.to_string()
    } else {
        "manager".to_string()
    };
    let mut change = ObjectChange {
        object: ObjectRef::of(&desired.object),
        action: ObjectAction::Create,
        by,
        from_csv: desired.from_csv,
        fields: Vec::new(),
        fields_left_out: 0,
        refused: None,
        note: None,
    };
    let key = ObjectKey::of(&desired.object);
    let live = match writer.get(&key).await {
        Ok(live) => live,
        Err(error) if error.status_code().is_some() => {
            change.refused = Some(refusal(&error));
            return Ok(change);
        }
        Err(error) => return Err(error.into()),
    };
    if let Some(live) = &live
        && up_to_date(&desired.object, live)
    {
        change.action = ObjectAction::Unchanged;
        return Ok(change);
    }
    match writer.dry_run(&desired.object).await {
        Ok(after) => {
            if let Some(live) = &live {
                change.fields = diff::diff(live, &after)
                    .into_iter()
                    .filter(|c| shown(c, desired.from_csv))
                    .collect();
                change.action = if change.fields.is_empty() {
                    ObjectAction::Unchanged
                } else {
                    ObjectAction::Change
                };
            }
        }
        Err(error) if error.status_code().is_some() => {
            if live.is_some() {
                change.action = ObjectAction::Change;
            }
            change.refused = Some(refusal(&error));
        }
        Err(error) => return Err(error.into()),
    }
    Ok(change)
}

fn refusal(error: &windlass_kit::ApplyError) -> String {
    error
        .api_message()
        .map_or_else(|| error.to_string(), str::to_string)
}

/// The objects a windlass ClusterServiceVersion makes the CSV controller create (its
/// ServiceAccounts, RBAC and Deployments), from the CSV as applied. Webhook Services,
/// certificates and configurations are not among them.
pub fn from_csv(csv: &Value) -> Vec<Desired> {
    let spec: windlass_api::ClusterServiceVersionSpec =
        match serde_json::from_value(csv["spec"].clone()) {
            Ok(spec) => spec,
            Err(_) => return Vec::new(),
        };
    let Ok(definition) = OlmCsv::from_value(&spec.definition.to_value()) else {
        return Vec::new();
    };
    let name = csv["metadata"]["name"].as_str().unwrap_or_default();
    let namespace = csv["metadata"]["namespace"].as_str().unwrap_or_default();
    // The CSV's uid is only known once it exists; what it stands for is not shown (`shown`).
    let owner = json!({
        "apiVersion": "windlass.dev/v1alpha1",
        "kind": "ClusterServiceVersion",
        "name": name,
        "uid": csv["metadata"]["uid"].as_str().unwrap_or("00000000-0000-0000-0000-000000000000"),
        "controller": true,
        "blockOwnerDeletion": true,
    });
    // The Deployments run what the CSV's sealed rewrites say, so the plan shows that too.
    let image_rewrites: Vec<windlass_mirror::Rewrite> = spec
        .image_rewrites
        .iter()
        .cloned()
        .map(Into::into)
        .collect();
    let context = InstallContext {
        csv_name: name,
        namespace,
        owner,
        definition: &definition,
        target_namespaces: &spec.target_namespaces,
        config: &spec.config,
        image_rewrites: &image_rewrites,
        grants: spec
            .grant
            .as_ref()
            .map_or(&[], |g| g.cluster_scoped.as_slice()),
    };
    csv_objects(&context)
        .into_iter()
        .map(|o| Desired {
            namespaced: o.namespace().is_some(),
            object: o.object,
            from_csv: true,
        })
        .collect()
}

/// The live windlass ClusterServiceVersion `name`, as JSON.
pub async fn live_csv(
    manager: &Applier,
    namespace: &str,
    name: &str,
) -> Result<Option<Value>, Error> {
    let csv = Api::<ClusterServiceVersion>::namespaced(manager.client().clone(), namespace)
        .get_opt(name)
        .await
        .map_err(|source| Error::Read {
            what: format!("ClusterServiceVersion {namespace}/{name}"),
            source,
        })?;
    Ok(csv.map(|c| serde_json::to_value(c).unwrap_or_default()))
}

/// Objects the Blueprint applied that the revision no longer ships (custom resources never
/// count, as the apply stage never removes them), each as a delete.
pub async fn leftovers(
    writers: &Writers<'_>,
    owner: &Owner,
    kinds: &BTreeSet<(String, String)>,
    desired: &BTreeSet<ObjectRef>,
) -> Result<Vec<ObjectChange>, Error> {
    let manager = writers.manager;
    let selector = crate::names::selector(&owner.name, &owner.namespace);
    let mut out = Vec::new();
    for (api_version, kind) in kinds
        .iter()
        .filter(|(_, k)| k != "CustomResourceDefinition")
    {
        let Ok((resource, namespaced)) = manager.resource(api_version, kind).await else {
            continue;
        };
        if !resource.group.is_empty() && is_custom(manager, &resource).await? {
            continue;
        }
        let scope = namespaced.then_some(owner.namespace.as_str());
        for object in manager.list(api_version, kind, scope, &selector).await? {
            let reference = ObjectRef {
                api_version: api_version.clone(),
                kind: kind.clone(),
                namespace: object.namespace(),
                name: object.name_any(),
            };
            if desired.contains(&reference) {
                continue;
            }
            out.push(ObjectChange {
                by: if namespaced {
                    writers.identity.to_string()
                } else {
                    "manager".to_string()
                },
                object: reference,
                action: ObjectAction::Delete,
                from_csv: false,
                fields: Vec::new(),
                fields_left_out: 0,
                refused: None,
                note: None,
            });
        }
    }
    Ok(out)
}

async fn is_custom(manager: &Applier, resource: &kube::core::ApiResource) -> Result<bool, Error> {
    let name = format!("{}.{}", resource.plural, resource.group);
    let crds = Api::<
        k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    >::all(manager.client().clone());
    crds.get_opt(&name)
        .await
        .map(|crd| crd.is_some())
        .map_err(|source| Error::Read {
            what: format!("CRD {name}"),
            source,
        })
}
