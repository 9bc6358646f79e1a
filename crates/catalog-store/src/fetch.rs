//! Reading one bundle's content from where its catalog says it lives.

use windlass_mirror::MirrorRules;
use windlass_oci as oci;

use crate::{BundleContent, BundleLocation, ServedCatalog, StoreError, first_reachable};

/// The manifest digest of a bundle image as the first place that answers (each mirror, then the
/// source) serves it now, without pulling its content.
pub(crate) async fn resolve(
    served: &ServedCatalog,
    csv_name: &str,
    location: &BundleLocation,
    rules: &MirrorRules,
) -> Result<String, StoreError> {
    let reference = match location {
        BundleLocation::Directory { digest, .. } => return Ok(digest.clone()),
        BundleLocation::Image { reference } => reference,
    };
    let (digest, _) = first_reachable(rules, reference, |place| async move {
        oci::resolve_digest(&place, &served.registry_for(&place)).await
    })
    .await
    .map_err(|e| StoreError::Fetch {
        csv_name: csv_name.to_string(),
        location: reference.clone(),
        message: e.to_string(),
    })?;
    Ok(digest)
}

/// Reads a bundle; an image through the mirrors `rules` give for it, each with the
/// credentials the catalog holds for its registry.
pub(crate) async fn fetch(
    served: &ServedCatalog,
    csv_name: &str,
    location: &BundleLocation,
    rules: &MirrorRules,
) -> Result<BundleContent, StoreError> {
    let fail = |where_: &str, message: String| StoreError::Fetch {
        csv_name: csv_name.to_string(),
        location: where_.to_string(),
        message,
    };
    let (bundle, digest, image, pulled_from) = match location {
        BundleLocation::Directory { path, digest } => {
            let path = path.clone();
            let shown = path.display().to_string();
            let bundle = tokio::task::spawn_blocking(move || windlass_bundle::load_bundle(&path))
                .await
                .map_err(|e| fail(&shown, e.to_string()))?
                .map_err(|e| fail(&shown, e.to_string()))?;
            (bundle, digest.clone(), None, None)
        }
        BundleLocation::Image { reference } => {
            let ((bundle, pulled), from) = first_reachable(rules, reference, |place| async move {
                oci::pull_bundle(&place, &served.registry_for(&place)).await
            })
            .await
            .map_err(|e| fail(reference, e.to_string()))?;
            (bundle, pulled.digest, Some(reference.clone()), from)
        }
    };
    let version = bundle
        .csv
        .version()
        .map_err(|e| fail(&bundle.source, e.to_string()))?;
    let package = served
        .catalog
        .packages
        .values()
        .find(|p| p.bundles.contains_key(csv_name))
        .map(|p| p.name.clone())
        .unwrap_or_default();
    Ok(BundleContent {
        package,
        csv_name: csv_name.to_string(),
        version,
        digest,
        image,
        pulled_from,
        bundle,
    })
}
