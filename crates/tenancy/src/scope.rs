//! What one namespace may install, as people read it: the InstallScope view of the policies
//! [`crate::policy::evaluate`] decides each install from.

use std::collections::BTreeSet;

use windlass_api::{
    InstallGrant, InstallPolicy, InstallScopeStatus,
    policy::{ClusterScopedGrant, InstallModeType, InstallPolicySpec},
};

use crate::policy::{DEFAULT_SERVICE_ACCOUNT, NamespaceFacts, selects};

/// The policies that select `namespace`, in the order installs try them (by name).
pub fn selecting<'a>(
    namespace: &NamespaceFacts<'_>,
    policies: &'a [InstallPolicy],
) -> Vec<(&'a str, &'a InstallPolicySpec)> {
    let mut matching: Vec<(&str, &InstallPolicySpec)> = policies
        .iter()
        .filter(|p| selects(&p.spec, namespace))
        .map(|p| (p.metadata.name.as_deref().unwrap_or_default(), &p.spec))
        .collect();
    matching.sort_by_key(|(name, _)| *name);
    matching
}

/// What operators installed in `namespace` may do under `policies`: one grant per selecting
/// policy, then the baseline, and their union in words. Identities are those of a
/// Subscription that names no `serviceAccountName` (one that does is installed as that account,
/// except where a policy trusts the namespace and the Subscription names none).
pub fn install_scope(
    namespace: &NamespaceFacts<'_>,
    policies: &[InstallPolicy],
) -> InstallScopeStatus {
    let matching = selecting(namespace, policies);
    let default_account = matching
        .iter()
        .find_map(|(_, spec)| spec.service_account_name.as_deref())
        .unwrap_or(DEFAULT_SERVICE_ACCOUNT);
    let account = |spec: Option<&InstallPolicySpec>| {
        format!(
            "ServiceAccount {}",
            spec.and_then(|s| s.service_account_name.as_deref())
                .unwrap_or(default_account)
        )
    };
    let mut grants: Vec<InstallGrant> = matching
        .iter()
        .map(|(name, spec)| {
            let mut modes: BTreeSet<InstallModeType> = spec.install_modes.iter().copied().collect();
            modes.insert(InstallModeType::OwnNamespace);
            let cluster_scoped: BTreeSet<ClusterScopedGrant> =
                spec.cluster_scoped.iter().copied().collect();
            let target_namespaces: BTreeSet<String> =
                spec.target_namespaces.iter().cloned().collect();
            InstallGrant {
                policy: Some(name.to_string()),
                install_as: if spec.trusted {
                    "the windlass manager".to_string()
                } else {
                    account(Some(spec))
                },
                catalogs: sorted(&spec.catalogs),
                packages: sorted(&spec.packages),
                install_modes: modes.into_iter().collect(),
                target_namespaces: target_namespaces.into_iter().collect(),
                cluster_scoped: cluster_scoped.into_iter().collect(),
            }
        })
        .collect();
    grants.push(InstallGrant {
        policy: None,
        install_as: account(None),
        install_modes: vec![InstallModeType::OwnNamespace],
        ..InstallGrant::default()
    });

    let policy_summary = if matching.is_empty() {
        "none".to_string()
    } else {
        matching
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>()
            .join(",")
    };
    let identities: BTreeSet<&str> = grants.iter().map(|g| g.install_as.as_str()).collect();
    let install_as = if identities.len() == 1 {
        grants[0].install_as.clone()
    } else {
        grants
            .iter()
            .map(|g| format!("{} ({})", g.install_as, who(g)))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let modes: BTreeSet<InstallModeType> = grants
        .iter()
        .flat_map(|g| g.install_modes.iter().copied())
        .collect();
    let cluster_scoped: BTreeSet<ClusterScopedGrant> = grants
        .iter()
        .flat_map(|g| g.cluster_scoped.iter().copied())
        .collect();
    InstallScopeStatus {
        policy_summary,
        install_as,
        install_mode_summary: join(modes.iter().map(|m| m.as_str())),
        cluster_scoped_summary: if cluster_scoped.is_empty() {
            "none".to_string()
        } else {
            join(cluster_scoped.iter().map(|g| g.as_str()))
        },
        summary: grants.iter().map(sentence).collect::<Vec<_>>().join(" "),
        grants,
    }
}

fn sorted(items: &[String]) -> Vec<String> {
    let set: BTreeSet<&String> = items.iter().collect();
    set.into_iter().cloned().collect()
}

fn join<'a>(items: impl Iterator<Item = &'a str>) -> String {
    items.collect::<Vec<_>>().join(",")
}

fn who(grant: &InstallGrant) -> String {
    match &grant.policy {
        Some(policy) => format!("InstallPolicy {policy}"),
        None => "without a policy".to_string(),
    }
}

/// One grant as a sentence: "InstallPolicy tenants: packages acme-db from catalog builtin,
/// OwnNamespace or AllNamespaces, with CustomResourceDefinitions, as ServiceAccount x."
fn sentence(grant: &InstallGrant) -> String {
    let what = match grant.packages.as_slice() {
        [] => "any package".to_string(),
        [one] => format!("package {one}"),
        many => format!("packages {}", many.join(", ")),
    };
    let from = match grant.catalogs.as_slice() {
        [] => String::new(),
        [one] => format!(" from catalog {one}"),
        many => format!(" from catalogs {}", many.join(", ")),
    };
    let modes = grant
        .install_modes
        .iter()
        .map(|m| m.as_str())
        .collect::<Vec<_>>()
        .join(" or ");
    let targets = if grant.target_namespaces.is_empty() {
        String::new()
    } else {
        format!(" (watching {})", grant.target_namespaces.join(", "))
    };
    let objects = if grant.cluster_scoped.is_empty() {
        "namespaced objects only".to_string()
    } else {
        format!(
            "with {}",
            grant
                .cluster_scoped
                .iter()
                .map(|g| g.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    format!(
        "{}: {what}{from}, {modes}{targets}, {objects}, as {}.",
        who(grant),
        grant.install_as
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::policy::{InstallRequest, evaluate};

    fn policy(name: &str, spec: serde_json::Value) -> InstallPolicy {
        let spec: InstallPolicySpec = serde_json::from_value(spec).expect("a policy spec");
        InstallPolicy::new(name, spec)
    }

    fn facts<'a>(name: &'a str, labels: &'a BTreeMap<String, String>) -> NamespaceFacts<'a> {
        NamespaceFacts { name, labels }
    }

    #[test]
    fn without_a_policy_a_namespace_gets_own_namespace_installs_of_namespaced_objects() {
        let labels = BTreeMap::new();
        let scope = install_scope(&facts("team-a", &labels), &[]);
        assert_eq!(scope.policy_summary, "none");
        assert_eq!(scope.install_as, "ServiceAccount windlass-installer");
        assert_eq!(scope.install_mode_summary, "OwnNamespace");
        assert_eq!(scope.cluster_scoped_summary, "none");
        assert_eq!(
            scope.summary,
            "without a policy: any package, OwnNamespace, namespaced objects only, \
             as ServiceAccount windlass-installer."
        );
        assert_eq!(scope.grants.len(), 1);
    }

    #[test]
    fn each_selecting_policy_is_a_grant_in_the_order_installs_try_them() {
        let labels = BTreeMap::from([("windlass.dev/tenant".to_string(), "true".to_string())]);
        let policies = [
            policy(
                "z-trusted",
                serde_json::json!({"namespaces": ["team-a"], "trusted": true,
                    "installModes": ["AllNamespaces"], "clusterScoped": ["Webhooks"]}),
            ),
            policy(
                "a-tenants",
                serde_json::json!({
                    "namespaceSelector": {"matchLabels": {"windlass.dev/tenant": "true"}},
                    "serviceAccountName": "installer", "packages": ["acme-db", "acme-cache"],
                    "catalogs": ["builtin"], "clusterScoped": ["CustomResourceDefinitions"]}),
            ),
            policy("other", serde_json::json!({"namespaces": ["team-b"]})),
        ];
        let scope = install_scope(&facts("team-a", &labels), &policies);
        assert_eq!(scope.policy_summary, "a-tenants,z-trusted");
        let names: Vec<Option<&str>> = scope.grants.iter().map(|g| g.policy.as_deref()).collect();
        assert_eq!(names, [Some("a-tenants"), Some("z-trusted"), None]);
        assert_eq!(scope.grants[0].packages, ["acme-cache", "acme-db"]);
        // The first policy's account is the namespace's default, the baseline's too.
        assert_eq!(scope.grants[2].install_as, "ServiceAccount installer");
        assert_eq!(
            scope.install_as,
            "ServiceAccount installer (InstallPolicy a-tenants); the windlass manager \
             (InstallPolicy z-trusted); ServiceAccount installer (without a policy)"
        );
        assert_eq!(scope.install_mode_summary, "OwnNamespace,AllNamespaces");
        assert_eq!(
            scope.cluster_scoped_summary,
            "CustomResourceDefinitions,Webhooks"
        );
        assert!(scope.summary.starts_with(
            "InstallPolicy a-tenants: packages acme-cache, acme-db from catalog builtin, \
             OwnNamespace, with CustomResourceDefinitions, as ServiceAccount installer."
        ));
        assert!(scope.summary.contains(
            "InstallPolicy z-trusted: any package, OwnNamespace or AllNamespaces, with Webhooks, \
             as the windlass manager."
        ));
    }

    #[test]
    fn the_view_agrees_with_what_installs_are_decided_by() {
        // Whatever the view lists as a grant's identity is what `evaluate` installs as.
        let labels = BTreeMap::new();
        let policies = [
            policy(
                "crds",
                serde_json::json!({"namespaces": ["team-a"], "serviceAccountName": "deployer",
                    "clusterScoped": ["CustomResourceDefinitions"]}),
            ),
            policy(
                "trusted",
                serde_json::json!({"namespaces": ["team-a"], "trusted": true,
                    "installModes": ["AllNamespaces"]}),
            ),
        ];
        let namespace = facts("team-a", &labels);
        let scope = install_scope(&namespace, &policies);
        let cases = [
            (
                InstallModeType::OwnNamespace,
                vec![ClusterScopedGrant::CustomResourceDefinitions],
                "crds",
            ),
            (InstallModeType::AllNamespaces, vec![], "trusted"),
        ];
        for (mode, needs, expected) in cases {
            let needs: BTreeSet<ClusterScopedGrant> = needs.into_iter().collect();
            let request = InstallRequest {
                namespace,
                package: "acme-db",
                catalog: None,
                mode,
                targets: &[],
                needs: &needs,
                service_account: None,
            };
            let permit = evaluate(&request, &policies).expect("permitted");
            assert_eq!(permit.policy.as_deref(), Some(expected));
            let grant = scope
                .grants
                .iter()
                .find(|g| g.policy.as_deref() == Some(expected))
                .expect("listed");
            let identity = match &permit.identity {
                crate::Identity::Manager => "the windlass manager".to_string(),
                crate::Identity::ServiceAccount { name, .. } => format!("ServiceAccount {name}"),
            };
            assert_eq!(grant.install_as, identity);
        }
    }
}
