//! Installs in a tenant's namespace are applied as its install ServiceAccount
//! (`windlass-installer`, impersonated), so the API server itself refuses whatever that account
//! could not create or grant, and the refusal names what it lacks.

use std::time::Duration;

use k8s_openapi::api::{core::v1::ServiceAccount, rbac::v1::RoleBinding};
use kube::{Api, api::DeleteParams};
use serde_json::json;
use windlass_api::{
    Blueprint, ConditionStatus,
    blueprint::BlueprintPhase,
    names::{conditions, reasons},
};
use windlass_testkit::{
    SAMPLE_OPERATOR_APIS,
    lifecycle::{condition, is_at, subscribe, wait_blueprint},
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
    let blueprint = wait_blueprint(&admin, &ns.name, "db", "InstallForbidden", TIMEOUT, |b| {
        forbidden(b).is_some()
    })
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
