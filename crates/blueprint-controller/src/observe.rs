//! Gathering what the plan looks at: the revision Secrets, the CSVs, the dependencies.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Secret;
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{ListParams, ObjectMeta},
    runtime::reflector::Store,
};
use windlass_api::names::{annotations, labels};
use windlass_api::{Blueprint, ClusterServiceVersion, blueprint::BlueprintPhase};
use windlass_kit::ListFloor;
use windlass_revisions::{SealError, SealKey};

use crate::{
    Error, build,
    csv_cache::{self, CsvWrites},
    names,
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
    /// The content of the current revision, when its Secret exists, is sealed and reads.
    pub current: Option<RevisionContent>,
    /// Revision Secrets whose seal does not check: nothing of them is used.
    pub tampered: Vec<Tampered>,
}

/// A revision Secret that is not what windlass wrote (edited, copied from another Blueprint,
/// or made by hand).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tampered {
    pub revision: i64,
    /// `namespace/name` of the Secret.
    pub secret: String,
    pub problem: SealError,
}

impl Tampered {
    /// For conditions and Events: what is wrong and what to do about it.
    pub fn message(&self) -> String {
        format!(
            "revision Secret {} fails its seal ({}); nothing of revision {} is applied. Delete \
             the Secret to have windlass store the revision again from the catalog",
            self.secret, self.problem, self.revision
        )
    }
}

impl Observed {
    pub fn tampered(&self, revision: i64) -> Option<&Tampered> {
        self.tampered.iter().find(|t| t.revision == revision)
    }
}

/// Where [`observe`] reads from besides the API server.
pub struct Sources<'a> {
    pub client: &'a Client,
    pub seal_key: &'a SealKey,
    pub blueprints: &'a Store<Blueprint>,
    pub csvs: &'a Store<ClusterServiceVersion>,
    pub csv_writes: &'a CsvWrites,
    /// CSVs are listed not older than this controller's last write of one.
    pub csv_lists: Arc<ListFloor>,
    /// Revision Secrets are listed not older than this controller's last write of one.
    pub revision_lists: &'a ListFloor,
    /// InstallPolicies are listed not older than the last list of them.
    pub policy_lists: &'a ListFloor,
}

pub async fn observe(sources: &Sources<'_>, blueprint: &Blueprint) -> Result<Observed, Error> {
    let Sources {
        client,
        seal_key: key,
        blueprints,
        csvs: csv_cache,
        csv_writes,
        ref csv_lists,
        revision_lists,
        policy_lists: _,
    } = *sources;
    let namespace = blueprint.namespace().unwrap_or_default();
    let name = blueprint.name_any();
    let uid = blueprint.uid().unwrap_or_default();
    let secrets = Api::<Secret>::namespaced(client.clone(), &namespace);
    let secrets = revision_lists
        .list(
            &secrets,
            &ListParams::default().labels(&names::revision_selector(&name)),
        )
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
        // Tenants can write Secrets in their namespace: only what windlass sealed counts.
        if let Err(problem) = revision::verify_secret(secret, key, blueprint, stored.revision) {
            observed.tampered.push(Tampered {
                revision: stored.revision,
                secret: format!("{namespace}/{}", secret.name_any()),
                problem,
            });
            continue;
        }
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

    let cached = csv_cache::owned(csv_cache, &namespace, &uid);
    let csvs = if csv_writes.must_list(&uid) {
        let listed: Vec<ClusterServiceVersion> = csv_lists
            .list(
                &Api::<ClusterServiceVersion>::namespaced(client.clone(), &namespace),
                &ListParams::default().labels(&names::selector(&name, &namespace)),
            )
            .await
            .map_err(|source| Error::Read {
                what: format!("ClusterServiceVersions of {namespace}/{name}"),
                source,
            })?
            .items
            .into_iter()
            .filter(|c| owned_by(&c.metadata, &uid))
            .collect();
        csv_writes.listed(&uid, &listed, &cached);
        listed
    } else {
        cached
    };
    observed.csvs = csvs.iter().map(observed_csv).collect();
    observed.csvs.sort_by(|a, b| a.name.cmp(&b.name));

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

pub(crate) fn observed_csv(csv: &ClusterServiceVersion) -> ObservedCsv {
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
