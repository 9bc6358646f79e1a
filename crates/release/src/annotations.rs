//! The names a payload is read by: the CVO's manifest annotations, the release-metadata keys the
//! graph builder reads, and windlass's own irreversible-level annotation.

/// `include.release.openshift.io/<profile>: "true"` includes a manifest in a cluster profile. A
/// manifest without the annotation for the cluster's profile is left out, as the CVO does.
pub const PROFILE_PREFIX: &str = "include.release.openshift.io/";

/// The profile a cluster has unless it says otherwise.
pub const DEFAULT_PROFILE: &str = "self-managed-high-availability";

/// `exclude.release.openshift.io/<identifier>: "true"` leaves a manifest out for clusters that
/// carry that identifier.
pub const EXCLUDE_PREFIX: &str = "exclude.release.openshift.io/";

/// A comma list of the feature sets a manifest belongs to; without it, every feature set.
pub const FEATURE_SET: &str = "release.openshift.io/feature-set";

/// A comma list of feature gates a manifest needs enabled (`Gate`) or disabled (`-Gate`).
pub const FEATURE_GATE: &str = "release.openshift.io/feature-gate";

/// The capabilities a manifest belongs to, joined by `+`; it is applied only when all of them
/// are enabled.
pub const CAPABILITY: &str = "capability.openshift.io/name";

/// `"true"`: create the object when it is missing, never update it.
pub const CREATE_ONLY: &str = "release.openshift.io/create-only";

/// `"true"`: delete the object instead of applying it. Any other value is an error.
pub const DELETE: &str = "release.openshift.io/delete";

/// windlass's own: `"true"` on a manifest makes its run level irreversible. Once an update has
/// started applying such a level (a storage migration, a CRD whose storage version moves on),
/// windlass refuses to roll that update back, and automatic rollback is possible only before it.
/// Any value but `"true"` or `"false"` is an error.
pub const IRREVERSIBLE: &str = "release.windlass.dev/irreversible";

/// Feature-set names the CVO knows. `Default` stands for the empty feature set.
pub const KNOWN_FEATURE_SETS: [&str; 5] = [
    "Default",
    "TechPreviewNoUpgrade",
    "DevPreviewNoUpgrade",
    "CustomNoUpgrade",
    "OKD",
];

/// Release-metadata key: the comma list of channels a release is in.
pub const CHANNELS_METADATA: &str = "io.openshift.upgrades.graph.release.channels";

/// Graph-node metadata key: the architecture of the payload image.
pub const ARCH_METADATA: &str = "io.openshift.upgrades.graph.release.arch";

/// Release-metadata key: where people read about a release.
pub const URL_METADATA: &str = "url";

/// Image label carrying the release version, as `oc adm release new` writes it.
pub const RELEASE_LABEL: &str = "io.openshift.release";

/// Image label with the time the payload image was built (RFC 3339).
pub const CREATED_LABEL: &str = "org.opencontainers.image.created";

/// Prefix of the risk a component reporting `Upgradeable=False` raises:
/// `ClusterOperatorUpgradeable-<component>`, the name the CVO uses, so `acceptRisks` lists read
/// the same on both.
pub const UPGRADEABLE_RISK_PREFIX: &str = "ClusterOperatorUpgradeable";
