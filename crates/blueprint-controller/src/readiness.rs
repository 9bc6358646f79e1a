//! What the cluster says about an upgrade before it starts (`UpgradeReady`): the Kubernetes
//! version against the new CSV's `minKubeVersion`, the PodDisruptionBudgets over the pods its
//! Deployments replace, and the API versions its CRDs stop serving while objects exist. The
//! findings themselves are `windlass_preview::readiness`'s.

use std::collections::BTreeMap;

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::{Api, ResourceExt, api::ListParams};
use serde_json::Value;
use windlass_api::Blueprint;
use windlass_preview::readiness::{self, Finding};

use crate::{Error, revision::RevisionContent};

/// The findings for installing `content` over what runs in `blueprint`'s namespace;
/// `crds`: (live CRD, new CRD, number of existing objects) of each CRD the upgrade changes.
pub async fn findings(
    client: &kube::Client,
    blueprint: &Blueprint,
    content: &RevisionContent,
    crds: &[(Value, Value, usize)],
) -> Result<Vec<Finding>, Error> {
    let mut found = Vec::new();
    let csv = crate::revision::csv_object(content)
        .cloned()
        .unwrap_or_default();
    let cluster = client
        .apiserver_version()
        .await
        .map_err(|source| Error::Read {
            what: "the API server's version".into(),
            source,
        })?;
    found.extend(readiness::kube_version(
        csv.pointer("/spec/minKubeVersion").and_then(Value::as_str),
        &cluster.git_version,
    ));
    let namespace = blueprint.namespace().unwrap_or_default();
    let pdbs = Api::<PodDisruptionBudget>::namespaced(client.clone(), &namespace)
        .list(&ListParams::default())
        .await
        .map_err(|source| Error::Read {
            what: format!("PodDisruptionBudgets in {namespace}"),
            source,
        })?;
    let pdbs: Vec<Value> = pdbs
        .items
        .iter()
        .map(|p| serde_json::to_value(p).unwrap_or_default())
        .collect();
    for deployment in csv
        .pointer("/spec/install/spec/deployments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let labels: BTreeMap<String, String> = deployment
            .pointer("/spec/template/metadata/labels")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect();
        for finding in readiness::disruption_budgets(&pdbs, &labels) {
            if !found.iter().any(|f: &Finding| f.name == finding.name) {
                found.push(finding);
            }
        }
    }
    for (live, new, objects) in crds {
        found.extend(readiness::apis_no_longer_served(live, new, *objects));
    }
    Ok(found)
}
