//! Names, labels and annotations of what a Blueprint creates.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

/// The finalizer that removes the cluster-scoped objects a Blueprint applied.
pub const FINALIZER: &str = "windlass.dev/blueprint-cleanup";
/// On everything a Blueprint applies: the Blueprint's name (bounded to a label value).
pub const BLUEPRINT_LABEL: &str = "windlass.dev/blueprint";
/// On everything a Blueprint applies: the Blueprint's namespace, so cluster-scoped objects
/// of two same-named Blueprints in different namespaces are told apart.
pub const BLUEPRINT_NAMESPACE_LABEL: &str = "windlass.dev/blueprint-namespace";
/// Value of `app.kubernetes.io/managed-by`.
pub const MANAGED_BY_VALUE: &str = "windlass";
/// On the ClusterServiceVersion: the revision that last applied it. The CSV's status counts
/// for a revision only when this matches, so a CSV still reporting on an older spec (same name,
/// other config) never completes a newer revision.
pub const REVISION_ANNOTATION: &str = "windlass.dev/revision";
/// On a revision Secret: the kinds (`apiVersion/Kind`, comma-separated) its bundle ships besides
/// the CSV, so pruning and cleanup know which kinds to look for without decoding every revision.
pub const KINDS_ANNOTATION: &str = "windlass.dev/kinds";
/// On a revision Secret: the CRDs (names, comma-separated) its bundle ships. CRDs are shared by
/// every namespace, so they carry no Blueprint labels; cleanup finds them by name.
pub const CRDS_ANNOTATION: &str = "windlass.dev/crds";
/// The controller's name in Events.
pub const CONTROLLER_NAME: &str = "windlass-blueprint";

/// Label values allow 63 characters; longer names keep a prefix and a short hash of the whole,
/// so distinct names stay distinct and the value is stable across reconciles.
pub fn label_value(value: &str) -> String {
    const MAX: usize = 63;
    if value.len() <= MAX {
        return value.to_string();
    }
    let hash = Sha256::digest(value.as_bytes());
    let suffix: String = hash.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let mut prefix: String = value.chars().take(MAX - suffix.len() - 1).collect();
    while prefix.ends_with(['-', '.', '_']) {
        prefix.pop();
    }
    format!("{prefix}-{suffix}")
}

/// The labels on every object applied for the Blueprint `name` in `namespace`.
pub fn object_labels(name: &str, namespace: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (BLUEPRINT_LABEL.to_string(), label_value(name)),
        (
            BLUEPRINT_NAMESPACE_LABEL.to_string(),
            label_value(namespace),
        ),
        (
            windlass_api::MANAGED_BY_LABEL.to_string(),
            MANAGED_BY_VALUE.to_string(),
        ),
    ])
}

/// A label selector matching [`object_labels`].
pub fn selector(name: &str, namespace: &str) -> String {
    format!(
        "{BLUEPRINT_LABEL}={},{BLUEPRINT_NAMESPACE_LABEL}={}",
        label_value(name),
        label_value(namespace)
    )
}

/// A label selector for the revision Secrets of the Blueprint `name` (they live in its
/// namespace, so the name is enough).
pub fn revision_selector(name: &str) -> String {
    format!(
        "{BLUEPRINT_LABEL}={},{}",
        label_value(name),
        crate::revision::REVISION_LABEL
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_are_bounded_stably_and_distinctly() {
        assert_eq!(label_value("db"), "db");
        let long = "a".repeat(80);
        let bounded = label_value(&long);
        assert_eq!(bounded.len(), 63);
        assert_eq!(bounded, label_value(&long));
        assert_ne!(bounded, label_value(&format!("{long}b")));
    }

    #[test]
    fn selectors_match_the_labels() {
        let labels = object_labels("db", "team-a");
        assert_eq!(labels[BLUEPRINT_LABEL], "db");
        assert_eq!(
            selector("db", "team-a"),
            "windlass.dev/blueprint=db,windlass.dev/blueprint-namespace=team-a"
        );
    }
}
