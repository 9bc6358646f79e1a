//! Finding the unusable constraints a bundle carries, with the file and field that hold them.

use windlass_bundle::Bundle as LoadedBundle;
use windlass_bundle::metadata::Dependency;

use super::{CONSTRAINT_TYPE, Constraint, ConstraintError};

/// One unusable constraint of a bundle read from a folder or an image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unusable {
    /// The bundle file, relative to the bundle: `metadata/dependencies.yaml` or
    /// `metadata/properties.yaml`.
    pub file: &'static str,
    /// Where in that file: `dependencies[2].value.cel.rule`.
    pub field: String,
    pub error: ConstraintError,
}

/// Every `olm.constraint` of `dependencies.yaml` and `properties.yaml` that cannot be used.
pub fn unusable_in_bundle(bundle: &LoadedBundle) -> Vec<Unusable> {
    let mut out = Vec::new();
    let mut check = |file: &'static str, list: &str, i: usize, value: &serde_json::Value| {
        if let Err(error) = Constraint::parse(value) {
            let at = format!("{list}[{i}].value");
            out.push(Unusable {
                file,
                field: if error.field.is_empty() {
                    at
                } else {
                    format!("{at}.{}", error.field)
                },
                error,
            });
        }
    };
    for (i, dependency) in bundle.dependencies.iter().enumerate() {
        if let Dependency::Other { type_, value } = dependency
            && type_ == CONSTRAINT_TYPE
        {
            check("metadata/dependencies.yaml", "dependencies", i, value);
        }
    }
    for (i, property) in bundle.properties.iter().enumerate() {
        if property["type"] == CONSTRAINT_TYPE {
            check(
                "metadata/properties.yaml",
                "properties",
                i,
                &property["value"],
            );
        }
    }
    out
}
