//! The cluster-scoped grants a bundle needs.

use std::collections::BTreeSet;

use windlass_api::policy::{ClusterScopedGrant, InstallModeType};

/// What a bundle brings, as far as cluster-scoped objects go.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BundleShape {
    /// Names of the CRDs it ships.
    pub crds: Vec<String>,
    /// Whether its CSV has `clusterPermissions`.
    pub cluster_permissions: bool,
    /// Whether its CSV has `permissions` (namespaced rules, cluster-wide in AllNamespaces).
    pub permissions: bool,
    /// Whether its CSV defines validating or mutating webhooks.
    pub webhooks: bool,
    /// Its other cluster-scoped manifests, as `Kind name`.
    pub other_cluster_scoped: Vec<String>,
}

/// The grants installing `shape` in `mode` needs; `delete_crds` when the Subscription asks to
/// delete the CRDs on uninstall.
pub fn needs(
    shape: &BundleShape,
    mode: InstallModeType,
    delete_crds: bool,
) -> BTreeSet<ClusterScopedGrant> {
    let mut needed = BTreeSet::new();
    if !shape.crds.is_empty() {
        needed.insert(ClusterScopedGrant::CustomResourceDefinitions);
        if delete_crds {
            needed.insert(ClusterScopedGrant::CrdDeletion);
        }
    }
    if shape.cluster_permissions || (shape.permissions && mode == InstallModeType::AllNamespaces) {
        needed.insert(ClusterScopedGrant::ClusterPermissions);
    }
    if shape.webhooks {
        needed.insert(ClusterScopedGrant::Webhooks);
    }
    if !shape.other_cluster_scoped.is_empty() {
        needed.insert(ClusterScopedGrant::OtherObjects);
    }
    needed
}

#[cfg(test)]
mod tests {
    use super::*;
    use ClusterScopedGrant::*;

    #[test]
    fn each_cluster_scoped_thing_needs_its_grant() {
        let plain = BundleShape {
            permissions: true,
            ..Default::default()
        };
        assert!(needs(&plain, InstallModeType::OwnNamespace, false).is_empty());
        // Namespaced permissions become cluster-wide when the operator watches everything.
        assert_eq!(
            needs(&plain, InstallModeType::AllNamespaces, false),
            [ClusterPermissions].into()
        );
        let full = BundleShape {
            crds: vec!["dbs.acme.dev".into()],
            cluster_permissions: true,
            permissions: true,
            webhooks: true,
            other_cluster_scoped: vec!["PriorityClass acme".into()],
        };
        assert_eq!(
            needs(&full, InstallModeType::OwnNamespace, true),
            [
                CustomResourceDefinitions,
                ClusterPermissions,
                Webhooks,
                OtherObjects,
                CrdDeletion
            ]
            .into()
        );
        // Asking to delete CRDs a bundle does not ship needs nothing.
        assert!(needs(&plain, InstallModeType::OwnNamespace, true).is_empty());
    }
}
