//! The permissions an operator holds, from the RBAC objects installed for it: every binding's
//! subjects get the rules of the role it refers to, in the binding's namespace (a RoleBinding)
//! or cluster-wide (a ClusterRoleBinding). Rules are split into single grants (one API group,
//! resource, verb and object name each) so that the difference between two installs is exact:
//! a verb added to a rule is one grant gained, a rule moved from a Role to a ClusterRole is
//! lost in a namespace and gained cluster-wide.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::model::{Grant, RbacDelta};

const RBAC: &str = "rbac.authorization.k8s.io/v1";

/// Every grant the bindings among `objects` give, to the roles among `objects` (roles bound
/// but not among them are not known and count for nothing).
pub fn grants(objects: &[Value]) -> BTreeSet<Grant> {
    let mut roles: BTreeMap<(Option<&str>, &str), &Value> = BTreeMap::new();
    for object in objects.iter().filter(|o| o["apiVersion"] == RBAC) {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        match object["kind"].as_str() {
            Some("Role") => {
                let ns = object["metadata"]["namespace"].as_str();
                roles.insert((ns, name), &object["rules"]);
            }
            Some("ClusterRole") => {
                roles.insert((None, name), &object["rules"]);
            }
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    for binding in objects.iter().filter(|o| o["apiVersion"] == RBAC) {
        let namespace = match binding["kind"].as_str() {
            Some("RoleBinding") => binding["metadata"]["namespace"].as_str(),
            Some("ClusterRoleBinding") => None,
            _ => continue,
        };
        let role_name = binding["roleRef"]["name"].as_str().unwrap_or_default();
        let role = match binding["roleRef"]["kind"].as_str() {
            Some("Role") => roles.get(&(namespace, role_name)),
            Some("ClusterRole") => roles.get(&(None, role_name)),
            _ => None,
        };
        let Some(rules) = role.and_then(|r| r.as_array()) else {
            continue;
        };
        for subject in binding["subjects"].as_array().into_iter().flatten() {
            let subject = subject_name(subject, namespace);
            for rule in rules {
                expand(rule, &subject, namespace, &mut out);
            }
        }
    }
    out
}

fn subject_name(subject: &Value, binding_namespace: Option<&str>) -> String {
    let name = subject["name"].as_str().unwrap_or_default();
    match subject["kind"].as_str() {
        Some("ServiceAccount") => {
            let ns = subject["namespace"]
                .as_str()
                .or(binding_namespace)
                .unwrap_or_default();
            format!("{ns}/{name}")
        }
        Some(kind) => format!("{kind} {name}"),
        None => name.to_string(),
    }
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

fn expand(rule: &Value, subject: &str, namespace: Option<&str>, out: &mut BTreeSet<Grant>) {
    let verbs = strings(&rule["verbs"]);
    // Non-resource URLs are only meaningful cluster-wide.
    if namespace.is_none() {
        for url in strings(&rule["nonResourceURLs"]) {
            for verb in &verbs {
                out.insert(Grant {
                    subject: subject.to_string(),
                    namespace: None,
                    api_group: String::new(),
                    resource: url.to_string(),
                    verb: verb.to_string(),
                    resource_name: None,
                });
            }
        }
    }
    let names = strings(&rule["resourceNames"]);
    let names: Vec<Option<&str>> = if names.is_empty() {
        vec![None]
    } else {
        names.into_iter().map(Some).collect()
    };
    for group in strings(&rule["apiGroups"]) {
        for resource in strings(&rule["resources"]) {
            for verb in &verbs {
                for name in &names {
                    out.insert(Grant {
                        subject: subject.to_string(),
                        namespace: namespace.map(str::to_string),
                        api_group: group.to_string(),
                        resource: resource.to_string(),
                        verb: verb.to_string(),
                        resource_name: name.map(str::to_string),
                    });
                }
            }
        }
    }
}

/// What the operator gains and loses going from the RBAC of `before` to that of `after`.
pub fn delta(before: &[Value], after: &[Value]) -> RbacDelta {
    let old = grants(before);
    let new = grants(after);
    RbacDelta {
        gained: new.difference(&old).cloned().collect(),
        lost: old.difference(&new).cloned().collect(),
    }
}

/// Grants gathered back into readable lines: one per subject, place and resource, with its
/// verbs, e.g. `team-a/acme-db-operator cluster-wide: nodes: get, list, watch`.
pub fn lines(grants: &[Grant]) -> Vec<String> {
    let mut grouped: BTreeMap<(String, Option<String>, String), BTreeSet<String>> = BTreeMap::new();
    for grant in grants {
        let mut resource = if grant.api_group.is_empty() && grant.resource.starts_with('/') {
            format!("URL {}", grant.resource)
        } else if grant.api_group.is_empty() {
            grant.resource.clone()
        } else {
            format!("{}.{}", grant.resource, grant.api_group)
        };
        if let Some(name) = &grant.resource_name {
            resource.push_str(&format!(" named {name}"));
        }
        grouped
            .entry((grant.subject.clone(), grant.namespace.clone(), resource))
            .or_default()
            .insert(grant.verb.clone());
    }
    grouped
        .into_iter()
        .map(|((subject, namespace, resource), verbs)| {
            let place = match namespace {
                Some(ns) => format!("in {ns}"),
                None => "cluster-wide".to_string(),
            };
            let verbs: Vec<String> = verbs.into_iter().collect();
            format!("{subject} {place}: {resource}: {}", verbs.join(", "))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn role(kind: &str, name: &str, ns: Option<&str>, rules: Value) -> Value {
        let mut meta = json!({"name": name});
        if let Some(ns) = ns {
            meta["namespace"] = json!(ns);
        }
        json!({"apiVersion": RBAC, "kind": kind, "metadata": meta, "rules": rules})
    }

    fn binding(kind: &str, name: &str, ns: Option<&str>, role_kind: &str, role: &str) -> Value {
        let mut meta = json!({"name": name});
        if let Some(ns) = ns {
            meta["namespace"] = json!(ns);
        }
        json!({"apiVersion": RBAC, "kind": kind, "metadata": meta,
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
               "subjects": [{"kind": "ServiceAccount", "name": "op", "namespace": "team-a"}]})
    }

    fn install(namespaced: Value, cluster: Value) -> Vec<Value> {
        vec![
            role("Role", "op-v1", Some("team-a"), namespaced),
            binding("RoleBinding", "op-v1", Some("team-a"), "Role", "op-v1"),
            role("ClusterRole", "op-v1-cluster", None, cluster),
            binding(
                "ClusterRoleBinding",
                "op-v1-cluster",
                None,
                "ClusterRole",
                "op-v1-cluster",
            ),
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "op"}}),
        ]
    }

    #[test]
    fn gained_and_lost_are_exact_per_verb_and_place() {
        let before = install(
            json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]),
            json!([{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]),
        );
        let after = install(
            json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "delete"]},
                   {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"], "resourceNames": ["a", "b"]}]),
            json!([{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]},
                   {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]),
        );
        let delta = delta(&before, &after);
        assert_eq!(
            lines(&delta.gained),
            [
                "team-a/op cluster-wide: URL /metrics: get",
                "team-a/op cluster-wide: namespaces: list",
                "team-a/op in team-a: configmaps: delete",
                "team-a/op in team-a: deployments.apps named a: get",
                "team-a/op in team-a: deployments.apps named b: get",
            ]
        );
        assert_eq!(lines(&delta.lost), ["team-a/op cluster-wide: nodes: get"]);
        assert!(delta.lost.iter().all(Grant::cluster_wide));
        assert!(super::delta(&after, &after).is_empty());
    }

    #[test]
    fn a_rule_moving_from_a_namespace_to_the_cluster_is_lost_there_and_gained_cluster_wide() {
        let rule = json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]);
        let before = install(rule.clone(), json!([]));
        let after = install(json!([]), rule);
        let delta = delta(&before, &after);
        assert_eq!(lines(&delta.lost), ["team-a/op in team-a: secrets: get"]);
        assert_eq!(
            lines(&delta.gained),
            ["team-a/op cluster-wide: secrets: get"]
        );
    }

    #[test]
    fn a_binding_to_a_role_not_installed_grants_nothing_known() {
        let objects = vec![binding(
            "RoleBinding",
            "x",
            Some("team-a"),
            "ClusterRole",
            "admin",
        )];
        assert!(grants(&objects).is_empty());
    }
}
