//! `PromQL` risks of conditional updates, evaluated against a real Prometheus (Debian's
//! `prometheus`, started by the test on a free port, serving HTTPS with a certificate of a CA
//! the test made, scraping itself every second): a risk whose query matches keeps its update
//! from being recommended until it is accepted, one that does not match leaves its update
//! recommended, and while Prometheus is down (the process killed) every such risk is Unknown
//! and its update refused, saying why; the graph poll brings the recommendation back.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::{
    Api, Client,
    api::{DeleteParams, Patch, PatchParams},
};
use serde_json::json;
use windlass_api::{
    ClusterVersion, ConditionStatus,
    clusterversion::{CLUSTER_VERSION_NAME, UpdateState},
    condition::find,
    names::{
        conditions::cluster_version as types,
        reasons::{cluster_version as reasons, conditional_update as why},
    },
};
use windlass_testkit::{
    lifecycle::wait_object,
    prometheus::{Prometheus, TestCa},
    require_manager, run_ok,
};

use crate::cluster_version_graph::static_graph;
use crate::cluster_versions::{
    ONE_AT_A_TIME, TIMEOUT, TrustSetup, push_releases, reach, release_account, set_spec,
    start_afresh, upgrade,
};
use crate::release_payloads::windlass;
use crate::signatures::Keys;

/// Matches once Prometheus has scraped itself: `up` of its own job is 1.
const MATCHING: &str = r#"max(up{job="prometheus"})"#;
/// Never matches: no job of that name is scraped, so the query answers `vector(0)`.
const NOT_MATCHING: &str = r#"max(up{job="legacy-ingress"}) or vector(0)"#;
const MATCHING_RISK: &str = "MonitoringRestartsDuringUpdate";
const NOT_MATCHING_RISK: &str = "LegacyIngressDropsConnections";

const CA_CONFIG_MAP: &str = "e2e-prometheus-ca";
const TOKEN_SECRET: &str = "e2e-prometheus-reader";

/// A condition as the test compares it: status, reason, message.
type Judgement = (ConditionStatus, String, String);

/// The `Recommended` condition of the conditional update to `release`, and the `Applies`
/// condition of its one risk.
fn judged(version: &ClusterVersion, release: &str) -> Option<(Judgement, Judgement)> {
    let update = version
        .status
        .as_ref()?
        .conditional_updates
        .iter()
        .find(|u| u.release.version == release)?;
    let triple = |c: &windlass_api::Condition| (c.status, c.reason.clone(), c.message.clone());
    let recommended = update
        .conditions
        .iter()
        .find(|c| c.type_ == types::RECOMMENDED)?;
    let applies = update
        .risks
        .first()?
        .conditions
        .iter()
        .find(|c| c.type_ == types::APPLIES)?;
    Some((triple(recommended), triple(applies)))
}

fn is_judged(
    version: &ClusterVersion,
    release: &str,
    recommended: (ConditionStatus, &str),
    applies: (ConditionStatus, &str),
) -> bool {
    judged(version, release)
        .is_some_and(|(r, a)| (r.0, r.1.as_str()) == recommended && (a.0, a.1.as_str()) == applies)
}

/// The ClusterVersion once the update to `release` is refused for its risks, and the message.
async fn refused_for_risks(
    versions: &Api<ClusterVersion>,
    release: &str,
) -> (ClusterVersion, String) {
    let marker = format!("the update to {release} is not recommended");
    let refused = wait_object(
        versions,
        CLUSTER_VERSION_NAME,
        &format!("{release} refused for its risks"),
        TIMEOUT,
        |v| {
            v.status
                .as_ref()
                .and_then(|s| find(&s.conditions, types::RELEASE_ACCEPTED))
                .is_some_and(|c| {
                    c.status == ConditionStatus::False
                        && c.reason == reasons::CONDITIONAL_UPDATE_RISKS
                        && c.message.contains(&marker)
                })
        },
    )
    .await;
    let message = refused
        .status
        .as_ref()
        .and_then(|s| find(&s.conditions, types::RELEASE_ACCEPTED))
        .map(|c| c.message.clone())
        .unwrap_or_default();
    (refused, message)
}

fn upgrade_to_version(version: &str, accept: Option<&str>) {
    let mut command = windlass();
    command.args(["upgrade", "--to", version, "--plain-http", "--kubeconfig"]);
    command.arg(windlass_testkit::kubeconfig_path());
    if let Some(risk) = accept {
        command.args(["--accept-risks", risk]);
    }
    run_ok(&mut command);
}

async fn apply_in(admin: &Client, namespace: &str, object: serde_json::Value) {
    let name = object["metadata"]["name"].as_str().unwrap().to_string();
    let params = PatchParams::apply("windlass-e2e").force();
    match object["kind"].as_str() {
        Some("ConfigMap") => {
            Api::<ConfigMap>::namespaced(admin.clone(), namespace)
                .patch(&name, &params, &Patch::Apply(&object))
                .await
                .expect("the ConfigMap");
        }
        _ => {
            Api::<Secret>::namespaced(admin.clone(), namespace)
                .patch(&name, &params, &Patch::Apply(&object))
                .await
                .expect("the Secret");
        }
    }
}

async fn remove_endpoint_objects(admin: &Client, namespace: &str) {
    let _ = Api::<ConfigMap>::namespaced(admin.clone(), namespace)
        .delete(CA_CONFIG_MAP, &DeleteParams::default())
        .await;
    let _ = Api::<Secret>::namespaced(admin.clone(), namespace)
        .delete(TOKEN_SECRET, &DeleteParams::default())
        .await;
}

/// Given 4.1.0 applied, an update service whose edge to 4.1.1 carries a PromQL risk that does
/// not match and whose edges to 4.2.0 carry one that does, and `spec.prometheus` naming a real
/// Prometheus over HTTPS with its CA in a ConfigMap and a bearer token Secret that does not
/// exist yet: then both risks are Unknown naming the missing Secret; once it exists, 4.1.1 is
/// recommended and 4.2.0 is not (reason: its risk's name) and is refused; with Prometheus
/// killed, both risks are Unknown with the connection failure and 4.1.1 is refused too, and
/// nothing is applied; with Prometheus back, the next poll recommends 4.1.1 again and the
/// waiting request goes ahead (history records no accepted risk); 4.2.0 then needs its risk
/// accepted, which history records.
#[tokio::test]
async fn promql_risks_are_evaluated_against_prometheus_and_an_outage_makes_them_unknown() {
    require_manager();
    let _turn = ONE_AT_A_TIME.lock().await;
    let admin = windlass_testkit::client().await;
    release_account(&admin).await;
    let namespace = windlass_testkit::manager::namespace().unwrap();
    let repository = windlass_testkit::registry().unique_repository("risks");
    let (tags, digests) = push_releases(
        &repository,
        &[("4.1.0", "4.1.0"), ("4.1.1", "4.1.1"), ("4.2.0", "4.2.0")],
    );
    let keys = Keys::generate(&["release"]);
    let trust = TrustSetup::create(&admin, &namespace, &keys, "Report").await;

    let ca = TestCa::generate();
    let mut prometheus = Prometheus::start_tls(&ca);
    prometheus.wait_for_sample(MATCHING);
    apply_in(
        &admin,
        &namespace,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CA_CONFIG_MAP},
               "data": {"ca.crt": ca.ca_pem}}),
    )
    .await;
    let _ = Api::<Secret>::namespaced(admin.clone(), &namespace)
        .delete(TOKEN_SECRET, &DeleteParams::default())
        .await;

    let risk = |name: &str, query: &str| {
        json!({"name": name, "message": format!("{name} (test risk)"),
               "url": format!("https://windlass.invalid/{name}"),
               "matchingRules": [{"type": "PromQL", "promql": {"promql": query}}]})
    };
    let upstream = static_graph(json!({
        "nodes": [
            {"version": "4.1.0", "payload": digests["4.1.0"], "metadata": {}},
            {"version": "4.1.1", "payload": digests["4.1.1"], "metadata": {}},
            {"version": "4.2.0", "payload": digests["4.2.0"], "metadata": {}},
        ],
        "edges": [],
        "conditionalEdges": [
            {"edges": [{"from": "4.1.0", "to": "4.1.1"}],
             "risks": [risk(NOT_MATCHING_RISK, NOT_MATCHING)]},
            {"edges": [{"from": "4.1.0", "to": "4.2.0"}, {"from": "4.1.1", "to": "4.2.0"}],
             "risks": [risk(MATCHING_RISK, MATCHING)]},
        ],
    }))
    .await;

    let versions = Api::<ClusterVersion>::all(admin.clone());
    start_afresh(&versions).await;
    set_spec(
        &versions,
        json!({
            "upstream": upstream, "channel": "stable-4.2", "updateCheckIntervalSeconds": 10,
            "prometheus": {
                "url": prometheus.url(),
                "caConfigMap": {"name": CA_CONFIG_MAP},
                "bearerTokenSecret": {"name": TOKEN_SECRET},
            },
        }),
    )
    .await;
    upgrade(&tags["4.1.0"], false);
    reach(&versions, "4.1.0").await;

    // The token Secret the endpoint names is missing: nothing can be evaluated, and it says so.
    let missing = wait_object(
        &versions,
        CLUSTER_VERSION_NAME,
        "both risks Unknown for want of the token Secret",
        TIMEOUT,
        |v| {
            ["4.1.1", "4.2.0"].iter().all(|release| {
                is_judged(
                    v,
                    release,
                    (ConditionStatus::Unknown, why::EVALUATION_FAILED),
                    (ConditionStatus::Unknown, why::EVALUATION_FAILED),
                )
            })
        },
    )
    .await;
    let (recommended, _) = judged(&missing, "4.1.1").unwrap();
    assert!(
        recommended.2.contains(&format!(
            "spec.prometheus.bearerTokenSecret: Secret {namespace}/{TOKEN_SECRET} key token: no such Secret"
        )),
        "{}",
        recommended.2
    );

    apply_in(
        &admin,
        &namespace,
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": TOKEN_SECRET},
               "stringData": {"token": "windlass-e2e-reader"}}),
    )
    .await;
    let evaluated = wait_object(
        &versions,
        CLUSTER_VERSION_NAME,
        "4.1.1 recommended and 4.2.0 not, by Prometheus's answers",
        TIMEOUT,
        |v| {
            is_judged(
                v,
                "4.1.1",
                (ConditionStatus::True, why::NOT_EXPOSED_TO_RISKS),
                (ConditionStatus::False, why::NOT_MATCH),
            ) && is_judged(
                v,
                "4.2.0",
                (ConditionStatus::False, MATCHING_RISK),
                (ConditionStatus::True, why::MATCH),
            )
        },
    )
    .await;
    let status = evaluated.status.as_ref().unwrap();
    let update = status
        .conditional_updates
        .iter()
        .find(|u| u.release.version == "4.2.0")
        .unwrap();
    assert_eq!(
        update.risks[0].matching_rules[0]
            .promql
            .as_ref()
            .map(|p| p.promql.as_str()),
        Some(MATCHING),
        "status shows the query the risk is matched with"
    );

    upgrade_to_version("4.2.0", None);
    let (_, message) = refused_for_risks(&versions, "4.2.0").await;
    assert!(
        message.contains(MATCHING_RISK) && message.contains("acceptRisks"),
        "{message}"
    );

    // An outage: the process killed. The next poll cannot evaluate either risk.
    prometheus.stop();
    let outage = wait_object(
        &versions,
        CLUSTER_VERSION_NAME,
        "both risks Unknown while Prometheus is down",
        TIMEOUT,
        |v| {
            ["4.1.1", "4.2.0"].iter().all(|release| {
                is_judged(
                    v,
                    release,
                    (ConditionStatus::Unknown, why::EVALUATION_FAILED),
                    (ConditionStatus::Unknown, why::EVALUATION_FAILED),
                )
            })
        },
    )
    .await;
    let ((_, _, recommended), (_, _, applies)) = judged(&outage, "4.1.1").unwrap();
    for message in [&recommended, &applies] {
        assert!(
            message.contains(&prometheus.url()) && message.contains("Connection refused"),
            "the reason names the endpoint and the failure: {message}"
        );
    }
    upgrade_to_version("4.1.1", None);
    let (refused, message) = refused_for_risks(&versions, "4.1.1").await;
    assert!(
        message.contains(why::EVALUATION_FAILED)
            && message.contains("Connection refused")
            && message.contains(NOT_MATCHING_RISK),
        "{message}"
    );
    let status = refused.status.as_ref().unwrap();
    assert_eq!(status.desired.as_ref().unwrap().version, "4.1.0");
    assert_eq!(
        (status.history[0].version.as_str(), status.history[0].state),
        ("4.1.0", UpdateState::Completed),
        "nothing of 4.1.1 was started"
    );

    // Prometheus back: the next poll recommends 4.1.1 again and the waiting request proceeds.
    prometheus.start_again();
    let at_411 = reach(&versions, "4.1.1").await;
    let entry = &at_411.status.as_ref().unwrap().history[0];
    assert!(
        !entry
            .accepted_risks
            .contains("Conditional update risks accepted"),
        "a risk that does not apply is not recorded as accepted: {}",
        entry.accepted_risks
    );

    wait_object(
        &versions,
        CLUSTER_VERSION_NAME,
        "4.2.0 not recommended from 4.1.1",
        TIMEOUT,
        |v| {
            is_judged(
                v,
                "4.2.0",
                (ConditionStatus::False, MATCHING_RISK),
                (ConditionStatus::True, why::MATCH),
            )
        },
    )
    .await;
    upgrade_to_version("4.2.0", Some(MATCHING_RISK));
    let at_420 = reach(&versions, "4.2.0").await;
    let entry = &at_420.status.as_ref().unwrap().history[0];
    assert!(
        entry.accepted_risks.contains(&format!(
            "Conditional update risks accepted: {MATCHING_RISK}"
        )),
        "{}",
        entry.accepted_risks
    );

    versions
        .delete(CLUSTER_VERSION_NAME, &DeleteParams::default())
        .await
        .expect("deleting the ClusterVersion");
    remove_endpoint_objects(&admin, &namespace).await;
    trust.delete().await;
}
