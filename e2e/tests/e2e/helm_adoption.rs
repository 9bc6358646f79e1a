//! `windlass adopt helm`: an operator installed by a Helm chart (real helm, its objects the
//! ones the operator's bundle installs) is taken over in place as the windlass Subscription of
//! that bundle: the same pods run, Helm's history is kept on the Subscription, Helm forgets
//! the release without deleting anything, and windlass upgrades and rolls it back.

use std::{path::Path, time::Duration};

use k8s_openapi::api::{apps::v1::Deployment, rbac::v1::ClusterRole};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use windlass_api::{
    Subscription,
    names::{annotations, labels},
};
use windlass_oci as oci;
use windlass_testkit::{
    TestNamespace,
    catalogs::{TestCatalog, plain_http, publish_to},
    helm, registry, require_manager, run_ok, unique_name, wait_until,
};

use crate::blueprint_lifecycle::own_crd_group;
use crate::common::adoption::{upgrade_then_roll_back, windlass};
use crate::common::olm_v0::pods;

const TIMEOUT: Duration = Duration::from_secs(240);

fn write_json(path: &Path, value: &Value) {
    // JSON is YAML, and none of it holds a template action.
    let text = serde_json::to_string_pretty(value).unwrap();
    assert!(!text.contains("{{"), "{text}");
    std::fs::write(path, text).unwrap();
}

/// A chart that installs what `bundle`'s CSV installs for all namespaces in `namespace`: its
/// CRD, ServiceAccount and Deployment as windlass renders them, and RBAC under the chart's own
/// names.
fn chart_of(dir: &Path, bundle: &windlass_bundle::Bundle, namespace: &str) {
    let templates = dir.join("templates");
    std::fs::create_dir_all(&templates).unwrap();
    std::fs::write(
        dir.join("Chart.yaml"),
        "apiVersion: v2\nname: acme-db\nversion: 0.3.0\nappVersion: \"1.0.0\"\n",
    )
    .unwrap();
    let manifest = |kind: &str| {
        bundle
            .manifests
            .iter()
            .find(|m| m.kind() == kind)
            .unwrap()
            .object
            .clone()
    };
    write_json(
        &templates.join("crd.yaml"),
        &manifest("CustomResourceDefinition"),
    );
    let csv = manifest("ClusterServiceVersion");
    let strategy = &csv["spec"]["install"]["spec"];
    let account = strategy["clusterPermissions"][0]["serviceAccountName"]
        .as_str()
        .unwrap();
    write_json(
        &templates.join("serviceaccount.yaml"),
        &json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account}}),
    );
    let role = format!("{namespace}-acme-db-chart");
    write_json(
        &templates.join("clusterrole.yaml"),
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": role}, "rules": strategy["clusterPermissions"][0]["rules"]}),
    );
    write_json(
        &templates.join("clusterrolebinding.yaml"),
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": role},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]}),
    );
    let deployment = &strategy["deployments"][0];
    let mut spec = deployment["spec"].clone();
    let pod_annotations = &mut spec["template"]["metadata"]["annotations"];
    if !pod_annotations.is_object() {
        *pod_annotations = json!({});
    }
    pod_annotations["olm.targetNamespaces"] = json!("");
    pod_annotations["olm.operatorNamespace"] = json!(namespace);
    write_json(
        &templates.join("deployment.yaml"),
        &json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": deployment["name"]}, "spec": spec}),
    );
}

/// Given acme-db 1.0.0 installed by `helm install`, when it is adopted as the windlass
/// Subscription of the same bundle, then the same pods run and Helm's marks are gone; the
/// chart's own RBAC, which the bundle does not ship, is left and named; Helm's history is on
/// the Subscription; once Helm forgets the release, windlass upgrades and rolls back.
#[tokio::test]
async fn a_helm_release_is_adopted_in_place_then_upgraded_and_rolled_back_by_windlass() {
    require_manager();
    let admin = windlass_testkit::client().await;
    let ns = TestNamespace::create(&admin, "helmadopt").await;
    let package = unique_name("acme-db-helm");
    let group = format!("{package}.windlass.dev");
    let bundles = registry().unique_repository(&package);
    let first = publish_to(&bundles, &package, "acme-db/1.0.0", own_crd_group(&group)).await;
    let second = publish_to(&bundles, &package, "acme-db/1.0.1", own_crd_group(&group)).await;
    let catalog = TestCatalog::serving(&admin, "helmadopt", &[first.clone(), second]).await;
    let (bundle, _) = oci::pull_bundle(&first, &plain_http()).await.unwrap();
    let chart = tempfile::tempdir().unwrap();
    chart_of(chart.path(), &bundle, &ns.name);
    run_ok(helm().args([
        "install",
        "db",
        &chart.path().display().to_string(),
        "-n",
        &ns.name,
        "--wait",
        "--timeout",
        "120s",
    ]));
    let deployments = Api::<Deployment>::namespaced(admin.clone(), &ns.name);
    let name = "acme-db-operator";
    wait_until("Helm's Deployment available", TIMEOUT, || async {
        let d = deployments.get(name).await.unwrap();
        d.status.and_then(|s| s.available_replicas).unwrap_or(0) >= 1
    })
    .await;
    let before = pods(&admin, &ns.name, name).await;
    let template =
        serde_json::to_value(&deployments.get(name).await.unwrap().spec.template).unwrap();
    let adopt = |extra: &[&str]| {
        let mut command = windlass();
        command.args([
            "adopt",
            "helm",
            "db",
            "-n",
            &ns.name,
            "--package",
            &package,
            "--catalog",
            &catalog.name,
            "--channel",
            "stable",
            "--csv",
            "acme-db.v1.0.0",
            "--timeout",
            "200",
        ]);
        command.args(extra);
        command.output().unwrap()
    };

    let dry = adopt(&["--dry-run"]);
    let text = String::from_utf8_lossy(&dry.stdout).to_string();
    assert!(
        dry.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    assert!(
        text.contains(&format!("take     Deployment {}/{name}", ns.name)),
        "{text}"
    );
    assert!(text.contains("kubectl label secret"), "{text}");
    let subscriptions = Api::<Subscription>::namespaced(admin.clone(), &ns.name);
    assert!(
        subscriptions.get_opt("db").await.unwrap().is_none(),
        "a dry run writes nothing"
    );

    let out = adopt(&[]);
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    let role = format!("{}-acme-db-chart", ns.name);
    assert!(
        said.contains(&format!("ClusterRole {role}")),
        "the chart's own RBAC is named: {said}"
    );
    assert_eq!(
        pods(&admin, &ns.name, name).await,
        before,
        "the same pods run"
    );
    let deployment = deployments.get(name).await.unwrap();
    assert_eq!(
        serde_json::to_value(&deployment.spec.template).unwrap(),
        template
    );
    assert_eq!(
        deployment
            .labels()
            .get(labels::MANAGED_BY)
            .map(String::as_str),
        Some("windlass")
    );
    assert!(
        !deployment
            .annotations()
            .contains_key("meta.helm.sh/release-name"),
        "{:?}",
        deployment.annotations()
    );
    // Left as it was: the bundle does not ship it, so it is not windlass's to take.
    let left = Api::<ClusterRole>::all(admin.clone())
        .get(&role)
        .await
        .unwrap();
    assert!(left.annotations().contains_key("meta.helm.sh/release-name"));
    let sub = subscriptions.get("db").await.unwrap();
    let history: Value =
        serde_json::from_str(sub.annotations().get(annotations::ADOPTED_HISTORY).unwrap()).unwrap();
    assert_eq!(history[0]["revision"], json!(1));
    assert_eq!(history[0]["chart"], json!("acme-db-0.3.0"));

    // Helm forgets the release, deleting nothing.
    run_ok(windlass_testkit::kubectl().args([
        "label",
        "secret",
        "-n",
        &ns.name,
        "-l",
        "owner=helm,name=db",
        "owner-",
    ]));
    let listed = run_ok(helm().args(["list", "-n", &ns.name, "-q"]));
    assert!(!listed.contains("db"), "{listed}");
    assert_eq!(pods(&admin, &ns.name, name).await, before);

    upgrade_then_roll_back(&admin, &ns.name, "db").await;
}
