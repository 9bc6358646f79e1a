//! Reads of the cluster the reconciler decides on: a successor CSV, the CRDs and APIs the
//! requirements name, and the health of the strategy's deployments.

use std::{collections::BTreeMap, sync::Arc};

use k8s_openapi::{
    api::{apps::v1::Deployment, core::v1::Pod},
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, Client, ResourceExt,
    api::ListParams,
    runtime::reflector::{ObjectRef, Store},
};
use windlass_api::{ClusterServiceVersion, CsvPhase};
use windlass_bundle::csv::ClusterServiceVersion as OlmCsv;
use windlass_kit::{ListFloor, synced::synced};

use super::Error;
use crate::{
    health::{self, Health},
    memo::DeploymentMark,
    phase::Successor,
    requirements::{CrdState, Observed},
};

/// The CSV in `namespace` that supersedes `name`, if any (from the controller's cache: the
/// successor's changes wake the CSV it supersedes).
pub(super) fn find_successor(
    csvs: &Store<ClusterServiceVersion>,
    namespace: &str,
    name: &str,
) -> Option<Successor> {
    csvs.state()
        .iter()
        .filter(|c| c.namespace().as_deref() == Some(namespace))
        .filter(|c| {
            c.spec.supersedes.as_deref() == Some(name) && c.metadata.deletion_timestamp.is_none()
        })
        .map(|c| Successor {
            succeeded: c.status.as_ref().and_then(|s| s.phase) == Some(CsvPhase::Succeeded),
            name: c.name_any(),
        })
        .next()
}

/// What the requirement checks read of a CRD: its served versions and conditions. The
/// schemas (most of a CRD) are dropped from the cache.
pub(super) fn trim_crd(crd: &mut CustomResourceDefinition) {
    crd.metadata.managed_fields = None;
    crd.metadata.annotations = None;
    for version in &mut crd.spec.versions {
        version.schema = None;
    }
}

/// The CSVs (as cache references) that own or require CRD `crd`.
pub(super) fn naming(
    csvs: &Store<ClusterServiceVersion>,
    crd: &str,
) -> Vec<ObjectRef<ClusterServiceVersion>> {
    csvs.state()
        .iter()
        .filter(|csv| csv.spec.definition.crd_names().names(crd))
        .map(|csv| ObjectRef::from_obj(csv.as_ref()))
        .collect()
}

pub(super) async fn observe(
    client: &Client,
    cache: &Store<CustomResourceDefinition>,
    def: &OlmCsv,
    server_version: Option<semver::Version>,
) -> Result<Observed, Error> {
    synced(cache, "CustomResourceDefinition").await?;
    let mut crds = BTreeMap::new();
    for crd in def.owned_crds().iter().chain(def.required_crds()) {
        if let Some(found) = cache.get(&ObjectRef::new(&crd.name)) {
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

/// What a Deployment's cached copy keeps: what health and ownership read (selector,
/// replicas, generation, owner references, status). The pod template, most of a
/// Deployment, is dropped.
pub(super) fn trim_deployment(deployment: &mut Deployment) {
    deployment.metadata.managed_fields = None;
    deployment.metadata.annotations = None;
    deployment.spec.template = Default::default();
}

/// Where Deployments are read from.
pub(super) enum Source<'a> {
    /// The API server: right after an apply, which the cache may not show yet.
    Server,
    /// The controller's Deployment cache, for the Deployments it shows at least at the
    /// generation the last apply left them (`expected`); the API server for any other.
    Cache {
        store: &'a Store<Deployment>,
        expected: &'a [DeploymentMark],
    },
}

/// Whether a cached Deployment can stand for a read: it has seen the generation the last apply
/// left (or a later one, which the memo then tells apart).
fn cache_is_current(cached_generation: Option<i64>, expected: Option<i64>) -> bool {
    match (cached_generation, expected) {
        (Some(cached), Some(expected)) => cached >= expected,
        (_, None) => true,
        (None, Some(_)) => false,
    }
}

/// The health of the strategy's Deployments, and the generation each was seen at.
pub(super) async fn observe_health(
    client: &Client,
    pod_lists: &ListFloor,
    source: Source<'_>,
    namespace: &str,
    def: &OlmCsv,
) -> Result<(Health, Vec<DeploymentMark>), Error> {
    let deployments = Api::<Deployment>::namespaced(client.clone(), namespace);
    let pods = Api::<Pod>::namespaced(client.clone(), namespace);
    let mut healths = Vec::new();
    let mut marks = Vec::new();
    for spec in def.deployments() {
        let read = |source| Error::Read {
            what: format!("deployment {}", spec.name),
            source,
        };
        let cached = match &source {
            Source::Server => None,
            Source::Cache { store, expected } => store
                .get(&ObjectRef::new(&spec.name).within(namespace))
                .filter(|cached| {
                    let mark = expected.iter().find(|(name, _)| *name == spec.name);
                    mark.is_some_and(|(_, generation)| {
                        cache_is_current(cached.metadata.generation, *generation)
                    })
                }),
        };
        let found = match cached {
            Some(cached) => Some(cached),
            None => deployments
                .get_opt(&spec.name)
                .await
                .map_err(read)?
                .map(Arc::new),
        };
        marks.push((
            spec.name.clone(),
            found.as_ref().and_then(|d| d.metadata.generation),
        ));
        let Some(deployment) = found else {
            healths.push(Health::Progressing(format!(
                "deployment {} does not exist yet",
                spec.name
            )));
            continue;
        };
        if let Some(settled) = health::health_by_status(&deployment) {
            healths.push(settled);
            continue;
        }
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
            pod_lists
                .list(&pods, &ListParams::default().labels(&selector))
                .await
                .map_err(|source| Error::Read {
                    what: format!("pods of deployment {}", spec.name),
                    source,
                })?
                .items
        };
        healths.push(health::deployment_health(&deployment, &matching));
    }
    Ok((health::combine(healths), marks))
}

#[cfg(test)]
mod tests {
    use kube::runtime::{reflector, watcher::Event};
    use serde_json::json;

    use super::*;

    fn csv(
        name: &str,
        supersedes: Option<&str>,
        owned: &str,
        required: &str,
    ) -> ClusterServiceVersion {
        serde_json::from_value(json!({
            "apiVersion": "windlass.dev/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {"name": name, "namespace": "team-a"},
            "spec": {
                "supersedes": supersedes,
                "definition": {"spec": {"customresourcedefinitions": {
                    "owned": [{"name": owned}],
                    "required": [{"name": required}],
                }}},
            },
        }))
        .unwrap()
    }

    fn cache(csvs: Vec<ClusterServiceVersion>) -> Store<ClusterServiceVersion> {
        let (store, mut writer) = reflector::store();
        for csv in csvs {
            writer.apply_watcher_event(&Event::Apply(csv));
        }
        store
    }

    #[test]
    fn a_crd_change_wakes_the_csvs_that_own_or_require_it() {
        let csvs = cache(vec![
            csv("db.v1", None, "databases.acme.io", "certs.acme.io"),
            csv("monitor.v1", None, "monitors.acme.io", "databases.acme.io"),
            csv("queue.v1", None, "queues.acme.io", "certs.acme.io"),
        ]);
        let mut woken: Vec<String> = naming(&csvs, "databases.acme.io")
            .into_iter()
            .map(|r| r.name)
            .collect();
        woken.sort();
        assert_eq!(woken, ["db.v1", "monitor.v1"]);
        assert!(naming(&csvs, "unrelated.acme.io").is_empty());
    }

    #[test]
    fn the_successor_is_the_csv_of_the_namespace_naming_it() {
        let csvs = cache(vec![
            csv("db.v1", None, "databases.acme.io", "certs.acme.io"),
            csv("db.v2", Some("db.v1"), "databases.acme.io", "certs.acme.io"),
        ]);
        let found = find_successor(&csvs, "team-a", "db.v1").expect("a successor");
        assert_eq!(found.name, "db.v2");
        assert!(!found.succeeded);
        assert!(find_successor(&csvs, "team-b", "db.v1").is_none());
        assert!(find_successor(&csvs, "team-a", "db.v2").is_none());
    }

    #[test]
    fn a_cached_deployment_stands_for_a_read_once_it_shows_the_applied_generation() {
        // The apply left generation 3: an older copy is not yet current, a later one shows an
        // edit (the memo then applies again), a Deployment the apply never saw needs no wait.
        assert!(!cache_is_current(Some(2), Some(3)));
        assert!(cache_is_current(Some(3), Some(3)));
        assert!(cache_is_current(Some(4), Some(3)));
        assert!(!cache_is_current(None, Some(3)));
        assert!(cache_is_current(Some(1), None));
    }

    #[test]
    fn the_cached_deployment_keeps_what_health_reads_and_drops_the_pod_template() {
        let mut deployment: Deployment = serde_json::from_value(json!({
            "metadata": {"name": "acme-db-operator", "namespace": "team-a", "generation": 2,
                "annotations": {"deployment.kubernetes.io/revision": "2"},
                "ownerReferences": [{"apiVersion": "windlass.dev/v1alpha1",
                    "kind": "ClusterServiceVersion", "name": "acme-db.v1", "uid": "u1",
                    "controller": true}]},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "acme-db"}},
                "template": {"metadata": {"labels": {"app": "acme-db"}},
                    "spec": {"containers": [{"name": "operator", "image": "acme/db:1"}]}}},
            "status": {"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2,
                "availableReplicas": 2,
                "conditions": [{"type": "Available", "status": "True"}]},
        }))
        .unwrap();
        let health_before = health::health_by_status(&deployment);
        trim_deployment(&mut deployment);
        assert!(deployment.spec.template.spec.is_none());
        assert!(deployment.metadata.annotations.is_none());
        assert_eq!(
            deployment.metadata.owner_references.as_ref().map(Vec::len),
            Some(1)
        );
        assert_eq!(
            deployment
                .spec
                .selector
                .match_labels
                .as_ref()
                .map(|l| l.len()),
            Some(1)
        );
        assert_eq!(health::health_by_status(&deployment), health_before);
        assert_eq!(health_before, Some(Health::Healthy));
    }

    #[test]
    fn the_cached_crd_keeps_what_requirements_read_and_drops_schemas() {
        let mut crd: CustomResourceDefinition = serde_json::from_value(json!({
            "metadata": {"name": "databases.acme.io", "annotations": {"big": "x"}},
            "spec": {"group": "acme.io", "scope": "Namespaced",
                "names": {"plural": "databases", "kind": "Database"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object"}}}]},
            "status": {"conditions": [{"type": "Established", "status": "True"}]},
        }))
        .unwrap();
        trim_crd(&mut crd);
        assert!(crd.spec.versions[0].schema.is_none());
        assert!(crd.metadata.annotations.is_none());
        assert!(crd.spec.versions[0].served);
        assert!(crd.status.is_some());
    }
}
