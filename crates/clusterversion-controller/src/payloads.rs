//! Loading a payload: from this process's cache, from the copy stored in the cluster (so a
//! rollback never pulls), or from its registry.

use std::sync::Arc;

use windlass_api::names::reasons::cluster_version as reasons;
use windlass_oci::RegistryOptions;
use windlass_release::{InclusionOptions, LoadOptions, Payload};

use crate::{Context, Loaded, store};

/// The payload `reference` names, pulled once and kept by the reference it was asked for.
pub async fn load(
    ctx: &Context,
    reference: &str,
    plain_http: bool,
    inclusion: &InclusionOptions,
) -> Result<Arc<Loaded>, (&'static str, String)> {
    let for_cluster = cache_key(reference, inclusion);
    if let Some(loaded) = ctx
        .payloads
        .lock()
        .expect("payload cache poisoned")
        .get(&for_cluster)
    {
        return Ok(loaded.clone());
    }
    // A payload applied before (by digest) is read from the cluster, never pulled again.
    if reference.contains("@sha256:") {
        let stored = store::stored(&ctx.secrets(), &ctx.seal_key, reference)
            .await
            .map_err(|e| (reasons::PAYLOAD_INVALID, e))?;
        if let Some(files) = stored {
            return plan(
                ctx,
                reference,
                reference.to_string(),
                files,
                true,
                inclusion,
            );
        }
    }
    let options = RegistryOptions {
        plain_http,
        ..RegistryOptions::default()
    };
    let pulled = windlass_oci::pull(reference, &options).await.map_err(|e| {
        (
            reasons::RETRIEVE_PAYLOAD,
            format!("pulling payload {reference}: {e}"),
        )
    })?;
    let repository = reference
        .split_once('@')
        .map(|(repo, _)| repo.to_string())
        .unwrap_or_else(|| repository_of_tag(reference));
    let image = format!("{repository}@{}", pulled.digest);
    plan(ctx, reference, image, pulled.files, false, inclusion)
}

/// A payload is planned for one cluster's profile and capabilities: the cache holds each plan
/// under the reference and the options it was made for.
fn cache_key(reference: &str, inclusion: &InclusionOptions) -> String {
    format!(
        "{reference}#{}",
        serde_json::to_string(inclusion).expect("inclusion options serialize")
    )
}

/// Reads and plans the files of payload `image`, and caches the result.
fn plan(
    ctx: &Context,
    reference: &str,
    image: String,
    files: windlass_bundle::FileTree,
    from_store: bool,
    inclusion: &InclusionOptions,
) -> Result<Arc<Loaded>, (&'static str, String)> {
    let load = LoadOptions {
        release_image: Some(image.clone()),
        ..LoadOptions::default()
    };
    let payload = Payload::from_tree(&files, &image, &load)
        .map_err(|e| (reasons::PAYLOAD_INVALID, e.to_string()))?;
    let plan = payload.plan(inclusion);
    let loaded = Arc::new(Loaded {
        image: image.clone(),
        payload,
        plan,
        files,
        from_store,
    });
    let mut cache = ctx.payloads.lock().expect("payload cache poisoned");
    // Pulled payloads are few and options rarely change: what an older spec planned goes.
    let wanted = format!(
        "#{}",
        serde_json::to_string(inclusion).expect("options serialize")
    );
    cache.retain(|key, _| key.ends_with(&wanted));
    cache.insert(cache_key(reference, inclusion), loaded.clone());
    cache.insert(cache_key(&image, inclusion), loaded.clone());
    Ok(loaded)
}

/// `host:port/repo:tag` without its tag (a port's colon is not a tag's).
fn repository_of_tag(reference: &str) -> String {
    match reference.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => repo.to_string(),
        _ => reference.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_is_cut_from_the_repository_but_a_port_is_not() {
        assert_eq!(
            repository_of_tag("127.0.0.1:5000/release:4.1.1"),
            "127.0.0.1:5000/release"
        );
        assert_eq!(
            repository_of_tag("127.0.0.1:5000/release"),
            "127.0.0.1:5000/release"
        );
    }
}
