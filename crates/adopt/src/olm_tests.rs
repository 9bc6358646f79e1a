use serde_json::{Value, json};

use super::*;
use crate::olm_objects::go_duration_seconds;
use windlass_api::names::olm_v0;

const NS: &str = "db";
const CSV: &str = "acme-db.v1.0.0";
const CSV_UID: &str = "11111111-2222-3333-4444-555555555555";

fn owner_reference() -> Value {
    json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
           "name": CSV, "uid": CSV_UID, "controller": false, "blockOwnerDeletion": false})
}

fn olm_labels() -> Value {
    json!({olm_v0::OWNER: CSV, olm_v0::OWNER_KIND: "ClusterServiceVersion",
           olm_v0::OWNER_NAMESPACE: NS, "operators.coreos.com/acme-db.db": "", "app": "acme-db"})
}

fn namespaced(kind: &str, api_version: &str, name: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind,
           "metadata": {"name": name, "namespace": NS, "resourceVersion": "42",
                        "labels": olm_labels(), "ownerReferences": [owner_reference()]}})
}

fn install() -> OlmInstall {
    let deployment_spec = json!({"replicas": 1, "selector": {"matchLabels": {"app": "acme-db"}},
        "template": {"metadata": {"labels": {"app": "acme-db"}},
                     "spec": {"serviceAccountName": "acme-db-operator",
                              "containers": [{"name": "operator", "image": "quay.io/acme/db:1.0.0"}]}}});
    let mut deployment = namespaced("Deployment", "apps/v1", "acme-db-operator");
    deployment["spec"] = deployment_spec.clone();
    deployment["status"] = json!({"availableReplicas": 1});
    deployment["metadata"]["labels"][olm_v0::DEPLOYMENT_SPEC_HASH] = json!("abc");
    deployment["metadata"]["managedFields"] = json!([
        {"manager": "olm", "operation": "Update"},
        {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status"},
    ]);
    let cluster_role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": format!("{CSV}-7f9c"), "resourceVersion": "7", "labels": olm_labels()}});
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "databases.acme.windlass.dev", "resourceVersion": "9",
                     "labels": {"operators.coreos.com/acme-db.db": ""}}});
    OlmInstall {
        subscription: json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": "acme-db", "namespace": NS},
            "spec": {"name": "acme-db", "channel": "stable", "source": "acme", "sourceNamespace": "olm",
                     "installPlanApproval": "Manual", "startingCSV": CSV},
            "status": {"installedCSV": CSV, "currentCSV": CSV, "state": "AtLatestKnown"},
        }),
        csv: Some(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": CSV, "namespace": NS, "uid": CSV_UID,
                         "annotations": {"olm.targetNamespaces": NS}},
            "spec": {
                "installModes": [{"type": "OwnNamespace", "supported": true},
                                 {"type": "AllNamespaces", "supported": false}],
                "install": {"strategy": "deployment", "spec": {
                    "deployments": [{"name": "acme-db-operator", "spec": deployment_spec}]}},
                "customresourcedefinitions": {"owned": [{"name": "databases.acme.windlass.dev"}]},
            },
            "status": {"phase": "Succeeded"},
        })),
        operator_groups: vec![json!({"metadata": {"name": "db-group", "namespace": NS},
            "spec": {"targetNamespaces": [NS]}, "status": {"namespaces": [NS]}})],
        catalog_source: Some(json!({"metadata": {"name": "acme", "namespace": "olm"},
            "spec": {"sourceType": "grpc", "image": "localhost:5000/acme/catalog:v1", "priority": 5,
                     "updateStrategy": {"registryPoll": {"interval": "10m"}}}})),
        install_plans: vec![
            json!({"metadata": {"name": "install-abcde", "namespace": NS},
            "spec": {"clusterServiceVersionNames": [CSV], "approval": "Manual", "approved": true}}),
        ],
        owned: vec![
            deployment.clone(),
            namespaced("ServiceAccount", "v1", "acme-db-operator"),
            namespaced(
                "Role",
                "rbac.authorization.k8s.io/v1",
                &format!("{CSV}-8d7f"),
            ),
            namespaced(
                "RoleBinding",
                "rbac.authorization.k8s.io/v1",
                &format!("{CSV}-8d7f"),
            ),
            namespaced("ConfigMap", "v1", "acme-db-defaults"),
            cluster_role,
            // Someone else's: not owned by this CSV, so never touched.
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "unrelated", "namespace": NS, "resourceVersion": "1"}}),
        ],
        crds: vec![("databases.acme.windlass.dev".into(), Some(crd))],
        deployments: vec![("acme-db-operator".into(), Some(deployment))],
        olm_controllers: vec![("olm/olm-operator".into(), 0)],
        others_on_catalog_source: 0,
        others_in_namespace: 0,
        catalogs: vec![],
        plain_http: true,
    }
}

fn taken(adoption: &Adoption, kind: &str, name: &str) -> TakeOver {
    adoption
        .take_over
        .iter()
        .find(|t| t.object.kind == kind && t.object.name == name)
        .cloned()
        .unwrap_or_else(|| panic!("{kind} {name} not taken over: {:#?}", adoption.take_over))
}

#[test]
fn a_running_own_namespace_install_is_adopted_as_it_runs() {
    let adoption = plan(&install());
    assert!(adoption.blockers.is_empty(), "{:?}", adoption.blockers);
    assert!(
        adoption.differences.is_empty(),
        "{:?}",
        adoption.differences
    );
    assert_eq!(adoption.approval, "Manual");
    assert_eq!(
        adoption.subscription["spec"],
        json!({"package": "acme-db", "startingCSV": CSV, "approval": "Manual",
               "catalog": "olm-olm-acme", "channel": "stable", "targetNamespaces": [NS]})
    );
    assert_eq!(
        adoption.subscription["metadata"]["annotations"][annotations::ADOPTED_FROM],
        json!(format!("olm:{NS}/{CSV}"))
    );
    let catalog = adoption.catalog.create.as_ref().unwrap();
    assert_eq!(
        catalog["spec"],
        json!({"source": {"type": "Image", "image": "localhost:5000/acme/catalog:v1", "plainHTTP": true},
               "priority": 5, "pollIntervalSeconds": 600})
    );

    // The Deployment: only metadata, guarded by the resourceVersion read, OLM's owner gone.
    let deployment = taken(&adoption, "Deployment", "acme-db-operator");
    assert_eq!(
        deployment.patch,
        json!({"metadata": {
            "resourceVersion": "42",
            "ownerReferences": [],
            "labels": {olm_v0::OWNER: null, olm_v0::OWNER_KIND: null, olm_v0::OWNER_NAMESPACE: null,
                       olm_v0::DEPLOYMENT_SPEC_HASH: null, "operators.coreos.com/acme-db.db": null},
            "annotations": {annotations::ADOPTED_FROM: format!("olm:{NS}/{CSV}")},
        }})
    );
    assert!(!deployment.hands_over());
    // What puts it back, should adoption stop halfway.
    assert_eq!(
        deployment.undo,
        json!({"metadata": {
            "ownerReferences": [owner_reference()],
            "labels": {olm_v0::OWNER: CSV, olm_v0::OWNER_KIND: "ClusterServiceVersion",
                       olm_v0::OWNER_NAMESPACE: NS, olm_v0::DEPLOYMENT_SPEC_HASH: "abc",
                       "operators.coreos.com/acme-db.db": ""},
            "annotations": {annotations::ADOPTED_FROM: null},
        }})
    );
    taken(&adoption, "ServiceAccount", "acme-db-operator");
    let crd = taken(
        &adoption,
        "CustomResourceDefinition",
        "databases.acme.windlass.dev",
    );
    assert_eq!(
        crd.patch["metadata"]["annotations"][annotations::CRD_ADOPT],
        json!("acme-db")
    );
    assert!(crd.patch["metadata"].get("ownerReferences").is_none());
    assert!(crd.hands_over());
    let bundle_object = taken(&adoption, "ConfigMap", "acme-db-defaults");
    assert_eq!(
        bundle_object.patch["metadata"]["annotations"][annotations::ADOPT],
        json!("db/acme-db")
    );
    assert!(
        adoption
            .take_over
            .iter()
            .all(|t| t.object.name != "unrelated")
    );

    let replaced: Vec<String> = adoption
        .replaced
        .iter()
        .map(|r| r.object.to_string())
        .collect();
    assert_eq!(
        replaced,
        vec![
            format!("Role db/{CSV}-8d7f"),
            format!("RoleBinding db/{CSV}-8d7f"),
            format!("ClusterRole {CSV}-7f9c"),
        ]
    );
    // Told in order: what it was installed by, what it was, then what it stood on.
    let let_go = adoption.let_go.join("\n");
    let order = [
        "delete installplans.operators.coreos.com -n db install-abcde",
        "delete subscriptions.operators.coreos.com -n db acme-db",
        "delete clusterserviceversions.operators.coreos.com -n db acme-db.v1.0.0",
        "delete clusterrole -l olm.owner=acme-db.v1.0.0,olm.owner.namespace=db",
        "delete operatorgroups.operators.coreos.com -n db db-group",
        "delete catalogsources.operators.coreos.com -n olm acme",
    ];
    let mut at = 0;
    for step in order {
        let found = let_go[at..]
            .find(step)
            .unwrap_or_else(|| panic!("{step} not after {at} in\n{let_go}"));
        at += found;
    }
    assert!(!let_go.contains("olm.copiedFrom"), "{let_go}");
}

#[test]
fn running_olm_controllers_block_with_the_command_that_stops_them() {
    let mut install = install();
    install.olm_controllers = vec![
        ("olm/olm-operator".into(), 1),
        ("olm/catalog-operator".into(), 0),
    ];
    let adoption = plan(&install);
    assert_eq!(adoption.blockers.len(), 1, "{:?}", adoption.blockers);
    assert!(
        adoption.blockers[0].contains("kubectl -n olm scale deployment olm-operator --replicas=0"),
        "{:?}",
        adoption.blockers
    );
}

#[test]
fn what_cannot_be_adopted_is_named_with_its_field() {
    let mut install = install();
    install.csv.as_mut().unwrap()["status"]["phase"] = json!("Failed");
    install.catalog_source = Some(json!({"metadata": {"name": "acme", "namespace": "olm"},
        "spec": {"sourceType": "configmap", "configMap": "acme-index"}}));
    install.subscription["spec"]["config"] =
        json!({"envFrom": [{"configMapRef": {"name": "x"}}], "env": [{"name": "A", "value": "1"}]});
    install.deployments = vec![("acme-db-operator".into(), None)];
    let adoption = plan(&install);
    let blockers = adoption.blockers.join("\n");
    for expected in [
        "ClusterServiceVersion db/acme-db.v1.0.0 is Failed",
        "CatalogSource olm/acme serves from ConfigMap acme-index",
        "spec.config.envFrom has no windlass equivalent",
        "Deployment db/acme-db-operator, which acme-db.v1.0.0 installs, is not there",
    ] {
        assert!(
            blockers.contains(expected),
            "{expected} missing in\n{blockers}"
        );
    }
    assert_eq!(adoption.blockers.len(), 4, "{blockers}");
    // What it can keep of the config is kept.
    assert_eq!(
        adoption.subscription["spec"]["config"],
        json!({"env": [{"name": "A", "value": "1"}]})
    );
}

#[test]
fn differences_between_olm_and_the_cluster_are_listed() {
    let mut install = install();
    let live = install.deployments[0].1.as_mut().unwrap();
    live["spec"]["template"]["spec"]["containers"][0]["image"] = json!("quay.io/acme/db:hotfix");
    live["spec"]["replicas"] = json!(2);
    live["metadata"]["managedFields"]
        .as_array_mut()
        .unwrap()
        .push(json!({"manager": "kubectl-edit", "operation": "Update"}));
    install.subscription["status"]["currentCSV"] = json!("acme-db.v1.0.1");
    install.subscription["status"]["installPlanRef"] = json!({"name": "install-fghij"});
    let adoption = plan(&install);
    assert!(adoption.blockers.is_empty(), "{:?}", adoption.blockers);
    let differences = adoption.differences.join("\n");
    for expected in [
        "OLM resolved acme-db.v1.0.1 but runs acme-db.v1.0.0 (InstallPlan install-fghij not completed)",
        "Deployment db/acme-db-operator runs 2 replicas, the CSV says 1",
        "container operator runs quay.io/acme/db:hotfix, the CSV says quay.io/acme/db:1.0.0",
        "Deployment db/acme-db-operator has 1 of 2 replicas available",
        "by field manager kubectl-edit",
    ] {
        assert!(
            differences.contains(expected),
            "{expected} missing in\n{differences}"
        );
    }
}

#[test]
fn all_namespaces_installs_omit_targets_and_remove_olms_copies() {
    let mut install = install();
    install.operator_groups[0]["spec"] = json!({});
    install.operator_groups[0]["status"] = json!({"namespaces": [""]});
    install.csv.as_mut().unwrap()["spec"]["installModes"][1]["supported"] = json!(true);
    install.catalogs = vec![("acme".into(), "localhost:5000/acme/catalog:v1".into())];
    install.others_in_namespace = 1;
    install.others_on_catalog_source = 2;
    let adoption = plan(&install);
    assert!(adoption.blockers.is_empty(), "{:?}", adoption.blockers);
    assert!(
        adoption.subscription["spec"]
            .get("targetNamespaces")
            .is_none()
    );
    assert_eq!(adoption.subscription["spec"]["catalog"], json!("acme"));
    assert!(adoption.catalog.create.is_none());
    let let_go = adoption.let_go.join("\n");
    assert!(
        let_go.contains("-A -l olm.copiedFrom=acme-db.v1.0.0"),
        "{let_go}"
    );
    assert!(
        !let_go.contains("operatorgroups"),
        "others still use it: {let_go}"
    );
    assert!(
        !let_go.contains("catalogsources"),
        "others still use it: {let_go}"
    );
}

#[test]
fn an_install_mode_the_csv_does_not_support_blocks() {
    let mut install = install();
    install.operator_groups[0]["status"] = json!({"namespaces": ["a", "b"]});
    let adoption = plan(&install);
    assert!(
        adoption
            .blockers
            .iter()
            .any(|b| b.contains("targets a, b (MultiNamespace)")),
        "{:?}",
        adoption.blockers
    );
}

#[test]
fn nothing_installed_is_nothing_to_adopt() {
    let mut install = install();
    install.subscription["status"] = json!({});
    let adoption = plan(&install);
    assert!(
        adoption.blockers[0].contains("status.installedCSV is empty"),
        "{:?}",
        adoption.blockers
    );
    assert!(adoption.take_over.is_empty());
}

#[test]
fn go_durations_read_as_seconds() {
    assert_eq!(go_duration_seconds("10m"), Some(600));
    assert_eq!(go_duration_seconds("1h30m"), Some(5400));
    assert_eq!(go_duration_seconds("45m0s"), Some(2700));
    assert_eq!(go_duration_seconds("1.5s"), Some(2));
    assert_eq!(go_duration_seconds("ten minutes"), None);
    assert_eq!(go_duration_seconds(""), None);
}

#[test]
fn the_text_says_what_olm_lets_go_first_and_every_object() {
    let adoption = plan(&install());
    let text = crate::text::render(&adoption);
    let stop = text.find("Before adopting, OLM must let go").unwrap();
    let take = text
        .find("take     Deployment db/acme-db-operator")
        .unwrap();
    let after = text.find("Once windlass runs it, let OLM go").unwrap();
    assert!(stop < take && take < after, "{text}");
    assert!(
        text.contains("replace  ClusterRole acme-db.v1.0.0-7f9c"),
        "{text}"
    );
}
