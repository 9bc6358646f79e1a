//! The served content of every Catalog, shared by the controllers: the Catalog controller
//! serves what it read, the Subscription controller resolves against it, and the Blueprint
//! controller reads bundle content through it, cached by digest so installs and rollbacks do
//! not pull twice.

mod fetch;
mod reach;

pub use reach::{Mirrored, first_reachable};

use std::{
    collections::BTreeMap,
    path::PathBuf,
    sync::{Arc, Mutex, RwLock},
};

use tokio::sync::watch;
use windlass_catalog::Catalog;
use windlass_mirror::MirrorRules;
use windlass_oci::{Auth, RegistryOptions};

/// One catalog's content as last read successfully.
#[derive(Clone, Debug)]
pub struct ServedCatalog {
    /// The Catalog object's name.
    pub name: String,
    /// Higher wins when several catalogs offer the same package.
    pub priority: i32,
    /// Digest of the content this was read from (image manifest digest, or a hash of the
    /// built-in files).
    pub digest: String,
    pub catalog: Catalog,
    /// Where each bundle's content lives, by CSV name.
    pub bundles: BTreeMap<String, BundleLocation>,
    /// How to reach the registries the catalog's bundle images live in (plain HTTP, limits).
    /// Its `auth` is used only for registries `credentials` does not name; the controller
    /// leaves it anonymous.
    pub registry: RegistryOptions,
    /// Credentials by registry host (`host[:port]`), from the Catalog's pull Secret. Each
    /// registry gets only its own.
    pub credentials: BTreeMap<String, Auth>,
    /// What the signature check of the catalog's image found (`None`: not an image).
    pub verification: Option<Verification>,
    /// The mirror the catalog's image was read from, when an ImageMirrorSet sent it there.
    pub pulled_from: Option<Mirrored>,
}

/// What checking a catalog image's signatures against the trust policies found, for the
/// Catalog's status. Refused images are never served, so this is what was let through.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verification {
    /// Valid signatures met every rule that covers the image.
    pub verified: bool,
    /// Whether any rule covers the image at all.
    pub covered: bool,
    /// The keys whose signatures counted.
    pub verified_by: Vec<String>,
    /// One line for people: who signed, or why it is served unverified.
    pub summary: String,
}

impl ServedCatalog {
    /// How to pull `reference`: the catalog's registry options with the credentials for that
    /// reference's registry.
    pub fn registry_for(&self, reference: &str) -> RegistryOptions {
        let mut options = self.registry.clone();
        if let Some(auth) =
            windlass_oci::registry_of(reference).and_then(|host| self.credentials.get(&host))
        {
            options.auth = auth.clone();
        }
        options
    }

    /// How many bundles the catalog offers.
    pub fn bundle_count(&self) -> usize {
        self.catalog
            .packages
            .values()
            .map(|p| p.bundles.len())
            .sum()
    }
}

/// Where a bundle's manifests can be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BundleLocation {
    /// A folder on the manager's disk (the built-in catalog), with its content digest.
    Directory { path: PathBuf, digest: String },
    /// A bundle image; pulled on first use, then served from the cache by digest. A reference
    /// pinned by digest (`repo@sha256:...`) is served from the cache without pulling when that
    /// digest was pulled before.
    Image { reference: String },
}

impl BundleLocation {
    /// The content digest this location pins, when it pins one.
    pub fn digest(&self) -> Option<&str> {
        match self {
            BundleLocation::Directory { digest, .. } => Some(digest),
            BundleLocation::Image { reference } => reference
                .rsplit_once('@')
                .map(|(_, digest)| digest)
                .filter(|d| d.starts_with("sha256:")),
        }
    }
}

/// A bundle's full content, pinned by digest.
#[derive(Clone, Debug)]
pub struct BundleContent {
    pub package: String,
    pub csv_name: String,
    pub version: semver::Version,
    /// `sha256:...` of the content (image manifest digest for images).
    pub digest: String,
    pub image: Option<String>,
    /// The mirror the image was pulled from, when an ImageMirrorSet sent the pull there.
    pub pulled_from: Option<Mirrored>,
    pub bundle: windlass_bundle::Bundle,
}

/// Packages merged across catalogs: each package comes whole from the highest-priority catalog
/// that offers it (ties broken by catalog name), as a resolver input.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    pub catalog: Catalog,
    /// The catalog each package was taken from.
    pub origin: BTreeMap<String, Arc<ServedCatalog>>,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("catalog {0} is not served (it does not exist or has never been read successfully)")]
    UnknownCatalog(String),
    #[error("catalog {catalog} has no bundle {csv_name}")]
    UnknownBundle { catalog: String, csv_name: String },
    #[error("no catalog is served yet")]
    NoCatalogs,
    #[error("reading bundle {csv_name} from {location}: {message}")]
    Fetch {
        csv_name: String,
        location: String,
        message: String,
    },
    #[error("bundle {csv_name} now has digest {actual}, not {expected} as resolved; resolve again")]
    DigestChanged {
        csv_name: String,
        expected: String,
        actual: String,
    },
}

/// Every served catalog plus the bundle cache. Cheap to share (`Arc<CatalogStore>`).
pub struct CatalogStore {
    catalogs: RwLock<BTreeMap<String, Arc<ServedCatalog>>>,
    /// Bundle content by digest.
    cache: Mutex<BTreeMap<String, Arc<BundleContent>>>,
    /// Bumped whenever served content changes, so subscriptions resolve again.
    changed: watch::Sender<u64>,
    /// The ImageMirrorSets' rules: where images are read from besides where they say.
    mirrors: RwLock<Arc<MirrorRules>>,
    /// Bumped whenever the rules change, so catalogs are read again.
    mirrors_changed: watch::Sender<u64>,
}

impl Default for CatalogStore {
    fn default() -> Self {
        CatalogStore {
            catalogs: RwLock::default(),
            cache: Mutex::default(),
            changed: watch::Sender::new(0),
            mirrors: RwLock::default(),
            mirrors_changed: watch::Sender::new(0),
        }
    }
}

impl CatalogStore {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Serves new content for a catalog; subscribers hear of it when the digest or priority
    /// changed.
    pub fn serve(&self, served: ServedCatalog) {
        let mut catalogs = self.catalogs.write().expect("catalog store poisoned");
        let same = catalogs
            .get(&served.name)
            .is_some_and(|old| old.digest == served.digest && old.priority == served.priority);
        catalogs.insert(served.name.clone(), Arc::new(served));
        drop(catalogs);
        if !same {
            self.changed.send_modify(|n| *n += 1);
        }
    }

    /// Stops serving a catalog (its object was deleted).
    pub fn remove(&self, name: &str) {
        let removed = self
            .catalogs
            .write()
            .expect("catalog store poisoned")
            .remove(name)
            .is_some();
        if removed {
            self.changed.send_modify(|n| *n += 1);
        }
    }

    pub fn get(&self, name: &str) -> Option<Arc<ServedCatalog>> {
        self.catalogs
            .read()
            .expect("catalog store poisoned")
            .get(name)
            .cloned()
    }

    /// Names of the served catalogs.
    pub fn names(&self) -> Vec<String> {
        self.catalogs
            .read()
            .expect("catalog store poisoned")
            .keys()
            .cloned()
            .collect()
    }

    /// A receiver that changes whenever served content changes.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// The mirror rules in force.
    pub fn mirrors(&self) -> Arc<MirrorRules> {
        self.mirrors.read().expect("mirror rules poisoned").clone()
    }

    /// Replaces the mirror rules; subscribers of [`CatalogStore::mirror_changes`] hear of it
    /// when they differ.
    pub fn set_mirrors(&self, rules: MirrorRules) {
        let mut current = self.mirrors.write().expect("mirror rules poisoned");
        if **current == rules {
            return;
        }
        *current = Arc::new(rules);
        drop(current);
        self.mirrors_changed.send_modify(|n| *n += 1);
    }

    /// A receiver that changes whenever the mirror rules change.
    pub fn mirror_changes(&self) -> watch::Receiver<u64> {
        self.mirrors_changed.subscribe()
    }

    /// The packages to resolve against: from one catalog when `only` names it, otherwise
    /// merged by priority.
    pub fn select(&self, only: Option<&str>) -> Result<Selection, StoreError> {
        let catalogs = self.catalogs.read().expect("catalog store poisoned");
        let mut ordered: Vec<&Arc<ServedCatalog>> = match only {
            Some(name) => vec![
                catalogs
                    .get(name)
                    .ok_or_else(|| StoreError::UnknownCatalog(name.to_string()))?,
            ],
            None => catalogs.values().collect(),
        };
        if ordered.is_empty() {
            return Err(StoreError::NoCatalogs);
        }
        ordered.sort_by(|a, b| b.priority.cmp(&a.priority).then(a.name.cmp(&b.name)));
        let mut selection = Selection::default();
        for served in ordered {
            for (name, package) in &served.catalog.packages {
                if selection.catalog.packages.contains_key(name) {
                    continue;
                }
                selection
                    .catalog
                    .packages
                    .insert(name.clone(), package.clone());
                selection.origin.insert(name.clone(), served.clone());
            }
        }
        Ok(selection)
    }

    /// Content already cached under this digest.
    pub fn cached(&self, digest: &str) -> Option<Arc<BundleContent>> {
        self.cache
            .lock()
            .expect("bundle cache poisoned")
            .get(digest)
            .cloned()
    }

    /// Keeps content under its digest (the Blueprint controller also puts revisions it
    /// restored from the cluster here).
    pub fn remember(&self, content: BundleContent) -> Arc<BundleContent> {
        let content = Arc::new(content);
        self.cache
            .lock()
            .expect("bundle cache poisoned")
            .insert(content.digest.clone(), content.clone());
        content
    }

    /// A bundle's content, from the cache when `digest` (or the catalog's location) is known,
    /// otherwise read from where the catalog says it lives. When `digest` is given and the
    /// catalog now serves different content under the same CSV name (a republished bundle),
    /// that is an error naming the new digest: the caller resolved against older content.
    /// While the catalog does not serve the bundle (not loaded yet, or unreachable), cached
    /// content for `digest` is what was resolved and is returned.
    pub async fn bundle(
        &self,
        catalog: &str,
        csv_name: &str,
        digest: Option<&str>,
    ) -> Result<Arc<BundleContent>, StoreError> {
        let known = digest
            .and_then(|d| self.cached(d))
            .filter(|hit| hit.csv_name == csv_name);
        let serving = self
            .get(catalog)
            .and_then(|served| served.bundles.get(csv_name).cloned());
        if let Some(hit) = known {
            // The catalog's location names the digest it serves now, when it pins one: a
            // republished bundle shows up there, never in the cache.
            let unchanged = serving
                .as_ref()
                .and_then(BundleLocation::digest)
                .is_none_or(|now| now == hit.digest);
            if unchanged {
                return Ok(hit);
            }
        }
        let served = self
            .get(catalog)
            .ok_or_else(|| StoreError::UnknownCatalog(catalog.to_string()))?;
        let location =
            served
                .bundles
                .get(csv_name)
                .cloned()
                .ok_or_else(|| StoreError::UnknownBundle {
                    catalog: catalog.to_string(),
                    csv_name: csv_name.to_string(),
                })?;
        if let Some(hit) = location.digest().and_then(|d| self.cached(d)) {
            return check_digest(hit, digest);
        }
        let content = crate::fetch::fetch(&served, csv_name, &location, &self.mirrors()).await?;
        check_digest(self.remember(content), digest)
    }
}

fn check_digest(
    content: Arc<BundleContent>,
    expected: Option<&str>,
) -> Result<Arc<BundleContent>, StoreError> {
    match expected {
        Some(expected) if expected != content.digest => Err(StoreError::DigestChanged {
            csv_name: content.csv_name.clone(),
            expected: expected.to_string(),
            actual: content.digest.clone(),
        }),
        _ => Ok(content),
    }
}

#[cfg(test)]
mod tests;
