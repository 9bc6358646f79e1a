//! Applying one run level: each step's manifests (apply, create-only, delete), then waiting
//! until every object of the step is healthy before the next step.

use kube::Resource;
use serde_json::Value;
use windlass_api::{
    Blueprint, ClusterVersion, Subscription,
    names::labels::{RELEASE_MANAGED, RELEASE_MANAGED_VALUE},
};
use windlass_release::{
    Action as ManifestAction, ObjectId, PlannedManifest, RunLevel,
    health::{Health, WINDLASS_GROUP, health, subscription_health},
};

use crate::Context;

/// The objects `spec.overrides` leaves unmanaged.
pub fn unmanaged(version: &ClusterVersion) -> Vec<ObjectId> {
    version
        .spec
        .overrides
        .iter()
        .filter(|o| o.unmanaged)
        .map(|o| ObjectId {
            group: o.group.clone(),
            kind: o.kind.clone(),
            namespace: Some(o.namespace.clone()).filter(|ns| !ns.is_empty()),
            name: o.name.clone(),
        })
        .collect()
}

/// The manifest as windlass applies it: labelled as a payload object, so its drift is watched.
pub fn labelled(body: &Value) -> Value {
    let mut body = body.clone();
    if let Some(metadata) = body.get_mut("metadata").and_then(Value::as_object_mut) {
        let labels = metadata
            .entry("labels")
            .or_insert_with(|| Value::Object(Default::default()));
        if !labels.is_object() {
            *labels = Value::Object(Default::default());
        }
        labels[RELEASE_MANAGED] = Value::String(RELEASE_MANAGED_VALUE.into());
    }
    body
}

pub fn components(level: &RunLevel) -> String {
    let mut names: Vec<&str> = level
        .components()
        .filter_map(|c| c.component.as_deref())
        .collect();
    names.dedup();
    names.join(",")
}

/// What a level waits for.
pub struct Waiting {
    pub object: String,
    pub component: String,
    pub message: String,
    pub failed: bool,
}

fn describe(manifest: &PlannedManifest) -> String {
    let object = &manifest.object;
    match &object.namespace {
        Some(ns) => format!("{} {ns}/{}", object.kind, object.name),
        None => format!("{} {}", object.kind, object.name),
    }
}

/// Applies `level` step by step, leaving out the `unmanaged` objects; `Ok(None)` once every
/// object is healthy, the first object that is not otherwise, `Err` when the API server refuses
/// a manifest.
pub async fn apply_level(
    ctx: &Context,
    level: &RunLevel,
    payload_version: &str,
    unmanaged: &[ObjectId],
) -> Result<Option<Waiting>, String> {
    let managed = |manifest: &&PlannedManifest| !manifest.object.id().overridden_by(unmanaged);
    for step in &level.steps {
        // The step's components side by side, each component's files in order.
        let applied = step.components.iter().map(|component| async move {
            for manifest in component.manifests.iter().filter(managed) {
                apply_manifest(ctx, manifest).await?;
            }
            Ok::<(), String>(())
        });
        futures::future::try_join_all(applied).await?;
        // A step is a barrier (a Job, or the end of the level): all of it is healthy first.
        // Every object is read at once; the first one in order that is not healthy is named.
        let objects: Vec<(&str, &PlannedManifest)> = step
            .components
            .iter()
            .flat_map(|c| {
                let name = c.component.as_deref().unwrap_or_default();
                c.manifests.iter().filter(managed).map(move |m| (name, m))
            })
            .collect();
        let mut verdicts = Vec::with_capacity(objects.len());
        for chunk in objects.chunks(CONCURRENT_READS) {
            let judged = chunk
                .iter()
                .map(|&(_, manifest)| judge(ctx, manifest, payload_version));
            verdicts.extend(futures::future::join_all(judged).await);
        }
        for ((component, manifest), verdict) in objects.iter().zip(verdicts) {
            let verdict = verdict.map_err(|e| format!("{}: {e}", describe(manifest)))?;
            let (message, failed) = match verdict {
                Health::Ready => continue,
                Health::Waiting(reason) => (reason.to_string(), false),
                Health::Failed(message) => (message, true),
            };
            return Ok(Some(Waiting {
                object: describe(manifest),
                component: component.to_string(),
                message,
                failed,
            }));
        }
    }
    Ok(None)
}

/// How many objects of a level are read at once when judging its health.
const CONCURRENT_READS: usize = 8;

/// The health of one applied manifest's object; a windlass Subscription is judged with the
/// Blueprint it owns.
async fn judge(
    ctx: &Context,
    manifest: &PlannedManifest,
    payload_version: &str,
) -> Result<Health, windlass_kit::ApplyError> {
    let key = windlass_kit::ObjectKey::of(&manifest.body);
    let live = ctx.applier.get(&key).await?;
    let object = &manifest.object;
    if object.group() != WINDLASS_GROUP
        || object.kind != Subscription::kind(&())
        || manifest.action == ManifestAction::Delete
    {
        return Ok(health(
            &object.kind,
            manifest.action,
            live.as_ref(),
            payload_version,
        ));
    }
    let blueprint_name = live
        .as_ref()
        .and_then(|l| l.pointer("/status/blueprint"))
        .and_then(Value::as_str)
        .filter(|name| !name.is_empty());
    let blueprint = match blueprint_name {
        Some(name) => {
            let blueprint = windlass_kit::ObjectKey {
                api_version: Blueprint::api_version(&()).into_owned(),
                kind: Blueprint::kind(&()).into_owned(),
                namespace: key.namespace.clone(),
                name: name.to_string(),
            };
            ctx.applier.get(&blueprint).await?
        }
        None => None,
    };
    Ok(subscription_health(live.as_ref(), blueprint.as_ref()))
}

async fn apply_manifest(ctx: &Context, manifest: &PlannedManifest) -> Result<(), String> {
    let key = windlass_kit::ObjectKey::of(&manifest.body);
    let failed = |e: windlass_kit::ApplyError| {
        format!("{} (file {}): {e}", describe(manifest), manifest.file)
    };
    match manifest.action {
        ManifestAction::Apply => ctx
            .applier
            .apply(&labelled(&manifest.body))
            .await
            .map(|_| ())
            .map_err(failed),
        ManifestAction::CreateOnly => {
            if ctx.applier.get(&key).await.map_err(failed)?.is_none() {
                ctx.applier
                    .apply(&labelled(&manifest.body))
                    .await
                    .map_err(failed)?;
            }
            Ok(())
        }
        // Read first: a settled cluster sends no DELETE for what is long gone.
        ManifestAction::Delete => {
            if ctx.applier.get(&key).await.map_err(failed)?.is_some() {
                ctx.applier.delete(&key).await.map_err(failed)?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_unmanaged_overrides_leave_objects_alone() {
        let version: ClusterVersion = serde_json::from_value(json!({
            "apiVersion": "windlass.dev/v1alpha1", "kind": "ClusterVersion",
            "metadata": {"name": "version"},
            "spec": {"overrides": [
                {"group": "apps", "kind": "Deployment", "namespace": "platform-dns",
                    "name": "dns-operator", "unmanaged": true},
                {"kind": "Namespace", "name": "platform-dns", "unmanaged": true},
                {"kind": "ConfigMap", "namespace": "platform-updater", "name": "release",
                    "unmanaged": false},
            ]},
        }))
        .unwrap();
        let left_alone = unmanaged(&version);
        assert_eq!(left_alone.len(), 2, "{left_alone:?}");
        assert_eq!(left_alone[0].namespace.as_deref(), Some("platform-dns"));
        // A cluster-scoped object's override names no namespace.
        assert_eq!(left_alone[1].namespace, None);
        let namespace = ObjectId {
            group: String::new(),
            kind: "Namespace".into(),
            namespace: None,
            name: "platform-dns".into(),
        };
        assert!(namespace.overridden_by(&left_alone));
    }

    #[test]
    fn applied_objects_carry_the_payload_label_beside_their_own() {
        let with_labels = json!({"metadata": {"name": "a", "labels": {"app": "dns"}}});
        assert_eq!(
            labelled(&with_labels)["metadata"]["labels"],
            json!({"app": "dns", RELEASE_MANAGED: RELEASE_MANAGED_VALUE})
        );
        let without = json!({"metadata": {"name": "a"}});
        assert_eq!(
            labelled(&without)["metadata"]["labels"],
            json!({RELEASE_MANAGED: RELEASE_MANAGED_VALUE})
        );
    }
}
