//! One smallest object per removed API: what it becomes, or why it is refused.

use serde_json::{Value, json};

use super::{convert, is_removed_api};
use crate::crd::ConvertError;

fn ok(object: Value) -> Value {
    let c = convert(&object, "manifests/x.yaml").expect("converts");
    assert!(!c.changes.is_empty());
    let again = convert(&c.object, "manifests/x.yaml").expect("converts again");
    assert_eq!(again.object, c.object, "not idempotent");
    assert!(again.changes.is_empty(), "{:?}", again.changes);
    assert!(!is_removed_api(&c.object));
    c.object
}

fn refused(object: Value) -> (String, String) {
    match convert(&object, "manifests/x.yaml").expect_err("refused") {
        ConvertError::Manifest { file, path, .. } => (file, path),
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn same_field_moves_only_change_the_api_version() {
    let table = [
        (
            "rbac.authorization.k8s.io/v1beta1",
            "ClusterRole",
            "rbac.authorization.k8s.io/v1",
        ),
        (
            "rbac.authorization.k8s.io/v1beta1",
            "RoleBinding",
            "rbac.authorization.k8s.io/v1",
        ),
        (
            "scheduling.k8s.io/v1beta1",
            "PriorityClass",
            "scheduling.k8s.io/v1",
        ),
        ("batch/v1beta1", "CronJob", "batch/v1"),
    ];
    for (from, kind, to) in table {
        let object =
            json!({"apiVersion": from, "kind": kind, "metadata": {"name": "a"}, "rules": []});
        let mut want = object.clone();
        want["apiVersion"] = json!(to);
        assert_eq!(ok(object), want, "{from} {kind}");
    }
}

#[test]
fn current_apis_are_untouched() {
    let object = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"}});
    let c = convert(&object, "f").unwrap();
    assert_eq!(c.object, object);
    assert!(c.changes.is_empty());
}

#[test]
fn pod_disruption_budget_moves_unless_its_selector_is_empty() {
    let pdb = |selector: Value| {
        json!({"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "a"}, "spec": {"minAvailable": 1, "selector": selector}})
    };
    let got = ok(pdb(json!({"matchLabels": {"app": "x"}})));
    assert_eq!(got["apiVersion"], "policy/v1");
    assert_eq!(
        refused(pdb(json!({}))),
        ("manifests/x.yaml".to_string(), "spec.selector".to_string())
    );
}

#[test]
fn webhooks_keep_their_v1beta1_defaults() {
    let got = ok(
        json!({"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "a"}, "webhooks": [{"name": "v.example.com", "sideEffects": "None",
        "clientConfig": {"service": {"namespace": "n", "name": "s"}}}]}),
    );
    assert_eq!(
        got,
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "a"}, "webhooks": [{"name": "v.example.com", "sideEffects": "None",
        "clientConfig": {"service": {"namespace": "n", "name": "s"}},
        "admissionReviewVersions": ["v1beta1"], "failurePolicy": "Ignore", "matchPolicy": "Exact", "timeoutSeconds": 30}]})
    );
}

#[test]
fn webhooks_with_unknown_side_effects_are_refused() {
    for side_effects in [json!(null), json!("Unknown"), json!("Some")] {
        let mut hook = json!({"name": "v.example.com"});
        if !side_effects.is_null() {
            hook["sideEffects"] = side_effects;
        }
        let object = json!({"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "a"}, "webhooks": [hook]});
        assert_eq!(refused(object).1, "webhooks[0].sideEffects");
    }
}

#[test]
fn ingress_backends_take_the_v1_shape() {
    let got = ok(
        json!({"apiVersion": "extensions/v1beta1", "kind": "Ingress", "metadata": {"name": "a"}, "spec": {
        "backend": {"serviceName": "web", "servicePort": 80},
        "rules": [{"host": "x.example.com", "http": {"paths": [{"path": "/", "backend": {"serviceName": "web", "servicePort": "http"}}]}}]}}),
    );
    assert_eq!(
        got,
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "a"}, "spec": {
        "defaultBackend": {"service": {"name": "web", "port": {"number": 80}}},
        "rules": [{"host": "x.example.com", "http": {"paths": [{"path": "/", "backend": {"service": {"name": "web", "port": {"name": "http"}}},
            "pathType": "ImplementationSpecific"}]}}]}})
    );
}

#[test]
fn removed_apis_without_a_mechanical_move_are_refused_naming_file_and_kind() {
    let object = json!({"apiVersion": "extensions/v1beta1", "kind": "Deployment", "metadata": {"name": "op"}});
    let err = convert(&object, "manifests/op.yaml").expect_err("refused");
    assert_eq!(
        err.to_string().split(':').take(2).collect::<Vec<_>>(),
        vec!["manifests/op.yaml", " Deployment op"]
    );
    let psp = json!({"apiVersion": "policy/v1beta1", "kind": "PodSecurityPolicy", "metadata": {"name": "p"}});
    assert_eq!(refused(psp).1, "apiVersion");
}

#[test]
fn crds_go_through_the_crd_conversion() {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"}, "spec": {"group": "example.com", "version": "v1", "scope": "Namespaced",
        "names": {"kind": "Widget", "plural": "widgets"}}});
    assert_eq!(ok(crd)["apiVersion"], "apiextensions.k8s.io/v1");
}

#[test]
fn a_core_kind_without_api_version_gets_v1_and_the_change_is_recorded() {
    for kind in ["Service", "ConfigMap", "Secret", "ServiceAccount"] {
        let object = json!({"kind": kind, "metadata": {"name": "a"}, "spec": {"ports": []}});
        let converted = convert(&object, "manifests/a.yaml").expect("repaired");
        let mut want = json!({"apiVersion": "v1"});
        want.as_object_mut()
            .unwrap()
            .extend(object.as_object().unwrap().clone());
        assert_eq!(converted.object, want, "{kind}");
        assert_eq!(
            converted.object.as_object().unwrap().keys().next().unwrap(),
            "apiVersion"
        );
        let [change] = converted.changes.as_slice() else {
            panic!("{:?}", converted.changes)
        };
        assert_eq!(
            (
                change.crd.as_str(),
                change.path.as_str(),
                change.what.as_str()
            ),
            (format!("{kind}/a").as_str(), "apiVersion", "set to v1")
        );
        let again = convert(&converted.object, "manifests/a.yaml").unwrap();
        assert!(again.changes.is_empty());
    }
}

#[test]
fn a_kind_without_api_version_that_could_mean_two_things_is_refused_naming_the_file() {
    let deployment = json!({"kind": "Deployment", "metadata": {"name": "op"}});
    assert_eq!(
        refused(deployment),
        ("manifests/x.yaml".to_string(), "apiVersion".to_string())
    );
    // A bundle that defines its own Service kind makes a bare Service ambiguous.
    let crd = crate::load::Manifest {
        file: "manifests/crd.yaml".into(),
        object: json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "services.serving.example.com"},
            "spec": {"group": "serving.example.com", "scope": "Namespaced",
                "names": {"kind": "Service", "plural": "services"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object"}}}]}}),
    };
    let service = crate::load::Manifest {
        file: "manifests/svc.yaml".into(),
        object: json!({"kind": "Service", "metadata": {"name": "web"}}),
    };
    let err = super::convert_manifests(&[crd, service]).expect_err("ambiguous");
    let text = err.to_string();
    assert!(
        text.starts_with("manifests/svc.yaml") && text.contains("defines a Service of its own"),
        "{text}"
    );
}

#[test]
fn bundle_manifests_carry_the_repair_in_their_change_list() {
    let manifests = [crate::load::Manifest {
        file: "manifests/svc.yaml".into(),
        object: json!({"kind": "Service", "metadata": {"name": "web"}}),
    }];
    let converted = super::convert_manifests(&manifests).unwrap();
    assert_eq!(converted.objects[0].api_version(), "v1");
    assert_eq!(converted.changes.len(), 1);
    assert_eq!(converted.changes[0].0, "manifests/svc.yaml");
}
