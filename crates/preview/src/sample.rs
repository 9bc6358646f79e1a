//! A plan to test the short and readable forms with.

use serde_json::json;

use crate::binding::{Binding, object_hash};
use crate::model::{
    CrdAction, CrdChange, CrdFinding, CrdVerdict, Drift, FORMAT, FieldChange, Grant, ImageChange,
    ObjectAction, ObjectChange, ObjectRef, Plan, PlanKind, RbacDelta, Release,
};

fn object(kind: &str, name: &str, action: ObjectAction) -> ObjectChange {
    ObjectChange {
        object: ObjectRef {
            api_version: "v1".into(),
            kind: kind.into(),
            namespace: Some("team-a".into()),
            name: name.into(),
        },
        action,
        by: "system:serviceaccount:team-a:windlass-installer".into(),
        from_csv: false,
        fields: Vec::new(),
        fields_left_out: 0,
        refused: None,
        note: None,
    }
}

pub(crate) fn plan() -> Plan {
    let mut binding = Binding {
        package: "acme-db".into(),
        cluster_service_version_name: "acme-db.v1.1.0".into(),
        version: "1.1.0".into(),
        bundle_digest: Some("sha256:abcd".into()),
        identity: "system:serviceaccount:team-a:windlass-installer".into(),
        target_namespaces: vec!["team-a".into()],
        config: object_hash(&json!({})),
        crds: "Apply".into(),
        objects: Vec::new(),
    };
    binding
        .bind(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}}));
    let mut deployment = object("Deployment", "acme-db-operator", ObjectAction::Change);
    deployment.from_csv = true;
    deployment.fields = vec![FieldChange {
        path: "spec.template.spec.containers[name=operator].image".into(),
        old: Some(json!("pause:3.9")),
        new: Some(json!("pause:3.10")),
    }];
    let mut old_csv = object(
        "ClusterServiceVersion",
        "acme-db.v1.0.1",
        ObjectAction::Delete,
    );
    old_csv.note = Some("once acme-db.v1.1.0 Succeeded".into());
    let mut settings = object("ConfigMap", "settings", ObjectAction::Change);
    settings.refused = Some("forbidden".into());
    Plan {
        format: FORMAT,
        blueprint: "team-a/db".into(),
        revision: 3,
        package: "acme-db".into(),
        kind: PlanKind::Upgrade,
        from: Some(Release {
            version: "1.0.1".into(),
            cluster_service_version_name: "acme-db.v1.0.1".into(),
        }),
        to: Release {
            version: "1.1.0".into(),
            cluster_service_version_name: "acme-db.v1.1.0".into(),
        },
        digest: binding.digest(),
        binding,
        reasons: vec![
            "upgrade from 1.0.1 to 1.1.0".into(),
            "acme-db.v1.1.0 1.1.0 from channel stable of catalog builtin".into(),
        ],
        identity: "system:serviceaccount:team-a:windlass-installer".into(),
        objects: vec![
            object(
                "ServiceAccount",
                "acme-db-operator",
                ObjectAction::Unchanged,
            ),
            deployment,
            object(
                "ClusterServiceVersion",
                "acme-db.v1.1.0",
                ObjectAction::Create,
            ),
            old_csv,
            settings,
        ],
        rbac: RbacDelta {
            gained: vec![Grant {
                subject: "team-a/acme-db-operator".into(),
                namespace: None,
                api_group: String::new(),
                resource: "namespaces".into(),
                verb: "list".into(),
                resource_name: None,
            }],
            lost: Vec::new(),
        },
        images: vec![ImageChange {
            place: "Deployment acme-db-operator, container operator".into(),
            old: Some("pause:3.9".into()),
            new: Some("pause:3.10".into()),
        }],
        crds: vec![CrdChange {
            name: "databases.acme.windlass.dev".into(),
            action: CrdAction::Change,
            verdict: CrdVerdict::Warns,
            findings: vec![CrdFinding {
                reason: "ServedVersionRemoved".into(),
                verdict: CrdVerdict::Warns,
                ratcheted: false,
                message: "v1beta1 is no longer served".into(),
            }],
        }],
        drift: vec![Drift {
            object: ObjectRef {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                namespace: Some("team-a".into()),
                name: "acme-db-operator".into(),
            },
            fields: vec![FieldChange {
                path: "spec.replicas".into(),
                old: Some(json!(1)),
                new: Some(json!(3)),
            }],
            editors: vec!["kubectl-scale".into()],
        }],
        operands: None,
        changes: Vec::new(),
        notes: Vec::new(),
        computed_at: "2026-03-16T09:00:00Z".into(),
    }
}
