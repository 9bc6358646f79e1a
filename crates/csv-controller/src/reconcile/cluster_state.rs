//! Reads of the cluster the reconciler decides on: a successor CSV, the CRDs and APIs the
//! requirements name, and the health of the strategy's deployments.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::{apps::v1::Deployment, core::v1::Pod},
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{Api, Client, ResourceExt, api::ListParams};
use windlass_api::{ClusterServiceVersion, CsvPhase};
use windlass_bundle::csv::ClusterServiceVersion as OlmCsv;

use super::Error;
use crate::{
    health::{self, Health},
    phase::Successor,
    requirements::{CrdState, Observed},
};

pub(super) async fn find_successor(
    client: &Client,
    namespace: &str,
    name: &str,
) -> Result<Option<Successor>, Error> {
    let api = Api::<ClusterServiceVersion>::namespaced(client.clone(), namespace);
    let list = api
        .list(&ListParams::default())
        .await
        .map_err(|source| Error::Read {
            what: format!("CSVs in {namespace}"),
            source,
        })?;
    Ok(list
        .items
        .into_iter()
        .filter(|c| {
            c.spec.supersedes.as_deref() == Some(name) && c.metadata.deletion_timestamp.is_none()
        })
        .map(|c| Successor {
            succeeded: c.status.as_ref().and_then(|s| s.phase) == Some(CsvPhase::Succeeded),
            name: c.name_any(),
        })
        .next())
}

pub(super) async fn observe(
    client: &Client,
    def: &OlmCsv,
    server_version: Option<semver::Version>,
) -> Result<Observed, Error> {
    let crds_api = Api::<CustomResourceDefinition>::all(client.clone());
    let mut crds = BTreeMap::new();
    for crd in def.owned_crds().iter().chain(def.required_crds()) {
        let found = crds_api
            .get_opt(&crd.name)
            .await
            .map_err(|source| Error::Read {
                what: format!("CRD {}", crd.name),
                source,
            })?;
        if let Some(found) = found {
            let established = found
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| {
                    c.iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                });
            let served_versions = found
                .spec
                .versions
                .iter()
                .filter(|v| v.served)
                .map(|v| v.name.clone())
                .collect();
            crds.insert(
                crd.name.clone(),
                CrdState {
                    established,
                    served_versions,
                },
            );
        }
    }
    let mut served_kinds = Vec::new();
    for gvk in &def.spec.native_apis {
        let group_version = if gvk.group.is_empty() {
            gvk.version.clone()
        } else {
            format!("{}/{}", gvk.group, gvk.version)
        };
        if let Ok(resources) = client.list_api_group_resources(&group_version).await {
            if resources.resources.iter().any(|r| r.kind == gvk.kind) {
                served_kinds.push(format!("{}/{}/{}", gvk.group, gvk.version, gvk.kind));
            }
        } else if gvk.group.is_empty()
            && let Ok(core) = client.list_core_api_resources(&gvk.version).await
            && core.resources.iter().any(|r| r.kind == gvk.kind)
        {
            served_kinds.push(format!("/{}/{}", gvk.version, gvk.kind));
        }
    }
    Ok(Observed {
        server_version,
        crds,
        served_kinds,
    })
}

pub(super) async fn observe_health(
    client: &Client,
    namespace: &str,
    def: &OlmCsv,
) -> Result<Health, Error> {
    let deployments = Api::<Deployment>::namespaced(client.clone(), namespace);
    let pods = Api::<Pod>::namespaced(client.clone(), namespace);
    let mut healths = Vec::new();
    for spec in def.deployments() {
        let read = |source| Error::Read {
            what: format!("deployment {}", spec.name),
            source,
        };
        let Some(deployment) = deployments.get_opt(&spec.name).await.map_err(read)? else {
            healths.push(Health::Progressing(format!(
                "deployment {} does not exist yet",
                spec.name
            )));
            continue;
        };
        let selector = deployment
            .spec
            .selector
            .match_labels
            .as_ref()
            .map(|labels| {
                labels
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default();
        let matching = if selector.is_empty() {
            Vec::new()
        } else {
            pods.list(&ListParams::default().labels(&selector))
                .await
                .map_err(|source| Error::Read {
                    what: format!("pods of deployment {}", spec.name),
                    source,
                })?
                .items
        };
        healths.push(health::deployment_health(&deployment, &matching));
    }
    Ok(health::combine(healths))
}
