use super::*;
use serde_json::json;

fn sample() -> Value {
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": "etcdoperator.v0.9.4", "namespace": "placeholder",
            "annotations": {"olm.skipRange": ">=0.9.0 <0.9.4", "capabilities": "Full Lifecycle"}},
        "spec": {
            "version": "0.9.4", "replaces": "etcdoperator.v0.9.2", "skips": null,
            "minKubeVersion": "1.11.0", "x-custom": {"kept": true},
            "installModes": [{"type": "OwnNamespace", "supported": true}, {"type": "AllNamespaces", "supported": "false"}],
            "customresourcedefinitions": {"owned": [{"name": "etcdclusters.etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdCluster", "specDescriptors": []}], "required": null},
            "install": {"strategy": "deployment", "spec": {
                "deployments": [{"name": "etcd-operator", "spec": {"template": {"spec": {"containers": [{"image": "quay.io/coreos/etcd-operator@sha256:abc"}]}}}}],
                "permissions": [{"serviceAccountName": "etcd-operator", "rules": [{"apiGroups": [""], "verbs": ["*"]}]}]}},
            "relatedImages": [{"name": "etcd", "image": "quay.io/coreos/etcd-operator@sha256:abc"}]
        },
        "status": {"phase": "Succeeded"}
    })
}

#[test]
fn reads_the_typed_fields() {
    let csv = ClusterServiceVersion::from_value(&sample()).unwrap();
    assert_eq!(csv.name(), "etcdoperator.v0.9.4");
    assert_eq!(csv.version().unwrap(), semver::Version::new(0, 9, 4));
    assert_eq!(csv.skip_range(), Some(">=0.9.0 <0.9.4"));
    assert_eq!(csv.owned_crds()[0].group(), "etcd.database.coreos.com");
    assert!(csv.required_crds().is_empty());
    assert!(!csv.spec.install_modes[1].supported);
    assert_eq!(
        csv.deployments()[0].images(),
        vec!["quay.io/coreos/etcd-operator@sha256:abc"]
    );
    assert_eq!(
        csv.spec
            .install
            .as_ref()
            .unwrap()
            .spec
            .as_ref()
            .unwrap()
            .permissions[0]
            .service_account_name,
        "etcd-operator"
    );
}

#[test]
fn unknown_fields_survive_a_round_trip() {
    let csv = ClusterServiceVersion::from_value(&sample()).unwrap();
    let back = serde_json::to_value(&csv).unwrap();
    assert_eq!(back["spec"]["x-custom"], json!({"kept": true}));
    assert_eq!(back["status"], json!({"phase": "Succeeded"}));
    assert_eq!(
        back["spec"]["customresourcedefinitions"]["owned"][0]["specDescriptors"],
        json!([])
    );
    // Reading the output again gives the same model.
    assert_eq!(ClusterServiceVersion::from_value(&back).unwrap(), csv);
}

#[test]
fn type_errors_name_the_field() {
    let mut bad = sample();
    bad["spec"]["install"]["spec"]["deployments"] = json!({"not": "a list"});
    let error = ClusterServiceVersion::from_value(&bad).unwrap_err();
    assert_eq!(error.field, "spec.install.spec.deployments");
}

#[test]
fn versions_must_be_semver() {
    for (raw, ok) in [
        ("1.2.3", true),
        ("v1.2.3", true),
        ("1.2", false),
        ("latest", false),
        ("1.0.0-rc.1", true),
    ] {
        let csv = ClusterServiceVersion {
            spec: CsvSpec {
                version: Some(raw.into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(csv.version().is_ok(), ok, "{raw}");
    }
    let unquoted = ClusterServiceVersion::from_value(&json!({"spec": {"version": 1.5}})).unwrap();
    assert_eq!(unquoted.spec.version.as_deref(), Some("1.5"));
    assert!(unquoted.version().is_err());
}
