use std::collections::BTreeMap;

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::LabelSelector, jiff::Timestamp};
use serde_json::json;
use windlass_api::fleet::{
    RolloutPhase, RolloutSpec, RolloutStatus, RolloutTarget, SubscriptionTarget, Wave,
    WaveApproval, WaveApprovalMode,
};

use super::*;
use crate::observe::{Applied, Health, Seen, View};
use crate::waves::Member;

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).unwrap()
}

fn members() -> Vec<Member> {
    ["east", "north", "west"]
        .iter()
        .map(|name| Member {
            name: name.to_string(),
            labels: [(
                "env".to_string(),
                if *name == "east" { "staging" } else { "prod" }.to_string(),
            )]
            .into(),
        })
        .collect()
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
                name: "staging".into(),
                selector: Some(LabelSelector {
                    match_labels: Some([("env".to_string(), "staging".to_string())].into()),
                    ..LabelSelector::default()
                }),
                ..Wave::default()
            },
            Wave {
                name: "prod".into(),
                max_in_flight: Some(1),
                ..Wave::default()
            },
        ],
        ..RolloutSpec::default()
    }
}

fn view(applied: Applied, version: &str, health: Health) -> Seen {
    Seen::View(View {
        applied,
        running: Some(format!("acme-db.v{version}")),
        version: Some(version.into()),
        settled: matches!(health, Health::Healthy),
        health,
        rollback_refused: None,
    })
}

fn untouched() -> Seen {
    view(Applied::No, "1.0.0", Health::Healthy)
}

struct World {
    spec: RolloutSpec,
    generation: i64,
    status: RolloutStatus,
    seen: BTreeMap<String, Seen>,
}

impl World {
    fn new() -> World {
        World {
            spec: spec(),
            generation: 1,
            status: RolloutStatus::default(),
            seen: ["east", "north", "west"]
                .iter()
                .map(|m| (m.to_string(), untouched()))
                .collect(),
        }
    }

    fn step(&mut self, now: i64) -> Step {
        let members = members();
        let step = decide(&Input {
            name: "db-1-1",
            spec: &self.spec,
            generation: Some(self.generation),
            last: &self.status,
            members: &members,
            seen: &self.seen,
            now: at(now),
        });
        self.status = step.status.clone();
        step
    }

    fn set(&mut self, member: &str, seen: Seen) {
        self.seen.insert(member.into(), seen);
    }

    fn member(&self, name: &str) -> &MemberStatus {
        self.status
            .clusters
            .iter()
            .find(|m| m.name == name)
            .unwrap()
    }
}

fn awaiting(digest: &str) -> Seen {
    view(
        Applied::Manual,
        "1.0.0",
        Health::AwaitingApproval {
            digest: digest.into(),
            summary: "acme-db 1.0.0 -> 1.1.0".into(),
        },
    )
}

fn plan(n: u8) -> String {
    format!("sha256:{}", format!("{n:02x}").repeat(32))
}

#[test]
fn a_manual_first_wave_shows_plans_then_installs_once_its_digest_is_approved() {
    let mut world = World::new();
    let step = world.step(0);
    assert_eq!(
        step.actions,
        vec![Action::Apply {
            member: "east".into(),
            manual: true
        }]
    );
    assert_eq!(world.status.phase, Some(RolloutPhase::Progressing));
    assert_eq!(
        world.member("east").previous.as_deref(),
        Some("acme-db.v1.0.0")
    );
    assert_eq!(world.member("north").state, state::PENDING);

    world.set("east", awaiting(&plan(1)));
    let step = world.step(5);
    assert!(step.actions.is_empty());
    assert_eq!(world.status.phase, Some(RolloutPhase::AwaitingApproval));
    let digest = world.status.waves[0].plan_digest.clone().unwrap();
    assert_eq!(digest, wave_digest([("east", plan(1).as_str())]));
    assert!(
        world.status.message.contains(&digest),
        "{}",
        world.status.message
    );

    // An approval of another digest approves nothing.
    world.spec.approvals.push(WaveApproval {
        wave: "staging".into(),
        plan: plan(9),
    });
    world.generation += 1;
    assert!(world.step(6).actions.is_empty());
    assert!(world.status.message.contains("not the wave's plan now"));

    world.spec.approvals.push(WaveApproval {
        wave: "staging".into(),
        plan: digest.clone(),
    });
    world.generation += 1;
    let step = world.step(7);
    assert_eq!(
        step.actions,
        vec![Action::Approve {
            member: "east".into(),
            digest: plan(1)
        }]
    );
    assert_eq!(
        world.status.waves[0].approved_plan.as_deref(),
        Some(digest.as_str())
    );

    world.set("east", view(Applied::Manual, "1.1.0", Health::Healthy));
    let step = world.step(20);
    // The wave is done: east gets the template's own approval back, and the automatic prod
    // wave starts one member at a time.
    assert_eq!(
        step.actions,
        vec![
            Action::Apply {
                member: "east".into(),
                manual: false
            },
            Action::Apply {
                member: "north".into(),
                manual: false
            },
        ]
    );
    assert_eq!(world.status.waves[0].state, wave_state::DONE);
    assert_eq!(world.status.current_wave.as_deref(), Some("prod"));
    assert_eq!((world.status.done, world.status.in_flight), (1, 1));

    world.set("east", view(Applied::AsTemplate, "1.1.0", Health::Healthy));
    world.set(
        "north",
        view(
            Applied::AsTemplate,
            "1.0.0",
            Health::Progressing("installing".into()),
        ),
    );
    assert!(world.step(25).actions.is_empty(), "max in flight 1");
    world.set("north", view(Applied::AsTemplate, "1.1.0", Health::Healthy));
    assert_eq!(
        world.step(30).actions,
        vec![Action::Apply {
            member: "west".into(),
            manual: false
        }]
    );
    world.set("west", view(Applied::AsTemplate, "1.1.0", Health::Healthy));
    let step = world.step(40);
    assert_eq!(world.status.phase, Some(RolloutPhase::Completed));
    assert!(!step.active);
    assert_eq!(world.status.done, 3);
}

#[test]
fn a_failure_halts_everywhere_naming_the_member_and_stays_halted_until_the_spec_changes() {
    let mut world = World::new();
    world.spec.waves[0].approval = Some(WaveApprovalMode::Automatic);
    world.step(0);
    world.set(
        "east",
        view(
            Applied::AsTemplate,
            "1.1.0",
            Health::Failed("rolled back: acme-db.v1.1.1 did not become ready within 600 s".into()),
        ),
    );
    let step = world.step(10);
    assert!(step.actions.is_empty());
    assert_eq!(world.status.phase, Some(RolloutPhase::Halted));
    assert_eq!(
        world.status.message,
        "halted: cluster east in wave staging: rolled back: acme-db.v1.1.1 did not become ready within 600 s"
    );
    assert_eq!(world.member("north").state, state::UNTOUCHED);
    assert_eq!(world.status.waves[0].state, wave_state::FAILED);
    let halted = world
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "Halted")
        .unwrap();
    assert_eq!(halted.reason, "MemberFailed");

    // The member recovering by itself does not restart the rollout.
    world.set("east", view(Applied::AsTemplate, "1.1.0", Health::Healthy));
    assert!(world.step(20).actions.is_empty());
    assert_eq!(world.status.phase, Some(RolloutPhase::Halted));
    // A person's edit of the spec does.
    world.generation += 1;
    let step = world.step(30);
    assert_eq!(world.status.phase, Some(RolloutPhase::Progressing));
    assert_eq!(
        step.actions,
        vec![Action::Apply {
            member: "north".into(),
            manual: false
        }]
    );
}

#[test]
fn an_unreachable_member_holds_its_wave_until_the_deadline() {
    let mut world = World::new();
    world.spec.waves[0].approval = Some(WaveApprovalMode::Automatic);
    world.spec.wave_deadline_seconds = Some(60);
    world.step(0);
    world.set("east", Seen::Unreachable("connection refused".into()));
    let step = world.step(30);
    assert!(step.active && step.actions.is_empty());
    assert_eq!(world.member("east").state, state::UNREACHABLE);
    assert_eq!(world.status.phase, Some(RolloutPhase::Progressing));
    world.step(61);
    assert_eq!(world.status.phase, Some(RolloutPhase::Halted));
    assert!(
        world.status.message.starts_with(
            "halted: wave staging did not become healthy within 60 s; cluster east is Unreachable: unreachable: connection refused"
        ),
        "{}",
        world.status.message
    );
    assert_eq!(
        world
            .status
            .conditions
            .iter()
            .find(|c| c.type_ == "Halted")
            .unwrap()
            .reason,
        "WaveDeadlineExceeded"
    );
    // Members never changed are not asked for anything, not even while it was unreachable.
    assert_eq!(world.member("west").state, state::UNTOUCHED);
}

#[test]
fn a_wave_soaks_before_the_next_and_a_failure_while_soaking_halts() {
    let mut world = World::new();
    world.spec.waves[0].approval = Some(WaveApprovalMode::Automatic);
    world.spec.waves[0].soak_seconds = Some(100);
    world.step(0);
    world.set("east", view(Applied::AsTemplate, "1.1.0", Health::Healthy));
    assert!(world.step(10).actions.is_empty());
    assert_eq!(world.status.waves[0].state, wave_state::SOAKING);
    assert!(world.step(50).actions.is_empty());
    world.set(
        "east",
        view(
            Applied::AsTemplate,
            "1.1.0",
            Health::Failed("CrashLoopBackOff".into()),
        ),
    );
    world.step(60);
    assert_eq!(world.status.phase, Some(RolloutPhase::Halted));
}

#[test]
fn a_plan_that_changes_after_approval_is_not_approved_by_it() {
    let mut world = World::new();
    world.spec.waves = vec![Wave {
        name: "all".into(),
        max_in_flight: Some(1),
        ..Wave::default()
    }];
    world.step(0);
    for (i, m) in ["east", "north", "west"].iter().enumerate() {
        world.set(m, awaiting(&plan(i as u8)));
    }
    world.step(1);
    let digest = world.status.waves[0].plan_digest.clone().unwrap();
    world.spec.approvals.push(WaveApproval {
        wave: "all".into(),
        plan: digest,
    });
    world.generation += 1;
    assert_eq!(
        world.step(2).actions,
        vec![Action::Approve {
            member: "east".into(),
            digest: plan(0)
        }]
    );
    world.set(
        "east",
        view(
            Applied::Manual,
            "1.0.0",
            Health::Progressing("installing".into()),
        ),
    );
    // north's plan changes (its cluster moved) before its turn.
    world.set("north", awaiting(&plan(7)));
    world.set("east", view(Applied::Manual, "1.1.0", Health::Healthy));
    let step = world.step(3);
    assert!(step.actions.is_empty(), "{:?}", step.actions);
    assert_eq!(world.status.phase, Some(RolloutPhase::AwaitingApproval));
    assert!(
        world
            .status
            .message
            .contains("plan of cluster north changed")
    );
}

#[test]
fn a_fleet_rollback_returns_each_changed_member_to_what_it_ran() {
    let mut world = World::new();
    world.spec.waves[0].approval = Some(WaveApprovalMode::Automatic);
    world.step(0);
    world.set("east", view(Applied::AsTemplate, "1.1.0", Health::Healthy));
    world.step(1);
    world.set("north", view(Applied::AsTemplate, "1.1.0", Health::Healthy));
    world.spec.rollback = true;
    world.generation += 1;
    let step = world.step(2);
    assert_eq!(
        step.actions,
        vec![
            Action::RollBack {
                member: "east".into(),
                to: "acme-db.v1.0.0".into(),
                force: false,
            },
            Action::RollBack {
                member: "north".into(),
                to: "acme-db.v1.0.0".into(),
                force: false,
            },
        ]
    );
    assert_eq!(world.status.phase, Some(RolloutPhase::RollingBack));
    assert_eq!(world.member("west").state, state::UNTOUCHED);
    world.set("east", view(Applied::AsTemplate, "1.0.0", Health::Healthy));
    world.set("north", Seen::Unreachable("timed out".into()));
    let step = world.step(3);
    assert_eq!(
        step.actions,
        vec![Action::RollBack {
            member: "north".into(),
            to: "acme-db.v1.0.0".into(),
            force: false,
        }]
    );
    assert_eq!(world.member("east").state, state::ROLLED_BACK);
    world.set("north", view(Applied::AsTemplate, "1.0.0", Health::Healthy));
    let step = world.step(4);
    assert_eq!(world.status.phase, Some(RolloutPhase::RolledBack));
    assert!(!step.active);
}

#[test]
fn an_invalid_spec_writes_nothing_and_says_which_field() {
    let mut world = World::new();
    world.spec.waves[1].percent = Some(200);
    let step = world.step(0);
    assert!(step.actions.is_empty());
    assert_eq!(world.status.phase, Some(RolloutPhase::Invalid));
    assert_eq!(
        world.status.message,
        "spec.waves[1].percent: 200 is not between 1 and 100"
    );
}

#[test]
fn an_edit_in_the_member_is_written_again() {
    let mut world = World::new();
    world.spec.waves[0].approval = Some(WaveApprovalMode::Automatic);
    world.step(0);
    world.set("east", view(Applied::No, "1.0.0", Health::Healthy));
    let step = world.step(1);
    assert_eq!(
        step.actions,
        vec![Action::Apply {
            member: "east".into(),
            manual: false
        }]
    );
}

#[test]
fn wave_digests_bind_every_member_and_plan() {
    let a = wave_digest([("east", "sha256:1"), ("west", "sha256:2")]);
    assert_eq!(a, wave_digest([("west", "sha256:2"), ("east", "sha256:1")]));
    assert_ne!(a, wave_digest([("east", "sha256:2"), ("west", "sha256:1")]));
    assert_ne!(a, wave_digest([("east", "sha256:1")]));
}

#[test]
fn a_rollback_a_member_refuses_halts_naming_it_until_forced() {
    let mut world = World::new();
    world.spec.waves = vec![Wave {
        name: "all".into(),
        approval: Some(WaveApprovalMode::Automatic),
        ..Wave::default()
    }];
    world.step(0);
    world.set("east", view(Applied::AsTemplate, "1.1.0", Health::Healthy));
    world.set("north", view(Applied::AsTemplate, "1.1.0", Health::Healthy));
    world.set("west", view(Applied::AsTemplate, "1.1.0", Health::Healthy));
    world.step(1);
    world.spec.rollback = true;
    world.generation += 1;
    assert_eq!(world.step(2).actions.len(), 3);
    let refusing = |health| {
        let Seen::View(mut v) = view(Applied::AsTemplate, "1.1.0", health) else {
            unreachable!()
        };
        v.rollback_refused = Some("rollback from 1.1.0 to 1.0.0 crosses a minor version".into());
        Seen::View(v)
    };
    world.set("east", refusing(Health::Healthy));
    let step = world.step(3);
    assert_eq!(world.status.phase, Some(RolloutPhase::Halted));
    assert!(
        world.status.message.starts_with("rollback refused by east"),
        "{}",
        world.status.message
    );
    assert!(
        world
            .member("east")
            .message
            .contains("crosses a minor version")
    );
    assert!(
        !step
            .actions
            .iter()
            .any(|a| matches!(a, Action::RollBack { member, .. } if member == "east"))
    );
    world.spec.force_rollback = true;
    world.generation += 1;
    let step = world.step(4);
    assert!(step.actions.contains(&Action::RollBack {
        member: "east".into(),
        to: "acme-db.v1.0.0".into(),
        force: true,
    }));
}
