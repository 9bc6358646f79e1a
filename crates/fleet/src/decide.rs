//! The next step of a rollout, from its spec, its last status and what each member showed.
//!
//! Level-triggered: the step depends on nothing but the input, so a hub that restarts (or a
//! second look a moment later) decides the same. What must survive between looks (which
//! members were changed, what they ran before, when a wave started and became healthy) is in
//! the status it returns.

use std::collections::BTreeMap;

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use sha2::{Digest, Sha256};
use windlass_api::{
    condition::{Condition, ConditionStatus, set_condition},
    config::Approval,
    fleet::{
        MemberPlan, MemberStatus, RolloutPhase, RolloutSpec, RolloutStatus, WaveApprovalMode,
        WaveStatus,
    },
    names::{conditions::rollout as types, reasons::rollout as reasons},
};

use crate::{
    observe::{Applied, Health, Seen, View},
    waves::{Member, assign, validate},
};

/// The default time a wave has to become healthy.
pub const DEFAULT_WAVE_DEADLINE_SECONDS: i64 = 1800;

/// Member states as `status.clusters[].state` shows them.
pub mod state {
    pub const PENDING: &str = "Pending";
    pub const AWAITING_APPROVAL: &str = "AwaitingApproval";
    pub const IN_PROGRESS: &str = "InProgress";
    pub const DONE: &str = "Done";
    pub const FAILED: &str = "Failed";
    pub const UNREACHABLE: &str = "Unreachable";
    pub const ROLLING_BACK: &str = "RollingBack";
    pub const ROLLED_BACK: &str = "RolledBack";
    /// Changed by nobody: a later wave that never started, or a rollout that halted first.
    pub const UNTOUCHED: &str = "Untouched";
}

/// Wave states as `status.waves[].state` shows them.
pub mod wave_state {
    pub const WAITING: &str = "Waiting";
    pub const AWAITING_APPROVAL: &str = "AwaitingApproval";
    pub const IN_PROGRESS: &str = "InProgress";
    pub const SOAKING: &str = "Soaking";
    pub const DONE: &str = "Done";
    pub const FAILED: &str = "Failed";
}

/// What the hub writes into a member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Write the target (with approval Manual while its wave waits for a person).
    Apply { member: String, manual: bool },
    /// Approve the member's own plan, by its digest.
    Approve { member: String, digest: String },
    /// Return the member to what it ran before (a CSV name or a release version); `force`
    /// past the member's own rollback rules.
    RollBack {
        member: String,
        to: String,
        force: bool,
    },
}

pub struct Input<'a> {
    /// The Rollout's name, for the commands its messages suggest.
    pub name: &'a str,
    pub spec: &'a RolloutSpec,
    pub generation: Option<i64>,
    pub last: &'a RolloutStatus,
    /// The Fleet's members now.
    pub members: &'a [Member],
    /// What each member showed; a member missing here was not looked at (it counts as
    /// unreachable).
    pub seen: &'a BTreeMap<String, Seen>,
    pub now: Timestamp,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub status: RolloutStatus,
    pub actions: Vec<Action>,
    /// Worth looking again soon: something is in flight, soaking or awaiting a deadline.
    pub active: bool,
}

/// The members whose state counts as changed by this rollout.
fn touched(state: &str) -> bool {
    !matches!(state, state::PENDING | state::UNTOUCHED)
}

/// `sha256:` over each member's name and plan digest, in name order: what approving a wave
/// names, so a plan that changes on any member needs approving again.
pub fn wave_digest<'a>(plans: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut plans: Vec<_> = plans.into_iter().collect();
    plans.sort();
    let mut hasher = Sha256::new();
    for (member, digest) in plans {
        hasher.update(member.as_bytes());
        hasher.update(b"\0");
        hasher.update(digest.as_bytes());
        hasher.update(b"\n");
    }
    format!("sha256:{:x}", hasher.finalize())
}

pub fn decide(input: &Input<'_>) -> Step {
    let spec = input.spec;
    let now = input.now;
    let mut status = RolloutStatus {
        conditions: input.last.conditions.clone(),
        observed_generation: input.generation,
        ..RolloutStatus::default()
    };
    if let Err(error) = validate(spec) {
        status.phase = Some(RolloutPhase::Invalid);
        status.message = error.to_string();
        condition(
            &mut status,
            types::HALTED,
            true,
            reasons::INVALID_SPEC,
            &error.to_string(),
            now,
        );
        return Step {
            status,
            actions: Vec::new(),
            active: false,
        };
    }
    let assignment = assign(&spec.waves, input.members, &input.last.clusters);
    let recorded: BTreeMap<&str, &MemberStatus> = input
        .last
        .clusters
        .iter()
        .map(|m| (m.name.as_str(), m))
        .collect();
    let last_waves: BTreeMap<&str, &WaveStatus> = input
        .last
        .waves
        .iter()
        .map(|w| (w.name.as_str(), w))
        .collect();
    let spec_changed = input.last.observed_generation != input.generation;
    // A halt holds until the spec changes: a person looks, fixes, and edits the rollout.
    let halted_before = !spec_changed && matches!(input.last.phase, Some(RolloutPhase::Halted));

    // Every member, judged from what it showed and what this rollout did to it before.
    let mut members: Vec<MemberStatus> = Vec::new();
    for (index, names) in assignment.waves.iter().enumerate() {
        for name in names {
            let before = recorded.get(name.as_str()).copied();
            members.push(judge(
                name,
                &spec.waves[index].name,
                before,
                input.seen.get(name),
                now,
            ));
        }
    }
    let mut actions = Vec::new();
    let mut waves: Vec<WaveStatus> = spec
        .waves
        .iter()
        .zip(&assignment.waves)
        .map(|(wave, names)| {
            let before = last_waves.get(wave.name.as_str());
            WaveStatus {
                name: wave.name.clone(),
                state: wave_state::WAITING.into(),
                members: names.clone(),
                plan_digest: before.and_then(|w| w.plan_digest.clone()),
                approved_plan: before.and_then(|w| w.approved_plan.clone()),
                started_time: before.and_then(|w| w.started_time.clone()),
                healthy_time: before.and_then(|w| w.healthy_time.clone()),
                completion_time: before.and_then(|w| w.completion_time.clone()),
            }
        })
        .collect();

    let mut phase;
    let mut message;
    let mut active = true;
    if spec.rollback {
        (phase, message) = roll_back(&mut members, input.seen, spec.force_rollback, &mut actions);
        active = phase == RolloutPhase::RollingBack;
        condition(
            &mut status,
            types::HALTED,
            true,
            reasons::ROLLED_BACK_BY_REQUEST,
            &message,
            now,
        );
    } else if let Some(failure) = first_failure(&members).filter(|_| !halted_before) {
        phase = RolloutPhase::Halted;
        message = failure;
        active = false;
    } else if halted_before {
        phase = RolloutPhase::Halted;
        message = input.last.message.clone();
        active = false;
    } else if spec.paused {
        phase = RolloutPhase::Paused;
        message = "paused: nothing is written to any member until spec.paused is false".into();
        active = false;
    } else {
        (phase, message) = (
            RolloutPhase::Completed,
            "every wave is done and healthy".into(),
        );
        for index in 0..spec.waves.len() {
            let outcome = advance(index, input, &mut members, &mut waves[index], &mut actions);
            match outcome {
                Advance::Done => {}
                Advance::Stop(p, m) => {
                    phase = p;
                    message = m;
                    break;
                }
                Advance::Halt(m) => {
                    phase = RolloutPhase::Halted;
                    message = m;
                    break;
                }
            }
        }
        if phase == RolloutPhase::Completed {
            active = false;
        }
    }
    if phase == RolloutPhase::Halted {
        actions.clear();
        condition(
            &mut status,
            types::HALTED,
            true,
            halt_reason(&message),
            &message,
            now,
        );
        for wave in &mut waves {
            if wave.state != wave_state::DONE
                && wave.members.iter().any(|m| {
                    members
                        .iter()
                        .any(|s| &s.name == m && s.state == state::FAILED)
                        || members
                            .iter()
                            .any(|s| &s.name == m && s.state == state::UNREACHABLE)
                })
            {
                wave.state = wave_state::FAILED.into();
            }
        }
    } else if !spec.rollback {
        condition(
            &mut status,
            types::HALTED,
            false,
            reasons::NOT_HALTED,
            "",
            now,
        );
    }
    condition(
        &mut status,
        types::COMPLETED,
        phase == RolloutPhase::Completed,
        if phase == RolloutPhase::Completed {
            reasons::ALL_WAVES_DONE
        } else {
            reasons::NOT_DONE
        },
        if phase == RolloutPhase::Completed {
            &message
        } else {
            ""
        },
        now,
    );
    for member in &mut members {
        if member.state == state::PENDING
            && phase != RolloutPhase::Progressing
            && phase != RolloutPhase::AwaitingApproval
        {
            member.state = state::UNTOUCHED.into();
        }
    }
    status.current_wave = waves
        .iter()
        .find(|w| w.state != wave_state::DONE)
        .or(waves.last())
        .map(|w| w.name.clone());
    status.total = members.len() as i64;
    status.done = count(&members, &[state::DONE]);
    status.in_flight = count(
        &members,
        &[
            state::IN_PROGRESS,
            state::AWAITING_APPROVAL,
            state::ROLLING_BACK,
        ],
    );
    status.failed = count(&members, &[state::FAILED, state::UNREACHABLE]);
    status.phase = Some(phase);
    status.message = message;
    status.waves = waves;
    status.clusters = members;
    status.unassigned = assignment.unassigned;
    Step {
        status,
        actions,
        active,
    }
}

fn count(members: &[MemberStatus], states: &[&str]) -> i64 {
    members
        .iter()
        .filter(|m| states.contains(&m.state.as_str()))
        .count() as i64
}

fn halt_reason(message: &str) -> &'static str {
    if message.contains("did not become healthy within") {
        reasons::WAVE_DEADLINE_EXCEEDED
    } else {
        reasons::MEMBER_FAILED
    }
}

fn condition(
    status: &mut RolloutStatus,
    type_: &str,
    on: bool,
    reason: &str,
    message: &str,
    now: Timestamp,
) {
    let value = if on {
        ConditionStatus::True
    } else {
        ConditionStatus::False
    };
    set_condition(
        &mut status.conditions,
        Condition::new(type_, value, reason, message).observed(status.observed_generation),
        now,
    );
}

/// One member's state from what it showed, keeping what this rollout learned of it before.
fn judge(
    name: &str,
    wave: &str,
    before: Option<&MemberStatus>,
    seen: Option<&Seen>,
    now: Timestamp,
) -> MemberStatus {
    let mut out = MemberStatus {
        name: name.into(),
        wave: wave.into(),
        state: before
            .map_or(state::PENDING, |b| b.state.as_str())
            .to_string(),
        message: String::new(),
        previous: before.and_then(|b| b.previous.clone()),
        current: before.and_then(|b| b.current.clone()),
        plan: before.and_then(|b| b.plan.clone()),
        last_seen_time: before.and_then(|b| b.last_seen_time.clone()),
    };
    if out.state == state::UNTOUCHED {
        out.state = state::PENDING.into();
    }
    let view = match seen {
        None => {
            if touched(&out.state) {
                out.state = state::UNREACHABLE.into();
            }
            out.message = "not looked at".into();
            return out;
        }
        Some(Seen::Unreachable(error)) => {
            if touched(&out.state) {
                out.state = state::UNREACHABLE.into();
            }
            out.message = format!("unreachable: {error}");
            return out;
        }
        Some(Seen::View(view)) => view,
    };
    out.last_seen_time = Some(Time(now));
    out.current = view.version.clone();
    let was_rolling_back = matches!(out.state.as_str(), state::ROLLING_BACK | state::ROLLED_BACK);
    if was_rolling_back {
        // roll_back judges these.
        return with_view(out, view);
    }
    if view.applied == Applied::No && !touched(&out.state) {
        out.state = state::PENDING.into();
        return out;
    }
    if view.applied == Applied::No {
        // Changed by this rollout before, now asking for something else: someone edited it
        // in the member, or the hub's write did not land. It is applied again.
        out.state = state::IN_PROGRESS.into();
        out.message = REWRITE.into();
        return out;
    }
    with_view(out, view)
}

fn with_view(mut out: MemberStatus, view: &View) -> MemberStatus {
    let rolling = matches!(out.state.as_str(), state::ROLLING_BACK | state::ROLLED_BACK);
    match &view.health {
        Health::Healthy => {
            if !rolling {
                out.state = state::DONE.into();
            }
            out.message = match &view.version {
                Some(v) => format!("runs {v}"),
                None => "healthy".into(),
            };
        }
        Health::Progressing(words) => {
            if !rolling {
                out.state = state::IN_PROGRESS.into();
            }
            out.message = words.clone();
        }
        Health::AwaitingApproval { digest, summary } => {
            if !rolling {
                out.state = state::AWAITING_APPROVAL.into();
            }
            out.message = "its plan waits for the wave's approval".into();
            let approved = out
                .plan
                .as_ref()
                .is_some_and(|p| p.approved && p.digest == *digest);
            out.plan = Some(MemberPlan {
                digest: digest.clone(),
                approved,
                summary: summary.clone(),
            });
        }
        Health::Failed(words) => {
            if !rolling {
                out.state = state::FAILED.into();
            }
            out.message = words.clone();
        }
    }
    out
}

fn first_failure(members: &[MemberStatus]) -> Option<String> {
    members.iter().find(|m| m.state == state::FAILED).map(|m| {
        format!(
            "halted: cluster {} in wave {}: {}",
            m.name, m.wave, m.message
        )
    })
}

enum Advance {
    Done,
    Stop(RolloutPhase, String),
    Halt(String),
}

/// Writes the target into a member not yet changed, remembering what it ran before.
fn start(
    member: &mut MemberStatus,
    seen: &BTreeMap<String, Seen>,
    manual: bool,
    actions: &mut Vec<Action>,
) {
    if member.previous.is_none()
        && let Some(Seen::View(view)) = seen.get(&member.name)
    {
        member.previous = view.running.clone();
    }
    actions.push(Action::Apply {
        member: member.name.clone(),
        manual,
    });
    member.state = state::IN_PROGRESS.into();
    member.message = if manual {
        "asked for its plan"
    } else {
        "target written"
    }
    .into();
}

/// Whether the member asks for something else than the target after this rollout changed it.
fn drifted(member: &MemberStatus) -> bool {
    member.state == state::IN_PROGRESS && member.message == REWRITE
}

const REWRITE: &str = "the member's object no longer asks for the target; writing it again";

fn waiting_for(members: &[MemberStatus], in_wave: &[usize], wave: &str) -> String {
    let waiting = in_wave
        .iter()
        .map(|&i| &members[i])
        .filter(|m| m.state != state::DONE && m.state != state::PENDING)
        .map(|m| format!("{} ({})", m.name, m.message))
        .collect::<Vec<_>>();
    if waiting.is_empty() {
        format!("wave {wave}: starting")
    } else {
        format!("wave {wave}: waiting for {}", waiting.join(", "))
    }
}

/// Moves one wave on; says whether the next may start.
fn advance(
    index: usize,
    input: &Input<'_>,
    members: &mut [MemberStatus],
    wave_status: &mut WaveStatus,
    actions: &mut Vec<Action>,
) -> Advance {
    let (spec, seen, now, name) = (input.spec, input.seen, input.now, input.name);
    let wave = &spec.waves[index];
    if wave_status.completion_time.is_some() {
        wave_status.state = wave_state::DONE.into();
        return Advance::Done;
    }
    let manual = wave.approval.unwrap_or(if index == 0 {
        WaveApprovalMode::Manual
    } else {
        WaveApprovalMode::Automatic
    }) == WaveApprovalMode::Manual;
    let template_manual = spec
        .target
        .subscription
        .as_ref()
        .is_some_and(|s| s.spec.approval == Approval::Manual);
    let in_wave: Vec<usize> = members
        .iter()
        .enumerate()
        .filter(|(_, m)| m.wave == wave.name)
        .map(|(i, _)| i)
        .collect();
    let started = wave_status.started_time.get_or_insert(Time(now)).0;
    let deadline = spec
        .wave_deadline_seconds
        .unwrap_or(DEFAULT_WAVE_DEADLINE_SECONDS);
    if in_wave.iter().all(|&i| members[i].state == state::DONE) {
        // A member its Manual wave left asking for approval gets the template's own approval
        // back once it runs the target.
        for &i in &in_wave {
            if let Some(Seen::View(view)) = seen.get(&members[i].name)
                && view.applied == Applied::Manual
                && !template_manual
            {
                actions.push(Action::Apply {
                    member: members[i].name.clone(),
                    manual: false,
                });
            }
        }
        let healthy_since = wave_status.healthy_time.get_or_insert(Time(now)).0;
        let soak = wave.soak_seconds.unwrap_or(0);
        let soaked = now.as_second() - healthy_since.as_second();
        if soaked >= soak {
            wave_status.state = wave_state::DONE.into();
            wave_status.completion_time = Some(Time(now));
            return Advance::Done;
        }
        wave_status.state = wave_state::SOAKING.into();
        return Advance::Stop(
            RolloutPhase::Progressing,
            format!(
                "wave {} is healthy; soaking {} s more before the next wave",
                wave.name,
                soak - soaked
            ),
        );
    }
    wave_status.healthy_time = None;
    if now.as_second() - started.as_second() > deadline {
        let laggard = in_wave
            .iter()
            .map(|&i| &members[i])
            .find(|m| m.state != state::DONE)
            .map(|m| format!("cluster {} is {}: {}", m.name, m.state, m.message))
            .unwrap_or_default();
        return Advance::Halt(format!(
            "halted: wave {} did not become healthy within {deadline} s; {laggard}",
            wave.name
        ));
    }
    let max_in_flight = wave.max_in_flight.map_or(usize::MAX, |m| m as usize);
    // A member that does not answer holds a place in flight even before it was changed: what
    // it runs is not known, and the wave waits for it.
    let answers = |name: &str| matches!(seen.get(name), Some(Seen::View(_)));
    let mut in_flight = in_wave
        .iter()
        .filter(|&&i| {
            matches!(
                members[i].state.as_str(),
                state::IN_PROGRESS | state::UNREACHABLE
            ) || (members[i].state == state::PENDING && !answers(&members[i].name))
        })
        .count();
    for &i in &in_wave {
        if drifted(&members[i]) {
            actions.push(Action::Apply {
                member: members[i].name.clone(),
                manual,
            });
        }
    }
    wave_status.state = wave_state::IN_PROGRESS.into();
    if !manual {
        for &i in &in_wave {
            if members[i].state == state::PENDING
                && answers(&members[i].name)
                && in_flight < max_in_flight
            {
                start(&mut members[i], seen, false, actions);
                in_flight += 1;
            }
        }
        return Advance::Stop(
            RolloutPhase::Progressing,
            waiting_for(members, &in_wave, &wave.name),
        );
    }
    // A Manual wave: every member shows its own plan first, and one approval of the wave's
    // digest (bound to every plan in it) lets them install, max-in-flight at a time.
    for &i in &in_wave {
        if members[i].state == state::PENDING && answers(&members[i].name) {
            start(&mut members[i], seen, true, actions);
        }
    }
    let approved_plans: Vec<&str> = spec
        .approvals
        .iter()
        .filter(|a| a.wave == wave.name)
        .map(|a| a.plan.as_str())
        .collect();
    if wave_status.approved_plan.is_none() {
        let shown = in_wave.iter().all(|&i| {
            matches!(
                members[i].state.as_str(),
                state::AWAITING_APPROVAL | state::DONE
            )
        });
        if !shown {
            return Advance::Stop(
                RolloutPhase::Progressing,
                waiting_for(members, &in_wave, &wave.name),
            );
        }
        let digest = wave_digest(
            in_wave
                .iter()
                .map(|&i| &members[i])
                .filter(|m| m.state == state::AWAITING_APPROVAL)
                .filter_map(|m| {
                    m.plan
                        .as_ref()
                        .map(|p| (m.name.as_str(), p.digest.as_str()))
                }),
        );
        wave_status.plan_digest = Some(digest.clone());
        if !approved_plans.contains(&digest.as_str()) {
            wave_status.state = wave_state::AWAITING_APPROVAL.into();
            let stale = if approved_plans.is_empty() {
                ""
            } else {
                " (the digest approved before is not the wave's plan now: a member's plan changed)"
            };
            return Advance::Stop(
                RolloutPhase::AwaitingApproval,
                format!(
                    "wave {} waits for approval of its plans{stale}: windlass fleet plan {name}, then windlass fleet approve {name} --plan {digest}",
                    wave.name
                ),
            );
        }
        wave_status.approved_plan = Some(digest);
        for &i in &in_wave {
            if let Some(plan) = &mut members[i].plan {
                plan.approved = true;
            }
        }
    }
    for &i in &in_wave {
        if members[i].state != state::AWAITING_APPROVAL || in_flight >= max_in_flight {
            continue;
        }
        let Some(plan) = members[i].plan.clone() else {
            continue;
        };
        if !plan.approved {
            // Its plan changed after the wave was approved: the approval does not cover it.
            wave_status.approved_plan = None;
            wave_status.state = wave_state::AWAITING_APPROVAL.into();
            return Advance::Stop(
                RolloutPhase::AwaitingApproval,
                format!(
                    "wave {}: the plan of cluster {} changed after the wave was approved; approve the wave again",
                    wave.name, members[i].name
                ),
            );
        }
        actions.push(Action::Approve {
            member: members[i].name.clone(),
            digest: plan.digest,
        });
        members[i].state = state::IN_PROGRESS.into();
        members[i].message = "plan approved".into();
        in_flight += 1;
    }
    Advance::Stop(
        RolloutPhase::Progressing,
        waiting_for(members, &in_wave, &wave.name),
    )
}

/// A fleet rollback: every member this rollout changed goes back to what it ran before.
fn roll_back(
    members: &mut [MemberStatus],
    seen: &BTreeMap<String, Seen>,
    force: bool,
    actions: &mut Vec<Action>,
) -> (RolloutPhase, String) {
    let mut left = Vec::new();
    let mut refused = Vec::new();
    let mut cannot = Vec::new();
    for m in members.iter_mut() {
        if !touched(&m.state) || m.state == state::ROLLED_BACK {
            continue;
        }
        let Some(previous) = m.previous.clone() else {
            m.state = state::FAILED.into();
            m.message = "installed by this rollout: nothing ran before to roll back to (delete its Subscription to uninstall)".into();
            cannot.push(m.name.clone());
            continue;
        };
        match seen.get(&m.name) {
            Some(Seen::View(view))
                if view.running.as_deref() == Some(previous.as_str()) && view.settled =>
            {
                m.state = state::ROLLED_BACK.into();
                m.message = format!("rolled back to {previous}");
            }
            // Asked before, and the member's own rules say no.
            Some(Seen::View(view))
                if !force && m.state == state::ROLLING_BACK && view.rollback_refused.is_some() =>
            {
                let words = view.rollback_refused.clone().unwrap_or_default();
                m.state = state::FAILED.into();
                m.message = format!(
                    "the member refuses the rollback to {previous}: {words} (windlass fleet rollback --force overrides)"
                );
                refused.push(m.name.clone());
            }
            Some(Seen::View(_)) => {
                // Asked each time until it runs it: the write is the same, so a member that
                // already has it sees no change.
                actions.push(Action::RollBack {
                    member: m.name.clone(),
                    to: previous.clone(),
                    force,
                });
                m.state = state::ROLLING_BACK.into();
                m.message = format!("rolling back to {previous}");
                left.push(m.name.clone());
            }
            _ => {
                // Asked again each time until it answers.
                actions.push(Action::RollBack {
                    member: m.name.clone(),
                    to: previous.clone(),
                    force,
                });
                m.state = state::ROLLING_BACK.into();
                m.message = format!("unreachable; will roll back to {previous} when it answers");
                left.push(m.name.clone());
            }
        }
    }
    let mut message = if left.is_empty() {
        "rolled back: every member this rollout changed runs what it ran before".to_string()
    } else {
        format!("rolling back {}", left.join(", "))
    };
    if !cannot.is_empty() {
        message.push_str(&format!(
            "; nothing to roll back to on {}",
            cannot.join(", ")
        ));
    }
    if !refused.is_empty() {
        let message = format!(
            "rollback refused by {}: see each cluster's message; windlass fleet rollback --force overrides; {message}",
            refused.join(", ")
        );
        return (RolloutPhase::Halted, message);
    }
    let phase = if left.is_empty() {
        RolloutPhase::RolledBack
    } else {
        RolloutPhase::RollingBack
    };
    (phase, message)
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
