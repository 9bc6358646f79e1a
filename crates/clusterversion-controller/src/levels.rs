//! Applying one run level: each step's manifests (apply, create-only, delete), then waiting
//! until every object of the step is healthy before the next step.

use windlass_release::{
    Action as ManifestAction, PlannedManifest, RunLevel,
    health::{Health, health},
};

use crate::Context;

pub fn components(level: &RunLevel) -> String {
    let mut names: Vec<&str> = level
        .components()
        .filter_map(|c| c.component.as_deref())
        .collect();
    names.dedup();
    names.join(",")
}

/// What a level waits for.
pub struct Waiting {
    pub object: String,
    pub component: String,
    pub message: String,
    pub failed: bool,
}

fn describe(manifest: &PlannedManifest) -> String {
    let object = &manifest.object;
    match &object.namespace {
        Some(ns) => format!("{} {ns}/{}", object.kind, object.name),
        None => format!("{} {}", object.kind, object.name),
    }
}

/// Applies `level` step by step; `Ok(None)` once every object is healthy, the first object
/// that is not otherwise, `Err` when the API server refuses a manifest.
pub async fn apply_level(
    ctx: &Context,
    level: &RunLevel,
    payload_version: &str,
) -> Result<Option<Waiting>, String> {
    for step in &level.steps {
        for component in &step.components {
            for manifest in &component.manifests {
                apply_manifest(ctx, manifest).await?;
            }
        }
        // A step is a barrier (a Job, or the end of the level): all of it is healthy first.
        for component in &step.components {
            for manifest in &component.manifests {
                let key = windlass_kit::ObjectKey::of(&manifest.body);
                let live = ctx
                    .applier
                    .get(&key)
                    .await
                    .map_err(|e| format!("{}: {e}", describe(manifest)))?;
                let verdict = health(
                    &manifest.object.kind,
                    manifest.action,
                    live.as_ref(),
                    payload_version,
                );
                let (message, failed) = match verdict {
                    Health::Ready => continue,
                    Health::Waiting(reason) => (reason.to_string(), false),
                    Health::Failed(message) => (message, true),
                };
                return Ok(Some(Waiting {
                    object: describe(manifest),
                    component: component.component.clone().unwrap_or_default(),
                    message,
                    failed,
                }));
            }
        }
    }
    Ok(None)
}

async fn apply_manifest(ctx: &Context, manifest: &PlannedManifest) -> Result<(), String> {
    let key = windlass_kit::ObjectKey::of(&manifest.body);
    let failed = |e: windlass_kit::ApplyError| {
        format!("{} (file {}): {e}", describe(manifest), manifest.file)
    };
    match manifest.action {
        ManifestAction::Apply => ctx
            .applier
            .apply(&manifest.body)
            .await
            .map(|_| ())
            .map_err(failed),
        ManifestAction::CreateOnly => {
            if ctx.applier.get(&key).await.map_err(failed)?.is_none() {
                ctx.applier.apply(&manifest.body).await.map_err(failed)?;
            }
            Ok(())
        }
        ManifestAction::Delete => ctx.applier.delete(&key).await.map(|_| ()).map_err(failed),
    }
}
