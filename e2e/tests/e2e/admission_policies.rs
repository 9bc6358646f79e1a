//! The admission policies of `config/admission` (the chart's by default), enforced by the API
//! server with the manager stopped: nothing of windlass runs to refuse what a tenant writes,
//! so each refusal here is the API server's. Each attack is then read back as the admin: the
//! object it would have created is absent, the one it would have changed is unchanged. The
//! writes people make through `windlass approve`, `windlass rollback` and `windlass resume`
//! still go through.

use std::time::Duration;

use k8s_openapi::{
    ByteString,
    api::{
        core::v1::{Namespace, Secret},
        rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding},
    },
};
use kube::{
    Api, Client,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use serde_json::json;
use windlass_api::{
    Blueprint, ClusterServiceVersion, Package, Subscription,
    names::{labels, revision_secret, seal},
};
use windlass_testkit::{
    TestNamespace, delete_namespace_and_wait, impersonating, require_manager, unique_name,
    wait_for, wait_until_authorized,
};

use crate::manager_kills::{kill_manager, restart_manager};
use crate::tenancy::tenant;

/// Restarts the manager when dropped, so a failing assertion leaves the suite a manager.
struct ManagerStopped;

impl ManagerStopped {
    fn now() -> ManagerStopped {
        assert!(kill_manager(), "the manager was not running");
        ManagerStopped
    }
}

impl Drop for ManagerStopped {
    fn drop(&mut self) {
        restart_manager();
    }
}

/// The API server refused `result` through windlass's admission policy `policy` (not RBAC,
/// not validation), saying `says`.
#[track_caller]
fn refused_by<T: std::fmt::Debug>(result: Result<T, kube::Error>, policy: &str, says: &str) {
    match result {
        Err(kube::Error::Api(response)) => {
            assert!(
                response
                    .message
                    .contains(&format!("ValidatingAdmissionPolicy '{policy}'")),
                "refused, but not by {policy}: {response:?}"
            );
            assert!(
                response.message.contains(says),
                "{policy} refused without saying {says:?}: {}",
                response.message
            );
        }
        other => panic!("{policy} let it through: {other:?}"),
    }
}

#[track_caller]
fn accepted<T>(result: Result<T, kube::Error>, what: &str) -> T {
    result.unwrap_or_else(|e| panic!("{what} was refused: {e}"))
}

fn csv_object(namespace: &str, name: &str) -> ClusterServiceVersion {
    serde_json::from_value(json!({
        "apiVersion": "windlass.dev/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "definition": {"spec": {
                "displayName": "probe",
                "version": "1.0.0",
                "installModes": [{"type": "OwnNamespace", "supported": true}],
                "install": {"strategy": "deployment", "spec": {
                    "clusterPermissions": [{"serviceAccountName": "probe", "rules": [
                        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}
                    ]}],
                    "deployments": [],
                }},
            }},
            "targetNamespaces": [namespace],
        },
    }))
    .expect("a CSV")
}

fn blueprint_object(namespace: &str, name: &str, csv: &str) -> Blueprint {
    serde_json::from_value(json!({
        "apiVersion": "windlass.dev/v1alpha1",
        "kind": "Blueprint",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"package": "acme-db", "clusterServiceVersionName": csv},
    }))
    .expect("a Blueprint")
}

fn revision_secret_object(namespace: &str, name: &str, content: &[u8]) -> Secret {
    Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            labels: Some([(labels::REVISION.to_string(), "1".to_string())].into()),
            annotations: Some([(seal::ANNOTATION.to_string(), "v1:admin-made".to_string())].into()),
            ..Default::default()
        },
        type_: Some(revision_secret::TYPE.to_string()),
        data: Some(
            [(
                revision_secret::DATA_KEY.to_string(),
                ByteString(content.to_vec()),
            )]
            .into(),
        ),
        ..Default::default()
    }
}

/// `user` may do anything to windlass's namespaced kinds (and their status) in `namespace`, as
/// a role aggregating them into `edit` would allow: what the policies refuse, RBAC allowed.
async fn grant_windlass_kinds(admin: &Client, namespace: &str, user: &str) {
    let role: Role = serde_json::from_value(json!({
        "metadata": {"name": "windlass-everything", "namespace": namespace},
        "rules": [{"apiGroups": ["windlass.dev"], "verbs": ["*"], "resources": [
            "clusterserviceversions", "clusterserviceversions/status", "blueprints",
            "blueprints/status", "subscriptions", "subscriptions/status", "installscopes",
            "installscopes/status",
        ]}],
    }))
    .unwrap();
    Api::<Role>::namespaced(admin.clone(), namespace)
        .create(&PostParams::default(), &role)
        .await
        .expect("creating the Role");
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "windlass-everything", "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "windlass-everything"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }))
    .unwrap();
    Api::<RoleBinding>::namespaced(admin.clone(), namespace)
        .create(&PostParams::default(), &binding)
        .await
        .expect("binding the Role");
    wait_until_authorized(
        admin,
        user,
        namespace,
        ("windlass.dev", "blueprints/status", "patch"),
    )
    .await;
}

/// Given the manager stopped and a tenant whose RBAC allows every write on windlass's kinds
/// and Secrets in their namespace, when they create a CSV granting cluster-admin, forge or edit
/// a revision Secret, write any status, create a Blueprint by hand or change what a
/// Subscription decided in one, then the API server refuses each through windlass's policies
/// and the admin reads nothing created or changed; approving, rolling back to a revision of the
/// history, resuming and labelling still work, and an admin's namespace labels allow
/// hand-written Blueprints or lift the policies.
#[tokio::test]
async fn the_api_server_refuses_what_only_the_manager_writes_with_the_manager_stopped() {
    require_manager();
    let admin = windlass_testkit::client().await;
    let ns = TestNamespace::tenant(&admin, "admission").await;
    let (user, as_tenant) = tenant(&admin, &ns.name).await;
    grant_windlass_kinds(&admin, &ns.name, &user).await;
    let stopped = ManagerStopped::now();

    // What windlass would have written, made by the admin (system:masters is the exempt
    // break-glass group), so that the attacks have something to change.
    let csvs_as_admin = Api::<ClusterServiceVersion>::namespaced(admin.clone(), &ns.name);
    let blueprints_as_admin = Api::<Blueprint>::namespaced(admin.clone(), &ns.name);
    let secrets_as_admin = Api::<Secret>::namespaced(admin.clone(), &ns.name);
    accepted(
        csvs_as_admin
            .create(&PostParams::default(), &csv_object(&ns.name, "db.v1.0.0"))
            .await,
        "the admin's CSV",
    );
    accepted(
        blueprints_as_admin
            .create(
                &PostParams::default(),
                &blueprint_object(&ns.name, "db", "acme-db.v1.1.0"),
            )
            .await,
        "the admin's Blueprint",
    );
    let history = json!({"status": {"history": [
        {"revision": 2, "version": "1.1.0", "clusterServiceVersionName": "acme-db.v1.1.0", "outcome": "Completed", "reason": "Installed"},
        {"revision": 1, "version": "1.0.0", "clusterServiceVersionName": "acme-db.v1.0.0", "outcome": "Completed", "reason": "Installed"},
    ]}});
    accepted(
        blueprints_as_admin
            .patch_status("db", &PatchParams::default(), &Patch::Merge(&history))
            .await,
        "the admin's Blueprint status",
    );
    accepted(
        secrets_as_admin
            .create(
                &PostParams::default(),
                &revision_secret_object(&ns.name, "db-r1", b"revision one"),
            )
            .await,
        "the admin's revision Secret",
    );

    let csvs = Api::<ClusterServiceVersion>::namespaced(as_tenant.clone(), &ns.name);
    let blueprints = Api::<Blueprint>::namespaced(as_tenant.clone(), &ns.name);
    let secrets = Api::<Secret>::namespaced(as_tenant.clone(), &ns.name);
    let subscriptions = Api::<Subscription>::namespaced(as_tenant.clone(), &ns.name);
    let written = "windlass-manager-written";

    // CSVs: no new one, no spec change, no seal change; labels are the tenant's to set.
    refused_by(
        csvs.create(&PostParams::default(), &csv_object(&ns.name, "mine.v1.0.0"))
            .await,
        written,
        "created by the windlass manager only",
    );
    assert!(
        csvs_as_admin
            .get_opt("mine.v1.0.0")
            .await
            .unwrap()
            .is_none()
    );
    let widen = json!({"spec": {"targetNamespaces": ["kube-system"]}});
    refused_by(
        csvs.patch("db.v1.0.0", &PatchParams::default(), &Patch::Merge(&widen))
            .await,
        written,
        "written by the windlass manager only",
    );
    let reseal = json!({"metadata": {"annotations": {seal::ANNOTATION: "v1:forged"}}});
    refused_by(
        csvs.patch("db.v1.0.0", &PatchParams::default(), &Patch::Merge(&reseal))
            .await,
        written,
        "labels and annotations (the seal, ...)",
    );
    let kept = csvs_as_admin.get("db.v1.0.0").await.unwrap();
    assert_eq!(kept.spec.target_namespaces, vec![ns.name.clone()]);
    assert!(kept.metadata.annotations.unwrap_or_default().is_empty());
    let label = json!({"metadata": {"labels": {"team": "db"}}});
    accepted(
        csvs.patch("db.v1.0.0", &PatchParams::default(), &Patch::Merge(&label))
            .await,
        "labelling a CSV",
    );

    // Status of every kind the tenant can reach.
    let succeeded = json!({"status": {"phase": "Succeeded"}});
    refused_by(
        csvs.patch_status(
            "db.v1.0.0",
            &PatchParams::default(),
            &Patch::Merge(&succeeded),
        )
        .await,
        written,
        "status of windlass objects",
    );
    refused_by(
        blueprints
            .patch_status("db", &PatchParams::default(), &Patch::Merge(&history))
            .await,
        written,
        "status of windlass objects",
    );
    let subscription: Subscription = serde_json::from_value(json!({
        "apiVersion": "windlass.dev/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": "db", "namespace": ns.name},
        "spec": {"package": "acme-db", "channel": "stable"},
    }))
    .unwrap();
    accepted(
        subscriptions
            .create(&PostParams::default(), &subscription)
            .await,
        "the tenant's Subscription",
    );
    refused_by(
        subscriptions
            .patch_status(
                "db",
                &PatchParams::default(),
                &Patch::Merge(&json!({"status": {"installedVersion": "9.9.9"}})),
            )
            .await,
        written,
        "status of windlass objects",
    );
    let blueprint_now = blueprints_as_admin.get("db").await.unwrap();
    assert_eq!(blueprint_now.status.as_ref().unwrap().history.len(), 2);
    assert!(blueprint_now.status.unwrap().phase.is_none());

    // Revision Secrets: no forged one, no edit of data, type or seal.
    let revisions = "windlass-manager-secrets";
    refused_by(
        secrets
            .create(
                &PostParams::default(),
                &revision_secret_object(&ns.name, "db-r9", b"cluster-admin for me"),
            )
            .await,
        revisions,
        "created by the windlass manager only",
    );
    assert!(secrets_as_admin.get_opt("db-r9").await.unwrap().is_none());
    let tampered = json!({"data": {revision_secret::DATA_KEY: "Y2x1c3Rlci1hZG1pbg=="}});
    refused_by(
        secrets
            .patch("db-r1", &PatchParams::default(), &Patch::Merge(&tampered))
            .await,
        revisions,
        "written by the windlass manager only",
    );
    // What uninstall deletes is named in a revision's annotations: steering it is refused.
    let steer = json!({"metadata": {"annotations": {
        windlass_api::names::annotations::CRDS: "namespaces",
    }}});
    refused_by(
        secrets
            .patch("db-r1", &PatchParams::default(), &Patch::Merge(&steer))
            .await,
        revisions,
        "labels and annotations",
    );
    let relabel = json!({"metadata": {"labels": {labels::REVISION: "7"}}});
    refused_by(
        secrets
            .patch("db-r1", &PatchParams::default(), &Patch::Merge(&relabel))
            .await,
        revisions,
        "labels and annotations",
    );
    let retyped = json!({"type": "Opaque"});
    // A Secret's type is immutable to the API server too; whichever refuses, it stays.
    assert!(
        secrets
            .patch("db-r1", &PatchParams::default(), &Patch::Merge(&retyped))
            .await
            .is_err()
    );
    let stored = secrets_as_admin.get("db-r1").await.unwrap();
    assert_eq!(
        stored.metadata.annotations.clone().unwrap_or_default(),
        [(seal::ANNOTATION.to_string(), "v1:admin-made".to_string())].into()
    );
    assert_eq!(
        stored.metadata.labels.clone().unwrap_or_default()[labels::REVISION],
        "1"
    );
    assert_eq!(stored.type_.as_deref(), Some(revision_secret::TYPE));
    assert_eq!(
        stored.data.unwrap()[revision_secret::DATA_KEY].0,
        b"revision one"
    );
    accepted(
        secrets
            .patch("db-r1", &PatchParams::default(), &Patch::Merge(&label))
            .await,
        "labelling a revision Secret",
    );
    // Secrets of other types stay the tenant's.
    let own: Secret = serde_json::from_value(json!({
        "metadata": {"name": "app-password", "namespace": ns.name},
        "stringData": {"password": "hunter2"},
    }))
    .unwrap();
    accepted(
        secrets.create(&PostParams::default(), &own).await,
        "an Opaque Secret",
    );

    // Blueprints: none by hand, no change of what the Subscription decided.
    let blueprint_policy = "windlass-blueprints";
    refused_by(
        blueprints
            .create(
                &PostParams::default(),
                &blueprint_object(&ns.name, "mine", "acme-db.v1.1.0"),
            )
            .await,
        blueprint_policy,
        "written by the Subscription controller",
    );
    assert!(blueprints_as_admin.get_opt("mine").await.unwrap().is_none());
    for (field, value) in [
        ("package", json!("other-db")),
        (
            "bundle",
            json!({
                "package": "acme-db", "clusterServiceVersionName": "acme-db.v1.1.0",
                "version": "1.1.0", "catalog": "builtin",
                "digest": "sha256:0000000000000000000000000000000000000000000000000000000000000000",
            }),
        ),
        ("targetNamespaces", json!(["kube-system"])),
        ("automaticRollback", json!(false)),
    ] {
        let patch = json!({"spec": {field: value}});
        refused_by(
            blueprints
                .patch("db", &PatchParams::default(), &Patch::Merge(&patch))
                .await,
            blueprint_policy,
            &format!("spec.{field} of a Blueprint is written by its Subscription"),
        );
    }
    let upgrade = json!({"spec": {"clusterServiceVersionName": "acme-db.v9.0.0"}});
    refused_by(
        blueprints
            .patch("db", &PatchParams::default(), &Patch::Merge(&upgrade))
            .await,
        blueprint_policy,
        "a revision in status.history",
    );
    let unchanged = blueprints_as_admin.get("db").await.unwrap();
    assert_eq!(unchanged.spec.package, "acme-db");
    assert_eq!(
        unchanged.spec.cluster_service_version_name,
        "acme-db.v1.1.0"
    );
    assert!(unchanged.spec.bundle.is_none());
    assert!(unchanged.spec.target_namespaces.is_none());

    // What people do through windlass approve, rollback and resume.
    let approve = json!({"spec": {"approved": true, "approvedPlan": "sha256:1234"}});
    accepted(
        blueprints
            .patch("db", &PatchParams::default(), &Patch::Merge(&approve))
            .await,
        "approving",
    );
    let rollback = json!({
        "apiVersion": "windlass.dev/v1alpha1", "kind": "Blueprint",
        "spec": {"clusterServiceVersionName": "acme-db.v1.0.0", "force": true},
    });
    accepted(
        blueprints
            .patch(
                "db",
                &PatchParams::apply(windlass_api::names::CLI_FIELD_MANAGER).force(),
                &Patch::Apply(&rollback),
            )
            .await,
        "rolling back to a revision of the history",
    );
    let resume = json!({"metadata": {"annotations": {"windlass.dev/resume": "true"}}});
    accepted(
        blueprints
            .patch("db", &PatchParams::default(), &Patch::Merge(&resume))
            .await,
        "resuming",
    );
    let decided = blueprints_as_admin.get("db").await.unwrap();
    assert!(decided.spec.approved);
    assert_eq!(decided.spec.cluster_service_version_name, "acme-db.v1.0.0");

    // An admin allows hand-written Blueprints in the namespace: the API server admits them
    // (the Blueprint controller still decides as a Subscription would).
    let namespaces = Api::<Namespace>::all(admin.clone());
    let allow = json!({"metadata": {"labels": {
        labels::HAND_WRITTEN_BLUEPRINTS: labels::HAND_WRITTEN_BLUEPRINTS_ALLOWED,
    }}});
    namespaces
        .patch(&ns.name, &PatchParams::default(), &Patch::Merge(&allow))
        .await
        .unwrap();
    windlass_testkit::wait_until(
        "a hand-written Blueprint to be admitted",
        Duration::from_secs(30),
        || async {
            blueprints
                .create(
                    &PostParams::default(),
                    &blueprint_object(&ns.name, "mine", "acme-db.v1.1.0"),
                )
                .await
                .is_ok()
        },
    )
    .await;
    // The tenant cannot give themselves that label: namespaces are the admin's.
    let tenant_namespaces = Api::<Namespace>::all(as_tenant.clone());
    let lift = json!({"metadata": {"labels": {
        labels::ADMISSION_POLICIES: labels::ADMISSION_POLICIES_DISABLED,
    }}});
    assert!(
        tenant_namespaces
            .patch(&ns.name, &PatchParams::default(), &Patch::Merge(&lift))
            .await
            .is_err()
    );

    // An admin lifts the policies in the namespace: only windlass's own checks remain there.
    namespaces
        .patch(&ns.name, &PatchParams::default(), &Patch::Merge(&lift))
        .await
        .unwrap();
    windlass_testkit::wait_until(
        "the policies to be lifted in the namespace",
        Duration::from_secs(30),
        || async {
            csvs.create(&PostParams::default(), &csv_object(&ns.name, "mine.v1.0.0"))
                .await
                .is_ok()
        },
    )
    .await;

    // Nothing runs in the namespace when the manager comes back: it would refuse the
    // hand-made objects, but they are not this test's subject.
    delete_namespace_and_wait(&admin, &ns.name, Duration::from_secs(120)).await;
    drop(stopped);
}

/// Given a user whom a ClusterRole allows to write Package views (cluster-scoped, so no
/// namespace label can lift the policies for them), when they create one or change one's spec
/// or status, then the API server refuses it and the admin reads the view unchanged.
#[tokio::test]
async fn package_views_are_the_managers_whatever_rbac_allows() {
    require_manager();
    let admin = windlass_testkit::client().await;
    let user = unique_name("package-writer");
    let role_name = unique_name("package-writer");
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": role_name},
        "rules": [{"apiGroups": ["windlass.dev"], "resources": ["packages", "packages/status"], "verbs": ["*"]}],
    }))
    .unwrap();
    Api::<ClusterRole>::all(admin.clone())
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": role_name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    wait_until_authorized(&admin, &user, "", ("windlass.dev", "packages", "create")).await;

    let as_writer = impersonating(&user).await;
    let packages = Api::<Package>::all(as_writer);
    let name = unique_name("forged-package");
    let forged = json!({
        "apiVersion": "windlass.dev/v1alpha1",
        "kind": "Package",
        "metadata": {"name": name},
        "spec": {},
    });
    let forged: Package = serde_json::from_value(forged).unwrap();
    refused_by(
        packages.create(&PostParams::default(), &forged).await,
        "windlass-manager-written",
        "created by the windlass manager only",
    );
    assert!(
        Api::<Package>::all(admin.clone())
            .get_opt(&name)
            .await
            .unwrap()
            .is_none()
    );
    // A view the manager wrote (the built-in catalog's): its status stays.
    // The suite's first module: the manager may not have written the built-in catalog's views yet.
    let all_views = Api::<Package>::all(admin.clone());
    let view = wait_for(
        "a Package view of the built-in catalog with its status",
        Duration::from_secs(120),
        || {
            let all_views = all_views.clone();
            async move {
                let listed = all_views
                    .list(&Default::default())
                    .await
                    .map_err(|error| error.to_string())?;
                listed
                    .items
                    .into_iter()
                    .find(|view| view.status.is_some())
                    .ok_or_else(|| "no Package view with a status".to_string())
            }
        },
    )
    .await;
    {
        let view_name = view.metadata.name.clone().unwrap();
        let before = serde_json::to_value(&view.status).unwrap();
        refused_by(
            packages
                .patch_status(
                    &view_name,
                    &PatchParams::default(),
                    &Patch::Merge(&json!({"status": {"catalog": "forged"}})),
                )
                .await,
            "windlass-manager-written",
            "status of windlass objects",
        );
        let after = Api::<Package>::all(admin.clone())
            .get(&view_name)
            .await
            .unwrap();
        assert_eq!(serde_json::to_value(&after.status).unwrap(), before);
    }
    Api::<ClusterRoleBinding>::all(admin.clone())
        .delete(&role_name, &DeleteParams::default())
        .await
        .unwrap();
    Api::<ClusterRole>::all(admin)
        .delete(&role_name, &DeleteParams::default())
        .await
        .unwrap();
}
