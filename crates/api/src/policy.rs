//! InstallPolicy: what the operators installed in some namespaces may do (cluster-scoped,
//! written by cluster admins).
//!
//! Without a policy, a namespace's Subscriptions get OwnNamespace installs of namespaced
//! objects only, applied as the namespace's install ServiceAccount, so the API server refuses
//! whatever that account could not create or grant itself. A policy widens that for the
//! namespaces it selects; when several select one namespace, the first (by name) that permits
//! an install wins.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What operators installed in the selected namespaces may do, and as whom they are installed.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "windlass.dev",
    version = "v1alpha1",
    kind = "InstallPolicy",
    shortname = "wpol",
    category = "windlass",
    doc = "What operators installed in the selected namespaces may do, and as whom they are installed (cluster admins write these).",
    printcolumn(name = "Namespaces", type_ = "string", json_path = ".spec.namespaces"),
    printcolumn(
        name = "Selector",
        type_ = "string",
        json_path = ".spec.namespaceSelector.matchLabels"
    ),
    printcolumn(name = "Trusted", type_ = "boolean", json_path = ".spec.trusted"),
    printcolumn(
        name = "Install Modes",
        type_ = "string",
        json_path = ".spec.installModes"
    ),
    printcolumn(
        name = "Cluster Scoped",
        type_ = "string",
        json_path = ".spec.clusterScoped"
    ),
    printcolumn(
        name = "Packages",
        type_ = "string",
        json_path = ".spec.packages",
        priority = "1"
    ),
    printcolumn(
        name = "Catalogs",
        type_ = "string",
        json_path = ".spec.catalogs",
        priority = "1"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct InstallPolicySpec {
    /// Namespaces this policy applies to, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// Namespaces this policy applies to, by label (in addition to `namespaces`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// Install with the manager's own identity instead of the namespace's install
    /// ServiceAccount: for namespaces only cluster admins can write to (the platform's own).
    /// What else the namespace may do is still only what this policy grants.
    #[serde(default)]
    pub trusted: bool,
    /// The install ServiceAccount in these namespaces when a Subscription names none
    /// (default `windlass-installer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Catalogs these namespaces may install from (empty: any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub catalogs: Vec<String>,
    /// Packages these namespaces may install (empty: any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<String>,
    /// Install modes allowed besides OwnNamespace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub install_modes: Vec<InstallModeType>,
    /// Namespaces an operator here may watch besides its own (SingleNamespace and
    /// MultiNamespace installs); its RoleBindings there are still created as the install
    /// ServiceAccount, so that account needs rights there too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_namespaces: Vec<String>,
    /// Cluster-scoped objects operators here may have created for them (by the manager).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_scoped: Vec<ClusterScopedGrant>,
    /// What happens to a running install when this policy stops granting what it was
    /// installed with (the policy is narrowed, or deleted: then the choice recorded when the
    /// install was permitted holds). `Withdraw` (the default) removes the cluster-scoped
    /// objects no longer granted; `Hold` keeps what runs as it is, and no new revision is
    /// installed until a policy grants it again.
    #[serde(default, skip_serializing_if = "Revocation::is_default")]
    pub revocation: Revocation,
}

/// See [`InstallPolicySpec::revocation`].
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
pub enum Revocation {
    /// Remove the ClusterRoles, ClusterRoleBindings, webhook configurations and other
    /// cluster-scoped objects no longer granted (CRDs stay: they hold every namespace's data).
    /// The default, because revoking a grant is a decision to take a power away: leaving it in
    /// place would make deleting a policy a no-op for what it already granted.
    #[default]
    Withdraw,
    /// Keep what was granted until a policy grants it again or the operator is uninstalled;
    /// for operators whose outage costs more than the grant.
    Hold,
}

impl Revocation {
    pub fn is_default(&self) -> bool {
        *self == Revocation::Withdraw
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Revocation::Withdraw => "Withdraw",
            Revocation::Hold => "Hold",
        }
    }
}

/// OLM's install modes: which namespaces an operator may watch.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub enum InstallModeType {
    /// Its own namespace only (always allowed).
    OwnNamespace,
    /// One other namespace.
    SingleNamespace,
    /// Several namespaces.
    MultiNamespace,
    /// Every namespace: its permissions become cluster-wide.
    AllNamespaces,
}

impl std::fmt::Display for InstallModeType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl InstallModeType {
    pub fn as_str(self) -> &'static str {
        match self {
            InstallModeType::OwnNamespace => "OwnNamespace",
            InstallModeType::SingleNamespace => "SingleNamespace",
            InstallModeType::MultiNamespace => "MultiNamespace",
            InstallModeType::AllNamespaces => "AllNamespaces",
        }
    }
}

/// A class of cluster-scoped objects a bundle may bring.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub enum ClusterScopedGrant {
    /// The bundle's CustomResourceDefinitions (shared by every namespace: collision
    /// protection still applies).
    CustomResourceDefinitions,
    /// ClusterRoles and ClusterRoleBindings from the CSV's `clusterPermissions` (and from
    /// `permissions` in an AllNamespaces install).
    ClusterPermissions,
    /// Validating and mutating webhook configurations.
    Webhooks,
    /// Any other cluster-scoped manifest of the bundle.
    OtherObjects,
    /// Deleting the bundle's CRDs (and every custom resource of them, in every namespace)
    /// when the Subscription asks for `crdDeletionPolicy: Delete`.
    CrdDeletion,
    /// Taking over a CRD that something else manages (Helm, a person, another package).
    CrdAdoption,
}

impl ClusterScopedGrant {
    pub fn as_str(self) -> &'static str {
        match self {
            ClusterScopedGrant::CustomResourceDefinitions => "CustomResourceDefinitions",
            ClusterScopedGrant::ClusterPermissions => "ClusterPermissions",
            ClusterScopedGrant::Webhooks => "Webhooks",
            ClusterScopedGrant::OtherObjects => "OtherObjects",
            ClusterScopedGrant::CrdDeletion => "CrdDeletion",
            ClusterScopedGrant::CrdAdoption => "CrdAdoption",
        }
    }
}
