//! What the Blueprint controller shows and keeps, with the manager that `make e2e` runs: every
//! plan step reported as an Event and in the status, a deleted CSV put back, and CRDs removed
//! on uninstall only when the Subscription asks for it.

use std::time::Duration;

use k8s_openapi::{
    api::core::v1::Event,
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, ListParams},
};
use serde_json::{Value, json};
use windlass_api::names::{conditions, steps};
use windlass_api::{
    ClusterServiceVersion, ConditionStatus, CsvPhase, Subscription, blueprint::BlueprintPhase,
};
use windlass_testkit::{
    TestNamespace,
    catalogs::{TestCatalog, publish},
    lifecycle::{condition, is_at, subscribe, wait_blueprint},
    require_manager, unique_name, wait_until,
};

const TIMEOUT: Duration = Duration::from_secs(180);

/// Given a fresh install of acme-db, the Blueprint's plan ends with every step Done, its Ready
/// condition is True, and `kubectl describe` shows the revision starting, each step and the
/// revision completing as Events.
#[tokio::test]
async fn an_install_reports_every_step_in_the_status_and_as_events() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "bpsteps").await;
    let client = ns.client().clone();
    subscribe(
        &client,
        &ns.name,
        "db",
        json!({ "package": "acme-db", "startingCSV": "acme-db.v1.1.0", "targetNamespaces": [ns.name] }),
    )
    .await;
    let blueprint = wait_blueprint(
        &client,
        &ns.name,
        "db",
        "Succeeded, settled",
        TIMEOUT,
        |b| {
            is_at(b, BlueprintPhase::Succeeded, "1.1.0")
                && b.status.as_ref().and_then(|s| s.observed_generation) == b.metadata.generation
        },
    )
    .await;
    let status = blueprint.status.as_ref().unwrap();
    let steps: Vec<(&str, &str)> = status
        .plan
        .iter()
        .map(|s| (s.name.as_str(), s.status.as_str()))
        .collect();
    assert_eq!(
        steps,
        [
            (steps::DEPENDENCIES, "Done"),
            (steps::CRDS, "Done"),
            (steps::OBJECTS, "Done"),
            (steps::CLUSTER_SERVICE_VERSION, "Done")
        ]
    );
    let ready =
        condition(&status.conditions, conditions::blueprint::READY).expect("a Ready condition");
    assert_eq!(ready.status, ConditionStatus::True, "{}", ready.message);
    assert_eq!(ready.observed_generation, blueprint.metadata.generation);

    let events = Api::<Event>::namespaced(client.clone(), &ns.name);
    wait_until("the Blueprint's Events", TIMEOUT, || async {
        let reasons: Vec<String> = events
            .list(&ListParams::default())
            .await
            .map(|l| {
                l.items
                    .into_iter()
                    .filter(|e| e.involved_object.kind.as_deref() == Some("Blueprint"))
                    .filter_map(|e| e.reason)
                    .collect()
            })
            .unwrap_or_default();
        // The phases reached as the revision starts and completes are told in those Events.
        ["RevisionStarted", "Installing", "RevisionCompleted"]
            .iter()
            .all(|r| reasons.iter().any(|got| got == r))
    })
    .await;
}

/// Given acme-db installed, when someone deletes its ClusterServiceVersion, the Blueprint
/// applies it again from the stored revision and comes back to Ready, with no new revision.
#[tokio::test]
async fn a_deleted_csv_is_put_back_from_the_stored_revision() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "bpdrift").await;
    let client = ns.client().clone();
    subscribe(
        &client,
        &ns.name,
        "db",
        json!({ "package": "acme-db", "startingCSV": "acme-db.v1.1.0", "targetNamespaces": [ns.name] }),
    )
    .await;
    let before = wait_blueprint(&client, &ns.name, "db", "Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.1.0")
    })
    .await;
    let csvs = Api::<ClusterServiceVersion>::namespaced(client.clone(), &ns.name);
    let original = csvs.get("acme-db.v1.1.0").await.unwrap();
    csvs.delete("acme-db.v1.1.0", &DeleteParams::default())
        .await
        .unwrap();
    wait_until("the CSV applied again and Succeeded", TIMEOUT, || async {
        csvs.get_opt("acme-db.v1.1.0")
            .await
            .ok()
            .flatten()
            .is_some_and(|c| {
                c.uid() != original.uid()
                    && c.status.and_then(|s| s.phase) == Some(CsvPhase::Succeeded)
            })
    })
    .await;
    let after = wait_blueprint(&client, &ns.name, "db", "Ready again", TIMEOUT, |b| {
        b.status
            .as_ref()
            .and_then(|s| condition(&s.conditions, conditions::blueprint::READY))
            .is_some_and(|c| c.status == ConditionStatus::True)
    })
    .await;
    assert_eq!(after.spec.revision, before.spec.revision, "no new revision");
}

/// Gives the sample acme-db CRD a group of its own, so deleting it touches no other test.
pub(crate) fn own_crd_group(group: &str) -> impl Fn(&mut Value) + '_ {
    move |object: &mut Value| {
        let crd_name = format!("databases.{group}");
        if object["kind"] == "CustomResourceDefinition" {
            object["metadata"]["name"] = json!(crd_name);
            object["spec"]["group"] = json!(group);
        }
        if object["kind"] == "ClusterServiceVersion" {
            for owned in object["spec"]["customresourcedefinitions"]["owned"]
                .as_array_mut()
                .into_iter()
                .flatten()
            {
                owned["name"] = json!(crd_name);
            }
            if let Some(annotations) = object["metadata"]["annotations"].as_object_mut() {
                annotations.remove("alm-examples");
            }
        }
    }
}

/// Given an operator installed with `crdDeletionPolicy: Delete`, deleting its Subscription
/// removes the operator and its CRD; the default (Keep) is covered by the uninstall scenario.
#[tokio::test]
async fn crd_deletion_policy_delete_removes_the_crd_on_uninstall() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "bpcrddelete").await;
    let client = ns.client().clone();
    let package = unique_name("acme-db-crddelete");
    let group = format!("{package}.windlass.dev");
    let image = publish(&package, "acme-db/1.0.0", own_crd_group(&group)).await;
    let test_catalog =
        TestCatalog::serving(&client, "crddelete", std::slice::from_ref(&image)).await;
    let catalog = test_catalog.name.clone();
    subscribe(
        &client,
        &ns.name,
        "db",
        json!({
            "package": package, "catalog": catalog, "targetNamespaces": [ns.name],
            "crdDeletionPolicy": "Delete",
        }),
    )
    .await;
    wait_blueprint(&client, &ns.name, "db", "Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.0")
    })
    .await;
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    let crd_name = format!("databases.{group}");
    let crd = crds
        .get(&crd_name)
        .await
        .expect("the Blueprint applied the CRD");
    // Shared by every namespace: it names the bundle that wrote it, not one Blueprint.
    assert_eq!(
        crd.labels()
            .get("windlass.dev/blueprint")
            .map(String::as_str),
        None
    );
    assert_eq!(
        crd.annotations()
            .get("windlass.dev/bundle-package")
            .map(String::as_str),
        Some(package.as_str())
    );

    Api::<Subscription>::namespaced(client.clone(), &ns.name)
        .delete("db", &DeleteParams::default())
        .await
        .unwrap();
    wait_until("the CRD removed with the operator", TIMEOUT, || async {
        crds.get_opt(&crd_name).await.ok().flatten().is_none()
    })
    .await;
}

/// Text that compresses about as badly as the bundles the test needs: hex of chained SHA-256.
fn incompressible_text(bytes: usize) -> String {
    use sha2::{Digest, Sha256};
    let mut text = String::with_capacity(bytes + 64);
    let mut block = Sha256::digest(b"windlass");
    while text.len() < bytes {
        for byte in block.iter() {
            text.push_str(&format!("{byte:02x}"));
        }
        block = Sha256::digest(block);
    }
    text
}

/// Given a bundle whose content, compressed, is larger than a Secret can hold, when it is
/// subscribed to, then its Blueprint fails with a reason that names the revision Secret and
/// the sizes, instead of retrying quietly; nothing of it is applied.
#[tokio::test]
async fn a_bundle_too_large_to_keep_as_a_revision_fails_saying_so() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "toolarge").await;
    let client = ns.client().clone();
    let package = unique_name("acme-db-huge");
    let group = format!("{package}.windlass.dev");
    let rename = own_crd_group(&group);
    // About 2.4 MB of hex compresses to well over the 1 MiB a Secret holds.
    let filler = incompressible_text(2_400_000);
    let image = publish(&package, "acme-db/1.0.0", |object| {
        rename(object);
        if object["kind"] == "ClusterServiceVersion" {
            object["spec"]["description"] = json!(filler);
        }
    })
    .await;
    let test_catalog =
        TestCatalog::serving(&client, "toolarge", std::slice::from_ref(&image)).await;
    subscribe(
        &client,
        &ns.name,
        "db",
        json!({"package": package, "catalog": test_catalog.name, "targetNamespaces": [ns.name]}),
    )
    .await;
    let blueprint = wait_blueprint(&client, &ns.name, "db", "Failed", TIMEOUT, |b| {
        windlass_testkit::lifecycle::phase(b) == Some(BlueprintPhase::Failed)
    })
    .await;
    let reason = &blueprint.status.as_ref().expect("a status").history[0].reason;
    assert!(
        reason.contains("cannot be kept as a revision")
            && reason.contains("db.r1")
            && reason.contains("more than the"),
        "the failure says why: {reason}"
    );
    let csvs = Api::<ClusterServiceVersion>::namespaced(client.clone(), &ns.name)
        .list(&ListParams::default())
        .await
        .expect("listing CSVs");
    assert!(csvs.items.is_empty(), "nothing of it is applied");
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    assert!(
        crds.get_opt(&format!("databases.{group}"))
            .await
            .expect("reading the CRD")
            .is_none(),
        "not even its CRD"
    );
}
