//! Gathering what the plan looks at: the revision Secrets, the CSVs, the dependencies.

use k8s_openapi::api::core::v1::Secret;
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{ListParams, ObjectMeta},
    runtime::reflector::Store,
};
use windlass_api::names::{annotations, labels};
use windlass_api::{Blueprint, ClusterServiceVersion, blueprint::BlueprintPhase};

use crate::{
    Error, build, names,
    plan::{DependencyState, ObservedCsv, Settings, StoredRevision},
    revision::{self, RevisionContent},
};

/// The cluster around one Blueprint.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    pub stored: Vec<StoredRevision>,
    /// Every kind any stored revision ships (from the Secrets' kinds annotation).
    pub kinds: Vec<(String, String)>,
    /// Every CRD any stored revision ships (from the Secrets' CRDs annotation).
    pub crds: Vec<String>,
    pub csvs: Vec<ObservedCsv>,
    pub dependencies: Vec<DependencyState>,
    /// The content of the current revision, when its Secret exists and reads.
    pub current: Option<RevisionContent>,
}

pub async fn observe(
    client: &Client,
    blueprints: &Store<Blueprint>,
    blueprint: &Blueprint,
) -> Result<Observed, Error> {
    let namespace = blueprint.namespace().unwrap_or_default();
    let name = blueprint.name_any();
    let uid = blueprint.uid().unwrap_or_default();
    let secrets = Api::<Secret>::namespaced(client.clone(), &namespace)
        .list(&ListParams::default().labels(&names::revision_selector(&name)))
        .await
        .map_err(|source| Error::Read {
            what: format!("revision Secrets of {namespace}/{name}"),
            source,
        })?;
    let mut observed = Observed::default();
    for secret in secrets.items.iter().filter(|s| owned_by(&s.metadata, &uid)) {
        let Some(stored) = stored_revision(secret) else {
            continue;
        };
        if let Some(kinds) = secret
            .annotations()
            .get(annotations::KINDS)
            .map(|k| build::parse_kinds(k))
        {
            observed.kinds.extend(kinds);
        }
        if let Some(crds) = secret.annotations().get(annotations::CRDS) {
            observed
                .crds
                .extend(crds.split(',').filter(|c| !c.is_empty()).map(String::from));
        }
        let mut stored = stored;
        if stored.revision == blueprint.spec.revision
            && let Ok(content) = revision::from_secret(secret)
        {
            stored.settings = Some(Settings {
                digest: content.digest.clone(),
                config: content.config.clone(),
                target_namespaces: content.target_namespaces.clone(),
            });
            observed.current = Some(content);
        }
        observed.stored.push(stored);
    }
    observed.kinds.sort();
    observed.kinds.dedup();
    observed.crds.sort();
    observed.crds.dedup();

    let csvs = Api::<ClusterServiceVersion>::namespaced(client.clone(), &namespace)
        .list(&ListParams::default().labels(&names::selector(&name, &namespace)))
        .await
        .map_err(|source| Error::Read {
            what: format!("ClusterServiceVersions of {namespace}/{name}"),
            source,
        })?;
    observed.csvs = csvs
        .items
        .iter()
        .filter(|c| owned_by(&c.metadata, &uid))
        .map(observed_csv)
        .collect();

    observed.dependencies = blueprint
        .spec
        .dependencies
        .iter()
        .map(|dep| dependency(blueprints, &namespace, &dep.package))
        .collect();
    Ok(observed)
}

fn owned_by(meta: &ObjectMeta, uid: &str) -> bool {
    meta.owner_references.iter().flatten().any(|o| o.uid == uid)
}

/// From labels and annotations alone: no decoding for revisions the plan only lists.
fn stored_revision(secret: &Secret) -> Option<StoredRevision> {
    let revision = secret.labels().get(labels::REVISION)?.parse().ok()?;
    let annotations = secret.annotations();
    Some(StoredRevision {
        revision,
        csv_name: annotations
            .get(annotations::CLUSTER_SERVICE_VERSION)?
            .clone(),
        version: annotations
            .get(annotations::VERSION)
            .cloned()
            .unwrap_or_default(),
        settings: None,
    })
}

fn observed_csv(csv: &ClusterServiceVersion) -> ObservedCsv {
    let status = csv.status.clone().unwrap_or_default();
    ObservedCsv {
        name: csv.name_any(),
        revision: csv
            .annotations()
            .get(annotations::REVISION)
            .and_then(|r| r.parse().ok()),
        generation: csv.meta().generation,
        observed_generation: status.observed_generation,
        phase: status.phase,
        reason: status.reason,
        message: status.message,
        install_start: status.install_start_time.map(|t| t.0),
        supersedes: csv.spec.supersedes.clone(),
        deleting: csv.meta().deletion_timestamp.is_some(),
    }
}

/// The Blueprint installing `package` in the namespace; with several (a user's own Subscription
/// next to a dependency's), a settled one counts.
fn dependency(blueprints: &Store<Blueprint>, namespace: &str, package: &str) -> DependencyState {
    let mut candidates: Vec<_> = blueprints
        .state()
        .into_iter()
        .filter(|b| b.namespace().as_deref() == Some(namespace) && b.spec.package == package)
        .collect();
    candidates.sort_by_key(|b| {
        let phase = b.status.as_ref().and_then(|s| s.phase);
        !matches!(
            phase,
            Some(BlueprintPhase::Succeeded | BlueprintPhase::RolledBack)
        )
    });
    let found = candidates.first();
    DependencyState {
        package: package.to_string(),
        phase: found.and_then(|b| b.status.as_ref()?.phase),
        version: found.and_then(|b| b.status.as_ref()?.version.clone()),
    }
}
