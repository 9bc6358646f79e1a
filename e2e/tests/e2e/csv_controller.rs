//! The ClusterServiceVersion controller on the real control plane, with the manager that
//! `make e2e` runs: installs, failures, requirements, cleanup and replacement.

use std::{path::Path, time::Duration};

use k8s_openapi::{
    api::{
        admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration},
        apps::v1::Deployment,
        core::v1::{Secret, Service, ServiceAccount},
        rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding},
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, Client, ResourceExt,
    api::{ListParams, PostParams},
};
use serde_json::{Value, json};
use windlass_api::names::reasons;
use windlass_api::{ClusterServiceVersion, ClusterServiceVersionSpec, CsvPhase};
use windlass_testkit::{
    TestNamespace, kubectl, manager::seal_csv_for_manager, manager_log_tail, require_manager,
    run_ok, wait_for,
};

const TIMEOUT: Duration = Duration::from_secs(120);

fn bundle(path: &str) -> windlass_bundle::Bundle {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    windlass_bundle::load_bundle(&dir).unwrap_or_else(|e| panic!("loading {}: {e}", dir.display()))
}

/// Applies the newest acme-db CRD (v1 and the served v1alpha1). CRDs are cluster-scoped and
/// tests run in parallel, so every test applies the same definition, one every version accepts.
async fn apply_acme_db_crd(client: &Client) {
    apply_crds(client, &bundle("bundles/acme-db/1.1.1")).await;
}

/// Applies the bundle's CRDs (the Blueprint's job; done by hand until it exists).
async fn apply_crds(client: &Client, bundle: &windlass_bundle::Bundle) {
    for manifest in bundle
        .manifests
        .iter()
        .filter(|m| m.object["kind"] == "CustomResourceDefinition")
    {
        windlass_testkit::apply_crd(client, &manifest.object).await;
    }
}

fn windlass_csv(
    bundle: &windlass_bundle::Bundle,
    targets: &[&str],
    tweak: impl FnOnce(&mut Value),
) -> ClusterServiceVersion {
    let mut definition = json!({
        "metadata": {"annotations": bundle.csv.metadata.annotations, "labels": bundle.csv.metadata.labels},
        "spec": serde_json::to_value(&bundle.csv.spec).unwrap(),
    });
    tweak(&mut definition);
    ClusterServiceVersion::new(
        bundle.csv.name(),
        ClusterServiceVersionSpec {
            definition: definition.into(),
            target_namespaces: targets.iter().map(|t| t.to_string()).collect(),
            progress_deadline_seconds: Some(30),
            ..Default::default()
        },
    )
}

/// Creates `csv` in `namespace` sealed as a Blueprint seals what it applies: these tests stand in
/// for one (the CSV controller acts on nothing else).
async fn create_sealed(
    client: &Client,
    namespace: &str,
    csv: &ClusterServiceVersion,
) -> ClusterServiceVersion {
    let mut csv = csv.clone();
    csv.metadata.namespace = Some(namespace.to_string());
    seal_csv_for_manager(client, &mut csv).await;
    Api::<ClusterServiceVersion>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &csv)
        .await
        .unwrap_or_else(|e| panic!("creating CSV {}: {e}", csv.name_any()))
}

async fn wait_phase(
    api: &Api<ClusterServiceVersion>,
    name: &str,
    phase: CsvPhase,
) -> ClusterServiceVersion {
    let found = tokio::time::timeout(
        TIMEOUT + Duration::from_secs(5),
        wait_for(&format!("CSV {name} to be {phase:?}"), TIMEOUT, || async {
            let csv = api.get(name).await.map_err(|e| e.to_string())?;
            match csv.status.as_ref().and_then(|s| s.phase) {
                Some(p) if p == phase => Ok(csv),
                _ => Err(format!("{:?}", csv.status)),
            }
        }),
    )
    .await;
    match found {
        Ok(csv) => csv,
        Err(_) => panic!("timed out; manager log:\n{}", manager_log_tail(40)),
    }
}

async fn setup(prefix: &str) -> (Client, TestNamespace, Api<ClusterServiceVersion>) {
    require_manager();
    let client = windlass_testkit::client().await;
    let ns = TestNamespace::create(&client, prefix).await;
    let api = Api::<ClusterServiceVersion>::namespaced(client.clone(), &ns.name);
    (client, ns, api)
}

/// Given acme-db 1.0.0, when its CSV is created for its own namespace, then it Succeeds with the
/// bundle's ServiceAccount, Role, ClusterRole and Deployment, and deleting it removes them all.
#[tokio::test]
async fn csv_installs_rbac_and_deployments_and_deleting_it_removes_everything() {
    let (client, ns, api) = setup("csv-install").await;
    let db = bundle("bundles/acme-db/1.0.0");
    apply_acme_db_crd(&client).await;
    let csv = create_sealed(&client, &ns.name, &windlass_csv(&db, &[&ns.name], |_| {})).await;
    let succeeded = wait_phase(&api, &csv.name_any(), CsvPhase::Succeeded).await;
    assert_eq!(
        succeeded.status.as_ref().unwrap().reason,
        reasons::csv::INSTALL_SUCCEEDED
    );

    let strategy = db.csv.spec.install.as_ref().unwrap().spec.as_ref().unwrap();
    let deployments = Api::<Deployment>::namespaced(client.clone(), &ns.name);
    for spec in &strategy.deployments {
        let deployment = deployments.get(&spec.name).await.unwrap();
        let annotations = deployment
            .spec
            .template
            .metadata
            .as_ref()
            .unwrap()
            .annotations
            .clone()
            .unwrap();
        assert_eq!(annotations["olm.targetNamespaces"], ns.name);
        let image = &deployment.spec.template.spec.as_ref().unwrap().containers[0].image;
        assert_eq!(
            image.as_deref(),
            spec.spec["template"]["spec"]["containers"][0]["image"].as_str()
        );
        assert_eq!(deployment.owner_references()[0].name, csv.name_any());
    }
    let service_accounts = Api::<ServiceAccount>::namespaced(client.clone(), &ns.name);
    for permission in strategy
        .permissions
        .iter()
        .chain(&strategy.cluster_permissions)
    {
        service_accounts
            .get(&permission.service_account_name)
            .await
            .unwrap();
    }
    let roles = Api::<Role>::namespaced(client.clone(), &ns.name)
        .list(&ListParams::default())
        .await
        .unwrap();
    let expected_rules = serde_json::to_value(&strategy.permissions[0].rules).unwrap();
    assert!(
        roles
            .items
            .iter()
            .any(|r| serde_json::to_value(&r.rules).unwrap() == expected_rules),
        "no Role with the bundle's rules"
    );
    Api::<RoleBinding>::namespaced(client.clone(), &ns.name)
        .list(&ListParams::default())
        .await
        .unwrap();
    let selector = format!(
        "windlass.dev/csv={},windlass.dev/csv-namespace={}",
        csv.name_any(),
        ns.name
    );
    let cluster_roles = Api::<ClusterRole>::all(client.clone());
    let cluster_bindings = Api::<ClusterRoleBinding>::all(client.clone());
    assert_eq!(
        cluster_roles
            .list(&ListParams::default().labels(&selector))
            .await
            .unwrap()
            .items
            .len(),
        strategy.cluster_permissions.len()
    );
    assert_eq!(
        cluster_bindings
            .list(&ListParams::default().labels(&selector))
            .await
            .unwrap()
            .items
            .len(),
        strategy.cluster_permissions.len()
    );

    api.delete(&csv.name_any(), &Default::default())
        .await
        .unwrap();
    wait_for("the CSV and its cluster-scoped objects to be gone", TIMEOUT, || async {
        let csv_left = api.get_opt(&csv.name_any()).await.map_err(|e| e.to_string())?.is_some();
        let roles_left = cluster_roles.list(&ListParams::default().labels(&selector)).await.map_err(|e| e.to_string())?.items.len();
        let bindings_left = cluster_bindings.list(&ListParams::default().labels(&selector)).await.map_err(|e| e.to_string())?.items.len();
        let deployments_left = deployments.list(&ListParams::default()).await.map_err(|e| e.to_string())?.items.len();
        if !csv_left && roles_left == 0 && bindings_left == 0 && deployments_left == 0 {
            Ok(())
        } else {
            Err(format!("csv {csv_left}, cluster roles {roles_left}, bindings {bindings_left}, deployments {deployments_left}"))
        }
    })
    .await;
}

/// Given acme-db 1.0.0 installed, when its CSV's spec drops the cluster permissions, then the
/// ClusterRole and ClusterRoleBinding made for them are removed and the rest stays.
#[tokio::test]
async fn a_csv_whose_spec_drops_a_permission_has_its_objects_pruned() {
    let (client, ns, api) = setup("csv-prune").await;
    let db = bundle("bundles/acme-db/1.0.0");
    apply_acme_db_crd(&client).await;
    let csv = create_sealed(&client, &ns.name, &windlass_csv(&db, &[&ns.name], |_| {})).await;
    wait_phase(&api, &csv.name_any(), CsvPhase::Succeeded).await;
    let selector = format!(
        "windlass.dev/csv={},windlass.dev/csv-namespace={}",
        csv.name_any(),
        ns.name
    );
    let cluster_roles = Api::<ClusterRole>::all(client.clone());
    let labelled = ListParams::default().labels(&selector);
    assert!(
        !cluster_roles
            .list(&labelled)
            .await
            .unwrap()
            .items
            .is_empty(),
        "acme-db 1.0.0 ships cluster permissions, so a ClusterRole was expected"
    );

    let mut changed = api.get(&csv.name_any()).await.unwrap();
    changed.spec = windlass_csv(&db, &[&ns.name], |definition| {
        definition["spec"]["install"]["spec"]["clusterPermissions"] = json!([]);
    })
    .spec;
    seal_csv_for_manager(&client, &mut changed).await;
    api.replace(&csv.name_any(), &PostParams::default(), &changed)
        .await
        .unwrap();
    let cluster_bindings = Api::<ClusterRoleBinding>::all(client.clone());
    wait_for(
        "the cluster permission's objects to be pruned",
        TIMEOUT,
        || async {
            let roles = cluster_roles
                .list(&labelled)
                .await
                .map_err(|e| e.to_string())?
                .items
                .len();
            let bindings = cluster_bindings
                .list(&labelled)
                .await
                .map_err(|e| e.to_string())?
                .items
                .len();
            if roles == 0 && bindings == 0 {
                Ok(())
            } else {
                Err(format!("cluster roles {roles}, bindings {bindings}"))
            }
        },
    )
    .await;
    let roles = Api::<Role>::namespaced(client.clone(), &ns.name)
        .list(&labelled)
        .await
        .unwrap();
    assert!(
        !roles.items.is_empty(),
        "the namespaced permission's Role was pruned with the cluster ones"
    );
    let after = wait_phase(&api, &csv.name_any(), CsvPhase::Succeeded).await;
    assert_eq!(after.metadata.generation, Some(2));
}

/// Given the deliberately broken acme-db 1.1.1, its CSV fails after the progress deadline with
/// the crash-looping pod's state in the message.
#[tokio::test]
async fn csv_with_a_crash_looping_operator_fails_with_the_pod_state() {
    let (client, ns, api) = setup("csv-broken").await;
    let broken = bundle("bundles/acme-db/1.1.1");
    apply_acme_db_crd(&client).await;
    let csv = create_sealed(
        &client,
        &ns.name,
        &windlass_csv(&broken, &[&ns.name], |_| {}),
    )
    .await;
    let failed = wait_phase(&api, &csv.name_any(), CsvPhase::Failed).await;
    let status = failed.status.unwrap();
    assert_eq!(status.reason, reasons::csv::INSTALL_CHECK_FAILED);
    assert!(
        status.message.contains("CrashLoopBackOff"),
        "{}",
        status.message
    );
    assert!(
        status.message.contains("progress deadline"),
        "{}",
        status.message
    );
}

/// Unmet requirements keep a CSV Pending with the reason, and nothing is installed.
#[tokio::test]
async fn csv_with_unmet_requirements_stays_pending_and_installs_nothing() {
    let (client, ns, api) = setup("csv-pending").await;
    let db = bundle("bundles/acme-db/1.0.0");
    apply_acme_db_crd(&client).await;
    let too_new = windlass_csv(&db, &[&ns.name], |d| {
        d["spec"]["minKubeVersion"] = json!("99.0.0")
    });
    let mut missing_crd = windlass_csv(&db, &[&ns.name], |d| {
        d["spec"]["customresourcedefinitions"]["required"] =
            json!([{"name": "widgets.missing.windlass.dev", "version": "v1", "kind": "Widget"}]);
    });
    missing_crd.metadata.name = Some("acme-db.missing-crd".into());
    create_sealed(&client, &ns.name, &too_new).await;
    create_sealed(&client, &ns.name, &missing_crd).await;

    let pending = wait_phase(&api, &too_new.name_any(), CsvPhase::Pending)
        .await
        .status
        .unwrap();
    assert_eq!(pending.reason, reasons::csv::REQUIREMENTS_NOT_MET);
    assert!(
        pending.message.contains("needs Kubernetes 99.0.0 or newer"),
        "{}",
        pending.message
    );
    let pending = wait_phase(&api, "acme-db.missing-crd", CsvPhase::Pending)
        .await
        .status
        .unwrap();
    assert!(
        pending
            .message
            .contains("required CRD widgets.missing.windlass.dev does not exist"),
        "{}",
        pending.message
    );
    let deployments = Api::<Deployment>::namespaced(client.clone(), &ns.name)
        .list(&ListParams::default())
        .await
        .unwrap();
    assert!(
        deployments.items.is_empty(),
        "a Pending CSV installed {:?}",
        deployments
            .items
            .iter()
            .map(|d| d.name_any())
            .collect::<Vec<_>>()
    );
}

/// A CSV that supersedes another adopts its Deployment in place (same object, new template),
/// and the old CSV goes away once the new one Succeeded.
#[tokio::test]
async fn replacing_csv_adopts_the_deployment_in_place_and_the_old_one_is_removed() {
    let (client, ns, api) = setup("csv-replace").await;
    let old = bundle("bundles/acme-db/1.0.0");
    let new = bundle("bundles/acme-db/1.0.1");
    apply_acme_db_crd(&client).await;
    let old_csv = create_sealed(&client, &ns.name, &windlass_csv(&old, &[&ns.name], |_| {})).await;
    wait_phase(&api, &old_csv.name_any(), CsvPhase::Succeeded).await;
    let deployments = Api::<Deployment>::namespaced(client.clone(), &ns.name);
    let name = old.csv.deployments()[0].name.clone();
    let before = deployments.get(&name).await.unwrap();

    let mut new_csv = windlass_csv(&new, &[&ns.name], |_| {});
    new_csv.spec.supersedes = Some(old_csv.name_any());
    let new_csv = create_sealed(&client, &ns.name, &new_csv).await;
    wait_phase(&api, &new_csv.name_any(), CsvPhase::Succeeded).await;
    wait_for("the old CSV to be deleted", TIMEOUT, || async {
        match api.get_opt(&old_csv.name_any()).await {
            Ok(None) => Ok(()),
            Ok(Some(csv)) => Err(format!("{:?}", csv.status)),
            Err(e) => Err(e.to_string()),
        }
    })
    .await;
    let after = deployments.get(&name).await.unwrap();
    assert_eq!(
        before.uid(),
        after.uid(),
        "the Deployment was recreated instead of rolled in place"
    );
    assert_eq!(after.owner_references().len(), 1);
    assert_eq!(after.owner_references()[0].name, new_csv.name_any());
    assert!(
        after.metadata.generation > before.metadata.generation,
        "the new version did not roll out"
    );
}

/// A bundle with webhooks gets a Service, a certificate Secret, admission webhook
/// configurations carrying the CA, and its CRD's conversion pointed at the operator.
#[tokio::test]
async fn csv_with_webhooks_gets_a_service_certificate_and_webhook_configurations() {
    let (client, ns, api) = setup("csv-webhook").await;
    let gateway = bundle("bundles/acme-gateway/0.1.0");
    // Only this test uses the gateway CRD; start from the bundle's definition, not from the
    // conversion settings an earlier run's CSV patched in.
    run_ok(kubectl().args([
        "delete",
        "crd",
        "gateways.acme.windlass.dev",
        "--ignore-not-found",
        "--wait",
    ]));
    apply_crds(&client, &gateway).await;
    let csv = create_sealed(&client, &ns.name, &windlass_csv(&gateway, &[], |_| {})).await;
    wait_phase(&api, &csv.name_any(), CsvPhase::Succeeded).await;

    let services = Api::<Service>::namespaced(client.clone(), &ns.name)
        .list(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(
        services.items.len(),
        1,
        "one Service for the webhook deployment"
    );
    let secrets = Api::<Secret>::namespaced(client.clone(), &ns.name)
        .list(&ListParams::default())
        .await
        .unwrap();
    let cert = secrets
        .items
        .iter()
        .find(|s| s.name_any().ends_with("-service-cert"))
        .expect("certificate Secret");
    let ca = cert.data.as_ref().unwrap()["ca.crt"].0.clone();
    let selector = format!(
        "windlass.dev/csv={},windlass.dev/csv-namespace={}",
        csv.name_any(),
        ns.name
    );
    let validating = Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .list(&ListParams::default().labels(&selector))
        .await
        .unwrap();
    let mutating = Api::<MutatingWebhookConfiguration>::all(client.clone())
        .list(&ListParams::default().labels(&selector))
        .await
        .unwrap();
    assert_eq!(validating.items.len() + mutating.items.len(), 2);
    for webhook in validating
        .items
        .iter()
        .flat_map(|v| v.webhooks.iter().flatten())
    {
        assert_eq!(webhook.client_config.ca_bundle.as_ref().unwrap().0, ca);
    }
    let crd = Api::<CustomResourceDefinition>::all(client.clone())
        .get("gateways.acme.windlass.dev")
        .await
        .unwrap();
    let conversion = crd.spec.conversion.unwrap();
    assert_eq!(conversion.strategy, "Webhook");
    let service = conversion
        .webhook
        .unwrap()
        .client_config
        .unwrap()
        .service
        .unwrap();
    assert_eq!(service.namespace, ns.name);

    // A second look at the same state writes nothing: the certificate is not regenerated.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let again = Api::<Secret>::namespaced(client.clone(), &ns.name)
        .get(&cert.name_any())
        .await
        .unwrap();
    assert_eq!(again.resource_version(), cert.resource_version());
    api.delete(&csv.name_any(), &Default::default())
        .await
        .unwrap();
}
