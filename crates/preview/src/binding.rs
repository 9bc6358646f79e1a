//! What approving a plan binds: the revision's content (every manifest as it will be applied,
//! converted for this Kubernetes, and the ClusterServiceVersion), the install settings, where
//! it installs and as whom. Its digest is the plan's digest.
//!
//! The digest covers what windlass will write, not the live state it is compared with: an
//! autoscaler moving replicas, or anyone else's change to a live object, leaves an approval
//! standing, while a republished bundle, another config, other target namespaces or another
//! install identity change the digest and the plan waits for approval again. Live drift a
//! plan would overwrite is listed in the plan itself ([`crate::Drift`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::model::ObjectRef;

/// The parts of a revision an approval binds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Binding {
    pub package: String,
    #[serde(rename = "clusterServiceVersionName")]
    pub cluster_service_version_name: String,
    pub version: String,
    /// The bundle's content digest, when the catalog gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle_digest: Option<String>,
    /// Whom namespaced objects are applied as (`manager`, or a ServiceAccount's user name).
    pub identity: String,
    /// The namespaces the operator is installed for (empty: all).
    #[serde(default)]
    pub target_namespaces: Vec<String>,
    /// `sha256:...` of the operator config (env, resources, ... for its Deployments).
    pub config: String,
    /// `Apply` the bundle's CRDs, or `KeepLive` (a rollback keeps the newer live ones).
    pub crds: String,
    /// Every manifest with the digest of its content, sorted.
    pub objects: Vec<BoundObject>,
}

/// One manifest of the revision and the digest of its content.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BoundObject {
    pub object: ObjectRef,
    pub sha256: String,
}

impl Binding {
    /// The plan digest: `sha256:` and the hex of the SHA-256 of the binding's canonical JSON.
    pub fn digest(&self) -> String {
        let value = serde_json::to_value(self).unwrap_or_default();
        format!("sha256:{}", sha256_hex(&canonical_json(&value)))
    }

    /// Adds a manifest (kept sorted, so the order manifests come in does not matter).
    pub fn bind(&mut self, object: &Value) {
        let bound = BoundObject {
            object: ObjectRef::of(object),
            sha256: object_hash(object),
        };
        let at = self.objects.binary_search(&bound).unwrap_or_else(|at| at);
        self.objects.insert(at, bound);
    }

    /// What differs between an earlier binding and this one, one line each, for a person:
    /// "the bundle's digest changed", "Deployment acme-db-operator: content changed", ...
    pub fn changes_since(&self, earlier: &Binding) -> Vec<String> {
        let mut out = Vec::new();
        if earlier.version != self.version
            || earlier.cluster_service_version_name != self.cluster_service_version_name
        {
            out.push(format!(
                "version {} ({}) -> {} ({})",
                earlier.version,
                earlier.cluster_service_version_name,
                self.version,
                self.cluster_service_version_name
            ));
        } else if earlier.bundle_digest != self.bundle_digest {
            out.push(format!(
                "the bundle was republished: digest {} -> {}",
                short(earlier.bundle_digest.as_deref()),
                short(self.bundle_digest.as_deref())
            ));
        }
        if earlier.config != self.config {
            out.push("the operator config changed".into());
        }
        if earlier.target_namespaces != self.target_namespaces {
            out.push(format!(
                "target namespaces {} -> {}",
                namespaces(&earlier.target_namespaces),
                namespaces(&self.target_namespaces)
            ));
        }
        if earlier.identity != self.identity {
            out.push(format!(
                "installed as {} instead of {}",
                self.identity, earlier.identity
            ));
        }
        if earlier.crds != self.crds {
            out.push(format!("CRDs: {} instead of {}", self.crds, earlier.crds));
        }
        let before: std::collections::BTreeMap<&ObjectRef, &str> = earlier
            .objects
            .iter()
            .map(|o| (&o.object, o.sha256.as_str()))
            .collect();
        let after: std::collections::BTreeMap<&ObjectRef, &str> = self
            .objects
            .iter()
            .map(|o| (&o.object, o.sha256.as_str()))
            .collect();
        for (object, hash) in &after {
            match before.get(object) {
                None => out.push(format!("{object}: added")),
                Some(old) if old != hash => out.push(format!("{object}: content changed")),
                Some(_) => {}
            }
        }
        for object in before.keys().filter(|o| !after.contains_key(*o)) {
            out.push(format!("{object}: no longer shipped"));
        }
        out
    }
}

fn short(digest: Option<&str>) -> String {
    match digest {
        Some(d) => {
            let hex = d.strip_prefix("sha256:").unwrap_or(d);
            format!("sha256:{}", &hex[..hex.len().min(12)])
        }
        None => "none".into(),
    }
}

fn namespaces(list: &[String]) -> String {
    if list.is_empty() {
        "all namespaces".into()
    } else {
        format!("[{}]", list.join(", "))
    }
}

/// `sha256:` and the hex SHA-256 of an object's canonical JSON.
pub fn object_hash(object: &Value) -> String {
    format!("sha256:{}", sha256_hex(&canonical_json(object)))
}

/// Lowercase hex of the SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// JSON with object keys sorted at every level and no whitespace, so that equal values give
/// equal bytes whatever order their keys came in.
pub fn canonical_json(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend(serde_json::to_vec(key).unwrap_or_default());
                out.push(b':');
                write_canonical(&map[key], out);
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
        scalar => out.extend(serde_json::to_vec(scalar).unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn binding() -> Binding {
        let mut binding = Binding {
            package: "acme-db".into(),
            cluster_service_version_name: "acme-db.v1.1.0".into(),
            version: "1.1.0".into(),
            bundle_digest: Some("sha256:aaaa".into()),
            identity: "system:serviceaccount:team-a:windlass-installer".into(),
            target_namespaces: vec!["team-a".into()],
            config: object_hash(&json!({})),
            crds: "Apply".into(),
            objects: Vec::new(),
        };
        binding.bind(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}, "data": {"x": "1"}}));
        binding.bind(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "1"}}));
        binding
    }

    #[test]
    fn key_order_does_not_change_the_digest_but_content_does() {
        let a: Value =
            serde_json::from_str(r#"{"b": 1, "a": {"y": [1, {"q": 2, "p": 3}], "x": null}}"#)
                .unwrap();
        let b: Value =
            serde_json::from_str(r#"{"a": {"x": null, "y": [1, {"p": 3, "q": 2}]}, "b": 1}"#)
                .unwrap();
        assert_eq!(canonical_json(&a), canonical_json(&b));
        assert_eq!(
            String::from_utf8(canonical_json(&a)).unwrap(),
            r#"{"a":{"x":null,"y":[1,{"p":3,"q":2}]},"b":1}"#
        );
        let c: Value =
            serde_json::from_str(r#"{"a": {"x": null, "y": [{"p": 3, "q": 2}, 1]}, "b": 1}"#)
                .unwrap();
        assert_ne!(object_hash(&a), object_hash(&c), "list order matters");
    }

    #[test]
    fn manifests_are_bound_in_a_stable_order() {
        let binding = binding();
        let names: Vec<&str> = binding
            .objects
            .iter()
            .map(|o| o.object.name.as_str())
            .collect();
        assert_eq!(names, ["a", "b"]);
        let mut other = Binding {
            objects: Vec::new(),
            ..binding.clone()
        };
        for object in binding.objects.iter().rev() {
            other.objects.push(object.clone());
        }
        other.objects.sort();
        assert_eq!(other.digest(), binding.digest());
        assert!(binding.digest().starts_with("sha256:") && binding.digest().len() == 71);
    }

    #[test]
    fn every_bound_part_moves_the_digest_and_is_named_as_a_change() {
        let base = binding();
        type Edit = fn(&mut Binding);
        let cases: [(Edit, &str); 7] = [
            (
                |b| b.bundle_digest = Some("sha256:bbbb".into()),
                "republished",
            ),
            (
                |b| b.config = object_hash(&json!({"env": [{"name": "X"}]})),
                "config",
            ),
            (|b| b.target_namespaces = vec![], "all namespaces"),
            (|b| b.identity = "manager".into(), "installed as manager"),
            (|b| b.crds = "KeepLive".into(), "KeepLive"),
            (
                |b| {
                    b.bind(
                        &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}),
                    )
                },
                "Secret s: added",
            ),
            (
                |b| {
                    b.objects.remove(0);
                    b.bind(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "2"}}));
                },
                "ConfigMap a: content changed",
            ),
        ];
        for (edit, said) in cases {
            let mut changed = base.clone();
            edit(&mut changed);
            assert_ne!(changed.digest(), base.digest(), "{said}");
            let changes = changed.changes_since(&base);
            assert!(
                changes.iter().any(|c| c.contains(said)),
                "{said}: {changes:?}"
            );
        }
        assert!(base.changes_since(&base).is_empty());
        let mut upgraded = base.clone();
        upgraded.version = "1.2.0".into();
        upgraded.cluster_service_version_name = "acme-db.v1.2.0".into();
        upgraded.bundle_digest = Some("sha256:cccc".into());
        let changes = upgraded.changes_since(&base);
        assert_eq!(
            changes,
            ["version 1.1.0 (acme-db.v1.1.0) -> 1.2.0 (acme-db.v1.2.0)"]
        );
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            "[a-z]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map("[a-e]{1,3}", inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn canonical_json_reads_back_as_the_same_value(value in json_value()) {
            let bytes = canonical_json(&value);
            let back: Value = serde_json::from_slice(&bytes).unwrap();
            prop_assert_eq!(&back, &value);
            prop_assert_eq!(canonical_json(&back), bytes);
        }
    }
}
