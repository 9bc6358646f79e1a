//! Catalog sources against the real local registry and control plane, without the manager:
//! the built-in bundles pushed as bundle images are read as a BundleImages catalog and, rendered
//! into a file-based catalog image, as an Image catalog; when the registry cannot be reached the
//! last good content stays served and the error is reported. The Catalog reconciler itself runs
//! in this process against the apiserver, on Catalogs only it watches (a unique label).

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use k8s_openapi::{
    ByteString,
    api::{core::v1::Secret, events::v1::Event},
};
use kube::{
    Api, Client, CustomResourceExt, ResourceExt,
    api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams},
};
use serde_json::json;
use windlass_api::names::reasons;
use windlass_api::{
    Catalog, CatalogSpec,
    catalog::{CatalogPhase, CatalogSource, CatalogSourceType},
    condition::{ConditionStatus, find},
};
use windlass_bundle::{Limits, from_files, load::read_source, pack::bundle_layout_tree};
use windlass_catalog::fbc::{CONFIGS_LABEL, image_tree};
use windlass_catalog_controller::{
    BuiltinCatalog, Options, Reader, SourceError,
    credentials::Credentials,
    source::{digest_of_digests, pinned},
    status::{self, Failure, Observation},
};
use windlass_catalog_store::{BundleLocation, CatalogStore};
use windlass_kit::Metrics;
use windlass_oci::{self as oci, RegistryOptions};
use windlass_testkit::{TestNamespace, unique_name, wait_for};

const TIMEOUT: Duration = Duration::from_secs(90);
/// Nothing listens here: a registry that cannot be reached.
const DEAD_REGISTRY: &str = "127.0.0.1:1";

fn plain_http() -> RegistryOptions {
    RegistryOptions {
        plain_http: true,
        ..Default::default()
    }
}

/// The built-in bundles pushed as bundle images under a repository of their own:
/// (CSV name, tag reference, manifest digest).
async fn push_builtin_bundles(prefix: &str) -> Vec<(String, String, String)> {
    let builtin = BuiltinCatalog::materialize().unwrap();
    let mut pushed = Vec::new();
    for (csv_name, location) in builtin.bundles.iter() {
        let BundleLocation::Directory { path, .. } = location else {
            panic!("built-in bundles live in folders");
        };
        let (tree, source) = read_source(path, Limits::default()).unwrap();
        let bundle = from_files(&tree, &source).unwrap();
        let package = bundle.package().unwrap().to_string();
        let version = bundle.csv.version().unwrap();
        let reference = format!("{prefix}/{package}:{version}");
        let layout = bundle_layout_tree(&bundle, &tree);
        let done = oci::push(&layout, &bundle.annotations, &reference, &plain_http())
            .await
            .unwrap_or_else(|e| panic!("pushing {reference}: {e}"));
        pushed.push((csv_name.clone(), reference, done.digest));
    }
    pushed
}

/// Every Catalog these tests create ranks below the built-in one (-100).
const TEST_CATALOG_PRIORITY: i32 = -1000;

fn bundle_images_spec(references: Vec<String>) -> CatalogSpec {
    CatalogSpec {
        source: CatalogSource {
            type_: CatalogSourceType::BundleImages,
            bundle_images: references,
            plain_http: true,
            ..Default::default()
        },
        // Below the built-in catalog, so the manager never resolves other tests against it.
        priority: TEST_CATALOG_PRIORITY,
        ..Default::default()
    }
}

fn image_spec(image: &str) -> CatalogSpec {
    CatalogSpec {
        source: CatalogSource {
            type_: CatalogSourceType::Image,
            image: Some(image.into()),
            plain_http: true,
            ..Default::default()
        },
        // Below the built-in catalog, so the manager never resolves other tests against it.
        priority: TEST_CATALOG_PRIORITY,
        ..Default::default()
    }
}

/// Given the built-in bundles pushed as bundle images, when a BundleImages catalog and an
/// Image catalog of the same bundles are read, then both serve the four packages at the
/// registry's digests, installs need no second pull, and when the registry becomes unreachable
/// the last good content stays served while the error names the image.
#[tokio::test]
async fn registry_catalogs_are_read_and_outlive_an_unreachable_registry() {
    windlass_testkit::install_crypto_provider();
    let registry = windlass_testkit::registry();
    let prefix = registry.unique_repository("e2e/catalog-sources");
    let pushed = push_builtin_bundles(&prefix).await;
    assert_eq!(pushed.len(), 10);
    let references: Vec<String> = pushed.iter().map(|(_, r, _)| r.clone()).collect();

    // BundleImages.
    let store = CatalogStore::new();
    let reader = Reader::new();
    let none = Credentials::new();
    let started = Instant::now();
    let served = reader
        .poll(
            "bundles",
            &bundle_images_spec(references.clone()),
            &none,
            &store,
        )
        .await
        .unwrap();
    eprintln!("read 10 bundle images in {:?}", started.elapsed());
    assert_eq!(
        served.catalog.packages.keys().collect::<Vec<_>>(),
        ["acme-cache", "acme-db", "acme-gateway", "acme-monitor"]
    );
    assert_eq!(served.bundle_count(), 10);
    assert_eq!(
        served.digest,
        digest_of_digests(pushed.iter().map(|(_, _, d)| d.as_str()))
    );
    for (csv_name, reference, digest) in &pushed {
        // Served pinned to what was read, and already in the cache: installing pulls nothing.
        assert_eq!(
            served.bundles[csv_name],
            BundleLocation::Image {
                reference: pinned(reference, digest)
            }
        );
        let cached = store.cached(digest).expect("pulled content is cached");
        let content = store.bundle("bundles", csv_name, None).await.unwrap();
        assert!(Arc::ptr_eq(&cached, &content), "{csv_name}");
        assert_eq!(content.digest, *digest);
    }

    // Polling again with nothing changed: same digest, and subscribers are not woken.
    let mut changes = store.changes();
    changes.mark_unchanged();
    let started = Instant::now();
    let again = reader
        .poll(
            "bundles",
            &bundle_images_spec(references.clone()),
            &none,
            &store,
        )
        .await
        .unwrap();
    eprintln!(
        "re-polled 10 unchanged bundle images in {:?}",
        started.elapsed()
    );
    assert_eq!(again.digest, served.digest);
    assert!(!changes.has_changed().unwrap());

    // The same bundles as a file-based-catalog image, the shape `windlass catalog push` writes.
    let catalog_ref = format!("{prefix}/catalog:latest");
    let labels = [(CONFIGS_LABEL.to_string(), "/configs".to_string())].into();
    let catalog_digest = oci::push_image(
        &image_tree(&served.catalog).unwrap(),
        &labels,
        &catalog_ref,
        &plain_http(),
    )
    .await
    .unwrap()
    .digest;
    // A store of its own, so reading a bundle really pulls it from where the catalog says.
    let fbc_store = CatalogStore::new();
    let started = Instant::now();
    let fbc = reader
        .poll("fbc", &image_spec(&catalog_ref), &none, &fbc_store)
        .await
        .unwrap();
    eprintln!("read the catalog image in {:?}", started.elapsed());
    assert_eq!(fbc.digest, catalog_digest);
    assert_eq!(fbc.catalog.packages.len(), 4);
    // A file-based catalog keeps no second map: each bundle is located by its entry's image.
    for (csv_name, location) in served.bundles.iter() {
        assert_eq!(
            fbc.location(csv_name).as_ref(),
            Some(location),
            "{csv_name}: bundle locations are the images"
        );
    }
    let (_, _, db_digest) = pushed
        .iter()
        .find(|(c, _, _)| c == "acme-db.v1.1.0")
        .unwrap();
    let content = fbc_store
        .bundle("fbc", "acme-db.v1.1.0", None)
        .await
        .unwrap();
    assert_eq!(content.digest, *db_digest);
    assert_eq!(content.package, "acme-db");
    assert!(!content.bundle.manifests.is_empty());

    // The registry cannot be reached any more (the spec now points where nothing listens).
    let dead = format!("{DEAD_REGISTRY}/catalog:latest");
    let error = reader
        .poll("fbc", &image_spec(&dead), &none, &fbc_store)
        .await
        .unwrap_err();
    assert_eq!(error.reason(), "PullFailed", "{error}");
    assert!(error.to_string().contains(&dead), "{error}");
    let kept = fbc_store.get("fbc").unwrap();
    assert_eq!(
        kept.digest, catalog_digest,
        "the last good content is still served"
    );
    // Content already read is still available without the registry.
    fbc_store
        .bundle("fbc", "acme-db.v1.1.0", Some(db_digest))
        .await
        .unwrap();
    let failure = Failure::from(&error);
    let update = status::next(
        None,
        &Observation {
            generation: Some(2),
            failure: Some(&failure),
            served: Some(&kept),
            without_image: &[],
            source: &format!("image {dead}"),
            polled_at: k8s_openapi::jiff::Timestamp::now(),
            delisting_problems: &[],
        },
    )
    .unwrap();
    assert_eq!(update.status.phase, Some(CatalogPhase::Unreachable));
    assert_eq!(
        update.status.resolved_digest.as_deref(),
        Some(catalog_digest.as_str())
    );
    assert_eq!(update.status.packages, Some(4));

    // A bundle image named as a catalog image is refused as invalid content, not served.
    let error = reader
        .poll("wrong", &image_spec(&references[0]), &none, &fbc_store)
        .await
        .unwrap_err();
    assert!(matches!(error, SourceError::Invalid { .. }), "{error}");
    assert!(fbc_store.get("wrong").is_none());
    // A tag that does not exist is a failed pull naming it.
    let missing = format!("{prefix}/missing:1");
    let error = reader
        .poll(
            "missing",
            &bundle_images_spec(vec![missing.clone()]),
            &none,
            &fbc_store,
        )
        .await
        .unwrap_err();
    assert!(error.to_string().contains(&missing), "{error}");
}

/// Counts reconciles and the failures they report.
#[derive(Default)]
struct Counting {
    reconciles: AtomicUsize,
    failures: Mutex<Vec<&'static str>>,
}

impl Metrics for Counting {
    fn reconciled(&self, _duration: Duration, error: Option<&'static str>) {
        self.reconciles.fetch_add(1, Ordering::Relaxed);
        if let Some(label) = error {
            self.failures.lock().unwrap().push(label);
        }
    }
}

async fn apply_catalog_crd(client: &Client) {
    windlass_testkit::apply_crd(client, &serde_json::to_value(Catalog::crd()).unwrap()).await;
}

async fn wait_catalog(
    api: &Api<Catalog>,
    name: &str,
    what: &str,
    check: impl Fn(&Catalog) -> bool,
) -> Catalog {
    wait_for(&format!("catalog {name} {what}"), TIMEOUT, || async {
        let catalog = api.get(name).await.map_err(|e| e.to_string())?;
        if check(&catalog) {
            Ok(catalog)
        } else {
            Err(format!("{:?}", catalog.status))
        }
    })
    .await
}

fn phase(catalog: &Catalog) -> Option<CatalogPhase> {
    catalog.status.as_ref().and_then(|s| s.phase)
}

/// Waits `quiet` and says whether the object was written meanwhile.
async fn unchanged_for(api: &Api<Catalog>, name: &str, quiet: Duration) -> bool {
    let before = api.get(name).await.unwrap().resource_version();
    tokio::time::sleep(quiet).await;
    api.get(name).await.unwrap().resource_version() == before
}

/// Given the reconciler running in this process, when a BundleImages Catalog is created, then
/// it turns Serving with the packages and digest; polls that find nothing new write nothing;
/// when its images point at an unreachable registry it turns Unreachable with the error while
/// its old content stays served; when it is deleted it is no longer served.
#[tokio::test]
async fn the_reconciler_serves_a_catalog_and_keeps_it_through_an_outage() {
    let client = windlass_testkit::client().await;
    apply_catalog_crd(&client).await;
    let registry = windlass_testkit::registry();
    let pushed = push_builtin_bundles(&registry.unique_repository("e2e/catalog-reconciler")).await;
    let expected_digest = digest_of_digests(pushed.iter().map(|(_, _, d)| d.as_str()));
    let namespace = TestNamespace::create(&client, "e2e-catalogs").await;
    let run_label = unique_name("run");
    let store = CatalogStore::new();
    let metrics = Arc::new(Counting::default());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let controller = tokio::spawn(windlass_catalog_controller::run(
        client.clone(),
        store.clone(),
        metrics.clone(),
        Options {
            namespace: namespace.name.clone(),
            label_selector: Some(format!("windlass.dev/e2e-run={run_label}")),
            retry_after_failure: Duration::from_secs(2),
            trust: Arc::new(windlass_kit::TrustGate::new(
                client.clone(),
                namespace.name.clone(),
            )),
        },
        async move {
            let _ = stopped.await;
        },
    ));

    let api = Api::<Catalog>::all(client.clone());
    let name = unique_name("e2e-bundle-images");
    let mut catalog = Catalog::new(
        &name,
        bundle_images_spec(pushed.iter().map(|(_, r, _)| r.clone()).collect()),
    );
    catalog.metadata.labels = Some([("windlass.dev/e2e-run".to_string(), run_label)].into());
    let started = Instant::now();
    api.create(&PostParams::default(), &catalog).await.unwrap();
    let serving = wait_catalog(&api, &name, "to be Serving", |c| {
        phase(c) == Some(CatalogPhase::Serving)
    })
    .await;
    eprintln!(
        "Catalog of 10 bundle images Serving {:?} after creation",
        started.elapsed()
    );
    let status = serving.status.unwrap();
    assert_eq!(status.packages, Some(4));
    assert_eq!(
        status.resolved_digest.as_deref(),
        Some(expected_digest.as_str())
    );
    assert_eq!(status.observed_generation, Some(1));
    assert!(status.last_successful_poll_time.is_some());
    let condition = find(&status.conditions, "Serving").unwrap();
    assert_eq!(condition.status, ConditionStatus::True);
    assert_eq!(condition.reason, reasons::catalog::CONTENT_SERVED);
    // A manager running against the same cluster may have written that status first; this
    // process's reconciler serves the content into its own store too.
    windlass_testkit::wait_until(
        "the in-process store to serve the catalog",
        Duration::from_secs(30),
        || async { store.get(&name).is_some() },
    )
    .await;
    assert_eq!(store.get(&name).unwrap().digest, expected_digest);

    // Poll every 2 s: unchanged content writes nothing, however often it is polled.
    let patch = |value: serde_json::Value| Patch::Merge(value);
    api.patch(
        &name,
        &PatchParams::default(),
        &patch(json!({"spec": {"pollIntervalSeconds": 2}})),
    )
    .await
    .unwrap();
    wait_catalog(&api, &name, "to observe generation 2", |c| {
        c.status.as_ref().and_then(|s| s.observed_generation) == Some(2)
    })
    .await;
    // The manager reconciles this Catalog too: let both finish writing for generation 2.
    let settle = Instant::now() + Duration::from_secs(60);
    while !unchanged_for(&api, &name, Duration::from_secs(3)).await && Instant::now() < settle {}
    let before = metrics.reconciles.load(Ordering::Relaxed);
    assert!(
        unchanged_for(&api, &name, Duration::from_secs(7)).await,
        "a poll that found nothing new wrote the Catalog"
    );
    let polls = metrics.reconciles.load(Ordering::Relaxed) - before;
    eprintln!("{polls} reconciles in 7 s of 2 s polling, 0 writes");
    assert!(polls >= 3, "polled {polls} times");

    // The registry cannot be reached any more.
    let dead = format!("{DEAD_REGISTRY}/acme/db:1.0.0");
    let started = Instant::now();
    api.patch(
        &name,
        &PatchParams::default(),
        &patch(json!({"spec": {"source": {"bundleImages": [dead]}}})),
    )
    .await
    .unwrap();
    let unreachable = wait_catalog(&api, &name, "to be Unreachable", |c| {
        phase(c) == Some(CatalogPhase::Unreachable)
    })
    .await;
    eprintln!("Unreachable {:?} after the spec change", started.elapsed());
    let status = unreachable.status.unwrap();
    assert_eq!(
        status.resolved_digest.as_deref(),
        Some(expected_digest.as_str())
    );
    assert_eq!(status.packages, Some(4));
    assert_eq!(status.observed_generation, Some(3));
    let condition = find(&status.conditions, "Serving").unwrap();
    assert_eq!(condition.status, ConditionStatus::False);
    assert_eq!(condition.reason, "PullFailed");
    assert!(condition.message.contains(&dead), "{}", condition.message);
    assert!(
        condition.message.contains("still serving"),
        "{}",
        condition.message
    );
    assert_eq!(
        store.get(&name).unwrap().digest,
        expected_digest,
        "old content kept"
    );
    // The status is written before the reconcile returns its error to the runner, which
    // counts it: the count can trail the status by a moment.
    wait_for(
        "the pull failure counted",
        Duration::from_secs(10),
        || async {
            if metrics.failures.lock().unwrap().contains(&"pull") {
                Ok(())
            } else {
                Err(format!(
                    "failures so far: {:?}",
                    metrics.failures.lock().unwrap()
                ))
            }
        },
    )
    .await;
    assert!(
        unchanged_for(&api, &name, Duration::from_secs(5)).await,
        "the same failure again wrote the Catalog"
    );
    let events = Api::<Event>::namespaced(client.clone(), "default");
    wait_for("a PullFailed event", TIMEOUT, || async {
        let list = events
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        list.items
            .iter()
            .find(|e| {
                e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(&name)
                    && e.reason.as_deref() == Some("PullFailed")
            })
            .map(|_| ())
            .ok_or_else(|| format!("{} events", list.items.len()))
    })
    .await;

    // Deleted: no longer served.
    api.delete(&name, &DeleteParams::default()).await.unwrap();
    wait_for(
        "the deleted catalog to leave the store",
        TIMEOUT,
        || async {
            store
                .get(&name)
                .map_or(Ok(()), |_| Err("still served".to_string()))
        },
    )
    .await;

    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(30), controller)
        .await
        .expect("the controller stops on shutdown")
        .unwrap();
}

/// Given a Catalog whose pull Secret does not exist yet, it says so; once the Secret exists in
/// the manager's namespace, the next retry reads the catalog with it.
#[tokio::test]
async fn a_pull_secret_is_read_from_the_manager_namespace() {
    let client = windlass_testkit::client().await;
    apply_catalog_crd(&client).await;
    let registry = windlass_testkit::registry();
    let prefix = registry.unique_repository("e2e/catalog-secret");
    let pushed = push_builtin_bundles(&prefix).await;
    let namespace = TestNamespace::create(&client, "e2e-catalog-secret").await;
    let run_label = unique_name("run");
    let store = CatalogStore::new();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let controller = tokio::spawn(windlass_catalog_controller::run(
        client.clone(),
        store.clone(),
        Arc::new(Counting::default()),
        Options {
            namespace: namespace.name.clone(),
            label_selector: Some(format!("windlass.dev/e2e-run={run_label}")),
            retry_after_failure: Duration::from_secs(2),
            trust: Arc::new(windlass_kit::TrustGate::new(
                client.clone(),
                namespace.name.clone(),
            )),
        },
        async move {
            let _ = stopped.await;
        },
    ));
    let api = Api::<Catalog>::all(client.clone());
    let name = unique_name("e2e-private");
    let mut spec = bundle_images_spec(pushed.iter().map(|(_, r, _)| r.clone()).collect());
    spec.source.pull_secret = Some("registry-credentials".into());
    let mut catalog = Catalog::new(&name, spec);
    catalog.metadata.labels = Some([("windlass.dev/e2e-run".to_string(), run_label)].into());
    api.create(&PostParams::default(), &catalog).await.unwrap();
    let waiting = wait_catalog(&api, &name, "to miss its pull secret", |c| {
        c.status
            .as_ref()
            .and_then(|s| find(&s.conditions, "Serving"))
            .is_some_and(|c| c.reason == "PullSecretUnavailable")
    })
    .await;
    let waiting = waiting.status.unwrap();
    let message = &find(&waiting.conditions, "Serving").unwrap().message;
    // A manager running against the same cluster reconciles this Catalog too, and looks in its
    // own namespace: either may have written the message last.
    let manager_namespace = windlass_testkit::manager::namespace();
    let named = |ns: &str| message.contains(&format!("{ns}/registry-credentials"));
    assert!(
        named(&namespace.name) || manager_namespace.as_deref().is_some_and(named),
        "{message}"
    );

    // The local registry asks for no credentials; it accepts requests that carry them.
    let config =
        json!({"auths": {registry.addr.clone(): {"username": "e2e", "password": "not-checked"}}});
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("registry-credentials".into()),
            ..Default::default()
        },
        type_: Some("kubernetes.io/dockerconfigjson".into()),
        data: Some(BTreeMap::from([(
            ".dockerconfigjson".to_string(),
            ByteString(serde_json::to_vec(&config).unwrap()),
        )])),
        ..Default::default()
    };
    Api::<Secret>::namespaced(client.clone(), &namespace.name)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    if let Some(manager_namespace) = &manager_namespace {
        // So that the manager serves it too, and the two agree on the status.
        let applied = Api::<Secret>::namespaced(client.clone(), manager_namespace)
            .patch(
                "registry-credentials",
                &PatchParams::apply("windlass-e2e").force(),
                &Patch::Apply(&secret),
            )
            .await;
        applied.expect("the pull secret in the manager's namespace");
    }
    wait_catalog(&api, &name, "to be Serving", |c| {
        phase(c) == Some(CatalogPhase::Serving)
    })
    .await;
    // The manager may have said Serving first; this process's reconciler serves it too.
    windlass_testkit::wait_until(
        "the in-process store to serve the catalog",
        Duration::from_secs(30),
        || async { store.get(&name).is_some() },
    )
    .await;
    let served = store.get(&name).unwrap();
    assert!(served.credentials.contains_key(&registry.addr));
    assert_eq!(served.catalog.packages.len(), 4);

    api.delete(&name, &DeleteParams::default()).await.unwrap();
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(30), controller)
        .await
        .expect("the controller stops on shutdown")
        .unwrap();
}

/// The manager's start-up step: the `builtin` Catalog is applied below user catalogs, marked as
/// windlass's, and applying it again changes nothing. (Turning it off deletes it; not done here,
/// since the cluster is shared and others may rely on it.)
#[tokio::test]
async fn the_builtin_catalog_object_is_applied_idempotently() {
    let client = windlass_testkit::client().await;
    apply_catalog_crd(&client).await;
    windlass_catalog_controller::ensure_builtin(&client, true)
        .await
        .unwrap();
    let api = Api::<Catalog>::all(client.clone());
    let first = api.get("builtin").await.unwrap();
    assert_eq!(first.spec.source.type_, CatalogSourceType::BuiltIn);
    assert_eq!(first.spec.priority, -100);
    assert_eq!(
        first.spec.display_name.as_deref(),
        Some("windlass built-in samples")
    );
    assert_eq!(
        first
            .labels()
            .get("app.kubernetes.io/managed-by")
            .map(String::as_str),
        Some("windlass")
    );
    windlass_catalog_controller::ensure_builtin(&client, true)
        .await
        .unwrap();
    let second = api.get("builtin").await.unwrap();
    assert_eq!(
        first.resource_version(),
        second.resource_version(),
        "applying the same Catalog again wrote it"
    );
}
