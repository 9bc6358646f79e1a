use std::io::Write as _;

use base64::Engine as _;
use serde_json::{Value, json};
use windlass_api::names::{annotations, labels};

use super::*;

fn pack(release: &Value) -> Vec<u8> {
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gzip.write_all(&serde_json::to_vec(release).unwrap())
        .unwrap();
    base64::engine::general_purpose::STANDARD
        .encode(gzip.finish().unwrap())
        .into_bytes()
}

fn release_json(version: i64, status: &str) -> Value {
    json!({
        "name": "db", "namespace": "ops", "version": version,
        "info": {"status": status, "last_deployed": "2026-12-01T10:00:00Z", "description": "Install complete"},
        "chart": {"metadata": {"name": "acme-db", "version": "0.3.0", "appVersion": "1.0.0"}},
        "manifest": "---\n# Source: acme-db/templates/crd.yaml\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: databases.acme.windlass.dev\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: acme-db-operator\n  namespace: ops\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: acme-db-operator\n",
    })
}

fn helm_meta(name: &str, namespace: Option<&str>, kind: &str, api_version: &str) -> Value {
    let mut meta = json!({
        "name": name, "resourceVersion": "5",
        "labels": {labels::MANAGED_BY: "Helm", "app": "acme-db"},
        "annotations": {RELEASE_NAME: "db", RELEASE_NAMESPACE: "ops"},
    });
    if let Some(ns) = namespace {
        meta["namespace"] = json!(ns);
    }
    json!({"apiVersion": api_version, "kind": kind, "metadata": meta})
}

#[test]
fn a_release_secret_decodes_and_its_manifest_names_its_objects() {
    let release = decode_release(
        "sh.helm.release.v1.db.v2",
        &pack(&release_json(2, "deployed")),
    )
    .unwrap();
    assert_eq!((release.name.as_str(), release.version), ("db", 2));
    assert_eq!(release.chart.metadata.app_version, "1.0.0");
    let objects: Vec<String> = manifest_objects("s", &release)
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        objects,
        vec![
            "CustomResourceDefinition ops/databases.acme.windlass.dev",
            "Deployment ops/acme-db-operator",
            "ServiceAccount ops/acme-db-operator",
        ]
    );
}

#[test]
fn a_damaged_release_secret_is_named_with_what_is_wrong() {
    let error = decode_release("sh.helm.release.v1.db.v1", b"not base64!").unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("Secret sh.helm.release.v1.db.v1: data.release is not base64"),
        "{error}"
    );
    let plain = base64::engine::general_purpose::STANDARD.encode(b"{}");
    let error = decode_release("s", plain.as_bytes()).unwrap_err();
    assert!(error.to_string().contains("not a gzip stream"), "{error}");
}

#[test]
fn helm_objects_are_handed_over_and_helm_forgets_the_release() {
    let release = decode_release("s", &pack(&release_json(2, "deployed"))).unwrap();
    let older = decode_release("s", &pack(&release_json(1, "superseded"))).unwrap();
    let install = HelmInstall {
        history: vec![release.clone(), older],
        release,
        live: vec![
            helm_meta(
                "databases.acme.windlass.dev",
                None,
                "CustomResourceDefinition",
                "apiextensions.k8s.io/v1",
            ),
            helm_meta("acme-db-operator", Some("ops"), "Deployment", "apps/v1"),
        ],
        missing: vec![],
        package: "acme-db".into(),
        csv: "acme-db.v1.0.0".into(),
        catalog: "acme".into(),
        channel: Some("stable".into()),
        approval: "Automatic".into(),
    };
    let adoption = plan(&install);
    assert!(adoption.blockers.is_empty(), "{:?}", adoption.blockers);
    assert_eq!(adoption.origin, "helm:ops/db");
    assert_eq!(
        adoption.subscription["spec"],
        json!({"package": "acme-db", "startingCSV": "acme-db.v1.0.0", "catalog": "acme",
               "approval": "Manual", "channel": "stable"})
    );
    let history: Value = serde_json::from_str(
        adoption.subscription["metadata"]["annotations"][annotations::ADOPTED_HISTORY]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(history[0]["revision"], json!(2));
    assert_eq!(history[1]["status"], json!("superseded"));
    assert_eq!(history[1]["chart"], json!("acme-db-0.3.0"));
    let crd = &adoption.take_over[0];
    assert_eq!(
        crd.patch["metadata"]["annotations"][annotations::CRD_ADOPT],
        json!("acme-db")
    );
    assert_eq!(
        crd.patch["metadata"]["annotations"][RELEASE_NAME],
        Value::Null
    );
    assert!(
        crd.patch["metadata"]["annotations"]
            .as_object()
            .unwrap()
            .contains_key(RELEASE_NAME)
    );
    assert_eq!(
        crd.patch["metadata"]["labels"],
        json!({labels::MANAGED_BY: null})
    );
    assert_eq!(
        crd.undo["metadata"]["labels"],
        json!({labels::MANAGED_BY: "Helm"})
    );
    assert_eq!(
        crd.undo["metadata"]["annotations"][RELEASE_NAMESPACE],
        json!("ops")
    );
    let deployment = &adoption.take_over[1];
    assert_eq!(
        deployment.patch["metadata"]["annotations"][annotations::ADOPT],
        json!("ops/db")
    );
    assert_eq!(deployment.patch["metadata"]["resourceVersion"], json!("5"));
    assert!(
        adoption.let_go[0].contains("-l owner=helm,name=db owner-"),
        "{:?}",
        adoption.let_go
    );
}

#[test]
fn a_release_that_is_not_deployed_or_has_lost_objects_blocks() {
    let release = decode_release("s", &pack(&release_json(3, "pending-upgrade"))).unwrap();
    let install = HelmInstall {
        history: vec![release.clone()],
        release,
        missing: vec![ObjectKey {
            api_version: "v1".into(),
            kind: "ServiceAccount".into(),
            namespace: Some("ops".into()),
            name: "acme-db-operator".into(),
            resource_version: String::new(),
        }],
        ..HelmInstall::default()
    };
    let blockers = plan(&install).blockers.join("\n");
    assert!(
        blockers.contains("revision 3 is \"pending-upgrade\", not deployed"),
        "{blockers}"
    );
    assert!(
        blockers.contains(
            "ServiceAccount ops/acme-db-operator, which the release's manifest names, is not there"
        ),
        "{blockers}"
    );
}
