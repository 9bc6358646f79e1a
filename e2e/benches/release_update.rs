//! Release update numbers on the local control plane with the manager running (`make bench-e2e`,
//! or `cargo bench -p windlass-e2e --bench release_update [-- MANIFESTS LEVELS ROUNDS]` with a
//! cluster and manager up). The payloads are generated (`windlass_release::synthetic`): about
//! 1,000 manifests in 20 run levels, two components a level (namespace, RBAC, ConfigMaps, a
//! Deployment and its Service, a StatefulSet in every second component, CRDs in the first
//! level), every workload naming the release version so each update rolls them all out.
//!
//! - Install and update time: the ClusterVersion moving to a payload (pushed by `windlass
//!   release new`), from `spec.desiredUpdate` written to the history entry Completed, against
//!   `kubectl apply --server-side` of the same files level by level (another name prefix, so
//!   both sides create and roll the same amount), each level followed by the same waits (every
//!   CRD Established, every Deployment and StatefulSet rolled out, all of a level's waits at
//!   once), in the same run; median of the rounds and the ratio.
//! - The manager's peak RSS during the updates (its high-water mark reset before them).
//! - Writes once settled: the manager's write requests in the audit log during one minute after
//!   the last update completed.
//! - Automatic rollback: a release whose fifth level never becomes healthy, with
//!   `spec.rollback.automatic`; the time from the ClusterVersion saying `Failing` to the
//!   release before it `Available` again.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use k8s_openapi::api::{core::v1::ServiceAccount, rbac::v1::ClusterRoleBinding};
use kube::{
    Api, Client,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use semver::Version;
use serde_json::json;
use windlass_api::{
    ClusterVersion,
    clusterversion::{CLUSTER_VERSION_NAME, UpdateState},
    condition::find,
    names::conditions::cluster_version as types,
};
use windlass_release::{
    InclusionOptions, LoadOptions, Payload,
    synthetic::{SyntheticPayload, synthetic_payload},
};
use windlass_testkit::{kubectl, require_manager, run_ok};

const POLL: Duration = Duration::from_millis(100);
const LIMIT: Duration = Duration::from_secs(900);
/// How long the broken level may try before the update is failing (and rolled back).
const LEVEL_DEADLINE_SECONDS: i64 = 20;

struct Sizes {
    manifests: usize,
    levels: usize,
    rounds: usize,
}

fn payload(
    prefix: &str,
    sizes: &Sizes,
    version: &str,
    broken_level: Option<usize>,
) -> SyntheticPayload {
    SyntheticPayload {
        version: Version::parse(version).unwrap(),
        levels: sizes.levels,
        manifests: sizes.manifests,
        prefix: prefix.into(),
        broken_level,
        ..SyntheticPayload::default()
    }
}

fn write_tree(tree: &windlass_bundle::FileTree, dir: &Path) {
    for (path, bytes) in &tree.files {
        let file = dir.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, bytes).unwrap();
    }
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn seconds(times: &[Duration]) -> String {
    let list: Vec<String> = times
        .iter()
        .map(|t| format!("{:.1}", t.as_secs_f64()))
        .collect();
    list.join(", ")
}

#[tokio::main]
async fn main() {
    require_manager();
    let numbers: Vec<usize> = std::env::args().filter_map(|a| a.parse().ok()).collect();
    let sizes = Sizes {
        manifests: numbers.first().copied().unwrap_or(1000),
        levels: numbers.get(1).copied().unwrap_or(20),
        rounds: numbers.get(2).copied().unwrap_or(3).max(1),
    };
    let client = windlass_testkit::client().await;
    release_account(&client).await;
    let work = std::env::temp_dir().join(windlass_testkit::unique_name("bench-release"));
    let repository = windlass_testkit::registry().unique_repository("bench-release");
    let versions: Vec<String> = (0..=sizes.rounds).map(|i| format!("1.0.{i}")).collect();
    let broken = format!("1.0.{}", sizes.rounds + 1);

    let mut images = Vec::new();
    for version in versions.iter().chain([&broken]) {
        let broken_level = (version == &broken).then_some(sizes.levels / 2 - 1);
        let tree = synthetic_payload(&payload("wl", &sizes, version, broken_level));
        let dir = work.join("windlass").join(version);
        write_tree(&tree, &dir);
        images.push(release_new(
            &dir,
            version,
            &format!("{repository}:{version}"),
        ));
    }
    let cluster_versions = Api::<ClusterVersion>::all(client.clone());
    start_afresh(&cluster_versions).await;
    set_spec(&cluster_versions, SETTINGS, json!({"plainHTTP": true})).await;

    // The first release is an install: every object is created.
    let install_windlass = update_to(&cluster_versions, &images[0], &versions[0]).await;
    let install_kubectl = kubectl_levels(&work, "kc", &sizes, &versions[0]);
    println!(
        "{} manifests in {} levels, install: windlass {:.2}s, kubectl apply --server-side level by level {:.2}s, ratio {:.2}",
        sizes.manifests,
        sizes.levels,
        install_windlass.as_secs_f64(),
        install_kubectl.as_secs_f64(),
        install_windlass.as_secs_f64() / install_kubectl.as_secs_f64()
    );

    let memory_reset = reset_peak_rss();
    let mut windlass_times = Vec::new();
    let mut kubectl_times = Vec::new();
    for (image, version) in images.iter().zip(&versions).skip(1) {
        windlass_times.push(update_to(&cluster_versions, image, version).await);
        kubectl_times.push(kubectl_levels(&work, "kc", &sizes, version));
    }
    let peak = windlass_testkit::manager::memory_kib("VmHWM");
    let (w, k) = (median(&mut windlass_times), median(&mut kubectl_times));
    println!(
        "update (every workload rolled), median of {} rounds: windlass {:.2}s ({}), kubectl {:.2}s ({}), ratio {:.2}",
        sizes.rounds,
        w.as_secs_f64(),
        seconds(&windlass_times),
        k.as_secs_f64(),
        seconds(&kubectl_times),
        w.as_secs_f64() / k.as_secs_f64()
    );
    let ratio = w.as_secs_f64() / k.as_secs_f64();
    println!(
        "bench-row\trelease update, {} manifests in {} levels (median of {})\t{:.1} s\tkubectl apply --server-side per level {:.1} s\t{ratio:.2}x\t<= 1.00x\t{}",
        sizes.manifests,
        sizes.levels,
        sizes.rounds,
        w.as_secs_f64(),
        k.as_secs_f64(),
        if ratio <= 1.0 { "met" } else { "MISSED" }
    );
    match (peak, memory_reset) {
        (Some(peak), true) => println!(
            "manager peak RSS during the updates {:.1} MiB",
            peak as f64 / 1024.0
        ),
        (Some(peak), false) => println!(
            "manager peak RSS since it started (its high-water mark could not be reset) {:.1} MiB",
            peak as f64 / 1024.0
        ),
        (None, _) => println!("manager peak RSS: no manager process to read"),
    }

    // Settled: nothing to write.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let before = windlass_testkit::manager::writes();
    tokio::time::sleep(Duration::from_secs(60)).await;
    let after = windlass_testkit::manager::writes();
    println!(
        "manager writes in the minute after the last update settled: {}",
        after - before
    );

    // Only now a short deadline and automatic rollback: a slow but healthy level above must
    // not count as failed on a loaded machine.
    set_spec(
        &cluster_versions,
        SETTINGS,
        json!({"plainHTTP": true, "levelDeadlineSeconds": LEVEL_DEADLINE_SECONDS,
               "rollback": {"automatic": true}}),
    )
    .await;
    let rollback = broken_rolls_back(
        &cluster_versions,
        &images[sizes.rounds + 1],
        &broken,
        versions.last().unwrap(),
    )
    .await;
    let broken_level = sizes.levels / 2;
    println!(
        "{broken} failing at level {:02} ({broken_level} of {}) to {} Available again (automatic rollback): {:.2}s",
        broken_level * 5,
        sizes.levels,
        versions.last().unwrap(),
        rollback.as_secs_f64()
    );

    let _ = cluster_versions
        .delete(CLUSTER_VERSION_NAME, &DeleteParams::default())
        .await;
    let _ = std::fs::remove_dir_all(&work);
}

/// The release ServiceAccount bound to cluster-admin, as a cluster admin sets it up.
async fn release_account(admin: &Client) {
    let namespace = windlass_testkit::manager::namespace().expect("the manager's namespace");
    let accounts = Api::<ServiceAccount>::namespaced(admin.clone(), &namespace);
    if accounts
        .get_opt("windlass-release")
        .await
        .unwrap()
        .is_none()
    {
        let account: ServiceAccount =
            serde_json::from_value(json!({"metadata": {"name": "windlass-release"}})).unwrap();
        accounts
            .create(&PostParams::default(), &account)
            .await
            .expect("the release account");
    }
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "windlass-release"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "windlass-release", "namespace": namespace}],
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(admin.clone())
        .patch(
            "windlass-release",
            &PatchParams::apply("windlass-bench").force(),
            &Patch::Apply(&binding),
        )
        .await
        .expect("binding the release account");
    windlass_testkit::wait_until_authorized(
        admin,
        &format!("system:serviceaccount:{namespace}:windlass-release"),
        "default",
        ("apps", "deployments", "patch"),
    )
    .await;
}

fn release_new(dir: &Path, version: &str, reference: &str) -> String {
    let stdout = run_ok(
        Command::new(windlass_testkit::windlass_binary())
            .args(["release", "new", "--from-dir"])
            .arg(dir)
            .args(["--version", version, "--to", reference, "--plain-http"]),
    );
    let digest = stdout
        .trim()
        .rsplit_once('@')
        .map(|(_, d)| d.to_string())
        .unwrap_or_else(|| panic!("no digest in {stdout:?}"));
    let repository = reference.rsplit_once(':').unwrap().0;
    format!("{repository}@{digest}")
}

async fn start_afresh(versions: &Api<ClusterVersion>) {
    let _ = versions
        .delete(CLUSTER_VERSION_NAME, &DeleteParams::default())
        .await;
    let start = Instant::now();
    while versions
        .get_opt(CLUSTER_VERSION_NAME)
        .await
        .unwrap()
        .is_some()
    {
        assert!(start.elapsed() < LIMIT, "the old ClusterVersion stays");
        tokio::time::sleep(POLL).await;
    }
}

/// The field manager of the bench's settings (`spec` but the desired update).
const SETTINGS: &str = "windlass-bench-settings";
/// The field manager of `spec.desiredUpdate`, as a person running `windlass upgrade`.
const UPDATES: &str = "windlass-bench-updates";

async fn set_spec(versions: &Api<ClusterVersion>, manager: &str, spec: serde_json::Value) {
    versions
        .patch(
            CLUSTER_VERSION_NAME,
            &PatchParams::apply(manager).force(),
            &Patch::Apply(
                json!({"apiVersion": "windlass.dev/v1alpha1", "kind": "ClusterVersion",
                "metadata": {"name": CLUSTER_VERSION_NAME}, "spec": spec}),
            ),
        )
        .await
        .expect("the ClusterVersion");
}

fn completed(version: &ClusterVersion, release: &str) -> bool {
    let Some(status) = &version.status else {
        return false;
    };
    status
        .history
        .first()
        .is_some_and(|h| h.version == release && h.state == UpdateState::Completed)
        && find(&status.conditions, types::AVAILABLE)
            .is_some_and(|c| format!("{:?}", c.status) == "True")
}

/// Asks for `image` (forced: no TrustPolicy covers the generated payloads) and times it until
/// `release` completed.
async fn update_to(versions: &Api<ClusterVersion>, image: &str, release: &str) -> Duration {
    let start = Instant::now();
    set_spec(
        versions,
        UPDATES,
        json!({"desiredUpdate": {"image": image, "force": true}}),
    )
    .await;
    wait_for(versions, &format!("{release} completed"), |v| {
        completed(v, release)
    })
    .await;
    start.elapsed()
}

async fn wait_for(
    versions: &Api<ClusterVersion>,
    what: &str,
    ready: impl Fn(&ClusterVersion) -> bool,
) -> ClusterVersion {
    let start = Instant::now();
    loop {
        if let Ok(Some(v)) = versions.get_opt(CLUSTER_VERSION_NAME).await
            && ready(&v)
        {
            return v;
        }
        if start.elapsed() > LIMIT {
            let now = versions.get_opt(CLUSTER_VERSION_NAME).await;
            panic!(
                "{what}: not within {LIMIT:?}; the ClusterVersion: {now:?}\nmanager log:\n{}",
                windlass_testkit::manager_log_tail(40)
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

/// `kubectl apply --server-side` of the generated payload's files one run level at a time, each
/// followed by the waits windlass makes (all of a level's at once); the time it took.
fn kubectl_levels(work: &Path, prefix: &str, sizes: &Sizes, version: &str) -> Duration {
    let tree = synthetic_payload(&payload(prefix, sizes, version, None));
    let plan = Payload::from_tree(&tree, prefix, &LoadOptions::default())
        .expect("the generated payload is valid")
        .plan(&InclusionOptions::default());
    let dir = work.join("kubectl").join(version);
    let mut level_dirs: Vec<(PathBuf, Vec<Vec<String>>)> = Vec::new();
    for (index, level) in plan.levels.iter().enumerate() {
        let level_dir = dir.join(format!("{index:02}"));
        std::fs::create_dir_all(&level_dir).unwrap();
        let mut waits = Vec::new();
        for manifest in level.manifests() {
            let file = Path::new(&manifest.file).file_name().unwrap();
            std::fs::write(level_dir.join(file), &tree.files[&manifest.file]).unwrap();
            let object = &manifest.object;
            let namespace = object.namespace.clone().unwrap_or_default();
            match object.kind.as_str() {
                "CustomResourceDefinition" => waits.push(vec![
                    "wait".into(),
                    "--for=condition=Established".into(),
                    "--timeout=300s".into(),
                    format!("crd/{}", object.name),
                ]),
                "Deployment" | "StatefulSet" => waits.push(vec![
                    "rollout".into(),
                    "status".into(),
                    "--timeout=300s".into(),
                    "-n".into(),
                    namespace,
                    format!("{}/{}", object.kind.to_ascii_lowercase(), object.name),
                ]),
                _ => {}
            }
        }
        level_dirs.push((level_dir, waits));
    }
    let start = Instant::now();
    for (level_dir, waits) in &level_dirs {
        run_ok(
            kubectl()
                .args([
                    "apply",
                    "--server-side",
                    "--force-conflicts",
                    "--field-manager",
                    "windlass-bench-kubectl",
                    "-f",
                ])
                .arg(level_dir),
        );
        let running: Vec<(Child, &Vec<String>)> = waits
            .iter()
            .map(|args| {
                let child = kubectl()
                    .args(args)
                    .stdout(Stdio::null())
                    .spawn()
                    .expect("kubectl");
                (child, args)
            })
            .collect();
        for (mut child, args) in running {
            let status = child.wait().unwrap();
            assert!(status.success(), "kubectl {args:?} failed");
        }
    }
    start.elapsed()
}

/// Resets the manager's peak RSS (`VmHWM`) to its current RSS, so the next reading is the peak
/// of what follows; false when the kernel or permissions do not allow it.
fn reset_peak_rss() -> bool {
    let Some(pid) = windlass_testkit::manager::pid() else {
        return false;
    };
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}

/// Moves to the broken `release`, and times from the ClusterVersion saying `Failing` to
/// `previous` Available again by automatic rollback.
async fn broken_rolls_back(
    versions: &Api<ClusterVersion>,
    image: &str,
    release: &str,
    previous: &str,
) -> Duration {
    set_spec(
        versions,
        UPDATES,
        json!({"desiredUpdate": {"image": image, "force": true}}),
    )
    .await;
    let failing = |v: &ClusterVersion| {
        v.status.as_ref().is_some_and(|s| {
            s.history.first().is_some_and(|h| h.version == release)
                && find(&s.conditions, types::FAILING)
                    .is_some_and(|c| format!("{:?}", c.status) == "True")
        })
    };
    wait_for(versions, &format!("{release} failing"), failing).await;
    let failed_at = Instant::now();
    let back = wait_for(versions, &format!("back at {previous}"), |v| {
        completed(v, previous)
    })
    .await;
    let took = failed_at.elapsed();
    let entry = &back.status.as_ref().unwrap().history[0];
    assert!(
        entry.accepted_risks.contains("automatic rollback"),
        "{previous} was reached by an automatic rollback: {entry:?}"
    );
    took
}
