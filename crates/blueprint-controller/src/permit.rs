//! Whether the Blueprint's namespace may install this revision the way it asks: its install
//! mode and target namespaces, and the cluster-scoped objects the bundle brings, against the
//! InstallPolicies cluster admins wrote. The decision is `windlass_tenancy`'s; this gathers
//! what it needs from the cluster.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Namespace;
use kube::{Api, ResourceExt, api::ListParams};
use serde_json::Value;
use windlass_api::{
    Blueprint, InstallPolicy,
    names::reasons::policy as reasons,
    policy::{InstallModeType, InstallPolicy as Policy},
    subscription::CrdDeletionPolicy,
};
use windlass_bundle::Manifest;
use windlass_kit::{Applier, ListFloor};
use windlass_tenancy::{
    BundleShape, InstallRequest, NamespaceFacts, Permit, modes, needs, policy::selects,
};

use crate::{
    Error,
    plan::Refusal,
    revision::{self, RevisionContent},
};

/// What a permitted install may do.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    /// The namespaces the operator watches (`[]`: all).
    pub targets: Vec<String>,
    pub mode: InstallModeType,
    pub permit: Permit,
}

/// The install of `content` in the Blueprint's namespace, placed, or why it is refused.
pub async fn check(
    applier: &Applier,
    policy_lists: &ListFloor,
    blueprint: &Blueprint,
    content: &RevisionContent,
    objects: &[Manifest],
) -> Result<Result<Placement, Refusal>, Error> {
    let client = applier.client();
    let namespace = blueprint.namespace().unwrap_or_default();
    let labels = Api::<Namespace>::all(client.clone())
        .get_opt(&namespace)
        .await
        .map_err(|source| Error::Read {
            what: format!("namespace {namespace}"),
            source,
        })?
        .map(|ns| ns.labels().clone())
        .unwrap_or_default();
    let policies = Api::<InstallPolicy>::all(client.clone());
    let read = |source| Error::Read {
        what: "InstallPolicies".into(),
        source,
    };
    let cached = policy_lists
        .list(&policies, &ListParams::default())
        .await
        .map_err(read)?
        .items;
    let csv = revision::csv_object(content).cloned().unwrap_or_default();
    let mut other_cluster_scoped = Vec::new();
    for object in objects
        .iter()
        .filter(|m| m.kind() != "CustomResourceDefinition")
    {
        let (_, namespaced) = applier
            .resource(object.api_version(), object.kind())
            .await
            .map_err(|source| Error::Discovery {
                api_version: object.api_version().to_string(),
                kind: object.kind().to_string(),
                name: object.name().to_string(),
                source,
            })?;
        if !namespaced {
            other_cluster_scoped.push(format!("{} {}", object.kind(), object.name()));
        }
    }
    let shape = BundleShape {
        crds: objects
            .iter()
            .filter(|m| m.kind() == "CustomResourceDefinition")
            .map(|m| m.name().to_string())
            .collect(),
        cluster_permissions: non_empty(&csv, "/spec/install/spec/clusterPermissions"),
        permissions: non_empty(&csv, "/spec/install/spec/permissions"),
        webhooks: non_empty(&csv, "/spec/webhookdefinitions"),
        other_cluster_scoped,
    };
    let facts = NamespaceFacts {
        name: &namespace,
        labels: &labels,
    };
    let decision = decide(&facts, blueprint, content, &csv, &shape, &cached);
    if decision.is_ok() {
        return Ok(decision);
    }
    // The list came from the API server's cache, which may be a moment behind a policy an
    // admin has just written: a refusal is confirmed against the cluster as it is now.
    let current = policy_lists
        .list_consistent(&policies, &ListParams::default())
        .await
        .map_err(read)?
        .items;
    Ok(decide(&facts, blueprint, content, &csv, &shape, &current))
}

fn non_empty(object: &Value, pointer: &str) -> bool {
    object
        .pointer(pointer)
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
}

/// The pure part of [`check`].
fn decide(
    namespace: &NamespaceFacts<'_>,
    blueprint: &Blueprint,
    content: &RevisionContent,
    csv: &Value,
    shape: &BundleShape,
    policies: &[Policy],
) -> Result<Placement, Refusal> {
    let declared = csv
        .pointer("/spec/installModes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| Some((m["type"].as_str()?, m["supported"].as_bool()?)));
    let supported = modes::supported_modes(declared);
    // An operator watches all namespaces by default only where a policy allows that.
    let mut allowed: BTreeSet<InstallModeType> = policies
        .iter()
        .filter(|p| selects(&p.spec, namespace))
        .flat_map(|p| p.spec.install_modes.iter().copied())
        .collect();
    allowed.insert(InstallModeType::OwnNamespace);
    let (targets, mode) = modes::resolve_targets(
        namespace.name,
        content.target_namespaces.as_deref(),
        &supported,
        &allowed,
    )
    .map_err(|error| Refusal {
        reason: reasons::INSTALL_MODE_UNSUPPORTED,
        message: format!(
            "{} cannot be installed in namespace {}: {error}",
            content.cluster_service_version_name, namespace.name
        ),
    })?;
    let delete_crds = blueprint.spec.crd_deletion_policy == CrdDeletionPolicy::Delete;
    let needed = needs(shape, mode, delete_crds);
    let request = InstallRequest {
        namespace: *namespace,
        package: &content.package,
        catalog: content.catalog.as_deref(),
        mode,
        targets: &targets,
        needs: &needed,
        service_account: None,
    };
    let permit = windlass_tenancy::evaluate(&request, policies).map_err(|refusal| Refusal {
        reason: refusal.reason,
        message: refusal.message,
    })?;
    Ok(Placement {
        targets,
        mode,
        permit,
    })
}

/// The label set of a namespace, for tests.
#[cfg(test)]
fn labels(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
#[path = "permit_tests.rs"]
mod tests;
