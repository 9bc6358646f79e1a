//! Every name windlass makes visible in the cluster, defined once: labels, annotations,
//! finalizers, condition types and the reasons people and programs match on, plan step names,
//! the revision Secret format and the names Events are reported under.
//!
//! Controllers, the CLI and the tests all use these constants, so renaming one is a compile
//! error everywhere instead of a silent mismatch at run time.

/// The field manager of every write windlass makes (server-side apply and status).
pub const FIELD_MANAGER: &str = "windlass";
/// The field manager of the `windlass` CLI's own edits (`rollback`, `resume`), so the
/// controllers can tell a person's change from their own.
pub const CLI_FIELD_MANAGER: &str = "windlass-cli";

/// Labels windlass puts on what it creates.
pub mod labels {
    /// Standard label naming the tool that manages an object.
    pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
    /// The value of [`MANAGED_BY`] on everything windlass creates.
    pub const MANAGED_BY_VALUE: &str = "windlass";
    /// On everything a Blueprint applies, and on its revision Secrets: the Blueprint's name
    /// (bounded to a label value).
    pub const BLUEPRINT: &str = "windlass.dev/blueprint";
    /// On everything a Blueprint applies: the Blueprint's namespace, so cluster-scoped objects
    /// of two same-named Blueprints in different namespaces are told apart.
    pub const BLUEPRINT_NAMESPACE: &str = "windlass.dev/blueprint-namespace";
    /// On everything a ClusterServiceVersion creates: the CSV's name.
    pub const CSV: &str = "windlass.dev/csv";
    /// On everything a ClusterServiceVersion creates: the CSV's namespace.
    pub const CSV_NAMESPACE: &str = "windlass.dev/csv-namespace";
    /// On a Blueprint: the Subscription it belongs to.
    pub const SUBSCRIPTION: &str = "windlass.dev/subscription";
    /// On a Blueprint and its revision Secrets: the package it installs.
    pub const PACKAGE: &str = "windlass.dev/package";
    /// On a Subscription windlass created for a dependency: `true`.
    pub const DEPENDENCY: &str = "windlass.dev/dependency";
    /// On a revision Secret: the revision number.
    pub const REVISION: &str = "windlass.dev/revision";
}

/// Annotations windlass reads or writes.
pub mod annotations {
    /// Set to `true` on a Blueprint by `windlass resume`: hand the target back to the catalog.
    pub const RESUME: &str = "windlass.dev/resume";
    /// On a ClusterServiceVersion: the Blueprint revision that last applied it. The CSV's
    /// status counts for a revision only when this matches, so a CSV still reporting on an
    /// older spec never completes a newer revision.
    pub const REVISION: &str = "windlass.dev/revision";
    /// On a revision Secret: the kinds (`apiVersion/Kind`, comma-separated) its bundle ships
    /// besides the CSV, so pruning and cleanup know which kinds to look for.
    pub const KINDS: &str = "windlass.dev/kinds";
    /// On a revision Secret: the CRDs (names, comma-separated) its bundle ships. CRDs are
    /// shared by every namespace, so they carry no Blueprint labels; cleanup finds them by name.
    pub const CRDS: &str = "windlass.dev/crds";
    /// On a revision Secret: the semver version of its CSV.
    pub const VERSION: &str = "windlass.dev/version";
    /// On a revision Secret: the name of its CSV.
    pub const CLUSTER_SERVICE_VERSION: &str = "windlass.dev/cluster-service-version";
    /// On a CRD: the package whose bundle last wrote it.
    pub const CRD_PACKAGE: &str = "windlass.dev/bundle-package";
    /// On a CRD: the version of the bundle that last wrote it (CRDs never move backwards).
    pub const CRD_VERSION: &str = "windlass.dev/bundle-version";
    /// On a webhook serving-certificate Secret: when the certificate expires (RFC 3339).
    pub const CERTIFICATE_NOT_AFTER: &str = "windlass.dev/certificate-not-after";
    /// OLM's annotation on an operator's pod template: the namespaces it watches.
    pub const OLM_TARGET_NAMESPACES: &str = "olm.targetNamespaces";
    /// OLM's annotation on an operator's pod template: the namespace it runs in.
    pub const OLM_OPERATOR_NAMESPACE: &str = "olm.operatorNamespace";
}

/// Finalizers.
pub mod finalizers {
    /// Removes the cluster-scoped objects a Blueprint applied.
    pub const BLUEPRINT_CLEANUP: &str = "windlass.dev/blueprint-cleanup";
    /// Removes a ClusterServiceVersion's cluster-scoped objects.
    pub const CSV_CLEANUP: &str = "windlass.dev/csv-cleanup";
}

/// The names controllers report Events under (`kubectl describe` shows them as the source).
pub mod controllers {
    pub const CATALOG: &str = "windlass-catalog";
    pub const SUBSCRIPTION: &str = "windlass-subscription";
    pub const BLUEPRINT: &str = "windlass-blueprint";
    pub const CLUSTER_SERVICE_VERSION: &str = "windlass-csv";
}

/// Condition types, per kind.
pub mod conditions {
    /// A Subscription's conditions.
    pub mod subscription {
        /// Whether the catalogs offer something that satisfies the Subscription (the
        /// explanation when not).
        pub const RESOLUTION_SUCCEEDED: &str = "ResolutionSucceeded";
        /// A person set the Blueprint's target; the catalog's choice waits for
        /// `windlass resume`.
        pub const TARGET_PINNED: &str = "TargetPinned";
        /// A catalog the Subscription depends on is unreachable or not served.
        pub const CATALOG_SOURCES_UNHEALTHY: &str = "CatalogSourcesUnhealthy";
        /// The target is installed and Succeeded; otherwise the Blueprint's phase and why.
        pub const INSTALLED: &str = "Installed";
        /// Every dependency has a Subscription (present only when there are dependencies).
        pub const DEPENDENCIES_SUBSCRIBED: &str = "DependenciesSubscribed";
    }

    /// A Blueprint's conditions.
    pub mod blueprint {
        /// The current revision Succeeded.
        pub const READY: &str = "Ready";
        /// Whether the target's CRDs may replace the live ones.
        pub const CRD_UPGRADE_SAFE: &str = "CRDUpgradeSafe";
        /// Newer CRD definitions were kept instead of being moved backwards.
        pub const CRDS_KEPT: &str = "CRDsKept";
        /// Whether a requested rollback is allowed.
        pub const ROLLBACK_ALLOWED: &str = "RollbackAllowed";
    }

    /// A ClusterServiceVersion's conditions.
    pub mod csv {
        /// The CSV Succeeded.
        pub const READY: &str = "Ready";
        /// What windlass changed to install a legacy bundle.
        pub const LEGACY_APIS_CONVERTED: &str = "LegacyAPIsConverted";
    }

    /// A Catalog's conditions.
    pub mod catalog {
        /// Whether the catalog's content is served.
        pub const SERVING: &str = "Serving";
    }
}

/// Condition reasons people and programs match on.
pub mod reasons {
    /// Why a Subscription's resolution failed before the resolver ran. The resolver's own
    /// reasons (`SubscriptionUnsatisfiable`, `SubscriptionsConflict`,
    /// `InstalledPackagesConflict`) are passed through.
    pub mod resolution {
        pub const PACKAGE_NOT_FOUND: &str = "PackageNotFound";
        pub const CHANNEL_NOT_FOUND: &str = "ChannelNotFound";
        pub const NO_DEFAULT_CHANNEL: &str = "NoDefaultChannel";
        pub const INVALID_VERSION_RANGE: &str = "InvalidVersionRange";
        pub const STARTING_CSV_NOT_FOUND: &str = "StartingCSVNotFound";
        pub const NO_CATALOG: &str = "NoCatalog";
        pub const CATALOG_NOT_SERVED: &str = "CatalogNotServed";
        pub const BUNDLE_UNAVAILABLE: &str = "BundleUnavailable";
    }

    /// A ClusterServiceVersion's phase reasons, as OLM names them.
    pub mod csv {
        pub const REQUIREMENTS_NOT_MET: &str = "RequirementsNotMet";
        pub const ALL_REQUIREMENTS_MET: &str = "AllRequirementsMet";
        pub const INSTALL_WAITING: &str = "InstallWaiting";
        pub const INSTALL_SUCCEEDED: &str = "InstallSucceeded";
        pub const INSTALL_CHECK_FAILED: &str = "InstallCheckFailed";
        pub const COMPONENT_UNHEALTHY: &str = "ComponentUnhealthy";
        pub const BEING_REPLACED: &str = "BeingReplaced";
        pub const REPLACED: &str = "Replaced";
        pub const INVALID_STRATEGY: &str = "InvalidInstallStrategy";
        /// Reason of the `LegacyAPIsConverted` condition.
        pub const CONVERTED: &str = "Converted";
    }

    /// Why an install was refused by the namespace's InstallPolicies.
    pub mod policy {
        pub const CATALOG_NOT_ALLOWED: &str = "CatalogNotAllowed";
        pub const PACKAGE_NOT_ALLOWED: &str = "PackageNotAllowed";
        pub const INSTALL_MODE_NOT_ALLOWED: &str = "InstallModeNotAllowed";
        pub const INSTALL_MODE_UNSUPPORTED: &str = "InstallModeUnsupported";
        pub const TARGET_NAMESPACE_NOT_ALLOWED: &str = "TargetNamespaceNotAllowed";
        pub const CLUSTER_SCOPED_NOT_ALLOWED: &str = "ClusterScopedNotAllowed";
        /// The install ServiceAccount may not create or grant something (RBAC said no).
        pub const INSTALL_FORBIDDEN: &str = "InstallForbidden";
        /// Permitted: the condition names the policy and the identity.
        pub const PERMITTED: &str = "Permitted";
    }

    /// A Catalog's `Serving` reasons.
    pub mod catalog {
        pub const CONTENT_SERVED: &str = "ContentServed";
    }
}

/// The steps of a Blueprint's plan, in the order they run (`status.plan[].name`).
pub mod steps {
    pub const DEPENDENCIES: &str = "Dependencies";
    pub const CRDS: &str = "CRDs";
    pub const OBJECTS: &str = "Objects";
    pub const CLUSTER_SERVICE_VERSION: &str = "ClusterServiceVersion";
}

/// The manager's sealing key (`windlass_revisions::seal`): a Secret in the manager's namespace.
pub mod seal {
    /// Its name.
    pub const KEY_SECRET: &str = "windlass-seal-key";
    /// Its type.
    pub const KEY_SECRET_TYPE: &str = "windlass.dev/seal-key";
    /// The data key holding the key's bytes.
    pub const KEY_DATA: &str = "key";
    /// The annotation carrying the seal of what an object holds.
    pub const ANNOTATION: &str = "windlass.dev/seal";
}

/// How a Blueprint revision is stored in the cluster.
pub mod revision_secret {
    /// The Secret type of a stored revision.
    pub const TYPE: &str = "windlass.dev/revision.v1";
    /// The key of the revision content (gzip of JSON) in the Secret.
    pub const DATA_KEY: &str = "revision.json.gz";
}
