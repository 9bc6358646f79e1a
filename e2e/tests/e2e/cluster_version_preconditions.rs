//! Preconditions of a platform update: a component reporting `Upgradeable=False` (an OpenShift
//! ClusterOperator) blocks a minor update but not a patch, until its risk is accepted by name,
//! which history records.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api,
    api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams},
};
use serde_json::json;
use windlass_api::{
    ClusterVersion,
    clusterversion::CLUSTER_VERSION_NAME,
    condition::find,
    names::{conditions::cluster_version as types, reasons::cluster_version as reasons},
};
use windlass_testkit::{lifecycle::wait_object, require_manager};

use crate::cluster_versions::{
    ONE_AT_A_TIME, TIMEOUT, TrustSetup, condition_is, push_releases, reach, release_account,
    start_afresh, upgrade,
};
use crate::release_payloads::windlass;
use crate::signatures::Keys;

/// The ClusterOperator API as OpenShift serves it, reduced to what the test writes.
async fn cluster_operator_api(admin: &kube::Client) -> Api<DynamicObject> {
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": "clusteroperators.config.openshift.io"},
        "spec": {
            "group": "config.openshift.io",
            "scope": "Cluster",
            "names": {"plural": "clusteroperators", "singular": "clusteroperator",
                      "kind": "ClusterOperator", "listKind": "ClusterOperatorList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}],
        },
    }))
    .unwrap();
    let crds = Api::<CustomResourceDefinition>::all(admin.clone());
    crds.patch(
        "clusteroperators.config.openshift.io",
        &PatchParams::apply("windlass-e2e").force(),
        &Patch::Apply(&crd),
    )
    .await
    .expect("the ClusterOperator CRD");
    wait_object(
        &crds,
        "clusteroperators.config.openshift.io",
        "Established",
        TIMEOUT,
        |c| {
            c.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                })
        },
    )
    .await;
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("config.openshift.io", "v1", "ClusterOperator"),
        "clusteroperators",
    );
    Api::all_with(admin.clone(), &resource)
}

/// Given 4.1.0 applied and a ClusterOperator `dns` reporting `Upgradeable=False`, when the
/// cluster asks for the patch 4.1.1 it is applied (with `Upgradeable=False` shown); the minor
/// 4.2.0 is refused naming `ClusterOperatorUpgradeable-dns` and nothing changes; with that risk
/// accepted it is applied, and history records what was accepted.
#[tokio::test]
async fn a_component_that_is_not_upgradeable_blocks_a_minor_update_until_accepted() {
    require_manager();
    let _turn = ONE_AT_A_TIME.lock().await;
    let admin = windlass_testkit::client().await;
    release_account(&admin).await;
    let namespace = windlass_testkit::manager::namespace().unwrap();
    let repository = windlass_testkit::registry().unique_repository("preconditions");
    let (tags, _) = push_releases(
        &repository,
        &[("4.1.0", "4.1.0"), ("4.1.1", "4.1.1"), ("4.2.0", "4.2.0")],
    );
    // Unsigned payloads are reported, not refused: nothing here is forced, so preconditions
    // are judged as they stand.
    let keys = Keys::generate(&["release"]);
    let trust = TrustSetup::create(&admin, &namespace, &keys, "Report").await;
    let operators = cluster_operator_api(&admin).await;
    let operator = json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
        "metadata": {"name": "dns"},
        "status": {"conditions": [{"type": "Upgradeable", "status": "False",
            "reason": "MigrationPending", "message": "DNS records are being migrated",
            "lastTransitionTime": "2026-12-01T00:00:00Z"}]}});
    operators
        .patch(
            "dns",
            &PatchParams::apply("windlass-e2e").force(),
            &Patch::Apply(&operator),
        )
        .await
        .expect("the ClusterOperator");
    operators
        .patch_status(
            "dns",
            &PatchParams::apply("windlass-e2e").force(),
            &Patch::Apply(&operator),
        )
        .await
        .expect("its status");

    let versions = Api::<ClusterVersion>::all(admin.clone());
    start_afresh(&versions).await;
    upgrade(&tags["4.1.0"], false);
    reach(&versions, "4.1.0").await;

    // A patch is not blocked; the condition says what would block a minor update.
    upgrade(&tags["4.1.1"], false);
    let patched = reach(&versions, "4.1.1").await;
    assert!(condition_is(
        &patched,
        types::UPGRADEABLE,
        "False",
        reasons::NOT_UPGRADEABLE
    ));
    assert!(
        patched.status.as_ref().unwrap().history[0]
            .accepted_risks
            .is_empty()
    );

    // The minor update is refused, naming the risk to accept; the cluster stays at 4.1.1.
    upgrade(&tags["4.2.0"], false);
    let blocked = wait_object(
        &versions,
        CLUSTER_VERSION_NAME,
        "4.2.0 blocked",
        TIMEOUT,
        |v| {
            condition_is(
                v,
                types::RELEASE_ACCEPTED,
                "False",
                reasons::PRECONDITIONS_FAILED,
            )
        },
    )
    .await;
    let status = blocked.status.as_ref().unwrap();
    let message = &find(&status.conditions, types::RELEASE_ACCEPTED)
        .unwrap()
        .message;
    assert!(
        message.contains("ClusterOperatorUpgradeable-dns")
            && message.contains("DNS records are being migrated"),
        "{message}"
    );
    assert_eq!(status.desired.as_ref().unwrap().version, "4.1.1");

    // Accepted by name: applied, and recorded.
    let kubeconfig = windlass_testkit::kubeconfig_path();
    windlass_testkit::run_ok(
        windlass()
            .args(["upgrade", "--to-image", &tags["4.2.0"], "--plain-http"])
            .args([
                "--accept-risks",
                "ClusterOperatorUpgradeable-dns",
                "--kubeconfig",
            ])
            .arg(&kubeconfig),
    );
    let accepted = reach(&versions, "4.2.0").await;
    let entry = &accepted.status.as_ref().unwrap().history[0];
    assert!(
        entry
            .accepted_risks
            .contains("Accepted risks: ClusterOperatorUpgradeable-dns"),
        "{}",
        entry.accepted_risks
    );
    assert!(!entry.verified, "unsigned, reported by the policy");

    versions
        .delete(CLUSTER_VERSION_NAME, &DeleteParams::default())
        .await
        .expect("deleting the ClusterVersion");
    trust.delete().await;
    let _ = Api::<CustomResourceDefinition>::all(admin)
        .delete(
            "clusteroperators.config.openshift.io",
            &DeleteParams::default(),
        )
        .await;
}
