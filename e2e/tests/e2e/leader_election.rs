//! Leader election between real `windlass manager --leader-elect` processes on the local control
//! plane: exactly one replica leads (ready, holds the Lease, reconciles), the others wait; a
//! leader stopped with SIGTERM releases the Lease and a waiting replica takes over within the
//! lease duration; a leader killed outright keeps the Lease until it expires, and only then is
//! it taken over.
//!
//! The replicas are this test's own, next to the manager `make e2e` runs. Each keeps its Lease in
//! the test's namespace (`--namespace`) and runs only the ClusterServiceVersion controller, for
//! that namespace only (`--controllers clusterserviceversion --watch-namespace`), so they never
//! touch what the other tests do. The manager binary is `WINDLASS_MANAGER_BIN` (as `make e2e`
//! sets it) or the debug build.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client, api::PostParams};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use windlass_api::{ClusterServiceVersion, ClusterServiceVersionSpec};
use windlass_testkit::{TestNamespace, kubeconfig_path, kubectl, run_ok, unique_name, wait_for};

/// The manager's Lease name and timings (crates/windlass/src/manager/leader.rs).
const LEASE: &str = "windlass-manager";
const LEASE_DURATION: Duration = Duration::from_secs(30);
const RETRY_EVERY: Duration = Duration::from_secs(5);

fn manager_bin() -> PathBuf {
    let path = std::env::var_os("WINDLASS_MANAGER_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_BIN_EXE_windlass-image")).with_file_name("windlass")
        });
    assert!(
        path.is_file(),
        "{} is not built: run `cargo build -p windlass` (or set WINDLASS_MANAGER_BIN)",
        path.display()
    );
    path
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on 127.0.0.1")
}

/// One `windlass manager --leader-elect` process. Killed when dropped; its log is printed when
/// the test fails.
struct Replica {
    name: String,
    child: Child,
    health: u16,
    metrics: u16,
    log: PathBuf,
}

impl Replica {
    fn start(name: &str, namespace: &str, logs: &Path) -> Replica {
        let (health, metrics) = (free_port(), free_port());
        let log = logs.join(format!("{name}.log"));
        let file = std::fs::File::create(&log).unwrap();
        let child = Command::new(manager_bin())
            .arg("manager")
            .arg("--kubeconfig")
            .arg(kubeconfig_path())
            .args(["--namespace", namespace, "--watch-namespace", namespace])
            .args(["--controllers", "clusterserviceversion", "--leader-elect"])
            .args([
                "--health-probe-bind-address",
                &format!("127.0.0.1:{health}"),
            ])
            .args(["--metrics-bind-address", &format!("127.0.0.1:{metrics}")])
            .args(["--log-level", "info,kube=warn"])
            // The Lease holder is `<HOSTNAME>_<pid>`.
            .env("HOSTNAME", name)
            .env_remove("WATCH_NAMESPACE")
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", manager_bin().display()));
        Replica {
            name: name.into(),
            child,
            health,
            metrics,
            log,
        }
    }

    fn identity(&self) -> String {
        format!("{}_{}", self.name, self.child.id())
    }

    /// Status code and body of `GET path`, `None` when nothing answers.
    async fn get(port: u16, path: &str) -> Option<(u16, String)> {
        let exchange = async {
            let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
            let request =
                format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
            stream.write_all(request.as_bytes()).await?;
            let mut response = Vec::new();
            stream.read_to_end(&mut response).await?;
            std::io::Result::Ok(String::from_utf8_lossy(&response).into_owned())
        };
        let text = tokio::time::timeout(Duration::from_secs(5), exchange)
            .await
            .ok()?
            .ok()?;
        let status = text.split_whitespace().nth(1)?.parse().ok()?;
        let body = text
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default();
        Some((status, body))
    }

    async fn readyz(&self) -> Option<u16> {
        Self::get(self.health, "/readyz")
            .await
            .map(|(status, _)| status)
    }

    async fn healthz(&self) -> Option<u16> {
        Self::get(self.health, "/healthz")
            .await
            .map(|(status, _)| status)
    }

    /// `windlass_reconciles_total` per controller, from /metrics.
    async fn reconciles(&self) -> Vec<(String, f64)> {
        let Some((200, text)) = Self::get(self.metrics, "/metrics").await else {
            return Vec::new();
        };
        text.lines()
            .filter_map(|line| {
                let rest = line.strip_prefix("windlass_reconciles_total{controller=\"")?;
                let (controller, value) = rest.split_once("\"} ")?;
                Some((controller.to_string(), value.trim().parse().ok()?))
            })
            .collect()
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill {signal} {}", self.name);
    }

    /// Waits for the process to end; its exit status.
    async fn exited(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "{} did not exit within {timeout:?}",
                self.name
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!(
                "--- log of {} ({}) ---\n{}",
                self.name,
                self.identity(),
                self.log_text()
            );
        }
    }
}

async fn holder(leases: &Api<Lease>) -> Option<String> {
    leases
        .get_opt(LEASE)
        .await
        .ok()
        .flatten()
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
        .filter(|h| !h.is_empty())
}

/// Waits until exactly one of `replicas` is ready and holds the Lease; its index.
async fn one_leader(replicas: &[&Replica], leases: &Api<Lease>, timeout: Duration) -> usize {
    wait_for(
        "exactly one ready replica holding the Lease",
        timeout,
        || async {
            let mut ready = Vec::new();
            for (i, replica) in replicas.iter().enumerate() {
                if replica.readyz().await == Some(200) {
                    ready.push(i);
                }
            }
            let holder = holder(leases).await;
            match ready[..] {
                [i] if holder.as_deref() == Some(replicas[i].identity().as_str()) => Ok(i),
                _ => Err(format!("ready: {ready:?}, Lease holder: {holder:?}")),
            }
        },
    )
    .await
}

/// A follower: alive (`/healthz` 200) but not ready, and not reconciling anything.
async fn assert_waits(replica: &Replica) {
    assert_eq!(
        replica.healthz().await,
        Some(200),
        "{} is not alive",
        replica.name
    );
    assert_eq!(
        replica.readyz().await,
        Some(503),
        "{} is not waiting",
        replica.name
    );
    assert!(
        replica.reconciles().await.is_empty(),
        "{} reconciles while it waits: {:?}",
        replica.name,
        replica.reconciles().await
    );
}

/// Waits until the leader's /metrics count at least one reconcile of the test's CSV.
async fn assert_reconciles(replica: &Replica) -> f64 {
    wait_for(
        &format!(
            "{} to count a ClusterServiceVersion reconcile",
            replica.name
        ),
        Duration::from_secs(60),
        || async {
            let counters = replica.reconciles().await;
            match counters.iter().find(|(c, _)| c == "clusterserviceversion") {
                Some((_, n)) if *n >= 1.0 => Ok(*n),
                _ => Err(format!("{counters:?}")),
            }
        },
    )
    .await
}

/// A CSV that stays Pending (it wants a Kubernetes that does not exist) and installs nothing:
/// something in the namespace for the leader to reconcile.
async fn pending_csv(client: &Client, namespace: &str) {
    let mut csv = ClusterServiceVersion::new(
        "leader-probe.v1.0.0",
        ClusterServiceVersionSpec {
            definition: json!({
                "spec": {
                    "displayName": "leader probe",
                    "version": "1.0.0",
                    "minKubeVersion": "99.0.0",
                    "install": {"strategy": "deployment", "spec": {"deployments": []}},
                },
            })
            .into(),
            target_namespaces: vec![namespace.to_string()],
            ..Default::default()
        },
    );
    // The replicas run with `--namespace` the test's namespace: their key is sealed there.
    csv.metadata.namespace = Some(namespace.to_string());
    windlass_testkit::manager::seal_csv(client, namespace, &mut csv).await;
    Api::<ClusterServiceVersion>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &csv)
        .await
        .unwrap_or_else(|e| panic!("creating the probe CSV: {e}"));
}

/// The windlass CRDs, applied as `make e2e` applies them: the manager waits for all of them.
fn apply_crds() {
    let crds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/crd");
    run_ok(
        kubectl()
            .args(["apply", "--server-side", "--force-conflicts"])
            .args(["--field-manager", "windlass-e2e", "-f"])
            .arg(&crds),
    );
    run_ok(
        kubectl()
            .args(["wait", "--for=condition=Established", "--timeout=60s", "-f"])
            .arg(&crds),
    );
}

/// Given two replicas started together, then exactly one leads and the other waits, and the
/// leader reconciles its namespace only; when the
/// leader gets SIGTERM, then it releases the Lease and the other takes over within the lease
/// duration; when that one is killed with SIGKILL, then a third takes over only once the Lease
/// has expired.
#[tokio::test]
async fn one_replica_leads_and_another_takes_over_when_it_stops() {
    let client = windlass_testkit::client().await;
    apply_crds();
    let ns = TestNamespace::create(&client, "leader").await;
    let leases = Api::<Lease>::namespaced(client.clone(), &ns.name);
    // A CSV outside the watched namespace, there before the replicas start: a replica that
    // reconciled the whole cluster would pick it up from its first list.
    let elsewhere = TestNamespace::create(&client, "leader-elsewhere").await;
    pending_csv(&client, &elsewhere.name).await;
    let logs = std::env::temp_dir().join(unique_name("leader-election"));
    std::fs::create_dir_all(&logs).unwrap();

    let started = Instant::now();
    let mut a = Replica::start("replica-a", &ns.name, &logs);
    let mut b = Replica::start("replica-b", &ns.name, &logs);
    let first = one_leader(&[&a, &b], &leases, Duration::from_secs(60)).await;
    let elected = started.elapsed();
    let (leader, follower) = if first == 0 {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    println!(
        "{} leads after {:.1} s; {} waits",
        leader.name,
        elected.as_secs_f64(),
        follower.name
    );

    // The follower keeps waiting through more than one of its retries, and the Lease stays put.
    let until = Instant::now() + RETRY_EVERY + Duration::from_secs(2);
    while Instant::now() < until {
        assert_waits(follower).await;
        assert_eq!(leader.readyz().await, Some(200));
        assert_eq!(holder(&leases).await, Some(leader.identity()));
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // Ready for more than RETRY_EVERY, yet nothing reconciled: not the CSV elsewhere, not the
    // other tests' objects. One CSV in its own namespace, and it reconciles at once.
    assert!(
        leader.reconciles().await.is_empty(),
        "{} reconciled outside its namespace: {:?}",
        leader.name,
        leader.reconciles().await
    );
    pending_csv(&client, &ns.name).await;
    let counted = assert_reconciles(leader).await;
    println!(
        "{} /metrics: windlass_reconciles_total{{controller=\"clusterserviceversion\"}} {counted}",
        leader.name
    );
    let transitions = |l: &Lease| {
        l.spec
            .as_ref()
            .and_then(|s| s.lease_transitions)
            .unwrap_or(0)
    };
    let before = transitions(&leases.get(LEASE).await.unwrap());

    // SIGTERM: the leader stops, releases the Lease, and the follower takes over.
    let stopped = Instant::now();
    leader.signal("-TERM");
    let status = leader.exited(Duration::from_secs(20)).await;
    assert!(status.success(), "{} exited with {status}", leader.name);
    let exit = stopped.elapsed();
    assert!(
        leader.log_text().contains("released the Lease"),
        "{}",
        leader.log_text()
    );
    assert_eq!(one_leader(&[&*follower], &leases, LEASE_DURATION).await, 0);
    let takeover = stopped.elapsed();
    // Released, not expired: the follower's next try takes it, well within the lease duration
    // (had it expired instead, that would be at least 20 s: the leader renews every 10 s).
    assert!(
        takeover <= RETRY_EVERY + Duration::from_secs(10),
        "takeover took {takeover:?}, as if the Lease had expired rather than been released"
    );
    let lease = leases.get(LEASE).await.unwrap();
    assert_eq!(transitions(&lease), before + 1);
    let counted = assert_reconciles(follower).await;
    println!(
        "SIGTERM: {} exited after {:.1} s; {} ready and holding the Lease after {:.1} s (lease duration {} s); its reconciles: {counted}",
        leader.name,
        exit.as_secs_f64(),
        follower.name,
        takeover.as_secs_f64(),
        LEASE_DURATION.as_secs(),
    );

    // SIGKILL: no release. A new replica waits until the Lease expires, not a moment less.
    let new_leader = follower;
    let mut c = Replica::start("replica-c", &ns.name, &logs);
    wait_for(
        "replica-c to be up and waiting",
        Duration::from_secs(30),
        || async {
            match (c.healthz().await, c.readyz().await) {
                (Some(200), Some(503)) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    assert_waits(&c).await;
    new_leader.signal("-KILL");
    let killed = Instant::now();
    new_leader.exited(Duration::from_secs(10)).await;
    let last_renewal = leases
        .get(LEASE)
        .await
        .unwrap()
        .spec
        .unwrap()
        .renew_time
        .unwrap()
        .0;
    let expiry = LEASE_DURATION + RETRY_EVERY + Duration::from_secs(10);
    assert_eq!(one_leader(&[&c], &leases, expiry).await, 0);
    let takeover = killed.elapsed();
    let taken = leases.get(LEASE).await.unwrap().spec.unwrap();
    let acquired = taken.acquire_time.unwrap().0;
    let waited = acquired.duration_since(last_renewal).as_secs_f64();
    assert!(
        waited >= LEASE_DURATION.as_secs_f64(),
        "replica-c took the Lease {waited:.1} s after the last renewal, before it expired"
    );
    assert_reconciles(&c).await;
    println!(
        "SIGKILL: {} ready and holding the Lease {:.1} s after the kill, {waited:.1} s after the last renewal (lease duration {} s, retry every {} s)",
        c.name,
        takeover.as_secs_f64(),
        LEASE_DURATION.as_secs(),
        RETRY_EVERY.as_secs(),
    );
    c.signal("-TERM");
    assert!(c.exited(Duration::from_secs(20)).await.success());
    let _ = std::fs::remove_dir_all(&logs);
}
