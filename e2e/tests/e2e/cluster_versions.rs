//! The ClusterVersion controller moving the local cluster between the sample releases of
//! `e2e/releases`, pushed by `windlass release new` and signed with cosign: a payload no
//! TrustPolicy covers, or one signed by an untrusted key, is refused until forced (and then
//! recorded as unverified), one signed by the trusted key is recorded as verified by it, each
//! update is applied level by level (the order read from the API server's audit
//! log, not from windlass's status), and a level that cannot become healthy stops the update
//! there, naming the object.
//!
//! The ClusterVersion is a singleton: the tests take turns ([`ONE_AT_A_TIME`]).

use std::{collections::HashMap, time::Duration};

use k8s_openapi::{
    api::{
        core::v1::{ConfigMap, Namespace, ServiceAccount},
        rbac::v1::ClusterRoleBinding,
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use serde_json::json;
use windlass_api::{
    ClusterVersion,
    clusterversion::{CLUSTER_VERSION_NAME, LevelState, UpdateState},
    condition::find,
    names::{conditions::cluster_version as types, reasons::cluster_version as reasons},
};
use windlass_release::{InclusionOptions, LoadOptions, Payload, progress::level_key};
use windlass_testkit::{lifecycle::wait_object, require_manager, run_ok, wait_until};

use crate::release_payloads::{release_new, releases, windlass};
use crate::signatures::{Keys, cosign_sign};

pub(crate) const TIMEOUT: Duration = Duration::from_secs(180);

/// The tests of this module share the one ClusterVersion.
pub(crate) static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The run-level position of each object, by (resource, namespace, name) as the audit log names it.
pub(crate) type ObjectLevels = HashMap<(String, String, String), usize>;

pub(crate) fn condition_is(
    version: &ClusterVersion,
    type_: &str,
    status: &str,
    reason: &str,
) -> bool {
    version
        .status
        .as_ref()
        .and_then(|s| find(&s.conditions, type_))
        .is_some_and(|c| format!("{:?}", c.status) == status && c.reason == reason)
}

pub(crate) fn completed_at(version: &ClusterVersion, release: &str) -> bool {
    version.status.as_ref().is_some_and(|s| {
        s.history
            .first()
            .is_some_and(|h| h.version == release && h.state == UpdateState::Completed)
    }) && condition_is(version, types::AVAILABLE, "True", reasons::COMPLETED)
}

/// `windlass release new` of each sample `(directory, version)` into `repository`: the tags and
/// the digest references, by version.
pub(crate) fn push_releases(
    repository: &str,
    samples: &[(&str, &'static str)],
) -> (HashMap<&'static str, String>, HashMap<&'static str, String>) {
    let mut tags = HashMap::new();
    let mut digests = HashMap::new();
    for (dir, version) in samples {
        let reference = format!("{repository}:{version}");
        let digest = release_new(&releases().join(dir), version, &reference);
        tags.insert(*version, reference);
        digests.insert(*version, format!("{repository}@{digest}"));
    }
    (tags, digests)
}

/// The ClusterVersion once `release` completed.
pub(crate) async fn reach(versions: &Api<ClusterVersion>, release: &str) -> ClusterVersion {
    wait_object(
        versions,
        CLUSTER_VERSION_NAME,
        &format!("{release} completed"),
        TIMEOUT,
        |v| completed_at(v, release),
    )
    .await
}

/// Sets the ClusterVersion's `spec` fields in `spec` (creating it when missing), as an admin
/// with `kubectl apply --server-side` would.
pub(crate) async fn set_spec(versions: &Api<ClusterVersion>, spec: serde_json::Value) {
    versions
        .patch(
            CLUSTER_VERSION_NAME,
            &PatchParams::apply("windlass-e2e").force(),
            &Patch::Apply(
                json!({"apiVersion": "windlass.dev/v1alpha1", "kind": "ClusterVersion",
                "metadata": {"name": CLUSTER_VERSION_NAME}, "spec": spec}),
            ),
        )
        .await
        .unwrap_or_else(|e| panic!("setting the ClusterVersion's spec: {e}"));
}

/// The ClusterVersion deleted (what an earlier test left), once it is gone.
pub(crate) async fn start_afresh(versions: &Api<ClusterVersion>) {
    let _ = versions
        .delete(CLUSTER_VERSION_NAME, &DeleteParams::default())
        .await;
    wait_until("the old ClusterVersion to go", TIMEOUT, || async {
        matches!(versions.get_opt(CLUSTER_VERSION_NAME).await, Ok(None))
    })
    .await;
}

/// The ClusterVersion once `ReleaseAccepted` is False with `reason`, and that message.
pub(crate) async fn refused_with(
    versions: &Api<ClusterVersion>,
    what: &str,
    reason: &str,
) -> (ClusterVersion, String) {
    let refused = wait_object(versions, CLUSTER_VERSION_NAME, what, TIMEOUT, |v| {
        condition_is(v, types::RELEASE_ACCEPTED, "False", reason)
    })
    .await;
    let message = refused
        .status
        .as_ref()
        .and_then(|s| find(&s.conditions, types::RELEASE_ACCEPTED))
        .map(|c| c.message.clone())
        .unwrap_or_default();
    (refused, message)
}

/// The release ServiceAccount, bound to cluster-admin, as a cluster admin who lets windlass
/// update the platform sets it up.
pub(crate) async fn release_account(admin: &Client) {
    let namespace = windlass_testkit::manager::namespace().expect("the manager's namespace");
    let accounts = Api::<ServiceAccount>::namespaced(admin.clone(), &namespace);
    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "windlass-release"}})).unwrap();
    if accounts
        .get_opt("windlass-release")
        .await
        .unwrap()
        .is_none()
    {
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
            &PatchParams::apply("windlass-e2e").force(),
            &Patch::Apply(&binding),
        )
        .await
        .expect("binding the release account");
    windlass_testkit::wait_until_authorized(
        admin,
        &format!("system:serviceaccount:{namespace}:windlass-release"),
        "platform-dns",
        ("apps", "deployments", "patch"),
    )
    .await;
}

pub(crate) fn upgrade(image: &str, force: bool) {
    let kubeconfig = windlass_testkit::kubeconfig_path();
    let mut command = windlass();
    command.args([
        "upgrade",
        "--to-image",
        image,
        "--plain-http",
        "--kubeconfig",
    ]);
    command.arg(&kubeconfig);
    if force {
        command.arg("--force");
    }
    run_ok(&mut command);
}

/// (resource, namespace, name) of every object in the sample release `dir`, with the position
/// of its run level in the plan.
pub(crate) fn level_of_objects(dir: &str) -> (ObjectLevels, Vec<String>) {
    let payload = Payload::read_dir(&releases().join(dir), &LoadOptions::default()).expect(dir);
    let plan = payload.plan(&InclusionOptions::default());
    let mut levels = HashMap::new();
    let mut names = Vec::new();
    let all = plan
        .updater
        .iter()
        .map(|l| (true, l))
        .chain(plan.levels.iter().map(|l| (false, l)));
    for (index, (updater, level)) in all.enumerate() {
        names.push(level_key(updater, level));
        for manifest in level.manifests() {
            let object = &manifest.object;
            let resource = format!("{}s", object.kind.to_ascii_lowercase());
            levels.insert(
                (
                    resource,
                    object.namespace.clone().unwrap_or_default(),
                    object.name.clone(),
                ),
                index,
            );
        }
    }
    (levels, names)
}

/// The run-level positions of the release account's writes recorded after `from` audit lines,
/// oldest first.
pub(crate) fn written_levels(from: usize, account: &str, levels: &ObjectLevels) -> Vec<usize> {
    let text = std::fs::read_to_string(windlass_testkit::manager::audit_log()).unwrap_or_default();
    text.lines()
        .skip(from)
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|e| {
            e["stage"] == "ResponseComplete" && e["impersonatedUser"]["username"] == account
        })
        .filter(|e| e["verb"] == "patch" || e["verb"] == "create")
        .filter_map(|e| {
            let o = &e["objectRef"];
            let key = (
                o["resource"].as_str()?.to_string(),
                o["namespace"].as_str().unwrap_or_default().to_string(),
                o["name"].as_str()?.to_string(),
            );
            levels.get(&key).copied()
        })
        .collect()
}

/// How many writes the release account made after `from` audit lines.
fn release_writes(from: usize) -> usize {
    let account = format!(
        "system:serviceaccount:{}:windlass-release",
        windlass_testkit::manager::namespace().unwrap_or_default()
    );
    std::fs::read_to_string(windlass_testkit::manager::audit_log())
        .unwrap_or_default()
        .lines()
        .skip(from)
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|e| {
            e["stage"] == "ResponseComplete" && e["impersonatedUser"]["username"] == account
        })
        .count()
}

/// How often the release account wrote (patch, create, delete) each object successfully, as
/// (verb, resource, namespace, name), in the audit lines `from..to`. A write the API server did
/// not carry out (its client killed mid-request, a timeout) does not count.
pub(crate) fn release_writes_by_object(
    from: usize,
    to: usize,
) -> HashMap<(String, String, String, String), usize> {
    let account = format!(
        "system:serviceaccount:{}:windlass-release",
        windlass_testkit::manager::namespace().unwrap_or_default()
    );
    let mut counts = HashMap::new();
    let text = std::fs::read_to_string(windlass_testkit::manager::audit_log()).unwrap_or_default();
    for event in text
        .lines()
        .skip(from)
        .take(to.saturating_sub(from))
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|e| {
            e["stage"] == "ResponseComplete"
                && e["impersonatedUser"]["username"] == account.as_str()
                && matches!(
                    e["verb"].as_str(),
                    Some("patch" | "create" | "delete" | "update")
                )
                && e["responseStatus"]["code"]
                    .as_u64()
                    .is_some_and(|code| (200..300).contains(&code))
        })
    {
        let o = &event["objectRef"];
        let key = (
            event["verb"].as_str().unwrap_or_default().to_string(),
            o["resource"].as_str().unwrap_or_default().to_string(),
            o["namespace"].as_str().unwrap_or_default().to_string(),
            o["name"].as_str().unwrap_or_default().to_string(),
        );
        *counts.entry(key).or_default() += 1;
    }
    counts
}

pub(crate) fn audit_lines() -> usize {
    std::fs::read_to_string(windlass_testkit::manager::audit_log())
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// Given the sample releases in the local registry and a release ServiceAccount, when the
/// ClusterVersion asks for 4.1.0 then 4.1.1 then the broken 4.2.1, then a payload no policy
/// covers is refused; 4.1.0, signed by the key a TrustPolicy requires, is applied and recorded
/// as verified by it; 4.1.1, signed by another key, is refused naming the key it needs, then
/// forced and recorded as unverified; each update applies its levels strictly in order (from the
/// audit log) and completes, recorded in history; the broken release stops at level 30, naming the
/// Deployment that does not roll out, and no later level is applied.
#[tokio::test]
async fn the_cluster_moves_level_by_level_between_releases_and_stops_at_a_broken_level() {
    require_manager();
    let _turn = ONE_AT_A_TIME.lock().await;
    let admin = windlass_testkit::client().await;
    release_account(&admin).await;
    let namespace = windlass_testkit::manager::namespace().unwrap();
    let account = format!("system:serviceaccount:{namespace}:windlass-release");
    let registry = windlass_testkit::registry();
    let repository = registry.unique_repository("release");
    let (images, digests) = push_releases(
        &repository,
        &[
            ("4.1.0", "4.1.0"),
            ("4.1.1", "4.1.1"),
            ("4.2.1-broken", "4.2.1"),
        ],
    );
    let versions = Api::<ClusterVersion>::all(admin.clone());
    start_afresh(&versions).await;
    remove_trust(&admin, &namespace).await;
    reset_platform(&admin).await;

    // Unverified and not forced: refused, and nothing of it applied.
    let start = audit_lines();
    upgrade(&images["4.1.0"], false);
    let refused = wait_object(
        &versions,
        CLUSTER_VERSION_NAME,
        "refused as unverified",
        TIMEOUT,
        |v| condition_is(v, types::RELEASE_ACCEPTED, "False", reasons::UNVERIFIED),
    )
    .await;
    assert!(
        refused.status.as_ref().unwrap().levels.is_empty(),
        "no update started"
    );
    assert_eq!(release_writes(start), 0, "nothing of it was applied");

    // The platform team's release key, trusted through a TrustPolicy; 4.1.0 signed with it
    // (cosign's bundle format), 4.1.1 with a key nobody trusts (the legacy format).
    let keys = Keys::generate(&["release", "stranger"]);
    let trust = TrustSetup::create(&admin, &namespace, &keys, "Refuse").await;
    cosign_sign(&keys, "release", &digests["4.1.0"], true);
    cosign_sign(&keys, "stranger", &digests["4.1.1"], false);

    // Signed by the trusted key: applied level by level, recorded as verified.
    let (levels_410, names_410) = level_of_objects("4.1.0");
    let start = audit_lines();
    upgrade(&images["4.1.0"], false);
    let at_410 = reach(&versions, "4.1.0").await;
    let status = at_410.status.as_ref().unwrap();
    assert!(status.history[0].verified, "{:?}", status.history[0]);
    let desired = status.desired.as_ref().unwrap();
    assert!(desired.verified);
    assert_eq!(desired.verified_by, ["releases/release"]);
    assert!(
        status.desired.as_ref().unwrap().image.contains("@sha256:"),
        "pinned by digest"
    );
    let listed: Vec<&str> = status.levels.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        listed,
        names_410.iter().map(String::as_str).collect::<Vec<_>>()
    );
    assert!(status.levels.iter().all(|l| l.state == LevelState::Done));
    let order = written_levels(start, &account, &levels_410);
    assert!(
        order.len() > 10,
        "the audit log shows the release's writes: {order:?}"
    );
    assert!(
        order.windows(2).all(|w| w[0] <= w[1]),
        "levels applied in order: {order:?}"
    );
    assert_eq!(order.first(), Some(&0));
    assert_eq!(order.last(), Some(&(names_410.len() - 1)));

    // Signed, but by a key the policy does not trust: refused, naming what is missing, and
    // nothing of it applied; then forced, and recorded as unverified with what was overridden.
    upgrade(&images["4.1.1"], false);
    let (refused, message) = refused_with(
        &versions,
        "4.1.1 refused by the trust policy",
        reasons::VERIFICATION_FAILED,
    )
    .await;
    let message = &message;
    assert!(
        message.contains(&digests["4.1.1"]) && message.contains("releases/release"),
        "the refusal names the payload and the key it needs: {message}"
    );
    assert_eq!(
        refused
            .status
            .as_ref()
            .unwrap()
            .desired
            .as_ref()
            .unwrap()
            .version,
        "4.1.0",
        "the cluster stays at 4.1.0"
    );

    // A patch release: only what changed is written, still in level order.
    let (levels_411, _) = level_of_objects("4.1.1");
    let start = audit_lines();
    upgrade(&images["4.1.1"], true);
    let at_411 = reach(&versions, "4.1.1").await;
    let order = written_levels(start, &account, &levels_411);
    assert!(order.len() >= 2, "the patch wrote its changes: {order:?}");
    assert!(
        order.windows(2).all(|w| w[0] <= w[1]),
        "levels applied in order: {order:?}"
    );
    assert!(
        order.len() < levels_411.len(),
        "unchanged objects are not written: {order:?}"
    );
    let entry = &at_411.status.as_ref().unwrap().history[0];
    assert!(!entry.verified, "forced past a refusal: unverified");
    assert!(
        entry.accepted_risks.starts_with("force: payload")
            && entry.accepted_risks.contains("refused"),
        "{}",
        entry.accepted_risks
    );
    let history: Vec<&str> = at_411
        .status
        .as_ref()
        .unwrap()
        .history
        .iter()
        .map(|h| h.version.as_str())
        .collect();
    assert_eq!(history, ["4.1.1", "4.1.0"]);
    let shown = run_ok(
        windlass()
            .args(["upgrade", "status", "--kubeconfig"])
            .arg(windlass_testkit::kubeconfig_path()),
    );
    assert!(
        shown.contains("Available:   True (Completed): Done applying 4.1.1"),
        "{shown}"
    );

    // A level that cannot become healthy: the update stops there and says which object.
    set_spec(&versions, json!({"levelDeadlineSeconds": 15})).await;
    upgrade(&images["4.2.1"], true);
    let failing = wait_object(
        &versions,
        CLUSTER_VERSION_NAME,
        "failing at level 30",
        TIMEOUT,
        |v| condition_is(v, types::FAILING, "True", reasons::LEVEL_FAILING),
    )
    .await;
    let status = failing.status.as_ref().unwrap();
    let message = &find(&status.conditions, types::FAILING).unwrap().message;
    assert!(
        message.contains("level 30") && message.contains("Deployment platform-monitoring/"),
        "the condition names the level and the object: {message}"
    );
    let position = status
        .levels
        .iter()
        .position(|l| l.name == "30")
        .expect("level 30");
    assert_eq!(status.levels[position].state, LevelState::Failing);
    assert!(
        status.levels[position + 1..]
            .iter()
            .all(|l| l.state == LevelState::Pending),
        "no later level is applied: {:?}",
        status.levels
    );
    let crds = Api::<CustomResourceDefinition>::all(admin.clone());
    assert!(
        crds.get_opt("storagestates.platform.windlass.dev")
            .await
            .unwrap()
            .is_none(),
        "the irreversible level 40 was not reached"
    );
    assert!(condition_is(
        &failing,
        types::AVAILABLE,
        "False",
        reasons::APPLYING
    ));
    let shown = run_ok(
        windlass()
            .args(["upgrade", "status", "--kubeconfig"])
            .arg(windlass_testkit::kubeconfig_path()),
    );
    assert!(shown.contains("In progress: level 30"), "{shown}");
    // Two updates completed before: their level durations estimate this one.
    assert!(
        status.level_durations.iter().any(|l| l.level == "30"),
        "{:?}",
        status.level_durations
    );
    assert!(
        status
            .progress
            .as_ref()
            .is_some_and(|p| p.estimated_completion_time.is_some()),
        "{:?}",
        status.progress
    );
    assert!(
        shown.contains("Started:") && shown.contains(" ago)") && shown.contains("Estimate:"),
        "{shown}"
    );
    assert!(!shown.contains("no estimate yet"), "{shown}");

    versions
        .delete(CLUSTER_VERSION_NAME, &DeleteParams::default())
        .await
        .expect("deleting the ClusterVersion");
    trust.delete().await;
}

/// A TrustPolicy `releases` requiring the key `release` for Release images, its public key in
/// a ConfigMap in the manager's namespace.
pub(crate) struct TrustSetup {
    admin: Client,
    namespace: String,
    deleted: bool,
}

impl TrustSetup {
    /// `unsigned` is the rule's `unsigned` action (`Refuse` or `Report`).
    pub(crate) async fn create(
        admin: &Client,
        namespace: &str,
        keys: &Keys,
        unsigned: &str,
    ) -> TrustSetup {
        let pem = std::fs::read_to_string(keys.path("release.pub")).expect("the public key");
        let config_map: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": "release-keys"},
            "data": {"release.pub": pem},
        }))
        .unwrap();
        Api::<ConfigMap>::namespaced(admin.clone(), namespace)
            .patch(
                "release-keys",
                &PatchParams::apply("windlass-e2e").force(),
                &Patch::Apply(&config_map),
            )
            .await
            .expect("the key ConfigMap");
        let policy = json!({
            "apiVersion": "windlass.dev/v1alpha1", "kind": "TrustPolicy",
            "metadata": {"name": "releases"},
            "spec": {
                "keys": [{"name": "release", "configMap": {"name": "release-keys", "key": "release.pub"}}],
                "rules": [{"name": "platform", "classes": ["Release"], "keys": ["release"], "unsigned": unsigned}],
            },
        });
        Api::<windlass_api::TrustPolicy>::all(admin.clone())
            .patch(
                "releases",
                &PatchParams::apply("windlass-e2e").force(),
                &Patch::Apply(&policy),
            )
            .await
            .expect("the TrustPolicy");
        TrustSetup {
            admin: admin.clone(),
            namespace: namespace.to_string(),
            deleted: false,
        }
    }

    pub(crate) async fn delete(mut self) {
        remove_trust(&self.admin, &self.namespace).await;
        self.deleted = true;
    }
}

/// Removes the test's TrustPolicy and key ConfigMap, if there are any.
pub(crate) async fn remove_trust(admin: &Client, namespace: &str) {
    let _ = Api::<windlass_api::TrustPolicy>::all(admin.clone())
        .delete("releases", &DeleteParams::default())
        .await;
    let _ = Api::<ConfigMap>::namespaced(admin.clone(), namespace)
        .delete("release-keys", &DeleteParams::default())
        .await;
}

impl Drop for TrustSetup {
    fn drop(&mut self) {
        if self.deleted {
            return;
        }
        let (admin, namespace) = (self.admin.clone(), self.namespace.clone());
        // A test that failed: best effort (the next test of this area removes it too).
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move { remove_trust(&admin, &namespace).await });
        }
    }
}

/// Removes what earlier tests' releases left (the `platform-*` namespaces and the sample
/// releases' CRDs), so this test sees every level of a first install written.
pub(crate) async fn reset_platform(admin: &Client) {
    let namespaces = Api::<Namespace>::all(admin.clone());
    let crds = Api::<CustomResourceDefinition>::all(admin.clone());
    let platform = |name: &str| name.starts_with("platform-");
    let group = |name: &str| name.ends_with(".platform.windlass.dev");
    for ns in namespaces.list(&Default::default()).await.unwrap().items {
        let name = ns.name_any();
        if platform(&name) {
            let _ = namespaces.delete(&name, &DeleteParams::default()).await;
        }
    }
    for crd in crds.list(&Default::default()).await.unwrap().items {
        let name = crd.name_any();
        if group(&name) {
            let _ = crds.delete(&name, &DeleteParams::default()).await;
        }
    }
    wait_until(
        "the platform namespaces and CRDs to go",
        TIMEOUT,
        || async {
            let left_ns = namespaces.list(&Default::default()).await.unwrap().items;
            let left_crds = crds.list(&Default::default()).await.unwrap().items;
            !left_ns.iter().any(|n| platform(&n.name_any()))
                && !left_crds.iter().any(|c| group(&c.name_any()))
        },
    )
    .await;
}
