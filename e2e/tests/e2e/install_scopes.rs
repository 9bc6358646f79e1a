//! InstallScopes: what a namespace may install, shown to the people who work there. A tenant
//! reads their namespace's view with the ordinary `edit` role and cannot change it; the view
//! follows the InstallPolicies, is put back when edited by hand, and goes away with the last
//! reason to have it.

use std::time::Duration;

use kube::{
    Api, Client,
    api::{DeleteParams, Patch, PatchParams},
};
use serde_json::{Value, json};
use windlass_api::{InstallScope, scope::INSTALL_SCOPE_NAME};
use windlass_testkit::{
    lifecycle::{subscribe, wait_object},
    wait_until,
};

use crate::tenancy::{TestPolicy, self_service};

const TIMEOUT: Duration = Duration::from_secs(60);

fn summary(view: &InstallScope) -> (&str, &str, &str, &str) {
    let status = view.status.as_ref();
    let field = |f: fn(&windlass_api::InstallScopeStatus) -> &str| status.map(f).unwrap_or("");
    (
        field(|s| &s.policy_summary),
        field(|s| &s.install_as),
        field(|s| &s.install_mode_summary),
        field(|s| &s.cluster_scoped_summary),
    )
}

/// The namespace's InstallScope as `kubectl get` prints it: the server-side Table.
async fn table_row(client: &Client, namespace: &str) -> Vec<(String, String)> {
    let request = http::Request::get(format!(
        "/apis/windlass.dev/v1alpha1/namespaces/{namespace}/installscopes/{INSTALL_SCOPE_NAME}"
    ))
    .header(
        "Accept",
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
    )
    .body(Vec::new())
    .expect("a request");
    let table: Value = client
        .request(request)
        .await
        .expect("the InstallScope as a Table");
    let columns = table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .clone();
    let cells = table["rows"][0]["cells"]
        .as_array()
        .expect("one row")
        .clone();
    columns
        .iter()
        .zip(cells)
        .map(|(c, v)| {
            let v = v
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string());
            (c["name"].as_str().unwrap_or_default().to_string(), v)
        })
        .collect()
}

/// Given a tenant's namespace without a policy, when the tenant subscribes, then the namespace
/// gets an InstallScope the tenant can read but not change, showing OwnNamespace installs of
/// namespaced objects as its install ServiceAccount; when an admin's policy selects the
/// namespace the view shows what it grants, a hand edit is put back, and with the Subscription
/// and the policy gone the view is deleted.
#[tokio::test]
async fn a_namespace_shows_what_it_may_install_and_tenants_cannot_change_it() {
    let (admin, ns, as_tenant) = self_service("scope").await;
    let as_admin = Api::<InstallScope>::namespaced(admin.clone(), &ns.name);
    let for_tenant = Api::<InstallScope>::namespaced(as_tenant.clone(), &ns.name);

    // A Subscription to a package no catalog serves: the view does not need an install.
    subscribe(
        &as_tenant,
        &ns.name,
        "wanted",
        json!({"package": "no-such-package"}),
    )
    .await;
    let view = wait_object(
        &as_admin,
        INSTALL_SCOPE_NAME,
        "the baseline view",
        TIMEOUT,
        |v| summary(v).0 == "none",
    )
    .await;
    assert_eq!(
        summary(&view),
        (
            "none",
            "ServiceAccount windlass-installer",
            "OwnNamespace",
            "none"
        )
    );
    // Readable with `edit` (the chart's view role is aggregated into it) ...
    let read = for_tenant
        .get(INSTALL_SCOPE_NAME)
        .await
        .expect("the tenant reads the view");
    assert_eq!(read.status, view.status);
    let row = table_row(&as_tenant, &ns.name).await;
    assert!(
        row.contains(&(
            "Install As".into(),
            "ServiceAccount windlass-installer".into()
        )) && row.contains(&("Install Modes".into(), "OwnNamespace".into())),
        "kubectl get shows what the namespace may do: {row:?}"
    );
    // ... and not writable.
    let widened = json!({"apiVersion": "windlass.dev/v1alpha1", "kind": "InstallScope",
        "status": {"clusterScopedSummary": "ClusterPermissions"}});
    let forbidden = |result: Result<InstallScope, kube::Error>| matches!(result, Err(kube::Error::Api(s)) if s.code == 403);
    assert!(forbidden(
        for_tenant
            .patch_status(
                INSTALL_SCOPE_NAME,
                &PatchParams::apply("tenant").force(),
                &Patch::Apply(&widened),
            )
            .await
    ));
    assert!(matches!(
        for_tenant.delete(INSTALL_SCOPE_NAME, &DeleteParams::default()).await,
        Err(kube::Error::Api(s)) if s.code == 403
    ));

    let policy = TestPolicy::create(
        &admin,
        &ns.name,
        json!({"installModes": ["AllNamespaces"], "packages": ["acme-db"],
               "clusterScoped": ["CustomResourceDefinitions", "ClusterPermissions"]}),
    )
    .await;
    let view = wait_object(
        &as_admin,
        INSTALL_SCOPE_NAME,
        "the policy's grant",
        TIMEOUT,
        |v| summary(v).0 != "none",
    )
    .await;
    let (policies, install_as, modes, cluster_scoped) = summary(&view);
    assert!(policies.starts_with("policy-"), "{policies}");
    assert_eq!(install_as, "ServiceAccount windlass-installer");
    assert_eq!(modes, "OwnNamespace,AllNamespaces");
    assert_eq!(
        cluster_scoped,
        "CustomResourceDefinitions,ClusterPermissions"
    );
    let status = view.status.as_ref().expect("a status");
    assert_eq!(status.grants.len(), 2, "the policy, then the baseline");
    assert_eq!(status.grants[0].packages, ["acme-db"]);

    // An admin's hand edit is not what the policies say: it is put back.
    as_admin
        .patch_status(
            INSTALL_SCOPE_NAME,
            &PatchParams::apply("someone").force(),
            &Patch::Apply(&widened),
        )
        .await
        .expect("an admin edits the view");
    wait_object(
        &as_admin,
        INSTALL_SCOPE_NAME,
        "the edit put back",
        TIMEOUT,
        |v| {
            summary(v).3 == "CustomResourceDefinitions,ClusterPermissions"
                && v.status.as_ref() == Some(status)
        },
    )
    .await;

    // Nothing left that needs the view: it is deleted.
    Api::<windlass_api::Subscription>::namespaced(as_tenant.clone(), &ns.name)
        .delete("wanted", &DeleteParams::default())
        .await
        .expect("the tenant deletes the Subscription");
    drop(policy);
    wait_until("the InstallScope to be deleted", TIMEOUT, || async {
        matches!(as_admin.get_opt(INSTALL_SCOPE_NAME).await, Ok(None))
    })
    .await;
}
