//! `windlass adopt olm`: an operator OLM v0 installed (its objects as OLM leaves them, OLM's
//! controllers not running) is taken over in place: no pod restarts (uids compared), the
//! objects change hands, OLM's own objects can then be deleted without taking the operator
//! with them, and windlass upgrades and rolls it back afterwards.

use std::time::Duration;

use k8s_openapi::api::{
    apps::v1::{Deployment, ReplicaSet},
    rbac::v1::Role,
};
use kube::{
    Api, ResourceExt,
    api::{DynamicObject, ListParams, PostParams},
};
use serde_json::{Value, json};
use windlass_api::{
    Blueprint, ClusterServiceVersion, Subscription,
    blueprint::RevisionOutcome,
    csv::CsvPhase,
    names::{annotations, labels},
};
use windlass_oci as oci;
use windlass_testkit::{
    TestNamespace,
    catalogs::{plain_http, publish_to},
    kubectl, registry, require_manager, run_ok, unique_name, wait_until,
};

use crate::blueprint_lifecycle::own_crd_group;
use crate::common::adoption::{upgrade_then_roll_back, windlass};
use crate::common::olm_v0::{self, install_crds, leave_running, pods};
use crate::signed_catalogs::push_catalog;

const TIMEOUT: Duration = Duration::from_secs(240);

fn manifest<'a>(bundle: &'a windlass_bundle::Bundle, kind: &str) -> &'a Value {
    &bundle
        .manifests
        .iter()
        .find(|m| m.kind() == kind)
        .unwrap_or_else(|| panic!("no {kind} in the bundle"))
        .object
}

/// Given acme-db 1.0.0 running as OLM v0 left it (Manual approval, 1.0.1 in the channel), when
/// OLM's controller still runs adoption is refused and nothing is written; once it is stopped,
/// a dry run lists what changes hands, and `windlass adopt olm` takes it over with the same pods;
/// deleting OLM's Subscription, CSV and InstallPlan then leaves the operator running (OLM's
/// generated RBAC goes with its CSV); windlass upgrades it to 1.0.1 and rolls it back.
#[tokio::test]
async fn an_olm_install_is_adopted_in_place_then_upgraded_and_rolled_back_by_windlass() {
    require_manager();
    install_crds().await;
    let admin = windlass_testkit::client().await;
    let ns = TestNamespace::create(&admin, "olmadopt").await;
    let package = unique_name("acme-db-olm");
    let group = format!("{package}.windlass.dev");
    let bundles = registry().unique_repository(&package);
    let first = publish_to(&bundles, &package, "acme-db/1.0.0", own_crd_group(&group)).await;
    let second = publish_to(&bundles, &package, "acme-db/1.0.1", own_crd_group(&group)).await;
    let catalog_image = format!("{}:v1", registry().unique_repository("olm-index"));
    push_catalog(&catalog_image, &[first.clone(), second]).await;
    let (bundle, _) = oci::pull_bundle(&first, &plain_http()).await.unwrap();
    let olm = leave_running(
        &admin,
        &ns.name,
        &package,
        &catalog_image,
        manifest(&bundle, "ClusterServiceVersion"),
        manifest(&bundle, "CustomResourceDefinition"),
    )
    .await;
    let before = pods(&admin, &ns.name, &olm.deployment).await;
    assert!(!before.is_empty(), "OLM's operator runs pods");
    let deployments = Api::<Deployment>::namespaced(admin.clone(), &ns.name);
    let template_before = serde_json::to_value(
        &deployments
            .get(&olm.deployment)
            .await
            .unwrap()
            .spec
            .template,
    )
    .unwrap();
    let replica_sets = || async {
        Api::<ReplicaSet>::namespaced(admin.clone(), &ns.name)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .map(|r| r.uid().unwrap_or_default())
            .collect::<Vec<_>>()
    };
    let sets_before = replica_sets().await;
    let subscriptions = Api::<Subscription>::namespaced(admin.clone(), &ns.name);
    let adopt = |extra: &[&str]| {
        let mut command = windlass();
        command.args([
            "adopt",
            "olm",
            &package,
            "-n",
            &ns.name,
            "--plain-http",
            "--timeout",
            "200",
        ]);
        command.args(extra);
        command.output().unwrap()
    };

    // OLM's controller runs (a Deployment of its name, in a namespace of its own): refused,
    // naming the command that stops it, and nothing is written.
    let olm_ns = TestNamespace::create(&admin, "olmctl").await;
    let controller: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "olm-operator", "namespace": olm_ns.name},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "olm-operator"}},
                 "template": {"metadata": {"labels": {"app": "olm-operator"}},
                              "spec": {"containers": [{"name": "olm", "image": "quay.io/operator-framework/olm:v0.38.0"}]}}},
    }))
    .unwrap();
    let controllers = Api::<Deployment>::namespaced(admin.clone(), &olm_ns.name);
    controllers
        .create(&PostParams::default(), &controller)
        .await
        .unwrap();
    let refused = adopt(&[]);
    let said = String::from_utf8_lossy(&refused.stdout).to_string()
        + &String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "kubectl -n {} scale deployment olm-operator --replicas=0",
            olm_ns.name
        )),
        "{said}"
    );
    assert!(
        subscriptions.get_opt(&package).await.unwrap().is_none(),
        "nothing written: {said}"
    );
    run_ok(kubectl().args([
        "-n",
        &olm_ns.name,
        "scale",
        "deployment",
        "olm-operator",
        "--replicas=0",
    ]));
    wait_until("OLM's controller stopped", TIMEOUT, || async {
        let d = controllers.get("olm-operator").await.unwrap();
        d.status.and_then(|s| s.ready_replicas).unwrap_or(0) == 0
    })
    .await;

    // The dry run says what changes hands, and changes nothing.
    let deployment_version = deployments
        .get(&olm.deployment)
        .await
        .unwrap()
        .resource_version();
    let dry = adopt(&["--dry-run"]);
    let text = String::from_utf8_lossy(&dry.stdout).to_string();
    assert!(
        dry.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    for expected in [
        format!("take     Deployment {}/{}", ns.name, olm.deployment),
        format!("take     ServiceAccount {}/", ns.name),
        format!("take     CustomResourceDefinition {}", olm.crd),
        format!("replace  Role {}/{}", ns.name, olm.generated_rbac[0].1),
        format!(
            "kubectl delete subscriptions.operators.coreos.com -n {} {package}",
            ns.name
        ),
        "Before adopting, OLM must let go".to_string(),
    ] {
        assert!(text.contains(&expected), "{expected:?} missing in:\n{text}");
    }
    assert!(subscriptions.get_opt(&package).await.unwrap().is_none());
    assert_eq!(
        deployments
            .get(&olm.deployment)
            .await
            .unwrap()
            .resource_version(),
        deployment_version
    );
    let json_out = adopt(&["--dry-run", "-o", "json"]);
    let plans: Value = serde_json::from_slice(&json_out.stdout).unwrap();
    assert_eq!(
        plans[0]["subscription"]["spec"]["startingCSV"],
        json!(olm.csv)
    );
    assert_eq!(plans[0]["blockers"], json!([]));

    // Scaled by hand past what the CSV says: windlass's apply would scale it back, so adoption
    // is refused and what it wrote is put back.
    run_ok(kubectl().args([
        "-n",
        &ns.name,
        "scale",
        "deployment",
        &olm.deployment,
        "--replicas=2",
    ]));
    let refused = adopt(&[]);
    let said = String::from_utf8_lossy(&refused.stdout).to_string()
        + &String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "Deployment {}/{}: spec.replicas would change from 2 to 1",
            ns.name, olm.deployment
        )),
        "{said}"
    );
    wait_until(
        "the refused adoption's Subscription removed",
        TIMEOUT,
        || async { subscriptions.get_opt(&package).await.unwrap().is_none() },
    )
    .await;
    let crd = run_ok(kubectl().args(["get", "crd", &olm.crd, "-o", "json"]));
    let crd: Value = serde_json::from_str(&crd).unwrap();
    assert!(
        crd["metadata"]["annotations"][annotations::CRD_ADOPT].is_null(),
        "the hand-over is put back: {}",
        crd["metadata"]
    );
    let still_olms = deployments.get(&olm.deployment).await.unwrap();
    assert_eq!(
        still_olms.owner_references()[0].kind,
        "ClusterServiceVersion"
    );
    assert_eq!(
        still_olms.owner_references()[0].api_version,
        "operators.coreos.com/v1alpha1"
    );
    run_ok(kubectl().args([
        "-n",
        &ns.name,
        "scale",
        "deployment",
        &olm.deployment,
        "--replicas=1",
    ]));
    wait_until("back to one available pod", TIMEOUT, || async {
        let d = deployments.get(&olm.deployment).await.unwrap();
        pods(&admin, &ns.name, &olm.deployment).await.len() == 1
            && d.status.and_then(|s| s.available_replicas) == Some(1)
    })
    .await;
    // The pods adoption must keep: whichever one scaling down left.
    let before = pods(&admin, &ns.name, &olm.deployment).await;

    // A Subscription someone else wrote, claiming to be this adoption's, with another
    // package: refused rather than approved unseen, and left for its writer.
    let planted: Subscription = serde_json::from_value(json!({
        "apiVersion": "windlass.dev/v1alpha1", "kind": "Subscription",
        "metadata": {"name": package, "namespace": ns.name,
                     "annotations": {annotations::ADOPTED_FROM: format!("olm:{}/{}", ns.name, olm.csv)}},
        "spec": {"package": "acme-db", "approval": "Manual"},
    }))
    .unwrap();
    subscriptions
        .create(&PostParams::default(), &planted)
        .await
        .unwrap();
    let refused = adopt(&[]);
    let said = String::from_utf8_lossy(&refused.stdout).to_string()
        + &String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{said}");
    assert!(
        said.contains("its spec differs from what adoption writes (spec.package"),
        "{said}"
    );
    subscriptions
        .delete(&package, &Default::default())
        .await
        .unwrap();
    let blueprints = Api::<Blueprint>::namespaced(admin.clone(), &ns.name);
    wait_until(
        "the planted Subscription and its Blueprint gone",
        TIMEOUT,
        || async {
            subscriptions.get_opt(&package).await.unwrap().is_none()
                && blueprints.get_opt(&package).await.unwrap().is_none()
        },
    )
    .await;

    // Adopt.
    let out = adopt(&[]);
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("changes no pod"), "{said}");
    let after = pods(&admin, &ns.name, &olm.deployment).await;
    assert_eq!(
        after, before,
        "the same pods (names and uids) run after adoption"
    );
    let deployment = deployments.get(&olm.deployment).await.unwrap();
    // Its pod template is as OLM left it (a Deployment's generation counts annotation edits
    // too, so it is not the measure).
    assert_eq!(
        serde_json::to_value(&deployment.spec.template).unwrap(),
        template_before,
        "the pod template is unchanged"
    );
    assert_eq!(replica_sets().await, sets_before, "no new ReplicaSet");
    let owners: Vec<String> = deployment
        .owner_references()
        .iter()
        .map(|r| format!("{}/{}", r.api_version, r.kind))
        .collect();
    assert_eq!(
        owners,
        vec!["windlass.dev/v1alpha1/ClusterServiceVersion"],
        "{owners:?}"
    );
    let deployment_labels = deployment.labels();
    assert!(
        !deployment_labels.contains_key("olm.owner"),
        "{deployment_labels:?}"
    );
    assert_eq!(
        deployment_labels.get(labels::CSV).map(String::as_str),
        Some(olm.csv.as_str())
    );
    let sub = subscriptions.get(&package).await.unwrap();
    assert_eq!(
        sub.annotations().get(annotations::ADOPTED_FROM),
        Some(&format!("olm:{}/{}", ns.name, olm.csv))
    );
    // One revision installed what runs; under OLM's Manual approval the channel's 1.0.1 may
    // already wait for approval beside it.
    let blueprint = Api::<Blueprint>::namespaced(admin.clone(), &ns.name)
        .get(&package)
        .await
        .unwrap();
    let status = blueprint.status.unwrap();
    assert_eq!(status.version.as_deref(), Some("1.0.0"));
    let installed: Vec<_> = status
        .history
        .iter()
        .filter(|r| r.outcome == RevisionOutcome::Completed)
        .collect();
    assert_eq!(installed.len(), 1, "{:?}", status.history);
    assert_eq!(installed[0].cluster_service_version_name, olm.csv);
    let csv = Api::<ClusterServiceVersion>::namespaced(admin.clone(), &ns.name)
        .get(&olm.csv)
        .await
        .unwrap();
    assert_eq!(csv.status.and_then(|s| s.phase), Some(CsvPhase::Succeeded));

    // Let OLM go: its Subscription, InstallPlan and CSV are deleted; the garbage collector
    // takes OLM's generated Role with the CSV, and leaves the adopted Deployment alone.
    for (kind, name) in [
        ("Subscription", package.as_str()),
        ("InstallPlan", "install-4x7kq"),
        ("ClusterServiceVersion", olm.csv.as_str()),
    ] {
        Api::<DynamicObject>::namespaced_with(admin.clone(), &ns.name, &olm_v0::olm(kind))
            .delete(name, &Default::default())
            .await
            .unwrap_or_else(|e| panic!("deleting OLM's {kind}: {e}"));
    }
    let roles = Api::<Role>::namespaced(admin.clone(), &ns.name);
    let generated = olm.generated_rbac[0].1.clone();
    wait_until(
        "OLM's generated Role collected with its CSV",
        TIMEOUT,
        || async { roles.get_opt(&generated).await.unwrap().is_none() },
    )
    .await;
    assert_eq!(
        pods(&admin, &ns.name, &olm.deployment).await,
        before,
        "still the same pods"
    );
    assert!(
        deployments
            .get_opt(&olm.deployment)
            .await
            .unwrap()
            .is_some()
    );

    // windlass's from here: the channel's 1.0.1 waits for approval (OLM's Manual kept), then
    // rolls out; and it rolls back.
    upgrade_then_roll_back(&admin, &ns.name, &package).await;
}
