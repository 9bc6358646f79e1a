//! A fresh install of acme-db 1.0.0 from the built-in catalog: the revision is recorded in the
//! status, then in `spec.revision`; its content is stored in a sealed Secret; only then are the
//! CRD, the bundle's other objects and the sealed CSV applied, and the status says so.

use windlass_api::names::{annotations, labels, revision_secret, seal};
use windlass_blueprint_controller::revision;
use windlass_testkit::mock_api::MERGE_PATCH;

use crate::support::*;

/// Given a new Blueprint, when it is first reconciled, then its status records revision 1
/// (guarded by the resourceVersion it was read at) before a merge patch moves `spec.revision`,
/// and nothing is applied yet.
#[tokio::test]
async fn the_revision_is_recorded_in_the_status_before_spec_revision_moves() {
    let harness = Harness::fresh_install();
    let before = harness.blueprint();
    harness
        .reconcile()
        .await
        .expect("the first reconcile succeeds");

    let requests = harness.api.take_requests();
    let writes = writes_of(&requests);
    assert_eq!(
        routes(writes.iter().copied()),
        [("PATCH", STATUS_PATH), ("PATCH", BLUEPRINT_PATH),],
        "the status, then the bookkeeping patch, and nothing applied yet"
    );

    let status = writes[0];
    assert_applied(status);
    assert_eq!(status.code, 200);
    // Guarded by the resourceVersion the decision was made from.
    assert_eq!(
        status.body["metadata"]["resourceVersion"].as_str(),
        before.metadata.resource_version.as_deref()
    );
    let record = &status.body["status"]["history"][0];
    assert_eq!(record["revision"], 1);
    assert_eq!(record["clusterServiceVersionName"], CSV_NAME);
    assert_eq!(record["outcome"], "InProgress");
    assert_eq!(status.body["status"]["phase"], "Pending");

    let bookkeeping = writes[1];
    assert_eq!(bookkeeping.content_type.as_deref(), Some(MERGE_PATCH));
    assert_eq!(
        bookkeeping.field_manager(),
        Some(windlass_api::FIELD_MANAGER)
    );
    assert_eq!(bookkeeping.body["spec"]["revision"], 1);
    // Guarded by the resourceVersion the status was written at, which the server accepted.
    let guard = bookkeeping.body["metadata"]["resourceVersion"].as_str();
    assert!(guard.is_some() && guard != before.metadata.resource_version.as_deref());
    assert_eq!(bookkeeping.code, 200);

    assert_eq!(harness.blueprint().spec.revision, 1);

    // The Events telling of the new revision follow the status write that records it.
    let status_at = requests.iter().position(|r| r.path == STATUS_PATH);
    let events: Vec<usize> = requests
        .iter()
        .enumerate()
        .filter(|(_, r)| r.method == "POST" && r.path == EVENTS_PATH)
        .map(|(at, _)| at)
        .collect();
    assert!(!events.is_empty(), "{:#?}", routes(&requests));
    assert!(events.iter().all(|at| Some(*at) > status_at));
    assert_eq!(requests[events[0]].body["reason"], "RevisionStarted");
}

/// Given a recorded revision, when it is reconciled, then the sealed revision Secret, the CRD,
/// the ConfigMap, the sealed CSV and the status are applied in that order, each a forced
/// server-side apply by windlass.
#[tokio::test]
async fn the_content_is_stored_before_anything_of_it_is_applied() {
    let harness = Harness::fresh_install();
    harness.reconcile().await.expect("recording the revision");
    harness.api.take_requests();
    let recorded = harness.blueprint();
    harness.reconcile().await.expect("applying the revision");

    let requests = harness.api.take_requests();
    let writes = writes_of(&requests);
    assert_eq!(
        routes(writes.iter().copied()),
        [
            ("PATCH", SECRET_PATH),
            ("PATCH", CRD_PATH),
            ("PATCH", CONFIG_MAP_PATH),
            ("PATCH", CSV_PATH),
            ("PATCH", STATUS_PATH),
        ],
        "the revision Secret, the CRD, the bundle's objects, the CSV, then the status"
    );
    for write in &writes {
        assert_applied(write);
        assert_eq!(write.code, 200, "{write}");
    }

    // The revision Secret holds the whole bundle as shipped, sealed for this Blueprint.
    let secret_body = &writes[0].body;
    let secret: k8s_openapi::api::core::v1::Secret =
        serde_json::from_value(secret_body.clone()).expect("the applied Secret reads");
    assert_eq!(secret.type_.as_deref(), Some(revision_secret::TYPE));
    let secret_labels = secret.metadata.labels.clone().unwrap_or_default();
    assert_eq!(secret_labels[labels::REVISION], "1");
    assert_eq!(secret_labels[labels::BLUEPRINT], NAME);
    let owner = &secret.metadata.owner_references.clone().unwrap_or_default()[0];
    assert_eq!(Some(&owner.uid), recorded.metadata.uid.as_ref());
    revision::verify_secret(&secret, &seal_key(), &recorded, 1)
        .expect("the revision Secret carries a valid seal");
    let stored = revision::from_secret(&secret).expect("the revision content decodes");
    assert_eq!(stored.revision, 1);
    assert_eq!(stored.cluster_service_version_name, CSV_NAME);
    assert_eq!(stored.digest.as_deref(), Some(DIGEST));
    let files: Vec<&str> = stored.manifests.iter().map(|m| m.file.as_str()).collect();
    assert_eq!(
        files.len(),
        3,
        "CSV, CRD and ConfigMap as shipped: {files:?}"
    );

    // The CRD as shipped, marked as this package's.
    let crd = &writes[1].body;
    assert_eq!(crd["metadata"]["name"], CRD_NAME);
    assert_eq!(crd["spec"]["names"]["kind"], "Database");
    assert_eq!(
        crd["metadata"]["annotations"][annotations::CRD_PACKAGE],
        "acme-db"
    );

    // The bundle's namespaced object, in the Blueprint's namespace, owned by it.
    let config_map = &writes[2].body;
    assert_eq!(config_map["metadata"]["namespace"], NAMESPACE);
    assert_eq!(config_map["metadata"]["labels"][labels::BLUEPRINT], NAME);
    assert_eq!(
        config_map["metadata"]["ownerReferences"][0]["kind"],
        "Blueprint"
    );
    assert_eq!(config_map["data"]["retention"], "7d");

    // The CSV names its revision and carries windlass's seal over its spec.
    let csv = &writes[3].body;
    assert_eq!(csv["metadata"]["annotations"][annotations::REVISION], "1");
    let found = csv["metadata"]["annotations"][seal::ANNOTATION].as_str();
    windlass_revisions::csv::verify_spec(&seal_key(), NAMESPACE, CSV_NAME, &csv["spec"], found)
        .expect("the CSV carries a valid seal over its spec");

    // The status after the apply: started, installing, not done.
    let status = &writes[4].body["status"];
    assert_eq!(status["phase"], "Installing");
    let record = &status["history"][0];
    assert_eq!(record["outcome"], "InProgress");
    assert!(record["startedTime"].is_string(), "{record:#}");
    assert_ne!(
        plan_step(status, windlass_api::names::steps::CLUSTER_SERVICE_VERSION)["status"],
        "Done"
    );
}

/// Given a fresh install, over both reconciles the first object written is the revision
/// Secret, and each object is read before it is applied.
#[tokio::test]
async fn nothing_is_applied_before_the_secret_and_every_object_is_read_first() {
    let harness = Harness::fresh_install();
    harness.reconcile().await.expect("recording the revision");
    harness.reconcile().await.expect("applying the revision");
    let requests = harness.api.requests();
    for path in [SECRET_PATH, CRD_PATH, CONFIG_MAP_PATH, CSV_PATH] {
        let written = requests
            .iter()
            .position(|r| r.method == "PATCH" && r.path == path)
            .unwrap_or_else(|| panic!("{path} was applied"));
        if path == SECRET_PATH {
            // The revision's own Secret was listed (by label) before it was written.
            assert!(
                requests[..written]
                    .iter()
                    .any(|r| r.method == "GET" && r.path == "/api/v1/namespaces/team-a/secrets")
            );
            continue;
        }
        assert!(
            requests[..written]
                .iter()
                .any(|r| r.method == "GET" && r.path == path),
            "{path} was read before it was applied"
        );
    }
    // The applies are the only writes to objects: nothing was created or replaced otherwise.
    assert!(
        requests
            .iter()
            .filter(|r| r.is_write() && !r.path.starts_with(EVENTS_PATH))
            .all(|r| r.method == "PATCH"),
        "{:#?}",
        routes(&requests)
    );
    // Across both reconciles, the first write that is not the Blueprint's own is the Secret.
    let first = requests
        .iter()
        .find(|r| {
            r.is_write() && !r.path.starts_with(BLUEPRINT_PATH) && !r.path.starts_with(EVENTS_PATH)
        })
        .expect("something was written");
    assert_eq!(first.path, SECRET_PATH);
}
