//! The preview stage: the plan of a revision before it is applied, for a person to approve
//! (Manual approval) or to keep on record (`spec.preview`). Only this stage's callers pay for
//! it: an Automatic revision without `spec.preview` makes none of its requests.
//!
//! The plan's digest ([`binding`]) is computed from the validated content alone. When a plan
//! with that digest is stored for the revision already, it is shown as it is; otherwise it is
//! computed: every object the revision writes is built as the apply stage (and the
//! ClusterServiceVersion's controller) builds it, read live and dry-run applied as the identity
//! that will write it; the RBAC and images are compared with what the running
//! ClusterServiceVersion installs; the CRD verdicts come from the validate stage; a rollback
//! also reads what the running revision applied and lists the live objects edited since, and
//! the edits of fields only the restored revision sets, which it overwrites.
//! The pure parts are `windlass_preview`'s.

mod objects;
pub mod store;

use std::collections::BTreeSet;

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use kube::{Api, ResourceExt};
use serde_json::Value;
use windlass_api::{
    Blueprint, Subscription,
    blueprint::PlanPreview,
    names::{conditions, labels},
};
use windlass_bundle::crd::safety as crd_safety;
use windlass_bundle::legacy_apis::convert_manifests;
use windlass_kit::Applier;
use windlass_preview::{
    Binding, CrdChange, CrdFinding, CrdVerdict, ObjectAction, ObjectRef, Plan, Release, diff,
    images, object_hash, rbac, summary,
};
use windlass_revisions::SealKey;

use crate::{
    Error, build,
    content::{self, Loaded},
    plan::{CrdPolicy, PreviewRequest, Source},
    revision,
};
use objects::{Desired, Writers, examine};

/// What approving the revision of `loaded` binds: its manifests as they will be applied, its
/// ClusterServiceVersion, settings, targets and install identity. Pure.
pub fn binding(loaded: &Loaded, crds: CrdPolicy) -> Binding {
    let content = &loaded.content;
    let mut binding = Binding {
        package: content.package.clone(),
        cluster_service_version_name: content.cluster_service_version_name.clone(),
        version: content.version.clone(),
        bundle_digest: content.digest.clone(),
        identity: identity_name(loaded),
        target_namespaces: loaded.placement.targets.clone(),
        config: object_hash(&serde_json::to_value(&content.config).unwrap_or_default()),
        crds: match crds {
            CrdPolicy::Apply => "Apply".into(),
            CrdPolicy::KeepLive => "KeepLive".into(),
        },
        objects: Vec::new(),
    };
    for manifest in &loaded.converted.objects {
        binding.bind(&manifest.object);
    }
    if let Some(csv) = revision::csv_object(content) {
        binding.bind(csv);
    }
    binding
}

fn identity_name(loaded: &Loaded) -> String {
    loaded
        .placement
        .permit
        .identity
        .username()
        .unwrap_or_else(|| "manager".into())
}

/// What the preview stage needs from the reconciler.
pub struct Context<'a> {
    pub manager: &'a Applier,
    pub installer: &'a Applier,
    pub key: &'a SealKey,
    /// The kinds any stored revision ships: where objects the new revision drops may be.
    pub known_kinds: &'a [(String, String)],
    pub now: Timestamp,
}

/// The preview of `request`'s revision, whose content `loaded` was validated this round:
/// the stored plan when its digest is still the one computed now, else a new one, stored.
pub async fn preview(
    ctx: &Context<'_>,
    blueprint: &Blueprint,
    loaded: &Loaded,
    request: &PreviewRequest,
) -> Result<PlanPreview, Error> {
    let client = ctx.manager.client();
    let revision = request.apply.content.revision;
    let binding = binding(loaded, request.apply.content.crds);
    let digest = binding.digest();
    let stored = store::read(client, ctx.key, blueprint, revision).await?;
    if let Some(stored) = &stored
        && stored.plan.digest == digest
    {
        return Ok(status_of(&stored.plan, &stored.checksum, blueprint));
    }
    // What changed is told against the plan shown before for this revision, else against
    // the previous revision's.
    let earlier = match (stored, request.previous) {
        (Some(stored), _) => Some((
            format!("the plan shown before for revision {revision}"),
            stored.plan,
        )),
        (None, Some(previous)) => store::read(client, ctx.key, blueprint, previous)
            .await?
            .map(|s| (format!("revision {previous}'s plan"), s.plan)),
        (None, None) => None,
    };
    let mut plan = compute(ctx, blueprint, loaded, request, binding).await?;
    if let Some((what, earlier)) = earlier {
        let changes = plan.binding.changes_since(&earlier.binding);
        if !changes.is_empty() {
            plan.changes = std::iter::once(format!("since {what}:"))
                .chain(changes)
                .collect();
        }
    }
    let checksum = store::write(client, ctx.key, blueprint, &mut plan).await?;
    Ok(status_of(&plan, &checksum, blueprint))
}

/// What the status shows of a plan.
fn status_of(plan: &Plan, checksum: &str, blueprint: &Blueprint) -> PlanPreview {
    // Whole seconds, as the status stores it: otherwise the status never compares equal and
    // is written again on every look.
    let computed = plan
        .computed_at
        .parse::<Timestamp>()
        .ok()
        .and_then(|at| Timestamp::from_second(at.as_second()).ok())
        .map(Time);
    PlanPreview {
        revision: plan.revision,
        digest: plan.digest.clone(),
        summary: summary::summary(plan),
        changes: summary::bounded(&plan.changes.join(" "), summary::MAX_SUMMARY),
        secret: windlass_api::names::plan_secret::name(&blueprint.name_any(), plan.revision),
        checksum: checksum.to_string(),
        computed_time: computed,
        approved: None,
    }
}

async fn compute(
    ctx: &Context<'_>,
    blueprint: &Blueprint,
    loaded: &Loaded,
    request: &PreviewRequest,
    binding: Binding,
) -> Result<Plan, Error> {
    let owner = crate::reconcile::owner(blueprint);
    let namespace = owner.namespace.clone();
    let identity = identity_name(loaded);
    let writers = Writers {
        manager: ctx.manager,
        installer: ctx.installer,
        identity: &identity,
    };
    let content = &loaded.content;
    let mut notes = Vec::new();
    let mut changes = Vec::new();
    // What this revision writes besides CRDs and its CSV, for the edits a rollback overwrites.
    let mut written: Vec<Value> = Vec::new();
    let mut kinds: BTreeSet<(String, String)> = ctx.known_kinds.iter().cloned().collect();
    let from = build::BundleId {
        package: &content.package,
        version: &content.version,
    };

    // The bundle's objects, CRDs first, as the apply stage writes them.
    for manifest in &loaded.converted.objects {
        let live_crd = loaded.live_crds.get(manifest.name());
        let desired = if manifest.kind() == "CustomResourceDefinition" {
            let keep = request.apply.content.crds == CrdPolicy::KeepLive && live_crd.is_some()
                || live_crd.is_some_and(|live| build::live_crd_is_newer(live, &from));
            if keep {
                continue;
            }
            Desired {
                object: build::crd(&manifest.object, live_crd, &owner, &from),
                namespaced: false,
                from_csv: false,
            }
        } else {
            kinds.insert((manifest.api_version().into(), manifest.kind().into()));
            match ctx
                .manager
                .resource(manifest.api_version(), manifest.kind())
                .await
            {
                Ok((_, namespaced)) => {
                    let object = build::object(&manifest.object, namespaced, &owner);
                    written.push(object.clone());
                    Desired {
                        object,
                        namespaced,
                        from_csv: false,
                    }
                }
                // A kind served by a CRD this plan creates: nothing of it can exist yet.
                Err(_) => {
                    let mut change = examine_unserved(&manifest.object, &identity);
                    change.note = Some(format!(
                        "{} is not served until this plan's CRDs are created; not dry-run",
                        manifest.api_version()
                    ));
                    changes.push(change);
                    continue;
                }
            }
        };
        changes.push(examine(&writers, &desired).await?);
    }

    // The ClusterServiceVersion, sealed as the apply stage seals it.
    let csv = crate::apply::sealed_csv(
        ctx.key,
        blueprint,
        &owner,
        loaded,
        request.apply.content.revision,
        request.apply.supersedes.clone(),
    )?;
    changes.push(
        examine(
            &writers,
            &Desired {
                object: csv.clone(),
                namespaced: false,
                from_csv: false,
            },
        )
        .await?,
    );

    // What the ClusterServiceVersion's controller will create, and what the running CSV
    // created that the new one does not.
    let derived = objects::from_csv(&csv);
    if csv
        .pointer("/spec/definition/spec/webhookdefinitions")
        .and_then(Value::as_array)
        .is_some_and(|w| !w.is_empty())
    {
        notes.push(
            "webhook Services, certificates and configurations are not part of this preview".into(),
        );
    }
    for object in &derived {
        changes.push(examine(&writers, object).await?);
    }
    written.extend(derived.iter().map(|d| d.object.clone()));
    let old_csv = match &request.apply.supersedes {
        Some(name) => objects::live_csv(ctx.manager, &namespace, name).await?,
        None => None,
    };
    let old_derived = old_csv.as_ref().map(objects::from_csv).unwrap_or_default();
    let new_refs: BTreeSet<ObjectRef> = derived.iter().map(|d| ObjectRef::of(&d.object)).collect();
    for gone in old_derived
        .iter()
        .filter(|o| !new_refs.contains(&ObjectRef::of(&o.object)))
    {
        let mut change = examine_unserved(&gone.object, &identity);
        change.action = ObjectAction::Delete;
        change.from_csv = true;
        change.by = if gone.namespaced {
            identity.clone()
        } else {
            "manager".into()
        };
        change.note = Some(format!(
            "removed with {}",
            request
                .apply
                .supersedes
                .as_deref()
                .unwrap_or("the old ClusterServiceVersion")
        ));
        changes.push(change);
    }
    if let Some(old) = &request.apply.supersedes
        && old != &content.cluster_service_version_name
    {
        let mut change = examine_unserved(
            &serde_json::json!({"apiVersion": "windlass.dev/v1alpha1", "kind": "ClusterServiceVersion",
                                "metadata": {"namespace": namespace, "name": old}}),
            "manager",
        );
        change.action = ObjectAction::Delete;
        change.note = Some(format!(
            "replaced: it goes once {} Succeeded",
            content.cluster_service_version_name
        ));
        changes.push(change);
    }
    for old in &request.apply.delete_csvs {
        let mut change = examine_unserved(
            &serde_json::json!({"apiVersion": "windlass.dev/v1alpha1", "kind": "ClusterServiceVersion",
                                "metadata": {"namespace": namespace, "name": old}}),
            "manager",
        );
        change.action = ObjectAction::Delete;
        changes.push(change);
    }
    let desired_refs: BTreeSet<ObjectRef> = changes.iter().map(|c| c.object.clone()).collect();
    changes.extend(objects::leftovers(&writers, &owner, &kinds, &desired_refs).await?);

    let values = |list: &[Desired]| list.iter().map(|d| d.object.clone()).collect::<Vec<_>>();
    let rbac = rbac::delta(&values(&old_derived), &values(&derived));
    let images = images::delta(
        &images::images(
            &values(&old_derived),
            old_csv.as_ref().and_then(|c| c.pointer("/spec/definition")),
        ),
        &images::images(&values(&derived), csv.pointer("/spec/definition")),
    );

    let drift = if request.drift {
        drift(ctx, blueprint, &owner, request, &written).await?
    } else {
        Vec::new()
    };
    let reasons = reasons(ctx.manager, blueprint, request).await;
    Ok(Plan {
        format: windlass_preview::FORMAT,
        blueprint: format!("{namespace}/{}", owner.name),
        revision: request.apply.content.revision,
        package: content.package.clone(),
        kind: request.kind,
        from: request.running.as_ref().map(|r| Release {
            version: r.version.clone(),
            cluster_service_version_name: r.csv_name.clone(),
        }),
        to: Release {
            version: content.version.clone(),
            cluster_service_version_name: content.cluster_service_version_name.clone(),
        },
        digest: binding.digest(),
        binding,
        reasons,
        identity,
        objects: changes,
        rbac,
        images,
        crds: crd_changes(loaded, &namespace),
        drift,
        operands: operands(ctx, blueprint, request).await?,
        changes: Vec::new(),
        notes,
        computed_at: ctx.now.to_string(),
    })
}

/// For a rollback to a stored revision: the dry run of its operand restore, in words.
async fn operands(
    ctx: &Context<'_>,
    blueprint: &Blueprint,
    request: &PreviewRequest,
) -> Result<Option<String>, Error> {
    let (windlass_preview::PlanKind::Rollback, Source::Stored { revision }) =
        (request.kind, &request.apply.content.source)
    else {
        return Ok(None);
    };
    let keeper = crate::operands::Keeper {
        applier: ctx.manager,
        key: ctx.key,
    };
    Ok(Some(
        match keeper.restore(blueprint, *revision, true).await? {
            Ok(summary) => summary,
            Err(refusal) => refusal.message,
        },
    ))
}

/// An object that cannot be read or dry-run (its kind is not served yet, or it is listed only
/// to say it goes).
fn examine_unserved(object: &Value, identity: &str) -> windlass_preview::ObjectChange {
    windlass_preview::ObjectChange {
        object: ObjectRef::of(object),
        action: ObjectAction::Create,
        by: if object["metadata"]["namespace"].is_string() {
            identity.to_string()
        } else {
            "manager".to_string()
        },
        from_csv: false,
        fields: Vec::new(),
        fields_left_out: 0,
        refused: None,
        note: None,
    }
}

/// The validate stage's CRD reviews as the plan shows them, to a reader of the Blueprint's
/// namespace (objects elsewhere only counted).
fn crd_changes(loaded: &Loaded, namespace: &str) -> Vec<CrdChange> {
    loaded
        .crd_reviews
        .iter()
        .map(|review| {
            let assessment = crd_safety::Assessment::for_viewer(
                review.findings.clone(),
                crd_safety::Viewer::Namespace(namespace),
            );
            let verdict = |v: crd_safety::Verdict| match v {
                crd_safety::Verdict::Blocks => CrdVerdict::Blocks,
                crd_safety::Verdict::Warns => CrdVerdict::Warns,
            };
            let mut findings: Vec<CrdFinding> = assessment
                .findings
                .iter()
                .map(|v| CrdFinding {
                    reason: v.kind.reason().to_string(),
                    verdict: verdict(v.verdict),
                    ratcheted: v.ratcheted,
                    message: v.to_string(),
                })
                .collect();
            findings.extend(assessment.hidden.iter().map(|h| CrdFinding {
                reason: h.kind.reason().to_string(),
                verdict: verdict(h.verdict),
                ratcheted: false,
                message: h.to_string(),
            }));
            CrdChange {
                name: review.name.clone(),
                action: review.action,
                verdict: findings
                    .iter()
                    .map(|f| f.verdict)
                    .max()
                    .unwrap_or(CrdVerdict::Safe),
                findings,
            }
        })
        .collect()
}

/// The live objects edited since windlass applied them that this plan overwrites: fields of
/// the running revision's objects (from its sealed revision content, and what its
/// ClusterServiceVersion created) whose live value differs, and fields only the restored
/// revision (`restored`, what this plan writes) sets that another field manager holds now.
/// The first kind lasts only until the running revision is applied again; the second stands,
/// since the running revision never writes those fields.
async fn drift(
    ctx: &Context<'_>,
    blueprint: &Blueprint,
    owner: &build::Owner,
    request: &PreviewRequest,
    restored: &[Value],
) -> Result<Vec<windlass_preview::Drift>, Error> {
    let Some(running) = &request.running else {
        return Ok(Vec::new());
    };
    let client = ctx.manager.client();
    let mut applied = Vec::new();
    if let Ok(content) = content::read(client, ctx.key, blueprint, running.revision).await? {
        let shipped = revision::to_bundle_manifests(&content);
        let converted = convert_manifests(&shipped)
            .map(|c| c.objects)
            .unwrap_or(shipped);
        for manifest in converted.iter().filter(|m| {
            m.kind() != "CustomResourceDefinition" && m.kind() != "ClusterServiceVersion"
        }) {
            if let Ok((_, namespaced)) = ctx
                .manager
                .resource(manifest.api_version(), manifest.kind())
                .await
            {
                applied.push(build::object(&manifest.object, namespaced, owner));
            }
        }
    }
    if let Some(csv) = objects::live_csv(ctx.manager, &owner.namespace, &running.csv_name).await? {
        applied.extend(objects::from_csv(&csv).into_iter().map(|d| d.object));
    }
    let find = |objects: &[Value], key: &windlass_kit::ObjectKey| {
        objects
            .iter()
            .find(|o| &windlass_kit::ObjectKey::of(o) == key)
            .cloned()
    };
    let mut keys: Vec<windlass_kit::ObjectKey> = Vec::new();
    for object in applied.iter().chain(restored) {
        let key = windlass_kit::ObjectKey::of(object);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let mut out = Vec::new();
    for key in &keys {
        // Read as the manager: what it reads is what it applied, whoever applied it.
        let live = match ctx.manager.get(key).await {
            Ok(Some(live)) => live,
            Ok(None) | Err(_) => continue,
        };
        let ran = find(&applied, key);
        let mut found = ran.as_ref().and_then(|a| diff::drift(a, &live));
        if let Some(written) = find(restored, key)
            && let Some(more) = diff::overwritten(ran.as_ref(), &written, &live)
        {
            found = Some(match found {
                None => more,
                Some(mut both) => {
                    both.fields.extend(more.fields);
                    both.editors.extend(more.editors);
                    both.editors.sort();
                    both.editors.dedup();
                    both
                }
            });
        }
        if let Some(mut found) = found {
            found
                .fields
                .retain(|f| !f.path.starts_with("metadata.ownerReferences"));
            if !found.fields.is_empty() {
                out.push(found);
            }
        }
    }
    Ok(out)
}

/// Why this version: the revision's reason, then the resolver's explanation as the
/// Subscription reports it.
async fn reasons(
    manager: &Applier,
    blueprint: &Blueprint,
    request: &PreviewRequest,
) -> Vec<String> {
    let mut reasons = vec![request.reason.clone()];
    let Some(subscription) = blueprint.labels().get(labels::SUBSCRIPTION) else {
        return reasons;
    };
    let api = Api::<Subscription>::namespaced(
        manager.client().clone(),
        &blueprint.namespace().unwrap_or_default(),
    );
    if let Ok(Some(subscription)) = api.get_opt(subscription).await
        && let Some(resolution) = subscription.status.as_ref().and_then(|s| {
            s.conditions
                .iter()
                .find(|c| c.type_ == conditions::subscription::RESOLUTION_SUCCEEDED)
        })
    {
        reasons.push(format!("resolver: {}", resolution.message));
    }
    reasons
}
