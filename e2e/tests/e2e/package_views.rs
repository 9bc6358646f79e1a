//! Package views: what the catalogs offer, one cluster-scoped `Package` per (catalog,
//! package), as `kubectl get packages.windlass.dev` and `windlass catalog list` show it. A tenant
//! with the ordinary `edit` role in their namespace reads them and cannot change them; a hand
//! edit is put back; a view follows its catalog's content and goes with the catalog.

use std::time::Duration;

use kube::{
    Api, Client,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use windlass_api::{Package, names::package_view};
use windlass_testkit::{
    catalogs::{TestCatalog, publish},
    kubectl,
    lifecycle::wait_object,
    require_manager, run_ok, unique_name, wait_until,
};

use crate::{catalog_listing::run_windlass, tenancy::self_service};

const TIMEOUT: Duration = Duration::from_secs(180);

/// The row of Package `name` as the API server's Table (what `kubectl get` prints), as
/// `client` sees it.
async fn table_row(client: &Client, name: &str) -> Vec<(String, String)> {
    let request = http::Request::get(format!("/apis/windlass.dev/v1alpha1/packages/{name}"))
        .header(
            "Accept",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )
        .body(Vec::new())
        .expect("a request");
    let table: Value = client
        .request(request)
        .await
        .expect("the Package as a Table");
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

/// Given the built-in catalog, its packages have views a tenant reads through `kubectl get`
/// with the columns "what can we install here?" asks for; the tenant can neither create, edit
/// nor delete one.
#[tokio::test]
async fn a_tenant_reads_the_package_views_and_cannot_change_them() {
    require_manager();
    let (admin, ns, as_tenant) = self_service("packages").await;
    let name = package_view::name("builtin", "acme-db");
    let views = Api::<Package>::all(admin.clone());
    let view = wait_object(&views, &name, "the built-in acme-db view", TIMEOUT, |p| {
        p.status.is_some()
    })
    .await;
    let status = view.status.clone().unwrap();
    assert_eq!(status.default_channel.as_deref(), Some("candidate"));
    assert_eq!(status.latest_version.as_deref(), Some("1.1.0"));
    assert!(status.listed);

    let row = table_row(&as_tenant, &name).await;
    for expected in [
        ("Package", "acme-db"),
        ("Catalog", "builtin"),
        ("Default Channel", "candidate"),
        ("Latest", "1.1.0"),
        ("Listed", "true"),
    ] {
        assert!(
            row.contains(&(expected.0.to_string(), expected.1.to_string())),
            "{expected:?} not in {row:?}"
        );
    }
    let provider = status.provider.as_ref().expect("a provider");
    assert!(
        row.contains(&("Provider".into(), provider.name.clone().unwrap_or_default())),
        "{row:?}"
    );
    assert!(
        row.contains(&("Provider Type".into(), provider.type_.clone())),
        "{row:?}"
    );

    // `kubectl get` as the tenant, as a person would type it.
    let user = format!("tenant-{}", ns.name);
    let printed = run_ok(kubectl().args([
        "get",
        "packages.windlass.dev",
        "--as",
        &user,
        "--as-group",
        "system:authenticated",
    ]));
    let header = printed.lines().next().unwrap_or_default();
    for column in [
        "PACKAGE",
        "CATALOG",
        "DEFAULT CHANNEL",
        "LATEST",
        "PROVIDER",
        "PROVIDER TYPE",
        "LISTED",
    ] {
        assert!(header.contains(column), "{header}");
    }
    assert!(
        printed
            .lines()
            .any(|l| l.starts_with(&name) && l.contains("candidate") && l.contains("1.1.0")),
        "{printed}"
    );

    let for_tenant = Api::<Package>::all(as_tenant.clone());
    let forbidden = |result: Result<Package, kube::Error>| matches!(result, Err(kube::Error::Api(s)) if s.code == 403);
    let mut fake = view.clone();
    fake.metadata = kube::api::ObjectMeta {
        name: Some(unique_name("fake")),
        ..Default::default()
    };
    assert!(forbidden(
        for_tenant.create(&PostParams::default(), &fake).await
    ));
    let widened = json!({"apiVersion": "windlass.dev/v1alpha1", "kind": "Package",
        "status": {"package": "acme-db", "catalog": "builtin", "listed": false}});
    assert!(forbidden(
        for_tenant
            .patch_status(
                &name,
                &PatchParams::apply("tenant").force(),
                &Patch::Apply(&widened)
            )
            .await
    ));
    assert!(forbidden(
        for_tenant
            .patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}}))
            )
            .await
    ));
    assert!(matches!(
        for_tenant.delete(&name, &DeleteParams::default()).await,
        Err(kube::Error::Api(s)) if s.code == 403
    ));
}

/// Given a catalog of the test's own whose newest CSV names an i18n provider, its view shows
/// the provider, `windlass catalog list` prints the same columns, an admin's hand edit of the
/// view is put back, a view whose package left the catalog is deleted, and the views go with
/// the catalog.
#[tokio::test]
async fn a_view_follows_its_catalog_and_is_put_back_when_edited() {
    require_manager();
    let admin = windlass_testkit::client().await;
    let package = unique_name("acme-db-view");
    let other = unique_name("acme-db-other");
    let with_provider = |object: &mut Value| {
        if object["kind"] == "ClusterServiceVersion" {
            object["metadata"]["annotations"]["provider"] =
                json!(r#"{"en":"Acme Platform","zh":"阿克米平台"}"#);
            object["metadata"]["annotations"]["provider-type"] = json!("platform");
            object["metadata"]["annotations"]["provider-url"] = json!("https://acme.example");
        }
    };
    let images = [
        publish(&package, "acme-db/1.0.0", with_provider).await,
        publish(&package, "acme-db/1.0.1", with_provider).await,
        // A CSV name of its own: a catalog offers each CSV name in one package only.
        publish(&other, "acme-db/1.0.0", |object: &mut Value| {
            if object["kind"] == "ClusterServiceVersion" {
                object["metadata"]["name"] = json!(format!("{other}.v1.0.0"));
            }
        })
        .await,
    ];
    let catalog = TestCatalog::serving(&admin, "views", &images).await;
    let views = Api::<Package>::all(admin.clone());
    let name = package_view::name(&catalog.name, &package);
    let view = wait_object(&views, &name, "the view", TIMEOUT, |p| p.status.is_some()).await;
    let status = view.status.clone().unwrap();
    assert_eq!(status.catalog, catalog.name);
    assert_eq!(status.versions, ["1.0.1", "1.0.0"]);
    assert_eq!(status.channel_summary, "stable=1.0.1");
    let provider = status.provider.clone().unwrap();
    assert_eq!(provider.name.as_deref(), Some("Acme Platform"));
    assert_eq!(provider.names["zh"], "阿克米平台");
    assert_eq!(provider.type_, "platform");
    assert_eq!(provider.url.as_deref(), Some("https://acme.example"));
    assert!(
        view.metadata
            .owner_references
            .as_ref()
            .is_some_and(|o| o.iter().any(|o| o.name == catalog.name)),
        "the view belongs to its Catalog"
    );

    let (ok, out, err) = run_windlass(&["catalog", "list", "--catalog", &catalog.name]);
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("PACKAGE") && lines[0].ends_with("LISTED"),
        "{out}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with(&package)
            && l.contains(&catalog.name)
            && l.contains("Acme Platform")
            && l.contains("platform")
            && l.ends_with("true")),
        "{out}"
    );
    let (ok, json_out, err) =
        run_windlass(&["catalog", "list", "--package", &package, "-o", "json"]);
    assert!(ok, "{err}");
    let list: Value = serde_json::from_str(&json_out).unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    assert_eq!(
        list["items"][0]["status"]["provider"]["names"]["zh"],
        "阿克米平台"
    );

    // An admin's edit is not what the catalog says: put back.
    views
        .patch_status(
            &name,
            &PatchParams::apply("someone").force(),
            &Patch::Apply(json!({"apiVersion": "windlass.dev/v1alpha1", "kind": "Package",
                "status": {"package": package, "catalog": catalog.name, "listed": false, "latestVersion": "9.9.9"}})),
        )
        .await
        .unwrap();
    wait_object(&views, &name, "the edit put back", TIMEOUT, |p| {
        p.status.as_ref() == Some(&status)
    })
    .await;

    // The other package leaves the catalog: its view goes.
    let other_name = package_view::name(&catalog.name, &other);
    wait_object(&views, &other_name, "the other view", TIMEOUT, |p| {
        p.status.is_some()
    })
    .await;
    catalog
        .api()
        .patch(
            &catalog.name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"source": {"bundleImages": &images[..2]}}})),
        )
        .await
        .unwrap();
    wait_until(
        "the other package's view to be deleted",
        TIMEOUT,
        || async { matches!(views.get_opt(&other_name).await, Ok(None)) },
    )
    .await;

    // The catalog goes: so do its views.
    catalog
        .api()
        .delete(&catalog.name, &DeleteParams::default())
        .await
        .unwrap();
    wait_until("the views to go with their catalog", TIMEOUT, || async {
        matches!(views.get_opt(&name).await, Ok(None))
    })
    .await;
}
