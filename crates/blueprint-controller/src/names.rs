//! Names, labels and annotations of what a Blueprint creates.

use std::collections::BTreeMap;
use windlass_api::names::labels;

use sha2::{Digest, Sha256};

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
        (labels::BLUEPRINT.to_string(), label_value(name)),
        (
            labels::BLUEPRINT_NAMESPACE.to_string(),
            label_value(namespace),
        ),
        (
            labels::MANAGED_BY.to_string(),
            labels::MANAGED_BY_VALUE.to_string(),
        ),
    ])
}

/// A label selector matching [`object_labels`].
pub fn selector(name: &str, namespace: &str) -> String {
    format!(
        "{}={},{}={}",
        labels::BLUEPRINT,
        label_value(name),
        labels::BLUEPRINT_NAMESPACE,
        label_value(namespace)
    )
}

/// A label selector for the revision Secrets of the Blueprint `name` (they live in its
/// namespace, so the name is enough).
pub fn revision_selector(name: &str) -> String {
    format!(
        "{}={},{}",
        labels::BLUEPRINT,
        label_value(name),
        labels::REVISION
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
        assert_eq!(labels[labels::BLUEPRINT], "db");
        assert_eq!(
            selector("db", "team-a"),
            "windlass.dev/blueprint=db,windlass.dev/blueprint-namespace=team-a"
        );
    }
}
