use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use windlass_api::policy::{ClusterScopedGrant::*, InstallModeType::*, InstallPolicy};

use super::*;

fn policy(name: &str, spec: InstallPolicySpec) -> InstallPolicy {
    InstallPolicy::new(name, spec)
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

struct Case {
    namespace: &'static str,
    labels: BTreeMap<String, String>,
    package: &'static str,
    catalog: Option<&'static str>,
    mode: InstallModeType,
    targets: Vec<String>,
    needs: BTreeSet<ClusterScopedGrant>,
    service_account: Option<&'static str>,
}

impl Case {
    fn tenant() -> Case {
        Case {
            namespace: "team-a",
            labels: labels(&[("tier", "tenant")]),
            package: "acme-db",
            catalog: Some("builtin"),
            mode: OwnNamespace,
            targets: vec!["team-a".into()],
            needs: BTreeSet::new(),
            service_account: None,
        }
    }

    fn decide(&self, policies: &[InstallPolicy]) -> Result<Permit, Refusal> {
        evaluate(
            &InstallRequest {
                namespace: NamespaceFacts {
                    name: self.namespace,
                    labels: &self.labels,
                },
                package: self.package,
                catalog: self.catalog,
                mode: self.mode,
                targets: &self.targets,
                needs: &self.needs,
                service_account: self.service_account,
            },
            policies,
        )
    }
}

#[test]
fn without_a_policy_a_tenant_installs_namespaced_objects_in_its_own_namespace_as_its_account() {
    let permit = Case::tenant().decide(&[]).unwrap();
    assert_eq!(permit.policy, None);
    assert_eq!(
        permit.identity,
        Identity::ServiceAccount {
            namespace: "team-a".into(),
            name: DEFAULT_SERVICE_ACCOUNT.into()
        }
    );
    assert!(permit.granted.is_empty());
    assert_eq!(
        permit.identity.username().as_deref(),
        Some("system:serviceaccount:team-a:windlass-installer")
    );
}

#[test]
fn without_a_policy_everything_beyond_the_namespace_is_refused_with_the_reason() {
    let crds = Case {
        needs: [CustomResourceDefinitions].into(),
        ..Case::tenant()
    };
    let refusal = crds.decide(&[]).unwrap_err();
    assert_eq!(refusal.reason, reasons::CLUSTER_SCOPED_NOT_ALLOWED);
    assert_eq!(
        refusal.message,
        "namespace team-a may not install acme-db this way: without a policy: cluster-scoped CustomResourceDefinitions not granted"
    );
    let everywhere = Case {
        mode: AllNamespaces,
        targets: vec![String::new()],
        ..Case::tenant()
    };
    assert_eq!(
        everywhere.decide(&[]).unwrap_err().reason,
        reasons::INSTALL_MODE_NOT_ALLOWED
    );
    let elsewhere = Case {
        mode: SingleNamespace,
        targets: vec!["kube-system".into()],
        ..Case::tenant()
    };
    let refusal = elsewhere.decide(&[]).unwrap_err();
    assert_eq!(refusal.reason, reasons::INSTALL_MODE_NOT_ALLOWED);
    assert!(
        refusal
            .message
            .contains("target namespace kube-system is not allowed")
    );
}

#[test]
fn a_policy_grants_what_it_lists_to_the_namespaces_it_selects() {
    let tenants = policy(
        "tenants",
        InstallPolicySpec {
            namespace_selector: Some(LabelSelector {
                match_labels: Some(labels(&[("tier", "tenant")])),
                ..Default::default()
            }),
            cluster_scoped: vec![CustomResourceDefinitions],
            service_account_name: Some("installer".into()),
            ..Default::default()
        },
    );
    let crds = Case {
        needs: [CustomResourceDefinitions].into(),
        ..Case::tenant()
    };
    let permit = crds.decide(std::slice::from_ref(&tenants)).unwrap();
    assert_eq!(permit.policy.as_deref(), Some("tenants"));
    assert_eq!(
        permit.identity,
        Identity::ServiceAccount {
            namespace: "team-a".into(),
            name: "installer".into()
        }
    );
    // A namespace the selector does not match gets nothing from it.
    let other = Case {
        namespace: "team-b",
        labels: labels(&[("tier", "platform")]),
        needs: [CustomResourceDefinitions].into(),
        ..Case::tenant()
    };
    assert!(other.decide(std::slice::from_ref(&tenants)).is_err());
    // What it does not list stays refused, and the refusal names the policy.
    let webhooks = Case {
        needs: [CustomResourceDefinitions, Webhooks].into(),
        ..Case::tenant()
    };
    let refusal = webhooks.decide(&[tenants]).unwrap_err();
    assert!(
        refusal
            .message
            .contains("InstallPolicy tenants: cluster-scoped Webhooks not granted"),
        "{}",
        refusal.message
    );
}

#[test]
fn a_trusted_namespace_installs_as_the_manager_unless_the_subscription_names_an_account() {
    let platform = policy(
        "platform",
        InstallPolicySpec {
            namespaces: vec!["platform".into()],
            trusted: true,
            install_modes: vec![AllNamespaces],
            cluster_scoped: vec![CustomResourceDefinitions, ClusterPermissions, Webhooks],
            ..Default::default()
        },
    );
    let everywhere = Case {
        namespace: "platform",
        mode: AllNamespaces,
        targets: Vec::new(),
        needs: [CustomResourceDefinitions, ClusterPermissions].into(),
        ..Case::tenant()
    };
    let permit = everywhere.decide(std::slice::from_ref(&platform)).unwrap();
    assert_eq!(permit.identity, Identity::Manager);
    assert!(permit.granted.contains(&Webhooks));
    let scoped = Case {
        service_account: Some("narrow"),
        ..everywhere
    };
    assert_eq!(
        scoped.decide(&[platform]).unwrap().identity,
        Identity::ServiceAccount {
            namespace: "platform".into(),
            name: "narrow".into()
        }
    );
}

#[test]
fn packages_catalogs_and_targets_are_checked_and_policies_add_up() {
    let only_db = policy(
        "a-only-db",
        InstallPolicySpec {
            namespaces: vec!["team-a".into()],
            packages: vec!["acme-db".into()],
            catalogs: vec!["builtin".into()],
            install_modes: vec![SingleNamespace],
            target_namespaces: vec!["team-a-apps".into()],
            cluster_scoped: vec![CustomResourceDefinitions],
            ..Default::default()
        },
    );
    let monitor = policy(
        "b-monitor",
        InstallPolicySpec {
            namespaces: vec!["team-a".into()],
            packages: vec!["acme-monitor".into()],
            cluster_scoped: vec![CustomResourceDefinitions, Webhooks],
            ..Default::default()
        },
    );
    let policies = [only_db, monitor];
    let watching_apps = Case {
        mode: SingleNamespace,
        targets: vec!["team-a-apps".into()],
        needs: [CustomResourceDefinitions].into(),
        ..Case::tenant()
    };
    assert_eq!(
        watching_apps.decide(&policies).unwrap().policy.as_deref(),
        Some("a-only-db")
    );
    let from_elsewhere = Case {
        catalog: Some("community"),
        ..watching_apps
    };
    let refusal = from_elsewhere.decide(&policies).unwrap_err();
    assert_eq!(refusal.reason, reasons::CATALOG_NOT_ALLOWED);
    let monitor_with_webhooks = Case {
        package: "acme-monitor",
        needs: [CustomResourceDefinitions, Webhooks].into(),
        ..Case::tenant()
    };
    assert_eq!(
        monitor_with_webhooks
            .decide(&policies)
            .unwrap()
            .policy
            .as_deref(),
        Some("b-monitor")
    );
}

#[test]
fn selectors_follow_kubernetes_semantics() {
    let labels = labels(&[("tier", "tenant"), ("team", "a")]);
    let facts = NamespaceFacts {
        name: "x",
        labels: &labels,
    };
    let expression = |key: &str, operator: &str, values: &[&str]| LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        }]),
        ..Default::default()
    };
    let cases = [
        (LabelSelector::default(), true),
        (expression("tier", "In", &["tenant", "x"]), true),
        (expression("tier", "NotIn", &["tenant"]), false),
        (expression("missing", "NotIn", &["tenant"]), true),
        (expression("team", "Exists", &[]), true),
        (expression("team", "DoesNotExist", &[]), false),
        (expression("team", "Gt", &["1"]), false),
    ];
    for (selector, expected) in cases {
        let spec = InstallPolicySpec {
            namespace_selector: Some(selector.clone()),
            ..Default::default()
        };
        assert_eq!(selects(&spec, &facts), expected, "{selector:?}");
    }
    // No selector and no names: the policy selects nothing.
    assert!(!selects(&InstallPolicySpec::default(), &facts));
}

impl Case {
    fn decide_running(&self, policies: &[InstallPolicy]) -> Result<Permit, NotPermitted> {
        evaluate_running(
            &InstallRequest {
                namespace: NamespaceFacts {
                    name: self.namespace,
                    labels: &self.labels,
                },
                package: self.package,
                catalog: self.catalog,
                mode: self.mode,
                targets: &self.targets,
                needs: &self.needs,
                service_account: self.service_account,
            },
            policies,
        )
    }
}

#[test]
fn a_permit_names_the_generation_and_revocation_of_its_policy() {
    let mut held = policy(
        "held",
        InstallPolicySpec {
            namespaces: vec!["team-a".into()],
            cluster_scoped: vec![ClusterPermissions],
            revocation: Revocation::Hold,
            ..Default::default()
        },
    );
    held.metadata.generation = Some(4);
    let case = Case {
        needs: [ClusterPermissions].into(),
        ..Case::tenant()
    };
    let permit = case.decide(&[held]).unwrap();
    assert_eq!(permit.policy.as_deref(), Some("held"));
    assert_eq!(permit.policy_generation, Some(4));
    assert_eq!(permit.revocation, Revocation::Hold);
    // The baseline has no generation, and withdraws (the default).
    let baseline = Case::tenant().decide(&[]).unwrap();
    assert_eq!(
        (baseline.policy_generation, baseline.revocation),
        (None, Revocation::Withdraw)
    );
}

#[test]
fn a_narrowed_policy_leaves_a_running_install_what_it_still_grants() {
    let narrowed = policy(
        "tenants",
        InstallPolicySpec {
            namespaces: vec!["team-a".into()],
            cluster_scoped: vec![CustomResourceDefinitions],
            ..Default::default()
        },
    );
    let running = Case {
        needs: [CustomResourceDefinitions, ClusterPermissions, Webhooks].into(),
        ..Case::tenant()
    };
    let (refusal, kept) = running
        .decide_running(std::slice::from_ref(&narrowed))
        .map_err(|n| (n.refusal, n.narrowed))
        .unwrap_err();
    assert_eq!(refusal.reason, reasons::CLUSTER_SCOPED_NOT_ALLOWED);
    let kept = kept.expect("the policy still permits the rest");
    assert_eq!(kept.permit.policy.as_deref(), Some("tenants"));
    assert_eq!(kept.permit.granted, [CustomResourceDefinitions].into());
    assert_eq!(kept.withdrawn, [ClusterPermissions, Webhooks].into());

    // Deleted: the baseline keeps the namespaced part only.
    let (_, kept) = running
        .decide_running(&[])
        .map_err(|n| (n.refusal, n.narrowed))
        .unwrap_err();
    let kept = kept.expect("every namespace may install namespaced objects");
    assert_eq!(kept.permit.policy, None);
    assert_eq!(
        kept.withdrawn,
        [CustomResourceDefinitions, ClusterPermissions, Webhooks].into()
    );

    // Still permitted: nothing is withdrawn.
    let enough = Case {
        needs: [CustomResourceDefinitions].into(),
        ..Case::tenant()
    };
    assert!(enough.decide_running(&[narrowed]).is_ok());

    // What only a policy allowed besides cluster-scoped objects cannot be narrowed away.
    let everywhere = Case {
        mode: AllNamespaces,
        targets: vec![String::new()],
        ..Case::tenant()
    };
    let (refusal, kept) = everywhere
        .decide_running(&[])
        .map_err(|n| (n.refusal, n.narrowed))
        .unwrap_err();
    assert_eq!(refusal.reason, reasons::INSTALL_MODE_NOT_ALLOWED);
    assert_eq!(kept, None);
}

#[test]
fn crd_deletion_is_granted_only_by_a_policy_selecting_the_namespace_and_package() {
    let labels = labels(&[]);
    let team_a = NamespaceFacts {
        name: "team-a",
        labels: &labels,
    };
    let deleting = policy(
        "deleting",
        InstallPolicySpec {
            namespaces: vec!["team-a".into()],
            packages: vec!["acme-db".into()],
            cluster_scoped: vec![CustomResourceDefinitions, CrdDeletion],
            ..Default::default()
        },
    );
    let policies = [deleting];
    assert!(grants(
        &team_a,
        "acme-db",
        Some("builtin"),
        CrdDeletion,
        &policies
    ));
    assert!(!grants(
        &team_a,
        "acme-monitor",
        Some("builtin"),
        CrdDeletion,
        &policies
    ));
    assert!(!grants(
        &team_a,
        "acme-db",
        Some("builtin"),
        Webhooks,
        &policies
    ));
    let team_b = NamespaceFacts {
        name: "team-b",
        labels: &labels,
    };
    assert!(!grants(
        &team_b,
        "acme-db",
        Some("builtin"),
        CrdDeletion,
        &policies
    ));
    assert!(!grants(
        &team_a,
        "acme-db",
        Some("builtin"),
        CrdDeletion,
        &[]
    ));
}
