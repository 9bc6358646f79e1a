//! The hub page in a real browser: Debian's headless chromium, driven over WebDriver, against
//! `windlass hub` and the local control plane with the manager running.
//!
//! The scenarios a person goes through: search, read a package, install with manual approval,
//! approve and watch it succeed without reloading, roll back; a person with read-only rights
//! is refused by the API server, in its words, and nothing is created; an admin delists and
//! relists a package from its page, and a refused delist changes nothing; a description
//! carrying a `<script>` shows it as text and nothing runs. The tests save the screenshots the README
//! shows (`crates/hub/screenshots/`).

use std::time::Duration;

use k8s_openapi::api::rbac::v1::Role;
use kube::{
    Api,
    api::{DeleteParams, Patch, PatchParams},
};
use serde_json::json;
use windlass_api::{Blueprint, Catalog, Subscription, blueprint::BlueprintPhase};
use windlass_testkit::{
    TestNamespace,
    catalogs::{TestCatalog, publish},
    lifecycle::{is_at, wait_blueprint},
    require_manager, unique_name,
};

use crate::common::{
    hub::{Browser, HubProcess, impersonating_kubeconfig},
    hub_rbac::{CatalogEditor, ReadOnly},
};

const TIMEOUT: Duration = Duration::from_secs(180);

/// Given a catalog offering a package at 1.0.0, when a person searches for it in the hub,
/// opens its page, and installs it into their namespace with Manual approval, then a
/// Subscription waits for approval; when they approve it in the installed view, the page shows
/// Succeeded without a reload; when 1.0.1 arrives and they approve it too, and then press the
/// rollback button, 1.0.0 is back.
#[tokio::test]
async fn a_person_finds_installs_approves_and_rolls_back_an_operator_in_the_browser() {
    require_manager();
    let admin = windlass_testkit::client().await;
    let ns = TestNamespace::create(&admin, "hub-install").await;
    let package = unique_name("hubdb");
    let old = publish(&package, "acme-db/1.0.0", |_| {}).await;
    let new = publish(&package, "acme-db/1.0.1", |_| {}).await;
    let catalog = TestCatalog::serving(&admin, "hub", std::slice::from_ref(&old)).await;

    let hub = HubProcess::kubeconfig(&windlass_testkit::kubeconfig_path());
    let browser = Browser::start().await;
    let b = &browser;
    b.client.goto(&hub.login_url()).await.unwrap();
    assert_eq!(
        b.client.current_url().await.unwrap().path(),
        "/",
        "signed in, sent to the list"
    );

    // Search finds it: the search box filters as one types.
    b.text("#count").await;
    b.fill("#q", &package).await;
    let card = format!("li.card[data-package=\"{package}\"]");
    b.wait_text(&card, "the package's card", TIMEOUT, |t| {
        t.contains("Acme DB")
    })
    .await;
    // The list is filtered as one types: the count follows once the search has answered.
    b.wait_text("#count", "the filtered count", TIMEOUT, |t| {
        t == "1 package"
    })
    .await;
    b.screenshot("list").await;

    // Its page shows the versions and the upgrade graph.
    b.click(&format!("{card} a.card-link"), TIMEOUT).await;
    assert_eq!(b.text("#title").await, "Acme DB");
    let versions = b.text("section.channel table.entries").await;
    assert!(versions.contains("1.0.0"), "{versions}");
    let graph_loaded = b
        .eval("const g = document.querySelector('img.graph-image'); return g && g.complete && g.naturalWidth > 0;")
        .await;
    assert_eq!(graph_loaded, json!(true), "the upgrade graph is drawn");
    assert!(
        b.text("#owned-apis")
            .await
            .contains("databases.acme.windlass.dev")
    );

    // Install with Manual approval.
    b.fill("#install-namespace", &ns.name).await;
    b.click("#install-manual", TIMEOUT).await;
    b.click("#install-submit", TIMEOUT).await;
    b.wait_text("#install-result", "the install's answer", TIMEOUT, |t| {
        t.contains("created")
    })
    .await;
    b.screenshot("package").await;
    let subscription = Api::<Subscription>::namespaced(admin.clone(), &ns.name)
        .get(&package)
        .await
        .expect("the hub created the Subscription");
    assert_eq!(
        subscription.spec.catalog.as_deref(),
        Some(catalog.name.as_str())
    );
    assert_eq!(
        serde_json::to_value(subscription.spec.approval).unwrap(),
        json!("Manual")
    );
    wait_blueprint(
        &admin,
        &ns.name,
        &package,
        "waiting for approval",
        TIMEOUT,
        |b| windlass_testkit::lifecycle::phase(b) == Some(BlueprintPhase::RequiresApproval),
    )
    .await;

    // Approve from the installed view; the page follows without a reload.
    b.client
        .goto(&format!("{}/installed?namespace={}", hub.url, ns.name))
        .await
        .unwrap();
    b.eval("window.hubSamePage = 'yes'; return 1;").await;
    let row = format!("tr[data-subscription=\"{package}\"]");
    b.wait_text(&format!("{row} .phase"), "RequiresApproval", TIMEOUT, |t| {
        t == "RequiresApproval"
    })
    .await;
    b.click(&format!("{row} button.approve"), TIMEOUT).await;
    b.wait_text("#action-result", "the approval's answer", TIMEOUT, |t| {
        t.contains("approved")
    })
    .await;
    b.wait_text(&format!("{row} .phase"), "Succeeded", TIMEOUT, |t| {
        t == "Succeeded"
    })
    .await;
    assert_eq!(b.text(&format!("{row} .version")).await, "1.0.0");
    assert_eq!(
        b.eval("return window.hubSamePage || null;").await,
        json!("yes"),
        "the page was never reloaded"
    );

    // 1.0.1 arrives; approve it too.
    catalog
        .api()
        .patch(
            &catalog.name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "source": { "bundleImages": [old, new] } } })),
        )
        .await
        .unwrap();
    // Waiting for approval, 1.0.0 still runs: 1.0.1 is the target, with its plan shown.
    b.wait_text(&row, "1.0.1 targeted", TIMEOUT, |t| {
        t.contains("target acme-db.v1.0.1")
    })
    .await;
    b.wait_text(&format!("{row} .phase"), "RequiresApproval", TIMEOUT, |t| {
        t == "RequiresApproval"
    })
    .await;
    b.click(&format!("{row} button.approve"), TIMEOUT).await;
    b.wait_text(
        &format!("{row} .phase"),
        "Succeeded at 1.0.1",
        TIMEOUT,
        |t| t == "Succeeded",
    )
    .await;
    b.wait_text(&format!("{row} .version"), "1.0.1", TIMEOUT, |t| {
        t == "1.0.1"
    })
    .await;
    b.screenshot("installed").await;

    // The rollback button brings 1.0.0 back.
    b.wait_text(
        &format!("{row} button.rollback"),
        "a rollback offer",
        TIMEOUT,
        |t| t.contains("acme-db.v1.0.0"),
    )
    .await;
    b.click(&format!("{row} button.rollback"), TIMEOUT).await;
    b.wait_text("#action-result", "the rollback's answer", TIMEOUT, |t| {
        t.contains("rolling back")
    })
    .await;
    // Under Manual approval a rollback a person asks for waits with its plan too: approve it.
    b.wait_text(&row, "the rollback's plan", TIMEOUT, |t| {
        t.contains("target acme-db.v1.0.0") && t.contains("rollback 1.0.1 -> 1.0.0")
    })
    .await;
    b.click(&format!("{row} button.approve"), TIMEOUT).await;
    b.wait_text(&format!("{row} .version"), "1.0.0 again", TIMEOUT, |t| {
        t == "1.0.0"
    })
    .await;
    b.wait_text(
        &format!("{row} .phase"),
        "Succeeded at 1.0.0",
        TIMEOUT,
        |t| t == "Succeeded",
    )
    .await;
    wait_blueprint(&admin, &ns.name, &package, "1.0.0 again", TIMEOUT, |bp| {
        is_at(bp, BlueprintPhase::Succeeded, "1.0.0")
    })
    .await;
    assert_eq!(
        b.eval("return window.hubSamePage || null;").await,
        json!("yes"),
        "still the same page"
    );
    browser.close().await;
}

/// Given a user who may read catalogs and their namespace's Subscriptions but not create
/// them, when they install from the hub (acting with their identity), then the page shows the
/// API server's refusal naming them, and no Subscription appears, however long one waits.
#[tokio::test]
async fn a_read_only_user_sees_the_install_refused_in_the_api_servers_words_and_nothing_is_created()
{
    require_manager();
    let admin = windlass_testkit::client().await;
    let ns = TestNamespace::create(&admin, "hub-readonly").await;
    let user = unique_name("hub-viewer");
    let _grants = ReadOnly::grant(&admin, &user, &ns.name).await;
    let dir = tempfile::tempdir().unwrap();
    let hub = HubProcess::kubeconfig(&impersonating_kubeconfig(&user, dir.path()));

    let browser = Browser::start().await;
    let b = &browser;
    b.client.goto(&hub.login_url()).await.unwrap();
    let who = b.text("header.top .who").await;
    assert!(
        who.contains(&user),
        "the hub shows whom it acts as: {who:?}"
    );
    b.client
        .goto(&format!("{}/packages/builtin/acme-db", hub.url))
        .await
        .unwrap();
    assert_eq!(b.text("#title").await, "Acme DB");
    b.fill("#install-namespace", &ns.name).await;
    b.click("#install-submit", TIMEOUT).await;
    let refusal = b
        .wait_text("#install-result", "the refusal", TIMEOUT, |t| !t.is_empty())
        .await;
    assert!(
        refusal.contains("forbidden")
            && refusal.contains(&format!("User \"{user}\""))
            && refusal.contains("cannot create resource \"subscriptions\""),
        "the API server's own reason: {refusal}"
    );
    let class = b
        .eval("return document.getElementById('install-result').className;")
        .await;
    assert_eq!(class, json!("message error"));

    // Nothing was created, and nothing appears later either.
    let subscriptions = Api::<Subscription>::namespaced(admin.clone(), &ns.name);
    let blueprints = Api::<Blueprint>::namespaced(admin.clone(), &ns.name);
    for _ in 0..10 {
        assert!(
            subscriptions
                .list(&Default::default())
                .await
                .unwrap()
                .items
                .is_empty()
        );
        assert!(
            blueprints
                .list(&Default::default())
                .await
                .unwrap()
                .items
                .is_empty()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // The person's view of the namespace works: reading is what they may do.
    b.client
        .goto(&format!("{}/installed?namespace={}", hub.url, ns.name))
        .await
        .unwrap();
    let empty = b.text("#installed").await;
    assert!(empty.contains("No Subscriptions"), "{empty}");
    browser.close().await;
    let _ = Api::<Role>::namespaced(admin.clone(), &ns.name)
        .delete("hub-read-only", &DeleteParams::default())
        .await;
}

/// Given a package whose description carries a `<script>` and an inline event handler, when
/// its page is opened, then the text is shown as written and no script of it runs.
#[tokio::test]
async fn a_script_in_a_description_is_shown_as_text_and_never_runs() {
    require_manager();
    let admin = windlass_testkit::client().await;
    let package = unique_name("hubxss");
    let image = publish(&package, "acme-db/1.0.0", |object| {
        if object["kind"] == "ClusterServiceVersion" {
            object["spec"]["description"] = json!(
                "Before <script>window.hubOwned = true; document.title = 'owned';</script> after.\n\n<img src=x onerror=\"window.hubOwned = true\">"
            );
        }
    })
    .await;
    let catalog = TestCatalog::serving(&admin, "hubxss", std::slice::from_ref(&image)).await;
    let hub = HubProcess::kubeconfig(&windlass_testkit::kubeconfig_path());
    let browser = Browser::start().await;
    let b = &browser;
    b.client.goto(&hub.login_url()).await.unwrap();
    b.client
        .goto(&format!("{}/packages/{}/{package}", hub.url, catalog.name))
        .await
        .unwrap();
    let description = b.text("#description").await;
    assert!(
        description.contains("<script>window.hubOwned = true; document.title = 'owned';</script>"),
        "shown as text: {description}"
    );
    assert!(description.contains("<img src=x onerror="), "{description}");
    // Give anything that could run a moment, then look.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        b.eval("return window.hubOwned === undefined;").await,
        json!(true)
    );
    assert_ne!(b.client.title().await.unwrap(), "owned");
    assert_eq!(
        b.eval("return document.querySelectorAll('#description script, #description img').length;")
            .await,
        json!(0)
    );
    browser.close().await;
}

/// Given a package in a catalog of the test's own, when an admin opens its page, delists it
/// with a reason and relists it, then the Catalog's spec says so each time, the list leaves
/// the package out while it is delisted (showing it, marked, only when asked), and its page
/// names the catalog and reason and offers no install. When a person whose right to edit
/// Catalogs is taken away after their page offered Delist presses it, the page shows the API
/// server's refusal naming them, the Catalog is unchanged, and the page loaded again no longer
/// offers Delist.
#[tokio::test]
async fn an_admin_delists_and_relists_a_package_from_its_page_and_a_refused_delist_changes_nothing()
{
    require_manager();
    let admin = windlass_testkit::client().await;
    let ns = TestNamespace::create(&admin, "hub-delist").await;
    let package = unique_name("hubdl");
    let image = publish(&package, "acme-db/1.0.0", |_| {}).await;
    let catalog = TestCatalog::serving(&admin, "hubdl", std::slice::from_ref(&image)).await;
    let catalogs = Api::<Catalog>::all(admin.clone());
    let delisted = |c: &Catalog| serde_json::to_value(&c.spec.delisted).unwrap();
    let hub = HubProcess::kubeconfig(&windlass_testkit::kubeconfig_path());
    let browser = Browser::start().await;
    let b = &browser;
    b.client.goto(&hub.login_url()).await.unwrap();
    let page = format!("{}/packages/{}/{package}", hub.url, catalog.name);
    let list = format!("{}/?q={package}", hub.url);
    let card = format!("li.card[data-package=\"{package}\"]");

    // Delist, from the package's page.
    b.client.goto(&page).await.unwrap();
    assert_eq!(
        b.text("#delist-submit").await,
        format!("Delist from catalog {}", catalog.name)
    );
    b.fill("#delist-reason", "end of support").await;
    b.click("#delist-submit", TIMEOUT).await;
    let answer = b
        .wait_text("#delisting-result", "the delist's answer", TIMEOUT, |t| {
            !t.is_empty()
        })
        .await;
    assert!(
        answer.contains(&format!("package {package} delisted (end of support)")),
        "{answer}"
    );
    assert_eq!(
        delisted(&catalogs.get(&catalog.name).await.unwrap()),
        json!([{"package": package, "reason": "end of support"}])
    );

    // The list leaves it out; asked for, it is there and says by whom.
    b.client.goto(&list).await.unwrap();
    b.wait_text("#count", "no package", TIMEOUT, |t| t == "0 packages")
        .await;
    b.client
        .goto(&format!("{list}&delisted=include"))
        .await
        .unwrap();
    b.wait_text(&card, "the delisted card", TIMEOUT, |t| {
        t.contains(&format!("Delisted by catalog {}", catalog.name))
    })
    .await;

    // Its page says so, offers no install, and relists.
    b.client.goto(&page).await.unwrap();
    let notice = b.text("#delisted").await;
    assert!(
        notice.contains(&format!(
            "package {package} is delisted by catalog {} (end of support)",
            catalog.name
        )),
        "{notice}"
    );
    b.text("#install-delisted").await;
    assert_eq!(
        b.eval("return document.getElementById('install-submit') === null;")
            .await,
        json!(true)
    );
    b.click("button.relist", TIMEOUT).await;
    b.wait_text("#delisting-result", "the relist's answer", TIMEOUT, |t| {
        t.contains("listed again")
    })
    .await;
    assert_eq!(
        delisted(&catalogs.get(&catalog.name).await.unwrap()),
        json!([])
    );
    b.client.goto(&list).await.unwrap();
    b.wait_text("#count", "the package again", TIMEOUT, |t| t == "1 package")
        .await;

    // A person offered Delist whose right is taken away before they press it.
    let user = unique_name("hub-editor");
    let _reads = ReadOnly::grant(&admin, &user, &ns.name).await;
    let editor = CatalogEditor::grant(&admin, &user).await;
    let dir = tempfile::tempdir().unwrap();
    let theirs = HubProcess::kubeconfig(&impersonating_kubeconfig(&user, dir.path()));
    let their_page = format!("{}/packages/{}/{package}", theirs.url, catalog.name);
    b.client.goto(&theirs.login_url()).await.unwrap();
    b.client.goto(&their_page).await.unwrap();
    b.text("#delist-submit").await;
    editor.revoke(&admin, &user).await;
    let before = catalogs.get(&catalog.name).await.unwrap();
    b.fill("#delist-reason", "not mine to say").await;
    b.click("#delist-submit", TIMEOUT).await;
    let refusal = b
        .wait_text("#delisting-result", "the refusal", TIMEOUT, |t| {
            !t.is_empty()
        })
        .await;
    assert!(
        refusal.contains("forbidden")
            && refusal.contains(&format!("User \"{user}\""))
            && refusal.contains("cannot patch resource \"catalogs\""),
        "the API server's own reason: {refusal}"
    );
    assert_eq!(
        b.eval("return document.getElementById('delisting-result').className;")
            .await,
        json!("message error")
    );
    for _ in 0..6 {
        let now = catalogs.get(&catalog.name).await.unwrap();
        assert_eq!(
            (delisted(&now), now.metadata.generation),
            (delisted(&before), before.metadata.generation),
            "a refused delist changed the Catalog"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    b.client.goto(&their_page).await.unwrap();
    assert_eq!(b.text("#title").await, "Acme DB");
    assert_eq!(
        b.eval("return document.getElementById('delisting') === null;")
            .await,
        json!(true),
        "no Delist for who may not edit the Catalog"
    );
    browser.close().await;
}
