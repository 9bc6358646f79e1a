//! Listing and delisting on a catalog of the test's own (the sample acme-db bundles published
//! as bundle images under a package name no other test uses): a version that fails lint is
//! held back and the rest installs; a CSV offered twice is refused naming both sources;
//! delisting keeps a running install running, stops its upgrades, refuses new Subscriptions,
//! leaves rollback working, and relisting resumes upgrades; a version delisted in the
//! Catalog's YAML is passed over by upgrades, and the CLI will not edit an entry another tool
//! owns.

use crate::common::isolated::Isolated;
use std::{process::Command, time::Duration};

use k8s_openapi::api::events::v1::Event;
use kube::{
    Api, Client,
    api::{ListParams, Patch, PatchParams},
};
use serde_json::{Value, json};
use windlass_api::{
    Blueprint, Catalog, ConditionStatus, Package, Subscription,
    blueprint::{BlueprintPhase, RevisionOutcome},
    catalog::CatalogPhase,
    names::{conditions, package_view, reasons},
};
use windlass_testkit::{
    TestNamespace,
    catalogs::{TestCatalog, phase as catalog_phase},
    lifecycle::{condition, is_at, subscribe, wait_blueprint, wait_object, wait_subscription},
    require_manager, wait_for,
};

const TIMEOUT: Duration = Duration::from_secs(180);

pub(crate) fn windlass() -> Command {
    let mut command = Command::new(windlass_testkit::windlass_binary());
    command.env("KUBECONFIG", windlass_testkit::kubeconfig_path());
    command
}

/// Runs the CLI; returns (success, stdout, stderr).
pub(crate) fn run_windlass(args: &[&str]) -> (bool, String, String) {
    let output = windlass()
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running windlass {args:?}: {e}"));
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Drops a CSV's install strategy: lint refuses a bundle that says nothing about how to run.
fn without_install_strategy(object: &mut Value) {
    if object["kind"] == "ClusterServiceVersion" {
        object["spec"].as_object_mut().unwrap().remove("install");
    }
}

fn subscription_condition<'a>(
    sub: &'a Subscription,
    type_: &str,
) -> Option<&'a windlass_api::Condition> {
    condition(&sub.status.as_ref()?.conditions, type_)
}

fn delisted(sub: &Subscription) -> Option<&windlass_api::Condition> {
    subscription_condition(sub, conditions::subscription::DELISTED)
        .filter(|c| c.status == ConditionStatus::True)
}

fn completed(blueprint: &Blueprint) -> Vec<String> {
    blueprint
        .status
        .as_ref()
        .map(|s| {
            s.history
                .iter()
                .filter(|r| r.outcome == RevisionOutcome::Completed)
                .map(|r| r.cluster_service_version_name.clone())
                .collect()
        })
        .unwrap_or_default()
}

async fn package_view(
    client: &Client,
    catalog: &str,
    package: &str,
    what: &str,
    ready: impl Fn(&windlass_api::PackageStatus) -> bool,
) -> windlass_api::PackageStatus {
    let api = Api::<Package>::all(client.clone());
    wait_object(
        &api,
        &package_view::name(catalog, package),
        what,
        TIMEOUT,
        |p| p.status.as_ref().is_some_and(&ready),
    )
    .await
    .status
    .unwrap()
}

/// The Events about Catalog `name` (cluster-scoped objects' Events live in `default`).
async fn catalog_events(client: &Client, name: &str) -> Vec<Event> {
    Api::<Event>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .collect()
}

/// Given acme-db 1.0.0, a 1.0.1 whose CSV lacks its install strategy and 1.1.0, when a
/// Catalog serves them, then 1.0.1 is held back (the Catalog's status and a Warning Event name
/// the lint finding, its file and field), the other two are offered, and a Subscription from
/// 1.0.0 upgrades straight to 1.1.0, passing over 1.0.1.
#[tokio::test]
async fn a_version_that_fails_lint_is_held_back_and_the_rest_installs() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "held-back").await;
    let client = ns.client().clone();
    // A CRD group of its own: the shared acme-db CRD is not this test's to take over.
    let isolated = Isolated::new("acme-db-held");
    let package = isolated.package.clone();
    let images = [
        isolated.publish("acme-db/1.0.0", |_| {}).await,
        isolated
            .publish("acme-db/1.0.1", without_install_strategy)
            .await,
        isolated.publish("acme-db/1.1.0", |_| {}).await,
    ];
    let catalog = TestCatalog::create(&client, "held-back", &images).await;
    let served = catalog
        .wait("Serving with 1.0.1 held back", |c| {
            catalog_phase(c) == Some(CatalogPhase::Serving)
                && c.status.as_ref().and_then(|s| s.held_back_count) == Some(1)
        })
        .await;
    let status = served.status.unwrap();
    let held = &status.held_back[0];
    assert_eq!(
        (
            held.package.as_str(),
            held.bundle.as_str(),
            held.version.as_deref()
        ),
        (package.as_str(), "acme-db.v1.0.1", Some("1.0.1"))
    );
    let repository = images[1].rsplit_once(':').unwrap().0;
    assert!(held.source.starts_with(repository), "{held:?}");
    assert!(
        held.findings
            .iter()
            .any(|f| f.starts_with("error[csv-required-field]")
                && f.contains("manifests/")
                && f.contains("(spec.install)")),
        "{:#?}",
        held.findings
    );
    let valid = condition(&status.conditions, conditions::catalog::CONTENT_VALID).unwrap();
    assert_eq!(
        (valid.status, valid.reason.as_str()),
        (ConditionStatus::False, reasons::catalog::VERSIONS_HELD_BACK)
    );
    assert!(
        valid.message.contains(&format!("{package} 1.0.1")),
        "{}",
        valid.message
    );
    assert_eq!(status.packages, Some(1));
    wait_for("a VersionsHeldBack Warning Event", TIMEOUT, || async {
        let events = catalog_events(&client, &catalog.name).await;
        events
            .iter()
            .find(|e| {
                e.reason.as_deref() == Some(reasons::catalog::VERSIONS_HELD_BACK)
                    && e.type_.as_deref() == Some("Warning")
                    && e.note
                        .as_deref()
                        .is_some_and(|n| n.contains("spec.install"))
            })
            .map(|_| ())
            .ok_or_else(|| format!("{} events", events.len()))
    })
    .await;
    let view = package_view(
        &client,
        &catalog.name,
        &package,
        "the held-back version",
        |s| !s.held_back.is_empty(),
    )
    .await;
    assert_eq!(view.versions, ["1.1.0", "1.0.0"]);
    assert_eq!(view.held_back, ["1.0.1"]);

    subscribe(
        &client,
        &ns.name,
        "db",
        json!({"package": package, "catalog": catalog.name, "startingCSV": "acme-db.v1.0.0",
               "targetNamespaces": [ns.name]}),
    )
    .await;
    let done = wait_blueprint(&client, &ns.name, "db", "1.1.0 Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.1.0")
    })
    .await;
    assert_eq!(
        completed(&done),
        ["acme-db.v1.1.0", "acme-db.v1.0.0"],
        "the upgrade passed over the held-back 1.0.1"
    );
}

/// Given acme-db 1.0.0 published twice with different content (two bundle images, one CSV
/// name), when one Catalog lists both, then the second is refused as already added, naming both
/// images, and what installs is the first.
#[tokio::test]
async fn a_version_offered_twice_is_refused_naming_both_sources() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "twice").await;
    let client = ns.client().clone();
    // A CRD group of its own: the shared acme-db CRD is not this test's to take over.
    let isolated = Isolated::new("acme-db-twice");
    let package = isolated.package.clone();
    let first = isolated.publish("acme-db/1.0.0", |_| {}).await;
    let second = isolated
        .another_repository()
        .publish("acme-db/1.0.0", |object| {
            if object["kind"] == "ClusterServiceVersion" {
                object["spec"]["description"] = json!("The same CSV name, other content.");
            }
        })
        .await;
    let catalog = TestCatalog::create(&client, "twice", &[first.clone(), second.clone()]).await;
    let served = catalog
        .wait("Serving with the second copy refused", |c| {
            catalog_phase(c) == Some(CatalogPhase::Serving)
                && c.status.as_ref().and_then(|s| s.held_back_count) == Some(1)
        })
        .await;
    let held = &served.status.unwrap().held_back[0];
    assert_eq!(held.bundle, "acme-db.v1.0.0");
    let repository = |image: &str| image.rsplit_once(':').unwrap().0.to_string();
    let finding = &held.findings[0];
    assert!(
        finding.contains("already added from")
            && finding.contains(&repository(&first))
            && finding.contains(&repository(&second)),
        "{finding}"
    );

    subscribe(
        &client,
        &ns.name,
        "db",
        json!({"package": package, "catalog": catalog.name, "targetNamespaces": [ns.name]}),
    )
    .await;
    let done = wait_blueprint(&client, &ns.name, "db", "1.0.0 Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.0")
    })
    .await;
    let image = done.spec.bundle.and_then(|b| b.image).unwrap_or_default();
    assert!(
        image.starts_with(&repository(&first)),
        "installed from {image}, not the first copy"
    );
}

/// Given acme-db upgraded from 1.0.0 to 1.0.1 from a catalog, when its admin delists the
/// package (`windlass catalog delist`), then the operator keeps running at 1.0.1, its
/// Subscription says Delisted naming the catalog and reason, the Package view shows it not
/// listed, a 1.1.0 added to the catalog is not taken, a new Subscription elsewhere is refused,
/// and `windlass rollback` still restores 1.0.0; relisting (`windlass catalog relist`) resumes
/// upgrades to 1.1.0 and lets the new Subscription install.
#[tokio::test]
async fn delisting_keeps_installs_running_without_upgrades_and_relisting_resumes_them() {
    require_manager();
    let admin = windlass_testkit::client().await;
    let ns = TestNamespace::create(&admin, "delist").await;
    let other = TestNamespace::create(&admin, "delist-new").await;
    let client = ns.client().clone();
    // A CRD group of its own: the shared acme-db CRD is not this test's to take over.
    let isolated = Isolated::new("acme-db-delist");
    let package = isolated.package.clone();
    let v100 = isolated.publish("acme-db/1.0.0", |_| {}).await;
    let v101 = isolated.publish("acme-db/1.0.1", |_| {}).await;
    let v110 = isolated.publish("acme-db/1.1.0", |_| {}).await;
    let catalog = TestCatalog::serving(&client, "delist", &[v100.clone(), v101.clone()]).await;
    subscribe(
        &client,
        &ns.name,
        "db",
        json!({"package": package, "startingCSV": "acme-db.v1.0.0", "targetNamespaces": [ns.name]}),
    )
    .await;
    wait_blueprint(&client, &ns.name, "db", "1.0.1 Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.1")
    })
    .await;
    // The CLI finds what a catalog serves through its Package views, which the Package
    // controller writes on its own schedule: an install can finish first.
    package_view(&client, &catalog.name, &package, "1.0.1 offered", |s| {
        s.versions.iter().any(|v| v == "1.0.1")
    })
    .await;

    let (ok, out, err) = run_windlass(&[
        "catalog",
        "delist",
        &package,
        "--catalog",
        &catalog.name,
        "--reason",
        "end of support",
    ]);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains(&format!("package {package} delisted (end of support)")),
        "{out}"
    );
    let sub = wait_subscription(&client, &ns.name, "db", "Delisted", TIMEOUT, |s| {
        delisted(s).is_some()
    })
    .await;
    let said = delisted(&sub).unwrap();
    assert_eq!(said.reason, reasons::delisting::PACKAGE_DELISTED);
    assert!(
        said.message
            .contains(&format!("by catalog {}", catalog.name))
            && said.message.contains("end of support")
            && said.message.contains("acme-db.v1.0.1 keeps running"),
        "{}",
        said.message
    );
    let view = package_view(&client, &catalog.name, &package, "not listed", |s| {
        !s.listed
    })
    .await;
    assert_eq!(view.delisted_summary, "all");
    assert_eq!(view.delisted_reason.as_deref(), Some("end of support"));

    // A new version appears while delisted: no upgrade.
    catalog
        .api()
        .patch(
            &catalog.name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"source": {"bundleImages": [v100, v101, v110]}}})),
        )
        .await
        .unwrap();
    catalog
        .wait("serving 1.1.0 too", |c| {
            c.status.as_ref().and_then(|s| s.observed_generation) == c.metadata.generation
                && catalog_phase(c) == Some(CatalogPhase::Serving)
        })
        .await;
    package_view(
        &client,
        &catalog.name,
        &package,
        "1.1.0 delisted with the rest",
        |s| s.delisted_versions.first().map(String::as_str) == Some("1.1.0"),
    )
    .await;
    // Longer than the catalog's poll (5 s) and the Subscription's retry (30 s).
    tokio::time::sleep(Duration::from_secs(35)).await;
    let blueprint = Api::<Blueprint>::namespaced(client.clone(), &ns.name)
        .get("db")
        .await
        .unwrap();
    assert!(
        is_at(&blueprint, BlueprintPhase::Succeeded, "1.0.1")
            && blueprint.spec.cluster_service_version_name == "acme-db.v1.0.1",
        "a delisted install was moved: {:?}",
        blueprint.spec
    );

    // A new Subscription is refused, and nothing is planned for it.
    subscribe(
        &client,
        &other.name,
        "db",
        json!({"package": package, "targetNamespaces": [other.name]}),
    )
    .await;
    let refused = wait_subscription(
        &client,
        &other.name,
        "db",
        "refused as delisted",
        TIMEOUT,
        |s| delisted(s).is_some(),
    )
    .await;
    let resolution =
        subscription_condition(&refused, conditions::subscription::RESOLUTION_SUCCEEDED).unwrap();
    assert_eq!(
        (resolution.status, resolution.reason.as_str()),
        (ConditionStatus::False, reasons::resolution::DELISTED)
    );
    assert!(
        resolution.message.contains(&format!(
            "package {package} is delisted by catalog {} (end of support)",
            catalog.name
        )),
        "{}",
        resolution.message
    );
    assert!(refused.status.as_ref().unwrap().blueprint.is_none());

    // Rollback still works, from the revision stored for 1.0.0.
    let (ok, out, err) = run_windlass(&[
        "rollback",
        "db",
        "-n",
        &ns.name,
        "--to",
        "acme-db.v1.0.0",
        "--wait",
        "--timeout",
        "180",
    ]);
    assert!(ok, "{out}{err}");
    wait_blueprint(&client, &ns.name, "db", "1.0.0 restored", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.0")
    })
    .await;
    let (ok, out, err) = run_windlass(&["resume", "db", "-n", &ns.name]);
    assert!(ok, "{out}{err}");

    // Relisted: upgrades resume, and the refused Subscription installs.
    let (ok, out, err) = run_windlass(&["catalog", "relist", &package, "--catalog", &catalog.name]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("listed again"), "{out}");
    wait_blueprint(&client, &ns.name, "db", "upgraded to 1.1.0", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.1.0")
    })
    .await;
    let sub = Api::<Subscription>::namespaced(client.clone(), &ns.name)
        .get("db")
        .await
        .unwrap();
    let relisted = subscription_condition(&sub, conditions::subscription::DELISTED).unwrap();
    assert_eq!(
        (relisted.status, relisted.reason.as_str()),
        (ConditionStatus::False, reasons::delisting::LISTED)
    );
    wait_blueprint(
        &client,
        &other.name,
        "db",
        "installed once relisted",
        TIMEOUT,
        |b| is_at(b, BlueprintPhase::Succeeded, "1.1.0"),
    )
    .await;
}

/// Given a Catalog whose YAML delists acme-db 1.0.1 (as a GitOps tool applies it), a
/// Subscription starting at 1.0.1 is refused with VersionDelisted, one starting at 1.0.0
/// upgrades to 1.1.0 without ever running 1.0.1, the Package view lists 1.0.1 as delisted, and
/// `windlass catalog relist` refuses to edit the entry the GitOps tool owns, naming it.
#[tokio::test]
async fn a_version_delisted_in_yaml_is_passed_over_and_the_cli_leaves_gitops_entries_alone() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "delisted-yaml").await;
    let client = ns.client().clone();
    // A CRD group of its own: the shared acme-db CRD is not this test's to take over.
    let isolated = Isolated::new("acme-db-yaml");
    let package = isolated.package.clone();
    let images = [
        isolated.publish("acme-db/1.0.0", |_| {}).await,
        isolated.publish("acme-db/1.0.1", |_| {}).await,
        isolated.publish("acme-db/1.1.0", |_| {}).await,
    ];
    let catalog = TestCatalog::serving(&client, "delisted-yaml", &images).await;
    let gitops = json!({
        "apiVersion": "windlass.dev/v1alpha1", "kind": "Catalog",
        "metadata": {"name": catalog.name},
        "spec": {"delisted": [{"package": package, "versions": ["1.0.1"], "reason": "ACME-123"}]},
    });
    Api::<Catalog>::all(client.clone())
        .patch(
            &catalog.name,
            &PatchParams::apply("gitops-sync"),
            &Patch::Apply(&gitops),
        )
        .await
        .unwrap();
    let view = package_view(&client, &catalog.name, &package, "1.0.1 delisted", |s| {
        s.delisted_versions == ["1.0.1"]
    })
    .await;
    assert!(view.listed);
    assert_eq!(view.versions, ["1.1.0", "1.0.0"]);
    assert_eq!(view.latest_version.as_deref(), Some("1.1.0"));

    subscribe(
        &client,
        &ns.name,
        "starts-delisted",
        json!({"package": package, "startingCSV": "acme-db.v1.0.1", "targetNamespaces": [ns.name]}),
    )
    .await;
    let refused = wait_subscription(
        &client,
        &ns.name,
        "starts-delisted",
        "refused",
        TIMEOUT,
        |s| delisted(s).is_some(),
    )
    .await;
    let said = delisted(&refused).unwrap();
    assert_eq!(said.reason, reasons::delisting::VERSION_DELISTED);
    assert!(said.message.contains("ACME-123"), "{}", said.message);

    let other = TestNamespace::create(&windlass_testkit::client().await, "delisted-yaml").await;
    subscribe(
        &client,
        &other.name,
        "db",
        json!({"package": package, "startingCSV": "acme-db.v1.0.0", "targetNamespaces": [other.name]}),
    )
    .await;
    let done = wait_blueprint(
        &client,
        &other.name,
        "db",
        "1.1.0 Succeeded",
        TIMEOUT,
        |b| is_at(b, BlueprintPhase::Succeeded, "1.1.0"),
    )
    .await;
    assert_eq!(completed(&done), ["acme-db.v1.1.0", "acme-db.v1.0.0"]);

    let (ok, out, err) = run_windlass(&[
        "catalog",
        "relist",
        &format!("{package}@1.0.1"),
        "--catalog",
        &catalog.name,
    ]);
    assert!(!ok, "the CLI edited an entry gitops-sync owns: {out}");
    assert!(
        err.contains(&format!("spec.delisted[package={package}]"))
            && err.contains("gitops-sync (Apply)"),
        "{err}"
    );
    // Nothing changed.
    let after = Api::<Catalog>::all(client.clone())
        .get(&catalog.name)
        .await
        .unwrap();
    assert_eq!(after.spec.delisted.len(), 1);
    // A version the catalog does not have is refused before anything is written.
    let (ok, _, err) = run_windlass(&[
        "catalog",
        "delist",
        &format!("{package}@9.9.9"),
        "--catalog",
        &catalog.name,
    ]);
    assert!(!ok);
    assert!(err.contains("does not serve version 9.9.9"), "{err}");
}
