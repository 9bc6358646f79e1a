//! Which members each wave takes, and the checks a Rollout's spec must pass first.

use std::collections::{BTreeMap, BTreeSet};

use windlass_api::fleet::{MemberStatus, RolloutSpec, Wave};
use windlass_api::selector::label_selector_matches;

/// A member cluster as the hub knows it: its name and the labels of its kubeconfig Secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    pub labels: BTreeMap<String, String>,
}

/// A Rollout's spec that cannot be acted on, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("spec.waves: a rollout needs at least one wave")]
    NoWaves,
    #[error("spec.waves[{index}].name: {reason}")]
    WaveName { index: usize, reason: String },
    #[error("spec.waves[{index}].percent: {value} is not between 1 and 100")]
    Percent { index: usize, value: i64 },
    #[error("spec.waves[{index}]: give selector or percent, not both")]
    SelectorAndPercent { index: usize },
    #[error("spec.waves[{index}].maxInFlight: {value} is not at least 1")]
    MaxInFlight { index: usize, value: i64 },
    #[error("spec.waves[{index}].soakSeconds: {value} is negative")]
    Soak { index: usize, value: i64 },
    #[error("spec.waveDeadlineSeconds: {value} is not at least 1")]
    Deadline { value: i64 },
    #[error("spec.target: give exactly one of subscription and clusterVersion")]
    Target,
    #[error("spec.target.subscription.{field}: {reason}")]
    Subscription { field: &'static str, reason: String },
    #[error("spec.target.clusterVersion.version: must not be empty")]
    ClusterVersion,
    #[error("spec.approvals[{index}].wave: {wave:?} is not a wave of this rollout")]
    ApprovalWave { index: usize, wave: String },
    #[error(
        "spec.approvals[{index}].plan: {plan:?} is not a plan digest (sha256: and 64 hex digits)"
    )]
    ApprovalPlan { index: usize, plan: String },
}

/// Every check a spec must pass before anything is written to a member.
pub fn validate(spec: &RolloutSpec) -> Result<(), SpecError> {
    match (&spec.target.subscription, &spec.target.cluster_version) {
        (Some(sub), None) => {
            if sub.namespace.is_empty() {
                return Err(SpecError::Subscription {
                    field: "namespace",
                    reason: "must not be empty".into(),
                });
            }
            if sub.spec.package.is_empty() {
                return Err(SpecError::Subscription {
                    field: "spec.package",
                    reason: "must not be empty".into(),
                });
            }
        }
        (None, Some(cv)) => {
            if cv.version.is_empty() {
                return Err(SpecError::ClusterVersion);
            }
        }
        _ => return Err(SpecError::Target),
    }
    if spec.waves.is_empty() {
        return Err(SpecError::NoWaves);
    }
    let mut names = BTreeSet::new();
    for (index, wave) in spec.waves.iter().enumerate() {
        if wave.name.is_empty() {
            return Err(SpecError::WaveName {
                index,
                reason: "must not be empty".into(),
            });
        }
        if !names.insert(wave.name.as_str()) {
            return Err(SpecError::WaveName {
                index,
                reason: format!("{:?} is the name of an earlier wave", wave.name),
            });
        }
        if wave.selector.is_some() && wave.percent.is_some() {
            return Err(SpecError::SelectorAndPercent { index });
        }
        if let Some(value) = wave.percent.filter(|p| !(1..=100).contains(p)) {
            return Err(SpecError::Percent { index, value });
        }
        if let Some(value) = wave.max_in_flight.filter(|m| *m < 1) {
            return Err(SpecError::MaxInFlight { index, value });
        }
        if let Some(value) = wave.soak_seconds.filter(|s| *s < 0) {
            return Err(SpecError::Soak { index, value });
        }
    }
    if let Some(value) = spec.wave_deadline_seconds.filter(|d| *d < 1) {
        return Err(SpecError::Deadline { value });
    }
    for (index, approval) in spec.approvals.iter().enumerate() {
        if !names.contains(approval.wave.as_str()) {
            return Err(SpecError::ApprovalWave {
                index,
                wave: approval.wave.clone(),
            });
        }
        if !is_digest(&approval.plan) {
            return Err(SpecError::ApprovalPlan {
                index,
                plan: approval.plan.clone(),
            });
        }
    }
    Ok(())
}

pub(crate) fn is_digest(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// The members of each wave (in the spec's order, each sorted by name) and those no wave took.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Assignment {
    pub waves: Vec<Vec<String>>,
    pub unassigned: Vec<String>,
}

impl Assignment {
    /// The index of the wave `member` is in.
    pub fn wave_of(&self, member: &str) -> Option<usize> {
        self.waves
            .iter()
            .position(|wave| wave.binary_search_by(|m| m.as_str().cmp(member)).is_ok())
    }
}

/// Assigns members to waves. A member this rollout already changed (`recorded` with a state
/// past `Pending`) stays in the wave it was changed in, so a member joining the fleet or a
/// label edited mid-rollout never moves a changed cluster into a wave not yet judged. The rest
/// go, in the spec's order, to the first wave whose selector matches, or that still has room
/// in its share of the fleet (rounded up, in name order), or that takes every member left.
pub fn assign(waves: &[Wave], members: &[Member], recorded: &[MemberStatus]) -> Assignment {
    let mut sorted: Vec<&Member> = members.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let present: BTreeSet<&str> = sorted.iter().map(|m| m.name.as_str()).collect();
    let mut out = vec![Vec::new(); waves.len()];
    let mut taken = BTreeSet::new();
    for record in recorded {
        if record.state == "Pending" || !present.contains(record.name.as_str()) {
            continue;
        }
        if let Some(index) = waves.iter().position(|w| w.name == record.wave) {
            out[index].push(record.name.clone());
            taken.insert(record.name.clone());
        }
    }
    let total = sorted.len() as i64;
    for (index, wave) in waves.iter().enumerate() {
        let share = wave.percent.map(|p| ((p * total) + 99) / 100);
        for member in &sorted {
            if taken.contains(&member.name) {
                continue;
            }
            let fits = match (&wave.selector, share) {
                (Some(selector), _) => label_selector_matches(selector, &member.labels),
                (None, Some(share)) => (out[index].len() as i64) < share,
                (None, None) => true,
            };
            if fits {
                out[index].push(member.name.clone());
                taken.insert(member.name.clone());
            }
        }
    }
    for wave in &mut out {
        wave.sort();
    }
    let unassigned = sorted
        .iter()
        .filter(|m| !taken.contains(&m.name))
        .map(|m| m.name.clone())
        .collect();
    Assignment {
        waves: out,
        unassigned,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use windlass_api::fleet::{RolloutTarget, SubscriptionTarget, WaveApproval};

    fn member(name: &str, env: &str) -> Member {
        Member {
            name: name.into(),
            labels: [("env".to_string(), env.to_string())].into(),
        }
    }

    fn wave(name: &str) -> Wave {
        Wave {
            name: name.into(),
            ..Wave::default()
        }
    }

    fn by_env(name: &str, env: &str) -> Wave {
        Wave {
            selector: Some(LabelSelector {
                match_labels: Some([("env".to_string(), env.to_string())].into()),
                ..LabelSelector::default()
            }),
            ..wave(name)
        }
    }

    #[test]
    fn selectors_then_shares_then_the_rest() {
        let members: Vec<Member> = (0..10)
            .map(|i| member(&format!("c{i:02}"), if i < 2 { "staging" } else { "prod" }))
            .collect();
        let waves = vec![
            by_env("staging", "staging"),
            Wave {
                percent: Some(25),
                ..wave("canary")
            },
            wave("rest"),
        ];
        let a = assign(&waves, &members, &[]);
        assert_eq!(a.waves[0], ["c00", "c01"]);
        // 25% of 10, rounded up, from those left in name order.
        assert_eq!(a.waves[1], ["c02", "c03", "c04"]);
        assert_eq!(a.waves[2].len(), 5);
        assert!(a.unassigned.is_empty());
        assert_eq!(a.wave_of("c04"), Some(1));
        assert_eq!(a.wave_of("nope"), None);
    }

    #[test]
    fn members_no_wave_takes_are_listed() {
        let members = vec![member("a", "staging"), member("b", "prod")];
        let a = assign(&[by_env("staging", "staging")], &members, &[]);
        assert_eq!(a.waves, vec![vec!["a".to_string()]]);
        assert_eq!(a.unassigned, ["b"]);
    }

    #[test]
    fn a_changed_member_keeps_its_wave_when_labels_move() {
        let members = vec![member("a", "prod"), member("b", "prod")];
        let recorded = vec![MemberStatus {
            name: "a".into(),
            wave: "staging".into(),
            state: "Done".into(),
            ..MemberStatus::default()
        }];
        let a = assign(
            &[by_env("staging", "staging"), wave("prod")],
            &members,
            &recorded,
        );
        assert_eq!(a.waves, vec![vec!["a".to_string()], vec!["b".to_string()]]);
        // A pending record is not binding.
        let pending = vec![MemberStatus {
            state: "Pending".into(),
            ..recorded[0].clone()
        }];
        let a = assign(
            &[by_env("staging", "staging"), wave("prod")],
            &members,
            &pending,
        );
        assert_eq!(a.waves[0], Vec::<String>::new());
    }

    fn valid() -> RolloutSpec {
        RolloutSpec {
            fleet: "all".into(),
            target: RolloutTarget {
                subscription: Some(SubscriptionTarget {
                    namespace: "db".into(),
                    spec: serde_json::from_value(serde_json::json!({"package": "acme-db"}))
                        .unwrap(),
                    ..SubscriptionTarget::default()
                }),
                cluster_version: None,
            },
            waves: vec![wave("one")],
            ..RolloutSpec::default()
        }
    }

    #[test]
    fn bad_specs_name_their_field() {
        assert_eq!(validate(&valid()), Ok(()));
        type Edit = Box<dyn Fn(&mut RolloutSpec)>;
        let cases: Vec<(Edit, &str)> = vec![
            (Box::new(|s| s.waves.clear()), "spec.waves: "),
            (
                Box::new(|s| s.waves.push(wave("one"))),
                "spec.waves[1].name: \"one\"",
            ),
            (
                Box::new(|s| s.waves[0].percent = Some(0)),
                "spec.waves[0].percent: 0",
            ),
            (
                Box::new(|s| s.waves[0].max_in_flight = Some(0)),
                "spec.waves[0].maxInFlight",
            ),
            (
                Box::new(|s| s.waves[0].soak_seconds = Some(-1)),
                "spec.waves[0].soakSeconds",
            ),
            (
                Box::new(|s| s.wave_deadline_seconds = Some(0)),
                "spec.waveDeadlineSeconds",
            ),
            (Box::new(|s| s.target.subscription = None), "spec.target: "),
            (
                Box::new(|s| s.target.subscription.as_mut().unwrap().namespace.clear()),
                "spec.target.subscription.namespace",
            ),
            (
                Box::new(|s| {
                    s.approvals.push(WaveApproval {
                        wave: "two".into(),
                        plan: format!("sha256:{}", "a".repeat(64)),
                    })
                }),
                "spec.approvals[0].wave: \"two\"",
            ),
            (
                Box::new(|s| {
                    s.approvals.push(WaveApproval {
                        wave: "one".into(),
                        plan: "sha256:AB".into(),
                    })
                }),
                "spec.approvals[0].plan",
            ),
        ];
        for (edit, expected) in cases {
            let mut spec = valid();
            edit(&mut spec);
            let error = validate(&spec).unwrap_err().to_string();
            assert!(error.starts_with(expected), "{error} (wanted {expected})");
        }
    }
}
