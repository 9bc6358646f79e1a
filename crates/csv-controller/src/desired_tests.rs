use serde_json::json;
use windlass_api::OperatorConfig;
use windlass_bundle::csv::ClusterServiceVersion as OlmCsv;

use super::*;
use windlass_api::policy::ClusterScopedGrant;

fn csv() -> OlmCsv {
    OlmCsv::from_value(&json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "metadata": {"name": "acme-db.v1.0.0"},
        "spec": {"version": "1.0.0", "install": {"strategy": "deployment", "spec": {
            "permissions": [{"serviceAccountName": "acme-db", "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}],
            "clusterPermissions": [{"serviceAccountName": "acme-db", "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}]}],
            "deployments": [{"name": "acme-db-operator", "label": {"app": "acme-db"}, "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "acme-db"}},
                "template": {"metadata": {"labels": {"app": "acme-db"}}, "spec": {
                    "serviceAccountName": "acme-db",
                    "containers": [{"name": "operator", "image": "registry.k8s.io/pause:3.10",
                        "env": [{"name": "LOG_LEVEL", "value": "info"}]}]}}}}]
        }}}
    }))
    .unwrap()
}

fn ctx<'a>(
    csv: &'a OlmCsv,
    targets: &'a [String],
    config: &'a OperatorConfig,
) -> InstallContext<'a> {
    InstallContext {
        csv_name: "acme-db.v1.0.0",
        namespace: "ops",
        owner: json!({"apiVersion": "windlass.dev/v1alpha1", "kind": "ClusterServiceVersion", "name": "acme-db.v1.0.0", "uid": "u1", "controller": true}),
        definition: csv,
        target_namespaces: targets,
        config,
        image_rewrites: &[],
        grants: &[
            ClusterScopedGrant::ClusterPermissions,
            ClusterScopedGrant::Webhooks,
        ],
    }
}

fn kinds(objects: &[DesiredObject]) -> Vec<(String, String, Option<String>)> {
    objects
        .iter()
        .map(|o| {
            (
                o.kind().to_string(),
                o.name().to_string(),
                o.namespace().map(String::from),
            )
        })
        .collect()
}

#[test]
fn own_namespace_install_grants_roles_in_the_namespace_and_cluster_roles_for_cluster_permissions() {
    let csv = csv();
    let targets = vec!["ops".to_string()];
    let config = OperatorConfig::default();
    let objects = build(&ctx(&csv, &targets, &config));
    let cluster_name = "windlass-ops-acme-db.v1.0.0-acme-db-cluster".to_string();
    assert_eq!(
        kinds(&objects),
        vec![
            (
                "ServiceAccount".into(),
                "acme-db".into(),
                Some("ops".into())
            ),
            (
                "Role".into(),
                "acme-db.v1.0.0-acme-db".into(),
                Some("ops".into())
            ),
            (
                "RoleBinding".into(),
                "acme-db.v1.0.0-acme-db".into(),
                Some("ops".into())
            ),
            ("ClusterRole".into(), cluster_name.clone(), None),
            ("ClusterRoleBinding".into(), cluster_name, None),
            (
                "Deployment".into(),
                "acme-db-operator".into(),
                Some("ops".into())
            ),
        ]
    );
    // Objects in the CSV's namespace are owned; cluster-scoped ones are labelled instead.
    for object in &objects {
        assert_eq!(object.owned, object.namespace() == Some("ops"));
        assert_eq!(
            object.object["metadata"]["labels"]["windlass.dev/csv"],
            "acme-db.v1.0.0"
        );
        assert_eq!(
            object.object["metadata"]["ownerReferences"].is_array(),
            object.owned
        );
    }
    let binding = &objects[2].object;
    assert_eq!(
        binding["subjects"],
        json!([{"kind": "ServiceAccount", "name": "acme-db", "namespace": "ops"}])
    );
}

#[test]
fn multi_namespace_install_grants_roles_in_every_target_namespace() {
    let csv = csv();
    let targets = vec!["team-a".to_string(), "team-b".to_string()];
    let config = OperatorConfig::default();
    let objects = build(&ctx(&csv, &targets, &config));
    let roles: Vec<_> = objects
        .iter()
        .filter(|o| o.kind() == "Role")
        .map(|o| o.namespace().unwrap().to_string())
        .collect();
    assert_eq!(roles, ["ops", "team-a", "team-b"]);
    let deployment = objects.iter().find(|o| o.kind() == "Deployment").unwrap();
    assert_eq!(
        deployment.object["spec"]["template"]["metadata"]["annotations"]["olm.targetNamespaces"],
        "team-a,team-b"
    );
}

#[test]
fn all_namespaces_install_turns_permissions_into_cluster_roles_and_an_empty_target_annotation() {
    let csv = csv();
    let config = OperatorConfig::default();
    let objects = build(&ctx(&csv, &[], &config));
    assert!(!objects.iter().any(|o| o.kind() == "Role"));
    assert_eq!(
        objects.iter().filter(|o| o.kind() == "ClusterRole").count(),
        2
    );
    let deployment = objects.iter().find(|o| o.kind() == "Deployment").unwrap();
    let annotations = &deployment.object["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(annotations["olm.targetNamespaces"], "");
    assert_eq!(annotations["olm.operatorNamespace"], "ops");
    assert_eq!(deployment.object["metadata"]["labels"]["app"], "acme-db");
}

#[test]
fn operator_config_merges_env_by_name_and_replaces_scheduling() {
    let csv = csv();
    let config: OperatorConfig = serde_json::from_value(json!({
        "env": [{"name": "LOG_LEVEL", "value": "debug"}, {"name": "EXTRA", "value": "1"}],
        "nodeSelector": {"disk": "ssd"},
        "resources": {"limits": {"memory": "128Mi"}},
        "annotations": {"example.com/team": "db"}
    }))
    .unwrap();
    let objects = build(&ctx(&csv, &[], &config));
    let deployment = &objects
        .iter()
        .find(|o| o.kind() == "Deployment")
        .unwrap()
        .object;
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["env"],
        json!([{"name": "LOG_LEVEL", "value": "debug"}, {"name": "EXTRA", "value": "1"}])
    );
    assert_eq!(
        container["resources"],
        json!({"limits": {"memory": "128Mi"}})
    );
    assert_eq!(
        deployment["spec"]["template"]["spec"]["nodeSelector"],
        json!({"disk": "ssd"})
    );
    assert_eq!(
        deployment["spec"]["template"]["metadata"]["annotations"]["example.com/team"],
        "db"
    );
}

#[test]
fn deployments_run_the_mirrored_images_and_config_added_images_stay_as_written() {
    let csv = csv();
    let targets = vec!["ops".to_string()];
    let config = OperatorConfig {
        env: vec![k8s_openapi::api::core::v1::EnvVar {
            name: "RELATED_IMAGE_EXTRA".into(),
            value: Some("registry.k8s.io/pause:3.10".into()),
            ..Default::default()
        }],
        ..OperatorConfig::default()
    };
    let rewrites = [windlass_mirror::Rewrite {
        image: "registry.k8s.io/pause:3.10".into(),
        mirror: "registry.site/k8s/pause:3.10".into(),
        mirror_set: "site".into(),
    }];
    let context = InstallContext {
        image_rewrites: &rewrites,
        ..ctx(&csv, &targets, &config)
    };
    let objects = build(&context);
    let deployment = objects.iter().find(|o| o.kind() == "Deployment").unwrap();
    let container = &deployment.object["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "registry.site/k8s/pause:3.10");
    let extra = container["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "RELATED_IMAGE_EXTRA")
        .unwrap();
    assert_eq!(extra["value"], "registry.k8s.io/pause:3.10");
}
