//! `olm.constraint` on the real control plane: a bundle whose `metadata/dependencies.yaml`
//! asks, with a CEL rule and OLM's `semver_compare`, for a version of another package gets
//! that version installed first; one whose rule nothing satisfies is explained with its
//! `failureMessage`.

use std::time::Duration;

use serde_json::{Value, json};
use windlass_api::{ConditionStatus, blueprint::BlueprintPhase, names::conditions};
use windlass_testkit::{
    TestNamespace,
    catalogs::TestCatalog,
    lifecycle::{condition, is_at, subscribe, wait_blueprint, wait_subscription},
    require_manager,
};

use crate::common::isolated::Isolated;

const TIMEOUT: Duration = Duration::from_secs(240);

/// `metadata/dependencies.yaml` with one CEL constraint: some bundle of `package` newer than
/// `above` (semver) must be installed.
fn newer_than(package: &str, above: &str, failure: &str) -> Value {
    json!({"dependencies": [{
        "type": "olm.constraint",
        "value": {
            "failureMessage": failure,
            "cel": {"rule": format!(
                "properties.exists(p, p.type == 'olm.package' && p.value.packageName == '{package}' \
                 && semver_compare(p.value.version, '{above}') > 0)"
            )},
        },
    }]})
}

/// Given a catalog with a database package at 1.0.0 and 1.1.0, and a gateway whose bundle
/// requires (by a CEL rule) a database newer than 1.0.5, when a namespace subscribes to the
/// gateway, then the database 1.1.0 is installed as its dependency and the gateway after it;
/// a second gateway requiring a database newer than 2.0.0 does not resolve, and its
/// Subscription says why in the constraint's own words.
#[tokio::test]
async fn a_cel_constraint_resolves_or_is_explained() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "celdep").await;
    let client = ns.client().clone();
    let db = Isolated::new("celdb");
    let gateway = Isolated::new("celgw");
    let picky = Isolated::new("celpicky");
    let needs = newer_than(
        &db.package,
        "1.0.5",
        "the gateway needs a database newer than 1.0.5",
    );
    let impossible = format!(
        "{} needs a database newer than 2.0.0, which no catalog has",
        picky.package
    );
    let mut images = vec![
        db.publish("acme-db/1.0.0", |_| {}).await,
        // 1.1.0 ships replacing 1.0.1, which this catalog leaves out: without the edge to
        // 1.0.0 the channel would have two heads, and the listing gate would offer neither.
        db.publish("acme-db/1.1.0", |object| {
            if object["kind"] == "ClusterServiceVersion" {
                object["spec"]["replaces"] = json!("acme-db.v1.0.0");
            }
        })
        .await,
    ];
    images.push(
        gateway
            .publish_adding(
                "acme-gateway/0.1.0",
                |_| {},
                &[("metadata/dependencies.yaml", needs)],
            )
            .await,
    );
    images.push(
        picky
            .publish_adding(
                "acme-gateway/0.1.0",
                // A CSV name of its own: one catalog offers each CSV name once.
                |object| {
                    if object["kind"] == "ClusterServiceVersion" {
                        object["metadata"]["name"] = json!("acme-gateway-picky.v0.1.0");
                    }
                },
                &[(
                    "metadata/dependencies.yaml",
                    newer_than(&db.package, "2.0.0", &impossible),
                )],
            )
            .await,
    );
    let catalog = TestCatalog::serving(&client, "celdep", &images).await;

    subscribe(
        &client,
        &ns.name,
        "gateway",
        // acme-gateway watches every namespace (its only install mode).
        json!({"package": gateway.package, "catalog": catalog.name, "targetNamespaces": []}),
    )
    .await;
    wait_blueprint(
        &client,
        &ns.name,
        &db.package,
        "the database 1.1.0 Succeeded",
        TIMEOUT,
        |b| is_at(b, BlueprintPhase::Succeeded, "1.1.0"),
    )
    .await;
    let blueprint = wait_blueprint(
        &client,
        &ns.name,
        "gateway",
        "the gateway Succeeded",
        TIMEOUT,
        |b| is_at(b, BlueprintPhase::Succeeded, "0.1.0"),
    )
    .await;
    let dependencies: Vec<(String, String)> = blueprint
        .spec
        .dependencies
        .iter()
        .map(|d| (d.package.clone(), d.version.clone()))
        .collect();
    assert_eq!(dependencies, [(db.package.clone(), "1.1.0".to_string())]);

    subscribe(
        &client,
        &ns.name,
        "picky",
        json!({"package": picky.package, "catalog": catalog.name, "targetNamespaces": []}),
    )
    .await;
    let refused = wait_subscription(
        &client,
        &ns.name,
        "picky",
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
    let resolution = condition(
        &refused.status.as_ref().unwrap().conditions,
        conditions::subscription::RESOLUTION_SUCCEEDED,
    )
    .unwrap();
    println!("{}: {}", resolution.reason, resolution.message);
    assert!(
        resolution.message.contains(&impossible),
        "quotes the failureMessage: {}",
        resolution.message
    );
}
