//! The dereference and validate stages. A revision's content comes from its own Secret when
//! that exists; otherwise from the catalog (pinned by digest) or, for a rollback, from the
//! Secret of the revision it restores (never the catalog), and it is stored in the revision's
//! Secret before anything of it is applied. Then it is converted for this Kubernetes and its
//! CRDs are checked against the live ones and the custom resources they hold.

use std::collections::BTreeMap;
use windlass_api::names::{
    annotations, controllers, labels, reasons,
    reasons::policy as policy_reasons,
    reasons::revision::{SIGNATURE_REFUSED, TAMPERED as REVISION_TAMPERED},
};
use windlass_api::policy::ClusterScopedGrant;

use k8s_openapi::{
    api::core::v1::Secret,
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, Client, ResourceExt,
    api::{DynamicObject, ListParams, Patch, PatchParams},
    core::{ApiResource, TypeMeta},
};
use serde_json::Value;
use windlass_api::{Blueprint, FIELD_MANAGER};
use windlass_bundle::crd::safety as crd_safety;
use windlass_bundle::legacy_apis::{ConvertedManifests, convert_manifests};
use windlass_catalog_store::{BundleContent, CatalogStore};
use windlass_kit::{Applier, TrustGate};
use windlass_preview::CrdAction;
use windlass_revisions::SealKey;
use windlass_trust::{Artifact, ArtifactClass};

use crate::{
    Error, build, names,
    observe::{Observed, Sources},
    permit::{self, Placement},
    plan::{ContentRequest, CrdPolicy, Refusal, Source, Validation},
    revision::{self, RevisionContent, RevisionError},
};

/// A revision's content, ready for the build stage.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub content: RevisionContent,
    /// CRDs first, the CSV left out, each converted for this Kubernetes.
    pub converted: ConvertedManifests,
    /// The live CRDs the bundle's CRDs would replace, by name.
    pub live_crds: BTreeMap<String, Value>,
    /// Where it is installed and what the namespace's InstallPolicies permit.
    pub placement: Placement,
    /// What happens to each CRD the bundle ships, and every safety finding (for the plan).
    pub crd_reviews: Vec<CrdReview>,
}

/// One CRD of the bundle as the validate stage judged it.
#[derive(Clone, Debug)]
pub struct CrdReview {
    pub name: String,
    pub action: windlass_preview::CrdAction,
    /// Every finding of `crd_safety::findings`, blocking or not, unfiltered.
    pub findings: Vec<crd_safety::Violation>,
}

/// Dereference and validate the content a plan asks for, with what `observed` found of the
/// revision Secrets.
pub async fn validate(
    applier: &Applier,
    sources: &Sources<'_>,
    store: &CatalogStore,
    trust: &TrustGate,
    blueprint: &Blueprint,
    request: &ContentRequest,
    observed: &Observed,
) -> Result<(Validation, Option<Loaded>), Error> {
    if let Some(tampered) = observed.tampered(request.revision) {
        let refusal = Refusal {
            reason: REVISION_TAMPERED,
            message: tampered.message(),
        };
        return Ok((Validation::Untrusted(refusal), None));
    }
    let client = applier.client();
    let current = stored_content(sources, blueprint, observed, request.revision).await?;
    let (content, stored) =
        match dereference(sources, store, trust, blueprint, request, current.as_ref()).await? {
            Ok(found) => found,
            Err(unusable) => return Ok((unusable.into_validation(), None)),
        };
    if revision::csv_object(&content).is_none() {
        let message = format!(
            "{} holds no ClusterServiceVersion (operators.coreos.com)",
            content.cluster_service_version_name
        );
        return Ok((Validation::Invalid(message), None));
    }
    let converted = match convert_manifests(&revision::to_bundle_manifests(&content)) {
        Ok(converted) => converted,
        Err(e) => return Ok((Validation::Invalid(e.to_string()), None)),
    };
    let verdict = permit::check(
        applier,
        sources.policy_lists,
        blueprint,
        &content,
        &converted.objects,
        request.running,
    )
    .await?;
    let (placement, withdrawn) = match verdict {
        permit::Verdict::Permitted(placement) => (placement, None),
        permit::Verdict::Narrowed { placement, refusal } => (placement, Some(refusal)),
        // Refused before anything of it is kept: no revision Secret holds what no policy
        // lets this namespace install.
        permit::Verdict::Refused(refusal) => return Ok((Validation::Refused(refusal), None)),
    };
    let mut content = content;
    if stored == Stored::No {
        content.permitted_by = Some(placement.record());
    }
    if stored == Stored::No {
        sources
            .revision_writes
            .writing(&blueprint.uid().unwrap_or_default());
        match store_revision(client, sources.seal_key, blueprint, &content).await {
            Ok(written) => sources.revision_lists.wrote(&written),
            // Retrying cannot make it fit: say so on the Blueprint instead of backing off.
            Err(Error::Revision {
                source: source @ RevisionError::TooLarge { .. },
                ..
            }) => {
                let message = format!("it cannot be kept as a revision: {source}");
                return Ok((Validation::Invalid(message), None));
            }
            Err(error) => return Err(error),
        }
    }
    let mut live_crds = BTreeMap::new();
    let mut violations = Vec::new();
    let mut kept = Vec::new();
    let mut owned_elsewhere = Vec::new();
    let may_adopt = placement
        .permit
        .granted
        .contains(&ClusterScopedGrant::CrdAdoption);
    let mut crd_reviews = Vec::new();
    // (live, new, existing objects) of each CRD the upgrade changes, for UpgradeReady.
    let mut changed_crds = Vec::new();
    for crd in converted
        .objects
        .iter()
        .filter(|m| m.kind() == "CustomResourceDefinition")
    {
        let review = |action, findings| CrdReview {
            name: crd.name().to_string(),
            action,
            findings,
        };
        let Some(live) = live_crd(client, crd.name()).await? else {
            crd_reviews.push(review(CrdAction::Create, Vec::new()));
            continue;
        };
        let from = build::BundleId {
            package: &content.package,
            version: &content.version,
        };
        // CRDs are shared by the whole cluster: one that someone else manages is not taken
        // over unless an admin said so (a policy grant, or an annotation on the CRD).
        if request.crds == CrdPolicy::Apply
            && let build::CrdOwner::Other(owner) = build::crd_owner(&live, &content.package)
            && !may_adopt
        {
            owned_elsewhere.push(format!("{} (managed by {owner})", crd.name()));
            continue;
        }
        match request.crds {
            CrdPolicy::KeepLive => {
                kept.push(crd.name().to_string());
                crd_reviews.push(review(CrdAction::KeepLive, Vec::new()));
            }
            // A newer version of the package wrote it, or a newer bundle wrote one that already
            // serves everything ours does: it stays (see build::live_crd_is_newer and
            // build::live_crd_covers).
            CrdPolicy::Apply
                if build::live_crd_is_newer(&live, &from)
                    || build::live_crd_covers(&live, &crd.object, &from) =>
            {
                kept.push(crd.name().to_string());
                crd_reviews.push(review(CrdAction::KeepLive, Vec::new()));
            }
            // Already what we would write: nothing can break, no need to read every object.
            // Keys the new CRD leaves out count as changes: the forced apply removes them.
            CrdPolicy::Apply if crd_safety::unchanged(&live, &crd.object) => {
                crd_reviews.push(review(CrdAction::Unchanged, Vec::new()));
            }
            // Every rule of the table in crd_safety: OLM v0's, the schema-to-schema rules per
            // version and served-version pair, and the existing objects (schema, CEL rules,
            // pruning), with ratcheting. What blocks is refused; the rest is reported.
            CrdPolicy::Apply => {
                let versions = crd_safety::versions_to_check(&live, &crd.object);
                let existing = existing_objects(applier, &live, &versions).await?;
                let found = crd_safety::findings(&live, &crd.object, &existing);
                changed_crds.push((live.clone(), crd.object.clone(), existing.len()));
                violations.extend(found.iter().filter(|v| v.blocks()).cloned());
                crd_reviews.push(review(CrdAction::Change, found));
            }
        }
        live_crds.insert(crd.name().to_string(), live);
    }
    let mut taken = objects_owned_elsewhere(applier, blueprint, &converted.objects).await?;
    taken.extend(csv_objects_owned_elsewhere(applier, blueprint, &content, &placement).await?);
    if !taken.is_empty() {
        let refusal = Refusal {
            reason: policy_reasons::OBJECT_OWNED_ELSEWHERE,
            message: format!(
                "{} ships {}: windlass neither takes over nor deletes an object something else \
                 manages. Whoever may edit such an object can hand it to this install \
                 (kubectl annotate KIND NAME {}={}/{}), or rename or remove it",
                content.cluster_service_version_name,
                taken.join(", "),
                annotations::ADOPT,
                blueprint.namespace().unwrap_or_default(),
                blueprint.name_any(),
            ),
        };
        return Ok((Validation::Refused(refusal), None));
    }
    if !owned_elsewhere.is_empty() {
        let refusal = Refusal {
            reason: policy_reasons::CRD_OWNED_ELSEWHERE,
            message: format!(
                "{} ships {}: windlass does not take over a CRD something else manages. A \
                 cluster admin can hand one to this package (kubectl annotate crd NAME {}={}) \
                 or grant CrdAdoption to namespace {} in an InstallPolicy",
                content.cluster_service_version_name,
                owned_elsewhere.join(", "),
                annotations::CRD_ADOPT,
                content.package,
                blueprint.namespace().unwrap_or_default(),
            ),
        };
        return Ok((Validation::Refused(refusal), None));
    }
    let validation = if violations.is_empty() {
        // What would block or break an upgrade is looked for only before it starts, and only
        // for an upgrade of something that ran here.
        let upgrade = blueprint.status.as_ref().is_some_and(|s| {
            s.history.iter().any(|r| {
                r.revision < request.revision
                    && r.outcome == windlass_api::blueprint::RevisionOutcome::Completed
            })
        });
        let findings =
            if !upgrade || request.running || matches!(request.source, Source::Stored { .. }) {
                Vec::new()
            } else {
                crate::readiness::findings(client, blueprint, &content, &changed_crds).await?
            };
        Validation::Ready {
            kept_crds: kept,
            verified_by: content.verified_by.clone(),
            image_rewrites: content.recorded_rewrites(),
            withdrawn,
            findings,
        }
    } else {
        // Blueprint status and Events are read by the namespace's users: objects of other
        // namespaces are only counted.
        let namespace = blueprint.namespace().unwrap_or_default();
        Validation::UnsafeCrds(crd_safety::Assessment::for_viewer(
            violations,
            crd_safety::Viewer::Namespace(&namespace),
        ))
    };
    let loaded = Loaded {
        content,
        converted,
        live_crds,
        placement,
        crd_reviews,
    };
    Ok((validation, Some(loaded)))
}

/// The bundle's objects (CRDs aside, which are judged as shared definitions) that exist and
/// are managed by something other than this Blueprint, as `Kind name (managed by ...)`. Read
/// as the manager; an object it may not read is left to the API server's verdict on the
/// apply, made as the install identity.
async fn objects_owned_elsewhere(
    applier: &Applier,
    blueprint: &Blueprint,
    objects: &[windlass_bundle::Manifest],
) -> Result<Vec<String>, Error> {
    let owner = crate::reconcile::owner(blueprint);
    let mut taken = Vec::new();
    for manifest in objects
        .iter()
        .filter(|m| m.kind() != "CustomResourceDefinition")
    {
        let namespaced = match applier
            .resource(manifest.api_version(), manifest.kind())
            .await
        {
            Ok((_, namespaced)) => namespaced,
            // Not served: the apply says so.
            Err(_) => continue,
        };
        let key = windlass_kit::ObjectKey {
            api_version: manifest.api_version().to_string(),
            kind: manifest.kind().to_string(),
            namespace: namespaced.then(|| owner.namespace.clone()),
            name: manifest.name().to_string(),
        };
        let live = match applier.get(&key).await {
            Ok(live) => live,
            Err(e) if e.is_forbidden() => continue,
            Err(e) => return Err(e.into()),
        };
        if let Some(live) = live
            && let build::ObjectOwner::Other(who) = build::object_owner(&live, &owner)
        {
            taken.push(format!("{key} (managed by {who})"));
        }
    }
    Ok(taken)
}

/// The cluster-scoped objects the ClusterServiceVersion's controller will create for this
/// install (cluster-wide RBAC), that exist and are managed by something other than this
/// install, as `Kind name (managed by ...)`. Their names follow from the namespace and the CSV,
/// so anyone may have made one first; the CSV controller applies them as the manager, which
/// would take such an object over and remove it on uninstall.
async fn csv_objects_owned_elsewhere(
    applier: &Applier,
    blueprint: &Blueprint,
    content: &RevisionContent,
    placement: &Placement,
) -> Result<Vec<String>, Error> {
    use windlass_csv_controller::{desired, names as csv_names};
    let Some(definition) = revision::csv_object(content)
        .and_then(|csv| windlass_bundle::csv::ClusterServiceVersion::from_value(csv).ok())
    else {
        return Ok(Vec::new());
    };
    let owner = crate::reconcile::owner(blueprint);
    let csv_name = &content.cluster_service_version_name;
    let grants = placement.csv_grants();
    // Built as the CSV controller builds them from the CSV the apply stage writes.
    let context = desired::InstallContext {
        csv_name,
        namespace: &owner.namespace,
        owner: Value::Null,
        definition: &definition,
        target_namespaces: &placement.targets,
        config: &content.config,
        image_rewrites: &[],
        grants: &grants,
    };
    let made_by_this_csv = |live: &Value| {
        let labels = &live["metadata"]["labels"];
        labels[labels::CSV].as_str() == Some(csv_names::label_value(csv_name).as_str())
            && labels[labels::CSV_NAMESPACE].as_str()
                == Some(csv_names::label_value(&owner.namespace).as_str())
    };
    let mut taken = Vec::new();
    for object in desired::build(&context)
        .into_iter()
        .filter(|o| o.namespace().is_none())
    {
        let key = windlass_kit::ObjectKey::of(&object.object);
        let live = match applier.get(&key).await {
            Ok(live) => live,
            Err(e) if e.is_forbidden() => continue,
            Err(e) => return Err(e.into()),
        };
        if let Some(live) = live
            && !made_by_this_csv(&live)
            && let build::ObjectOwner::Other(who) = build::object_owner(&live, &owner)
        {
            taken.push(format!("{key} (managed by {who})"));
        }
    }
    Ok(taken)
}

/// Why a revision's content cannot be used.
enum Unusable {
    /// Not now (catalog not served, registry down): tried again.
    Unavailable(String),
    /// The bundle image's signatures do not meet the TrustPolicies: held until they do.
    Untrusted(String),
    /// The catalog does not offer it to new installs (its admin delisted it).
    Refused(Refusal),
}

impl Unusable {
    fn into_validation(self) -> Validation {
        match self {
            Unusable::Unavailable(message) => Validation::Unavailable(message),
            Unusable::Untrusted(message) => Validation::Untrusted(Refusal {
                reason: SIGNATURE_REFUSED,
                message,
            }),
            Unusable::Refused(refusal) => Validation::Refused(refusal),
        }
    }
}

/// Whether a revision's content is in its Secret already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stored {
    Yes,
    /// Read from the catalog or another revision: stored once the install is permitted.
    No,
}

/// The content of the requested revision (from its Secret, the catalog or the revision it
/// restores), or why it cannot be used. A Blueprint's spec is anyone's to write who may write
/// Blueprints, so what the Subscription controller checked is checked again here from what the
/// spec names: a catalog's content is taken only from the catalog that serves it, and a
/// version its admin delisted is not installed anew.
async fn dereference(
    sources: &Sources<'_>,
    store: &CatalogStore,
    trust: &TrustGate,
    blueprint: &Blueprint,
    request: &ContentRequest,
    current: Option<&RevisionContent>,
) -> Result<Result<(RevisionContent, Stored), Unusable>, Error> {
    let (client, key) = (sources.client, sources.seal_key);
    // The Secret wins when it holds this revision; one holding something else (a number
    // reused after a crash, a hand edit) is written over from the source. What runs keeps
    // running when its version is delisted later.
    if let Some(content) = current.filter(|c| {
        c.revision == request.revision && c.cluster_service_version_name == request.csv_name
    }) {
        return Ok(Ok((content.clone(), Stored::Yes)));
    }
    let mut content = match &request.source {
        Source::Catalog {
            catalog,
            csv_name,
            digest,
        } => match fetch(store, catalog.as_deref(), csv_name, digest.as_deref()).await {
            Err(unusable) => return Ok(Err(unusable)),
            Ok((catalog, bundle)) => {
                let verified_by = match check_signatures(trust, store, &catalog, &bundle).await {
                    Ok(verified_by) => verified_by,
                    Err(refused) => return Ok(Err(refused)),
                };
                let spec = &blueprint.spec;
                let mut content = revision::from_bundle(
                    request.revision,
                    &bundle,
                    Some(&catalog),
                    spec.config.clone(),
                    spec.target_namespaces.clone(),
                );
                content.verified_by = verified_by;
                // Which mirrors the operator's images run from is decided now, once, and
                // kept with the revision.
                content.mirror_images(&store.mirrors());
                content
            }
        },
        Source::Stored { revision: from } => match read(client, key, blueprint, *from).await? {
            Ok(mut restored) => {
                restored.reason = Some(format!("restored from revision {from}"));
                // Nothing is pulled for a rollback; its images run from the mirrors in force
                // now (the site may have gone air-gapped since the revision first ran).
                restored.bundle_pulled_from = None;
                restored.mirror_images(&store.mirrors());
                restored
            }
            Err(refusal) => return Ok(Err(Unusable::Unavailable(refusal.message))),
        },
    };
    content.revision = request.revision;
    content.created_by = Some(controllers::BLUEPRINT.to_string());
    Ok(Ok((content, Stored::No)))
}

/// Checks a bundle image's signatures against the TrustPolicies before anything of it is
/// stored or applied (bundles from the built-in catalog are compiled into windlass and carry
/// no image): the keys whose signatures counted, or why it may not be used.
async fn check_signatures(
    trust: &TrustGate,
    store: &CatalogStore,
    catalog: &str,
    bundle: &BundleContent,
) -> Result<Vec<String>, Unusable> {
    let Some(image) = &bundle.image else {
        return Ok(Vec::new());
    };
    let registry = store
        .get(catalog)
        .map(|served| served.registry_for(image))
        .unwrap_or_default();
    let artifact = Artifact {
        reference: image.clone(),
        digest: bundle.digest.clone(),
        class: ArtifactClass::Bundle,
    };
    // Pulled from a mirror: its signatures were copied there with it.
    let mirror = bundle.pulled_from.as_ref().map(|m| m.reference.as_str());
    let registry = match (mirror, store.get(catalog)) {
        (Some(mirror), Some(served)) => served.registry_for(mirror),
        _ => registry,
    };
    let verdict = trust
        .verify_mirrored(&artifact, mirror, &registry)
        .await
        .map_err(Unusable::Unavailable)?;
    if verdict.allowed() {
        Ok(verdict.verified_by)
    } else {
        Err(Unusable::Untrusted(format!(
            "bundle image {image} is refused by the trust policy: {}",
            verdict.reasons.join("; ")
        )))
    }
}

/// The bundle as the named catalog (or the first served catalog that offers it) serves it,
/// unless that catalog delists it; nothing is read of a delisted one.
async fn fetch(
    store: &CatalogStore,
    catalog: Option<&str>,
    csv_name: &str,
    digest: Option<&str>,
) -> Result<
    (
        String,
        std::sync::Arc<windlass_catalog_store::BundleContent>,
    ),
    Unusable,
> {
    let offer = match store.offer(catalog, csv_name) {
        Ok(offer) => offer,
        // Not served yet (a restart, an outage): content it served before may still do.
        Err(windlass_catalog_store::StoreError::UnknownCatalog(name)) => {
            return match store.bundle(&name, csv_name, digest).await {
                Ok(bundle) => Ok((name, bundle)),
                Err(e) => Err(Unusable::Unavailable(e.to_string())),
            };
        }
        Err(e) => return Err(Unusable::Unavailable(e.to_string())),
    };
    if let Some(delisted) = offer.delisted {
        let reason = if delisted.whole_package {
            reasons::delisting::PACKAGE_DELISTED
        } else {
            reasons::delisting::VERSION_DELISTED
        };
        return Err(Unusable::Refused(Refusal {
            reason,
            message: format!(
                "{csv_name} is not installed: {}; what runs already keeps running and stored \
                 revisions can still be restored",
                delisted.message
            ),
        }));
    }
    store
        .bundle(&offer.catalog, csv_name, digest)
        .await
        .map(|bundle| (offer.catalog, bundle))
        .map_err(|e| Unusable::Unavailable(e.to_string()))
}

/// Writes a revision Secret (server-side apply: idempotent when a crash repeats it); the
/// Secret as written.
pub async fn store_revision(
    client: &Client,
    key: &SealKey,
    blueprint: &Blueprint,
    content: &RevisionContent,
) -> Result<Secret, Error> {
    let name = blueprint.name_any();
    let mut secret = revision::to_secret(content, blueprint).map_err(|source| Error::Revision {
        blueprint: name.clone(),
        source,
    })?;
    // Label values are bounded; the selector the controller lists with uses the same bound.
    let labels = secret.metadata.labels.get_or_insert_default();
    labels.insert(labels::BLUEPRINT.to_string(), names::label_value(&name));
    // The kinds as applied (legacy APIs converted), which is where leftovers are looked for.
    let shipped = revision::to_bundle_manifests(content);
    let applied = match convert_manifests(&shipped) {
        Ok(converted) => converted.objects,
        Err(_) => shipped,
    };
    let annotations = secret.metadata.annotations.get_or_insert_default();
    annotations.insert(
        annotations::KINDS.to_string(),
        build::kinds(&applied).join(","),
    );
    annotations.insert(
        annotations::CRDS.to_string(),
        build::crd_names(&applied).join(","),
    );
    revision::seal_secret(&mut secret, key, blueprint, content.revision);
    let secret_name = secret.name_any();
    Api::<Secret>::namespaced(client.clone(), &blueprint.namespace().unwrap_or_default())
        .patch(
            &secret_name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&secret),
        )
        .await
        .map_err(|source| Error::Store {
            secret: secret_name,
            source,
        })
}

/// The content of the stored, sealed revision `revision`: what the observation read, or read
/// now (an observation that found the Secret unchanged since it was last checked reads no
/// data). None when it is not stored, fails its seal or does not read.
pub async fn stored_content(
    sources: &Sources<'_>,
    blueprint: &Blueprint,
    observed: &Observed,
    revision: i64,
) -> Result<Option<RevisionContent>, Error> {
    if let Some(content) = observed.current.as_ref().filter(|c| c.revision == revision) {
        return Ok(Some(content.clone()));
    }
    let stored = observed.stored.iter().any(|s| s.revision == revision);
    if !stored || observed.tampered(revision).is_some() {
        return Ok(None);
    }
    Ok(read(sources.client, sources.seal_key, blueprint, revision)
        .await?
        .ok())
}

/// A stored revision's content, or why it cannot be restored.
pub async fn read(
    client: &Client,
    key: &SealKey,
    blueprint: &Blueprint,
    revision: i64,
) -> Result<Result<RevisionContent, Refusal>, Error> {
    let name = revision::secret_name(&blueprint.name_any(), revision);
    let secret =
        Api::<Secret>::namespaced(client.clone(), &blueprint.namespace().unwrap_or_default())
            .get_opt(&name)
            .await
            .map_err(|source| Error::Read {
                what: format!("revision Secret {name}"),
                source,
            })?;
    let Some(secret) = secret else {
        return Ok(Err(Refusal {
            reason: reasons::blueprint::REVISION_CONTENT_MISSING,
            message: format!(
                "revision {revision} can no longer be restored: its Secret {name} was pruned or \
                 deleted; install a version from the catalog instead"
            ),
        }));
    };
    if let Err(problem) = revision::verify_secret(&secret, key, blueprint, revision) {
        return Ok(Err(Refusal {
            reason: REVISION_TAMPERED,
            message: format!(
                "revision {revision} cannot be restored: its Secret {name} fails its seal \
                 ({problem}), so it is not what windlass stored"
            ),
        }));
    }
    Ok(revision::from_secret(&secret).map_err(|e| Refusal {
        reason: reasons::blueprint::REVISION_CONTENT_UNREADABLE,
        message: format!("revision {revision} cannot be restored: {e}"),
    }))
}

/// Whether a stored revision can run again: its Secret reads, and the live CRDs still serve
/// every API version its CSV owns (CRDs stay at their newer definition in a rollback).
pub async fn rollback_source(
    client: &Client,
    key: &SealKey,
    blueprint: &Blueprint,
    revision: i64,
) -> Result<Result<(), Refusal>, Error> {
    let content = match read(client, key, blueprint, revision).await? {
        Ok(content) => content,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let owned = revision::csv_object(&content)
        .and_then(|csv| csv.pointer("/spec/customresourcedefinitions/owned"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut missing = Vec::new();
    for api in &owned {
        let (Some(crd), Some(version)) = (api["name"].as_str(), api["version"].as_str()) else {
            continue;
        };
        if let Some(live) = live_crd(client, crd).await?
            && !crd_safety::served_versions(&live)
                .iter()
                .any(|v| v == version)
        {
            missing.push(format!("{crd} {version}"));
        }
    }
    if missing.is_empty() {
        return Ok(Ok(()));
    }
    Ok(Err(Refusal {
        reason: reasons::blueprint::OWNED_APIS_NOT_SERVED,
        message: format!(
            "{} owns {}, which the live CRDs no longer serve; rolling back would leave it \
             without its APIs",
            content.cluster_service_version_name,
            missing.join(", ")
        ),
    }))
}

async fn live_crd(client: &Client, name: &str) -> Result<Option<Value>, Error> {
    let live = Api::<CustomResourceDefinition>::all(client.clone())
        .get_opt(name)
        .await
        .map_err(|source| Error::Read {
            what: format!("CRD {name}"),
            source,
        })?;
    Ok(live.map(|crd| serde_json::to_value(crd).unwrap_or_default()))
}

/// Every custom resource of the CRD, as each version served by both definitions shows it. The
/// manager reads custom resources only of CRDs it was asked to change: it grants itself that
/// read here (see [`build::custom_resource_reader`]) and waits for the API server to apply it.
async fn existing_objects(
    applier: &Applier,
    live: &Value,
    versions: &[String],
) -> Result<Vec<Value>, Error> {
    let client = applier.client();
    if let Some(reader) = build::custom_resource_reader(live) {
        applier.apply(&reader).await?;
    }
    let text = |pointer: &str| live.pointer(pointer).and_then(Value::as_str).unwrap_or("");
    let (group, kind, plural) = (
        text("/spec/group"),
        text("/spec/names/kind"),
        text("/spec/names/plural"),
    );
    let mut objects = Vec::new();
    for version in versions {
        let resource = ApiResource {
            group: group.to_string(),
            version: version.clone(),
            api_version: format!("{group}/{version}"),
            kind: kind.to_string(),
            plural: plural.to_string(),
        };
        let list = list_when_allowed(&Api::<DynamicObject>::all_with(client.clone(), &resource))
            .await
            .map_err(|source| Error::Read {
                what: format!("{plural}.{group}/{version} objects"),
                source,
            })?;
        // List items may leave out their type; the safety check reads the version from it.
        objects.extend(list.items.into_iter().map(|mut o| {
            o.types = Some(TypeMeta {
                api_version: resource.api_version.clone(),
                kind: resource.kind.clone(),
            });
            serde_json::to_value(o).unwrap_or_default()
        }));
    }
    Ok(objects)
}

/// Lists `api`, waiting a little while the API server is still refusing: a grant written just
/// before reaches the authorizer through aggregation and its informers, within moments.
pub(crate) async fn list_when_allowed(
    api: &Api<DynamicObject>,
) -> Result<kube::core::ObjectList<DynamicObject>, kube::Error> {
    const PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);
    let started = std::time::Instant::now();
    loop {
        match api.list(&ListParams::default()).await {
            Err(kube::Error::Api(status)) if status.code == 403 && started.elapsed() < PATIENCE => {
                tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            }
            result => return result,
        }
    }
}
