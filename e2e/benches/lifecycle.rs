//! Lifecycle numbers on the local control plane with the manager running (`make bench-e2e`):
//! - Subscription to Succeeded for acme-monitor, which needs acme-db, against `kubectl apply` of
//!   the same objects (CRDs, RBAC, ServiceAccounts, Deployments of both) plus waiting for every
//!   Deployment to be Available, in the same run (ratio); the same for acme-db alone;
//! - after an upgrade to the broken acme-db 1.1.1: the time from its failure being visible (the
//!   CSV Failed) to the old version Succeeded again;
//! - 10,000 Subscriptions across 1,000 namespaces: total time to all Succeeded, the manager's
//!   peak RSS (glibc's allocator untuned), the API server's requests per install from its audit
//!   log, and the manager's writes over 15 idle minutes afterwards (longer than the 10-minute
//!   resync, so a resync that writes shows). `lifecycle scale NAMESPACES IDLE_SECONDS` runs a
//!   smaller one.
//!
//! `make bench-e2e` runs the three on separate control planes, and raises
//! kube-controller-manager's API rate limit to 150 requests a second (`WINDLASS_KCM_QPS`) for
//! the thousand Subscriptions, as large control planes do: at upstream's 20, its Deployment and
//! ReplicaSet controllers need about four minutes to make a thousand Deployments Available
//! whoever creates them, and that, not windlass, would be measured. The install comparison
//! keeps upstream's limit.

use std::{
    path::Path,
    sync::Arc,
    time::{Duration, Instant},
};

use futures::{StreamExt, stream::BoxStream};
use k8s_openapi::api::apps::v1::Deployment;
use kube::{
    Api, Client, Resource,
    runtime::{
        reflector::{self, Store, reflector},
        watcher::{self, watcher},
    },
};
use serde::de::DeserializeOwned;
use serde_json::json;
use windlass_api::{
    Blueprint, ClusterServiceVersion, CsvPhase,
    blueprint::{BlueprintPhase, RevisionOutcome},
    catalog::CatalogPhase,
};
use windlass_testkit::{
    TestNamespace,
    catalogs::{self, TestCatalog, publish},
    kubectl,
    lifecycle::{is_at, phase, subscribe},
    require_manager, run_ok,
};

#[path = "common/kubectl.rs"]
mod kubectl_objects;

const ROUNDS: usize = 3;
/// The floor's rounds spread widely on a shared machine: more of them for the install medians.
const INSTALL_ROUNDS: usize = 7;
const POLL: Duration = Duration::from_millis(100);
/// Ten Subscriptions per namespace.
const SCALE_NAMESPACES: usize = 1000;
const IDLE: Duration = Duration::from_secs(15 * 60);

#[tokio::main]
async fn main() {
    require_manager();
    let client = windlass_testkit::client().await;
    let which = std::env::args().nth(1).filter(|a| !a.starts_with('-'));
    let run = |name: &str| which.as_deref().is_none_or(|w| w == name);
    if run("install") {
        for case in &INSTALL_CASES {
            install_against_floor(&client, case).await;
        }
    }
    if run("rollback") {
        rollback_time(&client).await;
    }
    if run("scale") {
        let number = |n: usize| std::env::args().nth(n).and_then(|a| a.parse::<u64>().ok());
        let namespaces = number(2).map_or(SCALE_NAMESPACES, |n| n as usize);
        let idle = number(3).map_or(IDLE, Duration::from_secs);
        scale(&client, namespaces, idle).await;
    }
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

async fn wait_blueprint(
    api: &Api<Blueprint>,
    name: &str,
    limit: Duration,
    ready: impl Fn(&Blueprint) -> bool,
) {
    let start = Instant::now();
    loop {
        if let Ok(Some(b)) = api.get_opt(name).await
            && ready(&b)
        {
            return;
        }
        assert!(start.elapsed() < limit, "{name} not ready within {limit:?}");
        tokio::time::sleep(POLL).await;
    }
}

/// A watch of a namespace's objects of one kind, opened (its first list done) before the step
/// it times starts, so a step ends when its last change arrives rather than at the next poll.
struct Watch<K: Resource<DynamicType = ()> + 'static> {
    store: Store<K>,
    changes: BoxStream<'static, Result<watcher::Event<K>, watcher::Error>>,
}

impl<K> Watch<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync,
{
    async fn open(api: Api<K>) -> Watch<K> {
        let (store, writer) = reflector::store();
        let mut changes = reflector(writer, watcher(api, watcher::Config::default())).boxed();
        while let Some(event) = changes.next().await {
            if matches!(event, Ok(watcher::Event::InitDone)) {
                break;
            }
        }
        Watch { store, changes }
    }

    /// When what the watch shows first satisfied `done`.
    async fn until(&mut self, limit: Duration, done: impl Fn(&[Arc<K>]) -> bool) -> Instant {
        let start = Instant::now();
        loop {
            if done(&self.store.state()) {
                return Instant::now();
            }
            let left = limit.saturating_sub(start.elapsed());
            match tokio::time::timeout(left, self.changes.next()).await {
                Ok(Some(_)) => {}
                Ok(None) => panic!("the watch ended"),
                Err(_) => panic!("not done within {limit:?}"),
            }
        }
    }
}

fn bundle(path: &str) -> windlass_bundle::Bundle {
    windlass_bundle::load_bundle(&Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path))
        .unwrap()
}

/// One install against its floor: a Subscription to `package` until its Blueprint Succeeded at
/// `version`, and `kubectl apply --server-side` of the same objects until every Deployment is
/// Available, alternating in one run.
struct InstallCase {
    label: &'static str,
    package: &'static str,
    version: &'static str,
    /// The bundles whose objects the Subscription ends up applying, dependencies first.
    bundles: &'static [&'static str],
}

const INSTALL_CASES: [InstallCase; 2] = [
    InstallCase {
        label: "acme-monitor + acme-db",
        package: "acme-monitor",
        version: "0.2.0",
        bundles: &["bundles/acme-db/1.1.0", "bundles/acme-monitor/0.2.0"],
    },
    // The same steps without a dependency: what one package costs over its floor, so the
    // dependency case can be read as two of these one after the other (a dependency is
    // installed and Succeeded before its dependent's objects are applied).
    InstallCase {
        label: "acme-db alone",
        package: "acme-db",
        version: "1.1.0",
        bundles: &["bundles/acme-db/1.1.0"],
    },
];

async fn install_against_floor(client: &Client, case: &InstallCase) {
    let bundles: Vec<_> = case.bundles.iter().map(|path| bundle(path)).collect();
    let mut windlass_times = Vec::new();
    let mut kubectl_times = Vec::new();
    let mut keep = Vec::new();
    for _ in 0..INSTALL_ROUNDS {
        let ns = TestNamespace::create(client, "bench-sub").await;
        let mut blueprints =
            Watch::open(Api::<Blueprint>::namespaced(client.clone(), &ns.name)).await;
        let start = Instant::now();
        subscribe(
            client,
            &ns.name,
            case.package,
            json!({ "package": case.package, "targetNamespaces": [ns.name] }),
        )
        .await;
        let done = blueprints
            .until(Duration::from_secs(180), |all| {
                all.iter().any(|b| {
                    b.metadata.name.as_deref() == Some(case.package)
                        && is_at(b, BlueprintPhase::Succeeded, case.version)
                })
            })
            .await;
        windlass_times.push(done - start);
        keep.push(ns);

        let ns = TestNamespace::create(client, "bench-kubectl").await;
        let mut items = Vec::new();
        for bundle in &bundles {
            for manifest in bundle
                .manifests
                .iter()
                .filter(|m| m.kind() == "CustomResourceDefinition")
            {
                items.push(manifest.object.clone());
            }
            items.extend(kubectl_objects::install_objects(bundle, &ns.name));
        }
        let file = std::env::temp_dir().join(format!("{}.json", ns.name));
        std::fs::write(
            &file,
            serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "List", "items": items}))
                .unwrap(),
        )
        .unwrap();
        let mut deployments =
            Watch::open(Api::<Deployment>::namespaced(client.clone(), &ns.name)).await;
        let start = Instant::now();
        run_ok(
            kubectl()
                .args([
                    "apply",
                    "--server-side",
                    "--force-conflicts",
                    "--field-manager",
                    "bench-kubectl",
                    "-f",
                ])
                .arg(&file),
        );
        let done = deployments
            .until(Duration::from_secs(180), |all| {
                all.len() == bundles.len()
                    && all.iter().all(|d| {
                        d.status
                            .as_ref()
                            .and_then(|s| s.available_replicas)
                            .unwrap_or(0)
                            >= d.spec.replicas.unwrap_or(1)
                    })
            })
            .await;
        kubectl_times.push(done - start);
        let _ = std::fs::remove_file(file);
        run_ok(kubectl().args([
            "delete",
            "clusterrole,clusterrolebinding",
            "-l",
            &format!("windlass.dev/csv-namespace={}", ns.name),
            "--ignore-not-found",
        ]));
        keep.push(ns);
    }
    let (w, k) = (median(&mut windlass_times), median(&mut kubectl_times));
    let label = case.label;
    println!(
        "subscription-to-succeeded ({label}) median {:.2}s over {INSTALL_ROUNDS} rounds ({windlass_times:?})",
        w.as_secs_f64()
    );
    println!(
        "kubectl-apply-to-available ({label}, same objects) median {:.2}s ({kubectl_times:?})",
        k.as_secs_f64()
    );
    println!(
        "ratio windlass/kubectl ({label}) {:.2}",
        w.as_secs_f64() / k.as_secs_f64()
    );
}

async fn rollback_time(client: &Client) {
    let mut times = Vec::new();
    let mut keep = Vec::new();
    for _ in 0..ROUNDS {
        let ns = TestNamespace::create(client, "bench-rollback").await;
        subscribe(
            client,
            &ns.name,
            "db",
            json!({
                "package": "acme-db", "channel": "stable", "startingCSV": "acme-db.v1.1.0",
                "targetNamespaces": [ns.name],
                "rollback": { "automatic": true, "progressDeadlineSeconds": 15 },
            }),
        )
        .await;
        // The failure is visible as soon as anything says so: the CSV Failed, or the Blueprint
        // past the deadline (it marks the revision Failed and starts rolling back).
        let csvs = Api::<ClusterServiceVersion>::namespaced(client.clone(), &ns.name);
        let blueprints = Api::<Blueprint>::namespaced(client.clone(), &ns.name);
        let start = Instant::now();
        let failed_at = loop {
            let csv_failed = csvs
                .get_opt("acme-db.v1.1.1")
                .await
                .ok()
                .flatten()
                .and_then(|c| c.status)
                .and_then(|s| s.phase)
                == Some(CsvPhase::Failed);
            let blueprint_says = blueprints
                .get_opt("db")
                .await
                .ok()
                .flatten()
                .is_some_and(|b| {
                    b.status.unwrap_or_default().history.iter().any(|r| {
                        r.version == "1.1.1"
                            && matches!(
                                r.outcome,
                                RevisionOutcome::Failed | RevisionOutcome::RolledBack
                            )
                    })
                });
            if csv_failed || blueprint_says {
                break Instant::now();
            }
            assert!(
                start.elapsed() < Duration::from_secs(240),
                "1.1.1 never failed"
            );
            tokio::time::sleep(POLL).await;
        };
        let api = Api::<Blueprint>::namespaced(client.clone(), &ns.name);
        wait_blueprint(&api, "db", Duration::from_secs(240), |b| {
            is_at(b, BlueprintPhase::RolledBack, "1.1.0")
        })
        .await;
        times.push(failed_at.elapsed());
        keep.push(ns);
    }
    let m = median(&mut times);
    println!(
        "failure-visible-to-old-version-succeeded median {:.2}s over {ROUNDS} rounds ({times:?})",
        m.as_secs_f64()
    );
}

/// acme-db 1.1.0 renamed throughout (package, CSV, Deployment, CRD), so one namespace can hold
/// several different operators.
fn renamed(to: &'static str) -> impl Fn(&mut serde_json::Value) {
    move |object| {
        let text = serde_json::to_string(object)
            .unwrap()
            .replace("acme-db", &format!("acme-{to}"))
            .replace("databases", &format!("{to}s"))
            .replace(
                "Database",
                &format!("{}{}", to[..1].to_uppercase(), &to[1..]),
            )
            .replace("database", to)
            .replace("\"adb\"", &format!("\"a{to}\""));
        *object = serde_json::from_str(&text).unwrap();
    }
}

/// The operators every namespace of the scale run installs besides acme-db and acme-monitor:
/// acme-db renamed, one catalog serving them all.
const RENAMED: [&str; 8] = [
    "kv", "queue", "cache", "search", "stream", "ledger", "vault", "gateway",
];

async fn scale(client: &Client, namespace_count: usize, idle: Duration) {
    let mut published = Vec::new();
    for name in RENAMED {
        published.push(publish(&format!("acme-{name}"), "acme-db/1.1.0", renamed(name)).await);
    }
    let catalog = TestCatalog::create(client, "bench-scale", &published).await;
    catalog
        .wait("Serving", |c| {
            catalogs::phase(c) == Some(CatalogPhase::Serving)
        })
        .await;
    let per_namespace = 2 + RENAMED.len();
    let subscriptions = namespace_count * per_namespace;
    // One watch of every Blueprint, not a poll of each: the bench's reads would otherwise be a
    // share of the API server's work it is measuring.
    let mut blueprints = Watch::open(Api::<Blueprint>::all(client.clone())).await;
    let requests_before = windlass_testkit::manager::requests();
    let start = Instant::now();
    let mut namespaces = Vec::new();
    for _ in 0..namespace_count {
        let ns = TestNamespace::create(client, "bench-scale").await;
        let own = json!([ns.name]);
        // Ten Subscriptions per namespace, ten different operators, each watching only its
        // own namespace; acme-monitor's dependency is the acme-db Subscription next to it.
        let mut specs = vec![
            (
                "acme-db".to_string(),
                json!({ "package": "acme-db", "targetNamespaces": own }),
            ),
            (
                "acme-monitor".to_string(),
                json!({ "package": "acme-monitor", "targetNamespaces": own }),
            ),
        ];
        for name in RENAMED {
            let package = format!("acme-{name}");
            specs.push((
                package.clone(),
                json!({ "package": package, "catalog": catalog.name, "targetNamespaces": own }),
            ));
        }
        for (name, spec) in specs {
            subscribe(client, &ns.name, &name, spec).await;
        }
        namespaces.push(ns);
    }
    let created = start.elapsed();
    let ours: std::collections::HashSet<&str> =
        namespaces.iter().map(|ns| ns.name.as_str()).collect();
    let succeeded = |all: &[Arc<Blueprint>]| {
        all.iter()
            .filter(|b| {
                b.metadata
                    .namespace
                    .as_deref()
                    .is_some_and(|n| ours.contains(n))
                    && phase(b) == Some(BlueprintPhase::Succeeded)
            })
            .count()
    };
    let done = blueprints
        .until(Duration::from_secs(3600), |all| {
            succeeded(all) == subscriptions
        })
        .await;
    let total = done.duration_since(start);
    println!(
        "{subscriptions} Subscriptions in {namespace_count} namespaces: created in {:.1}s, all Succeeded after {:.1}s",
        created.as_secs_f64(),
        total.as_secs_f64()
    );
    print_row(
        &format!("{subscriptions} Subscriptions in {namespace_count} namespaces: all Succeeded"),
        &format!("{:.0} s", total.as_secs_f64()),
        "from the first create",
        &format!("<= {} s", SCALE_TARGET.as_secs()),
        total <= SCALE_TARGET,
    );
    let peak = windlass_testkit::manager::memory_kib("VmHWM");
    if let Some(peak) = peak {
        println!("manager peak RSS {:.1} MiB", peak as f64 / 1024.0);
        print_row(
            "manager peak RSS (glibc malloc as it comes)",
            &format!("{:.0} MiB", peak as f64 / 1024.0),
            &format!("{subscriptions} Subscriptions"),
            &format!("<= {RSS_TARGET_MIB} MiB"),
            peak / 1024 <= RSS_TARGET_MIB,
        );
    }
    // Whatever finishing touches the last installs make (a status after the CSV settles) are
    // not idle writes.
    tokio::time::sleep(Duration::from_secs(15)).await;
    report_requests(&requests_before, subscriptions);
    let before = windlass_testkit::manager::writes();
    tokio::time::sleep(idle).await;
    let written = windlass_testkit::manager::writes_after(before);
    let idle_writes: usize = written.values().sum();
    println!(
        "manager writes in {:.0} idle minutes with everything installed: {idle_writes} {written:?}",
        idle.as_secs_f64() / 60.0,
    );
    print_row(
        &format!(
            "manager writes over {:.0} settled minutes",
            idle.as_secs_f64() / 60.0
        ),
        &idle_writes.to_string(),
        &format!("{subscriptions} Subscriptions installed"),
        "0",
        idle_writes == 0,
    );
    if let Some(rss) = windlass_testkit::manager::memory_kib("VmRSS") {
        println!("manager idle RSS {:.1} MiB", rss as f64 / 1024.0);
    }
}

/// All of them Succeeded within this long of the first create.
const SCALE_TARGET: Duration = Duration::from_secs(600);
const RSS_TARGET_MIB: u64 = 400;

/// The manager's requests during the installs, per install, by verb and resource, as the API
/// server's audit log counts them (its reads only when the control plane logs them:
/// `WINDLASS_AUDIT=requests`).
fn report_requests(before: &std::collections::BTreeMap<String, usize>, installs: usize) {
    let after = windlass_testkit::manager::requests();
    let mut during: Vec<(String, usize)> = after
        .iter()
        .map(|(k, n)| (k.clone(), n - before.get(k).copied().unwrap_or(0)))
        .filter(|(_, n)| *n > 0)
        .collect();
    during.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let total: usize = during.iter().map(|(_, n)| n).sum();
    let reads = !during
        .iter()
        .any(|(k, _)| k.starts_with("get ") || k.starts_with("list "));
    println!(
        "the manager's requests in the audit log during the installs: {total}, {:.2} per install{}",
        total as f64 / installs as f64,
        if reads {
            " (writes only: the control plane did not log reads)"
        } else {
            ""
        }
    );
    for (what, n) in &during {
        println!(
            "  {:>8.3} per install  {what} ({n})",
            *n as f64 / installs as f64
        );
    }
    print_row(
        "API server requests per install (audit log)",
        &format!("{:.1}", total as f64 / installs as f64),
        &format!("{installs} installs"),
        "reported",
        true,
    );
}

/// One summary row as `make bench` collects them: what was measured, its value, its anchor
/// and the target.
fn print_row(what: &str, value: &str, anchor: &str, target: &str, met: bool) {
    let verdict = if met { "met" } else { "MISSED" };
    println!("bench-row\t{what}\t{value}\t{anchor}\t\t{target}\t{verdict}");
}
