//! The hub's read API and its defences over HTTP, with curl: the real-bundle corpus served by a
//! Catalog reads back as `windlass catalog render` writes it; state changes without the CSRF
//! token or from another origin are refused; every response carries the Content-Security-
//! Policy; in the cluster's mode each token is reviewed and acted with, so RBAC decides;
//! delisting and relisting are done as the person, refused when they may not edit Catalogs,
//! and shared with `windlass catalog delist | relist`; an installed package's page lists the
//! custom resources it manages as the person may read them, and after a delist what to
//! reclaim.

use std::{process::Command, time::Duration};

use k8s_openapi::api::{core::v1::ServiceAccount, rbac::v1::Role};
use kube::{
    Api,
    api::{DeleteParams, PostParams},
};
use serde_json::{Value, json};
use windlass_api::{Catalog, Subscription, catalog::CatalogPhase};
use windlass_hub::security::CONTENT_SECURITY_POLICY;
use windlass_testkit::{
    TestNamespace, catalogs::phase as catalog_phase, kubectl, lifecycle::wait_object, registry,
    require_manager, run_ok, unique_name, wait_until_authorized, windlass_binary,
};

use crate::common::{
    hub::{HubProcess, curl, header},
    hub_rbac::grant_namespace_reader,
};

mod delisting;
mod instances;

const TIMEOUT: Duration = Duration::from_secs(300);

/// JSON values one after another (pretty or one per line).
fn json_stream(bytes: &[u8]) -> Vec<Value> {
    serde_json::Deserializer::from_slice(bytes)
        .into_iter::<Value>()
        .map(|v| v.expect("a JSON value"))
        .collect()
}

/// An Image Catalog of the test's own, deleted when dropped.
struct ImageCatalog {
    name: String,
}

impl Drop for ImageCatalog {
    fn drop(&mut self) {
        let _ = kubectl()
            .args([
                "delete",
                "catalog.windlass.dev",
                &self.name,
                "--wait=false",
                "--ignore-not-found",
            ])
            .output();
    }
}

/// Given the 89-package corpus pushed as a file-based-catalog image and served by a Catalog,
/// when its content is fetched from the hub with curl, then the JSON lines are the blobs
/// `windlass catalog render` writes for the same folder; they come gzipped when asked, with a
/// Last-Modified that If-Modified-Since honours; and the package endpoints find its packages.
#[tokio::test]
async fn the_corpus_served_by_a_catalog_reads_back_through_curl_as_catalog_render_writes_it() {
    let Some(corpus) = windlass_corpus::operatorhub_or_skip() else {
        return;
    };
    require_manager();
    let admin = windlass_testkit::client().await;
    let corpus = corpus.display().to_string();
    let image = format!("{}:v1", registry().unique_repository("hub-corpus"));
    run_ok(Command::new(windlass_binary()).args([
        "catalog",
        "push",
        &corpus,
        &image,
        "--plain-http",
    ]));
    let name = unique_name("hub-corpus");
    let _guard = ImageCatalog { name: name.clone() };
    let catalog: Catalog = serde_json::from_value(json!({
        "apiVersion": "windlass.dev/v1alpha1", "kind": "Catalog",
        "metadata": {"name": name, "labels": {windlass_testkit::TEST_NAMESPACE_LABEL: "true"}},
        "spec": {"source": {"type": "Image", "image": image, "plainHTTP": true}, "priority": -300},
    }))
    .unwrap();
    let catalogs = Api::<Catalog>::all(admin.clone());
    catalogs
        .create(&PostParams::default(), &catalog)
        .await
        .unwrap();
    wait_object(&catalogs, &name, "Serving", TIMEOUT, |c| {
        catalog_phase(c) == Some(CatalogPhase::Serving)
    })
    .await;

    let hub = HubProcess::kubeconfig(&windlass_testkit::kubeconfig_path());
    let auth = format!("Authorization: Bearer {}", hub.token);
    let all = format!("{}/api/v1/catalogs/{name}/all", hub.url);
    let (status, headers, body) = curl(&["--compressed", "-H", &auth, &all]);
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(
        header(&headers, "content-encoding"),
        Some("gzip"),
        "{headers}"
    );
    assert_eq!(header(&headers, "content-type"), Some("application/jsonl"));
    let served = json_stream(&body);
    assert!(
        body.split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count()
            == served.len(),
        "one object per line"
    );

    let render = |source: &str, extra: &[&str]| {
        let output = Command::new(windlass_binary())
            .args(["catalog", "render", source, "-o", "json"])
            .args(extra)
            .output()
            .unwrap();
        assert!(output.status.success());
        output.stdout
    };
    let count_packages = |blobs: &[Value]| {
        blobs
            .iter()
            .filter(|b| b["schema"] == "olm.package")
            .count()
    };
    let plain = render(&corpus, &[]);
    assert_eq!(
        count_packages(&json_stream(&plain)),
        89,
        "the corpus has 89 packages"
    );
    // The Catalog serves the corpus as a file-based catalog, through the listing gate: what
    // `render --offered` writes of that file-based catalog (which carries no CSVs to lint).
    let fbc_dir = tempfile::tempdir().unwrap();
    let fbc = fbc_dir.path().join("catalog.json");
    std::fs::write(&fbc, &plain).unwrap();
    let rendered = json_stream(&render(&fbc.display().to_string(), &["--offered"]));
    assert_eq!(count_packages(&served), count_packages(&rendered));
    let key = |b: &Value| format!("{} {} {}", b["schema"], b["package"], b["name"]);
    let keys = |blobs: &[Value]| {
        blobs
            .iter()
            .map(key)
            .collect::<std::collections::BTreeSet<_>>()
    };
    assert_eq!(
        served.len(),
        rendered.len(),
        "served only: {:?}; rendered only: {:?}",
        keys(&served)
            .difference(&keys(&rendered))
            .collect::<Vec<_>>(),
        keys(&rendered)
            .difference(&keys(&served))
            .collect::<Vec<_>>()
    );
    for (served, rendered) in served.iter().zip(&rendered) {
        assert_eq!(
            served, rendered,
            "a blob differs from `windlass catalog render`"
        );
    }

    // Unchanged since: 304 and no body.
    let modified = header(&headers, "last-modified")
        .expect("Last-Modified")
        .to_string();
    let since = format!("If-Modified-Since: {modified}");
    let (status, _, body) = curl(&["-H", &auth, "-H", &since, &all]);
    assert_eq!((status, body.len()), (304, 0));
    let (status, _, _) = curl(&[
        "-H",
        &auth,
        "-H",
        "If-Modified-Since: Mon, 01 Jan 2001 00:00:00 GMT",
        &all,
    ]);
    assert_eq!(status, 200);

    // The package endpoints find the corpus's packages.
    let search = format!("{}/api/v1/packages?q=etcd&catalog={name}", hub.url);
    let (status, _, body) = curl(&["-H", &auth, &search]);
    assert_eq!(status, 200);
    let found: Value = serde_json::from_slice(&body).unwrap();
    assert!(
        found["packages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "etcd"),
        "{found}"
    );
    let one = format!("{}/api/v1/packages/etcd?catalog={name}", hub.url);
    let (status, _, body) = curl(&["-H", &auth, &one]);
    assert_eq!(status, 200);
    let etcd: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(etcd["catalog"], json!(name));
    assert!(!etcd["channels"].as_array().unwrap().is_empty());
    assert!(!etcd["versions"].as_array().unwrap().is_empty());
    assert!(etcd["channels"][0]["edges"].is_array());
    let missing = format!("{}/api/v1/packages/no-such-package", hub.url);
    assert_eq!(curl(&["-H", &auth, &missing]).0, 404);
    // Without the launch token nothing is served.
    assert_eq!(curl(&[&all]).0, 401);
    assert_eq!(curl(&["-H", "Authorization: Bearer wrong", &all]).0, 401);
}

/// The session cookie, the CSRF token of its pages, and curl arguments that send the cookie.
struct Session {
    cookie: String,
    csrf: String,
}

fn sign_in(hub: &HubProcess) -> Session {
    let (status, headers, _) = curl(&[&hub.login_url()]);
    assert_eq!(status, 303);
    let set_cookie = header(&headers, "set-cookie")
        .expect("a session cookie")
        .to_string();
    assert!(
        set_cookie.contains("HttpOnly") && set_cookie.contains("SameSite=Strict"),
        "{set_cookie}"
    );
    let cookie = set_cookie.split(';').next().unwrap().to_string();
    let (status, headers, body) =
        curl(&["-H", &format!("Cookie: {cookie}"), &format!("{}/", hub.url)]);
    assert_eq!(status, 200);
    assert_eq!(
        header(&headers, "content-security-policy"),
        Some(CONTENT_SECURITY_POLICY)
    );
    let page = String::from_utf8(body).unwrap();
    let csrf = page
        .split("<meta name=\"csrf-token\" content=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the page carries its CSRF token")
        .to_string();
    Session { cookie, csrf }
}

/// Given a signed-in browser session, when an install is posted without the CSRF token, with a
/// wrong one, or from another origin, then each is refused with 403 and nothing is created;
/// the same request with the token from the hub's own origin creates the Subscription. Every
/// response (pages, API, errors, assets) carries the strict Content-Security-Policy.
#[tokio::test]
async fn state_changes_need_the_csrf_token_and_the_hubs_origin_and_every_response_has_the_policy() {
    require_manager();
    let admin = windlass_testkit::client().await;
    let ns = TestNamespace::create(&admin, "hub-csrf").await;
    let hub = HubProcess::kubeconfig(&windlass_testkit::kubeconfig_path());
    let session = sign_in(&hub);
    let cookie = format!("Cookie: {}", session.cookie);
    let install = format!("{}/actions/install", hub.url);
    let form = format!(
        "catalog=builtin&package=acme-db&namespace={}&channel=candidate&approval=Manual",
        ns.name
    );
    let origin = format!("Origin: {}", hub.url);
    let token = format!("X-CSRF-Token: {}", session.csrf);
    let refused: [(&str, Vec<&str>); 4] = [
        ("no token", vec!["-H", &cookie, "-H", &origin]),
        (
            "a wrong token",
            vec!["-H", &cookie, "-H", &origin, "-H", "X-CSRF-Token: 00ff"],
        ),
        (
            "another origin",
            vec![
                "-H",
                &cookie,
                "-H",
                "Origin: http://evil.example",
                "-H",
                &token,
            ],
        ),
        (
            "another site's referrer",
            vec![
                "-H",
                &cookie,
                "-H",
                "Referer: http://evil.example/page",
                "-H",
                &token,
            ],
        ),
    ];
    for (what, headers) in refused {
        let mut args = headers.clone();
        args.extend(["--data", &form, &install]);
        let (status, response_headers, body) = curl(&args);
        assert_eq!(status, 403, "{what}: {}", String::from_utf8_lossy(&body));
        assert_eq!(
            header(&response_headers, "content-security-policy"),
            Some(CONTENT_SECURITY_POLICY)
        );
    }
    let subscriptions = Api::<Subscription>::namespaced(admin.clone(), &ns.name);
    for _ in 0..6 {
        assert!(
            subscriptions
                .list(&Default::default())
                .await
                .unwrap()
                .items
                .is_empty(),
            "a refused request created something"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // A sign-in started by another site is refused too.
    let (status, _, _) = curl(&[
        "-H",
        "Origin: http://evil.example",
        "--data",
        &format!("token={}", hub.token),
        &format!("{}/login", hub.url),
    ]);
    assert_eq!(status, 403);

    // The hub's own page's request goes through (the token also works as a form field).
    let with_field = format!("{form}&csrf={}", session.csrf);
    let (status, _, body) = curl(&[
        "-H",
        &cookie,
        "-H",
        &origin,
        "--data",
        &with_field,
        &install,
    ]);
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let created = subscriptions.get("acme-db").await.unwrap();
    assert_eq!(created.spec.target_namespaces, Some(vec![ns.name.clone()]));

    for path in [
        "/",
        "/packages/builtin/acme-db",
        "/installed",
        "/api/v1/packages",
        "/graphs/builtin/acme-db/stable.svg",
        "/static/hub.js",
        "/no-such-page",
    ] {
        let (status, headers, _) = curl(&["-H", &cookie, &format!("{}{path}", hub.url)]);
        assert!(status == 200 || status == 404, "{path}: {status}");
        let policy = header(&headers, "content-security-policy").unwrap_or_default();
        assert!(
            policy.contains("default-src 'none'") && policy.contains("frame-ancestors 'none'"),
            "{path}: {policy:?}"
        );
        assert_eq!(
            header(&headers, "x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
    }
    let (_, headers, body) = curl(&[
        "-H",
        &cookie,
        &format!("{}/graphs/builtin/acme-db/stable.svg", hub.url),
    ]);
    assert_eq!(header(&headers, "content-type"), Some("image/svg+xml"));
    assert!(String::from_utf8_lossy(&body).contains("class=\"node head\""));
    // Unauthenticated: nothing but the sign-in page.
    assert_eq!(curl(&[&format!("{}/api/v1/packages", hub.url)]).0, 401);
    assert_eq!(curl(&["--data", &form, &install]).0, 401);
}

/// Given the hub in the cluster's mode (`--auth token`) and a ServiceAccount that may read
/// catalogs and its namespace's Subscriptions, when requests carry no token, a token the API
/// server rejects, or that account's token, then the first two get 401 and the third reads the
/// catalogs; its install is refused by the API server naming the account, and nothing is
/// created: the hub acted with the person's token, not its own rights.
#[tokio::test]
async fn in_the_clusters_mode_each_token_is_reviewed_and_acted_with() {
    require_manager();
    let admin = windlass_testkit::client().await;
    let ns = TestNamespace::create(&admin, "hub-token").await;
    let account = "hub-reader";
    Api::<ServiceAccount>::namespaced(admin.clone(), &ns.name)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": account}})).unwrap(),
        )
        .await
        .unwrap();
    let user = format!("system:serviceaccount:{}:{account}", ns.name);
    grant_namespace_reader(
        &admin,
        &ns.name,
        "hub-reader",
        json!({"kind": "ServiceAccount", "name": account, "namespace": ns.name}),
        &["get", "list"],
    )
    .await;
    wait_until_authorized(
        &admin,
        &user,
        &ns.name,
        ("windlass.dev", "subscriptions", "list"),
    )
    .await;
    let token = run_ok(kubectl().args(["create", "token", account, "-n", &ns.name]));
    let token = token.trim();

    let hub = HubProcess::token_mode();
    let installed = format!("{}/installed/rows?namespace={}", hub.url, ns.name);
    assert_eq!(curl(&[&installed]).0, 401);
    let (status, _, body) = curl(&["-H", "Authorization: Bearer not-a-token", &installed]);
    assert_eq!(status, 401);
    assert!(String::from_utf8_lossy(&body).contains("does not accept"));
    let auth = format!("Authorization: Bearer {token}");
    let (status, _, body) = curl(&["-H", &auth, &installed]);
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert!(String::from_utf8_lossy(&body).contains("No Subscriptions"));
    // Catalogs are cluster-scoped and this account may not list them: the API server says so.
    let (status, _, body) = curl(&["-H", &auth, &format!("{}/api/v1/packages", hub.url)]);
    assert_eq!(status, 403, "{}", String::from_utf8_lossy(&body));
    assert!(String::from_utf8_lossy(&body).contains(&user));

    // Signed in through the form, the person installs: the API server refuses them by name.
    let (status, headers, _) = curl(&[
        "-H",
        &format!("Origin: {}", hub.url),
        "--data-urlencode",
        &format!("token={token}"),
        &format!("{}/login", hub.url),
    ]);
    assert_eq!(status, 303);
    let cookie = header(&headers, "set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let cookie = format!("Cookie: {cookie}");
    let (_, _, page) = curl(&[
        "-H",
        &cookie,
        &format!("{}/installed?namespace={}", hub.url, ns.name),
    ]);
    let page = String::from_utf8(page).unwrap();
    assert!(page.contains(&user), "signed in as the account");
    let csrf = page
        .split("<meta name=\"csrf-token\" content=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_string();
    let (status, _, body) = curl(&[
        "-H",
        &cookie,
        "-H",
        &format!("Origin: {}", hub.url),
        "-H",
        &format!("X-CSRF-Token: {csrf}"),
        "--data",
        &format!("package=acme-db&namespace={}&catalog=builtin", ns.name),
        &format!("{}/actions/install", hub.url),
    ]);
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status, 403, "{answer}");
    let message = answer["message"].as_str().unwrap();
    assert!(
        message.contains("forbidden") && message.contains(&user),
        "the API server's reason, naming the person: {message}"
    );
    let subscriptions = Api::<Subscription>::namespaced(admin.clone(), &ns.name);
    for _ in 0..6 {
        assert!(
            subscriptions
                .list(&Default::default())
                .await
                .unwrap()
                .items
                .is_empty()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let _ = Api::<Role>::namespaced(admin.clone(), &ns.name)
        .delete("hub-reader", &DeleteParams::default())
        .await;
}
