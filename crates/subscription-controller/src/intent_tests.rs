use serde_json::json;
use windlass_api::names::annotations;
use windlass_api::{
    config::Approval,
    subscription::{CrdDeletionPolicy, RollbackPolicy, SubscriptionSpec},
};

use super::*;

fn entries(value: Value) -> Vec<ManagedFieldsEntry> {
    serde_json::from_value(value).expect("managedFields sample parses")
}

#[test]
fn the_target_is_pinned_when_our_apply_no_longer_owns_it() {
    let ours = json!({
        "manager": "windlass", "operation": "Apply", "apiVersion": "windlass.dev/v1alpha1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:clusterServiceVersionName": {}, "f:package": {}}}
    });
    let bookkeeping = json!({
        "manager": "windlass", "operation": "Update", "apiVersion": "windlass.dev/v1alpha1",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:revision": {}, "f:oldVersion": {}}}
    });
    let status = json!({
        "manager": "windlass", "operation": "Apply", "subresource": "status",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:phase": {}}}
    });
    let cli = json!({
        "manager": "windlass-cli", "operation": "Update", "time": "2025-03-01T10:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:clusterServiceVersionName": {}}}
    });
    let kubectl_edit = json!({
        "manager": "kubectl-edit", "operation": "Update",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:clusterServiceVersionName": {}, "f:approved": {}}}
    });
    let kubectl_apply = json!({
        "manager": "kubectl", "operation": "Apply",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:clusterServiceVersionName": {}}}
    });
    let approver = json!({
        "manager": "kubectl-patch", "operation": "Update",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:approved": {}}}
    });
    let ours_without_target = json!({
        "manager": "windlass", "operation": "Apply",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:package": {}}}
    });
    let cases = vec![
        (
            "only our apply",
            json!([ours.clone(), bookkeeping.clone(), status]),
            None,
        ),
        (
            "a person approved; target still ours",
            json!([ours.clone(), approver]),
            None,
        ),
        (
            "windlass rollback took the target",
            json!([ours_without_target.clone(), cli.clone(), bookkeeping]),
            Some(("windlass-cli", "Update")),
        ),
        (
            "kubectl edit took the target",
            json!([ours_without_target.clone(), kubectl_edit]),
            Some(("kubectl-edit", "Update")),
        ),
        (
            "kubectl apply took it with --force-conflicts",
            json!([ours_without_target, kubectl_apply.clone()]),
            Some(("kubectl", "Apply")),
        ),
        (
            "kubectl apply of the same value shares it with us: still ours",
            json!([ours.clone(), kubectl_apply]),
            None,
        ),
        (
            "resumed at the value the CLI had set: ours again, the CLI co-owns it",
            json!([cli.clone(), ours.clone()]),
            None,
        ),
        ("no managed fields at all", json!([]), None),
    ];
    for (story, sample, want) in cases {
        let full = entries(sample);
        let got = pinned_by(&full);
        assert_eq!(
            got.as_ref()
                .map(|p| (p.manager.as_str(), p.operation.as_str())),
            want,
            "{story}"
        );
        // The cache keeps only the target's owners: the answer must not change.
        let mut cached = Blueprint::new("b", BlueprintSpec::default());
        cached.metadata.managed_fields = Some(full.clone());
        keep_target_owners(&mut cached);
        let trimmed = cached.metadata.managed_fields.unwrap_or_default();
        assert_eq!(pinned_by(&trimmed), got, "{story}, trimmed");
        assert!(trimmed.len() <= full.len(), "{story}");
        assert!(
            trimmed.iter().all(|e| e
                .fields_v1
                .as_ref()
                .is_some_and(|f| f.0 == json!({"f:spec": {"f:clusterServiceVersionName": {}}}))),
            "{story}: only the target field is kept"
        );
    }
    let pin = pinned_by(&entries(json!([cli]))).unwrap();
    assert_eq!(
        pin.describe(),
        "windlass-cli (Update, 2025-03-01T10:00:00Z)"
    );
}

fn subscription(spec: SubscriptionSpec) -> Subscription {
    let mut sub = Subscription::new("db", spec);
    sub.metadata.namespace = Some("team-a".into());
    sub.metadata.uid = Some("uid-1".into());
    sub
}

fn resolution() -> Resolution {
    let bundle = |package: &str, version: &str| ResolvedBundle {
        package: package.into(),
        cluster_service_version_name: format!("{package}.v{version}"),
        version: version.into(),
        catalog: Some("builtin".into()),
        image: None,
        digest: None,
    };
    Resolution {
        channel: "stable".into(),
        target: ResolvedBundle {
            digest: Some("sha256:aa".into()),
            ..bundle("acme-monitor", "0.2.0")
        },
        dependencies: vec![bundle("acme-db", "1.1.0")],
        action: windlass_resolver::solve::Action::Install,
        notes: vec![],
    }
}

#[test]
fn the_desired_blueprint_carries_intent_and_never_bookkeeping() {
    let sub = subscription(SubscriptionSpec {
        package: "acme-monitor".into(),
        approval: Approval::Manual,
        target_namespaces: Some(vec!["team-a".into()]),
        rollback: Some(RollbackPolicy {
            automatic: Some(false),
            progress_deadline_seconds: Some(60),
        }),
        crd_deletion_policy: CrdDeletionPolicy::Delete,
        ..Default::default()
    });
    let resolution = resolution();
    let desired = desired_blueprint(&sub, Target::resolved(&resolution), true).document();
    assert_eq!(
        desired["metadata"],
        json!({
            "name": "db", "namespace": "team-a",
            "labels": {"windlass.dev/subscription": "db", "windlass.dev/package": "acme-monitor"},
            "ownerReferences": [{
                "apiVersion": "windlass.dev/v1alpha1", "kind": "Subscription", "name": "db",
                "uid": "uid-1", "controller": true, "blockOwnerDeletion": true
            }],
            "finalizers": ["windlass.dev/blueprint-cleanup"]
        })
    );
    assert_eq!(
        desired["spec"],
        json!({
            "package": "acme-monitor",
            "clusterServiceVersionName": "acme-monitor.v0.2.0",
            "bundle": {"package": "acme-monitor", "clusterServiceVersionName": "acme-monitor.v0.2.0",
                       "version": "0.2.0", "catalog": "builtin", "digest": "sha256:aa"},
            "approval": "Manual",
            "dependencies": [{"package": "acme-db", "clusterServiceVersionName": "acme-db.v1.1.0",
                              "version": "1.1.0", "catalog": "builtin"}],
            "targetNamespaces": ["team-a"],
            "progressDeadlineSeconds": 60,
            "automaticRollback": false,
            "historyLimit": 10,
            "crdDeletionPolicy": "Delete"
        })
    );
    for bookkeeping in [
        "approved",
        "force",
        "oldVersion",
        "oldClusterServiceVersionName",
        "revision",
    ] {
        assert!(desired["spec"].get(bookkeeping).is_none(), "{bookkeeping}");
    }
}

#[test]
fn a_pinned_target_is_left_out_and_defaults_are_spelled_out() {
    let sub = subscription(SubscriptionSpec {
        package: "acme-monitor".into(),
        ..Default::default()
    });
    let resolution = resolution();
    let desired = desired_blueprint(&sub, Target::resolved(&resolution), false).document();
    let spec = &desired["spec"];
    assert!(spec.get("clusterServiceVersionName").is_none());
    assert!(spec.get("targetNamespaces").is_none());
    assert!(spec.get("config").is_none());
    assert_eq!(spec["progressDeadlineSeconds"], 600);
    assert_eq!(spec["automaticRollback"], true);
    assert_eq!(spec["crdDeletionPolicy"], "Keep");
}

/// The live Blueprint as the API server would return it after `desired` was applied.
fn live_from(desired: &DesiredBlueprint, csv_name: &str) -> Blueprint {
    let mut live = desired.document();
    live["spec"]["clusterServiceVersionName"] = json!(csv_name);
    // Bookkeeping and a person's fields are there too; they never make an apply necessary.
    live["spec"]["revision"] = json!(3);
    live["spec"]["approved"] = json!(true);
    live["spec"]["oldVersion"] = json!("0.1.0");
    live["metadata"]["labels"]["extra"] = json!("kept");
    serde_json::from_value(live).unwrap()
}

#[test]
fn an_unchanged_blueprint_needs_no_apply() {
    let sub = subscription(SubscriptionSpec {
        package: "acme-monitor".into(),
        ..Default::default()
    });
    let resolution = resolution();
    let desired = desired_blueprint(&sub, Target::resolved(&resolution), true);
    let live = live_from(&desired, "acme-monitor.v0.2.0");
    assert!(is_current(&live, &desired));

    // Each intent change needs an apply.
    let mut moved = resolution.clone();
    moved.target.cluster_service_version_name = "acme-monitor.v0.3.0".into();
    assert!(!is_current(
        &live,
        &desired_blueprint(&sub, Target::resolved(&moved), true)
    ));
    let mut redigested = resolution.clone();
    redigested.target.digest = Some("sha256:bb".into());
    assert!(!is_current(
        &live,
        &desired_blueprint(&sub, Target::resolved(&redigested), true)
    ));
    let manual = subscription(SubscriptionSpec {
        approval: Approval::Manual,
        ..sub.spec.clone()
    });
    assert!(!is_current(
        &live,
        &desired_blueprint(&manual, Target::resolved(&resolution), true)
    ));
    let mut orphan = live.clone();
    orphan.metadata.owner_references = None;
    assert!(!is_current(&orphan, &desired));

    // A pinned target differs from the catalog's choice, and that is not ours to change.
    let pinned_live = live_from(&desired, "acme-monitor.v0.1.0");
    let pinned = desired_blueprint(&sub, Target::kept(&pinned_live.spec), false);
    assert!(is_current(&pinned_live, &pinned));
}

#[test]
fn resume_is_an_annotation_set_to_true() {
    let mut bp = Blueprint::new("db", BlueprintSpec::default());
    assert!(!wants_resume(&bp));
    bp.annotations_mut()
        .insert(annotations::RESUME.into(), "false".into());
    assert!(!wants_resume(&bp));
    bp.annotations_mut()
        .insert(annotations::RESUME.into(), "true".into());
    assert!(wants_resume(&bp));
}

/// After an automatic rollback from 1.1.1 to 1.1.0, what is installed is 1.1.0 again, so the
/// catalog's choice is 1.1.1 again: the very intent the Blueprint already holds (and holds back).
/// Nothing is applied, so nothing retries the broken version.
#[test]
fn a_held_back_target_resolves_to_the_same_intent() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bundles");
    let catalog = windlass_catalog::load_catalog(&root).unwrap();
    let origins = catalog
        .packages
        .keys()
        .map(|p| (p.clone(), "builtin".to_string()))
        .collect();
    let sub = subscription(SubscriptionSpec {
        package: "acme-db".into(),
        channel: Some("stable".into()),
        ..Default::default()
    });
    let rolled_back = [crate::resolution::InstalledPackage {
        package: "acme-db".into(),
        version: semver::Version::new(1, 1, 0),
        csv_name: "acme-db.v1.1.0".into(),
    }];
    let resolve = || {
        let mut found = crate::resolution::resolve(&crate::resolution::ResolutionInput {
            subscription: &sub.spec,
            catalog: &catalog,
            origins: &origins,
            installed: &rolled_back,
            requesters: &[],
        })
        .unwrap();
        // The store answers with the same digest for the same content.
        found.target.digest = Some("sha256:same".into());
        found
    };
    let first = resolve();
    assert_eq!(first.target.cluster_service_version_name, "acme-db.v1.1.1");
    let desired = desired_blueprint(&sub, Target::resolved(&first), true);
    let live = live_from(&desired, "acme-db.v1.1.1");
    for _ in 0..3 {
        let again = resolve();
        assert!(is_current(
            &live,
            &desired_blueprint(&sub, Target::resolved(&again), true)
        ));
    }
}
