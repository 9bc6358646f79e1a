//! The fleet controller's decisions for 1,000 member clusters: a rollout in three waves (10 %,
//! 30 %, the rest; at most 100 in flight), each member simulated in process (it takes the
//! target, shows a plan in the Manual first wave, reports progress for a few looks, then
//! healthy). What is measured is the hub's own logic, `windlass_fleet::decide`, over the
//! whole rollout: the time per decision (median and worst), the decisions it took, and the
//! process's peak memory, next to the cost of only cloning the inputs as an anchor.
//!
//! `cargo bench -p windlass-fleet --bench fleet_waves` (`make bench` runs it).

use std::{collections::BTreeMap, time::Instant};

use k8s_openapi::jiff::Timestamp;
use serde_json::json;
use windlass_api::fleet::{
    RolloutPhase, RolloutSpec, RolloutStatus, RolloutTarget, SubscriptionTarget, Wave, WaveApproval,
};
use windlass_fleet::{Action, Applied, Health, Input, Member, Seen, View, decide};

const MEMBERS: usize = 1000;
/// Looks a member takes to install once asked.
const INSTALL_LOOKS: u32 = 3;

struct Simulated {
    applied: Applied,
    version: &'static str,
    looks_left: Option<u32>,
    approved: bool,
    reachable: bool,
}

fn spec() -> RolloutSpec {
    RolloutSpec {
        fleet: "all".into(),
        target: RolloutTarget {
            subscription: Some(SubscriptionTarget {
                namespace: "db".into(),
                spec: serde_json::from_value(json!({"package": "acme-db", "channel": "candidate"}))
                    .unwrap(),
                version: Some("1.1.0".into()),
                ..SubscriptionTarget::default()
            }),
            cluster_version: None,
        },
        waves: vec![
            Wave {
                name: "canary".into(),
                percent: Some(10),
                max_in_flight: Some(100),
                ..Wave::default()
            },
            Wave {
                name: "early".into(),
                percent: Some(30),
                max_in_flight: Some(100),
                ..Wave::default()
            },
            Wave {
                name: "rest".into(),
                max_in_flight: Some(100),
                ..Wave::default()
            },
        ],
        ..RolloutSpec::default()
    }
}

fn view(sim: &Simulated, name: &str) -> Seen {
    if !sim.reachable {
        return Seen::Unreachable("connection refused".into());
    }
    let health = match (sim.applied, sim.looks_left) {
        (Applied::No, _) => Health::Healthy,
        (Applied::Manual, _) if !sim.approved => Health::AwaitingApproval {
            digest: format!(
                "sha256:{:064x}",
                name.len() * 7919 + name.as_bytes()[name.len() - 1] as usize
            ),
            summary: "acme-db 1.0.0 -> 1.1.0".into(),
        },
        (_, Some(0)) => Health::Healthy,
        (_, _) => Health::Progressing("installing".into()),
    };
    Seen::View(View {
        applied: sim.applied,
        running: Some(format!("acme-db.v{}", sim.version)),
        version: Some(sim.version.into()),
        settled: matches!(health, Health::Healthy),
        health,
        rollback_refused: None,
    })
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|v| v.parse().unwrap_or(0)))
        })
        .unwrap_or(0)
}

fn main() {
    let members: Vec<Member> = (0..MEMBERS)
        .map(|i| Member {
            name: format!("cluster-{i:04}"),
            labels: [("region".to_string(), format!("r{}", i % 7))].into(),
        })
        .collect();
    let mut sims: BTreeMap<String, Simulated> = members
        .iter()
        .map(|m| {
            (
                m.name.clone(),
                Simulated {
                    applied: Applied::No,
                    version: "1.0.0",
                    looks_left: None,
                    approved: false,
                    reachable: true,
                },
            )
        })
        .collect();
    let mut spec = spec();
    let mut status = RolloutStatus::default();
    let mut generation = 1;
    let mut times = Vec::new();
    let mut clone_times = Vec::new();
    let start = Timestamp::from_second(1_800_000_000).unwrap();
    let mut step_no = 0i64;
    let rss_before = peak_rss_kib();
    loop {
        step_no += 1;
        for (i, sim) in sims.values_mut().enumerate() {
            // For the first 30 looks, outside the Manual first wave (whose approval needs every
            // plan shown), about one member in 97 does not answer at each look: the waves wait.
            sim.reachable = i < MEMBERS / 10 || step_no > 30 || (i as i64 + step_no) % 97 != 0;
            if let Some(left) = sim.looks_left.as_mut() {
                if sim.applied == Applied::AsTemplate || sim.approved {
                    *left = left.saturating_sub(1);
                }
                if *left == 0 {
                    sim.version = "1.1.0";
                }
            }
        }
        let seen: BTreeMap<String, Seen> =
            sims.iter().map(|(n, s)| (n.clone(), view(s, n))).collect();
        let anchor = Instant::now();
        let copied = (spec.clone(), status.clone(), members.clone(), seen.clone());
        clone_times.push(anchor.elapsed());
        drop(copied);
        let began = Instant::now();
        let step = decide(&Input {
            name: "acme-db-1.1.0",
            spec: &spec,
            generation: Some(generation),
            last: &status,
            members: &members,
            seen: &seen,
            now: Timestamp::from_second(start.as_second() + step_no * 10).unwrap(),
        });
        times.push(began.elapsed());
        for action in &step.actions {
            match action {
                Action::Apply { member, manual } => {
                    let sim = sims.get_mut(member).unwrap();
                    sim.applied = if *manual {
                        Applied::Manual
                    } else {
                        Applied::AsTemplate
                    };
                    sim.looks_left.get_or_insert(INSTALL_LOOKS);
                }
                Action::Approve { member, .. } => sims.get_mut(member).unwrap().approved = true,
                Action::RollBack { .. } => unreachable!("no rollback in this run"),
            }
        }
        status = step.status;
        if status.phase == Some(RolloutPhase::AwaitingApproval) {
            // The person approves what `windlass fleet plan` shows.
            let wave = status.current_wave.clone().unwrap();
            let plan = status
                .waves
                .iter()
                .find(|w| w.name == wave)
                .unwrap()
                .plan_digest
                .clone()
                .unwrap();
            spec.approvals.push(WaveApproval { wave, plan });
            generation += 1;
        }
        if status.phase == Some(RolloutPhase::Completed) || step_no > 10_000 {
            break;
        }
    }
    assert_eq!(
        status.phase,
        Some(RolloutPhase::Completed),
        "{}",
        status.message
    );
    assert_eq!(status.done, MEMBERS as i64);
    let status_bytes = serde_json::to_vec(&status).unwrap().len();
    times.sort();
    clone_times.sort();
    let median = times[times.len() / 2];
    let worst = *times.last().unwrap();
    let clone_median = clone_times[clone_times.len() / 2];
    println!(
        "fleet_waves: {MEMBERS} members, 3 waves, max 100 in flight, {} decisions",
        times.len()
    );
    println!(
        "  decision: median {:.2} ms, worst {:.2} ms ({:.1}x the median cost of cloning its inputs, {:.2} ms)",
        median.as_secs_f64() * 1e3,
        worst.as_secs_f64() * 1e3,
        median.as_secs_f64() / clone_median.as_secs_f64().max(1e-9),
        clone_median.as_secs_f64() * 1e3
    );
    println!(
        "  whole rollout: {:.1} ms of decisions; status {} KiB of JSON; peak RSS {} MiB (before the run {} MiB)",
        times.iter().map(|t| t.as_secs_f64()).sum::<f64>() * 1e3,
        status_bytes / 1024,
        peak_rss_kib() / 1024,
        rss_before / 1024
    );
}
