//! The plan of an update a person approves (`spec.approval: Manual`): each managed manifest of
//! each level read against the live object, as the release ServiceAccount, with a server-side
//! dry run for objects that exist (admission and defaulting included), judged by
//! `windlass_release::preview`.

use windlass_api::clusterversion::ReleasePlan;
use windlass_kit::ObjectKey;
use windlass_release::{Action, ObjectId, preview, progress::level_key};

use crate::{Context, Loaded, levels};

/// How many objects are read at once.
const CONCURRENT: usize = 16;

/// The plan of moving the cluster to `loaded`, leaving out what `unmanaged` names.
pub async fn plan(
    ctx: &Context,
    loaded: &Loaded,
    unmanaged: &[ObjectId],
) -> Result<ReleasePlan, String> {
    let levels = loaded
        .plan
        .updater
        .iter()
        .map(|l| (level_key(true, l), l))
        .chain(loaded.plan.levels.iter().map(|l| (level_key(false, l), l)));
    let mut planned = Vec::new();
    for (name, level) in levels {
        let manifests: Vec<_> = level
            .manifests()
            .filter(|m| !m.object.id().overridden_by(unmanaged))
            .collect();
        let mut verdicts = Vec::with_capacity(manifests.len());
        for chunk in manifests.chunks(CONCURRENT) {
            let judged = chunk.iter().map(|manifest| async move {
                let key = ObjectKey::of(&manifest.body);
                let live = match ctx.applier.get(&key).await {
                    Ok(live) => live,
                    // A kind the release itself brings (its CRD comes in an earlier level):
                    // nothing of it exists yet.
                    Err(windlass_kit::ApplyError::Discovery { .. }) => None,
                    // The kind went away after it was discovered (its CRD deleted).
                    Err(e) if e.status_code() == Some(404) => None,
                    Err(e) => {
                        return Err(format!(
                            "reading {}: {e}",
                            preview::describe(&manifest.object)
                        ));
                    }
                };
                let after = match (&live, manifest.action) {
                    (Some(_), Action::Apply) => Some(
                        ctx.applier
                            .dry_run(&levels::labelled(&manifest.body))
                            .await
                            .map_err(|e| {
                                format!("dry-running {}: {e}", preview::describe(&manifest.object))
                            })?,
                    ),
                    _ => None,
                };
                let verdict = preview::verdict(manifest.action, live.as_ref(), after.as_ref());
                Ok::<_, String>((preview::describe(&manifest.object), verdict))
            });
            for result in futures::future::join_all(judged).await {
                verdicts.push(result?);
            }
        }
        planned.push((name, verdicts));
    }
    Ok(preview::plan(
        &loaded.payload.version().to_string(),
        &loaded.image,
        planned,
    ))
}
