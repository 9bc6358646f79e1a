//! A Blueprint whose revision completed: a reconcile soon after its apply (its CSV's progress
//! wakes it) stands on the memo of that apply and reads none of its objects; a later one (the
//! resync) re-applies it to repair drift, comparing every object with the live one first, so a
//! settled Blueprint costs reads only.

use serde_json::json;

use crate::support::*;

/// Installs acme-db and lets its CSV succeed; returns once a reconcile wrote nothing.
async fn settled() -> Harness {
    let harness = Harness::fresh_install();
    harness.reconcile().await.expect("recording the revision");
    harness.reconcile().await.expect("applying the revision");
    harness.csv_succeeds();
    for _ in 0..3 {
        harness.api.take_requests();
        harness
            .reconcile()
            .await
            .expect("reconciling the installed revision");
        if writes_of(&harness.api.requests()).is_empty() {
            break;
        }
    }
    let status = harness.blueprint().status.expect("a status");
    assert_eq!(
        status.phase,
        Some(windlass_api::blueprint::BlueprintPhase::Succeeded),
        "{status:#?}"
    );
    harness.api.take_requests();
    harness
}

/// Given an installed Blueprint whose CSV Succeeded, when it is reconciled again soon after
/// its apply, then none of its objects is read again and nothing is written.
#[tokio::test]
async fn a_reconcile_soon_after_the_apply_reads_none_of_its_objects() {
    let harness = settled().await;
    harness
        .reconcile()
        .await
        .expect("a settled reconcile succeeds");
    let requests = harness.api.take_requests();
    assert!(writes_of(&requests).is_empty(), "{:#?}", routes(&requests));
    for path in [CRD_PATH, CONFIG_MAP_PATH, CSV_PATH] {
        assert!(
            !requests.iter().any(|r| r.path == path),
            "{path} was read again: {:#?}",
            routes(&requests)
        );
    }
}

/// Given an installed Blueprint whose CSV someone edited right after the apply, when it is
/// reconciled, then the memo does not stand for it: the CSV is applied again.
#[tokio::test]
async fn a_csv_edited_right_after_the_apply_is_put_back_at_once() {
    let harness = settled().await;
    let mut edited = harness.csv();
    edited["spec"]["definition"]["spec"]["version"] = json!("9.9.9");
    harness.api.insert(edited);

    harness.reconcile().await.expect("repairing the CSV");
    let requests = harness.api.take_requests();
    let writes = writes_of(&requests);
    let repaired = writes
        .iter()
        .find(|r| r.path == CSV_PATH)
        .unwrap_or_else(|| panic!("the CSV was not applied: {:#?}", routes(&requests)));
    assert_applied(repaired);
    assert_ne!(
        repaired.body["spec"]["definition"]["spec"]["version"],
        "9.9.9"
    );
}

/// Given an installed Blueprint whose CSV Succeeded, when it is reconciled after the memo of
/// its apply expired (the resync), then every object is read and compared and nothing is
/// written.
#[tokio::test]
async fn a_settled_blueprint_is_reconciled_with_reads_only() {
    let harness = settled().await;
    harness.memo_expires();
    let action = harness
        .reconcile()
        .await
        .expect("a settled reconcile succeeds");
    let requests = harness.api.take_requests();
    let written: Vec<String> = requests
        .iter()
        .filter(|r| r.is_write())
        .map(|r| r.to_string())
        .collect();
    assert!(written.is_empty(), "a settled reconcile wrote {written:#?}");
    // It did go through the apply stage: every object was read and compared.
    for path in [CRD_PATH, CONFIG_MAP_PATH, CSV_PATH] {
        assert!(
            requests.iter().any(|r| r.method == "GET" && r.path == path),
            "{path} was read to be compared: {:#?}",
            routes(&requests)
        );
    }
    assert_eq!(
        action,
        kube::runtime::controller::Action::requeue(std::time::Duration::from_secs(600)),
        "a settled revision is looked at again only to repair drift"
    );
}

/// Given a settled Blueprint whose ConfigMap someone edited, when it is reconciled, then only
/// that ConfigMap is applied again, with the bundle's data.
#[tokio::test]
async fn drift_in_one_object_is_repaired_with_one_write() {
    let harness = settled().await;
    let mut edited = harness
        .api
        .object("v1", "ConfigMap", Some(NAMESPACE), CONFIG_MAP)
        .expect("the ConfigMap was applied");
    edited["data"] = json!({"retention": "1d"});
    harness.api.insert(edited);
    // The ConfigMap is not watched: the resync, after the memo expired, finds the drift.
    harness.memo_expires();

    harness.reconcile().await.expect("repairing drift");
    let requests = harness.api.take_requests();
    let writes = writes_of(&requests);
    assert_eq!(
        routes(writes.iter().copied()),
        [("PATCH", CONFIG_MAP_PATH)],
        "only the edited object is written"
    );
    assert_applied(writes[0]);
    assert_eq!(writes[0].body["data"]["retention"], "7d");
}
