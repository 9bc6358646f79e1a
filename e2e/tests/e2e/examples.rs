//! Every file in `examples/` is applied to the local control plane as a user would apply it
//! (server-side apply, strict field validation), each in a namespace of its own, and every
//! object in it has to get where its kind should get: a Subscription to an installed Blueprint
//! that carries its settings, a Catalog to Serving. A file holding anything this module does not
//! know how to check fails the test, so a new kind of example comes with its check.
//!
//! The registries the Catalog examples name do not exist here: the test publishes content in
//! the local registry under a package name of its own, points the Catalog's images at it, and
//! creates the pull secret it names; every other field is applied as written.

use std::{
    collections::{BTreeMap, HashMap},
    path::{Path, PathBuf},
    time::Duration,
};

use k8s_openapi::{
    ByteString,
    api::{apps::v1::Deployment, core::v1::Secret},
};
use kube::{
    Api, Client,
    api::{ListParams, ObjectMeta, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use windlass_api::{
    Blueprint, Catalog, Subscription,
    blueprint::{BlueprintPhase, RevisionOutcome},
    catalog::{CatalogPhase, CatalogSourceType},
    config::{Approval, DEFAULT_HISTORY_LIMIT, DEFAULT_PROGRESS_DEADLINE_SECONDS},
};
use windlass_testkit::{
    TEST_NAMESPACE_LABEL, TestNamespace,
    catalogs::{plain_http, publish},
    kubectl,
    lifecycle::{approve, subscribe, wait_blueprint, wait_object, wait_subscription},
    require_manager, unique_name,
};

mod mirrors;
mod platform;

const TIMEOUT: Duration = Duration::from_secs(240);
const FIELD_MANAGER: &str = "windlass-examples";
/// Sample bundles a test catalog is filled with, in upgrade order.
const SAMPLE_BUNDLES: [(&str, &str); 3] = [
    ("acme-db/1.0.0", "acme-db.v1.0.0"),
    ("acme-db/1.0.1", "acme-db.v1.0.1"),
    ("acme-db/1.1.0", "acme-db.v1.1.0"),
];

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// Every example file, sorted; anything else in the folder but its README is a failure.
fn example_files() -> Vec<PathBuf> {
    let dir = examples_dir();
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name == "README.md" {
            continue;
        }
        assert!(
            path.is_file() && [".yaml", ".yml", ".json"].iter().any(|e| name.ends_with(e)),
            "examples/{name} is not a YAML or JSON file, so no test applies it"
        );
        files.push(path);
    }
    files.sort();
    assert!(!files.is_empty(), "no examples in {}", dir.display());
    files
}

fn short_name(file: &Path) -> String {
    format!("examples/{}", file.file_name().unwrap().to_string_lossy())
}

fn documents(file: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(file).unwrap();
    windlass_bundle::yaml::parse_documents(&short_name(file), &text)
        .unwrap_or_else(|e| panic!("{e}"))
        .documents
}

/// Given every file in `examples/`, when each is applied to the local control plane, then the
/// API server accepts every object and each reaches the state its kind should reach.
#[tokio::test]
async fn every_example_is_accepted_and_does_what_it_says() {
    require_manager();
    let client = windlass_testkit::client().await;
    let mut checks = tokio::task::JoinSet::new();
    let mut names = HashMap::new();
    for file in example_files() {
        let client = client.clone();
        let name = short_name(&file);
        let id = checks
            .spawn(async move { check_file(&client, &file).await })
            .id();
        names.insert(id, name);
    }
    let mut failures = Vec::new();
    while let Some(done) = checks.join_next_with_id().await {
        if let Err(error) = done {
            let file = names[&error.id()].clone();
            failures.push(format!("{file}: {}", panic_message(error)));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn panic_message(error: tokio::task::JoinError) -> String {
    match error.try_into_panic() {
        Ok(panic) => panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panicked".into()),
        Err(error) => error.to_string(),
    }
}

/// One file: its Catalogs (all together, they may depend on each other's priorities), then
/// each Subscription.
async fn check_file(client: &Client, file: &Path) {
    let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
    let mut catalogs = Vec::new();
    let mut subscriptions = Vec::new();
    let mut policies = Vec::new();
    let mut trust_policies = Vec::new();
    let mut cluster_versions = Vec::new();
    let mut mirror_sets = Vec::new();
    for (index, document) in documents(file).into_iter().enumerate() {
        let kind = (document["apiVersion"].as_str(), document["kind"].as_str());
        match kind {
            (Some("windlass.dev/v1alpha1"), Some("Catalog")) => catalogs.push(document),
            (Some("windlass.dev/v1alpha1"), Some("Subscription")) => subscriptions.push(document),
            (Some("windlass.dev/v1alpha1"), Some("InstallPolicy")) => policies.push(document),
            (Some("windlass.dev/v1alpha1"), Some("TrustPolicy")) => trust_policies.push(document),
            (Some("windlass.dev/v1alpha1"), Some("ClusterVersion")) => {
                cluster_versions.push(document)
            }
            (Some("windlass.dev/v1alpha1"), Some("ImageMirrorSet")) => mirror_sets.push(document),
            (api_version, kind) => panic!(
                "document {} is {}/{}, which e2e/tests/e2e/examples.rs does not know how to check; add its check there",
                index + 1,
                api_version.unwrap_or("(no apiVersion)"),
                kind.unwrap_or("(no kind)")
            ),
        }
    }
    if !catalogs.is_empty() {
        check_catalogs(client, &stem, catalogs).await;
    }
    for subscription in subscriptions {
        check_subscription(client, &stem, subscription).await;
    }
    for policy in policies {
        check_install_policy(client, &stem, policy).await;
    }
    for policy in trust_policies {
        platform::check_trust_policy(client, policy).await;
    }
    for cluster_version in cluster_versions {
        platform::check_cluster_version(client, cluster_version).await;
    }
    for set in mirror_sets {
        mirrors::check_image_mirror_set(client, set).await;
    }
}

/// Given an InstallPolicy example applied as written, a namespace it selects (or names)
/// installs the first package it allows, in its own namespace, as a tenant would; the policy
/// is deleted afterwards (it is cluster-scoped and would outlive the test).
async fn check_install_policy(client: &Client, stem: &str, document: Value) {
    let name = document["metadata"]["name"]
        .as_str()
        .expect("a name")
        .to_string();
    let api = Api::<windlass_api::InstallPolicy>::all(client.clone());
    api.patch(&name, &apply_params(), &Patch::Apply(&document))
        .await
        .unwrap_or_else(|e| panic!("applying InstallPolicy {name}: {e}"));
    let labels: Vec<(String, String)> = document["spec"]["namespaceSelector"]["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
        .collect();
    let labels: Vec<(&str, &str)> = labels
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let ns = TestNamespace::tenant_with_labels(client, &format!("example-{stem}"), &labels).await;
    let package = document["spec"]["packages"][0]
        .as_str()
        .unwrap_or("acme-db");
    crate::tenancy::hand_shared_crds_to_acme_db(client).await;
    let outcome = async {
        subscribe(client, &ns.name, "example", json!({"package": package})).await;
        let blueprint = wait_blueprint(client, &ns.name, "example", "installed", TIMEOUT, |b| {
            blueprint_phase(b) == Some(BlueprintPhase::Succeeded)
        })
        .await;
        let csv = Api::<windlass_api::ClusterServiceVersion>::namespaced(client.clone(), &ns.name)
            .get(&blueprint.spec.cluster_service_version_name)
            .await
            .expect("the installed ClusterServiceVersion");
        assert_eq!(
            csv.spec.target_namespaces,
            vec![ns.name.clone()],
            "a tenant's operator watches its own namespace"
        );
    };
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(outcome)).await;
    let _ = api.delete(&name, &Default::default()).await;
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

/// Server-side apply with strict field validation, as `kubectl apply --server-side` does.
fn apply_params() -> PatchParams {
    PatchParams::apply(FIELD_MANAGER).validation_strict()
}

/// Given a Subscription example applied in a namespace of its own, its Blueprint installs the
/// package (after a person's approval when it asks for one) and carries the example's settings,
/// and the operator's Deployments carry its `config`.
async fn check_subscription(client: &Client, stem: &str, document: Value) {
    let ns = TestNamespace::create(client, &format!("example-{stem}")).await;
    let mut object = document.clone();
    object["metadata"]["namespace"] = json!(ns.name);
    let example: Subscription = serde_json::from_value(document)
        .unwrap_or_else(|e| panic!("not a Subscription windlass reads: {e}"));
    let name = example
        .metadata
        .name
        .clone()
        .expect("a Subscription has a name");
    Api::<Subscription>::namespaced(client.clone(), &ns.name)
        .patch(&name, &apply_params(), &Patch::Apply(&object))
        .await
        .unwrap_or_else(|e| panic!("the API server refused Subscription {name}: {e}"));

    let subscription = wait_subscription(client, &ns.name, &name, "a Blueprint", TIMEOUT, |s| {
        s.status.as_ref().is_some_and(|s| s.blueprint.is_some())
    })
    .await;
    let blueprint_name = subscription.status.unwrap().blueprint.unwrap();
    let spec = &example.spec;
    let installed_csv = if spec.approval == Approval::Manual {
        let waiting = wait_blueprint(
            client,
            &ns.name,
            &blueprint_name,
            "RequiresApproval before anything is installed",
            TIMEOUT,
            |b| blueprint_phase(b) == Some(BlueprintPhase::RequiresApproval),
        )
        .await;
        let target = waiting.spec.cluster_service_version_name.clone();
        if let Some(starting) = &spec.starting_csv {
            assert_eq!(&target, starting, "the first plan is not startingCSV");
        }
        approve(client, &ns.name, &blueprint_name).await;
        target
    } else {
        let done = wait_blueprint(
            client,
            &ns.name,
            &blueprint_name,
            "Succeeded",
            TIMEOUT,
            |b| blueprint_phase(b) == Some(BlueprintPhase::Succeeded),
        )
        .await;
        done.spec.cluster_service_version_name
    };
    let blueprint = wait_blueprint(
        client,
        &ns.name,
        &blueprint_name,
        &format!("a Completed revision of {installed_csv}"),
        TIMEOUT,
        |b| {
            b.status.as_ref().is_some_and(|s| {
                s.history.iter().any(|r| {
                    r.cluster_service_version_name == installed_csv
                        && r.outcome == RevisionOutcome::Completed
                })
            })
        },
    )
    .await;

    // What the Subscription asked for is what the Blueprint carries out.
    let plan = &blueprint.spec;
    assert_eq!(plan.package, spec.package);
    assert_eq!(plan.approval, spec.approval, "approval");
    assert_eq!(plan.config, spec.config, "config");
    assert_eq!(
        plan.crd_deletion_policy, spec.crd_deletion_policy,
        "crdDeletionPolicy"
    );
    // Left out of the example, a setting reaches the Blueprint as its documented default.
    assert_eq!(
        plan.history_limit,
        Some(spec.history_limit.unwrap_or(DEFAULT_HISTORY_LIMIT)),
        "historyLimit"
    );
    let rollback = spec.rollback.clone().unwrap_or_default();
    assert_eq!(
        plan.progress_deadline_seconds,
        Some(
            rollback
                .progress_deadline_seconds
                .unwrap_or(DEFAULT_PROGRESS_DEADLINE_SECONDS)
        ),
        "rollback.progressDeadlineSeconds"
    );
    assert_eq!(
        plan.automatic_rollback,
        Some(rollback.automatic.unwrap_or(true)),
        "rollback.automatic"
    );
    if !spec.config.is_empty() {
        check_deployments_carry(
            client,
            &ns.name,
            &serde_json::to_value(&spec.config).unwrap(),
        )
        .await;
    }
}

fn blueprint_phase(blueprint: &Blueprint) -> Option<BlueprintPhase> {
    blueprint.status.as_ref().and_then(|s| s.phase)
}

/// Every container of every Deployment in the namespace has the config's env vars and
/// resources, and every pod template its node selector, tolerations and annotations.
async fn check_deployments_carry(client: &Client, namespace: &str, config: &Value) {
    let deployments = Api::<Deployment>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    assert!(
        !deployments.is_empty(),
        "no operator Deployment in {namespace}"
    );
    let contains_all = |have: &Value, want: &Value| match (have, want) {
        (Value::Array(have), Value::Array(want)) => want.iter().all(|w| have.contains(w)),
        (Value::Object(have), Value::Object(want)) => {
            want.iter().all(|(k, v)| have.get(k) == Some(v))
        }
        _ => want.is_null(),
    };
    for deployment in deployments {
        let name = deployment.metadata.name.clone().unwrap_or_default();
        let template = serde_json::to_value(&deployment.spec.template).unwrap();
        let pod = &template["spec"];
        for (field, have) in [
            ("nodeSelector", &pod["nodeSelector"]),
            ("tolerations", &pod["tolerations"]),
            ("annotations", &template["metadata"]["annotations"]),
        ] {
            assert!(
                contains_all(have, &config[field]),
                "Deployment {name}: {field} {have} lacks the config's {}",
                config[field]
            );
        }
        for container in pod["containers"].as_array().unwrap() {
            assert!(
                contains_all(&container["env"], &config["env"]),
                "Deployment {name}, container {}: env {} lacks the config's {}",
                container["name"],
                container["env"],
                config["env"]
            );
            if !config["resources"].is_null() {
                assert_eq!(
                    container["resources"], config["resources"],
                    "Deployment {name}, container {}: resources",
                    container["name"]
                );
            }
        }
    }
}

/// Deletes what a Catalog example made outside any namespace, also when the check fails.
struct CatalogCleanup {
    catalogs: Vec<String>,
    secrets: Vec<(String, String)>,
}

impl Drop for CatalogCleanup {
    fn drop(&mut self) {
        // Drop cannot await: ask the apiserver through kubectl, as TestCatalog does.
        for name in &self.catalogs {
            let _ = kubectl()
                .args(["delete", "catalog.windlass.dev", name, "--wait=false"])
                .args(["--ignore-not-found"])
                .output();
        }
        for (namespace, name) in &self.secrets {
            let _ = kubectl()
                .args([
                    "delete",
                    "secret",
                    name,
                    "-n",
                    namespace,
                    "--ignore-not-found",
                ])
                .output();
        }
    }
}

/// A file-based catalog of one package holding the given bundles (CSV name, image), pushed as a
/// catalog image to the local registry; returns its reference.
async fn push_catalog_image(
    package: &str,
    bundles: &[(String, String)],
    reference: &str,
) -> String {
    let mut blobs = vec![
        json!({ "schema": "olm.package", "name": package, "defaultChannel": "stable" }),
        json!({
            "schema": "olm.channel", "name": "stable", "package": package,
            "entries": bundles.iter().map(|(csv, _)| json!({ "name": csv })).collect::<Vec<_>>(),
        }),
    ];
    for (csv, image) in bundles {
        let version = csv.rsplit_once(".v").map(|(_, v)| v).unwrap();
        blobs.push(json!({
            "schema": "olm.bundle", "name": csv, "package": package, "image": image,
            "properties": [
                { "type": "olm.package", "value": { "packageName": package, "version": version } },
            ],
        }));
    }
    let text: String = blobs.iter().map(|b| format!("{b}\n")).collect();
    let mut tree = windlass_bundle::FileTree::default();
    tree.files
        .insert(format!("configs/{package}/catalog.json"), text.into_bytes());
    let labels = [(
        windlass_catalog::fbc::CONFIGS_LABEL.to_string(),
        "/configs".to_string(),
    )]
    .into();
    windlass_oci::push_image(&tree, &labels, reference, &plain_http())
        .await
        .unwrap_or_else(|e| panic!("pushing {reference}: {e}"));
    reference.to_string()
}

/// Given the Catalog examples of one file, with their images pointed at content in the local
/// registry (one package of the test's own) and their pull secrets created, each is Serving
/// that package; when there are several, a Subscription to it installs from the one with the
/// highest priority.
async fn check_catalogs(client: &Client, stem: &str, documents: Vec<Value>) {
    let package = unique_name(&format!("example-{stem}"));
    let manager_namespace =
        windlass_testkit::manager::namespace().expect("the manager's --namespace");
    let mut cleanup = CatalogCleanup {
        catalogs: Vec::new(),
        secrets: Vec::new(),
    };
    // The bundles, published once: every catalog of the file offers the same package.
    let most_images = documents
        .iter()
        .map(|d| {
            d["spec"]["source"]["bundleImages"]
                .as_array()
                .map_or(1, Vec::len)
        })
        .max()
        .unwrap_or(1);
    assert!(
        most_images <= SAMPLE_BUNDLES.len(),
        "lists {most_images} bundle images; the test has {} sample bundles to publish",
        SAMPLE_BUNDLES.len()
    );
    let mut published = Vec::new();
    for (folder, csv) in &SAMPLE_BUNDLES[..most_images] {
        published.push((csv.to_string(), publish(&package, folder, |_| {}).await));
    }
    let mut catalog_image = None;

    let api = Api::<Catalog>::all(client.clone());
    let mut applied = Vec::new();
    let mut delisting = Vec::new();
    for document in documents {
        let example: Catalog = serde_json::from_value(document.clone())
            .unwrap_or_else(|e| panic!("not a Catalog windlass reads: {e}"));
        let name = unique_name(example.metadata.name.as_deref().expect("a name"));
        let mut object = document;
        object["metadata"]["name"] = json!(name);
        object["metadata"]["labels"][TEST_NAMESPACE_LABEL] = json!("true");
        // What the example delists, it delists of the test's package.
        // (`pointer_mut`: indexing would add `delisted: null` to every other Catalog.)
        if let Some(entries) = object
            .pointer_mut("/spec/delisted")
            .and_then(Value::as_array_mut)
        {
            for entry in entries {
                entry["package"] = json!(package);
            }
        }
        let source = &mut object["spec"]["source"];
        let expected_packages = match example.spec.source.type_ {
            CatalogSourceType::Image => {
                if catalog_image.is_none() {
                    let reference = format!(
                        "{}:latest",
                        windlass_testkit::registry().unique_repository("examples/catalog")
                    );
                    catalog_image =
                        Some(push_catalog_image(&package, &published[..1], &reference).await);
                }
                source["image"] = json!(catalog_image.clone().unwrap());
                source["plainHTTP"] = json!(true);
                Some(1)
            }
            CatalogSourceType::BundleImages => {
                let listed = example.spec.source.bundle_images.len();
                source["bundleImages"] = json!(
                    published[..listed]
                        .iter()
                        .map(|(_, r)| r)
                        .collect::<Vec<_>>()
                );
                source["plainHTTP"] = json!(true);
                Some(1)
            }
            // The built-in samples, compiled into the manager: nothing to publish.
            CatalogSourceType::BuiltIn => None,
        };
        if let Some(secret) = &example.spec.source.pull_secret {
            let secret_name = unique_name(secret);
            create_pull_secret(client, &manager_namespace, &secret_name).await;
            cleanup
                .secrets
                .push((manager_namespace.clone(), secret_name.clone()));
            source["pullSecret"] = json!(secret_name);
        }
        cleanup.catalogs.push(name.clone());
        api.patch(&name, &apply_params(), &Patch::Apply(&object))
            .await
            .unwrap_or_else(|e| panic!("the API server refused Catalog {name}: {e}"));
        applied.push((name, example.spec.priority, expected_packages));
        if !example.spec.delisted.is_empty() {
            // The entries as applied: they name the test's package.
            let entries: Vec<windlass_api::DelistedPackage> =
                serde_json::from_value(object["spec"]["delisted"].clone())
                    .expect("the applied delisted entries read back");
            delisting.push((applied.last().unwrap().0.clone(), entries));
        }
    }

    for (name, _, expected_packages) in &applied {
        wait_object(&api, name, "Serving", TIMEOUT, |c| {
            let status = c.status.as_ref();
            status.and_then(|s| s.phase) == Some(CatalogPhase::Serving)
                && (expected_packages.is_none()
                    || status.and_then(|s| s.packages) == *expected_packages)
        })
        .await;
    }

    for (catalog, entries) in &delisting {
        check_delisted(client, stem, catalog, &package, entries, &published).await;
    }

    if applied.len() > 1 {
        let mut priorities: Vec<i32> = applied.iter().map(|(_, p, _)| *p).collect();
        priorities.sort();
        priorities.dedup();
        assert_eq!(
            priorities.len(),
            applied.len(),
            "its Catalogs share a priority, so which one serves a package is not what the example shows"
        );
        let (preferred, _, _) = applied.iter().max_by_key(|(_, p, _)| *p).unwrap();
        let ns = TestNamespace::create(client, &format!("example-{stem}")).await;
        subscribe(
            client,
            &ns.name,
            "from-the-preferred-catalog",
            json!({ "package": package, "targetNamespaces": [ns.name] }),
        )
        .await;
        let subscription = wait_subscription(
            client,
            &ns.name,
            "from-the-preferred-catalog",
            "a Blueprint",
            TIMEOUT,
            |s| s.status.as_ref().is_some_and(|s| s.blueprint.is_some()),
        )
        .await;
        let blueprint = subscription.status.unwrap().blueprint.unwrap();
        let installed = wait_blueprint(client, &ns.name, &blueprint, "Succeeded", TIMEOUT, |b| {
            blueprint_phase(b) == Some(BlueprintPhase::Succeeded)
        })
        .await;
        assert_eq!(
            installed.spec.bundle.and_then(|b| b.catalog).as_ref(),
            Some(preferred),
            "the package was not installed from the highest-priority catalog"
        );
    }
}

/// Given a Catalog example that delists versions of its package, its Package view shows them
/// as delisted and the rest as listed; a Subscription starting at a delisted version is refused
/// with `Delisted` naming the catalog and the example's reason, and one naming no version
/// installs the newest listed version.
async fn check_delisted(
    client: &Client,
    stem: &str,
    catalog: &str,
    package: &str,
    entries: &[windlass_api::DelistedPackage],
    published: &[(String, String)],
) {
    let entry = entries
        .iter()
        .find(|e| e.package == package)
        .expect("the example delists its package");
    assert!(
        !entry.versions.is_empty(),
        "the example delists versions, so a listed version is left to install"
    );
    let views = Api::<windlass_api::Package>::all(client.clone());
    let view_name = windlass_api::names::package_view::name(catalog, package);
    let view = wait_object(&views, &view_name, "the delisted versions", TIMEOUT, |p| {
        p.status
            .as_ref()
            .is_some_and(|s| s.delisted_versions == entry.versions)
    })
    .await;
    let status = view.status.unwrap();
    assert!(status.listed, "only versions are delisted: {status:?}");
    assert!(
        status.versions.iter().all(|v| !entry.versions.contains(v)),
        "{status:?}"
    );
    let delisted_csv = published
        .iter()
        .map(|(csv, _)| csv)
        .find(|csv| {
            entry
                .versions
                .iter()
                .any(|v| csv.ends_with(&format!(".v{v}")))
        })
        .expect("a published bundle is delisted")
        .clone();
    let newest_listed = published
        .iter()
        .map(|(csv, _)| csv)
        .rfind(|csv| *csv != &delisted_csv)
        .expect("a listed bundle")
        .clone();

    let ns = TestNamespace::create(client, &format!("example-{stem}")).await;
    subscribe(
        client,
        &ns.name,
        "starts-delisted",
        json!({ "package": package, "catalog": catalog, "startingCSV": delisted_csv,
                "targetNamespaces": [ns.name] }),
    )
    .await;
    let refused = wait_subscription(
        client,
        &ns.name,
        "starts-delisted",
        "Delisted",
        TIMEOUT,
        |s| {
            condition_of(s, windlass_api::names::conditions::subscription::DELISTED)
                .is_some_and(|c| c.status == windlass_api::ConditionStatus::True)
        },
    )
    .await;
    let delisted = condition_of(
        &refused,
        windlass_api::names::conditions::subscription::DELISTED,
    )
    .unwrap()
    .clone();
    assert_eq!(
        delisted.reason,
        windlass_api::names::reasons::delisting::VERSION_DELISTED
    );
    let reason = entry.reason.as_deref().unwrap_or_default();
    assert!(
        delisted.message.contains(&format!("by catalog {catalog}"))
            && delisted.message.contains(reason),
        "{}",
        delisted.message
    );
    assert!(
        refused
            .status
            .as_ref()
            .and_then(|s| s.blueprint.clone())
            .is_none(),
        "nothing was planned for a refused Subscription"
    );

    let ns = TestNamespace::create(client, &format!("example-{stem}")).await;
    subscribe(
        client,
        &ns.name,
        "latest-listed",
        json!({ "package": package, "catalog": catalog, "targetNamespaces": [ns.name] }),
    )
    .await;
    let installed = wait_blueprint(
        client,
        &ns.name,
        "latest-listed",
        "Succeeded",
        TIMEOUT,
        |b| blueprint_phase(b) == Some(BlueprintPhase::Succeeded),
    )
    .await;
    assert_eq!(installed.spec.cluster_service_version_name, newest_listed);
}

fn condition_of<'a>(
    subscription: &'a Subscription,
    type_: &str,
) -> Option<&'a windlass_api::Condition> {
    subscription
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
}

/// A `kubernetes.io/dockerconfigjson` Secret for the local registry, which asks for no
/// credentials but accepts requests that carry them.
async fn create_pull_secret(client: &Client, namespace: &str, name: &str) {
    let registry = windlass_testkit::registry();
    let config =
        json!({ "auths": { registry.addr: { "username": "examples", "password": "unused" } } });
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some([(TEST_NAMESPACE_LABEL.to_string(), "true".to_string())].into()),
            ..Default::default()
        },
        type_: Some("kubernetes.io/dockerconfigjson".into()),
        data: Some(BTreeMap::from([(
            ".dockerconfigjson".to_string(),
            ByteString(serde_json::to_vec(&config).unwrap()),
        )])),
        ..Default::default()
    };
    Api::<Secret>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap_or_else(|e| panic!("creating pull secret {namespace}/{name}: {e}"));
}
