//! Reading one bundle's content from where its catalog says it lives.

use windlass_mirror::MirrorRules;
use windlass_oci as oci;

use crate::{BundleContent, BundleLocation, ServedCatalog, StoreError, first_reachable};

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
