//! Every name windlass makes visible in the cluster, defined once: labels, annotations,
//! finalizers, condition types and the reasons people and programs match on, plan step names,
//! the revision Secret format and the names Events are reported under.
//!
//! Controllers, the CLI and the tests all use these constants, so renaming one is a compile
//! error everywhere instead of a silent mismatch at run time.

/// The field manager of every write windlass makes (server-side apply and status).
pub const FIELD_MANAGER: &str = "windlass";
/// The field manager of the `windlass` CLI's own edits (`rollback`, `resume`, `approve`,
/// `catalog delist` and `relist`, and the hub's delist and relist), so the controllers, and
/// GitOps tools, can tell a person's change from their own.
pub const CLI_FIELD_MANAGER: &str = "windlass-cli";
/// The field manager of what people do through the hub page (install, approve, roll back,
/// resume): like the CLI's, a person's change the controllers do not take back.
pub const HUB_FIELD_MANAGER: &str = "windlass-hub";
/// The field manager of the `spec.delisted` entries people write, with `windlass catalog
/// delist | relist` or the hub's Delist and Relist buttons: the CLI's, so the two edit one set
/// of entries (either relists what the other delisted) instead of refusing each other's as
/// another tool's.
pub const DELIST_FIELD_MANAGER: &str = CLI_FIELD_MANAGER;
/// The field manager of what a hub's fleet controller writes in member clusters (their
/// Subscriptions, approvals, rollbacks, ClusterVersion updates): a person's change made
/// through the hub, which the member's own controllers do not take back.
pub const FLEET_FIELD_MANAGER: &str = "windlass-fleet";
/// The keys of a member Secret that may hold its kubeconfig, in the order they are tried:
/// windlass's own, then Cluster API's (`<cluster>-kubeconfig` Secrets keep it in `value`).
pub const FLEET_KUBECONFIG_KEYS: [&str; 2] = ["kubeconfig", "value"];

/// Labels windlass puts on what it creates.
pub mod labels {
    /// On a Secret in a hub's manager namespace: it holds a member cluster's kubeconfig. The
    /// value names the member (the Secret's name when empty); the Secret's other labels are
    /// what Fleets and waves select members by.
    pub const FLEET_MEMBER: &str = "windlass.dev/fleet-member";
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
    /// On a Blueprint and its revision Secrets: the package it installs; on a Package view:
    /// its package (when the name fits a label value).
    pub const PACKAGE: &str = "windlass.dev/package";
    /// On a Package view: the Catalog that offers it (when the name fits a label value).
    pub const CATALOG: &str = "windlass.dev/catalog";
    /// On a Subscription windlass created for a dependency: `true`.
    pub const DEPENDENCY: &str = "windlass.dev/dependency";
    /// On a revision Secret: the revision number.
    pub const REVISION: &str = "windlass.dev/revision";
    /// On a plan Secret: the revision whose plan it holds. Not [`REVISION`], so plans are
    /// never listed as revisions.
    pub const PLAN_REVISION: &str = "windlass.dev/plan-revision";
    /// On an operand snapshot Secret: the revision that took it (before applying). Not
    /// [`REVISION`], so snapshots are never listed as revisions.
    pub const OPERANDS_REVISION: &str = "windlass.dev/operands-revision";
    /// On the ClusterRoles windlass writes to read the custom resources of one CRD: `true`.
    /// The manager's aggregated ClusterRole selects them, so it can read exactly the custom
    /// resources of the CRDs it manages and no others.
    pub const AGGREGATE_TO_MANAGER: &str = "windlass.dev/aggregate-to-manager";
    /// On the Secrets holding release payloads applied to the cluster (for rollback).
    pub const RELEASE_PAYLOAD: &str = "windlass.dev/release-payload";
    /// On every object a release payload applies: `true`. The ClusterVersion controller
    /// watches each kind the payload ships through this label only (metadata, server-side
    /// filtered), so a hand edit or a deletion of a payload object wakes it at once while the
    /// cluster's other objects of those kinds never reach it.
    pub const RELEASE_MANAGED: &str = "windlass.dev/release-managed";
    /// The value of [`RELEASE_MANAGED`].
    pub const RELEASE_MANAGED_VALUE: &str = "true";
    /// On a namespace, set by a cluster admin: Blueprints written by hand (not by a
    /// Subscription) are admitted there when the value is [`HAND_WRITTEN_BLUEPRINTS_ALLOWED`].
    /// The Blueprint controller still makes every decision a Subscription would.
    pub const HAND_WRITTEN_BLUEPRINTS: &str = "windlass.dev/hand-written-blueprints";
    /// The value of [`HAND_WRITTEN_BLUEPRINTS`] that allows them.
    pub const HAND_WRITTEN_BLUEPRINTS_ALLOWED: &str = "allowed";
    /// On a namespace, set by a cluster admin: windlass's admission policies skip it when the
    /// value is [`ADMISSION_POLICIES_DISABLED`], leaving only the controllers' own checks (to
    /// debug a namespace, or to test those checks alone). Cluster-scoped kinds are never skipped.
    pub const ADMISSION_POLICIES: &str = "windlass.dev/admission-policies";
    /// The value of [`ADMISSION_POLICIES`] that turns them off in a namespace.
    pub const ADMISSION_POLICIES_DISABLED: &str = "disabled";
}

/// The ClusterRole through which the manager reads the custom resources of CRD `crd` (labelled
/// [`labels::AGGREGATE_TO_MANAGER`]).
pub fn custom_resource_reader(crd: &str) -> String {
    format!("windlass-read.{crd}")
}

/// The ClusterRole through which the manager snapshots and restores the custom resources of
/// CRD `crd` (labelled [`labels::AGGREGATE_TO_MANAGER`]): get, list and patch, written only for
/// the CRDs an install owns, when it upgrades or rolls back.
pub fn custom_resource_keeper(crd: &str) -> String {
    format!("windlass-keep.{crd}")
}

/// Annotations windlass reads or writes.
/// With `--release-api=openshift`: the ConfigMap of the manager's namespace that holds the
/// progress OpenShift's ClusterVersion status has no field for (levels, timings, the release
/// held back), so a restarted manager resumes where it was.
pub const RELEASE_STATE_CONFIG_MAP: &str = "windlass-release-state";
/// The data key of [`RELEASE_STATE_CONFIG_MAP`].
pub const RELEASE_STATE_KEY: &str = "status.json";
/// The annotation of a ConfigMap (in the manager's namespace) that holds release signature
/// keys (`verifier-public-key-<name>`, ASCII-armored OpenPGP) and stores (`store-<name>`, URLs),
/// as the CVO's release verification ConfigMap does.
pub const VERIFICATION_CONFIG_MAP_ANNOTATION: &str = "release.openshift.io/verification-config-map";
/// Data-key prefix of a verification key.
pub const VERIFIER_KEY_PREFIX: &str = "verifier-public-key-";
/// Data-key prefix of a signature store.
pub const STORE_KEY_PREFIX: &str = "store-";
/// The CVO's admin gates: a ConfigMap of the manager's namespace whose keys
/// (`ack-<version>-<name>`) name acknowledgements a minor update to `<version>` needs, each
/// value the message shown until it is given.
pub const ADMIN_GATES_CONFIG_MAP: &str = "admin-gates";
/// The acknowledgements cluster admins give: the same keys, set to `"true"`.
pub const ADMIN_ACKS_CONFIG_MAP: &str = "admin-acks";

pub mod annotations {
    /// On OpenShift's ClusterVersion (`--release-api=openshift`): windlass's own settings that
    /// OpenShift's spec has no field for, as the JSON of a windlass ClusterVersion spec
    /// (`{"profile": "single-node-developer", "rollback": {"automatic": true}, ...}`). What
    /// OpenShift's spec does have (`desiredUpdate`, `upstream`, `channel`, `capabilities`,
    /// `overrides`) is always read from OpenShift's fields.
    pub const WINDLASS_SPEC: &str = "windlass.dev/spec";
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
    /// On a plan Secret: the plan's digest (what approving names).
    pub const PLAN_DIGEST: &str = "windlass.dev/plan-digest";
    /// On an operand snapshot Secret: `INDEX/COUNT`, its place among the snapshot's chunks.
    pub const OPERANDS_CHUNK: &str = "windlass.dev/operands-chunk";
    /// On an operand snapshot Secret: the revision that ran when it was taken (the one a
    /// rollback to it restores).
    pub const OPERANDS_BASE_REVISION: &str = "windlass.dev/operands-base-revision";
    /// On a Blueprint, written by whoever may edit it: `REVISION`, let that revision's upgrade
    /// go ahead without an operand snapshot (one too large to keep, or unreadable). Bound to
    /// the revision, so it never waves through a later upgrade.
    pub const SKIP_OPERAND_SNAPSHOT: &str = "windlass.dev/skip-operand-snapshot";
    /// On a CRD: the package whose bundle last wrote it.
    pub const CRD_PACKAGE: &str = "windlass.dev/bundle-package";
    /// On a CRD: the version of the bundle that last wrote it (CRDs never move backwards).
    pub const CRD_VERSION: &str = "windlass.dev/bundle-version";
    /// On a CRD, written by a cluster admin: the package that may take it over from whoever
    /// manages it now (Helm, a person, another package).
    pub const CRD_ADOPT: &str = "windlass.dev/adopt";
    /// On any other object a bundle ships, written by whoever may edit that object (a cluster
    /// admin, for cluster-scoped ones): `NAMESPACE/BLUEPRINT`, the install that may take it
    /// over from whoever manages it now. Once taken over it is that install's, removed with it.
    pub const ADOPT: &str = "windlass.dev/adopt";
    /// On a CRD whose conversion goes through a webhook: `NAMESPACE/CSV`, the install whose
    /// webhook converts it for every namespace. windlass writes it for the first install and
    /// hands it on only when that install is gone; a cluster admin may set it to choose.
    pub const CONVERSION_OWNER: &str = "windlass.dev/conversion-owner";
    /// On a stored release payload: the payload image, by digest.
    pub const RELEASE_IMAGE: &str = "windlass.dev/release-image";
    /// On a webhook serving-certificate Secret: when the certificate expires (RFC 3339).
    pub const CERTIFICATE_NOT_AFTER: &str = "windlass.dev/certificate-not-after";
    /// On the same Secret after a rotation: when the certificate it replaced expires. Until
    /// then the old CA stays in the webhooks' `caBundle` beside the new one, so a pod still
    /// serving the old certificate is trusted while it picks up the new one.
    pub const PREVIOUS_CERTIFICATE_NOT_AFTER: &str = "windlass.dev/previous-certificate-not-after";
    /// OLM's annotation on an operator's pod template: the namespaces it watches.
    pub const OLM_TARGET_NAMESPACES: &str = "olm.targetNamespaces";
    /// OLM's annotation on an operator's pod template: the namespace it runs in.
    pub const OLM_OPERATOR_NAMESPACE: &str = "olm.operatorNamespace";
    /// OLM's annotation on an operator's pod template: the OperatorGroup it was installed for.
    pub const OLM_OPERATOR_GROUP: &str = "olm.operatorGroup";
    /// On an object and on the Subscription `windlass adopt` took over: where it came from
    /// (`olm:NAMESPACE/CSV`, or `helm:NAMESPACE/RELEASE`), for people and for a second run.
    pub const ADOPTED_FROM: &str = "windlass.dev/adopted-from";
    /// On a Subscription adopted from a Helm release: the release's revisions as Helm recorded
    /// them (JSON), since they are not windlass revisions and cannot be rolled back to.
    pub const ADOPTED_HISTORY: &str = "windlass.dev/adopted-history";
}

/// OLM v0's names (`operators.coreos.com`), as `windlass adopt olm` reads and lets go of them.
pub mod olm_v0 {
    /// OLM v0's API group.
    pub const GROUP: &str = "operators.coreos.com";
    /// Subscriptions, ClusterServiceVersions, CatalogSources and InstallPlans.
    pub const V1ALPHA1: &str = "operators.coreos.com/v1alpha1";
    /// OperatorGroups.
    pub const V1: &str = "operators.coreos.com/v1";
    /// Labels OLM puts on what a CSV owns: the owner's name, kind and namespace.
    pub const OWNER: &str = "olm.owner";
    pub const OWNER_KIND: &str = "olm.owner.kind";
    pub const OWNER_NAMESPACE: &str = "olm.owner.namespace";
    /// On a Deployment OLM manages: the hash of the spec it applied.
    pub const DEPLOYMENT_SPEC_HASH: &str = "olm.deployment-spec-hash";
    /// On the copies of an AllNamespaces CSV OLM writes into every namespace.
    pub const COPIED_FROM: &str = "olm.copiedFrom";
    /// Prefix of the `operators.coreos.com/<package>.<namespace>` labels OLM's Operator API
    /// selects components by.
    pub const COMPONENT_LABEL_PREFIX: &str = "operators.coreos.com/";
    /// The field managers OLM's controllers write with.
    pub const FIELD_MANAGERS: &[&str] = &["olm", "catalog", "olm-operator", "catalog-operator"];
    /// OLM's own controllers, by Deployment name: while they run, they take back what windlass
    /// adopts.
    pub const CONTROLLERS: &[&str] = &["olm-operator", "catalog-operator"];
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
    pub const INSTALL_SCOPE: &str = "windlass-install-scope";
    pub const PACKAGE_VIEW: &str = "windlass-package-view";
    pub const CLUSTER_VERSION: &str = "windlass-clusterversion";
    /// Reports on Fleets and Rollouts, in the hub.
    pub const FLEET: &str = "windlass-fleet";
    /// Reports on ImageMirrorSets (rules it leaves out).
    pub const MIRRORS: &str = "windlass-mirrors";
}

/// Condition types, per kind.
pub mod conditions {
    /// A Subscription's conditions.
    /// A Rollout's conditions.
    pub mod rollout {
        /// True once nothing more is rolled out: a member failed or rolled back, a wave missed
        /// its deadline, the spec is invalid, or a fleet rollback was asked for.
        pub const HALTED: &str = "Halted";
        /// True once every wave is done and healthy.
        pub const COMPLETED: &str = "Completed";
    }
    /// A Fleet's conditions.
    pub mod fleet {
        /// Its members are selected (the status lists them).
        pub const READY: &str = "Ready";
    }
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
        /// What the Subscription installs (or asks for) is no longer offered: its catalog's
        /// admin delisted it, or its catalog was deleted. Installed operators keep running and
        /// get no upgrades (present once it has been true).
        pub const DELISTED: &str = "Delisted";
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
        /// Whether the stored revision content is exactly what windlass wrote (its seal checks).
        pub const CONTENT_TRUSTED: &str = "ContentTrusted";
        /// Whether the namespace's InstallPolicies permit the install as asked (only present
        /// when they do not).
        pub const INSTALL_PERMITTED: &str = "InstallPermitted";
        /// Under Manual approval: whether the current revision's plan is approved (False while
        /// it waits, naming the digest to approve, or what changed since the approval).
        pub const PLAN_APPROVED: &str = "PlanApproved";
        /// Whether the custom resources of the operator were snapshotted before the current
        /// upgrade applied (False while one that cannot be kept holds the upgrade).
        pub const OPERANDS_SNAPSHOTTED: &str = "OperandsSnapshotted";
        /// What the last rollback did with the custom resources: restored, kept, left.
        pub const OPERANDS_RESTORED: &str = "OperandsRestored";
        /// Whether anything would block or break the upgrade (a newer Kubernetes needed, a
        /// PodDisruptionBudget allowing no eviction, an API version dropped while objects use
        /// it); False until a person accepts each finding by name.
        pub const UPGRADE_READY: &str = "UpgradeReady";
    }

    /// A ClusterServiceVersion's conditions.
    pub mod csv {
        /// The CSV Succeeded.
        pub const READY: &str = "Ready";
        /// What windlass changed to install a legacy bundle.
        pub const LEGACY_APIS_CONVERTED: &str = "LegacyAPIsConverted";
        /// Whether this install's webhook serves the conversion of the CRDs it converts (False
        /// while another install's does: CRDs are shared, and one webhook converts them all).
        pub const CONVERSION_SERVED: &str = "ConversionServed";
        /// Whether the CSV is exactly what a windlass Blueprint applied (its seal checks).
        /// Only such CSVs are acted on.
        pub const CONTENT_TRUSTED: &str = "ContentTrusted";
    }

    /// A Catalog's conditions.
    pub mod catalog {
        /// Whether the catalog's content is served.
        pub const SERVING: &str = "Serving";
        /// Whether the served content's image was verified against the TrustPolicies.
        pub const VERIFIED: &str = "Verified";
        /// Whether every version the catalog has passed lint and is offered (otherwise which
        /// are held back, and what else is wrong with the content or `spec.delisted`).
        pub const CONTENT_VALID: &str = "ContentValid";
    }

    /// The ClusterVersion's conditions, as the CVO names them.
    pub mod cluster_version {
        /// The cluster runs a release completely applied.
        pub const AVAILABLE: &str = "Available";
        /// An update is being applied.
        pub const PROGRESSING: &str = "Progressing";
        /// A run level does not become healthy, or the payload cannot be applied.
        pub const FAILING: &str = "Failing";
        /// Whether the desired release was read, checked and accepted for applying.
        pub const RELEASE_ACCEPTED: &str = "ReleaseAccepted";
        /// Whether a minor or major update may start (no component reports Upgradeable=False).
        pub const UPGRADEABLE: &str = "Upgradeable";
        /// Whether the update service answered.
        pub const RETRIEVED_UPDATES: &str = "RetrievedUpdates";
        /// A conditional update's recommendation.
        pub const RECOMMENDED: &str = "Recommended";
        /// Whether one risk of a conditional update applies to this cluster.
        pub const APPLIES: &str = "Applies";
    }
}

/// Condition reasons people and programs match on.
pub mod reasons {
    /// Why a Blueprint is where it is (Ready, RollbackAllowed, CRDUpgradeSafe, CRDsKept).
    /// Reasons of a Rollout's and a Fleet's conditions.
    pub mod rollout {
        pub const MEMBER_FAILED: &str = "MemberFailed";
        pub const WAVE_DEADLINE_EXCEEDED: &str = "WaveDeadlineExceeded";
        pub const INVALID_SPEC: &str = "InvalidSpec";
        pub const ROLLED_BACK_BY_REQUEST: &str = "RollbackRequested";
        pub const NOT_HALTED: &str = "NotHalted";
        pub const ALL_WAVES_DONE: &str = "AllWavesDone";
        pub const NOT_DONE: &str = "NotDone";
        pub const MEMBERS_SELECTED: &str = "MembersSelected";
    }
    pub mod blueprint {
        /// No catalog serves the bundle the Blueprint names yet.
        pub const WAITING_FOR_BUNDLE: &str = "WaitingForBundle";
        /// The Subscription has not resolved a version to install.
        pub const TARGET_NOT_RESOLVED: &str = "TargetNotResolved";
        /// The rollback names a revision the history does not hold.
        pub const ROLLBACK_TARGET_NOT_IN_HISTORY: &str = "RollbackTargetNotInHistory";
        /// A version that is not semver.
        pub const INVALID_VERSION: &str = "InvalidVersion";
        /// A revision's stored content is gone.
        pub const REVISION_CONTENT_MISSING: &str = "RevisionContentMissing";
        /// A revision's stored content cannot be decoded.
        pub const REVISION_CONTENT_UNREADABLE: &str = "RevisionContentUnreadable";
        /// The live CRDs no longer serve an API version the rollback's CSV owns.
        pub const OWNED_APIS_NOT_SERVED: &str = "OwnedAPIsNotServed";
        /// A rollback the rules refuse, let through by `force`.
        pub const FORCED: &str = "Forced";
        /// A rollback started by a failed upgrade.
        pub const AUTOMATIC_ROLLBACK: &str = "AutomaticRollback";
        /// A rollback the rules allow.
        pub const ALLOWED: &str = "Allowed";
        /// The CRD change keeps every existing object valid and loses no data.
        pub const SAFE: &str = "Safe";
        /// A rollback leaves CRDs at their newer live definition.
        pub const ROLLBACK_KEEPS_NEWER_CRDS: &str = "RollbackKeepsNewerCRDs";
        /// The live CRD is newer than the one the revision ships.
        pub const NEWER_VERSION_INSTALLED: &str = "NewerVersionInstalled";
        /// Nothing has been installed yet.
        pub const NO_REVISION: &str = "NoRevision";
        /// The revision's CSV has not reached Succeeded.
        pub const CLUSTER_SERVICE_VERSION_NOT_SUCCEEDED: &str = "ClusterServiceVersionNotSucceeded";
        /// The plan waits for a person's approval.
        pub const AWAITING_APPROVAL: &str = "AwaitingApproval";
        /// The plan changed after it was approved (or differs from the digest approved).
        pub const PLAN_CHANGED: &str = "PlanChanged";
        /// The plan was approved: by digest (`spec.approvedPlan`) or as shown (`approved`).
        pub const PLAN_APPROVED: &str = "Approved";
        /// The operands were snapshotted (or there were none to keep).
        pub const SNAPSHOT_TAKEN: &str = "SnapshotTaken";
        /// The snapshot would not fit the store; the upgrade waits for an admin's choice.
        pub const SNAPSHOT_TOO_LARGE: &str = "SnapshotTooLarge";
        /// An admin let the upgrade go without a snapshot.
        pub const SNAPSHOT_SKIPPED: &str = "SnapshotSkipped";
        /// The custom resources were put back to their snapshot.
        pub const OPERANDS_RESTORED: &str = "Restored";
        /// No sealed snapshot exists for the revision rolled back to: operands left as they are.
        pub const NO_SNAPSHOT: &str = "NoSnapshot";
        /// Some custom resources could not be put back (named in the message).
        pub const RESTORE_INCOMPLETE: &str = "RestoreIncomplete";
        /// A rollback to the previous revision was rehearsed (server-side dry run) and would
        /// apply.
        pub const REHEARSAL_PASSED: &str = "RehearsalPassed";
        /// A rehearsed rollback would fail; the message says why.
        pub const REHEARSAL_FAILED: &str = "RehearsalFailed";
        /// Nothing found that would block or break the upgrade (or all of it accepted).
        pub const UPGRADE_READY: &str = "Ready";
        /// Findings not accepted yet hold the upgrade.
        pub const FINDINGS_NOT_ACCEPTED: &str = "FindingsNotAccepted";
    }

    /// Why the ClusterVersion is where it is.
    pub mod cluster_version {
        pub const NO_DESIRED_UPDATE: &str = "NoDesiredUpdate";
        pub const NO_IMAGE: &str = "NoImage";
        pub const RETRIEVE_PAYLOAD: &str = "RetrievePayload";
        pub const PAYLOAD_INVALID: &str = "PayloadInvalid";
        pub const VERSION_MISMATCH: &str = "VersionMismatch";
        pub const UNVERIFIED: &str = "Unverified";
        pub const VERIFICATION_FAILED: &str = "VerificationFailed";
        pub const VERIFICATION_ERROR: &str = "VerificationError";
        pub const ROLLBACK_REFUSED: &str = "RollbackRefused";
        pub const PRECONDITIONS_FAILED: &str = "PreconditionsFailed";
        pub const NO_UPSTREAM: &str = "NoUpstream";
        pub const REMOTE_FAILED: &str = "RemoteFailed";
        pub const UPDATES_RETRIEVED: &str = "UpdatesRetrieved";
        pub const VERSION_NOT_FOUND: &str = "VersionNotFound";
        pub const CONDITIONAL_UPDATE_RISKS: &str = "ConditionalUpdateRisks";
        pub const NOT_UPGRADEABLE: &str = "ComponentsNotUpgradeable";
        pub const ROLLING_BACK: &str = "RollingBack";
        pub const PAYLOAD_NOT_STORED: &str = "PayloadNotStored";
        pub const PAYLOAD_LOADED: &str = "PayloadLoaded";
        pub const APPLYING: &str = "Applying";
        pub const WAITING: &str = "Waiting";
        pub const LEVEL_FAILING: &str = "LevelFailing";
        pub const APPLY_FAILED: &str = "ApplyFailed";
        pub const AS_EXPECTED: &str = "AsExpected";
        pub const COMPLETED: &str = "Completed";
        /// A ClusterOperator has reported Degraded=True for longer than the grace.
        pub const CLUSTER_OPERATOR_DEGRADED: &str = "ClusterOperatorDegraded";
        /// A ClusterOperator has reported Available=False for longer than the grace.
        pub const CLUSTER_OPERATOR_NOT_AVAILABLE: &str = "ClusterOperatorNotAvailable";
        /// Several ClusterOperators are unhealthy.
        pub const CLUSTER_OPERATORS_UNHEALTHY: &str = "ClusterOperatorsDegraded";
        /// A minor update waits for an acknowledgement in `admin-acks`.
        pub const ADMIN_ACK_REQUIRED: &str = "AdminAckRequired";
        /// `admin-gates` or `admin-acks` cannot be read as the CVO defines them.
        pub const ADMIN_GATES_INVALID: &str = "AdminGatesInvalid";
        /// `spec.capabilities` names a set or capability windlass does not know.
        pub const INVALID_CAPABILITIES: &str = "InvalidCapabilities";
        /// OpenShift's ClusterVersion carries a `windlass.dev/spec` annotation windlass cannot read.
        pub const INVALID_SPEC: &str = "InvalidSpec";
        /// The plan of an update to approve could not be made (a read or dry run failed).
        pub const PLAN_FAILED: &str = "PlanFailed";
        /// `spec.approval: Manual` and the update's plan is not approved (or changed since).
        pub const AWAITING_PLAN_APPROVAL: &str = "AwaitingPlanApproval";
        /// The pre-update readiness report has findings `acceptRisks` does not accept.
        pub const UPDATE_NOT_READY: &str = "UpdateNotReady";
        /// Another update is still being applied; a new one starts only with `force`.
        pub const UPDATE_IN_PROGRESS: &str = "UpdateInProgress";
    }

    /// The CVO's reasons for a conditional update's `Recommended` condition and each risk's
    /// `Applies` condition (a risk's own name is also used as a `Recommended` reason when it
    /// alone applies).
    pub mod conditional_update {
        /// `Recommended=True`: no risk applies.
        pub const NOT_EXPOSED_TO_RISKS: &str = "NotExposedToRisks";
        /// `Recommended=True`: every risk that applies is in `acceptRisks`.
        pub const ALL_EXPOSED_RISKS_ACCEPTED: &str = "AllExposedRisksAccepted";
        /// `Recommended=Unknown` / `Applies=Unknown`: a risk could not be evaluated (its
        /// query failed, or no query endpoint is configured).
        pub const EVALUATION_FAILED: &str = "EvaluationFailed";
        /// `Recommended=False`: a risk whose name is not a reason applies.
        pub const EXPOSED_TO_RISKS: &str = "ExposedToRisks";
        /// `Recommended=False` for more than one reason.
        pub const MULTIPLE_REASONS: &str = "MultipleReasons";
        /// `Applies=True`.
        pub const MATCH: &str = "Match";
        /// `Applies=False`.
        pub const NOT_MATCH: &str = "NotMatch";
    }

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
        /// The package or version is delisted (the `Delisted` condition says by whom and why).
        pub const DELISTED: &str = "Delisted";
    }

    /// Why a Subscription's `Delisted` condition is what it is.
    pub mod delisting {
        /// The catalog's admin delisted the whole package.
        pub const PACKAGE_DELISTED: &str = "PackageDelisted";
        /// The catalog's admin delisted the version installed (or asked for).
        pub const VERSION_DELISTED: &str = "VersionDelisted";
        /// The catalog the package was installed from was deleted.
        pub const CATALOG_REMOVED: &str = "CatalogRemoved";
        /// Offered again: upgrades resume.
        pub const LISTED: &str = "Listed";
    }

    /// Why windlass wrote an object it had written before.
    pub mod drift {
        /// Someone else changed fields windlass sets; the apply put them back (the Event names
        /// the object, each field, what was found, what was restored and who changed it).
        pub const REPAIRED: &str = "DriftRepaired";
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
        /// The CSV carries no windlass seal: made by hand, not by a Blueprint. Nothing of it is
        /// created.
        pub const NOT_SEALED: &str = "NotSealed";
        /// The CSV's seal does not match its spec: edited after windlass applied it. Nothing
        /// more of it is created until the Blueprint applies it again.
        pub const SEAL_MISMATCH: &str = "SealMismatch";
        /// Reason of `ContentTrusted=True`.
        pub const SEALED: &str = "Sealed";
        /// The CSV's seal carries no `spec.grant` (sealed before grants were recorded): its
        /// Blueprint applies it again with one.
        pub const GRANT_MISSING: &str = "GrantMissing";
        /// No Blueprint with the uid the CSV was sealed for exists and owns it (uninstalled,
        /// or a copy made elsewhere): nothing of it is created.
        pub const BLUEPRINT_MISSING: &str = "BlueprintMissing";
        /// The CSV was sealed for a revision its Blueprint has moved past (a copy replayed
        /// after an upgrade or a rollback): nothing of it is created.
        pub const REVISION_NOT_CURRENT: &str = "RevisionNotCurrent";
        /// The InstallPolicy that permitted the CSV changed or is gone since: nothing more of
        /// it is created until its Blueprint applies it under the policy as it is.
        pub const POLICY_CHANGED: &str = "PolicyChanged";
        /// Another install of the same CRDs serves their conversion webhook.
        pub const CONVERSION_SERVED_ELSEWHERE: &str = "ConversionServedElsewhere";
        /// This install's webhook serves the conversion of its CRDs.
        pub const CONVERSION_SERVED_HERE: &str = "ConversionServedHere";
        /// The install ServiceAccount may not create or grant what the CSV needs.
        pub const INSTALL_FORBIDDEN: &str = super::policy::INSTALL_FORBIDDEN;
    }

    /// Why an install was refused by the namespace's InstallPolicies.
    pub mod policy {
        pub const CATALOG_NOT_ALLOWED: &str = "CatalogNotAllowed";
        pub const PACKAGE_NOT_ALLOWED: &str = "PackageNotAllowed";
        pub const INSTALL_MODE_NOT_ALLOWED: &str = "InstallModeNotAllowed";
        pub const INSTALL_MODE_UNSUPPORTED: &str = "InstallModeUnsupported";
        pub const TARGET_NAMESPACE_NOT_ALLOWED: &str = "TargetNamespaceNotAllowed";
        pub const CLUSTER_SCOPED_NOT_ALLOWED: &str = "ClusterScopedNotAllowed";
        /// A CRD the bundle ships is managed by someone else (Helm, a person, another package)
        /// and nothing allows taking it over.
        pub const CRD_OWNED_ELSEWHERE: &str = "CRDOwnedElsewhere";
        /// The install ServiceAccount may not create or grant something (RBAC said no).
        pub const INSTALL_FORBIDDEN: &str = "InstallForbidden";
        /// Permitted: the condition names the policy and the identity.
        pub const PERMITTED: &str = "Permitted";
        /// A running install's policy stopped granting some of its cluster-scoped objects,
        /// and they were removed (the policy's `revocation: Withdraw`).
        pub const GRANT_WITHDRAWN: &str = "GrantWithdrawn";
        /// A running install is no longer permitted as it runs and is held as it is (the
        /// policy's `revocation: Hold`, or what was refused cannot be withdrawn).
        pub const GRANT_HELD: &str = "GrantHeld";
        /// An object the bundle ships exists and something else manages it.
        pub const OBJECT_OWNED_ELSEWHERE: &str = "ObjectOwnedElsewhere";
    }

    /// Why stored revision content is or is not used.
    pub mod revision {
        /// The revision Secret fails its seal: edited, copied or made outside windlass.
        pub const TAMPERED: &str = "RevisionTampered";
        /// Every revision Secret the Blueprint uses is sealed by this windlass.
        pub const SEALED: &str = "Sealed";
        /// The bundle image's signatures do not meet the TrustPolicies.
        pub const SIGNATURE_REFUSED: &str = "SignatureRefused";
    }

    /// Events on ImageMirrorSets.
    pub mod mirror {
        /// A rule fails windlass's checks and is left out; the set's other rules apply.
        pub const INVALID_RULE: &str = "InvalidMirrorRule";
    }

    /// A Catalog's `Serving` and `Verified` reasons.
    pub mod catalog {
        pub const CONTENT_SERVED: &str = "ContentServed";
        /// The catalog image's signatures meet every rule that covers it.
        pub const VERIFIED: &str = "Verified";
        /// No TrustPolicy rule covers the catalog image: served unverified.
        pub const NOT_COVERED: &str = "NotCovered";
        /// The image is unsigned and the rules that cover it only report that.
        pub const UNSIGNED_REPORTED: &str = "UnsignedReported";
        /// The image's signatures do not meet the rules: it is not served.
        pub const VERIFICATION_FAILED: &str = "VerificationFailed";
        /// The signatures could not be checked (registry or key material unreadable).
        pub const VERIFICATION_ERROR: &str = "VerificationError";
        /// `ContentValid=True`: every version passed lint.
        pub const VALID: &str = "Valid";
        /// Some versions fail lint and are not offered.
        pub const VERSIONS_HELD_BACK: &str = "VersionsHeldBack";
        /// Every version is offered, but something else is wrong (a file that could not be
        /// read, a default channel, `spec.delisted`).
        pub const PROBLEMS_FOUND: &str = "ProblemsFound";
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

/// How the plan of a Blueprint revision is kept: a Secret next to the revision's own, sealed
/// the same way.
pub mod plan_secret {
    /// The Secret type of a stored plan.
    pub const TYPE: &str = "windlass.dev/plan.v1";
    /// The key of the plan document (gzip of JSON) in the Secret.
    pub const DATA_KEY: &str = "plan.json.gz";
    /// What the seal names as the plan's owner kind (a revision's seal names `Blueprint`, so
    /// neither can pass for the other).
    pub const SEAL_KIND: &str = "BlueprintPlan";

    /// The plan Secret of revision `revision` of Blueprint `blueprint`.
    pub fn name(blueprint: &str, revision: i64) -> String {
        format!("{blueprint}.r{revision}.plan")
    }
}

/// How the custom resources of an operator are kept before an upgrade: Secrets next to the
/// revision's own, one per chunk, each sealed.
pub mod operands_secret {
    /// The Secret type of an operand snapshot chunk.
    pub const TYPE: &str = "windlass.dev/operands.v1";
    /// The key of the chunk's bytes (a slice of the gzip of JSON) in the Secret.
    pub const DATA_KEY: &str = "operands.json.gz.part";

    /// Chunk `index` of the snapshot revision `revision` of Blueprint `blueprint` took.
    pub fn name(blueprint: &str, revision: i64, index: usize) -> String {
        format!("{blueprint}.r{revision}.operands.{index}")
    }
}

/// How an applied release payload is kept in the cluster for rollbacks (a Secret in the
/// manager's namespace, sealed like revisions).
pub mod release_secret {
    /// The Secret type of a stored payload.
    pub const TYPE: &str = "windlass.dev/release-payload.v1";
    /// The key of the payload's files (gzip of JSON) in the Secret.
    pub const DATA_KEY: &str = "payload.json.gz";

    /// The Secret's name for the payload with manifest digest `digest` (`sha256:<hex>`).
    pub fn name(digest: &str) -> String {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        format!("windlass-release-{}", &hex[..hex.len().min(20)])
    }
}

/// Package views: one cluster-scoped `Package` per (catalog, package) pair.
pub mod package_view {
    /// The longest object name Kubernetes accepts for a cluster-scoped custom resource.
    const MAX_NAME: usize = 253;

    /// The Package object of `package` in `catalog`: `<package>.<catalog>` when that is a
    /// valid object name, otherwise a cleaned-up form with a hash of both, so two pairs never
    /// share a name.
    pub fn name(catalog: &str, package: &str) -> String {
        let plain = format!("{package}.{catalog}");
        if is_subdomain(&plain) {
            return plain;
        }
        let cleaned: String = plain
            .to_ascii_lowercase()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        let hash = format!("{:016x}", fnv1a(plain.as_bytes()));
        let room = MAX_NAME - hash.len() - 1;
        let stem: String = cleaned.chars().take(room).collect();
        let stem = stem.trim_matches(|c: char| !c.is_ascii_alphanumeric());
        format!("{stem}-{hash}")
    }

    /// `value` when it is a valid label value, so views can be selected by catalog and
    /// package (`kubectl get wpkg -l windlass.dev/catalog=builtin`).
    pub fn label_value(value: &str) -> Option<&str> {
        let ok = value.len() <= 63
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && value.starts_with(|c: char| c.is_ascii_alphanumeric())
            && value.ends_with(|c: char| c.is_ascii_alphanumeric());
        ok.then_some(value)
    }

    fn is_subdomain(name: &str) -> bool {
        name.len() <= MAX_NAME
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            })
    }

    /// FNV-1a: stable across builds and platforms, which a name must be.
    fn fnv1a(bytes: &[u8]) -> u64 {
        bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
            (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
        })
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn names_are_valid_and_distinct() {
            assert_eq!(name("builtin", "acme-db"), "acme-db.builtin");
            let upper = name("builtin", "Keycloak_Operator");
            assert!(is_subdomain(&upper), "{upper}");
            assert!(upper.starts_with("keycloak-operator.builtin-"), "{upper}");
            assert_ne!(upper, name("builtin", "keycloak-operator"));
            let long = name(&"c".repeat(200), &"p".repeat(100));
            assert!(is_subdomain(&long) && long.len() <= MAX_NAME, "{long}");
            assert_eq!(label_value("builtin"), Some("builtin"));
            assert_eq!(label_value(&"x".repeat(64)), None);
            assert_eq!(label_value("-x"), None);
        }
    }
}
