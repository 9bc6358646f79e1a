use serde_json::json;
use windlass_api::{
    BlueprintSpec, InstallPolicySpec,
    policy::{ClusterScopedGrant, InstallModeType::*},
};

use crate::revision::PermitRecord;

use super::*;

fn acme_db(targets: Option<&[&str]>) -> RevisionContent {
    revision::from_bundle(
        1,
        &crate::samples::acme_db("1.0.0"),
        Some("builtin"),
        Default::default(),
        targets.map(|t| t.iter().map(|s| s.to_string()).collect()),
    )
}

/// acme-db as shipped: one CRD, namespaced and cluster-wide permissions.
fn shape() -> BundleShape {
    BundleShape {
        crds: vec!["databases.acme.windlass.dev".into()],
        cluster_permissions: true,
        permissions: true,
        ..BundleShape::default()
    }
}

fn blueprint() -> Blueprint {
    let mut bp = Blueprint::new("db", BlueprintSpec::default());
    bp.metadata.namespace = Some("team-a".into());
    bp
}

fn policy(name: &str, spec: serde_json::Value) -> Policy {
    let spec: InstallPolicySpec = serde_json::from_value(spec).expect("a policy spec");
    Policy::new(name, spec)
}

fn judge(
    content: &RevisionContent,
    shape: &BundleShape,
    policies: &[Policy],
    running: bool,
) -> Verdict {
    let labels = labels(&[("tier", "tenant")]);
    let csv = revision::csv_object(content).unwrap().clone();
    let namespace = NamespaceFacts {
        name: "team-a",
        labels: &labels,
    };
    let blueprint = blueprint();
    let inputs = Inputs {
        namespace: &namespace,
        blueprint: &blueprint,
        content,
        csv: &csv,
        shape,
        running,
    };
    decide(&inputs, policies)
}

fn run(
    targets: Option<&[&str]>,
    shape: &BundleShape,
    policies: &[Policy],
) -> Result<Placement, Refusal> {
    match judge(&acme_db(targets), shape, policies, false) {
        Verdict::Permitted(placement) => Ok(placement),
        Verdict::Refused(refusal) => Err(refusal),
        Verdict::Narrowed { .. } => panic!("a new install is never narrowed"),
    }
}

#[test]
fn without_a_policy_a_namespace_gets_its_own_namespace_and_namespaced_objects_only() {
    let namespaced_only = BundleShape {
        permissions: true,
        ..BundleShape::default()
    };
    let placed = run(None, &namespaced_only, &[]).expect("OwnNamespace, namespaced objects");
    assert_eq!(placed.targets, vec!["team-a".to_string()]);
    assert_eq!(placed.mode, OwnNamespace);
    assert_eq!(placed.permit.policy, None);

    let cases: &[(Option<&[&str]>, &BundleShape, &str, &str)] = &[
        (
            Some(&["team-a"]),
            &shape(),
            reasons::CLUSTER_SCOPED_NOT_ALLOWED,
            "CustomResourceDefinitions",
        ),
        // `[""]` once turned namespaced permissions into a ClusterRoleBinding.
        (
            Some(&[""]),
            &namespaced_only,
            reasons::INSTALL_MODE_NOT_ALLOWED,
            "AllNamespaces",
        ),
        (
            Some(&["kube-system"]),
            &namespaced_only,
            reasons::INSTALL_MODE_NOT_ALLOWED,
            "kube-system",
        ),
        (
            Some(&["team-a", "team-b"]),
            &namespaced_only,
            reasons::INSTALL_MODE_UNSUPPORTED,
            "MultiNamespace",
        ),
    ];
    for (targets, shape, reason, named) in cases {
        let refused = run(*targets, shape, &[]).expect_err("refused");
        assert_eq!(refused.reason, *reason, "{targets:?}: {}", refused.message);
        assert!(
            refused.message.contains(named) && refused.message.contains("team-a"),
            "{targets:?}: the message names {named} and the namespace: {}",
            refused.message
        );
    }
}

#[test]
fn a_policy_grants_what_it_names_to_the_namespaces_it_selects() {
    let crds = policy(
        "tenants-crds",
        json!({"namespaceSelector": {"matchLabels": {"tier": "tenant"}},
               "clusterScoped": ["CustomResourceDefinitions", "ClusterPermissions"]}),
    );
    let placed = run(None, &shape(), std::slice::from_ref(&crds)).expect("granted");
    assert_eq!(placed.mode, OwnNamespace, "the default stays OwnNamespace");
    assert_eq!(placed.permit.policy.as_deref(), Some("tenants-crds"));
    assert!(
        placed
            .permit
            .granted
            .contains(&ClusterScopedGrant::CustomResourceDefinitions)
    );
    // Still not another namespace.
    let refused = run(
        Some(&["kube-system"]),
        &shape(),
        std::slice::from_ref(&crds),
    )
    .unwrap_err();
    assert_eq!(refused.reason, reasons::INSTALL_MODE_NOT_ALLOWED);

    // A policy for other namespaces changes nothing here.
    let elsewhere = policy(
        "platform",
        json!({"namespaces": ["platform"], "trusted": true,
               "installModes": ["AllNamespaces"],
               "clusterScoped": ["CustomResourceDefinitions", "ClusterPermissions"]}),
    );
    assert!(run(None, &shape(), &[elsewhere]).is_err());
}

#[test]
fn an_all_namespaces_policy_makes_all_namespaces_the_default_where_the_operator_supports_it() {
    let platform = policy(
        "platform",
        json!({"namespaces": ["team-a"], "trusted": true,
               "installModes": ["AllNamespaces", "SingleNamespace"],
               "targetNamespaces": ["team-b"],
               "clusterScoped": ["CustomResourceDefinitions", "ClusterPermissions"]}),
    );
    let placed = run(None, &shape(), std::slice::from_ref(&platform)).expect("permitted");
    assert_eq!(
        (placed.mode, placed.targets.clone()),
        (AllNamespaces, vec![])
    );
    let single = run(Some(&["team-b"]), &shape(), std::slice::from_ref(&platform)).unwrap();
    assert_eq!(single.mode, SingleNamespace);
    let refused = run(Some(&["team-c"]), &shape(), &[platform]).unwrap_err();
    assert_eq!(refused.reason, reasons::TARGET_NAMESPACE_NOT_ALLOWED);
    assert!(refused.message.contains("team-c"), "{}", refused.message);
}

#[test]
fn a_running_install_loses_what_a_narrowed_policy_withdraws_and_keeps_the_rest() {
    let narrowed = policy(
        "tenants",
        json!({"namespaces": ["team-a"], "clusterScoped": ["CustomResourceDefinitions"]}),
    );
    let mut content = acme_db(None);
    content.permitted_by = Some(PermitRecord {
        policy: Some("tenants".into()),
        revocation: Revocation::Withdraw,
    });
    match judge(&content, &shape(), std::slice::from_ref(&narrowed), true) {
        Verdict::Narrowed { placement, refusal } => {
            assert_eq!(refusal.reason, reasons::GRANT_WITHDRAWN);
            assert!(
                refusal.message.contains("InstallPolicy tenants")
                    && refusal.message.contains("ClusterPermissions withdrawn"),
                "{}",
                refusal.message
            );
            assert!(placement.has(ClusterScopedGrant::CustomResourceDefinitions));
            assert!(!placement.has(ClusterScopedGrant::ClusterPermissions));
            assert!(placement.csv_grants().is_empty());
        }
        other => panic!("not narrowed: {other:?}"),
    }
    // A new install of the same is refused outright.
    assert!(matches!(
        judge(&content, &shape(), std::slice::from_ref(&narrowed), false),
        Verdict::Refused(_)
    ));
}

#[test]
fn a_hold_policy_keeps_a_running_install_as_it_is_even_once_deleted() {
    let mut content = acme_db(None);
    content.permitted_by = Some(PermitRecord {
        policy: Some("platform".into()),
        revocation: Revocation::Hold,
    });
    // The policy is gone: the choice it recorded holds.
    match judge(&content, &shape(), &[], true) {
        Verdict::Refused(refusal) => {
            assert_eq!(refusal.reason, reasons::GRANT_HELD);
            assert!(refusal.message.contains("held"), "{}", refusal.message);
        }
        other => panic!("not held: {other:?}"),
    }
    // Still there and now saying Withdraw: its word now counts.
    let withdrawing = policy(
        "platform",
        json!({"namespaces": ["team-a"], "clusterScoped": ["CustomResourceDefinitions"],
               "revocation": "Withdraw"}),
    );
    assert!(matches!(
        judge(&content, &shape(), &[withdrawing], true),
        Verdict::Narrowed { .. }
    ));
}

#[test]
fn cluster_rbac_and_admission_manifests_need_their_own_grants() {
    assert_eq!(
        object_grant("ClusterRoleBinding"),
        ClusterScopedGrant::ClusterPermissions
    );
    assert_eq!(
        object_grant("ClusterRole"),
        ClusterScopedGrant::ClusterPermissions
    );
    assert_eq!(
        object_grant("MutatingWebhookConfiguration"),
        ClusterScopedGrant::Webhooks
    );
    assert_eq!(
        object_grant("PriorityClass"),
        ClusterScopedGrant::OtherObjects
    );
}
