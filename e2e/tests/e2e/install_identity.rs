//! Installs in a tenant's namespace are applied as its install ServiceAccount
//! (`windlass-installer`, impersonated), so the API server itself refuses whatever that account
//! could not create or grant, the refusal names what it lacks, and the whole lifecycle
//! (install, upgrade, rollback) runs as that account.

use std::time::Duration;

use k8s_openapi::api::{
    core::v1::ServiceAccount,
    rbac::v1::{Role, RoleBinding},
};
use kube::{
    Api,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use serde_json::json;
use windlass_api::{
    Blueprint, ConditionStatus,
    blueprint::BlueprintPhase,
    names::{conditions, reasons},
};
use windlass_testkit::{
    SAMPLE_OPERATOR_APIS,
    lifecycle::{condition, is_at, subscribe, wait_blueprint, wait_subscription},
    manager, wait_until_authorized,
};

use crate::tenancy::{TestPolicy, self_service};

const TIMEOUT: Duration = Duration::from_secs(180);

/// Given a tenant's namespace whose policy grants acme-db's cluster-scoped objects, and whose
/// install ServiceAccount may only read (`view`), when the tenant subscribes to acme-db, then
/// the install is held with `InstallForbidden` naming the account, the verb, the resource and
/// the namespace, and none of the operator's namespaced objects exist; once the platform team
/// gives the account `admin` and the operator's API group (within the progress deadline), it
/// installs.
#[tokio::test]
async fn an_install_is_limited_to_what_its_service_account_may_do() {
    let (admin, ns, as_tenant) = self_service("identity").await;
    let _policy = TestPolicy::create(
        &admin,
        &ns.name,
        json!({"clusterScoped": ["CustomResourceDefinitions", "ClusterPermissions", "CrdAdoption"]}),
    )
    .await;
    // The namespace came with a capable install account: take that away, leave it `view`.
    let bindings = Api::<RoleBinding>::namespaced(admin.clone(), &ns.name);
    for role in ["admin", SAMPLE_OPERATOR_APIS] {
        bindings
            .delete(
                &format!("windlass-installer-{role}"),
                &DeleteParams::default(),
            )
            .await
            .expect("removing the install account's binding");
    }
    ns.install_service_account(&admin, &["view"]).await;

    subscribe(
        &as_tenant,
        &ns.name,
        "db",
        json!({"package": "acme-db", "channel": "stable", "versionRange": "1.0.0",
               "targetNamespaces": [ns.name]}),
    )
    .await;
    let forbidden = |b: &Blueprint| {
        condition(
            &b.status
                .as_ref()
                .map(|s| s.conditions.clone())
                .unwrap_or_default(),
            conditions::blueprint::INSTALL_PERMITTED,
        )
        .filter(|c| {
            c.status == ConditionStatus::False && c.reason == reasons::policy::INSTALL_FORBIDDEN
        })
        .map(|c| c.message.clone())
    };
    let blueprint = wait_blueprint(
        &admin,
        &ns.name,
        "db",
        reasons::policy::INSTALL_FORBIDDEN,
        TIMEOUT,
        |b| forbidden(b).is_some(),
    )
    .await;
    let message = forbidden(&blueprint).unwrap();
    let account = format!("system:serviceaccount:{}:windlass-installer", ns.name);
    assert!(
        message.contains(&account)
            && message.contains("cannot patch resource \"serviceaccounts\"")
            && message.contains(&format!("in the namespace \"{}\"", ns.name)),
        "names the account, what it may not do and where: {message}"
    );
    assert!(
        !message.contains("Status {"),
        "the API server's words only: {message}"
    );
    // The tenant reads it where they subscribed.
    let subscription = wait_subscription(
        &admin,
        &ns.name,
        "db",
        "Installed NotPermitted",
        TIMEOUT,
        |s| {
            s.status
                .as_ref()
                .and_then(|st| condition(&st.conditions, conditions::subscription::INSTALLED))
                .is_some_and(|c| c.reason == "NotPermitted")
        },
    )
    .await;
    let installed = condition(
        &subscription.status.unwrap().conditions,
        conditions::subscription::INSTALLED,
    )
    .unwrap()
    .message
    .clone();
    assert!(
        installed.contains(reasons::policy::INSTALL_FORBIDDEN) && installed.contains(&account),
        "{installed}"
    );
    let accounts = Api::<ServiceAccount>::namespaced(admin.clone(), &ns.name);
    assert!(
        accounts
            .get_opt("acme-db-operator")
            .await
            .unwrap()
            .is_none(),
        "the operator's ServiceAccount was not created as anyone else"
    );

    ns.install_service_account(&admin, &["admin", SAMPLE_OPERATOR_APIS])
        .await;
    wait_blueprint(&admin, &ns.name, "db", "1.0.0 Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.0")
    })
    .await;
}

/// The manager's creates, updates and patches of `resource` in `namespace` that the API server
/// completed, each with the user it acted as (`None`: as itself), from the audit log.
fn manager_writes_to(resource: &str, namespace: &str) -> Vec<Option<String>> {
    manager::writes_in(namespace)
        .iter()
        .filter(|event| {
            ["create", "update", "patch"].contains(&event["verb"].as_str().unwrap_or(""))
                && event["objectRef"]["resource"] == resource
                && event["objectRef"]["subresource"].is_null()
                && event["responseStatus"]["code"]
                    .as_u64()
                    .is_some_and(|code| code < 300)
        })
        .map(|event| {
            event["impersonatedUser"]["username"]
                .as_str()
                .map(String::from)
        })
        .collect()
}

/// Given a tenant's namespace whose install ServiceAccount may install acme-db, when the
/// tenant installs 1.0.0, follows the channel to 1.0.1 and rolls back to 1.0.0 by hand, then
/// each step succeeds, and every write windlass made to the operator's Deployments, Roles,
/// RoleBindings and ServiceAccounts was made as the install account (the API server's audit log
/// says who), never as the manager itself.
#[tokio::test]
async fn a_tenant_installs_upgrades_and_rolls_back_as_its_install_account() {
    let (admin, ns, as_tenant) = self_service("tenantlife").await;
    let _policy = TestPolicy::create(
        &admin,
        &ns.name,
        json!({"clusterScoped": ["CustomResourceDefinitions", "ClusterPermissions", "CrdAdoption"]}),
    )
    .await;
    // The tenant may also edit its Blueprints (a rollback is an edit of the target).
    let role: Role = serde_json::from_value(json!({
        "metadata": {"name": "blueprint-editor", "namespace": ns.name},
        "rules": [{"apiGroups": ["windlass.dev"], "resources": ["blueprints"], "verbs": ["get", "patch"]}],
    }))
    .unwrap();
    Api::<Role>::namespaced(admin.clone(), &ns.name)
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let user = format!("tenant-{}", ns.name);
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "blueprint-editor", "namespace": ns.name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "blueprint-editor"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }))
    .unwrap();
    Api::<RoleBinding>::namespaced(admin.clone(), &ns.name)
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    wait_until_authorized(
        &admin,
        &user,
        &ns.name,
        ("windlass.dev", "blueprints", "patch"),
    )
    .await;

    subscribe(
        &as_tenant,
        &ns.name,
        "db",
        json!({"package": "acme-db", "channel": "stable", "versionRange": "<1.1.0",
               "startingCSV": "acme-db.v1.0.0", "targetNamespaces": [ns.name]}),
    )
    .await;
    wait_blueprint(&admin, &ns.name, "db", "1.0.1 Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.1")
    })
    .await;
    Api::<Blueprint>::namespaced(as_tenant, &ns.name)
        .patch(
            "db",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"clusterServiceVersionName": "acme-db.v1.0.0"}})),
        )
        .await
        .expect("the tenant rolls back");
    wait_blueprint(
        &admin,
        &ns.name,
        "db",
        "rolled back to 1.0.0",
        TIMEOUT,
        |b| is_at(b, BlueprintPhase::Succeeded, "1.0.0"),
    )
    .await;

    let installer = format!("system:serviceaccount:{}:windlass-installer", ns.name);
    for resource in ["deployments", "roles", "rolebindings", "serviceaccounts"] {
        let writes = manager_writes_to(resource, &ns.name);
        assert!(
            !writes.is_empty(),
            "windlass wrote no {resource} in {}",
            ns.name
        );
        assert!(
            writes
                .iter()
                .all(|w| w.as_deref() == Some(installer.as_str())),
            "{resource} written other than as the install account: {writes:?}"
        );
    }
}
