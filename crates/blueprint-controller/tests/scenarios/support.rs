//! One Blueprint controller against the mocked API server: the cluster a fresh install starts
//! from (the namespace, a trusted InstallPolicy, the Blueprint), the controller's context, and
//! reading back what the requests carried.

use std::{path::Path, sync::Arc, time::Duration};

use kube::{Resource, runtime::controller::Action, runtime::reflector};
use serde_json::{Value, json};
use windlass_api::{
    Blueprint, BlueprintSpec, InstallPolicy,
    blueprint::ResolvedBundle,
    names::{controllers, finalizers},
    policy::{ClusterScopedGrant, InstallPolicySpec},
};
use windlass_blueprint_controller::{Context, Error, reconcile::reconcile};
use windlass_catalog_store::{BundleContent, BundleLocation, CatalogStore, ServedCatalog};
use windlass_kit::{Applier, Identities, Metrics, Scope, Shell, TrustGate};
use windlass_revisions::{SealKey, seal::KEY_BYTES};
use windlass_testkit::mock_api::{MockApi, Request};

pub const NAMESPACE: &str = "team-a";
pub const NAME: &str = "db";
pub const CSV_NAME: &str = "acme-db.v1.0.0";
pub const DIGEST: &str = "sha256:5d41402abc4b2a76b9719d911017c592";
pub const CRD_NAME: &str = "databases.acme.windlass.dev";
/// A ConfigMap the test adds to the built-in bundle, which ships only its CRD and CSV: a
/// bundle's other objects are applied between the two.
pub const CONFIG_MAP: &str = "acme-db-defaults";

pub const BLUEPRINT_PATH: &str = "/apis/windlass.dev/v1alpha1/namespaces/team-a/blueprints/db";
pub const STATUS_PATH: &str = "/apis/windlass.dev/v1alpha1/namespaces/team-a/blueprints/db/status";
pub const SECRET_PATH: &str = "/api/v1/namespaces/team-a/secrets/db.r1";
pub const PLAN_SECRET_PATH: &str = "/api/v1/namespaces/team-a/secrets/db.r1.plan";
pub const CRD_PATH: &str =
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/databases.acme.windlass.dev";
pub const CONFIG_MAP_PATH: &str = "/api/v1/namespaces/team-a/configmaps/acme-db-defaults";
pub const CSV_PATH: &str =
    "/apis/windlass.dev/v1alpha1/namespaces/team-a/clusterserviceversions/acme-db.v1.0.0";
pub const EVENTS_PATH: &str = "/apis/events.k8s.io/v1/namespaces/team-a/events";

struct NoMetrics;

impl Metrics for NoMetrics {
    fn reconciled(&self, _: Duration, _: Option<&'static str>) {}
}

/// The sealing key the controller under test uses, so a test can check its seals.
pub fn seal_key() -> SealKey {
    SealKey::from_bytes(&[7; KEY_BYTES]).expect("a key of the right length")
}

/// `acme-db` 1.0.0 from the built-in catalog, plus one ConfigMap, as the catalog store serves it.
pub fn acme_db_bundle() -> BundleContent {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bundles/acme-db/1.0.0");
    let mut bundle = windlass_bundle::load_bundle(&dir).expect("the built-in acme-db bundle loads");
    bundle.manifests.push(windlass_bundle::Manifest {
        file: "manifests/acme-db-defaults.configmap.yaml".into(),
        object: json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": CONFIG_MAP},
            "data": {"retention": "7d"},
        }),
    });
    BundleContent {
        package: "acme-db".into(),
        csv_name: CSV_NAME.into(),
        version: bundle.csv.version().expect("the CSV has a version"),
        digest: DIGEST.into(),
        image: None,
        pulled_from: None,
        bundle,
    }
}

/// The built-in catalog as the Catalog controller serves it: acme-db 1.0.0, its content
/// pinned by [`DIGEST`] (the store's cache holds that content).
fn builtin_catalog() -> ServedCatalog {
    let bundle = windlass_catalog::model::Bundle {
        name: CSV_NAME.into(),
        package: "acme-db".into(),
        version: semver::Version::new(1, 0, 0),
        image: None,
        properties: Vec::new(),
        related_images: Vec::new(),
    };
    let mut catalog = windlass_catalog::Catalog::default();
    catalog.packages.insert(
        "acme-db".into(),
        windlass_catalog::Package {
            name: "acme-db".into(),
            bundles: [(CSV_NAME.to_string(), bundle)].into(),
            ..Default::default()
        },
    );
    let location = BundleLocation::Directory {
        path: "/nowhere".into(),
        digest: DIGEST.into(),
    };
    ServedCatalog {
        name: "builtin".into(),
        priority: 0,
        digest: "sha256:builtin".into(),
        catalog: Arc::new(catalog),
        bundles: Arc::new([(CSV_NAME.to_string(), location)].into()),
        registry: Default::default(),
        credentials: Default::default(),
        verification: None,
        listing: Default::default(),
        pulled_from: None,
    }
}

/// The Blueprint a Subscription would have written for acme-db 1.0.0 from the built-in
/// catalog, already carrying the controller's finalizer.
fn blueprint() -> Value {
    let resolved = ResolvedBundle {
        package: "acme-db".into(),
        cluster_service_version_name: CSV_NAME.into(),
        version: "1.0.0".into(),
        catalog: Some("builtin".into()),
        image: None,
        digest: Some(DIGEST.into()),
    };
    let mut blueprint = Blueprint::new(
        NAME,
        BlueprintSpec {
            package: "acme-db".into(),
            cluster_service_version_name: CSV_NAME.into(),
            bundle: Some(resolved),
            ..BlueprintSpec::default()
        },
    );
    blueprint.meta_mut().namespace = Some(NAMESPACE.into());
    blueprint.meta_mut().finalizers = Some(vec![finalizers::BLUEPRINT_CLEANUP.into()]);
    serde_json::to_value(blueprint).expect("a Blueprint serializes")
}

/// What a cluster admin wrote for the platform's namespace: install as the manager, with the
/// bundle's CRDs and cluster permissions.
fn trusted_policy() -> Value {
    let policy = InstallPolicy::new(
        "platform",
        InstallPolicySpec {
            namespaces: vec![NAMESPACE.into()],
            trusted: true,
            cluster_scoped: vec![
                ClusterScopedGrant::CustomResourceDefinitions,
                ClusterScopedGrant::ClusterPermissions,
            ],
            ..InstallPolicySpec::default()
        },
    );
    serde_json::to_value(policy).expect("an InstallPolicy serializes")
}

/// A Blueprint controller and the mocked cluster it runs against.
pub struct Harness {
    pub api: MockApi,
    pub ctx: Arc<Context>,
}

/// A cache that completed its first list and found nothing (no watch runs in these tests).
fn listed_empty<K>() -> reflector::Store<K>
where
    K: kube::runtime::reflector::Lookup + Clone + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    let (reader, mut writer) = reflector::store::<K>();
    writer.apply_watcher_event(&kube::runtime::watcher::Event::Init);
    writer.apply_watcher_event(&kube::runtime::watcher::Event::InitDone);
    reader
}

impl Harness {
    /// The cluster before a fresh install: the namespace, the policy and the Blueprint; the
    /// catalog store serves the bundle.
    pub fn fresh_install() -> Harness {
        let (client, api) = MockApi::start();
        api.insert(json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": NAMESPACE, "labels": {"kubernetes.io/metadata.name": NAMESPACE}},
        }));
        api.insert(trusted_policy());
        api.insert(blueprint());
        let store = CatalogStore::new();
        store.serve(builtin_catalog());
        store.remember(acme_db_bundle());
        let blueprints = listed_empty::<Blueprint>();
        // Never dialled: a trusted policy installs as the manager's own client.
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a URL"));
        let ctx = Context {
            shell: Shell::new(
                client.clone(),
                Scope::cluster(),
                controllers::BLUEPRINT,
                Arc::new(NoMetrics),
            ),
            applier: Applier::new(client.clone()),
            store,
            blueprints,
            seal_key: seal_key(),
            identities: Identities::new(config, client.clone()),
            trust: Arc::new(TrustGate::new(client, "windlass-system")),
            memo: Default::default(),
            own_writes: Default::default(),
            progress: Default::default(),
            // No watch runs here: once its CSVs are written, a Blueprint's are listed.
            csvs: listed_empty(),
            csv_writes: Default::default(),
            revisions: windlass_blueprint_controller::revision_cache::RevisionCache::over(
                listed_empty(),
            ),
            revision_writes: Default::default(),
            revision_lists: Default::default(),
            policy_lists: Default::default(),
            rehearsals: Default::default(),
        };
        Harness {
            api,
            ctx: Arc::new(ctx),
        }
    }

    /// [`Harness::fresh_install`] of a Blueprint under Manual approval.
    pub fn manual_install() -> Harness {
        let harness = Harness::fresh_install();
        harness.edit_blueprint(|spec| spec.approval = windlass_api::config::Approval::Manual);
        harness
    }

    /// A person (or the Subscription) edits the Blueprint's spec; its generation moves.
    pub fn edit_blueprint(&self, edit: impl FnOnce(&mut BlueprintSpec)) {
        let mut blueprint = self.blueprint();
        edit(&mut blueprint.spec);
        self.api
            .insert(serde_json::to_value(blueprint).expect("a Blueprint serializes"));
    }

    /// The Blueprint as the cluster holds it now.
    pub fn blueprint(&self) -> Blueprint {
        let stored = self
            .api
            .object("windlass.dev/v1alpha1", "Blueprint", Some(NAMESPACE), NAME)
            .expect("the Blueprint exists");
        serde_json::from_value(stored).expect("the stored Blueprint reads")
    }

    /// What the passing of time does to the controller's memo of its last apply (the resync
    /// comes after it expired): the next reconcile loads, validates and applies again.
    pub fn memo_expires(&self) {
        let uid = self.blueprint().metadata.uid.unwrap_or_default();
        self.ctx.memo.forget(&uid);
    }

    /// One reconcile, as the controller runs it on a watch event for the Blueprint.
    pub async fn reconcile(&self) -> Result<Action, Error> {
        reconcile(Arc::new(self.blueprint()), self.ctx.clone()).await
    }

    /// The CSV as the cluster holds it now.
    pub fn csv(&self) -> Value {
        self.api
            .object(
                "windlass.dev/v1alpha1",
                "ClusterServiceVersion",
                Some(NAMESPACE),
                CSV_NAME,
            )
            .expect("the CSV was applied")
    }

    /// What the CSV controller does once the operator runs: the CSV reports Succeeded for its
    /// current generation.
    pub fn csv_succeeds(&self) {
        let csv = self.csv();
        let generation = csv["metadata"]["generation"].clone();
        self.api.set_status(
            "windlass.dev/v1alpha1",
            "ClusterServiceVersion",
            Some(NAMESPACE),
            CSV_NAME,
            json!({
                "phase": "Succeeded",
                "reason": "InstallSucceeded",
                "message": "install strategy completed with no errors",
                "observedGeneration": generation,
                "installStartTime": "2026-01-01T00:00:00Z",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }),
        );
    }
}

/// The writes among `requests`, Events left out (they follow the status write that earned
/// them and are asserted on their own).
pub fn writes_of(requests: &[Request]) -> Vec<&Request> {
    requests
        .iter()
        .filter(|r| r.is_write() && !r.path.starts_with(EVENTS_PATH))
        .collect()
}

/// `(method, path)` of each request, for order assertions that print readably.
pub fn routes<'a>(requests: impl IntoIterator<Item = &'a Request>) -> Vec<(&'a str, &'a str)> {
    requests
        .into_iter()
        .map(|r| (r.method.as_str(), r.path.as_str()))
        .collect()
}

/// Asserts `request` is a forced server-side apply under windlass's field manager.
pub fn assert_applied(request: &Request) {
    assert!(request.is_apply(), "{request} is a server-side apply");
    assert_eq!(
        request.field_manager(),
        Some(windlass_api::FIELD_MANAGER),
        "{request}"
    );
    assert!(request.forced(), "{request} is forced");
    assert!(!request.dry_run(), "{request} is no dry run");
}

/// A step of the status' plan, by name.
pub fn plan_step<'a>(status: &'a Value, name: &str) -> &'a Value {
    status["plan"]
        .as_array()
        .and_then(|steps| steps.iter().find(|s| s["name"] == name))
        .unwrap_or_else(|| panic!("no plan step {name} in {status:#}"))
}
