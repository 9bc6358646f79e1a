//! ClusterServiceVersions written by tenants. A windlass CSV's spec becomes RBAC (cluster-wide
//! with `clusterPermissions`) and Deployments, so the CSV controller acts only on CSVs a
//! Blueprint applied and sealed: one a tenant makes, or edits, gets nothing created.

use std::time::Duration;

use k8s_openapi::api::{
    core::v1::ServiceAccount,
    rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding},
};
use kube::{
    Api, Client,
    api::{ListParams, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use windlass_api::{
    ClusterServiceVersion, ClusterServiceVersionSpec, ConditionStatus, CsvPhase,
    names::{conditions, labels, reasons},
};
use windlass_testkit::{
    TestNamespace, WITHOUT_ADMISSION_POLICIES, lifecycle::condition, lifecycle::wait_object,
    manager::seal_csv_for_manager, require_manager, wait_until_authorized,
};

use crate::tenancy::tenant;

const TIMEOUT: Duration = Duration::from_secs(120);

/// An operator with namespaced permissions, and `cluster_wide` rules on top when given.
fn probe(namespace: &str, cluster_wide: Option<Value>) -> ClusterServiceVersion {
    let mut install = json!({
        "permissions": [{"serviceAccountName": "probe", "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}
        ]}],
        "deployments": [{"name": "probe", "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "probe"}},
            "template": {
                "metadata": {"labels": {"app": "probe"}},
                "spec": {"serviceAccountName": "probe", "containers": [
                    {"name": "probe", "image": "registry.k8s.io/pause:3.10"}
                ]},
            },
        }}],
    });
    if let Some(rules) = cluster_wide {
        install["clusterPermissions"] = json!([{"serviceAccountName": "probe", "rules": rules}]);
    }
    let mut csv = ClusterServiceVersion::new(
        "probe.v1.0.0",
        ClusterServiceVersionSpec {
            definition: json!({"spec": {
                "displayName": "probe",
                "version": "1.0.0",
                "installModes": [{"type": "OwnNamespace", "supported": true}],
                "install": {"strategy": "deployment", "spec": install},
            }})
            .into(),
            target_namespaces: vec![namespace.to_string()],
            ..Default::default()
        },
    );
    csv.metadata.namespace = Some(namespace.to_string());
    csv
}

fn everything() -> Value {
    json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}])
}

/// A tenant's namespace and a client as the tenant, who may edit there and also write windlass
/// ClusterServiceVersions (as a role aggregating windlass's kinds into `edit` would allow).
async fn tenant_with_csv_rights(prefix: &str) -> (Client, TestNamespace, Client) {
    require_manager();
    let admin = windlass_testkit::client().await;
    // The admission policies would refuse the tenant's CSVs before windlass sees them
    // (admission_policies tests that): lifted here, so windlass's own checks are what is tried.
    let ns = TestNamespace::tenant_with_labels(&admin, prefix, &[WITHOUT_ADMISSION_POLICIES]).await;
    let (user, as_tenant) = tenant(&admin, &ns.name).await;
    let role: Role = serde_json::from_value(json!({
        "metadata": {"name": "csv-writer", "namespace": ns.name},
        "rules": [{"apiGroups": ["windlass.dev"], "resources": ["clusterserviceversions"], "verbs": ["*"]}],
    }))
    .unwrap();
    Api::<Role>::namespaced(admin.clone(), &ns.name)
        .create(&PostParams::default(), &role)
        .await
        .expect("creating the csv-writer Role");
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "csv-writer", "namespace": ns.name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "csv-writer"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }))
    .unwrap();
    Api::<RoleBinding>::namespaced(admin.clone(), &ns.name)
        .create(&PostParams::default(), &binding)
        .await
        .expect("binding the csv-writer Role");
    wait_until_authorized(
        &admin,
        &user,
        &ns.name,
        ("windlass.dev", "clusterserviceversions", "create"),
    )
    .await;
    (admin, ns, as_tenant)
}

fn trust(csv: &ClusterServiceVersion) -> Option<(ConditionStatus, String)> {
    let found = condition(
        &csv.status.as_ref()?.conditions,
        conditions::csv::CONTENT_TRUSTED,
    )?;
    Some((found.status, found.reason.clone()))
}

/// Cluster-scoped RBAC the CSV controller made for any CSV in `namespace`.
async fn cluster_rbac_for(admin: &Client, namespace: &str) -> Vec<String> {
    let selector = ListParams::default().labels(&format!("{}={namespace}", labels::CSV_NAMESPACE));
    let mut found: Vec<String> = Api::<ClusterRole>::all(admin.clone())
        .list(&selector)
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|r| r.metadata.name)
        .collect();
    found.extend(
        Api::<ClusterRoleBinding>::all(admin.clone())
            .list(&selector)
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|b| b.metadata.name),
    );
    found
}

/// Given a tenant who may write windlass CSVs, when they create one whose operator gets every
/// permission in the cluster, then it is Failed with `ContentTrusted=False` (`NotSealed`) and
/// nothing of it exists: no ClusterRole, no ServiceAccount, no Deployment.
#[tokio::test]
async fn a_csv_made_by_a_tenant_creates_nothing() {
    let (admin, ns, as_tenant) = tenant_with_csv_rights("handmade").await;
    let tenant_csvs = Api::<ClusterServiceVersion>::namespaced(as_tenant, &ns.name);
    tenant_csvs
        .create(&PostParams::default(), &probe(&ns.name, Some(everything())))
        .await
        .expect("the tenant may create CSVs: the attack is real");
    let admin_csvs = Api::<ClusterServiceVersion>::namespaced(admin.clone(), &ns.name);
    let refused = wait_object(
        &admin_csvs,
        "probe.v1.0.0",
        reasons::csv::NOT_SEALED,
        TIMEOUT,
        |c| trust(c) == Some((ConditionStatus::False, reasons::csv::NOT_SEALED.into())),
    )
    .await;
    let status = refused.status.unwrap();
    assert_eq!(status.phase, Some(CsvPhase::Failed));
    assert!(
        status.message.contains("Subscription"),
        "{}",
        status.message
    );
    // The refusal is written after the decision: had anything been applied, it would exist.
    assert_eq!(
        cluster_rbac_for(&admin, &ns.name).await,
        Vec::<String>::new()
    );
    let service_accounts = Api::<ServiceAccount>::namespaced(admin.clone(), &ns.name);
    assert!(service_accounts.get_opt("probe").await.unwrap().is_none());
    let deployments = Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(admin, &ns.name);
    assert!(deployments.get_opt("probe").await.unwrap().is_none());
}

/// Given a CSV windlass sealed (created here as a Blueprint would) running in a tenant's
/// namespace, when the tenant adds cluster-wide permissions to it, then it reports
/// `ContentTrusted=False` (`SealMismatch`), keeps its phase, and no cluster-wide RBAC appears.
#[tokio::test]
async fn a_tenant_cannot_widen_a_csv_windlass_applied() {
    let (admin, ns, as_tenant) = tenant_with_csv_rights("widened").await;
    let mut sealed = probe(&ns.name, None);
    seal_csv_for_manager(&admin, &mut sealed).await;
    let admin_csvs = Api::<ClusterServiceVersion>::namespaced(admin.clone(), &ns.name);
    admin_csvs
        .create(&PostParams::default(), &sealed)
        .await
        .unwrap();
    wait_object(
        &admin_csvs,
        "probe.v1.0.0",
        "Succeeded and trusted",
        TIMEOUT,
        |c| {
            c.status.as_ref().and_then(|s| s.phase) == Some(CsvPhase::Succeeded)
                && trust(c) == Some((ConditionStatus::True, reasons::csv::SEALED.into()))
        },
    )
    .await;
    let service_accounts = Api::<ServiceAccount>::namespaced(admin.clone(), &ns.name);
    assert!(
        service_accounts.get_opt("probe").await.unwrap().is_some(),
        "the sealed CSV was acted on"
    );

    let widened = json!({"spec": {"definition": {"spec": {"install": {"spec": {
        "clusterPermissions": [{"serviceAccountName": "probe", "rules": everything()}]
    }}}}}});
    Api::<ClusterServiceVersion>::namespaced(as_tenant, &ns.name)
        .patch(
            "probe.v1.0.0",
            &PatchParams::default(),
            &Patch::Merge(&widened),
        )
        .await
        .expect("the tenant may edit CSVs: the attack is real");
    let refused = wait_object(
        &admin_csvs,
        "probe.v1.0.0",
        reasons::csv::SEAL_MISMATCH,
        TIMEOUT,
        |c| trust(c) == Some((ConditionStatus::False, reasons::csv::SEAL_MISMATCH.into())),
    )
    .await;
    assert_eq!(
        refused.status.and_then(|s| s.phase),
        Some(CsvPhase::Succeeded),
        "what runs keeps running"
    );
    assert_eq!(
        cluster_rbac_for(&admin, &ns.name).await,
        Vec::<String>::new()
    );
}
