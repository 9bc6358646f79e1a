//! The OpenShift API adapter (`--release-api=openshift`): the controller reads OpenShift's
//! `config.openshift.io/v1` ClusterVersion, decides exactly as it does for the windlass kind, and
//! writes the status back in OpenShift's shape, so `oc adm upgrade`, the console and clients
//! built on `openshift/client-go` read and drive it. What OpenShift's status has no field for
//! (run levels, timings, the release held back after an automatic rollback) is kept in the
//! [`RELEASE_STATE_CONFIG_MAP`] of the manager's namespace; without it (a cluster a CVO ran
//! before) the history and desired release are read from OpenShift's status.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, Resource, ResourceExt,
    api::{ObjectMeta, Patch, PatchParams},
};
use serde_json::{Value, json};
use windlass_api::{
    ClusterVersion, ClusterVersionSpec, ClusterVersionStatus, FIELD_MANAGER,
    clusterversion::{DataKeyRef, DesiredUpdate, Release, SignatureStoreSpec, UpdateHistory},
    names::{RELEASE_STATE_CONFIG_MAP, RELEASE_STATE_KEY, annotations},
    openshift,
};

/// Which ClusterVersion API the controller serves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReleaseApi {
    /// `windlass.dev/v1alpha1` ClusterVersion.
    #[default]
    Windlass,
    /// OpenShift's `config.openshift.io/v1` ClusterVersion and ClusterOperator only.
    OpenShift,
}

impl std::str::FromStr for ReleaseApi {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value {
            "windlass" => Ok(ReleaseApi::Windlass),
            "openshift" => Ok(ReleaseApi::OpenShift),
            other => Err(format!(
                "--release-api {other:?}: expected `windlass` or `openshift`"
            )),
        }
    }
}

/// The windlass spec OpenShift's ClusterVersion stands for: OpenShift's own fields, plus the
/// settings of the [`annotations::WINDLASS_SPEC`] annotation. An unset `spec.capabilities`
/// means OpenShift's default baseline (`vCurrent`), as on OpenShift.
pub fn spec_of(version: &openshift::ClusterVersion) -> Result<ClusterVersionSpec, String> {
    let mut spec = match version.annotations().get(annotations::WINDLASS_SPEC) {
        Some(json) => serde_json::from_str::<ClusterVersionSpec>(json).map_err(|e| {
            format!(
                "annotation {}: not a windlass ClusterVersion spec: {e}",
                annotations::WINDLASS_SPEC
            )
        })?,
        None => ClusterVersionSpec::default(),
    };
    let theirs = &version.spec;
    // OpenShift's desiredUpdate has no field for a plan's approval: the annotation's says it.
    let approved_plan = spec
        .desired_update
        .as_ref()
        .and_then(|d| d.approved_plan.clone());
    spec.desired_update = theirs.desired_update.as_ref().map(|d| DesiredUpdate {
        image: d.image.clone().filter(|i| !i.is_empty()),
        version: d.version.clone().filter(|v| !v.is_empty()),
        force: d.force,
        accept_risks: d.accept_risks.iter().map(|r| r.name.clone()).collect(),
        approved_plan,
    });
    spec.upstream = theirs.upstream.clone().filter(|u| !u.is_empty());
    spec.channel = theirs.channel.clone().filter(|c| !c.is_empty());
    spec.overrides = theirs.overrides.clone();
    spec.signature_stores = theirs
        .signature_stores
        .iter()
        .map(|store| SignatureStoreSpec {
            url: store.url.clone(),
            ca_config_map: store.ca.as_ref().map(|ca| DataKeyRef {
                name: ca.name.clone(),
                key: None,
            }),
        })
        .collect();
    spec.capabilities = Some(theirs.capabilities.clone().unwrap_or_default());
    Ok(spec)
}

/// The windlass ClusterVersion the reconcile decides on: OpenShift's object's identity and
/// spec, with `status` (kept, or read from OpenShift's).
pub fn as_windlass(
    version: &openshift::ClusterVersion,
    spec: ClusterVersionSpec,
    status: ClusterVersionStatus,
) -> ClusterVersion {
    let mut windlass = ClusterVersion::new(&version.name_any(), spec);
    windlass.metadata = ObjectMeta {
        name: version.metadata.name.clone(),
        uid: version.metadata.uid.clone(),
        generation: version.metadata.generation,
        resource_version: version.metadata.resource_version.clone(),
        annotations: version.metadata.annotations.clone(),
        ..ObjectMeta::default()
    };
    windlass.status = Some(status);
    windlass
}

/// What OpenShift's status says, where windlass kept nothing: the desired release and the
/// history, so taking over from a CVO keeps what it recorded.
pub fn imported_status(status: Option<&Value>) -> ClusterVersionStatus {
    let Some(status) = status else {
        return ClusterVersionStatus::default();
    };
    let desired = status["desired"]["image"]
        .as_str()
        .filter(|i| !i.is_empty())
        .map(|image| Release {
            version: status["desired"]["version"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            image: image.to_string(),
            verified: false,
            verified_by: Vec::new(),
            requested: image.to_string(),
            manifest_digest: String::new(),
        });
    let history: Vec<UpdateHistory> = status["history"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|entry| serde_json::from_value(entry.clone()).ok())
        .collect();
    // The CVO's desired release is verified when its history entry is.
    let desired = desired.map(|mut d| {
        d.verified = history
            .first()
            .is_some_and(|h| h.image == d.image && h.verified);
        d
    });
    ClusterVersionStatus {
        desired,
        history,
        ..ClusterVersionStatus::default()
    }
}

/// `status` in OpenShift's shape (what its CRD schema accepts): desired, history,
/// observedGeneration, versionHash, capabilities, availableUpdates, conditionalUpdates and the
/// conditions.
pub fn openshift_status(status: &ClusterVersionStatus, channel: Option<&str>) -> Value {
    let channels: Vec<&str> = channel.into_iter().collect();
    let desired = match &status.desired {
        Some(d) => {
            let url = status
                .available_updates
                .iter()
                .chain(status.conditional_updates.iter().map(|c| &c.release))
                .find(|a| a.image == d.image)
                .and_then(|a| a.url.clone());
            let mut desired = json!({"version": d.version, "image": d.image});
            if !channels.is_empty() {
                desired["channels"] = json!(channels);
            }
            if let Some(url) = url {
                desired["url"] = json!(url);
            }
            desired
        }
        None => json!({"version": "", "image": ""}),
    };
    let history: Vec<Value> = status
        .history
        .iter()
        .map(|h| {
            let mut entry = json!({
                "state": h.state,
                "version": h.version,
                "image": h.image,
                "verified": h.verified,
                "startedTime": h.started_time,
                "completionTime": h.completion_time,
            });
            if !h.accepted_risks.is_empty() {
                entry["acceptedRisks"] = json!(h.accepted_risks);
            }
            entry
        })
        .collect();
    let release = |a: &windlass_api::clusterversion::AvailableRelease| {
        let mut r = json!({"version": a.version, "image": a.image});
        if let Some(url) = &a.url {
            r["url"] = json!(url);
        }
        if !a.channels.is_empty() {
            r["channels"] = json!(a.channels);
        }
        r
    };
    let conditional: Vec<Value> = status
        .conditional_updates
        .iter()
        .map(|c| {
            json!({
                "release": release(&c.release),
                "risks": c.risks.iter().map(|r| json!({
                    "name": r.name,
                    "message": r.message,
                    "url": r.url,
                    "matchingRules": r.matching_rules,
                })).collect::<Vec<_>>(),
                "conditions": c.conditions.iter().map(condition).collect::<Vec<_>>(),
            })
        })
        .collect();
    let mut shaped = json!({
        "desired": desired,
        "history": history,
        "observedGeneration": status.observed_generation.unwrap_or_default(),
        "versionHash": version_hash(status),
        "availableUpdates": status.available_updates.iter().map(release).collect::<Vec<_>>(),
        "conditionalUpdates": conditional,
        "conditions": status.conditions.iter().map(condition).collect::<Vec<_>>(),
    });
    if let Some(capabilities) = &status.capabilities {
        shaped["capabilities"] = json!({
            "enabledCapabilities": capabilities.enabled_capabilities,
            "knownCapabilities": capabilities.known_capabilities,
        });
    }
    shaped
}

/// OpenShift's condition shape (no `observedGeneration`; `lastTransitionTime` required).
fn condition(c: &windlass_api::Condition) -> Value {
    let mut shaped = json!({
        "type": c.type_,
        "status": c.status,
        "lastTransitionTime": c.last_transition_time,
    });
    if !c.reason.is_empty() {
        shaped["reason"] = json!(c.reason);
    }
    if !c.message.is_empty() {
        shaped["message"] = json!(c.message);
    }
    shaped
}

/// A short digest of what is applied, as the CVO's `versionHash` is: it changes when the
/// manifests do.
fn version_hash(status: &ClusterVersionStatus) -> String {
    status
        .desired
        .as_ref()
        .map(|d| {
            let digest = if d.manifest_digest.is_empty() {
                d.image.rsplit_once(':').map(|(_, h)| h).unwrap_or_default()
            } else {
                d.manifest_digest.trim_start_matches("sha256:")
            };
            digest.chars().take(11).collect()
        })
        .unwrap_or_default()
}

/// The state kept for the object with `uid`.
pub async fn kept_status(
    config_maps: &Api<ConfigMap>,
    uid: &str,
) -> Result<Option<ClusterVersionStatus>, kube::Error> {
    let Some(config_map) = config_maps.get_opt(RELEASE_STATE_CONFIG_MAP).await? else {
        return Ok(None);
    };
    let data = config_map.data.unwrap_or_default();
    if data.get("uid").map(String::as_str) != Some(uid) {
        return Ok(None);
    }
    Ok(data
        .get(RELEASE_STATE_KEY)
        .and_then(|json| serde_json::from_str(json).ok()))
}

/// Writes `status` to OpenShift's ClusterVersion (in its shape) and keeps it whole in the state
/// ConfigMap; each only when it changed.
pub async fn write(
    client: &kube::Client,
    namespace: &str,
    version: &ClusterVersion,
    status: &ClusterVersionStatus,
) -> Result<(), kube::Error> {
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), namespace);
    let uid = version.meta().uid.clone().unwrap_or_default();
    let kept = serde_json::to_string(status).expect("status serializes");
    let data = BTreeMap::from([
        ("uid".to_string(), uid),
        (RELEASE_STATE_KEY.to_string(), kept),
    ]);
    let current = config_maps.get_opt(RELEASE_STATE_CONFIG_MAP).await?;
    if current.and_then(|c| c.data) != Some(data.clone()) {
        let state = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": RELEASE_STATE_CONFIG_MAP},
            "data": data,
        });
        config_maps
            .patch(
                RELEASE_STATE_CONFIG_MAP,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&state),
            )
            .await?;
    }
    let channel = version.spec.channel.as_deref();
    let shaped = json!({
        "apiVersion": openshift::API_VERSION,
        "kind": "ClusterVersion",
        "status": openshift_status(status, channel),
    });
    let written = Api::<openshift::ClusterVersion>::all(client.clone())
        .patch_status(
            &version.name_any(),
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&shaped),
        )
        .await;
    match written {
        // Deleted while it was reconciled: nothing to report on.
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        other => other.map(|_| ()),
    }
}

#[cfg(test)]
mod tests;
