use serde_json::json;
use windlass_api::config::OperatorConfig;
use windlass_api::names::{annotations, labels};

use super::*;

fn owner() -> Owner {
    Owner {
        name: "db".into(),
        namespace: "team-a".into(),
        uid: "uid-1".into(),
    }
}

fn content(manifests: Vec<Value>) -> RevisionContent {
    RevisionContent {
        revision: 3,
        package: "acme-db".into(),
        cluster_service_version_name: "acme-db.v1.1.0".into(),
        version: "1.1.0".into(),
        digest: Some("sha256:110".into()),
        catalog: Some("builtin".into()),
        image: None,
        config: OperatorConfig::default(),
        target_namespaces: None,
        manifests: manifests
            .into_iter()
            .map(|object| crate::revision::StoredManifest {
                file: "manifests/x.yaml".into(),
                object,
            })
            .collect(),
        created_by: None,
        verified_by: Vec::new(),
        bundle_pulled_from: None,
        image_rewrites: Vec::new(),
        reason: None,
        permitted_by: None,
    }
}

fn shipped_csv(modes: Value) -> Value {
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": "acme-db.v1.1.0", "namespace": "placeholder",
                     "annotations": {"alm-examples": "[]"}},
        "spec": {"version": "1.1.0", "installModes": modes},
    })
}

#[test]
fn namespaced_objects_are_placed_and_owned_cluster_ones_only_labelled() {
    let service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "metrics", "namespace": "placeholder", "labels": {"app": "db"},
                     "creationTimestamp": null},
        "spec": {"ports": [{"port": 8080}]},
        "status": {},
    });
    let built = object(&service, true, &owner());
    assert_eq!(built["metadata"]["namespace"], "team-a");
    assert_eq!(built["metadata"]["labels"]["app"], "db");
    assert_eq!(built["metadata"]["labels"]["windlass.dev/blueprint"], "db");
    assert_eq!(
        built["metadata"]["labels"]["windlass.dev/blueprint-namespace"],
        "team-a"
    );
    assert_eq!(built["metadata"]["ownerReferences"][0]["uid"], "uid-1");
    assert!(built["metadata"].get("creationTimestamp").is_none());
    assert!(built.get("status").is_none());

    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                      "metadata": {"name": "reader", "namespace": "placeholder"}});
    let built = object(&role, false, &owner());
    assert!(built["metadata"].get("namespace").is_none());
    assert!(built["metadata"].get("ownerReferences").is_none());
    assert_eq!(
        built["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "windlass"
    );
}

#[test]
fn a_webhook_conversion_the_csv_controller_set_is_kept() {
    let shipped = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gateways.acme.windlass.dev"},
        "spec": {"group": "acme.windlass.dev", "conversion": {"strategy": "None"}},
    });
    let live = json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {}}}});
    let built = crd(&shipped, Some(&live), &owner(), &FROM);
    assert!(built["spec"].get("conversion").is_none());

    // No webhook live: the bundle's setting is applied as shipped.
    let built = crd(&shipped, None, &owner(), &FROM);
    assert_eq!(built["spec"]["conversion"]["strategy"], "None");
    // A bundle that ships its own webhook conversion keeps it.
    let mut own = shipped.clone();
    own["spec"]["conversion"] = json!({"strategy": "Webhook"});
    assert_eq!(
        crd(&own, Some(&live), &owner(), &FROM)["spec"]["conversion"]["strategy"],
        "Webhook"
    );
}

#[test]
fn the_csv_carries_the_definition_the_revision_and_the_handover() {
    let content = content(vec![shipped_csv(json!([
        {"type": "OwnNamespace", "supported": true},
        {"type": "AllNamespaces", "supported": false},
    ]))]);
    let owner = owner();
    let built = csv(
        &content,
        &CsvSettings {
            owner: &owner,
            revision: 3,
            supersedes: Some("acme-db.v1.0.0".into()),
            progress_deadline_seconds: Some(60),
            conversions: vec!["manifests/x.yaml: converted".into()],
            target_namespaces: vec!["team-a".into()],
            install_service_account: None,
            grant: windlass_api::csv::CsvGrant {
                blueprint_uid: "uid-1".into(),
                revision: 3,
                policy: Some("tenants".into()),
                policy_generation: Some(2),
                cluster_scoped: vec![windlass_api::policy::ClusterScopedGrant::Webhooks],
            },
        },
    )
    .unwrap();
    assert_eq!(built["kind"], "ClusterServiceVersion");
    assert_eq!(built["apiVersion"], "windlass.dev/v1alpha1");
    assert_eq!(built["metadata"]["name"], "acme-db.v1.1.0");
    assert_eq!(built["metadata"]["namespace"], "team-a");
    assert_eq!(
        built["metadata"]["annotations"]["windlass.dev/revision"],
        "3"
    );
    assert_eq!(built["metadata"]["ownerReferences"][0]["controller"], true);
    assert_eq!(
        built["metadata"]["finalizers"],
        json!(["windlass.dev/csv-cleanup"])
    );
    assert_eq!(built["spec"]["supersedes"], "acme-db.v1.0.0");
    assert_eq!(built["spec"]["targetNamespaces"], json!(["team-a"]));
    assert_eq!(built["spec"]["progressDeadlineSeconds"], 60);
    assert_eq!(
        built["spec"]["grant"],
        json!({"blueprintUID": "uid-1", "revision": 3, "policy": "tenants",
               "policyGeneration": 2, "clusterScoped": ["Webhooks"]})
    );
    assert_eq!(
        built["spec"]["definition"]["metadata"]["annotations"]["alm-examples"],
        "[]"
    );
    assert_eq!(built["spec"]["definition"]["spec"]["version"], "1.1.0");
    assert!(
        built["spec"]["definition"]["metadata"]
            .get("name")
            .is_none()
    );
}

#[test]
fn the_csv_watches_the_namespaces_it_was_placed_in() {
    let content = content(vec![shipped_csv(
        json!([{"type": "AllNamespaces", "supported": true}]),
    )]);
    let owner = owner();
    let settings = CsvSettings {
        owner: &owner,
        revision: 1,
        supersedes: None,
        progress_deadline_seconds: None,
        conversions: vec![],
        target_namespaces: vec![],
        install_service_account: None,
        grant: Default::default(),
    };
    let built = csv(&content, &settings).unwrap();
    assert_eq!(built["spec"]["targetNamespaces"], json!([]));
    assert!(built["spec"].get("supersedes").is_none());
    assert_eq!(
        csv(&self::content(vec![]), &settings),
        Err(NoCsv { revision: 3 })
    );
}

#[test]
fn kinds_round_trip_through_the_annotation() {
    let manifests = vec![
        Manifest {
            file: "a".into(),
            object: json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole"}),
        },
        Manifest {
            file: "b".into(),
            object: json!({"apiVersion": "v1", "kind": "Service"}),
        },
        Manifest {
            file: "c".into(),
            object: shipped_csv(json!([])),
        },
    ];
    let kinds = kinds(&manifests);
    assert_eq!(
        kinds,
        ["rbac.authorization.k8s.io/v1/ClusterRole", "v1/Service"]
    );
    assert_eq!(
        parse_kinds(&kinds.join(",")),
        [
            (
                "rbac.authorization.k8s.io/v1".to_string(),
                "ClusterRole".to_string()
            ),
            ("v1".to_string(), "Service".to_string())
        ]
    );
}

#[test]
fn subset_ignores_what_the_server_adds() {
    let desired = json!({"spec": {"versions": [{"name": "v1", "served": true}]}});
    let live = json!({"spec": {"versions": [{"name": "v1", "served": true, "storage": true}],
                               "conversion": {"strategy": "None"}}});
    assert!(is_subset(&desired, &live));
    let changed = json!({"spec": {"versions": [{"name": "v1", "served": false}]}});
    assert!(!is_subset(&changed, &live));
}

const FROM: BundleId<'static> = BundleId {
    package: "acme-db",
    version: "1.1.0",
};

#[test]
fn a_crd_written_by_a_newer_version_of_the_same_package_is_kept() {
    let owner = owner();
    let applied = crd(
        &json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "databases.acme.windlass.dev"}, "spec": {}}),
        None,
        &owner,
        &FROM,
    );
    assert_eq!(
        applied["metadata"]["annotations"][annotations::CRD_VERSION],
        "1.1.0"
    );
    // Shared across namespaces: no label names one Blueprint, or each would rewrite it.
    let labels = applied["metadata"]["labels"].as_object().unwrap();
    assert!(labels.get(labels::BLUEPRINT).is_none(), "{labels:?}");
    assert!(
        labels.get(labels::BLUEPRINT_NAMESPACE).is_none(),
        "{labels:?}"
    );
    assert_eq!(labels[labels::MANAGED_BY], "windlass");
    let older = BundleId {
        package: "acme-db",
        version: "1.0.0",
    };
    let newer = BundleId {
        package: "acme-db",
        version: "1.1.1",
    };
    let other = BundleId {
        package: "acme-cache",
        version: "0.1.0",
    };
    assert!(
        live_crd_is_newer(&applied, &older),
        "1.1.0 is newer than 1.0.0"
    );
    assert!(
        !live_crd_is_newer(&applied, &FROM),
        "the same version is applied again"
    );
    assert!(
        !live_crd_is_newer(&applied, &newer),
        "an upgrade replaces it"
    );
    assert!(
        !live_crd_is_newer(&applied, &other),
        "another package's versions do not compare"
    );
    assert!(
        !live_crd_is_newer(&json!({"metadata": {}}), &older),
        "an unannotated CRD is replaced"
    );
}

#[test]
fn a_custom_resource_reader_reads_one_resource_of_one_group() {
    let live = json!({
        "metadata": {"name": "widgets.acme.example.com"},
        "spec": {"group": "acme.example.com", "names": {"plural": "widgets", "kind": "Widget"}},
    });
    let reader = custom_resource_reader(&live).unwrap();
    assert_eq!(
        reader["metadata"]["name"],
        "windlass-read.widgets.acme.example.com"
    );
    assert_eq!(
        reader["metadata"]["labels"][windlass_api::names::labels::AGGREGATE_TO_MANAGER],
        "true"
    );
    assert_eq!(
        reader["rules"],
        json!([{"apiGroups": ["acme.example.com"], "resources": ["widgets"], "verbs": ["get", "list"]}])
    );
    // Without a group the rule would name the core API (Secrets, ...): no reader at all.
    let core =
        json!({"metadata": {"name": "x"}, "spec": {"group": "", "names": {"plural": "secrets"}}});
    assert_eq!(custom_resource_reader(&core), None);
}

#[test]
fn a_crd_is_taken_over_only_from_windlass_or_when_an_admin_hands_it_over() {
    let crd = |labels: Value, annotations: Value, managers: &[&str]| {
        json!({"metadata": {
            "name": "widgets.acme.example.com",
            "labels": labels,
            "annotations": annotations,
            "managedFields": managers.iter().map(|m| json!({"manager": m})).collect::<Vec<_>>(),
        }})
    };
    let ours = crd(
        json!({labels::MANAGED_BY: "windlass"}),
        json!({annotations::CRD_PACKAGE: "acme"}),
        &["windlass"],
    );
    assert_eq!(crd_owner(&ours, "acme"), CrdOwner::ThisPackage);
    assert_eq!(
        crd_owner(&ours, "rival"),
        CrdOwner::Other("package acme".into())
    );
    let helm = crd(
        json!({labels::MANAGED_BY: "Helm"}),
        json!({"meta.helm.sh/release-name": "widgets", "meta.helm.sh/release-namespace": "infra"}),
        &["helm"],
    );
    assert_eq!(
        crd_owner(&helm, "acme"),
        CrdOwner::Other("Helm release infra/widgets".into())
    );
    let by_hand = crd(
        json!({}),
        json!({}),
        &["kubectl-client-side-apply", "kube-apiserver"],
    );
    assert_eq!(
        crd_owner(&by_hand, "acme"),
        CrdOwner::Other("field manager kubectl-client-side-apply".into())
    );
    let older_windlass = crd(
        json!({labels::MANAGED_BY: "windlass"}),
        json!({}),
        &["windlass"],
    );
    assert_eq!(crd_owner(&older_windlass, "acme"), CrdOwner::Unclaimed);
    let handed_over = crd(
        json!({labels::MANAGED_BY: "Helm"}),
        json!({annotations::CRD_ADOPT: "acme", annotations::CRD_PACKAGE: "rival"}),
        &["helm"],
    );
    assert_eq!(crd_owner(&handed_over, "acme"), CrdOwner::ThisPackage);
    assert_eq!(
        crd_owner(&handed_over, "rival"),
        CrdOwner::ThisPackage,
        "the package that wrote it last keeps it"
    );
}

#[test]
fn a_crd_is_applied_only_over_the_definition_it_was_judged_against() {
    let shipped = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "databases.acme.windlass.dev"},
        "spec": {"group": "acme.windlass.dev"},
    });
    let live =
        json!({"metadata": {"name": "databases.acme.windlass.dev", "resourceVersion": "4711"}});
    // Another Blueprint writing a newer definition in between makes this apply conflict.
    assert_eq!(
        crd(&shipped, Some(&live), &owner(), &FROM)["metadata"]["resourceVersion"],
        "4711"
    );
    assert!(
        crd(&shipped, None, &owner(), &FROM)["metadata"]
            .get("resourceVersion")
            .is_none()
    );
}

/// A Database CRD serving v1 with these `spec` properties (and v1beta1 too when asked),
/// as written by `version` of package acme-db.
fn database_crd(properties: &[&str], with_v1beta1: bool, version: &str) -> serde_json::Value {
    let props: serde_json::Map<String, serde_json::Value> = properties
        .iter()
        .map(|p| (p.to_string(), json!({"type": "string"})))
        .collect();
    let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": props}}}});
    let mut versions =
        vec![json!({"name": "v1", "served": true, "storage": true, "schema": schema})];
    if with_v1beta1 {
        versions
            .push(json!({"name": "v1beta1", "served": true, "storage": false, "schema": schema}));
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "databases.acme.windlass.dev", "annotations": {
            annotations::CRD_PACKAGE: "acme-db", annotations::CRD_VERSION: version}},
        "spec": {"group": "acme.windlass.dev", "scope": "Namespaced",
            "names": {"plural": "databases", "singular": "database", "kind": "Database", "listKind": "DatabaseList"},
            "versions": versions},
    })
}

#[test]
fn a_newer_crd_that_serves_everything_ours_does_stays() {
    let wide = database_crd(&["size", "tls"], false, "1.1.0");
    let narrow = database_crd(&["size"], false, "1.0.0");
    let older_elsewhere = BundleId {
        package: "acme-db-copy",
        version: "1.0.0",
    };
    assert!(
        live_crd_covers(&wide, &narrow, &older_elsewhere),
        "an older bundle would only take spec.tls away"
    );
    let newer_elsewhere = BundleId {
        package: "acme-db-copy",
        version: "1.2.0",
    };
    assert!(
        !live_crd_covers(&wide, &narrow, &newer_elsewhere),
        "a newer bundle's CRD is checked and applied, not skipped"
    );
    let narrow_live = database_crd(&["size"], false, "1.1.0");
    let wide_ours = database_crd(&["size", "tls"], false, "1.0.0");
    assert!(
        !live_crd_covers(&narrow_live, &wide_ours, &older_elsewhere),
        "the live CRD lacks a field ours has"
    );
    let two_versions = database_crd(&["size"], true, "1.0.0");
    assert!(
        !live_crd_covers(&wide, &two_versions, &older_elsewhere),
        "the live CRD does not serve v1beta1, which ours does"
    );
    let unannotated = json!({"metadata": {}, "spec": wide["spec"].clone()});
    assert!(!live_crd_covers(&unannotated, &narrow, &older_elsewhere));
}
