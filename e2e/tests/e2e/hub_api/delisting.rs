//! Delisting and relisting through the hub's actions, with curl: done as the person (a
//! read-only user is refused by the API server and nothing changes), written under the field
//! manager `windlass catalog delist | relist` uses, and seen at once in the package API.

use std::time::Duration;

use kube::Api;
use serde_json::{Value, json};
use windlass_api::{
    Catalog, Package,
    names::{DELIST_FIELD_MANAGER, package_view},
};
use windlass_testkit::{
    TestNamespace,
    catalogs::{TestCatalog, publish},
    lifecycle::wait_object,
    require_manager, unique_name,
};

use super::{Session, TIMEOUT, sign_in};
use crate::common::{
    hub::{HubProcess, curl, impersonating_kubeconfig},
    hub_rbac::ReadOnly,
};

/// Posts a hub action as the signed-in session; returns the status and the JSON answer.
fn post_action(hub: &HubProcess, session: &Session, action: &str, form: &str) -> (u16, Value) {
    let (status, _, body) = curl(&[
        "-H",
        &format!("Cookie: {}", session.cookie),
        "-H",
        &format!("Origin: {}", hub.url),
        "-H",
        &format!("X-CSRF-Token: {}", session.csrf),
        "--data",
        form,
        &format!("{}/actions/{action}", hub.url),
    ]);
    let answer = serde_json::from_slice(&body).unwrap_or_else(|e| {
        panic!(
            "{action}: not JSON ({e}): {}",
            String::from_utf8_lossy(&body)
        )
    });
    (status, answer)
}

/// GETs `path` as the session; returns the status and the body as text.
fn get_text(hub: &HubProcess, session: &Session, path: &str) -> (u16, String) {
    let (status, _, body) = curl(&[
        "-H",
        &format!("Cookie: {}", session.cookie),
        &format!("{}{path}", hub.url),
    ]);
    (status, String::from_utf8(body).unwrap())
}

/// The package names `/api/v1/packages?<query>` answers with.
fn listed_names(hub: &HubProcess, session: &Session, query: &str) -> Vec<String> {
    let (status, body) = get_text(hub, session, &format!("/api/v1/packages?{query}"));
    assert_eq!(status, 200, "{body}");
    let list: Value = serde_json::from_str(&body).unwrap();
    list["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect()
}

/// The Catalog's `spec.delisted` and generation, read as the admin.
async fn delisted_and_generation(catalogs: &Api<Catalog>, name: &str) -> (Value, Option<i64>) {
    let catalog = catalogs.get(name).await.unwrap();
    (
        serde_json::to_value(&catalog.spec.delisted).unwrap(),
        catalog.metadata.generation,
    )
}

/// Given a package at 1.0.0 and 1.0.1 in a catalog of the test's own, and two hubs, one acting
/// as the admin and one as a user who may read Catalogs but not edit them: the user's page
/// offers no Delist, the admin's does. When the user posts Delist anyway, the API server's
/// refusal names them and the Catalog (read as the admin) is unchanged. When the admin delists
/// 1.0.1, the Catalog's spec holds it under the CLI's field manager, the package's detail marks
/// it, and `windlass catalog relist` takes it back without --force. When the admin delists the
/// whole package, the package API leaves it out and the manager's Package view says it is not
/// listed; the user's relist is refused too, and the admin's relist brings it back.
#[tokio::test]
async fn delisting_through_the_hub_is_done_as_the_person_and_shared_with_the_cli() {
    require_manager();
    let admin = windlass_testkit::client().await;
    let ns = TestNamespace::create(&admin, "hub-delist-api").await;
    let package = unique_name("hubdlapi");
    let images = [
        publish(&package, "acme-db/1.0.0", |_| {}).await,
        publish(&package, "acme-db/1.0.1", |_| {}).await,
    ];
    let catalog = TestCatalog::serving(&admin, "hubdlapi", &images).await;
    let catalogs = Api::<Catalog>::all(admin.clone());
    let views = Api::<Package>::all(admin.clone());
    let view_name = package_view::name(&catalog.name, &package);
    let user = unique_name("hub-catalog-reader");
    let _grants = ReadOnly::grant(&admin, &user, &ns.name).await;
    let dir = tempfile::tempdir().unwrap();
    let admin_hub = HubProcess::kubeconfig(&windlass_testkit::kubeconfig_path());
    let reader_hub = HubProcess::kubeconfig(&impersonating_kubeconfig(&user, dir.path()));
    let admins = sign_in(&admin_hub);
    let readers = sign_in(&reader_hub);
    let page = format!("/packages/{}/{package}", catalog.name);
    let search = format!("q={package}");
    let whole = format!("catalog={}&package={package}", catalog.name);

    // Only the admin is offered the forms; both see the package listed.
    let (status, admin_page) = get_text(&admin_hub, &admins, &page);
    assert_eq!(status, 200, "{admin_page}");
    assert!(
        admin_page.contains(&format!("Delist from catalog {}", catalog.name)),
        "{admin_page}"
    );
    let (status, reader_page) = get_text(&reader_hub, &readers, &page);
    assert_eq!(status, 200, "{reader_page}");
    assert!(reader_page.contains("id=\"install-submit\""));
    assert!(!reader_page.contains("id=\"delisting\""), "{reader_page}");
    assert_eq!(
        listed_names(&reader_hub, &readers, &search),
        std::slice::from_ref(&package)
    );

    // The user's delist, posted anyway: refused by the API server, and nothing changes.
    let before = delisted_and_generation(&catalogs, &catalog.name).await;
    assert_eq!(before.0, json!([]));
    let (status, answer) = post_action(
        &reader_hub,
        &readers,
        "delist",
        &format!("{whole}&reason=mine"),
    );
    assert_eq!(status, 403, "{answer}");
    let message = answer["message"].as_str().unwrap();
    assert!(
        message.contains("forbidden")
            && message.contains(&format!("User \"{user}\""))
            && message.contains("cannot patch resource \"catalogs\""),
        "the API server's reason, naming the person: {message}"
    );
    for _ in 0..6 {
        assert_eq!(
            delisted_and_generation(&catalogs, &catalog.name).await,
            before,
            "a refused delist changed the Catalog"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // The admin delists one version: the spec says so, under the CLI's field manager.
    let (status, answer) = post_action(
        &admin_hub,
        &admins,
        "delist",
        &format!("{whole}&version=1.0.1&reason=CVE-1"),
    );
    assert_eq!(status, 200, "{answer}");
    assert!(
        answer["message"].as_str().unwrap().contains(&format!(
            "version 1.0.1 of package {package} delisted (CVE-1)"
        )),
        "{answer}"
    );
    let object = catalogs.get(&catalog.name).await.unwrap();
    assert_eq!(
        serde_json::to_value(&object.spec.delisted).unwrap(),
        json!([{"package": package, "versions": ["1.0.1"], "reason": "CVE-1"}])
    );
    assert!(
        object.metadata.managed_fields.iter().flatten().any(|m| {
            m.manager.as_deref() == Some(DELIST_FIELD_MANAGER)
                && m.operation.as_deref() == Some("Apply")
        }),
        "{:?}",
        object.metadata.managed_fields
    );
    let (_, detail) = get_text(
        &admin_hub,
        &admins,
        &format!("/api/v1/packages/{package}?catalog={}", catalog.name),
    );
    let detail: Value = serde_json::from_str(&detail).unwrap();
    assert_eq!(detail["delisted"]["versions"], json!(["1.0.1"]), "{detail}");
    assert_eq!(detail["latestVersion"], "1.0.0", "{detail}");
    wait_object(&views, &view_name, "1.0.1 delisted", TIMEOUT, |p| {
        p.status
            .as_ref()
            .is_some_and(|s| s.listed && s.delisted_versions == ["1.0.1"])
    })
    .await;
    // The CLI shares the field manager: it relists what the hub delisted, without --force.
    let (ok, out, err) = crate::catalog_listing::run_windlass(&[
        "catalog",
        "relist",
        &format!("{package}@1.0.1"),
        "--catalog",
        &catalog.name,
    ]);
    assert!(ok, "{out}{err}");
    assert_eq!(
        delisted_and_generation(&catalogs, &catalog.name).await.0,
        json!([])
    );

    // The whole package: gone from the list for new installs, there when asked for.
    let (status, answer) = post_action(
        &admin_hub,
        &admins,
        "delist",
        &format!("{whole}&reason=end+of+support"),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        delisted_and_generation(&catalogs, &catalog.name).await.0,
        json!([{"package": package, "reason": "end of support"}])
    );
    assert!(listed_names(&admin_hub, &admins, &search).is_empty());
    assert!(listed_names(&reader_hub, &readers, &search).is_empty());
    assert_eq!(
        listed_names(&admin_hub, &admins, &format!("{search}&delisted=include")),
        std::slice::from_ref(&package)
    );
    wait_object(&views, &view_name, "not listed", TIMEOUT, |p| {
        p.status.as_ref().is_some_and(|s| !s.listed)
    })
    .await;
    let (_, reader_page) = get_text(&reader_hub, &readers, &page);
    assert!(
        reader_page.contains(&format!(
            "package {package} is delisted by catalog {} (end of support)",
            catalog.name
        )),
        "{reader_page}"
    );
    assert!(!reader_page.contains("id=\"install-submit\""));

    // The user's relist is refused as well; the admin's lists it again.
    let before = delisted_and_generation(&catalogs, &catalog.name).await;
    let (status, answer) = post_action(&reader_hub, &readers, "relist", &whole);
    assert_eq!(status, 403, "{answer}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        delisted_and_generation(&catalogs, &catalog.name).await,
        before
    );
    let (status, answer) = post_action(&admin_hub, &admins, "relist", &whole);
    assert_eq!(status, 200, "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains(&format!("package {package} listed again")),
        "{answer}"
    );
    assert_eq!(
        delisted_and_generation(&catalogs, &catalog.name).await.0,
        json!([])
    );
    assert_eq!(
        listed_names(&admin_hub, &admins, &search),
        std::slice::from_ref(&package)
    );
    wait_object(&views, &view_name, "listed again", TIMEOUT, |p| {
        p.status
            .as_ref()
            .is_some_and(|s| s.listed && s.delisted_versions.is_empty())
    })
    .await;
    // Asking for a version the catalog does not have names what it has.
    let (status, answer) = post_action(
        &admin_hub,
        &admins,
        "delist",
        &format!("{whole}&version=9.9.9"),
    );
    assert_eq!(status, 404, "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains("does not serve version 9.9.9"),
        "{answer}"
    );
}
