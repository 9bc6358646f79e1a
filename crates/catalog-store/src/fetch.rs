//! Reading one bundle's content from where its catalog says it lives.

use windlass_oci as oci;

use crate::{BundleContent, BundleLocation, ServedCatalog, StoreError};

pub(crate) async fn fetch(
    served: &ServedCatalog,
    csv_name: &str,
    location: &BundleLocation,
) -> Result<BundleContent, StoreError> {
    let fail = |where_: &str, message: String| StoreError::Fetch {
        csv_name: csv_name.to_string(),
        location: where_.to_string(),
        message,
    };
    let (bundle, digest, image) = match location {
        BundleLocation::Directory { path, digest } => {
            let path = path.clone();
            let shown = path.display().to_string();
            let bundle = tokio::task::spawn_blocking(move || windlass_bundle::load_bundle(&path))
                .await
                .map_err(|e| fail(&shown, e.to_string()))?
                .map_err(|e| fail(&shown, e.to_string()))?;
            (bundle, digest.clone(), None)
        }
        BundleLocation::Image { reference } => {
            let (bundle, pulled) = oci::pull_bundle(reference, &served.registry_for(reference))
                .await
                .map_err(|e| fail(reference, e.to_string()))?;
            (bundle, pulled.digest, Some(reference.clone()))
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
        bundle,
    })
}
