//! Uninstalling and failing to resolve, with the manager that `make e2e` runs.

use std::time::Duration;

use k8s_openapi::{
    api::apps::v1::Deployment,
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api,
    api::{DeleteParams, DynamicObject, ListParams, PostParams},
    core::{ApiResource, GroupVersionKind},
};
use serde_json::json;
use windlass_api::names::conditions;
use windlass_api::{
    Blueprint, ClusterServiceVersion, ConditionStatus, Subscription, blueprint::BlueprintPhase,
};
use windlass_testkit::{
    TestNamespace,
    lifecycle::{condition, is_at, subscribe, wait_blueprint, wait_subscription},
    require_manager, wait_until,
};

const TIMEOUT: Duration = Duration::from_secs(180);

/// Given acme-db installed and a Database created by a user, deleting the Subscription removes
/// the operator (Blueprint, CSV, Deployment, revisions) but keeps the CRD and the Database.
#[tokio::test]
async fn uninstall_removes_the_operator_and_keeps_custom_resources() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "uninstall").await;
    let client = ns.client().clone();
    subscribe(
        &client,
        &ns.name,
        "db",
        json!({ "package": "acme-db", "startingCSV": "acme-db.v1.1.0", "targetNamespaces": [ns.name] }),
    )
    .await;
    wait_blueprint(&client, &ns.name, "db", "Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.1.0")
    })
    .await;

    let gvk = GroupVersionKind::gvk("acme.windlass.dev", "v1", "Database");
    let databases = Api::<DynamicObject>::namespaced_with(
        client.clone(),
        &ns.name,
        &ApiResource::from_gvk(&gvk),
    );
    let database: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "acme.windlass.dev/v1",
        "kind": "Database",
        "metadata": { "name": "orders" },
        "spec": { "engine": "postgres", "replicas": 1 },
    }))
    .unwrap();
    databases
        .create(&PostParams::default(), &database)
        .await
        .expect("creating a Database");

    Api::<Subscription>::namespaced(client.clone(), &ns.name)
        .delete("db", &DeleteParams::default())
        .await
        .unwrap();
    let blueprints = Api::<Blueprint>::namespaced(client.clone(), &ns.name);
    let csvs = Api::<ClusterServiceVersion>::namespaced(client.clone(), &ns.name);
    let deployments = Api::<Deployment>::namespaced(client.clone(), &ns.name);
    wait_until("the operator removed", TIMEOUT, || async {
        blueprints.get_opt("db").await.ok().flatten().is_none()
            && csvs
                .list(&ListParams::default())
                .await
                .map(|l| l.items.is_empty())
                .unwrap_or(false)
            && deployments
                .get_opt("acme-db-operator")
                .await
                .ok()
                .flatten()
                .is_none()
    })
    .await;
    let secrets = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), &ns.name);
    wait_until("revision Secrets removed", TIMEOUT, || async {
        secrets
            .list(&ListParams::default().labels("windlass.dev/blueprint=db"))
            .await
            .map(|l| l.items.is_empty())
            .unwrap_or(false)
    })
    .await;
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    assert!(
        crds.get_opt("databases.acme.windlass.dev")
            .await
            .unwrap()
            .is_some(),
        "the CRD stays"
    );
    assert!(
        databases.get_opt("orders").await.unwrap().is_some(),
        "the user's Database stays"
    );
}

/// A Subscription that cannot be resolved says why, in words: what was asked, what the catalog
/// offers, and what conflicts. Nothing is installed.
#[tokio::test]
async fn an_unresolvable_subscription_explains_why() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "unresolvable").await;
    let client = ns.client().clone();
    subscribe(
        &client,
        &ns.name,
        "db",
        json!({ "package": "acme-db", "versionRange": ">=2.0.0", "targetNamespaces": [ns.name] }),
    )
    .await;
    let sub = wait_subscription(
        &client,
        &ns.name,
        "db",
        "ResolutionSucceeded=False",
        TIMEOUT,
        |s| {
            s.status
                .as_ref()
                .and_then(|st| {
                    condition(
                        &st.conditions,
                        conditions::subscription::RESOLUTION_SUCCEEDED,
                    )
                })
                .is_some_and(|c| c.status == ConditionStatus::False)
        },
    )
    .await;
    let why = condition(
        &sub.status.as_ref().unwrap().conditions,
        conditions::subscription::RESOLUTION_SUCCEEDED,
    )
    .unwrap();
    println!("explanation: {}", why.message);
    assert!(why.message.contains("acme-db"), "{}", why.message);
    assert!(
        why.message.contains(">=2.0.0") || why.message.contains("2.0.0"),
        "names the range: {}",
        why.message
    );
    assert!(
        why.message.contains("1.1.0"),
        "names what the catalog offers: {}",
        why.message
    );
    let blueprints = Api::<Blueprint>::namespaced(client.clone(), &ns.name);
    assert!(
        blueprints.get_opt("db").await.unwrap().is_none(),
        "nothing planned"
    );

    subscribe(
        &client,
        &ns.name,
        "nothing",
        json!({ "package": "no-such-operator" }),
    )
    .await;
    let sub = wait_subscription(
        &client,
        &ns.name,
        "nothing",
        "ResolutionSucceeded=False",
        TIMEOUT,
        |s| {
            s.status
                .as_ref()
                .and_then(|st| {
                    condition(
                        &st.conditions,
                        conditions::subscription::RESOLUTION_SUCCEEDED,
                    )
                })
                .is_some_and(|c| c.status == ConditionStatus::False)
        },
    )
    .await;
    let why = condition(
        &sub.status.as_ref().unwrap().conditions,
        conditions::subscription::RESOLUTION_SUCCEEDED,
    )
    .unwrap();
    assert!(why.message.contains("no-such-operator"), "{}", why.message);
}
