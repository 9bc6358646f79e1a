//! What delisting means for one Subscription (pure).
//!
//! - What is installed keeps running. When its catalog's admin delists the package or the
//!   version it runs, or deletes the catalog it came from, the Subscription says `Delisted`
//!   and its Blueprint keeps its target: no upgrades, and rollbacks still restore the stored
//!   revisions. Removing the entry (or creating the catalog again) resumes upgrades.
//! - Upgrades pass over delisted versions: they are not in what the Subscription resolves
//!   against.
//! - A new Subscription to a delisted package, or to a delisted `startingCSV`, is refused,
//!   naming the catalog and why.

use std::collections::BTreeMap;

use windlass_api::{
    blueprint::ResolvedBundle,
    names::reasons::{delisting as reasons, resolution},
    subscription::SubscriptionSpec,
};
use windlass_catalog::listing::{Delisting, parse_version};
use windlass_catalog_store::DelistedBy;

use crate::resolution::ResolutionFailure;

/// A Subscription whose package or version is no longer offered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delisted {
    /// `PackageDelisted`, `VersionDelisted` or `CatalogRemoved`.
    pub reason: &'static str,
    pub message: String,
}

impl Delisted {
    /// The resolution failure it stands for (`ResolutionSucceeded=False`, reason `Delisted`).
    pub fn failure(&self) -> ResolutionFailure {
        ResolutionFailure::new(resolution::DELISTED, self.message.clone())
    }
}

/// What is known of the catalog an installed bundle came from.
#[derive(Clone, Copy, Debug)]
pub enum Source<'a> {
    /// Served, with what its spec delists.
    Served(&'a Delisting),
    /// No Catalog of that name exists any more.
    Removed,
    /// The Catalog exists but nothing is served from it (not read yet, or unreachable):
    /// resolution says what is wrong.
    NotServed,
}

/// Whether the installed bundle (the Blueprint's target) is delisted by the catalog it came
/// from. A Subscription that names another catalog than the one it was installed from is
/// moving there, and is judged by resolution instead.
pub fn installed(
    spec: &SubscriptionSpec,
    bundle: &ResolvedBundle,
    source: Source<'_>,
) -> Option<Delisted> {
    let catalog = bundle.catalog.as_deref()?;
    if spec.catalog.as_deref().is_some_and(|c| c != catalog) {
        return None;
    }
    let csv = &bundle.cluster_service_version_name;
    let keeps = format!(
        "{csv} keeps running; it gets no upgrades, and `windlass rollback` still restores its stored revisions"
    );
    match source {
        Source::Removed => Some(Delisted {
            reason: reasons::CATALOG_REMOVED,
            message: format!(
                "catalog {catalog}, which {csv} was installed from, was deleted; {keeps}. Create the catalog again, or set spec.catalog to another catalog that offers package {}, to resume upgrades",
                bundle.package
            ),
        }),
        Source::NotServed => None,
        Source::Served(delisting) => {
            let resume = format!(
                "removing package {} from spec.delisted of Catalog {catalog} resumes upgrades",
                bundle.package
            );
            if let Some(whole) = delisting.whole(&bundle.package) {
                return Some(Delisted {
                    reason: reasons::PACKAGE_DELISTED,
                    message: format!("{}; {keeps}; {resume}", whole.by(catalog)),
                });
            }
            let version = parse_version(&bundle.version).ok()?;
            let covering = delisting.covering(&bundle.package, &version)?;
            Some(Delisted {
                reason: reasons::VERSION_DELISTED,
                message: format!("{}; {keeps}; {resume}", covering.by(catalog)),
            })
        }
    }
}

/// Whether a Subscription that has installed nothing yet asks for something delisted: the
/// whole package (and no other catalog offers it), or its `startingCSV`.
pub fn refused(
    spec: &SubscriptionSpec,
    delisted: &BTreeMap<String, DelistedBy>,
) -> Option<Delisted> {
    let by = delisted.get(&spec.package)?;
    let refusal = |reason, what: String| Delisted {
        reason,
        message: format!(
            "{what}; new Subscriptions cannot install it (Catalog {} lists it in spec.delisted)",
            by.catalog
        ),
    };
    if by.versions.is_empty() {
        return Some(refusal(
            reasons::PACKAGE_DELISTED,
            by.describe(&spec.package),
        ));
    }
    let starting = spec.starting_csv.as_deref()?;
    by.bundles.iter().any(|b| b == starting).then(|| {
        refusal(
            reasons::VERSION_DELISTED,
            format!(
                "spec.startingCSV {starting}: {}",
                by.describe(&spec.package)
            ),
        )
    })
}

/// A resolution failure with what delisting took out of the package said too, so "nothing
/// satisfies the range" tells why.
pub fn explain(
    failure: ResolutionFailure,
    spec: &SubscriptionSpec,
    delisted: &BTreeMap<String, DelistedBy>,
) -> ResolutionFailure {
    match delisted.get(&spec.package) {
        Some(by) if !by.versions.is_empty() => ResolutionFailure {
            message: format!("{}; {}", failure.message, by.describe(&spec.package)),
            ..failure
        },
        _ => failure,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(catalog: Option<&str>, starting: Option<&str>) -> SubscriptionSpec {
        SubscriptionSpec {
            package: "acme-db".into(),
            catalog: catalog.map(String::from),
            starting_csv: starting.map(String::from),
            ..Default::default()
        }
    }

    fn bundle(version: &str, catalog: &str) -> ResolvedBundle {
        ResolvedBundle {
            package: "acme-db".into(),
            cluster_service_version_name: format!("acme-db.v{version}"),
            version: version.into(),
            catalog: Some(catalog.into()),
            ..Default::default()
        }
    }

    fn delisting(versions: &[&str], reason: &str) -> Delisting {
        let versions: Vec<String> = versions.iter().map(|v| v.to_string()).collect();
        Delisting::from_entries([("acme-db", versions.as_slice(), reason)]).0
    }

    #[test]
    fn an_install_is_delisted_by_its_own_catalog_only() {
        let none = Delisting::default();
        let whole = delisting(&[], "end of support");
        let its_version = delisting(&["1.0.1"], "CVE-1");
        let another_version = delisting(&["1.1.0"], "CVE-2");
        let installed_from =
            |source| installed(&spec(None, None), &bundle("1.0.1", "vendor"), source);

        assert_eq!(installed_from(Source::Served(&none)), None);
        assert_eq!(installed_from(Source::Served(&another_version)), None);
        assert_eq!(installed_from(Source::NotServed), None);

        let package = installed_from(Source::Served(&whole)).unwrap();
        assert_eq!(package.reason, reasons::PACKAGE_DELISTED);
        assert!(
            package.message.starts_with(
                "package acme-db is delisted by catalog vendor (end of support); acme-db.v1.0.1 keeps running"
            ),
            "{}",
            package.message
        );
        assert!(
            package
                .message
                .contains("spec.delisted of Catalog vendor resumes upgrades")
        );

        let version = installed_from(Source::Served(&its_version)).unwrap();
        assert_eq!(version.reason, reasons::VERSION_DELISTED);
        assert!(
            version.message.starts_with(
                "version 1.0.1 of package acme-db is delisted by catalog vendor (CVE-1)"
            )
        );

        let removed = installed_from(Source::Removed).unwrap();
        assert_eq!(removed.reason, reasons::CATALOG_REMOVED);
        assert!(
            removed.message.starts_with(
                "catalog vendor, which acme-db.v1.0.1 was installed from, was deleted"
            ),
            "{}",
            removed.message
        );
        assert_eq!(removed.failure().reason, resolution::DELISTED);

        // Moving to another catalog: resolution decides there.
        let moving = installed(
            &spec(Some("community"), None),
            &bundle("1.0.1", "vendor"),
            Source::Removed,
        );
        assert_eq!(moving, None);
    }

    fn delisted_by(versions: &[&str], bundles: &[&str]) -> BTreeMap<String, DelistedBy> {
        BTreeMap::from([(
            "acme-db".to_string(),
            DelistedBy {
                catalog: "vendor".into(),
                versions: versions
                    .iter()
                    .map(|v| semver::Version::parse(v).unwrap())
                    .collect(),
                bundles: bundles.iter().map(|b| b.to_string()).collect(),
                reason: "retired".into(),
            },
        )])
    }

    #[test]
    fn new_subscriptions_to_delisted_packages_or_starting_csvs_are_refused() {
        let whole = delisted_by(&[], &["acme-db.v1.0.0", "acme-db.v1.0.1"]);
        let refusal = refused(&spec(None, None), &whole).unwrap();
        assert_eq!(refusal.reason, reasons::PACKAGE_DELISTED);
        assert_eq!(
            refusal.message,
            "package acme-db is delisted by catalog vendor (retired); new Subscriptions cannot install it (Catalog vendor lists it in spec.delisted)"
        );

        let one = delisted_by(&["1.0.1"], &["acme-db.v1.0.1"]);
        assert_eq!(refused(&spec(None, None), &one), None);
        assert_eq!(refused(&spec(None, Some("acme-db.v1.0.0")), &one), None);
        let starting = refused(&spec(None, Some("acme-db.v1.0.1")), &one).unwrap();
        assert_eq!(starting.reason, reasons::VERSION_DELISTED);
        assert!(starting.message.starts_with("spec.startingCSV acme-db.v1.0.1: version 1.0.1 of package acme-db is delisted by catalog vendor"));
        assert_eq!(refused(&spec(None, None), &BTreeMap::new()), None);

        let failure = ResolutionFailure::new("SubscriptionUnsatisfiable", "nothing in range");
        assert_eq!(
            explain(failure.clone(), &spec(None, None), &one).message,
            "nothing in range; version 1.0.1 of package acme-db is delisted by catalog vendor (retired)"
        );
        assert_eq!(
            explain(failure.clone(), &spec(None, None), &BTreeMap::new()),
            failure
        );
    }
}
