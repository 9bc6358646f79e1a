//! A second round of tenants attacking windlass from their own namespace, each as a real user
//! of the API server (the admin impersonating a user bound to `edit` there, with the extra
//! roles a test names) and each read back as the admin: a Blueprint written by hand, a sealed
//! CSV replayed after its uninstall, a policy narrowed under a running install, and a
//! cluster-scoped object of someone else's whose name an install would use.

use std::time::{Duration, Instant};

use k8s_openapi::api::{apps::v1::Deployment, rbac::v1::ClusterRole};
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use windlass_api::{
    Blueprint, ClusterServiceVersion, ConditionStatus, Subscription,
    blueprint::BlueprintPhase,
    names::{annotations, conditions, labels, reasons},
};
use windlass_testkit::{
    WITHOUT_ADMISSION_POLICIES,
    catalogs::TestCatalog,
    lifecycle::{condition, is_at, subscribe, wait_blueprint, wait_object},
    wait_until,
};

use crate::{
    common::isolated::Isolated,
    tenancy::{csvs_in, hand_shared_crds_to_acme_db, refused},
};

use crate::common::escapes::*;

/// Given a namespace where an admin allows hand-written Blueprints and a policy lets it
/// install from a catalog whose admin delisted acme-db 1.0.0, when the tenant writes a
/// Blueprint naming that version outright (no Subscription to resolve it), then the Blueprint
/// is refused with `InstallPermitted=False` (`VersionDelisted`) quoting the delisting, and
/// nothing of it exists: no CRD, CSV, Deployment, ServiceAccount, cluster RBAC or revision.
/// Once the admin relists it, the same Blueprint installs.
#[tokio::test]
async fn a_hand_written_blueprint_for_a_delisted_version_is_refused() {
    let tenant = hand_writing_tenant("hand-delisted").await;
    let (admin, ns) = (&tenant.admin, tenant.namespace());
    // A package and CRD group of the test's own: delisting touches no other test's installs.
    let isolated = Isolated::new("acme-db-esc");
    let image = isolated.publish("acme-db/1.0.0", |_| {}).await;
    let catalog = TestCatalog::serving(admin, "escapes-delist", &[image]).await;
    isolated.grant_installer(admin, ns).await;
    let _policy = Policy::create(
        admin,
        ns,
        json!({"catalogs": [catalog.name],
               "clusterScoped": ["CustomResourceDefinitions", "ClusterPermissions"]}),
    )
    .await;
    delist(admin, &catalog.name, &isolated.package, &["1.0.0"]).await;
    package_view(
        admin,
        &catalog.name,
        &isolated.package,
        "1.0.0 delisted",
        |d| d == ["1.0.0"],
    )
    .await;

    Api::<Blueprint>::namespaced(tenant.client.clone(), ns)
        .create(
            &PostParams::default(),
            &hand_written(ns, &isolated.package, "1.0.0", &catalog.name),
        )
        .await
        .expect("the tenant may write Blueprints here: the attack is real");
    let message = refused(admin, ns, "db", reasons::delisting::VERSION_DELISTED).await;
    assert!(
        message.contains("ESC-1"),
        "the delisting is quoted: {message}"
    );
    // The reconcile that refused it is the one that would have applied it.
    stays_absent("nothing of a delisted version", AT_LEAST, || {
        nothing_installed(admin, ns, ACME_DB_ACCOUNT)
    })
    .await;
    let crds = Api::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>::all(admin.clone());
    assert!(
        crds.get_opt(&isolated.crd_name()).await.unwrap().is_none(),
        "the delisted bundle's CRD must not exist"
    );

    // The refusal was the delisting's: relisted, the same Blueprint installs.
    delist(admin, &catalog.name, &isolated.package, &[]).await;
    wait_blueprint(
        admin,
        ns,
        "db",
        "1.0.0 Succeeded once relisted",
        TIMEOUT,
        |b| is_at(b, BlueprintPhase::Succeeded, "1.0.0"),
    )
    .await;
}

/// Given a namespace where an admin allows hand-written Blueprints and a policy that allows
/// one package from the built-in catalog only, when the tenant writes Blueprints naming that
/// package from another catalog, and another package from the built-in one, then each is
/// refused (`CatalogNotAllowed`, `PackageNotAllowed`) naming what the policy allows, and
/// nothing of either is applied.
#[tokio::test]
async fn a_hand_written_blueprint_outside_its_policy_is_refused() {
    let tenant = hand_writing_tenant("hand-policy").await;
    let (admin, ns) = (&tenant.admin, tenant.namespace());
    let isolated = Isolated::new("acme-db-esc");
    let image = isolated.publish("acme-db/1.0.0", |_| {}).await;
    let catalog = TestCatalog::serving(admin, "escapes-other", &[image]).await;
    isolated.grant_installer(admin, ns).await;
    let _policy = Policy::create(
        admin,
        ns,
        json!({"catalogs": ["builtin"], "packages": [isolated.package],
               "clusterScoped": ["CustomResourceDefinitions", "ClusterPermissions"]}),
    )
    .await;
    let blueprints = Api::<Blueprint>::namespaced(tenant.client.clone(), ns);

    blueprints
        .create(
            &PostParams::default(),
            &hand_written(ns, &isolated.package, "1.0.0", &catalog.name),
        )
        .await
        .expect("the tenant may write Blueprints here: the attack is real");
    let message = refused(admin, ns, "db", reasons::policy::CATALOG_NOT_ALLOWED).await;
    assert!(
        message.contains(&format!("catalog {} is not among builtin", catalog.name)),
        "{message}"
    );
    stays_absent(
        "nothing from a catalog the policy does not allow",
        AT_LEAST,
        || nothing_installed(admin, ns, ACME_DB_ACCOUNT),
    )
    .await;

    // acme-db is served by the built-in catalog, which the policy allows; the package is not.
    let mut other = hand_written(ns, "acme-db", "1.0.0", "builtin");
    other.metadata.name = Some("builtin-db".into());
    blueprints
        .create(&PostParams::default(), &other)
        .await
        .expect("the tenant may write Blueprints here");
    let message = refused(
        admin,
        ns,
        "builtin-db",
        reasons::policy::PACKAGE_NOT_ALLOWED,
    )
    .await;
    assert!(
        message.contains(&format!(
            "package acme-db is not among {}",
            isolated.package
        )),
        "{message}"
    );
    stays_absent(
        "nothing of a package the policy does not allow",
        AT_LEAST,
        || nothing_installed(admin, ns, ACME_DB_ACCOUNT),
    )
    .await;
}

/// A tenant who may write Subscriptions, and acme-db 1.0.0 installed by them under `policy`;
/// how long the install took to bring its cluster-scoped RBAC (a reconcile pass and more).
async fn installed_acme_db(tenant: &Tenant, policy: Value) -> (Policy, Duration) {
    let (admin, ns) = (&tenant.admin, tenant.namespace());
    tenant.may_write("subscriptions").await;
    let policy = Policy::create(admin, ns, policy).await;
    hand_shared_crds_to_acme_db(admin).await;
    let started = Instant::now();
    subscribe(
        &tenant.client,
        ns,
        "db",
        json!({"package": "acme-db", "channel": "stable", "versionRange": "1.0.0",
               "targetNamespaces": [ns]}),
    )
    .await;
    wait_blueprint(admin, ns, "db", "1.0.0 Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.0")
    })
    .await;
    let took = started.elapsed();
    let rbac = cluster_rbac_for(admin, ns).await;
    let role = cluster_permission_name(ns, "acme-db.v1.0.0", ACME_DB_ACCOUNT);
    assert!(
        rbac.contains(&format!("ClusterRole {role}"))
            && rbac.contains(&format!("ClusterRoleBinding {role}")),
        "the policy's ClusterPermissions were granted: {rbac:?}"
    );
    (policy, took)
}

/// Given acme-db installed by a tenant under a policy granting cluster permissions, and the
/// sealed CSV saved as it ran, when the tenant uninstalls it and then creates the saved CSV
/// again (a sealed copy of what windlass applied), then the CSV is refused with
/// `ContentTrusted=False` (`BlueprintMissing`) and nothing of it is created: no ClusterRole or
/// ClusterRoleBinding for the namespace, no operator ServiceAccount or Deployment, watched for
/// longer than the install itself took.
#[tokio::test]
async fn a_sealed_csv_replayed_after_uninstall_creates_nothing() {
    // The admission policies would refuse the tenant's CSV before windlass sees it
    // (admission_policies tests that): lifted here, so windlass's own checks are tried.
    let tenant = Tenant::new("replay", &[WITHOUT_ADMISSION_POLICIES]).await;
    let (admin, ns) = (&tenant.admin, tenant.namespace());
    tenant.may_write("clusterserviceversions").await;
    let (_policy, took) = installed_acme_db(
        &tenant,
        json!({"clusterScoped": ["CustomResourceDefinitions", "ClusterPermissions"]}),
    )
    .await;
    let admin_csvs = Api::<ClusterServiceVersion>::namespaced(admin.clone(), ns);
    let saved = admin_csvs.get("acme-db.v1.0.0").await.expect("the CSV");
    assert!(
        saved
            .annotations()
            .contains_key(windlass_api::names::seal::ANNOTATION),
        "the saved CSV is sealed"
    );

    Api::<Subscription>::namespaced(tenant.client.clone(), ns)
        .delete("db", &DeleteParams::default())
        .await
        .expect("the tenant uninstalls");
    let blueprints = Api::<Blueprint>::namespaced(admin.clone(), ns);
    wait_until("the Blueprint and its CSV to be gone", TIMEOUT, || async {
        blueprints.get_opt("db").await.unwrap().is_none()
            && admin_csvs
                .get_opt("acme-db.v1.0.0")
                .await
                .unwrap()
                .is_none()
    })
    .await;
    wait_until("the cluster RBAC to be removed", TIMEOUT, || async {
        cluster_rbac_for(admin, ns).await.is_empty()
    })
    .await;

    // What a tenant can create of it: the server's bookkeeping goes; the spec, its grant and
    // the seal stay. An ownerReference to the deleted Blueprint would have the garbage
    // collector delete the copy, so it goes too.
    let mut replay = saved.clone();
    replay.metadata = kube::api::ObjectMeta {
        name: saved.metadata.name.clone(),
        namespace: saved.metadata.namespace.clone(),
        labels: saved.metadata.labels.clone(),
        annotations: saved.metadata.annotations.clone(),
        ..Default::default()
    };
    replay.status = None;
    Api::<ClusterServiceVersion>::namespaced(tenant.client.clone(), ns)
        .create(&PostParams::default(), &replay)
        .await
        .expect("the tenant may create CSVs: the attack is real");
    let refused = wait_object(
        &admin_csvs,
        "acme-db.v1.0.0",
        reasons::csv::BLUEPRINT_MISSING,
        TIMEOUT,
        |c| {
            c.status
                .as_ref()
                .and_then(|s| condition(&s.conditions, conditions::csv::CONTENT_TRUSTED))
                .is_some_and(|t| {
                    t.status == ConditionStatus::False
                        && t.reason == reasons::csv::BLUEPRINT_MISSING
                })
        },
    )
    .await;
    assert_eq!(
        refused.spec.grant, saved.spec.grant,
        "the copy carries the grant it was sealed with"
    );
    stays_absent("nothing of a replayed CSV", took.max(AT_LEAST), || async {
        let rbac = cluster_rbac_for(admin, ns).await;
        if !rbac.is_empty() {
            return Some(format!("{rbac:?}"));
        }
        let deployments = Api::<Deployment>::namespaced(admin.clone(), ns);
        if deployments
            .get_opt("acme-db-operator")
            .await
            .unwrap()
            .is_some()
        {
            return Some("Deployment acme-db-operator".into());
        }
        None
    })
    .await;
}

/// Waits until the Blueprint says `InstallPermitted=False` with `reason` and its message
/// satisfies `says`; the message.
async fn permitted_says(
    admin: &Client,
    namespace: &str,
    reason: &str,
    says: impl Fn(&str) -> bool,
) -> String {
    let blueprint = wait_blueprint(admin, namespace, "db", reason, TIMEOUT, |b| {
        permitted_condition(b)
            .is_some_and(|(s, r, m)| s == ConditionStatus::False && r == reason && says(m))
    })
    .await;
    permitted_condition(&blueprint).unwrap().2.to_string()
}

/// Given acme-db installed by a tenant under a policy granting cluster permissions (revocation
/// left at its default, Withdraw), when the admin narrows the policy to CRDs only, then the
/// Blueprint says `InstallPermitted=False` (`GrantWithdrawn`) and the ClusterRole and
/// ClusterRoleBinding are deleted while the operator's namespaced objects stay; when the admin
/// then deletes the policy, the recorded choice (Withdraw) holds: still withdrawn, nothing
/// cluster-scoped comes back.
#[tokio::test]
async fn a_narrowed_policy_withdraws_the_cluster_permissions_it_no_longer_grants() {
    let tenant = Tenant::new("withdraw", &[]).await;
    let (admin, ns) = (&tenant.admin, tenant.namespace());
    let (policy, took) = installed_acme_db(
        &tenant,
        json!({"clusterScoped": ["CustomResourceDefinitions", "ClusterPermissions"]}),
    )
    .await;

    policy
        .grant_only(json!(["CustomResourceDefinitions"]))
        .await;
    let message = permitted_says(admin, ns, reasons::policy::GRANT_WITHDRAWN, |_| true).await;
    assert!(
        message.contains(&policy.name) && message.contains("ClusterPermissions"),
        "names the policy and what it withdrew: {message}"
    );
    wait_until(
        "the withdrawn ClusterRole and binding to go",
        TIMEOUT,
        || async { cluster_rbac_for(admin, ns).await.is_empty() },
    )
    .await;
    let deployments = Api::<Deployment>::namespaced(admin.clone(), ns);
    assert!(
        deployments
            .get_opt("acme-db-operator")
            .await
            .unwrap()
            .is_some(),
        "what the policy still grants keeps running"
    );

    policy.delete().await;
    // Decided again without the policy: the refusal no longer lists what the policy lacks.
    let policy_lacks = format!("InstallPolicy {}:", policy.name);
    permitted_says(admin, ns, reasons::policy::GRANT_WITHDRAWN, |m| {
        !m.contains(&policy_lacks)
    })
    .await;
    stays_absent(
        "no cluster RBAC once the withdrawing policy is deleted",
        took.max(AT_LEAST),
        || async {
            let rbac = cluster_rbac_for(admin, ns).await;
            (!rbac.is_empty()).then(|| format!("{rbac:?}"))
        },
    )
    .await;
}

/// Given acme-db installed by a tenant under a policy granting cluster permissions with
/// `revocation: Hold`, when the admin narrows the policy to CRDs only, then the Blueprint says
/// `InstallPermitted=False` (`GrantHeld`) and the ClusterRole and ClusterRoleBinding stay as
/// they were; when the admin then deletes the policy, the recorded choice (Hold) holds.
#[tokio::test]
async fn a_narrowed_policy_that_holds_keeps_what_it_granted() {
    let tenant = Tenant::new("hold", &[]).await;
    let (admin, ns) = (&tenant.admin, tenant.namespace());
    let (policy, took) = installed_acme_db(
        &tenant,
        json!({"clusterScoped": ["CustomResourceDefinitions", "ClusterPermissions"],
               "revocation": "Hold"}),
    )
    .await;
    let granted = cluster_rbac_versions(admin, ns).await;
    assert!(!granted.is_empty());

    policy
        .grant_only(json!(["CustomResourceDefinitions"]))
        .await;
    let message = permitted_says(admin, ns, reasons::policy::GRANT_HELD, |_| true).await;
    assert!(
        message.contains(&policy.name),
        "names the policy: {message}"
    );
    let window = took.max(AT_LEAST);
    stays_absent("the held grants kept as they were", window, || async {
        let now = cluster_rbac_versions(admin, ns).await;
        (now != granted).then(|| format!("was {granted:?}, now {now:?}"))
    })
    .await;

    policy.delete().await;
    let policy_lacks = format!("InstallPolicy {}:", policy.name);
    permitted_says(admin, ns, reasons::policy::GRANT_HELD, |m| {
        !m.contains(&policy_lacks)
    })
    .await;
    stays_absent(
        "the held grants kept once the policy is deleted",
        window,
        || async {
            let now = cluster_rbac_versions(admin, ns).await;
            (now != granted).then(|| format!("was {granted:?}, now {now:?}"))
        },
    )
    .await;
}

/// What an admin's ClusterRole is made of, for "untouched".
fn as_made(role: &ClusterRole) -> Value {
    json!({
        "rules": role.rules,
        "labels": role.metadata.labels,
        "annotations": role.metadata.annotations,
        "managers": role.metadata.managed_fields.iter().flatten()
            .map(|m| m.manager.clone()).collect::<Vec<_>>(),
        "resourceVersion": role.metadata.resource_version,
    })
}

/// No sample bundle ships a plain cluster-scoped manifest, so the cluster-scoped objects an
/// acme-db install has whose names anyone can know in advance are its CSV's
/// `clusterPermissions` ClusterRole and ClusterRoleBinding. Given an admin's ClusterRole of
/// exactly that name, when a tenant whose policy grants cluster permissions installs acme-db,
/// then the install is refused (`ObjectOwnedElsewhere`) naming the ClusterRole's owner, and
/// the ClusterRole is left as the admin made it, also after the uninstall; once the admin
/// hands it to the install (`windlass.dev/adopt: NAMESPACE/BLUEPRINT`), the install proceeds
/// and takes it over.
#[tokio::test]
async fn a_cluster_role_someone_else_made_is_not_taken_over_until_handed_over() {
    let tenant = Tenant::new("owned", &[]).await;
    let (admin, ns) = (&tenant.admin, tenant.namespace());
    tenant.may_write("subscriptions").await;
    let _policy = Policy::create(
        admin,
        ns,
        json!({"clusterScoped": ["CustomResourceDefinitions", "ClusterPermissions"]}),
    )
    .await;
    hand_shared_crds_to_acme_db(admin).await;
    let name = cluster_permission_name(ns, "acme-db.v1.0.0", ACME_DB_ACCOUNT);
    let _cleanup = ClusterObject {
        kind: "clusterrole",
        name: name.clone(),
    };
    let roles = Api::<ClusterRole>::all(admin.clone());
    let admins: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"team": "platform"}},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
    }))
    .unwrap();
    let by_the_admin = PostParams {
        field_manager: Some("platform-admin".into()),
        ..PostParams::default()
    };
    let made = roles
        .create(&by_the_admin, &admins)
        .await
        .expect("the admin's ClusterRole");

    subscribe(
        &tenant.client,
        ns,
        "db",
        json!({"package": "acme-db", "channel": "stable", "versionRange": "1.0.0",
               "targetNamespaces": [ns]}),
    )
    .await;
    // Either the refusal or an install that went ahead over the admin's ClusterRole: the
    // latter fails below, with what it did to it.
    let decided = wait_blueprint(admin, ns, "db", "refused or installed", TIMEOUT, |b| {
        permitted_condition(b).is_some_and(|(s, r, _)| {
            s == ConditionStatus::False && r == reasons::policy::OBJECT_OWNED_ELSEWHERE
        }) || is_at(b, BlueprintPhase::Succeeded, "1.0.0")
    })
    .await;
    let live = roles.get(&name).await.expect("the admin's ClusterRole");
    assert_eq!(
        as_made(&live),
        as_made(&made),
        "the admin's ClusterRole must be left as made (the Blueprint is {:?})",
        decided.status.as_ref().and_then(|s| s.phase)
    );
    let (_, reason, message) = permitted_condition(&decided).expect("a refusal");
    assert_eq!(reason, reasons::policy::OBJECT_OWNED_ELSEWHERE, "{message}");
    assert!(
        message.contains(&format!(
            "ClusterRole {name} (managed by field manager platform-admin)"
        )) && message.contains(&format!("{}={ns}/db", annotations::ADOPT)),
        "names the ClusterRole, its owner and how to hand it over: {message}"
    );
    assert_eq!(csvs_in(admin, ns).await, Vec::<String>::new());

    // Uninstalled while refused: the admin's ClusterRole stays.
    Api::<Subscription>::namespaced(tenant.client.clone(), ns)
        .delete("db", &DeleteParams::default())
        .await
        .expect("the tenant uninstalls");
    let blueprints = Api::<Blueprint>::namespaced(admin.clone(), ns);
    wait_until("the Blueprint's cleanup to finish", TIMEOUT, || async {
        blueprints.get_opt("db").await.unwrap().is_none()
    })
    .await;
    let live = roles
        .get(&name)
        .await
        .expect("still there after the uninstall");
    assert_eq!(as_made(&live), as_made(&made));

    // The admin hands it over; the tenant installs again and the install takes it.
    let adopt = json!({"metadata": {"annotations": {annotations::ADOPT: format!("{ns}/db")}}});
    roles
        .patch(&name, &PatchParams::default(), &Patch::Merge(&adopt))
        .await
        .unwrap();
    subscribe(
        &tenant.client,
        ns,
        "db",
        json!({"package": "acme-db", "channel": "stable", "versionRange": "1.0.0",
               "targetNamespaces": [ns]}),
    )
    .await;
    wait_blueprint(
        admin,
        ns,
        "db",
        "1.0.0 Succeeded once handed over",
        TIMEOUT,
        |b| is_at(b, BlueprintPhase::Succeeded, "1.0.0"),
    )
    .await;
    let taken = roles.get(&name).await.unwrap();
    assert_eq!(
        taken
            .labels()
            .get(labels::CSV_NAMESPACE)
            .map(String::as_str),
        Some(ns),
        "the install manages it now"
    );
    assert_ne!(taken.rules, made.rules, "with the operator's rules");
}

/// The CSV's `ConversionServed` condition, as `(status, reason)`.
fn conversion_served(csv: &ClusterServiceVersion) -> Option<(ConditionStatus, String)> {
    let found = condition(
        &csv.status.as_ref()?.conditions,
        conditions::csv::CONVERSION_SERVED,
    )?;
    Some((found.status, found.reason.clone()))
}

/// Waits until the gateway CRD's conversion is `holder`'s: annotated so, and its webhook
/// pointing at the Service in `holder`'s namespace.
async fn conversion_held_by(admin: &Client, holder: &str, namespace: &str) {
    let crds = Api::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>::all(admin.clone());
    wait_object(
        &crds,
        "gateways.acme.windlass.dev",
        &format!("the conversion to be {holder}'s"),
        TIMEOUT,
        |crd| {
            let service = crd
                .spec
                .conversion
                .as_ref()
                .and_then(|c| c.webhook.as_ref())
                .and_then(|w| w.client_config.as_ref())
                .and_then(|c| c.service.as_ref());
            crd.annotations()
                .get(annotations::CONVERSION_OWNER)
                .map(String::as_str)
                == Some(holder)
                && service.is_some_and(|s| s.namespace == namespace)
        },
    )
    .await;
}

/// Given two tenants whose policies let them install acme-gateway (all namespaces, its CRD,
/// cluster permissions and webhooks), whose CRD converts through the operator's webhook, when
/// both install it, then both Succeed: the first install's webhook converts the shared CRD
/// (`ConversionServed=True`) and the second's says whose does; once the first is uninstalled,
/// the second's webhook takes the conversion over.
#[tokio::test]
async fn two_tenants_sharing_a_converting_crd_both_keep_serving() {
    let mut tenants = Vec::new();
    let mut policies = Vec::new();
    for prefix in ["convert-a", "convert-b"] {
        let tenant = Tenant::new(prefix, &[]).await;
        tenant.may_write("subscriptions").await;
        policies.push(
            Policy::create(
                &tenant.admin,
                tenant.namespace(),
                json!({"installModes": ["AllNamespaces"],
                       "clusterScoped": ["CustomResourceDefinitions", "ClusterPermissions", "Webhooks"]}),
            )
            .await,
        );
        tenants.push(tenant);
    }
    let admin = &tenants[0].admin;
    // One after the other, so which install converts first is known.
    for tenant in &tenants {
        subscribe(
            &tenant.client,
            tenant.namespace(),
            "gw",
            json!({"package": "acme-gateway"}),
        )
        .await;
        wait_blueprint(
            admin,
            tenant.namespace(),
            "gw",
            "0.1.0 Succeeded",
            TIMEOUT,
            |b| is_at(b, BlueprintPhase::Succeeded, "0.1.0"),
        )
        .await;
    }
    let (first, second) = (tenants[0].namespace(), tenants[1].namespace());
    let csv = "acme-gateway.v0.1.0";
    conversion_held_by(admin, &format!("{first}/{csv}"), first).await;
    let served = |namespace: &str, reason: &'static str, status: ConditionStatus| {
        let api = Api::<ClusterServiceVersion>::namespaced(admin.clone(), namespace);
        async move {
            wait_object(&api, csv, reason, TIMEOUT, |c| {
                conversion_served(c) == Some((status, reason.to_string()))
                    && c.status.as_ref().and_then(|s| s.phase)
                        == Some(windlass_api::CsvPhase::Succeeded)
            })
            .await
        }
    };
    served(
        first,
        reasons::csv::CONVERSION_SERVED_HERE,
        ConditionStatus::True,
    )
    .await;
    served(
        second,
        reasons::csv::CONVERSION_SERVED_ELSEWHERE,
        ConditionStatus::False,
    )
    .await;

    Api::<Subscription>::namespaced(tenants[0].client.clone(), first)
        .delete("gw", &DeleteParams::default())
        .await
        .expect("the first tenant uninstalls");
    conversion_held_by(admin, &format!("{second}/{csv}"), second).await;
    served(
        second,
        reasons::csv::CONVERSION_SERVED_HERE,
        ConditionStatus::True,
    )
    .await;
}
