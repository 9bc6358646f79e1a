use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use serde_json::json;
use windlass_api::{
    Condition, ConditionStatus,
    clusterversion::{AvailableRelease, CapabilitiesStatus, UpdateState},
};

use super::*;

fn theirs(value: Value) -> openshift::ClusterVersion {
    serde_json::from_value(value).unwrap()
}

#[test]
fn openshifts_spec_drives_and_the_annotation_adds_windlass_settings() {
    let version = theirs(json!({
        "apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
        "metadata": {"name": "version", "annotations": {
            "windlass.dev/spec": "{\"profile\": \"single-node-developer\", \"plainHTTP\": true, \"upstream\": \"ignored\"}"}},
        "spec": {"clusterID": "c0ffee", "channel": "stable-4.2", "upstream": "http://graph/api",
                 "desiredUpdate": {"version": "4.2.0", "force": true,
                                   "acceptRisks": [{"name": "AdminAckRequired"}]},
                 "overrides": [{"kind": "Deployment", "group": "apps", "namespace": "ns",
                                "name": "d", "unmanaged": true}]},
    }));
    let spec = spec_of(&version).unwrap();
    let desired = spec.desired_update.unwrap();
    assert_eq!(desired.version.as_deref(), Some("4.2.0"));
    assert!(desired.force);
    assert_eq!(desired.accept_risks, ["AdminAckRequired"]);
    assert_eq!(spec.profile.as_deref(), Some("single-node-developer"));
    assert!(spec.plain_http);
    // OpenShift's own fields win over the annotation.
    assert_eq!(spec.upstream.as_deref(), Some("http://graph/api"));
    assert_eq!(spec.overrides.len(), 1);
    // No capabilities in OpenShift's spec is its default baseline, not "everything".
    assert_eq!(spec.capabilities, Some(Default::default()));
}

#[test]
fn a_bad_annotation_is_refused_naming_it() {
    let version = theirs(json!({
        "apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
        "metadata": {"name": "version", "annotations": {"windlass.dev/spec": "{\"profile\": 3}"}},
        "spec": {"clusterID": "c"},
    }));
    let error = spec_of(&version).unwrap_err();
    assert!(error.contains("windlass.dev/spec"), "{error}");
}

#[test]
fn the_status_takes_openshifts_shape_and_reads_back() {
    let started = Time(Timestamp::from_second(1_800_000_000).unwrap());
    let status = ClusterVersionStatus {
        desired: Some(Release {
            version: "4.2.0".into(),
            image: "r@sha256:abc".into(),
            verified: true,
            verified_by: vec!["p/k".into()],
            requested: "r:4.2.0".into(),
            manifest_digest: "sha256:0123456789abcdef".into(),
        }),
        history: vec![UpdateHistory {
            state: UpdateState::Partial,
            version: "4.2.0".into(),
            image: "r@sha256:abc".into(),
            verified: true,
            started_time: started.clone(),
            completion_time: None,
            accepted_risks: "AdminAckRequired".into(),
            crossed_irreversible: vec!["40".into()],
        }],
        available_updates: vec![AvailableRelease {
            version: "4.2.1".into(),
            image: "r@sha256:def".into(),
            url: Some("https://example.com/4.2.1".into()),
            channels: vec!["stable-4.2".into()],
        }],
        capabilities: Some(CapabilitiesStatus {
            enabled_capabilities: vec!["Console".into()],
            known_capabilities: vec!["Console".into(), "Insights".into()],
        }),
        conditions: vec![
            Condition::new("Progressing", ConditionStatus::True, "Waiting", "level 30")
                .observed(Some(4)),
        ],
        observed_generation: Some(4),
        ..Default::default()
    };
    let shaped = openshift_status(&status, Some("stable-4.2"));
    assert_eq!(shaped["desired"]["channels"], json!(["stable-4.2"]));
    assert_eq!(shaped["versionHash"], "0123456789a");
    assert_eq!(shaped["observedGeneration"], 4);
    assert_eq!(shaped["history"][0]["completionTime"], Value::Null);
    assert_eq!(shaped["history"][0]["acceptedRisks"], "AdminAckRequired");
    assert!(shaped["history"][0].get("crossedIrreversible").is_none());
    assert!(shaped["conditions"][0].get("observedGeneration").is_none());
    assert_eq!(
        shaped["capabilities"]["enabledCapabilities"],
        json!(["Console"])
    );
    assert_eq!(
        shaped["availableUpdates"][0]["url"],
        "https://example.com/4.2.1"
    );
    // A CVO's status read back keeps its history and desired release.
    let imported = imported_status(Some(&shaped));
    assert_eq!(imported.history.len(), 1);
    assert_eq!(imported.history[0].version, "4.2.0");
    assert_eq!(imported.desired.unwrap().image, "r@sha256:abc");
    assert_eq!(imported_status(None), ClusterVersionStatus::default());
}
