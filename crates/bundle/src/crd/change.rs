//! The record of what a conversion changed, kept short enough for an Event and a condition.

use serde::{Deserialize, Serialize};

/// One change windlass made to a bundle object so that the pinned Kubernetes version accepts it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// The CustomResourceDefinition's name (or `Kind/name` for other objects).
    pub crd: String,
    /// Where in the object as shipped, in Kubernetes field-path notation
    /// (`spec.validation.openAPIV3Schema.properties[spec]`).
    pub path: String,
    /// What was changed.
    pub what: String,
    /// Why the change was needed.
    pub why: String,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {} ({})",
            self.crd, self.path, self.what, self.why
        )
    }
}

/// Collects changes for one object; the order of recording is the order of the report.
#[derive(Debug)]
pub(crate) struct Recorder {
    object: String,
    pub(crate) changes: Vec<Change>,
}

impl Recorder {
    pub(crate) fn new(object: impl Into<String>) -> Self {
        Self {
            object: object.into(),
            changes: Vec::new(),
        }
    }

    pub(crate) fn object(&self) -> &str {
        &self.object
    }

    pub(crate) fn record(&mut self, path: &str, what: impl Into<String>, why: impl Into<String>) {
        self.changes.push(Change {
            crd: self.object.clone(),
            path: path.to_string(),
            what: what.into(),
            why: why.into(),
        });
    }
}

/// Field-path helpers in the notation Kubernetes uses in its own validation messages, so a
/// user can match our changes with what the API server would have said.
pub(crate) fn child(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

pub(crate) fn key(path: &str, field: &str, key: &str) -> String {
    format!("{}[{key}]", child(path, field))
}

pub(crate) fn index(path: &str, field: &str, i: usize) -> String {
    format!("{}[{i}]", child(path, field))
}

/// A list item or map value of the value at `path`: `spec.items[0]`, `spec.labels[app]`.
pub(crate) fn element(path: &str, key: &str) -> String {
    format!("{path}[{key}]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_one_short_line() {
        let c = Change {
            crd: "widgets.example.com".into(),
            path: "spec.scope".into(),
            what: "set to Namespaced".into(),
            why: "v1beta1 defaulted an empty scope".into(),
        };
        assert_eq!(
            c.to_string(),
            "widgets.example.com spec.scope: set to Namespaced (v1beta1 defaulted an empty scope)"
        );
    }

    #[test]
    fn paths_follow_kubernetes_notation() {
        assert_eq!(
            key("spec.validation.openAPIV3Schema", "properties", "spec"),
            "spec.validation.openAPIV3Schema.properties[spec]"
        );
        assert_eq!(index("spec", "versions", 2), "spec.versions[2]");
        assert_eq!(child("", "spec"), "spec");
    }
}
