//! Gathering what the plan looks at: the revision Secrets, the CSVs, the dependencies.

use std::{collections::HashMap, sync::Arc};

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
    csv_cache::{self, PendingWrites},
    names,
    plan::{DependencyState, ObservedCsv, Settings, StoredRevision},
    revision::{self, RevisionContent},
    revision_cache::{self, RevisionCache},
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
    /// The content of the current revision, when its Secret was read in this observation
    /// (its first, or after it changed), is sealed and reads; otherwise
    /// [`crate::content::current`] reads it when it is needed.
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
    pub csv_writes: &'a PendingWrites,
    /// CSVs are listed not older than this controller's last write of one.
    pub csv_lists: Arc<ListFloor>,
    /// Revision Secrets' metadata, and what was found of their data.
    pub revisions: &'a RevisionCache,
    /// The Blueprints whose revision Secrets this controller wrote since the cache matched.
    pub revision_writes: &'a PendingWrites,
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
        revisions,
        revision_writes,
        revision_lists,
        policy_lists: _,
    } = *sources;
    let namespace = blueprint.namespace().unwrap_or_default();
    let name = blueprint.name_any();
    let uid = blueprint.uid().unwrap_or_default();
    let secrets = Api::<Secret>::namespaced(client.clone(), &namespace);
    let list = || async {
        revision_lists
            .list(
                &secrets,
                &ListParams::default().labels(&names::revision_selector(&name)),
            )
            .await
            .map_err(|source| Error::Read {
                what: format!("revision Secrets of {namespace}/{name}"),
                source,
            })
            .map(|list| list.items)
    };
    let by_name = |items: Vec<Secret>| -> HashMap<String, Secret> {
        items.into_iter().map(|s| (s.name_any(), s)).collect()
    };
    // Straight after this controller's own write the cache may be behind it: list instead,
    // until the cache shows what the list does.
    let mut listed: HashMap<String, Secret> = HashMap::new();
    let metas = if revision_writes.must_list(&uid) {
        let items = list().await?;
        let metas: Vec<ObjectMeta> = items.iter().map(|s| s.metadata.clone()).collect();
        revision_writes.listed_versions(
            &uid,
            &revision_cache::versions(&metas),
            &revision_cache::versions(&revisions.of(&namespace, &name)),
        );
        listed = by_name(items);
        metas
    } else {
        let metas = revisions.of(&namespace, &name);
        // Several to read (the first reconcile after a start): one list, not a read of each.
        let unchecked = metas
            .iter()
            .filter(|m| owned_by(m, &uid) && revisions.checked(m, &uid).is_none())
            .count();
        if unchecked > 1 {
            listed = by_name(list().await?);
        }
        metas
    };
    let mut observed = Observed::default();
    for meta in metas.iter().filter(|m| owned_by(m, &uid)) {
        let Some(stored) = stored_revision(meta) else {
            continue;
        };
        let current = stored.revision == blueprint.spec.revision;
        // The current revision's settings are needed; another revision's only its seal.
        let remembered = revisions.checked(meta, &uid).filter(|c| {
            c.revision == stored.revision && (!current || !matches!(c.outcome, Ok(None)))
        });
        let (meta, checked) = match remembered {
            Some(checked) => (meta.clone(), checked),
            None => {
                let secret_name = meta.name.clone().unwrap_or_default();
                let secret =
                    match listed.remove(&secret_name) {
                        Some(secret) => secret,
                        None => match secrets.get_opt(&secret_name).await.map_err(|source| {
                            Error::Read {
                                what: format!("revision Secret {namespace}/{secret_name}"),
                                source,
                            }
                        })? {
                            Some(secret) => secret,
                            // Deleted since the cache saw it.
                            None => continue,
                        },
                    };
                let Some(stored) = stored_revision(&secret.metadata) else {
                    continue;
                };
                let (checked, content) =
                    check(secret.clone(), key, blueprint, stored.revision, current);
                revisions.remember(&secret.metadata, checked.clone());
                if let Some(content) = content {
                    observed.current = Some(content);
                }
                (secret.metadata, checked)
            }
        };
        let Some(mut stored) = stored_revision(&meta) else {
            continue;
        };
        // Tenants can write Secrets in their namespace: only what windlass sealed counts.
        let settings = match checked.outcome {
            Ok(settings) => settings,
            Err(problem) => {
                observed.tampered.push(Tampered {
                    revision: stored.revision,
                    secret: format!("{namespace}/{}", meta.name.as_deref().unwrap_or_default()),
                    problem,
                });
                continue;
            }
        };
        let notes = meta.annotations.clone().unwrap_or_default();
        if let Some(kinds) = notes.get(annotations::KINDS).map(|k| build::parse_kinds(k)) {
            observed.kinds.extend(kinds);
        }
        if let Some(crds) = notes.get(annotations::CRDS) {
            observed
                .crds
                .extend(crds.split(',').filter(|c| !c.is_empty()).map(String::from));
        }
        if current {
            stored.settings = settings;
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

/// The seal of a revision Secret checked for `blueprint`, and for the current revision what it
/// was installed with (with its whole content, for this reconcile to use).
fn check(
    secret: Secret,
    key: &SealKey,
    blueprint: &Blueprint,
    revision: i64,
    current: bool,
) -> (revision_cache::Checked, Option<RevisionContent>) {
    let mut content = None;
    let outcome = revision::verify_secret(&secret, key, blueprint, revision).map(|()| {
        if !current {
            return None;
        }
        let decoded = revision::from_secret(&secret).ok()?;
        let settings = Settings {
            digest: decoded.digest.clone(),
            config: decoded.config.clone(),
            target_namespaces: decoded.target_namespaces.clone(),
        };
        content = Some(decoded);
        Some(settings)
    });
    let checked = revision_cache::Checked {
        resource_version: secret.metadata.resource_version.clone().unwrap_or_default(),
        blueprint_uid: blueprint.uid().unwrap_or_default(),
        revision,
        outcome,
    };
    (checked, content)
}

/// From labels and annotations alone: no decoding for revisions the plan only lists.
fn stored_revision(meta: &ObjectMeta) -> Option<StoredRevision> {
    let revision = meta.labels.as_ref()?.get(labels::REVISION)?.parse().ok()?;
    let annotations = meta.annotations.as_ref()?;
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
