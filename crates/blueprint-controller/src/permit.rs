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
    policy::{ClusterScopedGrant, InstallModeType, InstallPolicy as Policy, Revocation},
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
    revision::{self, PermitRecord, RevisionContent},
};

/// What a permitted install may do.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    /// The namespaces the operator watches (`[]`: all).
    pub targets: Vec<String>,
    pub mode: InstallModeType,
    pub permit: Permit,
    /// The cluster-scoped grants the bundle needs installed this way.
    pub needs: BTreeSet<ClusterScopedGrant>,
}

impl Placement {
    /// What the install has: what it needs of what the permit grants. Anything else it needs
    /// was withdrawn from a running install ([`Verdict::Narrowed`]).
    pub fn has(&self, grant: ClusterScopedGrant) -> bool {
        self.needs.contains(&grant) && self.permit.granted.contains(&grant)
    }

    /// The grants the CSV controller acts on, for the CSV's `spec.grant`.
    pub fn csv_grants(&self) -> Vec<ClusterScopedGrant> {
        [
            ClusterScopedGrant::ClusterPermissions,
            ClusterScopedGrant::Webhooks,
        ]
        .into_iter()
        .filter(|g| self.has(*g))
        .collect()
    }

    /// What this permit records in the revision it installs.
    pub fn record(&self) -> PermitRecord {
        PermitRecord {
            policy: self.permit.policy.clone(),
            revocation: self.permit.revocation,
        }
    }
}

/// The namespace's policies on one install.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Permitted(Placement),
    /// A running install no policy permits as it is any more; the policy it was permitted by
    /// withdraws what it stopped granting: it goes on with `placement` (which lacks it).
    Narrowed {
        placement: Placement,
        refusal: Refusal,
    },
    Refused(Refusal),
}

/// The install of `content` in the Blueprint's namespace, placed, or why it is refused.
/// `running`: the revision runs already, so a policy that stopped granting part of it
/// withdraws that part or holds the install, as the policy says (see [`Revocation`]).
pub async fn check(
    applier: &Applier,
    policy_lists: &ListFloor,
    blueprint: &Blueprint,
    content: &RevisionContent,
    objects: &[Manifest],
    running: bool,
) -> Result<Verdict, Error> {
    let client = applier.client();
    let namespace = blueprint.namespace().unwrap_or_default();
    let labels = namespace_labels(applier, &namespace).await?;
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
    let mut cluster_rbac = false;
    let mut webhook_configurations = false;
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
        if namespaced {
            continue;
        }
        // Cluster-wide RBAC and admission are what they are whether the CSV or a manifest
        // asks for them: a ClusterRoleBinding a bundle ships needs ClusterPermissions, a
        // webhook configuration Webhooks, never the lesser OtherObjects.
        match object_grant(object.kind()) {
            ClusterScopedGrant::ClusterPermissions => cluster_rbac = true,
            ClusterScopedGrant::Webhooks => webhook_configurations = true,
            _ => other_cluster_scoped.push(format!("{} {}", object.kind(), object.name())),
        }
    }
    let shape = BundleShape {
        crds: objects
            .iter()
            .filter(|m| m.kind() == "CustomResourceDefinition")
            .map(|m| m.name().to_string())
            .collect(),
        cluster_permissions: cluster_rbac
            || non_empty(&csv, "/spec/install/spec/clusterPermissions"),
        permissions: non_empty(&csv, "/spec/install/spec/permissions"),
        webhooks: webhook_configurations || non_empty(&csv, "/spec/webhookdefinitions"),
        other_cluster_scoped,
    };
    let facts = NamespaceFacts {
        name: &namespace,
        labels: &labels,
    };
    let inputs = Inputs {
        namespace: &facts,
        blueprint,
        content,
        csv: &csv,
        shape: &shape,
        running,
    };
    let verdict = decide(&inputs, &cached);
    if matches!(verdict, Verdict::Permitted(_)) {
        return Ok(verdict);
    }
    // The list came from the API server's cache, which may be a moment behind a policy an
    // admin has just written: a refusal is confirmed against the cluster as it is now.
    let current = policy_lists
        .list_consistent(&policies, &ListParams::default())
        .await
        .map_err(read)?
        .items;
    Ok(decide(&inputs, &current))
}

/// The grant a cluster-scoped manifest of `kind` needs.
pub fn object_grant(kind: &str) -> ClusterScopedGrant {
    match kind {
        "CustomResourceDefinition" => ClusterScopedGrant::CustomResourceDefinitions,
        "ClusterRole" | "ClusterRoleBinding" => ClusterScopedGrant::ClusterPermissions,
        "ValidatingWebhookConfiguration"
        | "MutatingWebhookConfiguration"
        | "ValidatingAdmissionPolicy"
        | "ValidatingAdmissionPolicyBinding"
        | "MutatingAdmissionPolicy"
        | "MutatingAdmissionPolicyBinding" => ClusterScopedGrant::Webhooks,
        _ => ClusterScopedGrant::OtherObjects,
    }
}

/// What [`decide`] decides from.
struct Inputs<'a> {
    namespace: &'a NamespaceFacts<'a>,
    blueprint: &'a Blueprint,
    content: &'a RevisionContent,
    csv: &'a Value,
    shape: &'a BundleShape,
    running: bool,
}

/// Whether the namespace's policies grant deleting the CRDs of `content`'s package on
/// uninstall, as they stand now: a Blueprint's `crdDeletionPolicy` is anyone's to write who
/// may write the Blueprint, and deleting a CRD deletes every namespace's custom resources.
pub async fn may_delete_crds(
    applier: &Applier,
    policy_lists: &ListFloor,
    blueprint: &Blueprint,
    content: &RevisionContent,
) -> Result<bool, Error> {
    let namespace = blueprint.namespace().unwrap_or_default();
    let labels = namespace_labels(applier, &namespace).await?;
    let policies = policy_lists
        .list_consistent(
            &Api::<InstallPolicy>::all(applier.client().clone()),
            &ListParams::default(),
        )
        .await
        .map_err(|source| Error::Read {
            what: "InstallPolicies".into(),
            source,
        })?
        .items;
    let facts = NamespaceFacts {
        name: &namespace,
        labels: &labels,
    };
    Ok(windlass_tenancy::grants(
        &facts,
        &content.package,
        content.catalog.as_deref(),
        ClusterScopedGrant::CrdDeletion,
        &policies,
    ))
}

async fn namespace_labels(
    applier: &Applier,
    namespace: &str,
) -> Result<std::collections::BTreeMap<String, String>, Error> {
    Ok(Api::<Namespace>::all(applier.client().clone())
        .get_opt(namespace)
        .await
        .map_err(|source| Error::Read {
            what: format!("namespace {namespace}"),
            source,
        })?
        .map(|ns| ns.labels().clone())
        .unwrap_or_default())
}

fn non_empty(object: &Value, pointer: &str) -> bool {
    object
        .pointer(pointer)
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
}

/// The pure part of [`check`].
fn decide(inputs: &Inputs<'_>, policies: &[Policy]) -> Verdict {
    let Inputs {
        namespace,
        blueprint,
        content,
        csv,
        shape,
        running,
    } = *inputs;
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
    let (targets, mode) = match modes::resolve_targets(
        namespace.name,
        content.target_namespaces.as_deref(),
        &supported,
        &allowed,
    ) {
        Ok(placed) => placed,
        Err(error) => {
            return Verdict::Refused(Refusal {
                reason: reasons::INSTALL_MODE_UNSUPPORTED,
                message: format!(
                    "{} cannot be installed in namespace {}: {error}",
                    content.cluster_service_version_name, namespace.name
                ),
            });
        }
    };
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
    let placed = |permit| Placement {
        targets: targets.clone(),
        mode,
        permit,
        needs: needed.clone(),
    };
    let refused = |refusal: windlass_tenancy::Refusal| Refusal {
        reason: refusal.reason,
        message: refusal.message,
    };
    if !running {
        return match windlass_tenancy::evaluate(&request, policies) {
            Ok(permit) => Verdict::Permitted(placed(permit)),
            Err(refusal) => Verdict::Refused(refused(refusal)),
        };
    }
    let windlass_tenancy::NotPermitted { refusal, narrowed } =
        match windlass_tenancy::evaluate_running(&request, policies) {
            Ok(permit) => return Verdict::Permitted(placed(permit)),
            Err(found) => found,
        };
    let withdrawn = narrowed
        .as_ref()
        .map(|n| {
            n.withdrawn
                .iter()
                .map(|g| g.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    let recorded = content.permitted_by.clone().unwrap_or_default();
    let granted_by = recorded
        .policy
        .as_deref()
        .map_or("what every namespace may do".to_string(), |p| {
            format!("InstallPolicy {p}")
        });
    // The choice of the policy that permitted it: as it says now, or as it said when it
    // permitted the install if it is gone.
    let revocation = recorded
        .policy
        .as_deref()
        .and_then(|name| {
            policies
                .iter()
                .find(|p| p.metadata.name.as_deref() == Some(name))
        })
        .map_or(recorded.revocation, |p| p.spec.revocation);
    match (narrowed, revocation) {
        (Some(narrowed), Revocation::Withdraw) => Verdict::Narrowed {
            placement: placed(narrowed.permit),
            refusal: Refusal {
                reason: reasons::GRANT_WITHDRAWN,
                message: format!(
                    "{granted_by} no longer permits the install as it runs ({}); {withdrawn} \
                     withdrawn: the cluster-scoped objects of it are removed (CRDs stay)",
                    refusal.message
                ),
            },
        },
        (Some(_), Revocation::Hold) => Verdict::Refused(Refusal {
            reason: reasons::GRANT_HELD,
            message: format!(
                "{granted_by} no longer permits the install as it runs ({}); held as its \
                 revocation says: what runs is kept as it is and nothing of it is applied \
                 until a policy grants {withdrawn} again",
                refusal.message
            ),
        }),
        (None, _) => Verdict::Refused(Refusal {
            reason: reasons::GRANT_HELD,
            message: format!(
                "{}; the install runs on as it is, held: nothing of it is applied until a \
                 policy permits it again or it is uninstalled",
                refusal.message
            ),
        }),
    }
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
