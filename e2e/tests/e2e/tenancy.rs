//! Tenants attacking windlass from their own namespace, as real users of the API server (the
//! cluster admin impersonating a user bound to the `edit` ClusterRole in one namespace): what
//! they can write there must not make windlass create or delete anything they could not.

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::{
    api::{
        core::v1::Secret,
        rbac::v1::{ClusterRoleBinding, RoleBinding},
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use windlass_api::{
    Blueprint, ConditionStatus,
    blueprint::BlueprintPhase,
    names::{annotations, conditions, labels, reasons, revision_secret},
};
use windlass_testkit::{
    TestNamespace, WITHOUT_ADMISSION_POLICIES, apply_crd, impersonating,
    lifecycle::{condition, is_at, subscribe, wait_blueprint},
    require_manager, unique_name, wait_until, wait_until_authorized,
};

const TIMEOUT: Duration = Duration::from_secs(180);

/// A user with the `edit` role in `namespace` and nothing else, and a client acting as them.
pub(crate) async fn tenant(admin: &Client, namespace: &str) -> (String, Client) {
    let user = format!("tenant-{namespace}");
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": { "name": "tenant-edit", "namespace": namespace },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit" },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user }],
    }))
    .unwrap();
    Api::<RoleBinding>::namespaced(admin.clone(), namespace)
        .create(&PostParams::default(), &binding)
        .await
        .expect("binding edit to the tenant");
    wait_until_authorized(admin, &user, namespace, ("", "secrets", "update")).await;
    let client = impersonating(&user).await;
    (user, client)
}

/// `spec` subscribed to as `name` in `namespace` by the admin, and its Blueprint once
/// `version` Succeeded.
async fn installed(admin: &Client, namespace: &str, name: &str, spec: Value, version: &str) {
    subscribe(admin, namespace, name, spec).await;
    wait_blueprint(
        admin,
        namespace,
        name,
        &format!("{version} Succeeded"),
        TIMEOUT,
        |b| is_at(b, BlueprintPhase::Succeeded, version),
    )
    .await;
}

/// Makes the Blueprint reconcile now rather than at its next resync, as any change would.
async fn nudge(admin: &Client, namespace: &str) {
    let patch = json!({"metadata": {"annotations": {"e2e.windlass.dev/nudge": unique_name("n")}}});
    Api::<Blueprint>::namespaced(admin.clone(), namespace)
        .patch("db", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("annotating the Blueprint");
}

fn blueprint_condition<'a>(
    blueprint: &'a Blueprint,
    type_: &str,
) -> Option<&'a windlass_api::Condition> {
    condition(&blueprint.status.as_ref()?.conditions, type_)
}

fn untrusted(blueprint: &Blueprint) -> bool {
    blueprint_condition(blueprint, conditions::blueprint::CONTENT_TRUSTED).is_some_and(|c| {
        c.status == ConditionStatus::False && c.reason == reasons::revision::TAMPERED
    })
}

/// Given acme-db installed in a tenant's namespace, when the tenant adds a ClusterRoleBinding
/// making themselves cluster-admin to the stored revision (which `edit` lets them write), then
/// windlass refuses the revision with a condition naming the Secret and applies nothing of it;
/// deleting the Secret makes windlass store it again from the catalog.
#[tokio::test]
async fn a_revision_edited_by_a_tenant_is_refused_and_nothing_of_it_applied() {
    require_manager();
    let admin = windlass_testkit::client().await;
    // Windlass's own checks are tried: the admission policies, which refuse the edit first
    // (admission_policies tests that), are lifted here.
    let ns =
        TestNamespace::create_with_labels(&admin, "tamper", &[WITHOUT_ADMISSION_POLICIES]).await;
    let (user, as_tenant) = tenant(&admin, &ns.name).await;
    let spec = json!({
        "package": "acme-db",
        "channel": "stable",
        "versionRange": "1.0.0",
        "targetNamespaces": [ns.name],
    });
    installed(&admin, &ns.name, "db", spec, "1.0.0").await;

    let escalation = unique_name("tenant-escalation");
    let secrets = Api::<Secret>::namespaced(as_tenant.clone(), &ns.name);
    let mut secret = secrets
        .get("db.r1")
        .await
        .expect("edit reads Secrets in its namespace");
    let data = &secret.data.as_ref().unwrap()[revision_secret::DATA_KEY].0;
    let mut content: Value = windlass_revisions::decode(data).expect("a revision document");
    content["manifests"]
        .as_array_mut()
        .unwrap()
        .push(json!({"file": "manifests/escalation.yaml", "object": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": { "name": escalation },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin" },
            "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user }],
        }}));
    secret.data.as_mut().unwrap().insert(
        revision_secret::DATA_KEY.to_string(),
        k8s_openapi::ByteString(windlass_revisions::encode(&content).unwrap()),
    );
    secrets
        .replace("db.r1", &PostParams::default(), &secret)
        .await
        .expect("edit may write Secrets in its namespace: the attack is real");

    nudge(&admin, &ns.name).await;
    let refused = wait_blueprint(
        &admin,
        &ns.name,
        "db",
        "ContentTrusted False",
        TIMEOUT,
        |b| {
            untrusted(b)
                && b.status
                    .as_ref()
                    .and_then(|s| s.observed_generation)
                    .is_some()
        },
    )
    .await;
    let message = &blueprint_condition(&refused, conditions::blueprint::CONTENT_TRUSTED)
        .unwrap()
        .message;
    assert!(
        message.contains(&format!("{}/db.r1", ns.name)),
        "the condition names the Secret: {message}"
    );
    // The reconcile that set the condition is the one that would have applied the binding.
    let bindings = Api::<ClusterRoleBinding>::all(admin.clone());
    assert!(
        bindings.get_opt(&escalation).await.unwrap().is_none(),
        "the tenant's ClusterRoleBinding must not exist"
    );
    let events = windlass_testkit::kubectl()
        .args(["get", "events", "-n", &ns.name, "-o", "json"])
        .output()
        .expect("kubectl get events");
    assert!(
        String::from_utf8_lossy(&events.stdout).contains(reasons::revision::TAMPERED),
        "a Warning Event says the revision was refused"
    );

    // The way out: the admin deletes the Secret, windlass stores revision 1 from the catalog.
    Api::<Secret>::namespaced(admin.clone(), &ns.name)
        .delete("db.r1", &DeleteParams::default())
        .await
        .expect("deleting the tampered Secret");
    nudge(&admin, &ns.name).await;
    wait_blueprint(&admin, &ns.name, "db", "trusted again", TIMEOUT, |b| {
        !untrusted(b) && is_at(b, BlueprintPhase::Succeeded, "1.0.0")
    })
    .await;
    let stored = Api::<Secret>::namespaced(admin.clone(), &ns.name)
        .get("db.r1")
        .await
        .expect("revision 1 stored again");
    let content: Value =
        windlass_revisions::decode(&stored.data.unwrap()[revision_secret::DATA_KEY].0).unwrap();
    assert!(
        !content.to_string().contains(&escalation),
        "the stored revision is the catalog's, not the tenant's"
    );
    assert!(bindings.get_opt(&escalation).await.unwrap().is_none());
}

/// Given acme-gateway installed with `crdDeletionPolicy: Delete`, when the tenant names another
/// CRD (one an admin installed) in the revision Secret's CRDs annotation, then uninstalling
/// deletes acme-gateway's own CRD at most, never the admin's.
#[tokio::test]
async fn a_tenant_cannot_steer_uninstall_into_deleting_a_crd_it_does_not_own() {
    require_manager();
    let admin = windlass_testkit::client().await;
    // Windlass's own checks are tried: the admission policies, which refuse the edit first
    // (admission_policies tests that), are lifted here.
    let ns =
        TestNamespace::create_with_labels(&admin, "steer", &[WITHOUT_ADMISSION_POLICIES]).await;
    let (_, as_tenant) = tenant(&admin, &ns.name).await;
    let plural = unique_name("victims").replace('-', "");
    let group = "tenancy.e2e.windlass.dev";
    let victim = apply_crd(
        &admin,
        &json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": { "name": format!("{plural}.{group}") },
            "spec": {
                "group": group,
                "scope": "Namespaced",
                // A kind of its own too: two CRDs of one group may not share a kind, and the
                // victims of earlier runs stay (that is the point).
                "names": { "plural": plural, "singular": plural, "kind": format!("Victim{}", &plural["victims".len()..]) },
                "versions": [{ "name": "v1", "served": true, "storage": true,
                    "schema": { "openAPIV3Schema": { "type": "object" } } }],
            },
        }),
    )
    .await;
    // acme-gateway's CRD is used by no other test running beside this one.
    let spec = json!({"package": "acme-gateway", "crdDeletionPolicy": "Delete"});
    installed(&admin, &ns.name, "gw", spec, "0.1.0").await;

    let patch = json!({"metadata": {"annotations": {annotations::CRDS: victim}}});
    Api::<Secret>::namespaced(as_tenant, &ns.name)
        .patch("gw.r1", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("edit may annotate Secrets in its namespace: the attack is real");

    Api::<windlass_api::Subscription>::namespaced(admin.clone(), &ns.name)
        .delete("gw", &DeleteParams::default())
        .await
        .expect("deleting the Subscription");
    // The Blueprint is gone only after its cleanup ran: the moment the CRD would have gone.
    let blueprints = Api::<Blueprint>::namespaced(admin.clone(), &ns.name);
    wait_until("the Blueprint's cleanup to finish", TIMEOUT, || async {
        blueprints.get_opt("gw").await.unwrap().is_none()
    })
    .await;
    assert!(
        Api::<CustomResourceDefinition>::all(admin.clone())
            .get_opt(&victim)
            .await
            .unwrap()
            .is_some_and(|crd| crd.metadata.deletion_timestamp.is_none()),
        "the admin's CRD {victim} must survive"
    );
}

fn not_permitted(blueprint: &Blueprint, reason: &str) -> bool {
    blueprint_condition(blueprint, conditions::blueprint::INSTALL_PERMITTED)
        .is_some_and(|c| c.status == ConditionStatus::False && c.reason == reason)
}

/// Waits for Blueprint `name` to be refused with `reason`; the refusal's message, and the
/// Blueprint held in Pending (not failed, so nothing rolls back).
pub(crate) async fn refused(admin: &Client, namespace: &str, name: &str, reason: &str) -> String {
    let blueprint = wait_blueprint(
        admin,
        namespace,
        name,
        "InstallPermitted False",
        TIMEOUT,
        |b| not_permitted(b, reason),
    )
    .await;
    assert_eq!(
        blueprint.status.as_ref().and_then(|s| s.phase),
        Some(BlueprintPhase::Pending),
        "{name}: held, not failed"
    );
    blueprint_condition(&blueprint, conditions::blueprint::INSTALL_PERMITTED)
        .unwrap()
        .message
        .clone()
}

/// Lets the tenant write Subscriptions in their namespace, as a platform team that offers
/// self-service does.
async fn may_subscribe(admin: &Client, namespace: &str, user: &str) {
    let role: k8s_openapi::api::rbac::v1::Role = serde_json::from_value(json!({
        "metadata": { "name": "subscriber", "namespace": namespace },
        "rules": [{ "apiGroups": ["windlass.dev"], "resources": ["subscriptions"], "verbs": ["*"] }],
    }))
    .unwrap();
    Api::<k8s_openapi::api::rbac::v1::Role>::namespaced(admin.clone(), namespace)
        .create(&PostParams::default(), &role)
        .await
        .expect("creating the subscriber Role");
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": { "name": "subscriber", "namespace": namespace },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "subscriber" },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user }],
    }))
    .unwrap();
    Api::<RoleBinding>::namespaced(admin.clone(), namespace)
        .create(&PostParams::default(), &binding)
        .await
        .expect("binding the subscriber Role");
    wait_until_authorized(
        admin,
        user,
        namespace,
        ("windlass.dev", "subscriptions", "create"),
    )
    .await;
}

/// The admin's client, a tenant's namespace no policy covers, and a client as the tenant, who
/// may edit there and write Subscriptions.
pub(crate) async fn self_service(prefix: &str) -> (Client, TestNamespace, Client) {
    require_manager();
    let admin = windlass_testkit::client().await;
    let ns = TestNamespace::tenant(&admin, prefix).await;
    let (user, as_tenant) = tenant(&admin, &ns.name).await;
    may_subscribe(&admin, &ns.name, &user).await;
    (admin, ns, as_tenant)
}

/// Other tests install acme-db's bundles under packages of their own, which then manage its
/// CRD; a cluster admin hands it back to acme-db, as the refusal message says to do.
pub(crate) async fn hand_shared_crds_to_acme_db(admin: &Client) {
    let patch = json!({"metadata": {"annotations": {annotations::CRD_ADOPT: "acme-db"}}});
    let crds = Api::<CustomResourceDefinition>::all(admin.clone());
    match crds
        .patch(
            "databases.acme.windlass.dev",
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(_) => {}
        // Not installed yet: acme-db will create it.
        Err(kube::Error::Api(status)) if status.code == 404 => {}
        Err(e) => panic!("annotating the acme-db CRD: {e}"),
    }
}

/// An InstallPolicy naming one namespace, deleted when dropped.
pub(crate) struct TestPolicy {
    name: String,
    client: Client,
}

impl TestPolicy {
    pub(crate) async fn create(admin: &Client, namespace: &str, spec: Value) -> TestPolicy {
        let name = unique_name("policy");
        let mut spec = spec;
        spec["namespaces"] = json!([namespace]);
        let policy: windlass_api::InstallPolicy = serde_json::from_value(json!({
            "apiVersion": "windlass.dev/v1alpha1", "kind": "InstallPolicy",
            "metadata": { "name": name }, "spec": spec,
        }))
        .unwrap();
        Api::<windlass_api::InstallPolicy>::all(admin.clone())
            .create(&PostParams::default(), &policy)
            .await
            .expect("creating the InstallPolicy");
        TestPolicy {
            name,
            client: admin.clone(),
        }
    }
}

impl Drop for TestPolicy {
    fn drop(&mut self) {
        let (client, name) = (self.client.clone(), self.name.clone());
        // Drop cannot await; the runtime may already be shutting down at the end of a test.
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let _ = Api::<windlass_api::InstallPolicy>::all(client)
                    .delete(&name, &DeleteParams::default())
                    .await;
            });
        }
    }
}

/// Given a tenant whose namespace may install operators with their CRDs and cluster
/// permissions in its own namespace only, when the tenant subscribes with `targetNamespaces`
/// `[""]` (all namespaces) or `["kube-system"]`, then each install is refused with a condition
/// naming the install mode and namespace, and nothing of it is created; the same Subscription
/// targeting its own namespace installs.
#[tokio::test]
async fn a_tenant_cannot_widen_an_install_beyond_its_namespace() {
    let (admin, ns, as_tenant) = self_service("widen").await;
    let _policy = TestPolicy::create(
        &admin,
        &ns.name,
        json!({"clusterScoped": ["CustomResourceDefinitions", "ClusterPermissions"]}),
    )
    .await;
    hand_shared_crds_to_acme_db(&admin).await;

    let attempts = [
        (
            "everywhere",
            json!([""]),
            reasons::policy::INSTALL_MODE_NOT_ALLOWED,
            "AllNamespaces",
        ),
        (
            "system",
            json!(["kube-system"]),
            reasons::policy::INSTALL_MODE_NOT_ALLOWED,
            "kube-system",
        ),
    ];
    for (name, targets, _, _) in &attempts {
        subscribe(
            &as_tenant,
            &ns.name,
            name,
            json!({"package": "acme-db", "channel": "stable", "versionRange": "1.0.0",
                   "targetNamespaces": targets}),
        )
        .await;
    }
    for (name, _, reason, named) in &attempts {
        let message = refused(&admin, &ns.name, name, reason).await;
        assert!(
            message.contains(named) && message.contains(&ns.name),
            "{name}: the condition names {named} and the namespace: {message}"
        );
    }
    // The reconciles that set those conditions are the ones that would have applied.
    assert_eq!(
        csvs_in(&admin, &ns.name).await,
        Vec::<String>::new(),
        "no ClusterServiceVersion for a refused install"
    );
    // Whatever windlass creates for an install carries its namespace in a label.
    let for_this_namespace = |labels: &BTreeMap<String, String>| {
        [labels::BLUEPRINT_NAMESPACE, labels::CSV_NAMESPACE]
            .iter()
            .any(|l| labels.get(*l) == Some(&ns.name))
    };
    let in_kube_system = Api::<RoleBinding>::namespaced(admin.clone(), "kube-system")
        .list(&Default::default())
        .await
        .unwrap();
    assert!(
        !in_kube_system
            .items
            .iter()
            .any(|b| for_this_namespace(b.labels())),
        "nothing in kube-system"
    );
    let cluster_wide = Api::<ClusterRoleBinding>::all(admin.clone())
        .list(&Default::default())
        .await
        .unwrap();
    assert!(
        !cluster_wide
            .items
            .iter()
            .any(|b| for_this_namespace(b.labels())),
        "no ClusterRoleBinding for a refused install"
    );

    // The legitimate path: the tenant narrows one to its own namespace and it installs.
    let patch = json!({"spec": {"targetNamespaces": [ns.name]}});
    Api::<windlass_api::Subscription>::namespaced(as_tenant, &ns.name)
        .patch("everywhere", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("the tenant edits its Subscription");
    wait_blueprint(
        &admin,
        &ns.name,
        "everywhere",
        "1.0.0 Succeeded",
        TIMEOUT,
        |b| {
            is_at(b, BlueprintPhase::Succeeded, "1.0.0")
                && blueprint_condition(b, conditions::blueprint::INSTALL_PERMITTED).is_none()
        },
    )
    .await;
}

/// Given a tenant's namespace with no InstallPolicy, when the tenant subscribes to acme-db
/// (which ships a CRD and cluster permissions), then the install is refused naming what it
/// lacks, and nothing of it is applied.
#[tokio::test]
async fn without_a_policy_a_tenant_gets_no_cluster_scoped_objects() {
    let (admin, ns, as_tenant) = self_service("nopolicy").await;
    subscribe(
        &as_tenant,
        &ns.name,
        "db",
        json!({"package": "acme-db", "channel": "stable", "versionRange": "1.0.0"}),
    )
    .await;
    let message = refused(
        &admin,
        &ns.name,
        "db",
        reasons::policy::CLUSTER_SCOPED_NOT_ALLOWED,
    )
    .await;
    assert!(message.contains("CustomResourceDefinitions"), "{message}");
    assert_eq!(csvs_in(&admin, &ns.name).await, Vec::<String>::new());
}

/// The names of the windlass ClusterServiceVersions in `namespace`.
pub(crate) async fn csvs_in(admin: &Client, namespace: &str) -> Vec<String> {
    Api::<windlass_api::ClusterServiceVersion>::namespaced(admin.clone(), namespace)
        .list(&Default::default())
        .await
        .expect("listing ClusterServiceVersions")
        .items
        .iter()
        .map(|c| c.name_any())
        .collect()
}
