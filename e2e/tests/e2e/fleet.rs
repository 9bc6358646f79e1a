//! Fleets: a hub (the suite's cluster and manager) and three member control planes of their
//! own, each running its own windlass manager, registered in the hub with the least-privilege
//! credentials `config/rbac/fleet_member.yaml` makes. One story, in order:
//! acme-db 1.0.0 installed everywhere by a rollout; 1.1.0 in two waves, the first shown as each
//! member's own plan and approved by the wave's digest; the broken 1.1.1 halting at the first
//! wave (the member's own rollback named) with the other members untouched; a fleet rollback
//! returning each member to 1.0.0 from its own revision; and a member whose API server is
//! killed mid-rollout counting as not healthy until the wave's deadline halts it.

use std::{path::PathBuf, process::Command, time::Duration};

use kube::{
    Api, Client, Config,
    api::PostParams,
    config::{KubeConfigOptions, Kubeconfig},
};
use serde_json::{Value, json};
use windlass_api::{
    Blueprint, Subscription,
    fleet::{Fleet, Rollout, RolloutPhase},
};
use windlass_testkit::{require_manager, run_ok, unique_name, wait_for};

use crate::catalog_listing::run_windlass;

const TIMEOUT: Duration = Duration::from_secs(300);

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/fleet-member.sh")
}

/// One member control plane; stopped when dropped.
struct MemberCluster {
    name: String,
    dir: PathBuf,
    fleet_kubeconfig: PathBuf,
}

impl Drop for MemberCluster {
    fn drop(&mut self) {
        let _ = Command::new(script())
            .args(["down"])
            .arg(&self.dir)
            .status();
    }
}

impl MemberCluster {
    async fn admin(&self) -> Client {
        let text = std::fs::read_to_string(self.dir.join("admin.kubeconfig")).unwrap();
        let config = Config::from_custom_kubeconfig(
            Kubeconfig::from_yaml(&text).unwrap(),
            &KubeConfigOptions::default(),
        )
        .await
        .unwrap();
        Client::try_from(config).unwrap()
    }
}

/// Starts the members side by side (each is a whole control plane and a manager).
fn start_members(run: &str, names: &[&str]) -> Vec<MemberCluster> {
    let base = std::env::temp_dir().join(run);
    let bin = windlass_testkit::windlass_binary();
    let children: Vec<_> = names
        .iter()
        .map(|name| {
            let dir = base.join(name);
            let child = Command::new(script())
                .arg("up")
                .arg(&dir)
                .arg(&bin)
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            (name.to_string(), dir, child)
        })
        .collect();
    children
        .into_iter()
        .map(|(name, dir, child)| {
            let out = child.wait_with_output().unwrap();
            let member = MemberCluster {
                name: name.clone(),
                dir: dir.clone(),
                fleet_kubeconfig: dir.join("fleet.kubeconfig"),
            };
            assert!(
                out.status.success(),
                "member {name} did not start (logs in {})",
                dir.join("logs").display()
            );
            member
        })
        .collect()
}

async fn rollout_status(hub: &Api<Rollout>, name: &str, want: RolloutPhase) -> Rollout {
    wait_for(&format!("Rollout {name} {want:?}"), TIMEOUT, || async {
        let r = hub.get(name).await.map_err(|e| e.to_string())?;
        let s = r.status.clone().unwrap_or_default();
        if s.phase == Some(want) {
            Ok(r)
        } else {
            Err(format!(
                "{:?}: {} {:?}",
                s.phase,
                s.message,
                s.clusters
                    .iter()
                    .map(|c| format!("{}={}:{}", c.name, c.state, c.message))
                    .collect::<Vec<_>>()
            ))
        }
    })
    .await
}

async fn create(hub: &Api<Rollout>, object: Value) {
    let rollout: Rollout = serde_json::from_value(object).unwrap();
    hub.create(&PostParams::default(), &rollout).await.unwrap();
}

async fn subscription_generation(member: &MemberCluster) -> Option<i64> {
    Api::<Subscription>::namespaced(member.admin().await, "fleet-db")
        .get("acme-db")
        .await
        .unwrap()
        .metadata
        .generation
}

async fn blueprint_version(member: &MemberCluster, namespace: &str) -> Option<String> {
    let client = member.admin().await;
    let subscription = Api::<Subscription>::namespaced(client.clone(), namespace)
        .get_opt("acme-db")
        .await
        .unwrap()?;
    let name = subscription.status?.blueprint?;
    Api::<Blueprint>::namespaced(client, namespace)
        .get(&name)
        .await
        .ok()?
        .status?
        .version
}

/// Every member's acme-db runs `version`.
async fn all_at(members: &[MemberCluster], version: &str) {
    for m in members {
        assert_eq!(
            blueprint_version(m, "fleet-db").await.as_deref(),
            Some(version),
            "{}",
            m.name
        );
    }
}

fn rollout(name: &str, fleet: &str, target: Value, waves: Value, extra: Value) -> Value {
    let mut spec = json!({ "fleet": fleet, "target": target, "waves": waves });
    spec.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    json!({
        "apiVersion": "windlass.dev/v1alpha1", "kind": "Rollout",
        "metadata": { "name": name },
        "spec": spec,
    })
}

fn cluster<'a>(r: &'a Rollout, member: &str) -> &'a windlass_api::fleet::MemberStatus {
    r.status
        .as_ref()
        .unwrap()
        .clusters
        .iter()
        .find(|c| c.name == member)
        .unwrap_or_else(|| panic!("{member} is not in the rollout's status"))
}

/// Given three members (one staging, two prod) registered in the hub with their fleet
/// credentials, then rollouts install, upgrade in approved waves, halt at a broken release
/// with the others untouched, roll back fleet-wide, and a member killed mid-wave halts its
/// wave at the deadline while the other members run on.
#[tokio::test]
async fn rollouts_move_in_waves_halt_at_the_first_failure_and_roll_back() {
    require_manager();
    let run = unique_name("fleet");
    let names: Vec<String> = ["a", "b", "c"]
        .iter()
        .map(|n| format!("{run}-{n}"))
        .collect();
    let members = start_members(&run, &names.iter().map(String::as_str).collect::<Vec<_>>());
    let (staging, prod1, prod2) = (&members[0], &members[1], &members[2]);
    for (member, env) in [(staging, "staging"), (prod1, "prod"), (prod2, "prod")] {
        let (ok, out, err) = run_windlass(&[
            "fleet",
            "register",
            &member.name,
            "--member-kubeconfig",
            member.fleet_kubeconfig.to_str().unwrap(),
            "--label",
            &format!("env={env}"),
            "--label",
            &format!("fleet={run}"),
        ]);
        assert!(ok, "register {}: {out}{err}", member.name);
    }
    let admin = windlass_testkit::client().await;
    let fleets = Api::<Fleet>::all(admin.clone());
    let fleet: Fleet = serde_json::from_value(json!({
        "apiVersion": "windlass.dev/v1alpha1", "kind": "Fleet",
        "metadata": {"name": run},
        "spec": {"selector": {"matchLabels": {"fleet": run}}},
    }))
    .unwrap();
    fleets.create(&PostParams::default(), &fleet).await.unwrap();
    wait_for("the Fleet lists its three members", TIMEOUT, || async {
        let f = fleets.get(&run).await.map_err(|e| e.to_string())?;
        match f.status {
            Some(s) if s.member_count == 3 => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let hub = Api::<Rollout>::all(admin.clone());
    let db = |spec: Value, version: &str| json!({"subscription": {"namespace": "fleet-db", "spec": spec, "version": version}});

    // 1. acme-db 1.0.0 everywhere, one automatic wave.
    let install = format!("{run}-install");
    create(
        &hub,
        rollout(
            &install,
            &run,
            db(
                json!({"package": "acme-db", "channel": "candidate", "versionRange": "<1.0.1"}),
                "1.0.0",
            ),
            json!([{"name": "all", "approval": "Automatic"}]),
            json!({}),
        ),
    )
    .await;
    rollout_status(&hub, &install, RolloutPhase::Completed).await;
    all_at(&members, "1.0.0").await;

    // 2. 1.1.0: the staging wave shows its member's own plan and waits for the wave's digest.
    let upgrade = format!("{run}-110");
    create(
        &hub,
        rollout(
            &upgrade,
            &run,
            db(
                json!({"package": "acme-db", "channel": "candidate"}),
                "1.1.0",
            ),
            json!([
                {"name": "staging", "selector": {"matchLabels": {"env": "staging"}}},
                {"name": "prod", "maxInFlight": 1},
            ]),
            json!({}),
        ),
    )
    .await;
    let waiting = rollout_status(&hub, &upgrade, RolloutPhase::AwaitingApproval).await;
    let member_plan = cluster(&waiting, &staging.name)
        .plan
        .clone()
        .expect("staging shows its plan");
    // The plan is the member's own: its Blueprint waits with that digest.
    let member_admin = staging.admin().await;
    let bp_name = Api::<Subscription>::namespaced(member_admin.clone(), "fleet-db")
        .get("acme-db")
        .await
        .unwrap()
        .status
        .unwrap()
        .blueprint
        .unwrap();
    let member_bp = Api::<Blueprint>::namespaced(member_admin.clone(), "fleet-db")
        .get(&bp_name)
        .await
        .unwrap();
    assert_eq!(
        member_bp.status.unwrap().preview.unwrap().digest,
        member_plan.digest
    );
    // Nothing was written to the prod members yet.
    for m in [prod1, prod2] {
        assert_eq!(cluster(&waiting, &m.name).state, "Pending");
        assert_eq!(
            blueprint_version(m, "fleet-db").await.as_deref(),
            Some("1.0.0")
        );
    }
    let (ok, plan_out, err) = run_windlass(&["fleet", "plan", &upgrade]);
    assert!(ok, "{plan_out}{err}");
    assert!(plan_out.contains(&member_plan.digest), "{plan_out}");
    let digest = plan_out
        .lines()
        .find_map(|l| l.strip_prefix("wave digest: "))
        .unwrap_or_else(|| panic!("no wave digest in {plan_out}"))
        .to_string();
    let wrong = format!("sha256:{}", "0".repeat(64));
    let (ok, _, err) = run_windlass(&["fleet", "approve", &upgrade, "--plan", &wrong]);
    assert!(!ok && err.contains("not sha256:0000"), "{err}");
    let (ok, out, err) = run_windlass(&["fleet", "approve", &upgrade, "--plan", &digest]);
    assert!(ok, "{out}{err}");
    let done = rollout_status(&hub, &upgrade, RolloutPhase::Completed).await;
    assert_eq!(done.status.as_ref().unwrap().done, 3);
    all_at(&members, "1.1.0").await;
    let table = run_ok(windlass_testkit::kubectl().args(["get", "rollouts", &upgrade]));
    assert!(
        table.contains("Completed") && table.contains("prod"),
        "{table}"
    );
    // The staging member got the template's own approval back.
    wait_for(
        "staging's Subscription back to Automatic",
        TIMEOUT,
        || async {
            let s = Api::<Subscription>::namespaced(member_admin.clone(), "fleet-db")
                .get("acme-db")
                .await
                .map_err(|e| e.to_string())?;
            if s.spec.approval == windlass_api::config::Approval::Automatic {
                Ok(())
            } else {
                Err(format!("{:?}", s.spec.approval))
            }
        },
    )
    .await;
    let prod_before = (
        subscription_generation(prod1).await,
        subscription_generation(prod2).await,
    );

    // 3. The broken 1.1.1: the staging member rolls itself back, the rollout halts naming it,
    // and the prod members are never asked.
    let broken = format!("{run}-111");
    create(&hub, rollout(&broken, &run,
        db(json!({"package": "acme-db", "channel": "stable",
                  "rollback": {"automatic": true, "progressDeadlineSeconds": 20}}), "1.1.1"),
        json!([
            {"name": "staging", "selector": {"matchLabels": {"env": "staging"}}, "approval": "Automatic"},
            {"name": "prod"},
        ]), json!({}))).await;
    let halted = rollout_status(&hub, &broken, RolloutPhase::Halted).await;
    let message = halted.status.as_ref().unwrap().message.clone();
    assert!(
        message.starts_with(&format!(
            "halted: cluster {} in wave staging: ",
            staging.name
        )),
        "{message}"
    );
    assert!(
        message.contains("roll"),
        "the member's own words about its rollback: {message}"
    );
    for m in [prod1, prod2] {
        assert_eq!(cluster(&halted, &m.name).state, "Untouched");
    }
    // Long past a look (10 s) and the hub's own resync of the member statuses: still untouched.
    tokio::time::sleep(Duration::from_secs(25)).await;
    assert_eq!(
        (
            subscription_generation(prod1).await,
            subscription_generation(prod2).await
        ),
        prod_before
    );
    assert_eq!(
        hub.get(&broken).await.unwrap().status.unwrap().phase,
        Some(RolloutPhase::Halted)
    );

    // 4. Fleet rollback of the 1.1.0 rollout: each member's own rules refuse going back across
    // a minor version, and the rollout halts saying so; forced, each member goes back to 1.0.0
    // from its own revision.
    let (ok, out, err) = run_windlass(&["fleet", "rollback", &upgrade]);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains(&format!("{} -> acme-db.v1.0.0", prod1.name)),
        "{out}"
    );
    let refused = rollout_status(&hub, &upgrade, RolloutPhase::Halted).await;
    let line = cluster(&refused, &prod1.name);
    assert_eq!(line.state, "Failed");
    assert!(
        line.message.contains("crosses a minor version"),
        "{}",
        line.message
    );
    let (ok, out, err) = run_windlass(&["fleet", "rollback", &upgrade, "--force"]);
    assert!(ok, "{out}{err}");
    rollout_status(&hub, &upgrade, RolloutPhase::RolledBack).await;
    all_at(&members, "1.0.0").await;

    // 5. A member killed mid-rollout: prod1's API server dies while staging soaks; prod1
    // counts as not healthy (and holds its place in flight), prod2 is never asked, and the
    // wave's deadline halts the rollout naming prod1.
    let cache = format!("{run}-cache");
    create(&hub, rollout(&cache, &run,
        json!({"subscription": {"namespace": "fleet-cache",
               "spec": {"package": "acme-cache", "channel": "candidate", "versionRange": "<2.0.0"},
               "version": "1.0.0"}}),
        json!([
            {"name": "staging", "selector": {"matchLabels": {"env": "staging"}}, "approval": "Automatic", "soakSeconds": 15},
            {"name": "prod", "maxInFlight": 1},
        ]), json!({"waveDeadlineSeconds": 40}))).await;
    wait_for(
        "the cache rollout's staging wave soaking",
        TIMEOUT,
        || async {
            let r = hub.get(&cache).await.map_err(|e| e.to_string())?;
            let s = r.status.unwrap_or_default();
            match s.waves.first() {
                Some(w) if w.state == "Soaking" => Ok(()),
                other => Err(format!("{other:?} {}", s.message)),
            }
        },
    )
    .await;
    let status = Command::new(script())
        .arg("kill-apiserver")
        .arg(&prod1.dir)
        .status()
        .unwrap();
    assert!(status.success());
    let halted = rollout_status(&hub, &cache, RolloutPhase::Halted).await;
    let message = halted.status.as_ref().unwrap().message.clone();
    assert!(
        message.contains("wave prod did not become healthy within 40 s"),
        "{message}"
    );
    assert!(
        message.contains(&prod1.name) && message.contains("unreachable"),
        "{message}"
    );
    assert_eq!(cluster(&halted, &prod2.name).state, "Untouched");
    let prod2_admin = prod2.admin().await;
    assert!(
        Api::<Subscription>::namespaced(prod2_admin, "fleet-cache")
            .get_opt("acme-cache")
            .await
            .unwrap()
            .is_none()
    );
    // The staging member keeps running what it was given, on its own.
    let staging_cache = Api::<Subscription>::namespaced(member_admin.clone(), "fleet-cache")
        .get("acme-cache")
        .await
        .unwrap();
    assert_eq!(
        staging_cache.status.unwrap().installed_csv.as_deref(),
        Some("acme-cache.v1.0.0")
    );

    for name in [&install, &upgrade, &broken, &cache] {
        let _ = hub.delete(name, &Default::default()).await;
    }
    let _ = fleets.delete(&run, &Default::default()).await;
    let secrets = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(
        admin,
        &windlass_testkit::manager::namespace().unwrap(),
    );
    for m in &members {
        let _ = secrets
            .delete(&format!("fleet-member-{}", m.name), &Default::default())
            .await;
    }
}
