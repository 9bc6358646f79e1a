//! The CRD-wide rules (scope, stored and served versions) and the schema rules per version: each
//! version both CRDs define, old against new, and each pair of versions the new CRD serves,
//! ratcheted against the same pair in the live CRD.

use std::cmp::Ordering;

use serde_json::{Value, json};

use super::diff::{self, SchemaChange};
use super::finding::{Violation, ViolationKind};
use super::json::preview;

pub(crate) fn versions(crd: &Value) -> impl Iterator<Item = &Value> {
    crd["spec"]["versions"].as_array().into_iter().flatten()
}

/// Names of the versions with `served: true`, in definition order.
pub fn served_versions(crd: &Value) -> Vec<String> {
    versions(crd)
        .filter(|v| v["served"].as_bool() == Some(true))
        .filter_map(|v| v["name"].as_str().map(str::to_string))
        .collect()
}

/// `status.storedVersions` (empty when the CRD has no status yet).
pub fn stored_versions(crd: &Value) -> Vec<String> {
    crd["status"]["storedVersions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

/// Versions served by both CRDs, in the new CRD's order: the versions whose existing objects
/// are validated.
pub fn versions_to_check(live: &Value, new: &Value) -> Vec<String> {
    let old = served_versions(live);
    served_versions(new)
        .into_iter()
        .filter(|v| old.contains(v))
        .collect()
}

pub(crate) fn defined_versions(crd: &Value) -> Vec<String> {
    let mut names: Vec<String> = versions(crd)
        .filter_map(|v| v["name"].as_str().map(str::to_string))
        .collect();
    // apiextensions v1beta1's single `spec.version`, in case a caller passes one unconverted.
    if let Some(v) = crd["spec"]["version"].as_str() {
        names.push(v.to_string());
    }
    names
}

pub(crate) fn scope(crd: &Value) -> &str {
    crd["spec"]["scope"]
        .as_str()
        .filter(|s| !s.is_empty())
        .unwrap_or("Namespaced")
}

/// A CRD's schema of `version`: per-version, or the v1beta1 top-level one.
pub(crate) fn version_schema<'a>(crd: &'a Value, version: &str) -> Option<&'a Value> {
    let entry = versions(crd).find(|v| v["name"].as_str() == Some(version))?;
    let own = &entry["schema"]["openAPIV3Schema"];
    let shared = &crd["spec"]["validation"]["openAPIV3Schema"];
    [own, shared].into_iter().find(|s| s.is_object())
}

/// Stored versions removed and scope changes (OLM v0's rules, which the API server also
/// enforces), and served versions that stop being served.
pub(crate) fn crd_rules(crd: &str, live: &Value, new: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    let new_versions = defined_versions(new);
    let stored = stored_versions(live);
    for version in &stored {
        if !new_versions.contains(version) {
            let mut v = Violation::new(
                crd,
                ViolationKind::StoredVersionRemoved,
                format!(
                    "version {version} is listed in status.storedVersions but the new definition \
                     drops it; objects stored as {version} would become unreadable (migrate them \
                     and remove {version} from status.storedVersions first)"
                ),
            );
            v.version = Some(version.clone());
            out.push(v);
        }
    }
    let (old_scope, new_scope) = (scope(live), scope(new));
    if old_scope != new_scope {
        let mut v = Violation::new(
            crd,
            ViolationKind::ScopeChanged,
            format!(
                "scope would change from {old_scope} to {new_scope}; a CRD's scope cannot change"
            ),
        );
        v.field = Some("spec.scope".to_string());
        v.old = Some(old_scope.to_string());
        v.new = Some(new_scope.to_string());
        out.push(v);
    }
    let still_served = served_versions(new);
    for version in served_versions(live) {
        if still_served.contains(&version)
            || (stored.contains(&version) && !new_versions.contains(&version))
        {
            continue;
        }
        let what = if new_versions.contains(&version) {
            "is no longer served"
        } else {
            "is removed"
        };
        let mut v = Violation::new(
            crd,
            ViolationKind::ServedVersionRemoved,
            format!(
                "version {version} {what}; clients that use it get errors, the objects stay \
                 readable in the other versions"
            ),
        );
        v.version = Some(version.clone());
        out.push(v);
    }
    out
}

fn to_violation(crd: &str, version: &str, change: SchemaChange) -> Violation {
    let mut v = Violation::new(crd, change.kind, change.message);
    v.version = Some(version.to_string());
    v.field = Some(change.path);
    v.old = change.old.as_ref().map(preview_value);
    v.new = change.new.as_ref().map(preview_value);
    v
}

fn preview_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => preview(other),
    }
}

/// Schema rules: each version defined by both CRDs, old schema against new; then each pair of
/// versions the new CRD serves (objects are served in every version alike, so a stricter
/// version refuses what another accepts), with the problems the live CRD's same pair already
/// had ratcheted. Pairs are skipped under webhook conversion, which may translate between
/// differently shaped versions on purpose.
pub(crate) fn schema_rules(crd: &str, live: &Value, new: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    for version in defined_versions(live) {
        let (Some(old), Some(next)) = (
            version_schema(live, &version),
            version_schema(new, &version),
        ) else {
            continue;
        };
        out.extend(
            diff::compare(old, next)
                .into_iter()
                .map(|c| to_violation(crd, &version, c)),
        );
    }
    if new["spec"]["conversion"]["strategy"].as_str() == Some("Webhook") {
        return out;
    }
    let before = served_pairs(live);
    for (pair, changes) in served_pairs(new) {
        let known = before
            .iter()
            .find(|(p, _)| *p == pair)
            .map(|(_, c)| c.as_slice())
            .unwrap_or(&[]);
        for change in changes {
            let ratcheted = known.contains(&change);
            let v = to_violation(crd, &pair, change);
            out.push(if ratcheted { v.ratchet() } else { v });
        }
    }
    out
}

/// Every pair of served versions, lower priority first, with its schema changes.
fn served_pairs(crd: &Value) -> Vec<(String, Vec<SchemaChange>)> {
    let mut served = served_versions(crd);
    served.sort_by(|a, b| kube_version_order(a, b));
    let mut out = Vec::new();
    for (i, lower) in served.iter().enumerate() {
        for higher in &served[i + 1..] {
            let (Some(a), Some(b)) = (version_schema(crd, lower), version_schema(crd, higher))
            else {
                continue;
            };
            out.push((format!("{lower} -> {higher}"), diff::compare(a, b)));
        }
    }
    out
}

/// Kubernetes' version priority, lowest first: names that are not `v<N>[alpha|beta<M>]`
/// (alphabetically), then alphas, betas and GA versions, each by number.
pub(crate) fn kube_version_order(a: &str, b: &str) -> Ordering {
    fn key(name: &str) -> (u8, u64, u64, String) {
        let parsed = name.strip_prefix('v').and_then(|rest| {
            let digits = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            let major: u64 = rest[..digits].parse().ok()?;
            let tail = &rest[digits..];
            if tail.is_empty() {
                return Some((3, major, 0));
            }
            for (word, class) in [("alpha", 1u8), ("beta", 2u8)] {
                if let Some(minor) = tail.strip_prefix(word)
                    && let Ok(minor) = minor.parse::<u64>()
                {
                    return Some((class, major, minor));
                }
            }
            None
        });
        match parsed {
            Some((class, major, minor)) => (class, major, minor, String::new()),
            // Reverse alphabetical inside the lowest class, so that sorting ascending puts
            // "foo1" after "foo10" as Kubernetes does.
            None => (0, 0, 0, name.to_string()),
        }
    }
    let (ka, kb) = (key(a), key(b));
    ka.0.cmp(&kb.0)
        .then(ka.1.cmp(&kb.1))
        .then(ka.2.cmp(&kb.2))
        .then_with(|| kb.3.cmp(&ka.3))
}

/// The CRD's name as reports show it.
pub(crate) fn crd_name(new: &Value, live: &Value) -> String {
    new["metadata"]["name"]
        .as_str()
        .or(live["metadata"]["name"].as_str())
        .unwrap_or("<unnamed CRD>")
        .to_string()
}

/// A minimal CRD around one schema, for tests and callers that compare bare schemas.
pub fn single_version_crd(name: &str, group: &str, kind: &str, schema: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": name.split('.').next().unwrap_or(name)},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": schema}}],
        },
        "status": {"storedVersions": ["v1"]},
    })
}

#[cfg(test)]
mod tests {
    use super::kube_version_order;

    #[test]
    fn versions_sort_by_kubernetes_priority() {
        let mut names = vec![
            "v1",
            "v10",
            "v2",
            "v11beta2",
            "v10beta3",
            "v3beta1",
            "v12alpha1",
            "v11alpha2",
            "foo1",
            "foo10",
        ];
        names.sort_by(|a, b| kube_version_order(a, b));
        assert_eq!(
            names,
            [
                "foo10",
                "foo1",
                "v11alpha2",
                "v12alpha1",
                "v3beta1",
                "v10beta3",
                "v11beta2",
                "v1",
                "v2",
                "v10"
            ]
        );
    }
}
