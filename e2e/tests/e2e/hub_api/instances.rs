//! The custom resources an installed operator manages, on its package's page and in its read
//! API, with curl: listed as the person (a user who may read Databases in one namespace sees
//! that namespace's only, and is told which namespace was not readable), with their status
//! conditions; after a delist, what to reclaim.

use kube::{
    Api, Client,
    api::{DynamicObject, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use windlass_api::{Catalog, blueprint::BlueprintPhase};
use windlass_testkit::{
    TestNamespace,
    catalogs::TestCatalog,
    lifecycle::{is_at, subscribe, wait_blueprint},
    require_manager, unique_name, wait_until, wait_until_authorized,
};

use super::{Session, TIMEOUT, sign_in};
use crate::common::{
    hub::{HubProcess, curl, impersonating_kubeconfig},
    hub_rbac::ReadOnly,
    isolated::Isolated,
};

/// GETs `path` as the session; the status and the body as text.
fn get(hub: &HubProcess, session: &Session, path: &str) -> (u16, String) {
    let (status, _, body) = curl(&[
        "-H",
        &format!("Cookie: {}", session.cookie),
        &format!("{}{path}", hub.url),
    ]);
    (status, String::from_utf8(body).unwrap())
}

fn get_ok(hub: &HubProcess, session: &Session, path: &str) -> String {
    let (status, body) = get(hub, session, path);
    assert_eq!(status, 200, "{path}: {body}");
    body
}

/// `installed` of the package's read API body.
fn installed(hub: &HubProcess, session: &Session, path: &str) -> Value {
    let body: Value = serde_json::from_str(&get_ok(hub, session, path)).unwrap();
    body["installed"].clone()
}

/// `(namespace, name)` of every instance the body's only kind lists, and that kind.
fn listed(installed: &Value) -> (Vec<(String, String)>, Value) {
    let kinds = installed["kinds"].as_array().expect("kinds");
    assert_eq!(kinds.len(), 1, "{installed}");
    let names = kinds[0]["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["namespace"].as_str().unwrap().to_string(),
                i["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (names, kinds[0].clone())
}

/// A Database with `conditions` in its status (none: no status at all).
async fn database(api: &Api<DynamicObject>, group: &str, name: &str, conditions: Option<Value>) {
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{group}/v1"), "kind": "Database",
        "metadata": {"name": name},
        "spec": {"engine": "postgres"},
    }))
    .unwrap();
    api.create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("creating Database {name}: {e}"));
    if let Some(conditions) = conditions {
        api.patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Ready", "conditions": conditions}})),
        )
        .await
        .unwrap_or_else(|e| panic!("writing the status of Database {name}: {e}"));
    }
}

/// A ClusterRole and its binding, removed when dropped.
struct ClusterGrant(String);

impl ClusterGrant {
    /// Lets `user` read Catalogs, Subscriptions and Blueprints in every namespace.
    async fn windlass_reader(admin: &Client, user: &str) -> ClusterGrant {
        let name = unique_name("hub-instances-reader");
        let objects = [
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": name},
                "rules": [{"apiGroups": ["windlass.dev"], "resources": ["catalogs", "subscriptions", "blueprints"], "verbs": ["get", "list"]}],
            }),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
            }),
        ];
        apply(admin, &objects).await;
        wait_until_authorized(admin, user, "", ("windlass.dev", "subscriptions", "list")).await;
        ClusterGrant(name)
    }
}

impl Drop for ClusterGrant {
    fn drop(&mut self) {
        for kind in ["clusterrolebinding", "clusterrole"] {
            let _ = windlass_testkit::kubectl()
                .args([
                    "delete",
                    kind,
                    &self.0,
                    "--ignore-not-found",
                    "--wait=false",
                ])
                .output();
        }
    }
}

/// Server-side-applies RBAC objects given as JSON.
async fn apply(admin: &Client, objects: &[Value]) {
    for object in objects {
        let object: DynamicObject = serde_json::from_value(object.clone()).unwrap();
        let kind = object.types.as_ref().unwrap().kind.clone();
        let gvk = kube::core::GroupVersionKind::gvk("rbac.authorization.k8s.io", "v1", &kind);
        let resource = kube::core::ApiResource::from_gvk(&gvk);
        let api: Api<DynamicObject> = match object.metadata.namespace.as_deref() {
            Some(ns) => Api::namespaced_with(admin.clone(), ns, &resource),
            None => Api::all_with(admin.clone(), &resource),
        };
        let name = object.metadata.name.clone().unwrap();
        api.patch(
            &name,
            &PatchParams::apply("windlass-e2e").force(),
            &Patch::Apply(&object),
        )
        .await
        .unwrap_or_else(|e| panic!("applying {kind} {name}: {e}"));
    }
}

/// Given a package of the test's own (acme-db's bundle under an API group of its own) installed
/// in namespaces A and B, with Databases in A (one with conditions, one without a status), in B,
/// and in a namespace C no install watches: the admin's page and read API list all four with
/// their conditions. A user who may read Subscriptions everywhere but Databases only in A sees
/// A's alone, and both page and API say B was not readable; a user who may read only A (no
/// Subscriptions across namespaces) finds the install from the page's namespace and sees A's
/// Databases as well. Once the catalog delists the package, the page and API say what to
/// reclaim: both Subscriptions with their Databases, and C's, which no install watches.
#[tokio::test]
async fn an_installed_packages_page_lists_its_custom_resources_as_the_person_may_read_them() {
    require_manager();
    let admin = windlass_testkit::client().await;
    let isolated = Isolated::new("hubinst");
    let image = isolated.publish("acme-db/1.0.0", |_| {}).await;
    let catalog = TestCatalog::serving(&admin, "hubinst", &[image]).await;
    let a = TestNamespace::create(&admin, "hub-inst-a").await;
    let b = TestNamespace::create(&admin, "hub-inst-b").await;
    let c = TestNamespace::create(&admin, "hub-inst-c").await;
    for ns in [&a, &b] {
        subscribe(
            &admin,
            &ns.name,
            "db",
            json!({"package": isolated.package, "catalog": catalog.name, "targetNamespaces": [ns.name]}),
        )
        .await;
    }
    for ns in [&a, &b] {
        wait_blueprint(&admin, &ns.name, "db", "1.0.0 Succeeded", TIMEOUT, |bp| {
            is_at(bp, BlueprintPhase::Succeeded, "1.0.0")
        })
        .await;
    }
    let ready = |status: &str, reason: &str, message: &str| {
        Some(
            json!([{"type": "Ready", "status": status, "reason": reason, "message": message,
            "lastTransitionTime": "2026-01-01T00:00:00Z"}]),
        )
    };
    let group = &isolated.group;
    database(
        &isolated.databases(&admin, &a.name, "v1"),
        group,
        "orders",
        ready("True", "Running", "3/3 replicas <ready>"),
    )
    .await;
    database(
        &isolated.databases(&admin, &a.name, "v1"),
        group,
        "billing",
        None,
    )
    .await;
    database(
        &isolated.databases(&admin, &b.name, "v1"),
        group,
        "inventory",
        ready("False", "Provisioning", "waiting for volumes"),
    )
    .await;
    database(
        &isolated.databases(&admin, &c.name, "v1"),
        group,
        "stray",
        ready("Unknown", "NoOperator", ""),
    )
    .await;

    let page = format!("/packages/{}/{}", catalog.name, isolated.package);
    let api = format!(
        "/api/v1/packages/{}?catalog={}",
        isolated.package, catalog.name
    );
    let admin_hub = HubProcess::kubeconfig(&windlass_testkit::kubeconfig_path());
    let admins = sign_in(&admin_hub);

    // The admin: every install and every Database, with its conditions.
    let html = get_ok(&admin_hub, &admins, &page);
    for ns in [&a.name, &b.name] {
        assert!(
            html.contains(&format!(
                "<tr data-namespace=\"{ns}\" data-subscription=\"db\"><td>{ns}/db</td><td>1.0.0</td><td>{ns}</td>"
            )),
            "{html}"
        );
    }
    assert!(html.contains(&format!(
        "<section class=\"kind\" data-crd=\"{}\">",
        isolated.crd_name()
    )));
    assert!(
        html.contains("<li class=\"status-true\"><strong>Ready</strong> True <span class=\"reason\">Running</span>: <span class=\"detail\">3/3 replicas &lt;ready&gt;</span></li>"),
        "{html}"
    );
    assert!(html.contains(&format!(
        "<tr data-namespace=\"{}\" data-name=\"billing\">",
        a.name
    )));
    assert!(html.contains("<span class=\"empty\">no conditions</span>"));
    assert!(html.contains("<li class=\"status-false\"><strong>Ready</strong> False <span class=\"reason\">Provisioning</span>"));
    assert!(html.contains(&format!(
        "<tr data-namespace=\"{}\" data-name=\"stray\">",
        c.name
    )));
    assert!(!html.contains("not readable"), "{html}");
    assert!(!html.contains("id=\"reclaim\""));

    let body = installed(&admin_hub, &admins, &api);
    assert_eq!(body["subscriptions"]["allNamespaces"], true, "{body}");
    assert_eq!(body["installs"].as_array().unwrap().len(), 2, "{body}");
    assert_eq!(body["installs"][0]["version"], "1.0.0");
    let (names, kind) = listed(&body);
    let pair = |ns: &str, n: &str| (ns.to_string(), n.to_string());
    assert_eq!(
        names,
        [
            pair(&a.name, "billing"),
            pair(&a.name, "orders"),
            pair(&b.name, "inventory"),
            pair(&c.name, "stray"),
        ]
    );
    assert_eq!(kind["crd"], json!(isolated.crd_name()));
    assert_eq!(kind["reach"]["allNamespaces"], true);
    assert_eq!(
        kind["instances"][1]["conditions"],
        json!([{"type": "Ready", "status": "True", "reason": "Running", "message": "3/3 replicas <ready>"}])
    );
    assert_eq!(kind["instances"][0]["conditions"], json!([]));
    assert!(kind["instances"][0]["age"].is_string());

    // A user who may read Subscriptions everywhere, Databases in A only.
    let reader = unique_name("hub-instances-reader");
    let _windlass = ClusterGrant::windlass_reader(&admin, &reader).await;
    let only_a = unique_name("hub-instances-ns-reader");
    let _only_a = ReadOnly::grant(&admin, &only_a, &a.name).await;
    apply(
        &admin,
        &[
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "databases-reader", "namespace": a.name},
                "rules": [{"apiGroups": [group], "resources": ["databases"], "verbs": ["get", "list"]}],
            }),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "databases-reader", "namespace": a.name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "databases-reader"},
                "subjects": [
                    {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": reader},
                    {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": only_a},
                ],
            }),
        ],
    )
    .await;
    for user in [&reader, &only_a] {
        wait_until_authorized(&admin, user, &a.name, (group, "databases", "list")).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let reader_hub = HubProcess::kubeconfig(&impersonating_kubeconfig(&reader, dir.path()));
    let readers = sign_in(&reader_hub);
    let html = get_ok(&reader_hub, &readers, &page);
    assert!(html.contains(&format!(
        "<tr data-namespace=\"{}\" data-name=\"orders\">",
        a.name
    )));
    assert!(!html.contains("data-name=\"inventory\""), "{html}");
    assert!(!html.contains("data-name=\"stray\""), "{html}");
    // B, where the package is installed, is named as not readable (and so is the person's
    // default namespace, also looked in).
    assert!(
        html.contains(&format!(
            "<span class=\"not-readable\">2 namespaces not readable: {}, {}.</span>",
            b.name,
            admin.default_namespace()
        )),
        "{html}"
    );
    assert!(
        html.contains("databases could not be listed across namespaces ("),
        "{html}"
    );
    let body = installed(&reader_hub, &readers, &api);
    assert_eq!(
        body["installs"].as_array().unwrap().len(),
        2,
        "both installs: {body}"
    );
    let (names, kind) = listed(&body);
    assert_eq!(names, [pair(&a.name, "billing"), pair(&a.name, "orders")]);
    assert_eq!(kind["reach"]["allNamespaces"], false);
    assert_eq!(
        kind["reach"]["notReadable"],
        json!([b.name, admin.default_namespace()]),
        "{kind}"
    );
    assert!(
        kind["reach"]["refusal"]
            .as_str()
            .unwrap()
            .contains(&format!("User \"{reader}\"")),
        "the API server's words: {kind}"
    );

    // A user who may read only namespace A finds the install from the page's namespace.
    let ns_hub = HubProcess::kubeconfig(&impersonating_kubeconfig(&only_a, dir.path()));
    let ns_session = sign_in(&ns_hub);
    let body = installed(&ns_hub, &ns_session, &format!("{api}&namespace={}", a.name));
    assert_eq!(body["subscriptions"]["allNamespaces"], false, "{body}");
    assert!(
        body["subscriptions"]["namespaces"]
            .as_array()
            .unwrap()
            .contains(&json!(a.name))
    );
    let subscriptions: Vec<&str> = body["installs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["namespace"].as_str().unwrap())
        .collect();
    assert_eq!(subscriptions, [a.name.as_str()], "{body}");
    assert_eq!(
        listed(&body).0,
        [pair(&a.name, "billing"), pair(&a.name, "orders")]
    );

    // Delisted whole: what to reclaim.
    Api::<Catalog>::all(admin.clone())
        .patch(
            &catalog.name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"delisted": [{"package": isolated.package, "reason": "end of support"}]}})),
        )
        .await
        .unwrap();
    wait_until("the hub to show the delist", TIMEOUT, || async {
        get(&admin_hub, &admins, &page).1.contains("id=\"reclaim\"")
    })
    .await;
    let html = get_ok(&admin_hub, &admins, &page);
    assert!(
        html.contains(&format!(
            "<p>Catalog {} delists this package: these installs keep running without upgrades.",
            catalog.name
        )),
        "{html}"
    );
    assert!(html.contains(&format!(
        "Subscription <strong>{a}/db</strong> (version 1.0.0)<ul class=\"instance-refs\"><li>Database {a}/billing</li><li>Database {a}/orders</li></ul>",
        a = a.name
    )), "{html}");
    assert!(html.contains(&format!(
        "Subscription <strong>{b}/db</strong> (version 1.0.0)<ul class=\"instance-refs\"><li>Database {b}/inventory</li></ul>",
        b = b.name
    )), "{html}");
    assert!(html.contains(&format!(
        "<p>And its custom resources in namespaces no install watches:</p><ul class=\"instance-refs\"><li>Database {}/stray</li></ul>",
        c.name
    )), "{html}");
    assert!(!html.contains("id=\"reclaim-incomplete\""), "{html}");
    let reclaim = &installed(&admin_hub, &admins, &api)["reclaim"];
    assert_eq!(reclaim["whole"], true, "{reclaim}");
    assert_eq!(reclaim["incomplete"], false);
    assert_eq!(reclaim["installs"].as_array().unwrap().len(), 2);
    assert_eq!(
        reclaim["unwatched"],
        json!([{"kind": "Database", "namespace": c.name, "name": "stray"}])
    );
    // The reader is told both installs and only A's Databases, and that the list is partial.
    let html = get_ok(&reader_hub, &readers, &page);
    assert!(
        html.contains(&format!("Subscription <strong>{}/db</strong>", b.name)),
        "{html}"
    );
    assert!(!html.contains("inventory"), "{html}");
    assert!(html.contains("id=\"reclaim-incomplete\""), "{html}");
}
