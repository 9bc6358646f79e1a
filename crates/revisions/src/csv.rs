//! Seals on windlass ClusterServiceVersions. A CSV's spec says which RBAC, Deployments and
//! webhooks the CSV controller creates, so it is worth as much as the permissions in it: the
//! Blueprint controller seals what it applies, and the CSV controller acts only on a CSV whose
//! seal checks. A namespace user who may write CSVs can neither create one that is acted on
//! nor widen one windlass wrote.
//!
//! The seal covers the fields that decide what is created and as whom (`definition`,
//! `targetNamespaces`, `config`, `installServiceAccount`, `imageRewrites`, which decides the
//! images the operator runs, and `grant`: the Blueprint, revision and policy generation the
//! CSV was applied under and the cluster-scoped objects it may have) in a canonical form,
//! because the API server hands the object back with its keys reordered and numbers
//! re-rendered. The grant is what keeps a seal from outliving its authority: the CSV
//! controller checks it against the live Blueprint and policy.

use serde_json::Value;

use crate::seal::{self, SealError, SealKey, Subject};

const KIND: &str = "ClusterServiceVersion";

fn subject(namespace: &str, name: &str) -> Subject {
    Subject {
        kind: KIND.to_string(),
        object: format!("{namespace}/{name}"),
        uid: String::new(),
        revision: None,
    }
}

/// The sealed parts of `spec`, canonical: keys sorted, nulls left out, whole floats written as
/// integers, and a missing `targetNamespaces` or `config` the same as an empty one. Image
/// rewrites are a part only when there are any, so CSVs sealed before they existed still check.
fn parts(spec: &Value) -> Vec<Vec<u8>> {
    let field = |key: &str, empty: Value| match spec.get(key) {
        None | Some(Value::Null) => empty,
        Some(value) => value.clone(),
    };
    let mut parts = vec![
        canonical(&field("definition", Value::Null)),
        canonical(&field("targetNamespaces", Value::Array(Vec::new()))),
        canonical(&field("config", Value::Object(Default::default()))),
        canonical(&field("installServiceAccount", Value::Null)),
    ];
    match spec.get("imageRewrites") {
        Some(Value::Array(rewrites)) if !rewrites.is_empty() => {
            parts.push(canonical(&Value::Array(rewrites.clone())));
        }
        _ => {}
    }
    // Always a part, so a grant cannot be dropped or added without breaking the seal.
    parts.push(canonical(&field("grant", Value::Null)));
    parts
}

fn canonical(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> =
                map.iter().filter(|(_, v)| !v.is_null()).collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend(Value::String(key.clone()).to_string().as_bytes());
                out.push(b':');
                write_canonical(value, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        Value::Number(number) => match number.as_f64() {
            Some(f) if number.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15 => {
                out.extend((f as i64).to_string().as_bytes());
            }
            _ => out.extend(number.to_string().as_bytes()),
        },
        other => out.extend(other.to_string().as_bytes()),
    }
}

/// The seal of CSV `namespace/name` with `spec` (the CSV's `spec` as JSON).
pub fn seal_spec(key: &SealKey, namespace: &str, name: &str, spec: &Value) -> String {
    let parts = parts(spec);
    let content: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    seal::seal(key, &subject(namespace, name), &content)
}

/// Whether `found` is the seal windlass wrote for CSV `namespace/name` with exactly `spec`.
pub fn verify_spec(
    key: &SealKey,
    namespace: &str,
    name: &str,
    spec: &Value,
    found: Option<&str>,
) -> Result<(), SealError> {
    let parts = parts(spec);
    let content: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    seal::verify(key, &subject(namespace, name), &content, found)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::seal::KEY_BYTES;

    fn key() -> SealKey {
        SealKey::from_bytes(&[7; KEY_BYTES]).unwrap()
    }

    fn spec() -> Value {
        json!({
            "definition": {"spec": {"install": {"spec": {"permissions": [
                {"serviceAccountName": "db", "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}
            ]}}, "replicas": 1.0}},
            "targetNamespaces": ["team-a"],
            "supersedes": "db.v1.0.0",
        })
    }

    #[test]
    fn the_spec_as_the_api_server_returns_it_still_checks() {
        let sealed = seal_spec(&key(), "team-a", "db.v1.1.0", &spec());
        // Keys sorted, the float rendered as an integer, an empty config and a null added, and
        // fields the seal does not cover (supersedes) changed.
        let returned = json!({
            "config": {},
            "definition": {"extra": null, "spec": {"replicas": 1, "install": {"spec": {"permissions": [
                {"rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}], "serviceAccountName": "db"}
            ]}}}},
            "supersedes": null,
            "targetNamespaces": ["team-a"],
        });
        verify_spec(&key(), "team-a", "db.v1.1.0", &returned, Some(&sealed)).unwrap();
    }

    #[test]
    fn a_widened_moved_or_unsealed_csv_does_not_check() {
        let sealed = seal_spec(&key(), "team-a", "db.v1.1.0", &spec());
        let mut widened = spec();
        widened["definition"]["spec"]["install"]["spec"]["clusterPermissions"] = json!([{"serviceAccountName": "db", "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}]);
        assert_eq!(
            verify_spec(&key(), "team-a", "db.v1.1.0", &widened, Some(&sealed)),
            Err(SealError::Mismatch)
        );
        // Dropping the install identity (to be installed as the manager) breaks the seal.
        let mut with_installer = spec();
        with_installer["installServiceAccount"] = json!("windlass-installer");
        let sealed_with_installer = seal_spec(&key(), "team-a", "db.v1.1.0", &with_installer);
        assert_eq!(
            verify_spec(
                &key(),
                "team-a",
                "db.v1.1.0",
                &spec(),
                Some(&sealed_with_installer)
            ),
            Err(SealError::Mismatch)
        );
        let mut all_namespaces = spec();
        all_namespaces["targetNamespaces"] = json!([]);
        assert_eq!(
            verify_spec(
                &key(),
                "team-a",
                "db.v1.1.0",
                &all_namespaces,
                Some(&sealed)
            ),
            Err(SealError::Mismatch)
        );
        assert_eq!(
            verify_spec(&key(), "team-b", "db.v1.1.0", &spec(), Some(&sealed)),
            Err(SealError::Mismatch)
        );
        assert_eq!(
            verify_spec(&key(), "team-a", "db.v1.1.0", &spec(), None),
            Err(SealError::Missing)
        );
        let other_key = SealKey::from_bytes(&[8; KEY_BYTES]).unwrap();
        assert_eq!(
            verify_spec(&other_key, "team-a", "db.v1.1.0", &spec(), Some(&sealed)),
            Err(SealError::Mismatch)
        );
    }

    #[test]
    fn the_images_a_csv_runs_instead_are_sealed_too() {
        let mut mirrored = spec();
        mirrored["imageRewrites"] = json!([{
            "image": "quay.io/acme/db@sha256:1",
            "mirror": "registry.site/acme/db@sha256:1",
            "mirrorSet": "site",
        }]);
        let sealed = seal_spec(&key(), "team-a", "db.v1.1.0", &mirrored);
        verify_spec(&key(), "team-a", "db.v1.1.0", &mirrored, Some(&sealed)).unwrap();
        let mut elsewhere = mirrored.clone();
        elsewhere["imageRewrites"][0]["mirror"] = json!("evil.example/db:latest");
        assert_eq!(
            verify_spec(&key(), "team-a", "db.v1.1.0", &elsewhere, Some(&sealed)),
            Err(SealError::Mismatch)
        );
        assert_eq!(
            verify_spec(&key(), "team-a", "db.v1.1.0", &spec(), Some(&sealed)),
            Err(SealError::Mismatch),
            "dropping the rewrites breaks the seal"
        );
        // No rewrites: the seal is the one CSVs had before rewrites existed.
        let mut empty = spec();
        empty["imageRewrites"] = json!([]);
        let plain = seal_spec(&key(), "team-a", "db.v1.1.0", &spec());
        verify_spec(&key(), "team-a", "db.v1.1.0", &empty, Some(&plain)).unwrap();
    }

    #[test]
    fn the_grant_is_sealed_so_no_copy_outlives_its_blueprint_or_policy() {
        let mut granted = spec();
        granted["grant"] = json!({
            "blueprintUID": "uid-1", "revision": 2, "policy": "tenants",
            "policyGeneration": 3, "clusterScoped": ["ClusterPermissions"],
        });
        let sealed = seal_spec(&key(), "team-a", "db.v1.1.0", &granted);
        verify_spec(&key(), "team-a", "db.v1.1.0", &granted, Some(&sealed)).unwrap();
        for (field, value) in [
            ("blueprintUID", json!("uid-2")),
            ("revision", json!(1)),
            ("policyGeneration", json!(4)),
            ("clusterScoped", json!(["ClusterPermissions", "Webhooks"])),
        ] {
            let mut changed = granted.clone();
            changed["grant"][field] = value;
            assert_eq!(
                verify_spec(&key(), "team-a", "db.v1.1.0", &changed, Some(&sealed)),
                Err(SealError::Mismatch),
                "{field}"
            );
        }
        assert_eq!(
            verify_spec(&key(), "team-a", "db.v1.1.0", &spec(), Some(&sealed)),
            Err(SealError::Mismatch),
            "dropping the grant breaks the seal"
        );
    }

    #[test]
    fn canonical_form_keeps_what_differs() {
        assert_ne!(canonical(&json!([1, 2])), canonical(&json!([2, 1])));
        assert_ne!(canonical(&json!({"a": "1"})), canonical(&json!({"a": 1})));
        assert_eq!(
            canonical(&json!({"b": 1.5, "a": [true]})),
            br#"{"a":[true],"b":1.5}"#
        );
    }
}
