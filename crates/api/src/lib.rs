//! The `windlass.dev/v1alpha1` API: what users write (Subscription, Catalog), what windlass
//! records (Blueprint), what it installs (ClusterServiceVersion) and what cluster admins allow
//! (InstallPolicy) and what that lets each namespace do (InstallScope); what the catalogs offer
//! (Package); and which release of the platform the cluster runs (ClusterVersion); which keys
//! must have signed what (TrustPolicy); where a site's registries serve copies of the images
//! bundles name (ImageMirrorSet); and, in a hub cluster, which member clusters form a fleet
//! (Fleet) and one change rolled out over them in waves (Rollout).
//!
//! Short names never collide with OLM's (`csv`, `sub`, `ip`, `catsrc`, `og`), so windlass and
//! OLM can live in one cluster; every kind is in the `windlass` category (`kubectl get windlass`).

// kube's `printcolumn(...)` attributes repeat keys by design; clippy reads them as duplicates.
#![allow(clippy::duplicated_attributes)]

pub mod blueprint;
pub mod catalog;
pub mod clusterversion;
pub mod condition;
pub mod config;
pub mod csv;
pub mod fleet;
pub mod mirror;
pub mod names;
pub mod openshift;
pub mod package;
pub mod policy;
pub mod scope;
pub mod selector;
pub mod subscription;
pub mod trust;

pub use blueprint::{
    Blueprint, BlueprintBookkeeping, BlueprintIntent, BlueprintSpec, BlueprintStatus,
};
pub use catalog::{Catalog, CatalogSpec, CatalogStatus, DelistedPackage};
pub use clusterversion::{ClusterVersion, ClusterVersionSpec, ClusterVersionStatus};
pub use condition::{Condition, ConditionStatus, set_condition};
pub use config::{OperatorConfig, UpgradePolicy};
pub use csv::{
    ClusterServiceVersion, ClusterServiceVersionSpec, ClusterServiceVersionStatus, CsvPhase,
};
pub use mirror::{ImageMirrorSet, ImageMirrorSetSpec, ImageRewrite};
pub use package::{Package, PackageStatus};
pub use policy::{InstallPolicy, InstallPolicySpec};
pub use scope::{InstallGrant, InstallScope, InstallScopeStatus};
pub use subscription::{Subscription, SubscriptionSpec, SubscriptionStatus};
pub use trust::{TrustPolicy, TrustPolicySpec};

/// The API group of every windlass kind.
pub const GROUP: &str = "windlass.dev";
pub use fleet::{Fleet, FleetSpec, Rollout, RolloutSpec, RolloutStatus};
pub use names::{FIELD_MANAGER, FLEET_FIELD_MANAGER};

/// Every CRD of the API, in the order they are written to `config/crd`.
pub fn crds()
-> Vec<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>
{
    use kube::CustomResourceExt;
    vec![
        Catalog::crd(),
        Subscription::crd(),
        Blueprint::crd(),
        ClusterServiceVersion::crd(),
        InstallPolicy::crd(),
        InstallScope::crd(),
        ClusterVersion::crd(),
        TrustPolicy::crd(),
        Package::crd(),
        ImageMirrorSet::crd(),
        Fleet::crd(),
        Rollout::crd(),
    ]
}

/// The CRDs as `(file name, YAML)` pairs, exactly as `make crds` writes them to `config/crd`.
pub fn crd_files() -> Result<Vec<(String, String)>, serde_saphyr::ser::Error> {
    crds()
        .into_iter()
        .map(|crd| {
            let file = format!("{}.yaml", crd.metadata.name.as_deref().unwrap_or_default());
            let yaml = serde_saphyr::to_string(&crd)?;
            Ok((
                file,
                format!("# Generated from crates/api by `make crds`; do not edit.\n{yaml}"),
            ))
        })
        .collect()
}
