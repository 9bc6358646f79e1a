//! A Blueprint is anyone's to write who may write Blueprints, so what the Subscription
//! controller checked is checked again from what the Blueprint names, and a refused revision
//! leaves nothing behind: no revision Secret, no object.

use std::sync::Arc;

use serde_json::json;
use windlass_api::names::{conditions, reasons};
use windlass_catalog_store::ServedCatalog;

use crate::support::*;

/// The Blueprint's condition `type_`, as `(status, reason, message)`.
fn condition(harness: &Harness, type_: &str) -> Option<(String, String, String)> {
    let status = harness.blueprint().status?;
    let found = status.conditions.into_iter().find(|c| c.type_ == type_)?;
    Some((format!("{:?}", found.status), found.reason, found.message))
}

/// Records the revision, then reconciles it once more: what a refusal leaves is in the log.
async fn record_then_reconcile(harness: &Harness) -> Vec<windlass_testkit::mock_api::Request> {
    harness.reconcile().await.expect("recording the revision");
    harness.api.take_requests();
    harness.reconcile().await.expect("deciding the revision");
    harness.api.take_requests()
}

fn wrote_nothing_of_the_revision(requests: &[windlass_testkit::mock_api::Request]) {
    let writes = writes_of(requests);
    assert!(
        writes.iter().all(|w| w.path == STATUS_PATH),
        "only the status may be written: {:#?}",
        routes(writes.iter().copied())
    );
}

/// Given a namespace no policy grants CRDs to, when a Blueprint asks for a bundle that ships
/// one, then the revision is refused before its content is stored: no Secret, no object.
#[tokio::test]
async fn a_revision_no_policy_permits_is_not_stored() {
    let harness = Harness::fresh_install();
    // The admin's policy now selects another namespace only.
    harness.api.insert(json!({
        "apiVersion": "windlass.dev/v1alpha1", "kind": "InstallPolicy",
        "metadata": {"name": "platform"},
        "spec": {"namespaces": ["elsewhere"], "trusted": true},
    }));
    let requests = record_then_reconcile(&harness).await;
    wrote_nothing_of_the_revision(&requests);
    let (status, reason, message) =
        condition(&harness, conditions::blueprint::INSTALL_PERMITTED).expect("a condition");
    assert_eq!(status, "False");
    assert_eq!(
        reason,
        reasons::policy::CLUSTER_SCOPED_NOT_ALLOWED,
        "{message}"
    );
}

/// Given the bundle's content cached because the built-in catalog served it, when a Blueprint
/// names another catalog and pins that digest, then nothing is installed: a cached bundle
/// counts only for the catalog that served it.
#[tokio::test]
async fn a_digest_another_catalog_served_is_not_installed_in_this_ones_name() {
    let harness = Harness::fresh_install();
    // `allowed` is served but does not offer the bundle.
    let allowed = ServedCatalog {
        name: "allowed".into(),
        priority: 0,
        digest: "sha256:allowed".into(),
        catalog: Arc::default(),
        bundles: Arc::default(),
        registry: Default::default(),
        credentials: Default::default(),
        verification: None,
        listing: Default::default(),
        pulled_from: None,
    };
    harness.ctx.store.serve(allowed);
    harness.edit_blueprint(|spec| {
        spec.bundle.as_mut().expect("a bundle").catalog = Some("allowed".into());
    });
    let requests = record_then_reconcile(&harness).await;
    wrote_nothing_of_the_revision(&requests);
    let status = harness.blueprint().status.expect("a status");
    let content = plan_step(&serde_json::to_value(&status).unwrap(), "CRDs").clone();
    assert!(
        content["message"]
            .as_str()
            .is_some_and(|m| m.contains("catalog allowed has no bundle acme-db.v1.0.0")),
        "{content}"
    );

    // A catalog that is not served at all gets nothing either.
    harness.edit_blueprint(|spec| {
        spec.bundle.as_mut().expect("a bundle").catalog = Some("elsewhere".into());
    });
    harness.memo_expires();
    harness.reconcile().await.expect("deciding again");
    wrote_nothing_of_the_revision(&harness.api.take_requests());
}

/// Given an admin who delisted acme-db 1.0.0, when a Blueprint asks for it anyway, then it is
/// refused naming the delisting, and nothing of it is read or stored.
#[tokio::test]
async fn a_delisted_version_is_not_installed_from_a_hand_written_blueprint() {
    let harness = Harness::fresh_install();
    let mut builtin = (*harness
        .ctx
        .store
        .get("builtin")
        .expect("the built-in catalog is served"))
    .clone();
    let entries = [("acme-db", &["1.0.0".to_string()][..], "loses data (ACME-9)")];
    builtin.listing.delisting = windlass_catalog::listing::Delisting::from_entries(entries).0;
    harness.ctx.store.serve(builtin);
    let requests = record_then_reconcile(&harness).await;
    wrote_nothing_of_the_revision(&requests);
    let (status, reason, message) =
        condition(&harness, conditions::blueprint::INSTALL_PERMITTED).expect("a condition");
    assert_eq!(status, "False");
    assert_eq!(reason, reasons::delisting::VERSION_DELISTED);
    assert!(message.contains("ACME-9"), "{message}");
}
