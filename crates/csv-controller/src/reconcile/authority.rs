//! Whether a sealed CSV is still current. A seal proves windlass wrote the spec; `spec.grant`
//! (covered by the seal) says for which Blueprint, revision and policy generation. A sealed
//! copy a tenant kept and creates again (after the operator was uninstalled, upgraded or
//! rolled back, or after the policy that permitted it was narrowed) carries a grant that no
//! longer holds, and nothing of it is created.
//!
//! Caches answer first; a mismatch they show is confirmed with the API server before a CSV is
//! refused, since a cache a moment behind would otherwise refuse a CSV its Blueprint has just
//! applied.

use kube::{Api, ResourceExt};
use windlass_api::{
    Blueprint, BlueprintSpec, ClusterServiceVersion, InstallPolicy, csv::CsvGrant, names::reasons,
};

use super::{Context, Error, trust::verify_seal};

/// Why a sealed CSV is not acted on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Lacking {
    pub reason: &'static str,
    pub message: String,
}

/// Trims a cached Blueprint to what [`check`] reads: its identity and `spec.revision`.
pub(super) fn trim_blueprint(blueprint: &mut Blueprint) {
    blueprint.metadata.managed_fields = None;
    blueprint.metadata.annotations = None;
    blueprint.metadata.labels = None;
    blueprint.spec = BlueprintSpec {
        revision: blueprint.spec.revision,
        ..BlueprintSpec::default()
    };
    blueprint.status = None;
}

/// `Ok(())` when `csv`'s grant holds: its Blueprint exists, owns it and has not moved past its
/// revision, and the policy that permitted it is at the generation recorded.
pub(super) async fn check(
    csv: &ClusterServiceVersion,
    ctx: &Context,
) -> Result<Result<(), Lacking>, Error> {
    let name = csv.name_any();
    let namespace = csv.namespace().unwrap_or_default();
    let Some(grant) = &csv.spec.grant else {
        return Ok(Err(Lacking {
            reason: reasons::csv::GRANT_MISSING,
            message: format!(
                "ClusterServiceVersion {namespace}/{name} was sealed before windlass recorded \
                 what it was granted; nothing more of it is created until its Blueprint applies \
                 it again"
            ),
        }));
    };
    if let Err(lacking) = owner_holds(csv, grant, ctx).await? {
        return Ok(Err(lacking));
    }
    policy_holds(csv, grant, ctx).await
}

async fn owner_holds(
    csv: &ClusterServiceVersion,
    grant: &CsvGrant,
    ctx: &Context,
) -> Result<Result<(), Lacking>, Error> {
    let name = csv.name_any();
    let namespace = csv.namespace().unwrap_or_default();
    let missing = || Lacking {
        reason: reasons::csv::BLUEPRINT_MISSING,
        message: format!(
            "ClusterServiceVersion {namespace}/{name} was applied for a Blueprint (uid {}) that \
             no longer exists or does not own it; windlass acts only on the CSVs a live \
             Blueprint applied, so nothing of it is created. Install operators through a \
             Subscription.",
            grant.blueprint_uid
        ),
    };
    let Some(owner) = csv
        .owner_references()
        .iter()
        .find(|r| r.kind == "Blueprint" && r.uid == grant.blueprint_uid)
    else {
        return Ok(Err(missing()));
    };
    let reference =
        kube::runtime::reflector::ObjectRef::<Blueprint>::new(&owner.name).within(&namespace);
    let cached = ctx.blueprints.get(&reference);
    let agrees = cached.as_ref().is_some_and(|b| {
        b.uid().as_deref() == Some(grant.blueprint_uid.as_str())
            && b.spec.revision >= grant.revision
    });
    let blueprint = if agrees {
        cached.map(|b| (*b).clone())
    } else {
        Api::<Blueprint>::namespaced(ctx.shell.client.clone(), &namespace)
            .get_opt(&owner.name)
            .await
            .map_err(|source| Error::Read {
                what: format!("Blueprint {namespace}/{}", owner.name),
                source,
            })?
    };
    let Some(blueprint) = blueprint.filter(|b| b.uid().as_deref() == Some(&grant.blueprint_uid))
    else {
        return Ok(Err(missing()));
    };
    // The Blueprint's newest CSV is the one it runs (or moves to): an older revision's CSV
    // beside a newer one is a copy, unless the newer one is taking it over.
    let newer = ctx.csvs.state().into_iter().find(|other| {
        other.namespace().as_deref() == Some(namespace.as_str())
            && other.name_any() != name
            && other.spec.grant.as_ref().is_some_and(|g| {
                g.blueprint_uid == grant.blueprint_uid && g.revision > grant.revision
            })
            && other.spec.supersedes.as_deref() != Some(name.as_str())
            && verify_seal(other, &ctx.seal_key).is_ok()
    });
    let ahead = grant.revision > blueprint.spec.revision;
    if let Some(newer) = newer
        .as_ref()
        .map(|c| c.name_any())
        .or_else(|| ahead.then(|| format!("revision {} of it", blueprint.spec.revision)))
    {
        return Ok(Err(Lacking {
            reason: reasons::csv::REVISION_NOT_CURRENT,
            message: format!(
                "ClusterServiceVersion {namespace}/{name} was applied for revision {} of \
                 Blueprint {}, which runs {newer} now; nothing of it is created",
                grant.revision, owner.name
            ),
        }));
    }
    Ok(Ok(()))
}

async fn policy_holds(
    csv: &ClusterServiceVersion,
    grant: &CsvGrant,
    ctx: &Context,
) -> Result<Result<(), Lacking>, Error> {
    let Some(policy) = &grant.policy else {
        return Ok(Ok(()));
    };
    let at = |p: &InstallPolicy| p.metadata.generation == grant.policy_generation;
    let reference = kube::runtime::reflector::ObjectRef::<InstallPolicy>::new(policy);
    if ctx.policies.get(&reference).is_some_and(|p| at(&p)) {
        return Ok(Ok(()));
    }
    let live = Api::<InstallPolicy>::all(ctx.shell.client.clone())
        .get_opt(policy)
        .await
        .map_err(|source| Error::Read {
            what: format!("InstallPolicy {policy}"),
            source,
        })?;
    if live.as_ref().is_some_and(at) {
        return Ok(Ok(()));
    }
    let now = match &live {
        Some(p) => format!(
            "is at generation {} now",
            p.metadata.generation.unwrap_or_default()
        ),
        None => "was deleted".to_string(),
    };
    Ok(Err(Lacking {
        reason: reasons::csv::POLICY_CHANGED,
        message: format!(
            "ClusterServiceVersion {}/{} was permitted by InstallPolicy {policy} at generation \
             {}, which {now}; nothing more of it is created until its Blueprint applies it \
             under the policy as it is",
            csv.namespace().unwrap_or_default(),
            csv.name_any(),
            grant.policy_generation.unwrap_or_default(),
        ),
    }))
}
