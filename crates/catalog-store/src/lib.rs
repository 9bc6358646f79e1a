//! The served content of every Catalog, shared by the controllers: the Catalog controller
//! serves what it read, the Subscription controller resolves against it, and the Blueprint
//! controller reads bundle content through it, cached by digest so installs and rollbacks do
//! not pull twice.

mod cache;
mod fetch;
mod reach;

pub use reach::{Mirrored, first_reachable};

pub use cache::{DEFAULT_BUDGET_BYTES, content_bytes};

use std::{
    collections::BTreeMap,
    path::PathBuf,
    sync::{Arc, Mutex, RwLock, Weak},
};

use tokio::sync::watch;
use windlass_catalog::{
    Catalog,
    listing::{Delisting, HeldBack},
};
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
    /// Shared: an unchanged poll serves the same catalog again without copying it, and a
    /// resolution against this catalog alone reads it in place.
    pub catalog: Arc<Catalog>,
    /// Where each bundle's content lives, by CSV name, for bundles whose location is not
    /// their catalog `image` (see [`ServedCatalog::location`]).
    pub bundles: Arc<BTreeMap<String, BundleLocation>>,
    /// How to reach the registries the catalog's bundle images live in (plain HTTP, limits).
    /// Its `auth` is used only for registries `credentials` does not name; the controller
    /// leaves it anonymous.
    pub registry: RegistryOptions,
    /// Credentials by registry host (`host[:port]`), from the Catalog's pull Secret. Each
    /// registry gets only its own.
    pub credentials: BTreeMap<String, Auth>,
    /// What the signature check of the catalog's image found (`None`: not an image).
    pub verification: Option<Verification>,
    /// What the listing gate held back, and what the Catalog's admin delisted.
    pub listing: ListingState,
    /// The mirror the catalog's image was read from, when an ImageMirrorSet sent it there.
    pub pulled_from: Option<Mirrored>,
}

/// What a catalog has but does not offer to new installs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListingState {
    /// Versions that fail lint ([`windlass_catalog::listing::gate`]); not in `catalog`.
    pub held_back: Vec<HeldBack>,
    /// What else reading found wrong (a file that could not be read, a default channel).
    pub problems: Vec<String>,
    /// What the Catalog's `spec.delisted` takes off: still in `catalog` (installed operators
    /// and the Package views need them), left out of [`CatalogStore::select`].
    pub delisting: Delisting,
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

    /// Where a bundle's content lives: its entry in `bundles`, else the image its catalog
    /// entry names. A file-based catalog's bundles carry their images, so a catalog of
    /// 100,000 bundles keeps no second map of names and references.
    pub fn location(&self, csv_name: &str) -> Option<BundleLocation> {
        location_in(&self.catalog, &self.bundles, csv_name)
    }

    /// Bundles the catalog lists with no location: offered, but they cannot be installed.
    pub fn without_location(&self) -> impl Iterator<Item = &str> {
        self.catalog
            .packages
            .values()
            .flat_map(|p| p.bundles.values())
            .filter(|b| b.image.is_none() && !self.bundles.contains_key(&b.name))
            .map(|b| b.name.as_str())
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

/// Where bundle `csv_name` of `catalog` lives: its entry in `bundles`, else the image its
/// catalog entry names.
pub fn location_in(
    catalog: &Catalog,
    bundles: &BTreeMap<String, BundleLocation>,
    csv_name: &str,
) -> Option<BundleLocation> {
    if let Some(location) = bundles.get(csv_name) {
        return Some(location.clone());
    }
    catalog
        .packages
        .values()
        .find_map(|p| p.bundles.get(csv_name))
        .and_then(|b| b.image.clone())
        .map(|reference| BundleLocation::Image { reference })
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
/// that offers it (ties broken by catalog name), as a resolver input. What a catalog delists
/// is left out; a package one catalog delists whole comes from the next catalog that offers
/// it, if any.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// The served catalog itself when every package comes from one catalog (no copy), else
    /// the merge.
    pub catalog: Arc<Catalog>,
    /// The catalog each package was taken from.
    pub origin: BTreeMap<String, Arc<ServedCatalog>>,
    /// What delisting left out, by package: the whole package (when no other catalog offers
    /// it), or versions of the package as selected.
    pub delisted: BTreeMap<String, DelistedBy>,
}

/// A package, or versions of it, delisted by one catalog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DelistedBy {
    pub catalog: String,
    /// Empty: the whole package.
    pub versions: Vec<semver::Version>,
    /// The CSV names of what is delisted (of the whole package too).
    pub bundles: Vec<String>,
    pub reason: String,
}

impl DelistedBy {
    /// "package acme-db is delisted by catalog vendor (end of support)".
    pub fn describe(&self, package: &str) -> String {
        let what = match self.versions.as_slice() {
            [] => format!("package {package} is delisted"),
            [one] => format!("version {one} of package {package} is delisted"),
            many => format!(
                "versions {} of package {package} are delisted",
                many.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let why = match self.reason.trim() {
            "" => String::new(),
            reason => format!(" ({reason})"),
        };
        format!("{what} by catalog {}{why}", self.catalog)
    }
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
    /// Bundle content by digest, least recently used first out past its byte budget.
    cache: Mutex<cache::ContentCache>,
    /// Bumped whenever served content changes, so subscriptions resolve again.
    changed: watch::Sender<u64>,
    /// The last merge of several catalogs, with what it was made from.
    merged: Mutex<Option<(Vec<MergeKey>, Arc<Catalog>)>>,
    /// The ImageMirrorSets' rules: where images are read from besides where they say.
    mirrors: RwLock<Arc<MirrorRules>>,
    /// Bumped whenever the rules change, so catalogs are read again.
    mirrors_changed: watch::Sender<u64>,
}

/// One catalog a merge was made from. The catalog is held weakly: a merge never keeps
/// content alive that is no longer served, and while the weak reference lives its address
/// cannot be taken by newer content.
#[derive(Debug)]
struct MergeKey {
    name: String,
    priority: i32,
    catalog: Weak<Catalog>,
}

impl PartialEq for MergeKey {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.priority == other.priority
            && Weak::ptr_eq(&self.catalog, &other.catalog)
    }
}

impl Default for CatalogStore {
    fn default() -> Self {
        CatalogStore {
            catalogs: RwLock::default(),
            cache: Mutex::new(cache::ContentCache::new(DEFAULT_BUDGET_BYTES)),
            changed: watch::Sender::new(0),
            merged: Mutex::default(),
            mirrors: RwLock::default(),
            mirrors_changed: watch::Sender::new(0),
        }
    }
}

impl CatalogStore {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A store whose bundle content cache keeps at most about `bytes` (see [`content_bytes`]).
    pub fn with_cache_budget(bytes: usize) -> Arc<Self> {
        Arc::new(CatalogStore {
            cache: Mutex::new(cache::ContentCache::new(bytes)),
            ..Self::default()
        })
    }

    /// Bytes and entries the bundle content cache holds now.
    pub fn cache_usage(&self) -> (usize, usize) {
        let cache = self.cache.lock().expect("bundle cache poisoned");
        (cache.total_bytes(), cache.len())
    }

    /// Serves new content for a catalog; subscribers hear of it when the digest, the
    /// priority or what is listed changed.
    pub fn serve(&self, served: ServedCatalog) {
        let mut catalogs = self.catalogs.write().expect("catalog store poisoned");
        let same = catalogs.get(&served.name).is_some_and(|old| {
            old.digest == served.digest
                && old.priority == served.priority
                && old.listing == served.listing
        });
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
        // Packages a delisting trimmed, by name: only these are copied.
        let mut trimmed: BTreeMap<String, windlass_catalog::Package> = BTreeMap::new();
        for served in &ordered {
            let delisting = &served.listing.delisting;
            for (name, package) in &served.catalog.packages {
                if selection.origin.contains_key(name) {
                    continue;
                }
                if let Some(entry) = delisting.entry(name) {
                    let delisted_by = |versions: Vec<semver::Version>| DelistedBy {
                        catalog: served.name.clone(),
                        bundles: package
                            .bundles
                            .values()
                            .filter(|b| entry.covers(&b.version))
                            .map(|b| b.name.clone())
                            .collect(),
                        versions,
                        reason: entry.reason.clone(),
                    };
                    let Some(listed) = delisting.listed(package) else {
                        selection
                            .delisted
                            .entry(name.clone())
                            .or_insert_with(|| delisted_by(Vec::new()));
                        continue;
                    };
                    selection.delisted.insert(
                        name.clone(),
                        delisted_by(entry.versions.iter().cloned().collect()),
                    );
                    trimmed.insert(name.clone(), listed);
                }
                selection.origin.insert(name.clone(), (*served).clone());
            }
        }
        // A package delisted whole by one catalog but offered by another is not delisted.
        selection
            .delisted
            .retain(|name, by| !by.versions.is_empty() || !selection.origin.contains_key(name));
        // The common case, one catalog serving every package as it is: share it.
        let sole = ordered.iter().find(|served| {
            selection.origin.len() == served.catalog.packages.len()
                && selection
                    .origin
                    .values()
                    .all(|origin| Arc::ptr_eq(&origin.catalog, &served.catalog))
        });
        selection.catalog = match sole {
            Some(served) if trimmed.is_empty() => served.catalog.clone(),
            _ if trimmed.is_empty() => self.merged(&ordered, &selection.origin),
            // Delisting is rare and changes what is served without new content: not cached.
            _ => Arc::new(Catalog {
                packages: selection
                    .origin
                    .iter()
                    .map(|(name, served)| {
                        let package = trimmed
                            .remove(name)
                            .unwrap_or_else(|| served.catalog.packages[name].clone());
                        (name.clone(), package)
                    })
                    .collect(),
            }),
        };
        Ok(selection)
    }

    /// The merge of several catalogs, made once per change of what they serve: every
    /// resolution reads the same copy.
    fn merged(
        &self,
        ordered: &[&Arc<ServedCatalog>],
        origin: &BTreeMap<String, Arc<ServedCatalog>>,
    ) -> Arc<Catalog> {
        let key: Vec<MergeKey> = ordered
            .iter()
            .map(|served| MergeKey {
                name: served.name.clone(),
                priority: served.priority,
                catalog: Arc::downgrade(&served.catalog),
            })
            .collect();
        let mut cache = self.merged.lock().expect("merged catalog poisoned");
        if let Some((cached_key, catalog)) = cache.as_ref()
            && *cached_key == key
        {
            return catalog.clone();
        }
        let mut merged = Catalog::default();
        for (name, served) in origin {
            merged
                .packages
                .insert(name.clone(), served.catalog.packages[name].clone());
        }
        let merged = Arc::new(merged);
        *cache = Some((key, merged.clone()));
        merged
    }

    /// Content cached under this digest, if the cache still holds it, whoever served it.
    pub fn cached(&self, digest: &str) -> Option<Arc<BundleContent>> {
        self.cache
            .lock()
            .expect("bundle cache poisoned")
            .get(digest)
            .map(|(content, _)| content)
    }

    /// Content cached under this digest when it was read for `catalog`.
    fn cached_for(&self, digest: &str, catalog: &str) -> Option<Arc<BundleContent>> {
        let mut cache = self.cache.lock().expect("bundle cache poisoned");
        let (content, served_by) = cache.get(digest)?;
        served_by.contains(catalog).then_some(content)
    }

    /// Keeps content under its digest while the cache's budget allows.
    pub fn remember(&self, content: BundleContent) -> Arc<BundleContent> {
        self.keep(content, None)
    }

    fn keep(&self, content: BundleContent, catalog: Option<&str>) -> Arc<BundleContent> {
        let content = Arc::new(content);
        self.cache
            .lock()
            .expect("bundle cache poisoned")
            .put(content.clone(), catalog);
        content
    }

    /// What `catalog` (or, without one, the first served catalog by name that has it) says of
    /// bundle `csv_name` before any of its content is read: enough to refuse an install
    /// before anything of it is pulled.
    pub fn offer(&self, catalog: Option<&str>, csv_name: &str) -> Result<Offer, StoreError> {
        let candidates = match catalog {
            Some(name) => vec![
                self.get(name)
                    .ok_or_else(|| StoreError::UnknownCatalog(name.to_string()))?,
            ],
            None => {
                let catalogs = self.catalogs.read().expect("catalog store poisoned");
                if catalogs.is_empty() {
                    return Err(StoreError::NoCatalogs);
                }
                catalogs.values().cloned().collect()
            }
        };
        for served in &candidates {
            let Some(bundle) = served
                .catalog
                .packages
                .values()
                .find_map(|p| p.bundles.get(csv_name))
            else {
                continue;
            };
            let package = bundle.package.to_string();
            let delisted = served
                .listing
                .delisting
                .covering(&package, &bundle.version)
                .map(|d| OfferDelisted {
                    whole_package: d.version.is_none(),
                    message: d.by(&served.name),
                });
            return Ok(Offer {
                catalog: served.name.clone(),
                package,
                version: bundle.version.clone(),
                delisted,
            });
        }
        Err(StoreError::UnknownBundle {
            catalog: catalog.unwrap_or("any served catalog").to_string(),
            csv_name: csv_name.to_string(),
        })
    }

    /// The digest of the content `catalog` serves for `csv_name`, without reading the content:
    /// the one its location pins, the one `known` names when that was read for this catalog
    /// and the location pins none, else the image's manifest digest as its registry answers
    /// now. Resolving a bundle costs no pull, so content is read only by an install that
    /// passed its checks.
    pub async fn digest_of(
        &self,
        catalog: &str,
        csv_name: &str,
        known: Option<&str>,
    ) -> Result<String, StoreError> {
        let served = self
            .get(catalog)
            .ok_or_else(|| StoreError::UnknownCatalog(catalog.to_string()))?;
        let location = served
            .location(csv_name)
            .ok_or_else(|| StoreError::UnknownBundle {
                catalog: catalog.to_string(),
                csv_name: csv_name.to_string(),
            })?;
        if let Some(pinned) = location.digest() {
            return Ok(pinned.to_string());
        }
        if let Some(known) = known
            && self
                .cached_for(known, catalog)
                .is_some_and(|hit| hit.csv_name == csv_name)
        {
            return Ok(known.to_string());
        }
        crate::fetch::resolve(&served, csv_name, &location, &self.mirrors()).await
    }

    /// A bundle's content as `catalog` serves it. Cached content counts only for the catalog
    /// it was read for: a digest another catalog served, or one this catalog no longer
    /// offers under `csv_name`, is never handed out in its name. When `digest` is given and
    /// the catalog now serves different content under the same CSV name (a republished
    /// bundle), that is an error naming the new digest: the caller resolved against older
    /// content. While the catalog is not served at all (not loaded yet, or unreachable),
    /// content it served before under `digest` is what was resolved and is returned.
    pub async fn bundle(
        &self,
        catalog: &str,
        csv_name: &str,
        digest: Option<&str>,
    ) -> Result<Arc<BundleContent>, StoreError> {
        let Some(served) = self.get(catalog) else {
            return digest
                .and_then(|d| self.cached_for(d, catalog))
                .filter(|hit| hit.csv_name == csv_name)
                .ok_or_else(|| StoreError::UnknownCatalog(catalog.to_string()));
        };
        let location = served
            .location(csv_name)
            .ok_or_else(|| StoreError::UnknownBundle {
                catalog: catalog.to_string(),
                csv_name: csv_name.to_string(),
            })?;
        let hit = match location.digest() {
            // What the catalog offers now is content-addressed: whoever read it, it is this.
            Some(pinned) => self.cached(pinned),
            // A tag: only what was read for this catalog is known to be what it offered.
            None => digest.and_then(|d| self.cached_for(d, catalog)),
        };
        if let Some(hit) = hit.filter(|hit| hit.csv_name == csv_name) {
            return check_digest(hit, digest);
        }
        let content = crate::fetch::fetch(&served, csv_name, &location, &self.mirrors()).await?;
        check_digest(self.keep(content, Some(catalog)), digest)
    }
}

/// What a served catalog says of one bundle ([`CatalogStore::offer`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offer {
    /// The catalog that offers it.
    pub catalog: String,
    pub package: String,
    pub version: semver::Version,
    /// Why the catalog's admin delisted it (the version or the whole package), if they did.
    pub delisted: Option<OfferDelisted>,
}

/// A delisting that covers an offered bundle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OfferDelisted {
    /// The whole package is delisted, not only this version.
    pub whole_package: bool,
    /// "version 1.0.1 of package acme-db is delisted by catalog vendor (ACME-123)".
    pub message: String,
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
