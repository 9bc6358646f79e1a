//! Update graphs: the ClusterVersion asks an update service (`windlass release graph serve`
//! over the sample releases in the local registry, or a graph with a risky edge) where the
//! cluster may go, lists it in status, and resolves `desiredUpdate.version` through it; a
//! conditional update goes ahead only with its risk accepted, which history records.

use kube::{Api, api::DeleteParams};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use windlass_api::{
    ClusterVersion, ConditionStatus,
    clusterversion::CLUSTER_VERSION_NAME,
    names::{conditions::cluster_version as types, reasons::cluster_version as reasons},
};
use windlass_testkit::{lifecycle::wait_object, require_manager, run_ok};

use crate::cluster_versions::{
    ONE_AT_A_TIME, TIMEOUT, TrustSetup, completed_at, condition_is, push_releases, reach,
    refused_with, release_account, set_spec, start_afresh, upgrade,
};
use crate::release_payloads::{serve_graph, windlass};
use crate::signatures::Keys;

/// Serves `graph` as the answer to every request, on a free port; returns its URL.
pub(crate) async fn static_graph(graph: serde_json::Value) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let body = graph.to_string();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request).await;
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    format!("http://{address}/graph")
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

async fn point_at(versions: &Api<ClusterVersion>, upstream: &str) {
    set_spec(
        versions,
        json!({"upstream": upstream, "channel": "stable-4.2"}),
    )
    .await;
}

/// Given 4.1.0 applied and the update service windlass serves from the registry, then status
/// lists 4.1.1 and 4.2.0 as available, `--to 4.1.1` resolves through the graph and is applied,
/// and a version the graph does not offer is refused naming what it offers; with a graph whose
/// edge to 4.2.0 carries an `Always` risk, 4.2.0 is listed as a conditional update not
/// recommended, refused without the risk accepted, and applied (and recorded) with it.
#[tokio::test]
async fn versions_resolve_through_the_update_graph_and_risky_updates_need_acceptance() {
    require_manager();
    let _turn = ONE_AT_A_TIME.lock().await;
    let admin = windlass_testkit::client().await;
    release_account(&admin).await;
    let namespace = windlass_testkit::manager::namespace().unwrap();
    let repository = windlass_testkit::registry().unique_repository("graph");
    let (tags, digests) = push_releases(
        &repository,
        &[("4.1.0", "4.1.0"), ("4.1.1", "4.1.1"), ("4.2.0", "4.2.0")],
    );
    // Unsigned payloads are reported, not refused: nothing here is forced, so risks are judged
    // as they stand.
    let keys = Keys::generate(&["release"]);
    let trust = TrustSetup::create(&admin, &namespace, &keys, "Report").await;
    let (_server, base, _) = serve_graph(&repository);

    let versions = Api::<ClusterVersion>::all(admin.clone());
    start_afresh(&versions).await;
    point_at(&versions, &format!("{base}/graph")).await;
    upgrade(&tags["4.1.0"], false);
    let at_410 = wait_object(
        &versions,
        CLUSTER_VERSION_NAME,
        "4.1.0 with its updates listed",
        TIMEOUT,
        |v| {
            completed_at(v, "4.1.0")
                && v.status
                    .as_ref()
                    .is_some_and(|s| s.available_updates.len() == 2)
        },
    )
    .await;
    let status = at_410.status.as_ref().unwrap();
    let offered: Vec<(&str, &str)> = status
        .available_updates
        .iter()
        .map(|r| (r.version.as_str(), r.image.as_str()))
        .collect();
    assert_eq!(
        offered,
        [
            ("4.2.0", digests["4.2.0"].as_str()),
            ("4.1.1", digests["4.1.1"].as_str())
        ]
    );
    assert!(condition_is(
        &at_410,
        types::RETRIEVED_UPDATES,
        "True",
        reasons::UPDATES_RETRIEVED
    ));

    // A version alone: resolved to its payload through the graph.
    upgrade_to_version("4.1.1", None);
    let at_411 = reach(&versions, "4.1.1").await;
    assert_eq!(
        at_411
            .status
            .as_ref()
            .unwrap()
            .desired
            .as_ref()
            .unwrap()
            .image,
        digests["4.1.1"]
    );
    upgrade_to_version("9.9.9", None);
    let (_unknown, message) =
        refused_with(&versions, "9.9.9 refused", reasons::VERSION_NOT_FOUND).await;
    let message = &message;
    assert!(message.contains("offers: 4.2.0"), "{message}");

    // A risky edge: conditional, not recommended, refused until its risk is accepted.
    let upstream = static_graph(json!({
        "nodes": [
            {"version": "4.1.1", "payload": digests["4.1.1"], "metadata": {}},
            {"version": "4.2.0", "payload": digests["4.2.0"], "metadata": {}},
        ],
        "edges": [],
        "conditionalEdges": [{
            "edges": [{"from": "4.1.1", "to": "4.2.0"}],
            "risks": [{"name": "KnownIssue", "message": "ingress drops connections during the update",
                       "url": "https://windlass.invalid/known-issue", "matchingRules": [{"type": "Always"}]}],
        }],
    }))
    .await;
    point_at(&versions, &upstream).await;
    upgrade_to_version("4.2.0", None);
    let risky = wait_object(
        &versions,
        CLUSTER_VERSION_NAME,
        "4.2.0 refused for its risk",
        TIMEOUT,
        |v| {
            condition_is(
                v,
                types::RELEASE_ACCEPTED,
                "False",
                reasons::CONDITIONAL_UPDATE_RISKS,
            )
        },
    )
    .await;
    let status = risky.status.as_ref().unwrap();
    assert!(status.available_updates.is_empty());
    let conditional = &status.conditional_updates[0];
    assert_eq!(conditional.release.version, "4.2.0");
    assert_eq!(conditional.risks[0].name, "KnownIssue");
    assert_eq!(conditional.conditions[0].status, ConditionStatus::False);
    assert_eq!(status.desired.as_ref().unwrap().version, "4.1.1");

    upgrade_to_version("4.2.0", Some("KnownIssue"));
    let at_420 = reach(&versions, "4.2.0").await;
    let entry = &at_420.status.as_ref().unwrap().history[0];
    assert!(
        entry
            .accepted_risks
            .contains("Conditional update risks accepted: KnownIssue"),
        "{}",
        entry.accepted_risks
    );

    versions
        .delete(CLUSTER_VERSION_NAME, &DeleteParams::default())
        .await
        .expect("deleting the ClusterVersion");
    trust.delete().await;
}
