//! CustomResourceDefinitions: reading `apiextensions.k8s.io/v1` and the legacy `v1beta1`, and
//! converting the latter to structural v1 with a record of every change.
//!
//! The conversion is pure (no cluster), deterministic (key order follows the input) and
//! idempotent: converting its output again changes nothing, and a v1 CRD that the API server
//! already accepts comes back unchanged with no changes listed. The stages:
//! - `moves`: v1beta1 fields to their v1 places, and the defaults v1beta1 applied but v1 does not;
//! - `schema`: each schema repaired into a structural one (`schema::junctors` for `anyOf` & co);
//! - `check`: an independent structural check of the result, so what cannot be repaired is
//!   refused here with its path rather than by the API server halfway through an install.

mod change;
pub mod check;
mod moves;
pub mod safety;
mod schema;

use serde_json::Value;

pub use change::Change;
pub(crate) use change::Recorder;

pub const API_V1: &str = "apiextensions.k8s.io/v1";
pub const API_V1BETA1: &str = "apiextensions.k8s.io/v1beta1";

/// An object after conversion, with what was changed to get there.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    pub object: Value,
    pub changes: Vec<Change>,
}

/// Why an object cannot be made acceptable to the pinned Kubernetes version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    #[error("not a CustomResourceDefinition (apiVersion {api_version:?}, kind {kind:?})")]
    NotACrd { api_version: String, kind: String },
    #[error("CustomResourceDefinition {crd}: {path}: {reason}")]
    Crd {
        crd: String,
        path: String,
        reason: String,
    },
    #[error("{file}: {kind} {name}: {path}: {reason}")]
    Manifest {
        file: String,
        kind: String,
        name: String,
        path: String,
        reason: String,
    },
}

/// True for objects of either CustomResourceDefinition version.
pub fn is_crd(object: &Value) -> bool {
    let api = object.get("apiVersion").and_then(Value::as_str);
    object.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
        && matches!(api, Some(API_V1 | API_V1BETA1))
}

/// The CRD's name as the report shows it.
fn crd_name(crd: &Value) -> String {
    crd.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("<unnamed>")
        .to_string()
}

/// Converts a CustomResourceDefinition of either version into an `apiextensions.k8s.io/v1` CRD
/// with structural schemas that keeps what the original accepted and stored.
pub fn to_v1(crd: &Value) -> Result<Converted, ConvertError> {
    let text = |p: &str| {
        crd.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (api_version, kind) = (text("/apiVersion"), text("/kind"));
    if kind != "CustomResourceDefinition" || !matches!(api_version.as_str(), API_V1 | API_V1BETA1) {
        return Err(ConvertError::NotACrd { api_version, kind });
    }
    let name = crd_name(crd);
    let mut object = crd.clone();
    let mut rec = Recorder::new(name.clone());
    let Some(map) = object.as_object_mut() else {
        return Err(ConvertError::NotACrd { api_version, kind });
    };
    if api_version == API_V1BETA1 {
        moves::from_v1beta1(map, &mut rec)?;
    } else {
        moves::tidy_v1(map, &mut rec)?;
    }
    verify(&object, &name)?;
    Ok(Converted {
        object,
        changes: rec.changes,
    })
}

/// Runs the structural check on every version of a converted CRD.
fn verify(object: &Value, name: &str) -> Result<(), ConvertError> {
    let versions = object
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for (i, version) in versions.enumerate() {
        let path = format!("spec.versions[{i}].schema.openAPIV3Schema");
        let Some(schema) = version.pointer("/schema/openAPIV3Schema") else {
            continue;
        };
        if let Some(p) = check::structural_problems(schema, &path).into_iter().next() {
            return Err(ConvertError::Crd {
                crd: name.to_string(),
                path: p.path,
                reason: p.reason,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
