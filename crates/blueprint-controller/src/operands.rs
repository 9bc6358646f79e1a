//! Operand snapshots in the cluster: before an upgrade applies, the custom resources of every
//! CRD the running CSV owns are read (in the namespaces it watches) and kept in sealed Secrets
//! next to the upgrade's revision (`<blueprint>.r<N>.operands.<i>`, chunked, type
//! `windlass.dev/operands.v1`, which only the manager may write); a rollback to the revision
//! that ran puts their specs back once its CSV runs again, and a rehearsal dry-runs the same.
//! What is restored is decided by `windlass_revisions::operands`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::{
    ByteString,
    api::core::v1::Secret,
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference},
    jiff::Timestamp,
};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams},
    core::ApiResource,
};
use serde_json::{Value, json};
use windlass_api::{
    Blueprint, ClusterServiceVersion, FIELD_MANAGER,
    names::{self as api_names, annotations, labels, operands_secret, reasons, seal},
};
use windlass_bundle::crd::safety as crd_safety;
use windlass_kit::Applier;
use windlass_revisions::{
    SealKey, Subject,
    operands::{
        self as pure, CHUNK_BYTES, DEFAULT_MAX_CHUNKS, LiveOperand, Operand, OperandKind,
        RestorePlan, SEAL_KIND, Snapshot,
    },
};

use crate::{
    Error, content, names,
    plan::{Refusal, Snapshotted},
    revision,
};

/// How long a rehearsal's verdict stands before it is made again (the periodic full pass).
pub const REHEARSAL_FRESH: Duration = Duration::from_secs(600);

/// One rehearsal's verdict and what it stood on.
struct Rehearsed {
    revision: i64,
    /// The resourceVersions of the CRDs the Blueprint's revisions ship: a CRD edited since
    /// (a version no longer served, say) is rehearsed again at the next reconcile.
    crds: String,
    at: Instant,
    verdict: Result<String, Refusal>,
}

/// The last rehearsal of each Blueprint (by uid).
#[derive(Default)]
pub struct Rehearsals(Mutex<HashMap<String, Rehearsed>>);

impl Rehearsals {
    pub fn recall(
        &self,
        uid: &str,
        revision: i64,
        crds: &str,
        now: Instant,
    ) -> Option<Result<String, Refusal>> {
        let entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(uid)
            .filter(|r| {
                r.revision == revision
                    && r.crds == crds
                    && now.duration_since(r.at) < REHEARSAL_FRESH
            })
            .map(|r| r.verdict.clone())
    }

    pub fn record(
        &self,
        uid: &str,
        revision: i64,
        crds: String,
        now: Instant,
        verdict: Result<String, Refusal>,
    ) {
        let mut entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let rehearsed = Rehearsed {
            revision,
            crds,
            at: now,
            verdict,
        };
        entries.insert(uid.to_string(), rehearsed);
    }

    pub fn forget(&self, uid: &str) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(uid);
    }
}

/// The resourceVersions of the CRDs `crds`, as one string (`-` for one that is missing).
pub async fn crd_versions(client: &Client, crds: &[String]) -> Result<String, Error> {
    let api = Api::<CustomResourceDefinition>::all(client.clone());
    let mut versions = Vec::new();
    for crd in crds {
        let live = api
            .get_metadata_opt(crd)
            .await
            .map_err(|source| Error::Read {
                what: format!("CRD {crd}"),
                source,
            })?;
        versions.push(
            live.and_then(|m| m.resource_version())
                .unwrap_or_else(|| "-".into()),
        );
    }
    Ok(versions.join(","))
}

/// What the keeper acts with.
pub struct Keeper<'a> {
    pub applier: &'a Applier,
    pub key: &'a SealKey,
}

impl Keeper<'_> {
    fn client(&self) -> &Client {
        self.applier.client()
    }

    /// Takes the snapshot revision `revision` needs before it applies, from the CSV revision
    /// `base` installed (or finds the one already taken: the first stands, since what runs
    /// may have changed since the upgrade first applied).
    pub async fn snapshot(
        &self,
        blueprint: &Blueprint,
        revision: i64,
        base: i64,
    ) -> Result<Result<Snapshotted, Refusal>, Error> {
        let skip = skip_requested(blueprint, revision);
        if let Some(found) = self.find(blueprint, |r, _| r == revision).await? {
            return Ok(match found {
                Ok((snapshot, chunks)) => Ok(taken(&snapshot, chunks)),
                Err(problem) if skip => Ok(skipped(revision, &problem)),
                Err(problem) => Err(Refusal {
                    reason: reasons::blueprint::SNAPSHOT_TOO_LARGE,
                    message: problem,
                }),
            });
        }
        let content = match content::read(self.client(), self.key, blueprint, base).await? {
            Ok(content) => content,
            Err(refusal) if skip => return Ok(Ok(skipped(revision, &refusal.message))),
            Err(refusal) => return Ok(Err(refusal)),
        };
        let namespace = blueprint.namespace().unwrap_or_default();
        let csv = Api::<ClusterServiceVersion>::namespaced(self.client().clone(), &namespace)
            .get_opt(&content.cluster_service_version_name)
            .await
            .map_err(|source| Error::Read {
                what: format!(
                    "ClusterServiceVersion {}",
                    content.cluster_service_version_name
                ),
                source,
            })?;
        let mut namespaces = csv.map(|c| c.spec.target_namespaces).unwrap_or_default();
        if !namespaces.is_empty() && !namespaces.contains(&namespace) {
            namespaces.push(namespace.clone());
        }
        namespaces.sort();
        namespaces.dedup();
        let kinds = self.owned_kinds(&content).await?;
        let objects = read_operands(self.client(), &kinds, &namespaces).await?;
        let snapshot = Snapshot {
            base_revision: base,
            revision,
            taken_at: Timestamp::now().to_string(),
            namespaces,
            kinds,
            objects,
        };
        let chunks = match pure::encode(&snapshot, CHUNK_BYTES, DEFAULT_MAX_CHUNKS) {
            Ok(chunks) => chunks,
            Err(problem) if skip => return Ok(Ok(skipped(revision, &problem.to_string()))),
            Err(problem) => {
                return Ok(Err(Refusal {
                    reason: reasons::blueprint::SNAPSHOT_TOO_LARGE,
                    message: format!(
                        "the operands cannot be kept before this upgrade: {problem}; the \
                         upgrade waits. To let it go without a snapshot (a rollback would then \
                         leave the custom resources as the new version writes them): kubectl \
                         annotate blueprint {} {}={revision}",
                        blueprint.name_any(),
                        annotations::SKIP_OPERAND_SNAPSHOT
                    ),
                }));
            }
        };
        self.store(blueprint, &snapshot, &chunks).await?;
        Ok(Ok(taken(&snapshot, chunks.len())))
    }

    /// Puts the specs back to the snapshot taken while `base` ran (`dry_run`: only asks the
    /// API server whether it would). Ok: the summary; Err: why it did not (fully).
    pub async fn restore(
        &self,
        blueprint: &Blueprint,
        base: i64,
        dry_run: bool,
    ) -> Result<Result<String, Refusal>, Error> {
        let found = self.find(blueprint, |r, b| b == base && r > base).await?;
        let snapshot = match found {
            None => {
                return Ok(Err(Refusal {
                    reason: reasons::blueprint::NO_SNAPSHOT,
                    message: format!(
                        "no snapshot of the operands was taken while revision {base} ran; \
                         custom resources are left as they are"
                    ),
                }));
            }
            Some(Err(problem)) => {
                return Ok(Err(Refusal {
                    reason: reasons::blueprint::NO_SNAPSHOT,
                    message: format!("{problem}; custom resources are left as they are"),
                }));
            }
            Some(Ok((snapshot, _))) => snapshot,
        };
        let outcome = put_back(self.applier, &snapshot, dry_run).await?;
        Ok(outcome.verdict(&snapshot, dry_run))
    }

    /// The kinds the CSV of `content` owns, as the live CRDs serve them: the version the CSV
    /// names when served, else the storage version. The manager grants itself get, list and
    /// patch on exactly those.
    async fn owned_kinds(
        &self,
        content: &revision::RevisionContent,
    ) -> Result<Vec<OperandKind>, Error> {
        let owned = revision::csv_object(content)
            .and_then(|csv| csv.pointer("/spec/customresourcedefinitions/owned"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let crds = Api::<CustomResourceDefinition>::all(self.client().clone());
        let mut kinds: Vec<OperandKind> = Vec::new();
        for api in &owned {
            let Some(name) = api["name"].as_str() else {
                continue;
            };
            if kinds.iter().any(|k| k.crd == name) {
                continue;
            }
            let live = crds.get_opt(name).await.map_err(|source| Error::Read {
                what: format!("CRD {name}"),
                source,
            })?;
            let Some(live) = live else {
                continue;
            };
            let live = serde_json::to_value(live).unwrap_or_default();
            let served = crd_safety::served_versions(&live);
            let wanted = api["version"].as_str().unwrap_or_default();
            let version = if served.iter().any(|v| v == wanted) {
                wanted.to_string()
            } else {
                let storage = live["spec"]["versions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|v| v["storage"] == json!(true))
                    .and_then(|v| v["name"].as_str());
                match storage {
                    Some(storage) => storage.to_string(),
                    None => continue,
                }
            };
            let text = |pointer: &str| live.pointer(pointer).and_then(Value::as_str).unwrap_or("");
            let kind = OperandKind {
                crd: name.to_string(),
                group: text("/spec/group").to_string(),
                version,
                kind: text("/spec/names/kind").to_string(),
                plural: text("/spec/names/plural").to_string(),
                namespaced: text("/spec/scope") != "Cluster",
            };
            self.applier.apply(&keeper_role(&kind)).await?;
            kinds.push(kind);
        }
        Ok(kinds)
    }

    async fn store(
        &self,
        blueprint: &Blueprint,
        snapshot: &Snapshot,
        chunks: &[Vec<u8>],
    ) -> Result<(), Error> {
        let name = blueprint.name_any();
        let meta = blueprint.meta();
        let subject = subject(blueprint, snapshot.revision);
        let secrets = Api::<Secret>::namespaced(
            self.client().clone(),
            &blueprint.namespace().unwrap_or_default(),
        );
        let owner = OwnerReference {
            api_version: Blueprint::api_version(&()).into_owned(),
            kind: Blueprint::kind(&()).into_owned(),
            name: name.clone(),
            uid: meta.uid.clone().unwrap_or_default(),
            controller: Some(false),
            block_owner_deletion: Some(false),
        };
        let count = chunks.len();
        for (index, data) in chunks.iter().enumerate() {
            let secret_name = operands_secret::name(&name, snapshot.revision, index);
            let sealed = pure::seal_chunk(self.key, &subject, index, count, data);
            let secret = Secret {
                metadata: ObjectMeta {
                    name: Some(secret_name.clone()),
                    namespace: meta.namespace.clone(),
                    labels: Some(BTreeMap::from([
                        (labels::BLUEPRINT.to_string(), names::label_value(&name)),
                        (
                            labels::OPERANDS_REVISION.to_string(),
                            snapshot.revision.to_string(),
                        ),
                        (
                            labels::MANAGED_BY.to_string(),
                            labels::MANAGED_BY_VALUE.to_string(),
                        ),
                    ])),
                    annotations: Some(BTreeMap::from([
                        (
                            annotations::OPERANDS_CHUNK.to_string(),
                            format!("{index}/{count}"),
                        ),
                        (
                            annotations::OPERANDS_BASE_REVISION.to_string(),
                            snapshot.base_revision.to_string(),
                        ),
                        (seal::ANNOTATION.to_string(), sealed),
                    ])),
                    owner_references: Some(vec![owner.clone()]),
                    ..ObjectMeta::default()
                },
                type_: Some(operands_secret::TYPE.to_string()),
                data: Some(BTreeMap::from([(
                    operands_secret::DATA_KEY.to_string(),
                    ByteString(data.clone()),
                )])),
                ..Secret::default()
            };
            secrets
                .patch(
                    &secret_name,
                    &PatchParams::apply(FIELD_MANAGER).force(),
                    &Patch::Apply(&secret),
                )
                .await
                .map_err(|source| Error::Store {
                    secret: secret_name,
                    source,
                })?;
        }
        Ok(())
    }

    /// The newest snapshot whose (revision, base) `wanted` accepts: every chunk present and
    /// sealed, or what is wrong with it.
    async fn find(
        &self,
        blueprint: &Blueprint,
        wanted: impl Fn(i64, i64) -> bool,
    ) -> Result<Option<Result<(Snapshot, usize), String>>, Error> {
        let name = blueprint.name_any();
        let namespace = blueprint.namespace().unwrap_or_default();
        let uid = blueprint.uid().unwrap_or_default();
        let listed = Api::<Secret>::namespaced(self.client().clone(), &namespace)
            .list(&ListParams::default().labels(&format!(
                "{}={},{}",
                labels::BLUEPRINT,
                names::label_value(&name),
                labels::OPERANDS_REVISION
            )))
            .await
            .map_err(|source| Error::Read {
                what: format!("operand snapshots of {namespace}/{name}"),
                source,
            })?;
        let mut by_revision: BTreeMap<i64, Vec<&Secret>> = BTreeMap::new();
        for secret in &listed.items {
            let owned = secret.owner_references().iter().any(|o| o.uid == uid);
            let revision = secret
                .labels()
                .get(labels::OPERANDS_REVISION)
                .and_then(|r| r.parse::<i64>().ok());
            let base = secret
                .annotations()
                .get(annotations::OPERANDS_BASE_REVISION)
                .and_then(|r| r.parse::<i64>().ok());
            if let (true, Some(revision), Some(base)) = (owned, revision, base)
                && wanted(revision, base)
                && secret.type_.as_deref() == Some(operands_secret::TYPE)
            {
                by_revision.entry(revision).or_default().push(secret);
            }
        }
        let Some((revision, secrets)) = by_revision.into_iter().next_back() else {
            return Ok(None);
        };
        Ok(Some(self.assemble(blueprint, revision, &secrets)))
    }

    fn assemble(
        &self,
        blueprint: &Blueprint,
        revision: i64,
        secrets: &[&Secret],
    ) -> Result<(Snapshot, usize), String> {
        let subject = subject(blueprint, revision);
        let mut count = None;
        let mut chunks: BTreeMap<usize, &[u8]> = BTreeMap::new();
        for secret in secrets {
            let place = secret
                .annotations()
                .get(annotations::OPERANDS_CHUNK)
                .and_then(|p| p.split_once('/'))
                .and_then(|(i, n)| Some((i.parse::<usize>().ok()?, n.parse::<usize>().ok()?)));
            let data = secret
                .data
                .as_ref()
                .and_then(|d| d.get(operands_secret::DATA_KEY))
                .map(|b| b.0.as_slice())
                .unwrap_or_default();
            let found = secret
                .annotations()
                .get(seal::ANNOTATION)
                .map(String::as_str);
            let checked = place
                .ok_or(windlass_revisions::SealError::Malformed)
                .and_then(|(index, of)| {
                    pure::verify_chunk(self.key, &subject, index, of, data, found)
                        .map(|()| (index, of))
                });
            let (index, of) = checked.map_err(|problem| {
                format!(
                    "the operand snapshot Secret {} fails its seal ({problem}), so it is not \
                     what windlass stored",
                    secret.name_any()
                )
            })?;
            if count.is_some_and(|n| n != of) {
                return Err(format!(
                    "the operand snapshot of revision {revision} has chunks of two snapshots"
                ));
            }
            count = Some(of);
            chunks.insert(index, data);
        }
        let count = count.unwrap_or_default();
        let parts: Vec<Option<&[u8]>> = (0..count).map(|i| chunks.get(&i).copied()).collect();
        let snapshot = pure::decode(&parts).map_err(|problem| {
            format!("the operand snapshot of revision {revision} cannot be read: {problem}")
        })?;
        if snapshot.revision != revision {
            return Err(format!(
                "the operand snapshot stored as revision {revision} says it is revision {}",
                snapshot.revision
            ));
        }
        Ok((snapshot, count))
    }
}

/// The custom resources of `kinds` in `namespaces` (empty: all).
pub async fn read_operands(
    client: &Client,
    kinds: &[OperandKind],
    namespaces: &[String],
) -> Result<Vec<Operand>, Error> {
    let mut objects = Vec::new();
    for (index, kind) in kinds.iter().enumerate() {
        for object in list_live(client, kind, namespaces).await? {
            objects.push(Operand {
                kind: index,
                namespace: object.namespace(),
                name: object.name_any(),
                uid: object.uid().unwrap_or_default(),
                spec: object.data.get("spec").cloned(),
            });
        }
    }
    objects.sort_by(|a, b| (a.kind, &a.namespace, &a.name).cmp(&(b.kind, &b.namespace, &b.name)));
    Ok(objects)
}

/// What putting a snapshot back did.
pub struct PutBack {
    pub plan: RestorePlan,
    /// Objects whose write the API server refused, and its words.
    pub refused: Vec<(String, String)>,
}

impl PutBack {
    fn verdict(&self, snapshot: &Snapshot, dry_run: bool) -> Result<String, Refusal> {
        let word = if dry_run { "would restore" } else { "restored" };
        let summary = self.plan.summary(snapshot, word);
        if self.refused.is_empty() {
            return Ok(summary);
        }
        let refused: Vec<String> = self
            .refused
            .iter()
            .take(5)
            .map(|(name, why)| format!("{name}: {why}"))
            .collect();
        Err(Refusal {
            reason: if dry_run {
                reasons::blueprint::REHEARSAL_FAILED
            } else {
                reasons::blueprint::RESTORE_INCOMPLETE
            },
            message: format!(
                "{summary}; the API server refused {} of them: {}",
                self.refused.len(),
                refused.join("; ")
            ),
        })
    }
}

/// Writes each differing spec back (`dry_run`: server-side dry run only), guarded by the uid
/// the snapshot read, so an object recreated under the same name is never overwritten.
pub async fn put_back(
    applier: &Applier,
    snapshot: &Snapshot,
    dry_run: bool,
) -> Result<PutBack, Error> {
    let client = applier.client();
    let mut live = Vec::new();
    let mut versions = Vec::new();
    for (index, kind) in snapshot.kinds.iter().enumerate() {
        applier.apply(&keeper_role(kind)).await?;
        for object in list_live(client, kind, &snapshot.namespaces).await? {
            versions.push(object.resource_version());
            live.push(LiveOperand {
                kind: index,
                namespace: object.namespace(),
                name: object.name_any(),
                uid: object.uid().unwrap_or_default(),
                spec: object.data.get("spec").cloned(),
            });
        }
    }
    let plan = pure::plan_restore(snapshot, &live);
    let mut refused = Vec::new();
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        dry_run,
        ..PatchParams::default()
    };
    for restore in &plan.restore {
        let kind = &snapshot.kinds[restore.kind];
        let api = api_for(client, kind, restore.namespace.as_deref());
        let shown = match &restore.namespace {
            Some(namespace) => format!("{} {namespace}/{}", kind.kind, restore.name),
            None => format!("{} {}", kind.kind, restore.name),
        };
        // The uid (immutable) keeps an object recreated under the name from being written;
        // the resourceVersion read keeps a change made since from being undone unseen.
        let version = live
            .iter()
            .zip(&versions)
            .find(|(l, _)| {
                l.kind == restore.kind && l.namespace == restore.namespace && l.name == restore.name
            })
            .map(|(_, v)| v.clone());
        let patch = json!({
            "metadata": {"uid": restore.uid, "resourceVersion": version},
            "spec": restore.patch,
        });
        match api
            .patch(&restore.name, &params, &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            // Changed since it was read: the whole restore is decided again.
            Err(kube::Error::Api(status)) if status.code == 409 => {
                return Err(Error::Stale { what: shown });
            }
            Err(kube::Error::Api(status)) if status.code < 500 && status.code != 429 => {
                refused.push((shown, status.message));
            }
            Err(source) => {
                return Err(Error::Read {
                    what: format!("restoring {shown}"),
                    source,
                });
            }
        }
    }
    Ok(PutBack { plan, refused })
}

async fn list_live(
    client: &Client,
    kind: &OperandKind,
    namespaces: &[String],
) -> Result<Vec<DynamicObject>, Error> {
    let scopes: Vec<Option<&str>> = if namespaces.is_empty() || !kind.namespaced {
        vec![None]
    } else {
        namespaces.iter().map(|n| Some(n.as_str())).collect()
    };
    let mut objects = Vec::new();
    for scope in scopes {
        let api = api_for(client, kind, scope);
        let list = content::list_when_allowed(&api)
            .await
            .map_err(|source| Error::Read {
                what: format!(
                    "{}.{}/{} objects{}",
                    kind.plural,
                    kind.group,
                    kind.version,
                    scope.map(|n| format!(" in {n}")).unwrap_or_default()
                ),
                source,
            })?;
        objects.extend(list.items);
    }
    Ok(objects)
}

fn api_for(client: &Client, kind: &OperandKind, namespace: Option<&str>) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: kind.group.clone(),
        version: kind.version.clone(),
        api_version: kind.api_version(),
        kind: kind.kind.clone(),
        plural: kind.plural.clone(),
    };
    match namespace {
        Some(namespace) if kind.namespaced => {
            Api::namespaced_with(client.clone(), namespace, &resource)
        }
        _ => Api::all_with(client.clone(), &resource),
    }
}

/// The ClusterRole that lets the manager snapshot and restore the custom resources of one
/// owned CRD, and nothing else; its aggregated ClusterRole picks it up by the label.
pub fn keeper_role(kind: &OperandKind) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": api_names::custom_resource_keeper(&kind.crd),
            "labels": {
                labels::MANAGED_BY: labels::MANAGED_BY_VALUE,
                labels::AGGREGATE_TO_MANAGER: "true",
            },
        },
        "rules": [{
            "apiGroups": [kind.group],
            "resources": [kind.plural],
            "verbs": ["get", "list", "patch"],
        }],
    })
}

fn subject(blueprint: &Blueprint, revision: i64) -> Subject {
    Subject {
        kind: SEAL_KIND.into(),
        object: format!(
            "{}/{}",
            blueprint.namespace().unwrap_or_default(),
            blueprint.name_any()
        ),
        uid: blueprint.uid().unwrap_or_default(),
        revision: Some(revision),
    }
}

fn skip_requested(blueprint: &Blueprint, revision: i64) -> bool {
    blueprint
        .annotations()
        .get(annotations::SKIP_OPERAND_SNAPSHOT)
        .is_some_and(|r| r.trim() == revision.to_string())
}

fn taken(snapshot: &Snapshot, chunks: usize) -> Snapshotted {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for object in &snapshot.objects {
        let kind = snapshot
            .kinds
            .get(object.kind)
            .map_or("object", |k| k.kind.as_str());
        *counts.entry(kind).or_default() += 1;
    }
    let counted: Vec<String> = snapshot
        .kinds
        .iter()
        .map(|k| {
            format!(
                "{} {}",
                counts.get(k.kind.as_str()).copied().unwrap_or(0),
                k.kind
            )
        })
        .collect();
    let scope = if snapshot.namespaces.is_empty() {
        "all namespaces".to_string()
    } else {
        snapshot.namespaces.join(", ")
    };
    Snapshotted {
        reason: reasons::blueprint::SNAPSHOT_TAKEN,
        message: if snapshot.kinds.is_empty() {
            format!(
                "the CSV of revision {} owns no CRD the cluster serves: nothing to keep",
                snapshot.base_revision
            )
        } else {
            format!(
                "kept {} of revision {} ({scope}) in {chunks} Secret(s) before revision {} \
                 applied; a rollback to revision {} puts their specs back",
                counted.join(", "),
                snapshot.base_revision,
                snapshot.revision,
                snapshot.base_revision
            )
        },
    }
}

fn skipped(revision: i64, problem: &str) -> Snapshotted {
    Snapshotted {
        reason: reasons::blueprint::SNAPSHOT_SKIPPED,
        message: format!(
            "revision {revision} goes ahead without an operand snapshot, as the Blueprint's {} \
             annotation asks ({problem}); a rollback will leave custom resources as they are",
            annotations::SKIP_OPERAND_SNAPSHOT
        ),
    }
}

/// Removes the snapshot of a pruned revision (gone already is fine).
pub async fn delete(client: &Client, blueprint: &Blueprint, revision: i64) -> Result<(), Error> {
    let name = blueprint.name_any();
    let secrets =
        Api::<Secret>::namespaced(client.clone(), &blueprint.namespace().unwrap_or_default());
    let listed = secrets
        .list_metadata(&ListParams::default().labels(&format!(
            "{}={},{}={revision}",
            labels::BLUEPRINT,
            names::label_value(&name),
            labels::OPERANDS_REVISION
        )))
        .await
        .map_err(|source| Error::Read {
            what: format!("operand snapshots of revision {revision}"),
            source,
        })?;
    for secret in listed.items {
        let secret_name = secret.name_any();
        match secrets.delete(&secret_name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(source) => {
                return Err(Error::Delete {
                    kind: "Secret".into(),
                    name: secret_name,
                    source,
                });
            }
        }
    }
    Ok(())
}
