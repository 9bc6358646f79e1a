//! Reading a Catalog's content from where its spec says it lives: the built-in catalog, a
//! file-based-catalog image, or a list of bundle images.

use std::{collections::BTreeMap, sync::Arc};

use futures::{StreamExt, TryStreamExt};
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;
use windlass_api::catalog::{CatalogSource, CatalogSourceType};
use windlass_bundle::FileTree;
use windlass_catalog::{
    Catalog,
    fbc::{CONFIGS_LABEL, read_tree_owned},
    listing::{Delisting, Listing, gate_with},
    load::read_images,
};
use windlass_oci::{self as oci, OciError, RegistryOptions};

use crate::{
    builtin::{BuiltinCatalog, BuiltinError},
    credentials::{Credentials, auth_for},
};
use windlass_api::names::reasons::catalog as reasons;
use windlass_catalog_store::{
    BundleContent, BundleLocation, CatalogStore, ListingState, Mirrored, ServedCatalog,
    Verification, first_reachable,
};
use windlass_kit::TrustGate;
use windlass_mirror::MirrorRules;
use windlass_trust::{Artifact, ArtifactClass, Decision};

/// Bundle images pulled at once.
const PARALLEL_PULLS: usize = 4;

/// Why a catalog's content could not be read. Every variant names the image concerned.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("spec.source.image is empty: a catalog of type Image needs a file-based-catalog image")]
    NoImage,
    #[error(
        "spec.source.bundleImages is empty: a catalog of type BundleImages needs at least one image"
    )]
    NoBundleImages,
    #[error("pull secret {namespace}/{name}: {message}")]
    PullSecret {
        namespace: String,
        name: String,
        message: String,
    },
    #[error("pulling {image}: {source}")]
    Pull {
        image: String,
        source: Box<OciError>,
    },
    #[error("{image} is not a usable catalog: {message}")]
    Invalid { image: String, message: String },
    #[error(transparent)]
    Builtin(Box<BuiltinError>),
    #[error("{image} ({digest}) is refused by the trust policy: {message}")]
    Untrusted {
        image: String,
        digest: String,
        message: String,
    },
    #[error("{image}: the signatures could not be checked: {message}")]
    Verification { image: String, message: String },
}

impl From<BuiltinError> for SourceError {
    fn from(error: BuiltinError) -> SourceError {
        SourceError::Builtin(Box::new(error))
    }
}

impl SourceError {
    /// A stable label for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            SourceError::NoImage | SourceError::NoBundleImages => "invalid_spec",
            SourceError::PullSecret { .. } => "pull_secret",
            SourceError::Pull { .. } => "pull",
            SourceError::Invalid { .. } => "invalid_content",
            SourceError::Builtin(_) => "builtin",
            SourceError::Untrusted { .. } => "untrusted",
            SourceError::Verification { .. } => "verification",
        }
    }

    /// The `Serving` condition's reason.
    pub fn reason(&self) -> &'static str {
        match self {
            SourceError::NoImage | SourceError::NoBundleImages => "InvalidSpec",
            SourceError::PullSecret { .. } => "PullSecretUnavailable",
            SourceError::Pull { .. } => "PullFailed",
            SourceError::Invalid { .. } | SourceError::Builtin(_) => "InvalidContent",
            SourceError::Untrusted { .. } => reasons::VERIFICATION_FAILED,
            SourceError::Verification { .. } => reasons::VERIFICATION_ERROR,
        }
    }

    /// A pull error, classified: content the registry served but that is no catalog is
    /// invalid content, everything else a failed pull.
    fn pull(image: &str, error: OciError) -> SourceError {
        match error {
            OciError::Bundle(_)
            | OciError::UnknownMediaType { .. }
            | OciError::Unpack { .. }
            | OciError::TooLarge { .. }
            | OciError::LargerThanDeclared { .. } => SourceError::Invalid {
                image: image.into(),
                message: error.to_string(),
            },
            other => SourceError::Pull {
                image: image.into(),
                source: Box::new(other),
            },
        }
    }
}

/// A catalog's content as one read produced it, ready to serve.
#[derive(Clone, Debug)]
pub struct Content {
    /// The image manifest digest (Image), a digest over the bundle images' manifest digests
    /// (BundleImages) or over the embedded files (BuiltIn).
    pub digest: String,
    pub catalog: Arc<Catalog>,
    /// Where each bundle lives, by CSV name, when that is not the image its catalog entry
    /// names (see [`ServedCatalog::location`]).
    pub bundles: Arc<BTreeMap<String, BundleLocation>>,
    /// Bundles the catalog lists without an image: offered, but they cannot be installed.
    pub without_image: Vec<String>,
    /// What the signature check of the catalog image found (`None`: not an image, or read
    /// without checking).
    pub verification: Option<Verification>,
    /// What the listing gate held back (the delisting is the Catalog spec's, added when
    /// served).
    pub listing: ListingState,
    /// The mirror the catalog image was read from, when an ImageMirrorSet sent it there.
    pub pulled_from: Option<Mirrored>,
}

impl Content {
    /// Where a bundle's content lives (see [`ServedCatalog::location`]).
    pub fn location(&self, csv_name: &str) -> Option<BundleLocation> {
        windlass_catalog_store::location_in(&self.catalog, &self.bundles, csv_name)
    }

    /// What passed the listing gate, ready to be located and served.
    fn gated(listing: Listing) -> Content {
        Content {
            digest: String::new(),
            catalog: Arc::new(listing.catalog),
            bundles: Arc::default(),
            without_image: Vec::new(),
            verification: None,
            listing: ListingState {
                held_back: listing.held_back,
                problems: listing.problems,
                delisting: Delisting::default(),
            },
            pulled_from: None,
        }
    }

    /// Content served before, read again unchanged: shared, not copied.
    pub fn reuse(previous: &ServedCatalog) -> Content {
        Content {
            digest: previous.digest.clone(),
            catalog: previous.catalog.clone(),
            bundles: previous.bundles.clone(),
            without_image: previous.without_location().map(str::to_string).collect(),
            verification: previous.verification.clone(),
            listing: previous.listing.clone(),
            pulled_from: previous.pulled_from.clone(),
        }
    }

    /// The content as the store serves it for Catalog `name`, with what its spec delists.
    pub fn serve_as(
        self,
        name: &str,
        priority: i32,
        source: &CatalogSource,
        credentials: Credentials,
        delisting: Delisting,
    ) -> ServedCatalog {
        let mut listing = self.listing;
        listing.delisting = delisting;
        ServedCatalog {
            name: name.to_string(),
            priority,
            digest: self.digest,
            catalog: self.catalog,
            bundles: self.bundles,
            registry: RegistryOptions {
                plain_http: source.plain_http,
                ..Default::default()
            },
            credentials,
            verification: self.verification,
            listing,
            pulled_from: self.pulled_from,
        }
    }
}

/// `repo@sha256:...` for a pulled image, so the catalog names exactly what was read.
pub fn pinned(reference: &str, digest: &str) -> String {
    let name = reference.split('@').next().unwrap_or(reference);
    match oci::parse_reference(name) {
        Ok(parsed) => format!("{}/{}@{digest}", parsed.registry(), parsed.repository()),
        Err(_) => format!("{name}@{digest}"),
    }
}

/// `sha256:<hex>` over manifest digests, sorted (the order images are listed in does not
/// matter).
pub fn digest_of_digests<'a>(digests: impl IntoIterator<Item = &'a str>) -> String {
    let mut sorted: Vec<&str> = digests.into_iter().collect();
    sorted.sort_unstable();
    let mut hasher = Sha256::new();
    for digest in sorted {
        hasher.update(digest.as_bytes());
        hasher.update(b"\n");
    }
    format!("sha256:{:x}", hasher.finalize())
}

/// Content where nothing passed the listing gate is refused (the last good content stays
/// served), with the first reasons.
fn refuse_empty(listing: &Listing, image: &str) -> Result<(), SourceError> {
    if !listing.catalog.packages.is_empty() {
        return Ok(());
    }
    let reasons: Vec<String> = listing
        .problems
        .iter()
        .cloned()
        .chain(
            listing
                .held_back
                .iter()
                .map(|h| format!("{} held back: {}", h.bundle, h.findings.join("; "))),
        )
        .take(3)
        .collect();
    let message = if reasons.is_empty() {
        "no packages".to_string()
    } else {
        format!("nothing passed the listing gate: {}", reasons.join("; "))
    };
    Err(SourceError::Invalid {
        image: image.into(),
        message,
    })
}

/// Parses the file-based catalog in a pulled catalog image's files: the folder the
/// `operators.operatorframework.io.index.configs.v1` label names, else `configs/` when there
/// is one, else the whole tree. Bundle locations are the `olm.bundle` blobs' `image` fields.
/// Only what passes the listing gate is offered; `previous` is what was offered before.
pub fn read_fbc(
    files: FileTree,
    labels: &BTreeMap<String, String>,
    image: &str,
    previous: Option<&Catalog>,
) -> Result<Content, SourceError> {
    let dir = match labels.get(CONFIGS_LABEL) {
        Some(dir) => dir.as_str(),
        None if files.under("configs").next().is_some() => "configs",
        None => "",
    };
    let invalid = |message: String| SourceError::Invalid {
        image: image.into(),
        message,
    };
    let dir = dir.to_string();
    // The raw files go as they are read: a large catalog is never held twice.
    let loaded = read_tree_owned(files, &dir, image).map_err(|e| invalid(e.to_string()))?;
    if loaded.catalog.packages.is_empty() && loaded.issues.is_empty() {
        return Err(invalid(format!(
            "no file-based-catalog packages under /{}",
            dir.trim_matches('/')
        )));
    }
    let listing = gate_with(loaded, previous);
    refuse_empty(&listing, image)?;
    let mut content = Content::gated(listing);
    // Each bundle is served from the image its entry names; no second map of them is kept.
    content.without_image = content
        .catalog
        .packages
        .values()
        .flat_map(|p| p.bundles.values())
        .filter(|b| b.image.is_none())
        .map(|b| b.name.clone())
        .collect();
    Ok(content)
}

/// Reads a file-based-catalog image, through the site's mirrors (`rules`): its manifest
/// digest is read first (one request) from the first place that answers and, with `trust`,
/// checked against the trust policies before anything of it is used; when that digest is the
/// one `previous` was read at, that content is reused without downloading the image again. A
/// new digest is pulled by digest from the same place, so what is served is what was checked.
/// `options` gives how to reach each registry (plain HTTP, its credentials).
pub async fn read_image(
    reference: &str,
    options: impl Fn(&str) -> RegistryOptions,
    rules: &MirrorRules,
    previous: Option<&ServedCatalog>,
    trust: Option<&TrustGate>,
) -> Result<Content, SourceError> {
    let options = &options;
    let (digest, from) = first_reachable(rules, reference, |place| async move {
        oci::resolve_digest(&place, &options(&place)).await
    })
    .await
    .map_err(|e| SourceError::pull(reference, e))?;
    let place = from
        .as_ref()
        .map_or(reference, |mirrored| mirrored.reference.as_str());
    let verification = match trust {
        Some(trust) => Some(check_image(trust, reference, place, &digest, &options(place)).await?),
        None => None,
    };
    if let Some(previous) = previous
        && digest == previous.digest
    {
        let mut content = Content::reuse(previous);
        content.verification = verification;
        content.pulled_from = from;
        return Ok(content);
    }
    let by_digest = pinned(place, &digest);
    let pulled = oci::pull(&by_digest, &options(place))
        .await
        .map_err(|e| SourceError::pull(reference, e))?;
    let (files, labels) = (pulled.files, pulled.labels);
    let image = reference.to_string();
    let offered = previous.map(|p| p.catalog.clone());
    let mut content =
        tokio::task::spawn_blocking(move || read_fbc(files, &labels, &image, offered.as_deref()))
            .await
            .map_err(|e| SourceError::Invalid {
                image: reference.into(),
                message: format!("reading the catalog: {e}"),
            })??;
    content.digest = pulled.digest;
    content.verification = verification;
    content.pulled_from = from;
    Ok(content)
}

/// Checks the catalog image `reference` at `digest`, read from `place` (the reference itself
/// or a mirror of it), against the trust policies: what may be served, or why not.
async fn check_image(
    trust: &TrustGate,
    reference: &str,
    place: &str,
    digest: &str,
    options: &RegistryOptions,
) -> Result<Verification, SourceError> {
    let artifact = Artifact {
        reference: reference.to_string(),
        digest: digest.to_string(),
        class: ArtifactClass::Catalog,
    };
    let mirror = (place != reference).then_some(place);
    let verdict = trust
        .verify_mirrored(&artifact, mirror, options)
        .await
        .map_err(|message| SourceError::Verification {
            image: reference.into(),
            message,
        })?;
    let summary = match verdict.decision {
        Decision::Refused => {
            return Err(SourceError::Untrusted {
                image: reference.into(),
                digest: digest.into(),
                message: verdict.reasons.join("; "),
            });
        }
        Decision::Verified => format!("signed by {}", verdict.verified_by.join(", ")),
        Decision::UnsignedReported | Decision::NotCovered => verdict.reasons.join("; "),
    };
    Ok(Verification {
        verified: verdict.verified,
        covered: verdict.decision != Decision::NotCovered,
        verified_by: verdict.verified_by,
        summary,
    })
}

/// One bundle image, through the site's mirrors: from the store's cache when the first place
/// that answers still serves a digest pulled before (one HEAD request for the manifest
/// digest), otherwise pulled by that digest from there.
async fn bundle_image(
    reference: &str,
    options: &(impl Fn(&str) -> RegistryOptions + Sync),
    rules: &MirrorRules,
    store: &CatalogStore,
) -> Result<Pulled, SourceError> {
    let (digest, from) = first_reachable(rules, reference, |place| async move {
        oci::resolve_digest(&place, &options(&place)).await
    })
    .await
    .map_err(|e| SourceError::pull(reference, e))?;
    if let Some(cached) = store.cached(&digest) {
        return Ok(Pulled {
            bundle: cached.bundle.clone(),
            digest,
            fresh: false,
            from,
        });
    }
    let place = from
        .as_ref()
        .map_or(reference, |mirrored| mirrored.reference.as_str());
    let (bundle, pulled) = oci::pull_bundle(&pinned(place, &digest), &options(place))
        .await
        .map_err(|e| SourceError::pull(reference, e))?;
    Ok(Pulled {
        bundle,
        digest: pulled.digest,
        fresh: true,
        from,
    })
}

/// A bundle image as read for a catalog.
struct Pulled {
    bundle: windlass_bundle::Bundle,
    digest: String,
    /// Pulled now (not found in the store's cache).
    fresh: bool,
    from: Option<Mirrored>,
}

/// Pulls every bundle image (a few at a time) and groups them into packages. Each bundle is
/// served from its image pinned by digest, and its pulled content goes straight into the
/// store's cache, so an install does not pull it again. Only bundles that pass the listing
/// gate are offered; two references to the same content (tags of one digest) count once.
pub async fn read_bundle_images(
    references: &[String],
    options: impl Fn(&str) -> RegistryOptions + Sync,
    rules: &MirrorRules,
    store: &CatalogStore,
    previous: Option<&Catalog>,
) -> Result<Content, SourceError> {
    let mut unique: Vec<String> = Vec::new();
    for reference in references {
        if !unique.contains(reference) {
            unique.push(reference.clone());
        }
    }
    let options = &options;
    let pulls = unique.into_iter().map(|reference| async move {
        let pulled = bundle_image(&reference, options, rules, store).await?;
        Ok::<_, SourceError>((reference, pulled))
    });
    let pulled: Vec<_> = futures::stream::iter(pulls)
        .buffered(PARALLEL_PULLS)
        .try_collect()
        .await?;
    let digest = digest_of_digests(pulled.iter().map(|(_, p)| p.digest.as_str()));
    let mut images = Vec::new();
    let mut fresh_content = Vec::new();
    let mut seen_digests = std::collections::BTreeSet::new();
    for (reference, pulled) in pulled {
        let Pulled {
            bundle,
            digest: manifest_digest,
            fresh,
            from,
        } = pulled;
        if !seen_digests.insert(manifest_digest.clone()) {
            continue;
        }
        // Served under the name the catalog gives it; mirrors apply whenever it is read.
        let pinned = pinned(&reference, &manifest_digest);
        if fresh {
            let version = bundle.csv.version().map_err(|e| SourceError::Invalid {
                image: reference.clone(),
                message: e.to_string(),
            })?;
            fresh_content.push(BundleContent {
                package: bundle.package().unwrap_or_default().to_string(),
                csv_name: bundle.csv.name().to_string(),
                version,
                digest: manifest_digest,
                image: Some(pinned.clone()),
                pulled_from: from,
                bundle: bundle.clone(),
            });
        }
        images.push((bundle, pinned));
    }
    let loaded = read_images(images).map_err(|e| SourceError::Invalid {
        image: "bundle images".into(),
        message: e.to_string(),
    })?;
    let listing = gate_with(loaded, previous);
    refuse_empty(&listing, "bundle images")?;
    let mut content = Content::gated(listing);
    let bundles: BTreeMap<String, BundleLocation> = content
        .catalog
        .packages
        .values()
        .flat_map(|p| p.bundles.values())
        .filter_map(|b| {
            let reference = b.image.clone()?;
            Some((b.name.clone(), BundleLocation::Image { reference }))
        })
        .collect();
    // Only content that is offered is kept for installs.
    for fresh in fresh_content {
        let offered = bundles
            .get(&fresh.csv_name)
            .and_then(BundleLocation::digest)
            == Some(fresh.digest.as_str());
        if offered {
            store.remember(fresh);
        }
    }
    content.digest = digest;
    content.bundles = Arc::new(bundles);
    Ok(content)
}

/// Reads catalogs. Holds the built-in catalog once it was first needed (its folder lives as
/// long as the reader).
#[derive(Default)]
pub struct Reader {
    builtin: OnceCell<Arc<BuiltinCatalog>>,
    /// Checks catalog images' signatures before they are served.
    trust: Option<Arc<TrustGate>>,
}

impl Reader {
    /// A reader that serves what it reads without checking signatures.
    pub fn new() -> Reader {
        Reader::default()
    }

    /// A reader that serves a catalog image only when the trust policies let it through.
    pub fn checking_signatures(trust: Arc<TrustGate>) -> Reader {
        Reader {
            builtin: OnceCell::new(),
            trust: Some(trust),
        }
    }

    /// The built-in catalog, written out and read on first use.
    pub async fn builtin(&self) -> Result<Arc<BuiltinCatalog>, SourceError> {
        self.builtin
            .get_or_try_init(|| async {
                tokio::task::spawn_blocking(BuiltinCatalog::materialize)
                    .await
                    .map_err(|e| SourceError::Invalid {
                        image: "the built-in catalog".into(),
                        message: e.to_string(),
                    })?
                    .map(Arc::new)
                    .map_err(SourceError::from)
            })
            .await
            .cloned()
    }

    /// Reads what `source` points at for Catalog `name` (what the store serves for it now
    /// is reused when the registry says it is unchanged).
    pub async fn read(
        &self,
        name: &str,
        source: &CatalogSource,
        credentials: &Credentials,
        store: &CatalogStore,
    ) -> Result<Content, SourceError> {
        let options = |reference: &str| RegistryOptions {
            plain_http: source.plain_http,
            auth: auth_for(credentials, reference),
            ..Default::default()
        };
        match source.type_ {
            CatalogSourceType::BuiltIn => {
                let builtin = self.builtin().await?;
                Ok(Content {
                    digest: builtin.digest.clone(),
                    catalog: builtin.catalog.clone(),
                    bundles: builtin.bundles.clone(),
                    without_image: Vec::new(),
                    verification: None,
                    listing: builtin.listing.clone(),
                    pulled_from: None,
                })
            }
            CatalogSourceType::Image => {
                let image = source
                    .image
                    .as_deref()
                    .filter(|i| !i.trim().is_empty())
                    .ok_or(SourceError::NoImage)?;
                read_image(
                    image,
                    options,
                    &store.mirrors(),
                    store.get(name).as_deref(),
                    self.trust.as_deref(),
                )
                .await
            }
            CatalogSourceType::BundleImages => {
                if source.bundle_images.is_empty() {
                    return Err(SourceError::NoBundleImages);
                }
                let previous = store.get(name);
                read_bundle_images(
                    &source.bundle_images,
                    options,
                    &store.mirrors(),
                    store,
                    previous.as_ref().map(|p| &*p.catalog),
                )
                .await
            }
        }
    }

    /// Reads a catalog and serves it under `name`. When the read fails, the content served
    /// before stays served (at the new priority, with the new delisting) and the error is
    /// returned.
    pub async fn poll(
        &self,
        name: &str,
        spec: &windlass_api::CatalogSpec,
        credentials: &Credentials,
        store: &CatalogStore,
    ) -> Result<Arc<ServedCatalog>, SourceError> {
        let delisting = delisting(spec).0;
        match self.read(name, &spec.source, credentials, store).await {
            Ok(content) => {
                store.serve(content.serve_as(
                    name,
                    spec.priority,
                    &spec.source,
                    credentials.clone(),
                    delisting,
                ));
                Ok(store.get(name).expect("just served"))
            }
            Err(error @ SourceError::Untrusted { .. }) => {
                self.withdraw_unless_trusted(name, &spec.source, credentials, store)
                    .await;
                keep_serving(store, name, spec.priority, &delisting);
                Err(error)
            }
            Err(error) => {
                keep_serving(store, name, spec.priority, &delisting);
                Err(error)
            }
        }
    }
}

impl Reader {
    /// After the image was refused: the content served before stays only while its own digest
    /// still passes the trust policies (a policy written since may refuse it too).
    async fn withdraw_unless_trusted(
        &self,
        name: &str,
        source: &CatalogSource,
        credentials: &Credentials,
        store: &CatalogStore,
    ) {
        let (Some(trust), Some(previous), Some(image)) =
            (&self.trust, store.get(name), source.image.as_deref())
        else {
            return;
        };
        let options = RegistryOptions {
            plain_http: source.plain_http,
            auth: auth_for(credentials, image),
            ..Default::default()
        };
        let served = pinned(image, &previous.digest);
        let place = previous
            .pulled_from
            .as_ref()
            .map_or(served.clone(), |mirrored| {
                pinned(&mirrored.reference, &previous.digest)
            });
        let options = RegistryOptions {
            auth: auth_for(credentials, &place),
            ..options
        };
        match check_image(trust, &served, &place, &previous.digest, &options).await {
            Ok(verification) => {
                if previous.verification.as_ref() != Some(&verification) {
                    let mut again = (*previous).clone();
                    again.verification = Some(verification);
                    store.serve(again);
                }
            }
            Err(error) => {
                tracing::warn!(catalog = name, %error, "withdrawing the content served before");
                store.remove(name);
            }
        }
    }
}

/// What a Catalog's spec delists, and what is wrong with how it says it.
pub fn delisting(
    spec: &windlass_api::CatalogSpec,
) -> (Delisting, Vec<windlass_catalog::listing::DelistingProblem>) {
    Delisting::from_entries(spec.delisted.iter().map(|d| {
        (
            d.package.as_str(),
            d.versions.as_slice(),
            d.reason.as_deref().unwrap_or_default(),
        )
    }))
}

/// Content served before stays served, at the priority and with the delisting the spec asks
/// for now (after a failed read, or when only those changed).
pub fn keep_serving(store: &CatalogStore, name: &str, priority: i32, delisting: &Delisting) {
    if let Some(old) = store.get(name)
        && (old.priority != priority || &old.listing.delisting != delisting)
    {
        let mut again = (*old).clone();
        again.priority = priority;
        again.listing.delisting = delisting.clone();
        store.serve(again);
    }
}

#[cfg(test)]
#[path = "source_tests.rs"]
mod tests;
