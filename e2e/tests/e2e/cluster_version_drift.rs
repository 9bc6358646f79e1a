//! Once a release is applied, windlass keeps the cluster matching it: an object of the payload
//! changed or deleted by hand is put back within moments (a watch on the payload's objects
//! wakes the reconcile, long before the five-minute resync), an object `spec.overrides` leaves
//! unmanaged keeps its edit, and a settled cluster gets no writes even while it is reconciled.

use std::time::{Duration, Instant};

use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{ConfigMap, Service},
};
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, Patch, PatchParams},
};
use serde_json::json;
use windlass_api::{ClusterVersion, clusterversion::CLUSTER_VERSION_NAME, names::labels};
use windlass_testkit::{
    lifecycle::wait_object, manager::reconciles, require_manager, unique_name, wait_until,
};

use crate::cluster_versions::{
    ONE_AT_A_TIME, TIMEOUT, push_releases, reach, release_account, remove_trust, set_spec,
    start_afresh, upgrade,
};

/// How long putting drift back may take here: well under the controller's resync (300 s), so
/// only the watch can have done it.
const PUT_BACK: Duration = Duration::from_secs(60);

/// The manager's writes recorded after `from` audit lines that touch the release: those made
/// as the release ServiceAccount, and the ClusterVersion's own.
fn release_writes_since(from: usize) -> Vec<serde_json::Value> {
    let account = format!(
        "system:serviceaccount:{}:windlass-release",
        windlass_testkit::manager::namespace().unwrap_or_default()
    );
    std::fs::read_to_string(windlass_testkit::manager::audit_log())
        .unwrap_or_default()
        .lines()
        .skip(from)
        .filter(|line| line.contains("\"userAgent\":\"windlass-manager/"))
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|e| e["stage"] == "ResponseComplete")
        .filter(|e| {
            e["impersonatedUser"]["username"] == account.as_str()
                || e["objectRef"]["resource"] == "clusterversions"
        })
        .collect()
}

fn audit_lines() -> usize {
    std::fs::read_to_string(windlass_testkit::manager::audit_log())
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

fn clusterversion_reconciles() -> f64 {
    reconciles("clusterversion").expect("the manager's /metrics answers")
}

/// Waits until the ClusterVersion controller has reconciled more than `before` times.
async fn reconciled_after(before: f64, what: &str) {
    wait_until(what, TIMEOUT, || async move {
        clusterversion_reconciles() > before
    })
    .await;
}

async fn nudge<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + k8s_openapi::serde::de::DeserializeOwned + std::fmt::Debug,
{
    let nudge = json!({"metadata": {"annotations": {"e2e.windlass.dev/nudge": unique_name("n")}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&nudge))
        .await
        .unwrap_or_else(|e| panic!("nudging {name}: {e}"));
}

/// An edit as a person makes it, with a field manager of their own.
async fn by_hand<K>(api: &Api<K>, name: &str, patch: serde_json::Value)
where
    K: kube::Resource + Clone + k8s_openapi::serde::de::DeserializeOwned + std::fmt::Debug,
{
    let params = PatchParams {
        field_manager: Some("e2e-by-hand".into()),
        ..PatchParams::default()
    };
    api.patch(name, &params, &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("editing {name} by hand: {e}"));
}

async fn replicas(deployments: &Api<Deployment>) -> i32 {
    deployments
        .get("dns-operator")
        .await
        .unwrap()
        .spec
        .replicas
        .unwrap_or(1)
}

/// Waits for the release's last writes to land in the audit log (none for 5 s).
async fn settle() {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let from = audit_lines();
        tokio::time::sleep(Duration::from_secs(5)).await;
        let written = release_writes_since(from);
        if written.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the release keeps writing: {written:?}"
        );
    }
}

/// Given 4.1.0 applied, then: every payload object carries the release label; reconciles forced
/// by touching the ClusterVersion and a payload object (counted on /metrics) write nothing;
/// a Deployment scaled by hand, a ConfigMap's data edited by hand and a deleted Service are put
/// back well before the resync; with the Deployment overridden as unmanaged its edit stays
/// through a reconcile, and once the override is removed it is put back.
#[tokio::test]
async fn drift_is_put_back_at_once_and_a_settled_cluster_gets_no_writes() {
    require_manager();
    let _turn = ONE_AT_A_TIME.lock().await;
    let admin = windlass_testkit::client().await;
    release_account(&admin).await;
    let namespace = windlass_testkit::manager::namespace().unwrap();
    let repository = windlass_testkit::registry().unique_repository("drift");
    let (tags, _) = push_releases(&repository, &[("4.1.0", "4.1.0")]);
    let versions = Api::<ClusterVersion>::all(admin.clone());
    start_afresh(&versions).await;
    remove_trust(&admin, &namespace).await;
    upgrade(&tags["4.1.0"], true);
    reach(&versions, "4.1.0").await;

    let deployments = Api::<Deployment>::namespaced(admin.clone(), "platform-dns");
    let config_maps = Api::<ConfigMap>::namespaced(admin.clone(), "platform-updater");
    let services = Api::<Service>::namespaced(admin.clone(), "platform-monitoring");
    let dns = deployments.get("dns-operator").await.unwrap();
    assert_eq!(
        dns.labels()
            .get(labels::RELEASE_MANAGED)
            .map(String::as_str),
        Some(labels::RELEASE_MANAGED_VALUE),
        "payload objects carry the release label: {:?}",
        dns.labels()
    );
    assert_eq!(replicas(&deployments).await, 1);

    settled_cluster_gets_no_writes(&versions, &config_maps).await;

    // A Deployment scaled by hand.
    let started = Instant::now();
    by_hand(
        &deployments,
        "dns-operator",
        json!({"spec": {"replicas": 3}}),
    )
    .await;
    wait_until("the replicas put back", PUT_BACK, || async {
        replicas(&deployments).await == 1
    })
    .await;
    println!("replicas put back in {:?}", started.elapsed());

    // A ConfigMap's data edited by hand.
    let started = Instant::now();
    by_hand(
        &config_maps,
        "release",
        json!({"data": {"version": "edited"}}),
    )
    .await;
    wait_until("the ConfigMap's data put back", PUT_BACK, || async {
        config_maps
            .get("release")
            .await
            .unwrap()
            .data
            .unwrap_or_default()
            .get("version")
            .map(String::as_str)
            == Some("4.1.0")
    })
    .await;
    println!("ConfigMap data put back in {:?}", started.elapsed());

    // A payload object deleted.
    let service = services.list(&Default::default()).await.unwrap().items;
    let service = service.first().expect("the monitoring Service");
    let (name, uid) = (service.name_any(), service.uid());
    let started = Instant::now();
    services
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    wait_until("the Service recreated", PUT_BACK, || async {
        services
            .get_opt(&name)
            .await
            .unwrap()
            .is_some_and(|s| s.uid() != uid)
    })
    .await;
    println!("deleted Service recreated in {:?}", started.elapsed());

    overridden_object_keeps_its_edit(&versions, &deployments).await;

    versions
        .delete(CLUSTER_VERSION_NAME, &DeleteParams::default())
        .await
        .expect("deleting the ClusterVersion");
}

/// Reconciles forced in a window (the ClusterVersion and a payload object touched, each
/// counted on /metrics) make no write as the release account and none to the ClusterVersion.
async fn settled_cluster_gets_no_writes(
    versions: &Api<ClusterVersion>,
    config_maps: &Api<ConfigMap>,
) {
    settle().await;
    let start = audit_lines();
    let before = clusterversion_reconciles();
    nudge(versions, CLUSTER_VERSION_NAME).await;
    reconciled_after(before, "a reconcile after the ClusterVersion was touched").await;
    // An annotation the payload does not set: the watch wakes the reconcile, which finds
    // nothing of the payload changed.
    let before = clusterversion_reconciles();
    nudge(config_maps, "release").await;
    reconciled_after(before, "a reconcile woken by the payload object's change").await;
    // The writes a reconcile makes land within moments of it.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let written = release_writes_since(start);
    assert!(
        written.is_empty(),
        "writes while nothing of the release changed: {written:?}"
    );
}

/// The Deployment left unmanaged by `spec.overrides` keeps its hand edit through a reconcile
/// woken by it; removing the override puts it back.
async fn overridden_object_keeps_its_edit(
    versions: &Api<ClusterVersion>,
    deployments: &Api<Deployment>,
) {
    let override_dns = json!({"group": "apps", "kind": "Deployment", "namespace": "platform-dns",
        "name": "dns-operator", "unmanaged": true});
    set_spec(versions, json!({"overrides": [override_dns]})).await;
    observed(versions).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let start = audit_lines();
    let before = clusterversion_reconciles();
    by_hand(
        deployments,
        "dns-operator",
        json!({"spec": {"replicas": 2}}),
    )
    .await;
    reconciled_after(
        before,
        "a reconcile woken by the unmanaged Deployment's edit",
    )
    .await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(replicas(deployments).await, 2, "the unmanaged edit stays");
    let touched: Vec<serde_json::Value> = release_writes_since(start)
        .into_iter()
        .filter(|e| e["objectRef"]["resource"] == "deployments")
        .collect();
    assert!(touched.is_empty(), "{touched:?}");

    let started = Instant::now();
    set_spec(versions, json!({"overrides": []})).await;
    wait_until(
        "the replicas put back once managed again",
        PUT_BACK,
        || async { replicas(deployments).await == 1 },
    )
    .await;
    println!(
        "replicas put back after the override went in {:?}",
        started.elapsed()
    );
}

/// The ClusterVersion once its controller has seen its current spec.
async fn observed(versions: &Api<ClusterVersion>) {
    wait_object(
        versions,
        CLUSTER_VERSION_NAME,
        "spec observed",
        TIMEOUT,
        |v| {
            v.status
                .as_ref()
                .and_then(|s| s.observed_generation)
                .is_some_and(|g| Some(g) == v.metadata.generation)
        },
    )
    .await;
}
