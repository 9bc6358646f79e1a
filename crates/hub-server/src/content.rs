//! Where the hub's catalog content comes from.
//!
//! The hub shows a person the catalogs they may read, with the content the manager serves for
//! them. Each request lists the `Catalog` objects as that person (so RBAC decides which
//! catalogs they see); each catalog's content is read once per digest through the Catalog
//! controller's own reader and kept:
//!
//! - `BuiltIn`: the built-in catalog compiled into the binary (the same files the manager serves);
//! - `Image`: the file-based-catalog image pulled by the digest the Catalog's status records
//!   (`status.resolvedDigest`), i.e. exactly the content the manager verified and serves;
//! - `BundleImages`: the listed bundle images, read as the Catalog controller reads them.
//!
//! What a Catalog's spec delists is taken from the Catalog as listed on each request, not from
//! the content read: a delist or relist shows on the next page without reading anything again.
//!
//! A Catalog whose status records no digest yet (the manager has not read it) is listed as
//! not served. Registry credentials come from the Catalog's pull Secret, read as the person;
//! when they may not read it, the registry is asked without credentials and a refusal is shown
//! as that catalog's problem. Bundle CSVs are read where the content includes them (built-in
//! folders, bundle images); a file-based catalog shows the `olm.csv.metadata` it carries.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use k8s_openapi::api::core::v1::Secret;
use kube::{Api, Client, ResourceExt, api::ListParams};
use windlass_api::{
    Catalog,
    catalog::{CatalogSource, CatalogSourceType},
};
use windlass_catalog_controller::{
    Reader,
    credentials::{Credentials, auth_for, from_secret},
    source::{delisting, pinned, read_bundle_images, read_image},
};
use windlass_catalog_store::{BundleLocation, CatalogStore};
use windlass_hub::{BundleMetadata, CatalogContent, HubIndex};
use windlass_oci::RegistryOptions;

/// A catalog the person may see but whose content is not shown, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogProblem {
    pub catalog: String,
    pub message: String,
}

/// What one person's request sees.
pub struct View {
    pub index: Arc<HubIndex>,
    pub problems: Vec<CatalogProblem>,
}

/// Content by catalog name, each kept with the key (source and digest) it was read for.
pub struct Contents {
    /// Where Catalogs' pull Secrets live: the manager's namespace.
    manager_namespace: String,
    reader: Reader,
    /// Bundle images' content, as the Catalog controller keeps it, so their CSVs can be read.
    store: Arc<CatalogStore>,
    loaded: Mutex<HashMap<String, (String, Arc<CatalogContent>)>>,
    /// One load at a time: two people opening the hub at once read a catalog once.
    loading: tokio::sync::Mutex<()>,
    /// The last index built, for the set of content it was built from.
    index: Mutex<Option<(Vec<String>, Arc<HubIndex>)>>,
}

impl Contents {
    pub fn new(manager_namespace: &str) -> Arc<Contents> {
        Arc::new(Contents {
            manager_namespace: manager_namespace.to_string(),
            reader: Reader::new(),
            store: CatalogStore::new(),
            loaded: Mutex::default(),
            loading: tokio::sync::Mutex::new(()),
            index: Mutex::default(),
        })
    }
}

/// Where a Catalog's served content is, as a cache key: the source and the digest.
fn key_of(catalog: &Catalog) -> Option<String> {
    let digest = catalog.status.as_ref()?.resolved_digest.clone()?;
    let source = serde_json::to_string(&catalog.spec.source).unwrap_or_default();
    Some(format!("{source}@{digest}"))
}

impl Contents {
    /// The index over the catalogs `client`'s user may list. Listing them is refused as the
    /// API server refuses it.
    pub async fn view(&self, client: &Client) -> Result<View, kube::Error> {
        let catalogs = Api::<Catalog>::all(client.clone())
            .list(&ListParams::default())
            .await?;
        let mut problems = Vec::new();
        let mut contents = Vec::new();
        for catalog in &catalogs.items {
            let name = catalog.name_any();
            let Some(key) = key_of(catalog) else {
                problems.push(CatalogProblem {
                    catalog: name,
                    message: "not served yet: the manager has not read it".into(),
                });
                continue;
            };
            match self.content(client, catalog, &key).await {
                Ok(content) => contents.push((key, content)),
                Err(message) => problems.push(CatalogProblem {
                    catalog: name,
                    message,
                }),
            }
        }
        let keys: Vec<String> = contents
            .iter()
            .map(|(key, c)| format!("{}={key}/{}/{:?}", c.name, c.priority, c.delisting))
            .collect();
        if let Some((cached, index)) = self.index.lock().expect("index lock").as_ref()
            && *cached == keys
        {
            return Ok(View {
                index: index.clone(),
                problems,
            });
        }
        let index = Arc::new(HubIndex::new(
            contents.into_iter().map(|(_, c)| c).collect(),
        ));
        *self.index.lock().expect("index lock") = Some((keys, index.clone()));
        Ok(View { index, problems })
    }

    async fn content(
        &self,
        client: &Client,
        catalog: &Catalog,
        key: &str,
    ) -> Result<Arc<CatalogContent>, String> {
        let name = catalog.name_any();
        let cached = |this: &Contents| {
            this.loaded
                .lock()
                .expect("content lock")
                .get(&name)
                .filter(|(k, _)| k == key)
                .map(|(_, c)| c.clone())
        };
        if let Some(content) = cached(self) {
            return Ok(self.as_the_spec_says(content, catalog, key));
        }
        let _one_at_a_time = self.loading.lock().await;
        if let Some(content) = cached(self) {
            return Ok(self.as_the_spec_says(content, catalog, key));
        }
        let content = Arc::new(self.read(client, catalog).await?);
        self.loaded
            .lock()
            .expect("content lock")
            .insert(name, (key.to_string(), content.clone()));
        Ok(content)
    }

    async fn read(&self, client: &Client, catalog: &Catalog) -> Result<CatalogContent, String> {
        let source = &catalog.spec.source;
        let digest = catalog
            .status
            .as_ref()
            .and_then(|s| s.resolved_digest.clone())
            .unwrap_or_default();
        let credentials = credentials(client, &self.manager_namespace, source).await;
        let options = |reference: &str| RegistryOptions {
            plain_http: source.plain_http,
            auth: auth_for(&credentials, reference),
            ..Default::default()
        };
        let (catalog_model, csv_metadata) = match source.type_ {
            CatalogSourceType::BuiltIn => {
                let builtin = self.reader.builtin().await.map_err(|e| e.to_string())?;
                let mut metadata = BTreeMap::new();
                for (csv, location) in builtin.bundles.iter() {
                    if let BundleLocation::Directory { path, .. } = location {
                        let bundle = windlass_bundle::load_bundle(path)
                            .map_err(|e| format!("{csv}: {e}"))?;
                        metadata.insert(csv.clone(), BundleMetadata::from_bundle(&bundle));
                    }
                }
                (builtin.catalog.clone(), metadata)
            }
            CatalogSourceType::Image => {
                let image = source
                    .image
                    .as_deref()
                    .ok_or("spec.source.image is empty")?;
                let reference = pinned(image, &digest);
                let content = read_image(&reference, options, &self.store.mirrors(), None, None)
                    .await
                    .map_err(|e| e.to_string())?;
                (content.catalog, BTreeMap::new())
            }
            CatalogSourceType::BundleImages => {
                let content = read_bundle_images(
                    &source.bundle_images,
                    options,
                    &self.store.mirrors(),
                    &self.store,
                    None,
                )
                .await
                .map_err(|e| e.to_string())?;
                let mut metadata = BTreeMap::new();
                for (csv, location) in content.bundles.iter() {
                    if let Some(bundle) = location.digest().and_then(|d| self.store.cached(d)) {
                        metadata.insert(csv.clone(), BundleMetadata::from_bundle(&bundle.bundle));
                    }
                }
                (content.catalog, metadata)
            }
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        Ok(CatalogContent {
            name: catalog.name_any(),
            display_name: catalog.spec.display_name.clone(),
            priority: catalog.spec.priority,
            digest,
            catalog: catalog_model,
            csv_metadata,
            // Whole seconds: HTTP dates have no finer precision.
            loaded_at: UNIX_EPOCH + Duration::from_secs(now),
            delisting: delisting(&catalog.spec).0,
        })
    }
}

impl Contents {
    /// Content read before, with the priority, display name and delisting the Catalog has
    /// now (none of them changes what was read); kept, so the next request reuses it.
    fn as_the_spec_says(
        &self,
        content: Arc<CatalogContent>,
        catalog: &Catalog,
        key: &str,
    ) -> Arc<CatalogContent> {
        let spec = &catalog.spec;
        let delisting = delisting(spec).0;
        if content.priority == spec.priority
            && content.display_name == spec.display_name
            && content.delisting == delisting
        {
            return content;
        }
        let current = Arc::new(CatalogContent {
            name: content.name.clone(),
            display_name: spec.display_name.clone(),
            priority: spec.priority,
            digest: content.digest.clone(),
            catalog: content.catalog.clone(),
            csv_metadata: content.csv_metadata.clone(),
            loaded_at: content.loaded_at,
            delisting,
        });
        self.loaded
            .lock()
            .expect("content lock")
            .insert(content.name.clone(), (key.to_string(), current.clone()));
        current
    }
}

/// The Catalog's pull Secret's credentials, read as the person; none when there is no Secret
/// or they may not read it.
async fn credentials(client: &Client, namespace: &str, source: &CatalogSource) -> Credentials {
    let Some(secret) = source.pull_secret.as_deref() else {
        return Credentials::new();
    };
    match Api::<Secret>::namespaced(client.clone(), namespace)
        .get(secret)
        .await
    {
        Ok(secret) => from_secret(&secret).unwrap_or_default(),
        Err(error) => {
            tracing::debug!(%error, secret, "pull Secret not readable as this person");
            Credentials::new()
        }
    }
}
