//! The manager killed (SIGKILL) at random moments while it installs, upgrades and rolls back an
//! operator, at least 20 times: every time it comes back it must pick up where the cluster
//! says things are, and the end state has no duplicate or orphaned objects.
//!
//! This test restarts the manager that `make e2e` runs (with `e2e/scripts/manager-restart.sh`);
//! other tests running at the same time see short outages, which they must tolerate anyway.

use std::{collections::BTreeSet, path::PathBuf, process::Command, time::Duration};

use k8s_openapi::api::{
    admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration},
    apps::v1::Deployment,
    core::v1::{Secret, ServiceAccount},
    rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding},
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Api, ResourceExt, api::ListParams};
use serde_json::json;
use windlass_api::{
    Blueprint, ClusterServiceVersion, Subscription,
    blueprint::{BlueprintPhase, RevisionOutcome},
};
use windlass_testkit::{
    TestNamespace,
    lifecycle::{is_at, subscribe, wait_blueprint},
    require_manager, state_dir,
};

const KILLS: usize = 24;

fn manager_bin() -> PathBuf {
    windlass_testkit::windlass_binary()
}

/// SIGKILLs the manager; whether a running manager was killed (only those count).
pub(crate) fn kill_manager() -> bool {
    let pid =
        std::fs::read_to_string(state_dir().join("pids/manager")).expect("the manager's pid file");
    Command::new("kill")
        .args(["-KILL", pid.trim()])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Which part of the lifecycle a kill landed in, from the Blueprint seen just before it.
fn stage_of(blueprint: &Blueprint) -> &'static str {
    match windlass_testkit::lifecycle::phase(blueprint) {
        Some(BlueprintPhase::Failed | BlueprintPhase::RollingBack | BlueprintPhase::RolledBack) => {
            "rollback"
        }
        _ if blueprint.spec.cluster_service_version_name == "acme-db.v1.0.0" => "install",
        _ => "upgrade",
    }
}

pub(crate) fn restart_manager() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/manager-restart.sh");
    let status = Command::new(script)
        .arg(manager_bin())
        .status()
        .expect("running manager-restart.sh");
    assert!(status.success(), "the manager did not come back");
}

/// The metadata of the cluster-scoped `K`s that `params` selects.
async fn labelled<K>(client: &kube::Client, params: &ListParams) -> Vec<ObjectMeta>
where
    K: kube::Resource<Scope = kube::core::ClusterResourceScope>
        + Clone
        + for<'de> k8s_openapi::serde::Deserialize<'de>
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    Api::<K>::all(client.clone())
        .list(params)
        .await
        .expect("listing cluster-scoped objects")
        .items
        .into_iter()
        .map(|object| object.meta().clone())
        .collect()
}

/// A tiny deterministic generator, so a failing run can be repeated with the same seed.
struct Lcg(u64);
impl Lcg {
    fn next_millis(&mut self, max: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % max
    }
}

/// Given a Subscription that installs 1.0.0, upgrades to 1.1.0, fails on 1.1.1 and rolls back,
/// when the manager is killed at random moments throughout (kills that hit a running manager
/// counted, and at least one in each of install, upgrade and rollback), then it still ends
/// RolledBack at 1.1.0 with one CSV, one Deployment, one set of RBAC (cluster-wide included),
/// webhook configurations only of that CSV, and one revision Secret per revision.
#[tokio::test]
async fn killing_the_manager_at_random_moments_always_converges() {
    require_manager();
    let seed = std::env::var("WINDLASS_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    println!("seed {seed} (set WINDLASS_KILL_SEED to repeat)");
    let mut random = Lcg(seed);
    let ns = TestNamespace::create(&windlass_testkit::client().await, "kills").await;
    let client = ns.client().clone();
    subscribe(
        &client,
        &ns.name,
        "db",
        json!({
            "package": "acme-db",
            "channel": "stable",
            "startingCSV": "acme-db.v1.0.0",
            "targetNamespaces": [ns.name],
            // Long enough for an upgrade to finish while the manager keeps being killed on a
            // busy machine; 1.1.1 still fails it, crash-looping.
            "rollback": { "automatic": true, "progressDeadlineSeconds": 45 },
        }),
    )
    .await;
    let blueprints = Api::<Blueprint>::namespaced(client.clone(), &ns.name);
    let mut kills = 0;
    let mut phases_seen = BTreeSet::new();
    let mut stages = BTreeSet::new();
    let kill_now = async |stages: &mut BTreeSet<&'static str>, phases: &mut BTreeSet<String>| {
        if let Ok(Some(b)) = blueprints.get_opt("db").await {
            let phase = windlass_testkit::lifecycle::phase(&b);
            phases.insert(format!(
                "{} {}",
                b.spec.cluster_service_version_name,
                phase.map_or("-".to_string(), |p| format!("{p:?}"))
            ));
            if kill_manager() {
                stages.insert(stage_of(&b));
                return true;
            }
        }
        false
    };
    // The first install is quick: kill it as soon as its Blueprint appears.
    let appeared = std::time::Instant::now() + Duration::from_secs(60);
    while std::time::Instant::now() < appeared {
        let installing = blueprints
            .get_opt("db")
            .await
            .ok()
            .flatten()
            .is_some_and(|b| stage_of(&b) == "install");
        if installing && kill_now(&mut stages, &mut phases_seen).await {
            kills += 1;
            restart_manager();
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    while kills < KILLS {
        tokio::time::sleep(Duration::from_millis(200 + random.next_millis(2500))).await;
        kills += usize::from(kill_now(&mut stages, &mut phases_seen).await);
        // Sometimes stay down a little, as a crash-looping pod would.
        tokio::time::sleep(Duration::from_millis(random.next_millis(1500))).await;
        restart_manager();
    }
    // The rollback may not have begun yet: kill it there too, as soon as it does.
    let deadline = std::time::Instant::now() + Duration::from_secs(240);
    while !stages.contains("rollback") && std::time::Instant::now() < deadline {
        let in_rollback = blueprints
            .get_opt("db")
            .await
            .ok()
            .flatten()
            .is_some_and(|b| {
                matches!(
                    windlass_testkit::lifecycle::phase(&b),
                    Some(BlueprintPhase::Failed | BlueprintPhase::RollingBack)
                )
            });
        if in_rollback && kill_now(&mut stages, &mut phases_seen).await {
            kills += 1;
            restart_manager();
        } else {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    println!("{kills} kills, in {stages:?}; states seen while killing: {phases_seen:?}");
    assert!(kills >= KILLS, "only {kills} kills hit a running manager");
    for stage in ["install", "upgrade", "rollback"] {
        assert!(
            stages.contains(stage),
            "no kill landed in the {stage}: {phases_seen:?}"
        );
    }

    let blueprint = wait_blueprint(
        &client,
        &ns.name,
        "db",
        "RolledBack at 1.1.0",
        Duration::from_secs(300),
        |b| is_at(b, BlueprintPhase::RolledBack, "1.1.0"),
    )
    .await;
    let status = blueprint.status.as_ref().unwrap();
    let revisions: Vec<i64> = status.history.iter().map(|r| r.revision).collect();
    let unique: BTreeSet<i64> = revisions.iter().copied().collect();
    assert_eq!(
        unique.len(),
        revisions.len(),
        "no revision recorded twice: {revisions:?}"
    );
    assert!(
        status
            .history
            .iter()
            .any(|r| r.version == "1.1.1" && r.outcome == RevisionOutcome::RolledBack),
        "{:?}",
        status.history
    );

    // RolledBack is reported once 1.1.0 Succeeded; the CSV it replaced is then removed by the
    // CSV controller (Deleting, its objects, its finalizer): the end state follows shortly.
    let list = ListParams::default();
    let csvs = Api::<ClusterServiceVersion>::namespaced(client.clone(), &ns.name);
    windlass_testkit::wait_for(
        "only acme-db.v1.1.0 left",
        Duration::from_secs(60),
        || async {
            let listed = csvs.list(&list).await.map_err(|e| e.to_string())?;
            let names: Vec<_> = listed.items.iter().map(|c| c.name_any()).collect();
            if names == ["acme-db.v1.1.0"] {
                Ok(())
            } else {
                Err(format!(
                    "{:?}",
                    listed
                        .items
                        .iter()
                        .map(|c| (c.name_any(), c.status.as_ref().map(|s| s.phase)))
                        .collect::<Vec<_>>()
                ))
            }
        },
    )
    .await;
    let deployments = Api::<Deployment>::namespaced(client.clone(), &ns.name)
        .list(&list)
        .await
        .unwrap();
    assert_eq!(
        deployments
            .items
            .iter()
            .map(|d| d.name_any())
            .collect::<Vec<_>>(),
        ["acme-db-operator"]
    );
    assert_eq!(
        Api::<Subscription>::namespaced(client.clone(), &ns.name)
            .list(&list)
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    assert_eq!(blueprints.list(&list).await.unwrap().items.len(), 1);
    let accounts = Api::<ServiceAccount>::namespaced(client.clone(), &ns.name)
        .list(&list)
        .await
        .unwrap();
    let accounts: Vec<String> = accounts
        .items
        .iter()
        .map(|a| a.name_any())
        .filter(|n| n != "default")
        .collect();
    assert_eq!(accounts, ["acme-db-operator"]);
    let roles = Api::<Role>::namespaced(client.clone(), &ns.name)
        .list(&list)
        .await
        .unwrap();
    let bindings = Api::<RoleBinding>::namespaced(client.clone(), &ns.name)
        .list(&list)
        .await
        .unwrap();
    assert_eq!(
        roles.items.len(),
        bindings.items.len(),
        "one binding per Role"
    );
    for role in &roles.items {
        let owner = role
            .labels()
            .get("windlass.dev/csv")
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            owner,
            "acme-db.v1.1.0",
            "Role {} belongs to a CSV that is gone",
            role.name_any()
        );
    }
    // Cluster-scoped objects follow no ownerReference: exactly those of the surviving CSV.
    let of_namespace =
        ListParams::default().labels(&format!("windlass.dev/csv-namespace={}", ns.name));
    let cluster_roles = labelled::<ClusterRole>(&client, &of_namespace).await;
    let cluster_bindings = labelled::<ClusterRoleBinding>(&client, &of_namespace).await;
    assert!(
        !cluster_roles.is_empty(),
        "acme-db's clusterPermissions became a ClusterRole"
    );
    assert_eq!(
        cluster_roles.len(),
        cluster_bindings.len(),
        "one ClusterRoleBinding per ClusterRole"
    );
    let webhooks = [
        labelled::<ValidatingWebhookConfiguration>(&client, &of_namespace).await,
        labelled::<MutatingWebhookConfiguration>(&client, &of_namespace).await,
    ];
    for meta in cluster_roles
        .iter()
        .chain(&cluster_bindings)
        .chain(webhooks.iter().flatten())
    {
        assert_eq!(
            meta.labels
                .as_ref()
                .and_then(|l| l.get("windlass.dev/csv"))
                .map(String::as_str),
            Some("acme-db.v1.1.0"),
            "{} belongs to a CSV that is gone",
            meta.name.as_deref().unwrap_or_default()
        );
    }
    // Revision Secrets only (operand snapshots carry another label).
    let secrets = Api::<Secret>::namespaced(client.clone(), &ns.name)
        .list(&ListParams::default().labels("windlass.dev/blueprint=db,windlass.dev/revision"))
        .await
        .unwrap();
    let stored: BTreeSet<String> = secrets.items.iter().map(|s| s.name_any()).collect();
    let expected: BTreeSet<String> = unique.iter().map(|r| format!("db.r{r}")).collect();
    assert_eq!(
        stored, expected,
        "one revision Secret per recorded revision, no strays; history: {:?}",
        status.history
    );
}
