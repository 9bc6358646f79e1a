//! CRDs are shared by the whole cluster, so one that something else manages (Helm, a person,
//! another package) is not taken over by an install unless a cluster admin allows it.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, ResourceExt,
    api::{Patch, PatchParams},
};
use serde_json::json;
use windlass_api::{
    blueprint::BlueprintPhase,
    names::{annotations, reasons},
};
use windlass_testkit::{
    apply_crd,
    catalogs::{TestCatalog, publish},
    lifecycle::{is_at, subscribe, wait_blueprint},
    unique_name,
};

use crate::{
    blueprint_lifecycle::own_crd_group,
    common::helm::repo_root,
    tenancy::{TestPolicy, csvs_in, refused, self_service},
};

const TIMEOUT: Duration = Duration::from_secs(180);

/// Given a CRD a Helm release installed, and a tenant whose policy grants CRDs (but not
/// CrdAdoption), when the tenant subscribes to a package that ships a CRD of that name, then
/// the install is refused naming the CRD and the Helm release, and the CRD is left as Helm
/// made it; once a cluster admin annotates the CRD for the package, it installs.
#[tokio::test]
async fn a_crd_helm_manages_is_not_taken_over_until_an_admin_hands_it_over() {
    let (admin, ns, as_tenant) = self_service("crdowner").await;
    let _policy = TestPolicy::create(
        &admin,
        &ns.name,
        json!({"clusterScoped": ["CustomResourceDefinitions", "ClusterPermissions", "Webhooks", "OtherObjects"]}),
    )
    .await;
    let package = unique_name("acme-db-owned");
    let group = format!("{package}.windlass.dev");
    let rename = own_crd_group(&group);
    let image = publish(&package, "acme-db/1.0.0", &rename).await;
    let test_catalog = TestCatalog::serving(&admin, "crdowner", std::slice::from_ref(&image)).await;

    // Helm installed the same CRD first.
    let bundle = windlass_bundle::load_bundle(&repo_root().join("bundles/acme-db/1.0.0"))
        .expect("loading acme-db 1.0.0");
    let mut crd = bundle
        .objects_of_kind("CustomResourceDefinition")
        .next()
        .expect("acme-db ships a CRD")
        .object
        .clone();
    rename(&mut crd);
    crd["metadata"]["labels"] = json!({"app.kubernetes.io/managed-by": "Helm"});
    crd["metadata"]["annotations"] = json!({"meta.helm.sh/release-name": "databases", "meta.helm.sh/release-namespace": "infra"});
    let crd_name = apply_crd(&admin, &crd).await;

    subscribe(
        &as_tenant,
        &ns.name,
        "db",
        json!({"package": package, "catalog": test_catalog.name, "targetNamespaces": [ns.name]}),
    )
    .await;
    let message = refused(&admin, &ns.name, "db", reasons::policy::CRD_OWNED_ELSEWHERE).await;
    assert!(
        message.contains(&crd_name) && message.contains("Helm release infra/databases"),
        "{message}"
    );
    let crds = Api::<CustomResourceDefinition>::all(admin.clone());
    let live = crds.get(&crd_name).await.unwrap();
    assert_eq!(
        live.labels()
            .get("app.kubernetes.io/managed-by")
            .map(String::as_str),
        Some("Helm"),
        "the CRD is left as Helm made it"
    );
    assert_eq!(live.annotations().get(annotations::CRD_PACKAGE), None);
    assert_eq!(csvs_in(&admin, &ns.name).await, Vec::<String>::new());

    // A cluster admin hands the CRD to the package, as the message says.
    let adopt = json!({"metadata": {"annotations": {annotations::CRD_ADOPT: package}}});
    crds.patch(&crd_name, &PatchParams::default(), &Patch::Merge(&adopt))
        .await
        .unwrap();
    wait_blueprint(&admin, &ns.name, "db", "1.0.0 Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.0")
    })
    .await;
    let live = crds.get(&crd_name).await.unwrap();
    assert_eq!(
        live.annotations().get(annotations::CRD_PACKAGE),
        Some(&package),
        "the package manages it now"
    );
}
