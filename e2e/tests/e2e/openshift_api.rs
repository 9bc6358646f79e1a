//! OpenShift's ClusterVersion API: the manager run with `--release-api=openshift` reads and
//! writes only `config.openshift.io/v1` ClusterVersion and ClusterOperator, served from
//! OpenShift's own CRDs (`config/openshift`, copied unchanged from the pinned
//! `github.com/openshift/api` module), and is driven with the pinned `oc` as on OpenShift:
//! `oc adm upgrade`, `--to`, `--to-image`, `--allow-explicit-upgrade`,
//! `--include-not-recommended` and `oc adm upgrade channel`. Every status write goes through
//! OpenShift's schema (the API server refuses what does not fit it).
//!
//! Capabilities select manifests and an enabled one stays enabled; an unacknowledged admin gate
//! blocks a minor update until acked; a Degraded ClusterOperator makes the release Failing,
//! naming it, after the grace; `release.openshift.io/delete` manifests delete their object; an
//! update in progress is not replaced unless forced.

use std::{path::PathBuf, process::Command};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::{
    Api, Client,
    api::{DeleteParams, Patch, PatchParams},
};
use serde_json::{Value, json};
use windlass_api::{
    ClusterVersion,
    names::{
        ADMIN_ACKS_CONFIG_MAP, ADMIN_GATES_CONFIG_MAP, RELEASE_STATE_CONFIG_MAP,
        reasons::cluster_version as reasons,
    },
    openshift,
};
use windlass_testkit::{
    kubectl, lifecycle::wait_object, require_manager, run_ok, wait_until, wait_until_authorized,
};

use crate::cluster_version_rollbacks::renumbered;
use crate::cluster_versions::{
    ONE_AT_A_TIME, TIMEOUT, TrustSetup, push_releases, release_account, reset_platform,
    start_afresh,
};
use crate::release_payloads::{release_new, serve_graph};
use crate::signatures::Keys;

fn repo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The pinned `oc`, as the admin of the local control plane.
fn oc() -> Command {
    let mut command = Command::new(windlass_testkit::oc_binary());
    command.env("KUBECONFIG", windlass_testkit::kubeconfig_path());
    command
}

/// `oc` with `args`: its exit status, stdout and stderr together.
fn oc_says(args: &[&str]) -> (bool, String) {
    let output = oc().args(args).output().expect("running oc");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

fn oc_ok(args: &[&str]) -> String {
    let (ok, text) = oc_says(args);
    assert!(ok, "oc {} failed:\n{text}", args.join(" "));
    text
}

/// Restarts the shared manager with `args` (none: as `make e2e` runs it).
fn restart_manager_with(args: &str) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/manager-restart.sh");
    let status = Command::new(script)
        .arg(windlass_testkit::windlass_binary())
        .env("WINDLASS_MANAGER_ARGS", args)
        .status()
        .expect("running manager-restart.sh");
    assert!(status.success(), "the manager did not come back");
}

/// The manager in OpenShift mode for as long as this lives; then as before, with what the test
/// made (OpenShift's ClusterVersion and ClusterOperators, gates, kept state) removed.
struct OpenShiftMode;

impl OpenShiftMode {
    async fn start(admin: &Client) -> OpenShiftMode {
        // A cluster admin's part: OpenShift's CRDs (on OpenShift they are there) and the role.
        run_ok(
            kubectl()
                .args(["apply", "--server-side", "--force-conflicts", "-k"])
                .arg(repo_dir().join("config/openshift/crd")),
        );
        run_ok(kubectl().args([
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd/clusterversions.config.openshift.io",
            "crd/clusteroperators.config.openshift.io",
        ]));
        run_ok(
            kubectl()
                .args(["apply", "--server-side", "--force-conflicts", "-f"])
                .arg(repo_dir().join("config/rbac/openshift_role.yaml")),
        );
        let namespace = windlass_testkit::manager::namespace().unwrap();
        wait_until_authorized(
            admin,
            &format!("system:serviceaccount:{namespace}:windlass"),
            "",
            ("config.openshift.io", "clusterversions", "watch"),
        )
        .await;
        // The windlass kind's release is left alone: one release controller per cluster.
        start_afresh(&Api::<ClusterVersion>::all(admin.clone())).await;
        clean_up(admin).await;
        reset_platform(admin).await;
        restart_manager_with("--release-api=openshift");
        OpenShiftMode
    }
}

impl Drop for OpenShiftMode {
    fn drop(&mut self) {
        // Dropped inside the test's runtime, which cannot run while it waits here: clean up on a
        // thread with a runtime and client of its own.
        let cleaned = std::thread::spawn(|| {
            tokio::runtime::Runtime::new().unwrap().block_on(async {
                clean_up(&windlass_testkit::client().await).await;
            })
        })
        .join();
        if cleaned.is_err() {
            eprintln!(
                "cleaning up after the OpenShift API test failed; the next one cleans up too"
            );
        }
        restart_manager_with("");
    }
}

/// Removes what these tests make: OpenShift's ClusterVersion, the ClusterOperators, the gates
/// and the state the manager kept.
async fn clean_up(admin: &Client) {
    let versions = Api::<openshift::ClusterVersion>::all(admin.clone());
    let _ = versions.delete("version", &DeleteParams::default()).await;
    let _ = oc_says(&["delete", "clusteroperator", "--all", "--wait=true"]);
    let namespace = windlass_testkit::manager::namespace().unwrap();
    let config_maps = Api::<ConfigMap>::namespaced(admin.clone(), &namespace);
    for name in [
        RELEASE_STATE_CONFIG_MAP,
        ADMIN_GATES_CONFIG_MAP,
        ADMIN_ACKS_CONFIG_MAP,
    ] {
        let _ = config_maps.delete(name, &DeleteParams::default()).await;
    }
    wait_until("OpenShift's ClusterVersion to go", TIMEOUT, || async {
        matches!(versions.get_opt("version").await, Ok(None))
    })
    .await;
}

fn status(version: &openshift::ClusterVersion) -> &Value {
    static EMPTY: Value = Value::Null;
    version.status.as_ref().unwrap_or(&EMPTY)
}

/// `(status, reason, message)` of condition `type_`.
fn condition(version: &openshift::ClusterVersion, type_: &str) -> Option<(String, String, String)> {
    status(version)["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .map(|c| {
            let text = |key: &str| c[key].as_str().unwrap_or_default().to_string();
            (text("status"), text("reason"), text("message"))
        })
}

fn completed_at(version: &openshift::ClusterVersion, release: &str) -> bool {
    let top = &status(version)["history"][0];
    top["version"] == release
        && top["state"] == "Completed"
        && condition(version, "Available").is_some_and(|c| c.0 == "True")
        && status(version)["observedGeneration"].as_i64() == version.metadata.generation
}

async fn wait_for(
    versions: &Api<openshift::ClusterVersion>,
    what: &str,
    ready: impl Fn(&openshift::ClusterVersion) -> bool,
) -> openshift::ClusterVersion {
    wait_object(versions, "version", what, TIMEOUT, ready).await
}

/// OpenShift's ClusterVersion as an admin writes it with `oc apply`, pulling from the local
/// plain-HTTP registry (a windlass setting, in its annotation).
fn apply_cluster_version(spec: Value, windlass: Value) {
    let object = json!({
        "apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
        "metadata": {"name": "version", "annotations": {"windlass.dev/spec": windlass.to_string()}},
        "spec": spec,
    });
    let path = std::env::temp_dir().join(windlass_testkit::unique_name("clusterversion.json"));
    std::fs::write(&path, object.to_string()).unwrap();
    oc_ok(&["apply", "-f", path.to_str().unwrap()]);
}

async fn namespace_exists(admin: &Client, name: &str) -> bool {
    Api::<Namespace>::all(admin.clone())
        .get_opt(name)
        .await
        .unwrap()
        .is_some_and(|n| n.metadata.deletion_timestamp.is_none())
}

/// Given OpenShift's ClusterVersion asking for 4.1.0 with the `None` capability baseline, the
/// release completes without the Console capability's objects and `oc adm upgrade` reads it;
/// enabling Console (`oc patch`) applies them, and dropping it from the spec again keeps it
/// enabled and managed. With an update service and `oc adm upgrade channel`, `oc adm upgrade`
/// lists the recommended updates; an admin gate of 4.1 blocks `oc adm upgrade --to 4.2.0` until
/// it is acknowledged in `admin-acks`, and then 4.2.0 completes.
#[tokio::test]
async fn oc_drives_the_openshift_cluster_version_with_capabilities_and_admin_acks() {
    require_manager();
    let _turn = ONE_AT_A_TIME.lock().await;
    let admin = windlass_testkit::client().await;
    release_account(&admin).await;
    let namespace = windlass_testkit::manager::namespace().unwrap();
    let keys = Keys::generate(&["release"]);
    let _trust = TrustSetup::create(&admin, &namespace, &keys, "Report").await;
    let repository = windlass_testkit::registry().unique_repository("openshift");
    let (_tags, digests) = push_releases(
        &repository,
        &[("4.1.0", "4.1.0"), ("4.1.1", "4.1.1"), ("4.2.0", "4.2.0")],
    );
    let (_graph, base, _) = serve_graph(&repository);
    let _mode = OpenShiftMode::start(&admin).await;
    let versions = Api::<openshift::ClusterVersion>::all(admin.clone());

    apply_cluster_version(
        json!({"clusterID": "6f1c2e3a-windlass-e2e",
               "capabilities": {"baselineCapabilitySet": "None"},
               "desiredUpdate": {"image": digests["4.1.0"], "version": "4.1.0"}}),
        json!({"plainHTTP": true}),
    );
    let at_410 = wait_for(&versions, "4.1.0 completed", |v| completed_at(v, "4.1.0")).await;
    let shown = status(&at_410);
    assert_eq!(shown["desired"]["image"], digests["4.1.0"].as_str());
    assert!(
        shown["capabilities"]["knownCapabilities"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "Console"),
        "{shown}"
    );
    assert!(
        !shown["capabilities"]["enabledCapabilities"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c == "Console")
    );
    for type_ in [
        "Available",
        "Progressing",
        "Failing",
        "RetrievedUpdates",
        "Upgradeable",
        "ReleaseAccepted",
    ] {
        assert!(condition(&at_410, type_).is_some(), "no {type_} in {shown}");
    }
    // The Console capability is off: its level was not applied.
    assert!(!namespace_exists(&admin, "platform-console").await);
    assert!(namespace_exists(&admin, "platform-dns").await);
    let listed = oc_ok(&["get", "clusterversion"]);
    assert!(
        listed.contains("4.1.0") && listed.contains("True"),
        "{listed}"
    );
    let told = oc_ok(&["adm", "upgrade"]);
    assert!(told.contains("Cluster version is 4.1.0"), "{told}");

    // Enabled by name: its manifests are applied.
    oc_ok(&[
        "patch",
        "clusterversion",
        "version",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"capabilities":{"additionalEnabledCapabilities":["Console"]}}}"#,
    ]);
    wait_for(&versions, "Console enabled", |v| {
        status(v)["capabilities"]["enabledCapabilities"] == json!(["Console"])
            && completed_at(v, "4.1.0")
    })
    .await;
    wait_until("the console's namespace", TIMEOUT, || {
        namespace_exists(&admin, "platform-console")
    })
    .await;
    // Dropped from the spec: still enabled, and its objects still managed (put back).
    oc_ok(&[
        "patch",
        "clusterversion",
        "version",
        "--type",
        "json",
        "-p",
        r#"[{"op":"remove","path":"/spec/capabilities/additionalEnabledCapabilities"}]"#,
    ]);
    let kept = wait_for(&versions, "the spec change observed", |v| {
        status(v)["observedGeneration"].as_i64() == v.metadata.generation
            && v.spec
                .capabilities
                .as_ref()
                .is_some_and(|c| c.additional_enabled_capabilities.is_empty())
    })
    .await;
    assert_eq!(
        status(&kept)["capabilities"]["enabledCapabilities"],
        json!(["Console"])
    );
    run_ok(kubectl().args([
        "-n",
        "platform-console",
        "delete",
        "deployment",
        "console",
        "--wait=true",
    ]));
    wait_until("the console Deployment put back", TIMEOUT, || async {
        let (ok, _) = oc_says(&["-n", "platform-console", "get", "deployment", "console"]);
        ok
    })
    .await;

    // The update service, its channel set with oc.
    oc_ok(&[
        "patch",
        "clusterversion",
        "version",
        "--type",
        "merge",
        "-p",
        &json!({"spec": {"upstream": format!("{base}/graph")}}).to_string(),
    ]);
    oc_ok(&["adm", "upgrade", "channel", "stable-4.2"]);
    let offered = wait_for(&versions, "two available updates", |v| {
        v.spec.channel.as_deref() == Some("stable-4.2")
            && status(v)["availableUpdates"]
                .as_array()
                .is_some_and(|a| a.len() == 2)
    })
    .await;
    assert_eq!(
        status(&offered)["desired"]["channels"],
        json!(["stable-4.2"])
    );
    let told = oc_ok(&["adm", "upgrade"]);
    assert!(told.contains("4.2.0") && told.contains("4.1.1"), "{told}");
    let told = oc_ok(&["adm", "upgrade", "--include-not-recommended"]);
    assert!(told.contains("4.2.0"), "{told}");

    // An admin gate of 4.1: minor updates wait for its acknowledgement.
    let gates = Api::<ConfigMap>::namespaced(admin.clone(), &namespace);
    let gate: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": ADMIN_GATES_CONFIG_MAP},
        "data": {"ack-4.1-platform-dns-v2": "The DNS operator's v1 records are removed in 4.2; move them to v2 first."},
    }))
    .unwrap();
    gates
        .patch(
            ADMIN_GATES_CONFIG_MAP,
            &PatchParams::apply("windlass-e2e"),
            &Patch::Apply(&gate),
        )
        .await
        .unwrap();
    wait_for(&versions, "Upgradeable=False for the gate", |v| {
        condition(v, "Upgradeable")
            .is_some_and(|c| c.0 == "False" && c.1 == reasons::ADMIN_ACK_REQUIRED)
    })
    .await;
    let (_, told) = oc_says(&["adm", "upgrade", "--to", "4.2.0"]);
    let refused = wait_for(&versions, "4.2.0 refused for the gate", |v| {
        condition(v, "ReleaseAccepted")
            .is_some_and(|c| c.0 == "False" && c.1 == reasons::PRECONDITIONS_FAILED)
    })
    .await;
    let (_, _, message) = condition(&refused, "ReleaseAccepted").unwrap();
    assert!(
        message.contains("AdminAckRequired") && message.contains("move them to v2"),
        "{message}\n(oc said: {told})"
    );
    assert_eq!(
        status(&refused)["history"][0]["version"],
        "4.1.0",
        "nothing of 4.2.0 started"
    );
    let ack: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": ADMIN_ACKS_CONFIG_MAP},
        "data": {"ack-4.1-platform-dns-v2": "true"},
    }))
    .unwrap();
    gates
        .patch(
            ADMIN_ACKS_CONFIG_MAP,
            &PatchParams::apply("windlass-e2e"),
            &Patch::Apply(&ack),
        )
        .await
        .unwrap();
    let at_420 = wait_for(&versions, "4.2.0 completed once acked", |v| {
        completed_at(v, "4.2.0")
    })
    .await;
    assert_eq!(
        status(&at_420)["desired"]["image"],
        digests["4.2.0"].as_str()
    );
    assert_eq!(status(&at_420)["history"][1]["version"], "4.1.0");
    let told = oc_ok(&["adm", "upgrade"]);
    assert!(told.contains("Cluster version is 4.2.0"), "{told}");
}

/// Given 4.1.0 applied through OpenShift's API and an object an older release left, the patch
/// 4.1.2 whose manifest marks it `release.openshift.io/delete` deletes it; a ClusterOperator
/// reporting Degraded makes the cluster `Failing` naming it once the grace is over, and healthy
/// again when it recovers. A broken 4.2.1 stays in progress; another update is refused while it
/// is (`UpdateInProgress`), and `oc adm upgrade --to-image ... --force` goes back to 4.1.2 from
/// the stored payload.
#[tokio::test]
async fn deletes_degraded_operators_and_updates_in_progress_as_the_cvo_treats_them() {
    require_manager();
    let _turn = ONE_AT_A_TIME.lock().await;
    let admin = windlass_testkit::client().await;
    release_account(&admin).await;
    let namespace = windlass_testkit::manager::namespace().unwrap();
    let keys = Keys::generate(&["release"]);
    let _trust = TrustSetup::create(&admin, &namespace, &keys, "Report").await;
    let repository = windlass_testkit::registry().unique_repository("openshift-cvo");
    let (_tags, digests) = push_releases(
        &repository,
        &[("4.1.0", "4.1.0"), ("4.2.1-broken", "4.2.1")],
    );
    // 4.1.2: 4.1.1 plus a manifest that deletes what an older release made.
    let with_delete = renumbered("4.1.1", "4.1.1", "4.1.2");
    std::fs::write(
        with_delete.join("release-manifests/0000_10_dns_09_obsolete.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: obsolete-settings\n  namespace: platform-dns\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n    release.openshift.io/delete: \"true\"\n",
    )
    .unwrap();
    let digest_412 = format!(
        "{repository}@{}",
        release_new(&with_delete, "4.1.2", &format!("{repository}:4.1.2"))
    );
    let _mode = OpenShiftMode::start(&admin).await;
    let versions = Api::<openshift::ClusterVersion>::all(admin.clone());

    apply_cluster_version(
        json!({"clusterID": "6f1c2e3a-windlass-e2e",
               "desiredUpdate": {"image": digests["4.1.0"], "version": "4.1.0"}}),
        json!({"plainHTTP": true, "operatorGraceSeconds": 3, "levelDeadlineSeconds": 20}),
    );
    wait_for(&versions, "4.1.0 completed", |v| completed_at(v, "4.1.0")).await;
    let config_maps = Api::<ConfigMap>::namespaced(admin.clone(), "platform-dns");
    let obsolete: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "obsolete-settings"}, "data": {"zone": "old"},
    }))
    .unwrap();
    config_maps
        .patch(
            "obsolete-settings",
            &PatchParams::apply("older-release"),
            &Patch::Apply(&obsolete),
        )
        .await
        .unwrap();
    oc_ok(&[
        "adm",
        "upgrade",
        "--to-image",
        &digest_412,
        "--allow-explicit-upgrade",
    ]);
    wait_for(&versions, "4.1.2 completed", |v| completed_at(v, "4.1.2")).await;
    assert!(
        config_maps
            .get_opt("obsolete-settings")
            .await
            .unwrap()
            .is_none(),
        "the release.openshift.io/delete manifest deleted its object"
    );

    // A Degraded operator: Failing, naming it, once the grace is over; healthy again after.
    let operator = json!({
        "apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
        "metadata": {"name": "dns"}, "spec": {},
    });
    let path = std::env::temp_dir().join(windlass_testkit::unique_name("clusteroperator.json"));
    std::fs::write(&path, operator.to_string()).unwrap();
    oc_ok(&["apply", "-f", path.to_str().unwrap()]);
    let conditions = |degraded: &str| {
        json!({"status": {"versions": [{"name": "operator", "version": "4.1.2"}], "conditions": [
            {"type": "Available", "status": "True", "lastTransitionTime": "2026-12-01T00:00:00Z", "reason": "AsExpected", "message": "serving"},
            {"type": "Degraded", "status": degraded, "lastTransitionTime": "2026-12-01T00:00:00Z", "reason": "DNSRecordsStale", "message": "3 of 5 zones do not answer"},
            {"type": "Progressing", "status": "False", "lastTransitionTime": "2026-12-01T00:00:00Z", "reason": "AsExpected", "message": ""},
        ]}})
        .to_string()
    };
    oc_ok(&[
        "patch",
        "clusteroperator",
        "dns",
        "--subresource",
        "status",
        "--type",
        "merge",
        "-p",
        &conditions("True"),
    ]);
    let failing = wait_for(&versions, "Failing for the degraded dns operator", |v| {
        condition(v, "Failing")
            .is_some_and(|c| c.0 == "True" && c.1 == reasons::CLUSTER_OPERATOR_DEGRADED)
    })
    .await;
    let (_, _, message) = condition(&failing, "Failing").unwrap();
    assert!(
        message.contains("dns") && message.contains("3 of 5 zones"),
        "{message}"
    );
    let told = oc_ok(&["adm", "upgrade"]);
    assert!(
        told.contains("dns"),
        "oc adm upgrade names the operator: {told}"
    );
    oc_ok(&[
        "patch",
        "clusteroperator",
        "dns",
        "--subresource",
        "status",
        "--type",
        "merge",
        "-p",
        &conditions("False"),
    ]);
    wait_for(&versions, "Failing=False again", |v| {
        condition(v, "Failing").is_some_and(|c| c.0 == "False")
    })
    .await;

    // A broken minor update stays in progress (its level 30 never becomes healthy).
    oc_ok(&[
        "adm",
        "upgrade",
        "--to-image",
        &digests["4.2.1"],
        "--allow-explicit-upgrade",
    ]);
    wait_for(&versions, "4.2.1 stuck", |v| {
        status(v)["history"][0]["version"] == "4.2.1"
            && condition(v, "Failing").is_some_and(|c| c.0 == "True")
    })
    .await;
    // Another forward update is not started while it is (4.1.2 would be a rollback, which
    // its own rules decide: a copy of 4.2.0 renumbered 4.2.3 is asked for).
    let forward = renumbered("4.2.0", "4.2.0", "4.2.3");
    let digest_423 = format!(
        "{repository}@{}",
        release_new(&forward, "4.2.3", &format!("{repository}:4.2.3"))
    );
    oc_ok(&[
        "patch",
        "clusterversion",
        "version",
        "--type",
        "merge",
        "-p",
        &json!({"spec": {"desiredUpdate": {"image": digest_423, "version": null, "force": false}}})
            .to_string(),
    ]);
    let refused = wait_for(&versions, "4.2.3 refused while 4.2.1 is applied", |v| {
        condition(v, "ReleaseAccepted")
            .is_some_and(|c| c.0 == "False" && c.1 == reasons::UPDATE_IN_PROGRESS)
    })
    .await;
    let (_, _, message) = condition(&refused, "ReleaseAccepted").unwrap();
    assert!(
        message.contains("4.2.1 is still being applied") && message.contains("force"),
        "{message}"
    );
    assert_eq!(status(&refused)["history"][0]["version"], "4.2.1");
    // Going back across the minor, forced, from the stored payload.
    oc_ok(&[
        "adm",
        "upgrade",
        "--to-image",
        &digest_412,
        "--allow-explicit-upgrade",
        "--allow-upgrade-with-warnings",
        "--force",
    ]);
    let back = wait_for(&versions, "back at 4.1.2", |v| completed_at(v, "4.1.2")).await;
    assert_eq!(status(&back)["history"][1]["version"], "4.2.1");
    assert_eq!(status(&back)["history"][1]["state"], "Partial");
}

/// A throwaway GnuPG home with one signing key, driven through the real `gpg`.
struct Gpg {
    home: tempfile::TempDir,
}

impl Gpg {
    fn new(user: &str) -> Gpg {
        let home = tempfile::tempdir().unwrap();
        let gpg = Gpg { home };
        gpg.run(&["--quick-gen-key", user, "ed25519", "sign", "never"]);
        gpg
    }

    fn run(&self, args: &[&str]) -> Vec<u8> {
        let output = Command::new("gpg")
            .env("GNUPGHOME", self.home.path())
            .args(["--batch", "--pinentry-mode", "loopback", "--passphrase", ""])
            .args(args)
            .output()
            .expect("running gpg");
        assert!(
            output.status.success(),
            "gpg {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output.stdout
    }

    fn public_key(&self) -> String {
        String::from_utf8(self.run(&["--armor", "--export"])).unwrap()
    }

    /// An atomic container signature of `image` (`repo@digest`), as OpenShift's release
    /// signatures are, written to `store` in the CVO's layout as signature `n`.
    fn sign_into(&self, store: &std::path::Path, image: &str, n: usize) {
        let (repository, digest) = image.split_once('@').unwrap();
        let claim = json!({
            "critical": {"identity": {"docker-reference": format!("{repository}:release")},
                         "image": {"docker-manifest-digest": digest},
                         "type": "atomic container signature"},
            "optional": {"creator": "windlass e2e"},
        });
        let dir = store.join(digest.replace(':', "="));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join(format!("claim-{n}.json"));
        std::fs::write(&input, claim.to_string()).unwrap();
        let output = dir.join(format!("signature-{n}"));
        self.run(&[
            "--output",
            output.to_str().unwrap(),
            "--sign",
            input.to_str().unwrap(),
        ]);
        std::fs::remove_file(input).unwrap();
    }
}

/// A directory served over HTTP by Python's own file server on a free loopback port.
struct FileServer {
    child: std::process::Child,
    url: String,
}

impl FileServer {
    fn serve(dir: &std::path::Path) -> FileServer {
        use std::io::BufRead;
        let mut child = Command::new("python3")
            .args([
                "-u",
                "-m",
                "http.server",
                "0",
                "--bind",
                "127.0.0.1",
                "--directory",
            ])
            .arg(dir)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("python3 -m http.server");
        let mut first = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let port = first
            .split_whitespace()
            .skip_while(|w| *w != "port")
            .nth(1)
            .unwrap_or_else(|| panic!("no port in {first:?}"));
        FileServer {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Given the CVO's release verification ConfigMap (an OpenPGP key made with gpg and an HTTP
/// signature store) and no TrustPolicy, then 4.1.0, signed into the store, is applied and
/// recorded as verified by that key; 4.1.1, signed by a key the ConfigMap does not hold, is
/// refused naming the signer until forced, and then recorded as not verified.
#[tokio::test]
async fn releases_verify_from_http_signature_stores_as_the_cvo_verifies_them() {
    require_manager();
    let _turn = ONE_AT_A_TIME.lock().await;
    let admin = windlass_testkit::client().await;
    release_account(&admin).await;
    let namespace = windlass_testkit::manager::namespace().unwrap();
    crate::cluster_versions::remove_trust(&admin, &namespace).await;
    let repository = windlass_testkit::registry().unique_repository("openshift-signed");
    let (_tags, digests) = push_releases(&repository, &[("4.1.0", "4.1.0"), ("4.1.1", "4.1.1")]);
    let release_key = Gpg::new("OpenShift release e2e <release@windlass.dev>");
    let stranger = Gpg::new("someone else <other@windlass.dev>");
    let store = tempfile::tempdir().unwrap();
    release_key.sign_into(store.path(), &digests["4.1.0"], 1);
    stranger.sign_into(store.path(), &digests["4.1.1"], 1);
    let server = FileServer::serve(store.path());

    let verification: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "release-verification",
                     "annotations": {"release.openshift.io/verification-config-map": ""}},
        "data": {"verifier-public-key-e2e": release_key.public_key(), "store-local": server.url},
    }))
    .unwrap();
    let config_maps = Api::<ConfigMap>::namespaced(admin.clone(), &namespace);
    config_maps
        .patch(
            "release-verification",
            &PatchParams::apply("windlass-e2e").force(),
            &Patch::Apply(&verification),
        )
        .await
        .unwrap();
    let _mode = OpenShiftMode::start(&admin).await;
    let versions = Api::<openshift::ClusterVersion>::all(admin.clone());
    apply_cluster_version(
        json!({"clusterID": "6f1c2e3a-windlass-e2e",
               "desiredUpdate": {"image": digests["4.1.0"], "version": "4.1.0"}}),
        json!({"plainHTTP": true}),
    );
    let at_410 = wait_for(&versions, "4.1.0 completed", |v| completed_at(v, "4.1.0")).await;
    assert_eq!(
        status(&at_410)["history"][0]["verified"],
        true,
        "{}",
        status(&at_410)
    );
    let (_, _, accepted) = condition(&at_410, "ReleaseAccepted").unwrap();
    assert!(accepted.contains("release-verification/e2e"), "{accepted}");

    oc_ok(&[
        "adm",
        "upgrade",
        "--to-image",
        &digests["4.1.1"],
        "--allow-explicit-upgrade",
    ]);
    let refused = wait_for(&versions, "4.1.1 refused", |v| {
        condition(v, "ReleaseAccepted")
            .is_some_and(|c| c.0 == "False" && c.1 == reasons::VERIFICATION_FAILED)
    })
    .await;
    let (_, _, message) = condition(&refused, "ReleaseAccepted").unwrap();
    assert!(
        message.contains("not verified by the release verification keys")
            && message.contains("signature-1"),
        "{message}"
    );
    assert_eq!(status(&refused)["history"][0]["version"], "4.1.0");
    oc_ok(&[
        "adm",
        "upgrade",
        "--to-image",
        &digests["4.1.1"],
        "--allow-explicit-upgrade",
        "--force",
    ]);
    let at_411 = wait_for(&versions, "4.1.1 completed, forced", |v| {
        completed_at(v, "4.1.1")
    })
    .await;
    let top = &status(&at_411)["history"][0];
    assert_eq!(top["verified"], false);
    assert!(
        top["acceptedRisks"]
            .as_str()
            .unwrap_or_default()
            .contains("force"),
        "{top}"
    );
    config_maps
        .delete("release-verification", &DeleteParams::default())
        .await
        .unwrap();
}
