//! Whether an update or a rollback may start, and what was overridden to let it.
//!
//! Forward updates follow the CVO's preconditions: a component reporting `Upgradeable=False`
//! blocks a minor or major update but not a patch; a major update, or one that skips a minor
//! version, is blocked. `acceptRisks` names what the admin accepts (a component's risk is
//! `ClusterOperatorUpgradeable-<component>`); `force` overrides every precondition. What was
//! overridden is recorded, word for word, in the history entry.
//!
//! Rollbacks go to a release the cluster completed before (its content is stored, never
//! re-pulled). A manual rollback stays within one major.minor unless forced, like the CVO's. An
//! automatic rollback undoes a failed update, to the release before it, at any distance (the
//! failed release never became healthy, so there is nothing of it to keep). Neither ever goes
//! back past an update that started an irreversible level: force does not change that.

use std::collections::BTreeSet;
use std::fmt;

use semver::Version;
use serde::{Deserialize, Serialize};

use crate::annotations::UPGRADEABLE_RISK_PREFIX;
use crate::history::{HistoryEntry, UpdateState};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum UpdateKind {
    Same,
    Patch,
    Minor,
    Major,
    Downgrade,
}

impl fmt::Display for UpdateKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UpdateKind::Same => "no change",
            UpdateKind::Patch => "patch update",
            UpdateKind::Minor => "minor update",
            UpdateKind::Major => "major update",
            UpdateKind::Downgrade => "downgrade",
        })
    }
}

/// Build metadata does not make another release; pre-releases do.
pub fn classify(current: &Version, target: &Version) -> UpdateKind {
    use std::cmp::Ordering::*;
    match target.cmp_precedence(current) {
        Equal => UpdateKind::Same,
        Less => UpdateKind::Downgrade,
        Greater if target.major != current.major => UpdateKind::Major,
        Greater if target.minor != current.minor => UpdateKind::Minor,
        Greater => UpdateKind::Patch,
    }
}

/// A component whose `Upgradeable` condition is False.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotUpgradeable {
    pub component: String,
    pub reason: String,
    pub message: String,
    /// The risk's own name when it is not a component's (`AdminAckRequired`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk: Option<String>,
}

impl NotUpgradeable {
    /// The risk name `acceptRisks` uses for this component.
    pub fn risk_name(&self) -> String {
        match &self.risk {
            Some(risk) => risk.clone(),
            None => format!("{UPGRADEABLE_RISK_PREFIX}-{}", self.component),
        }
    }
}

/// What the admin asked for beyond the plain update.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Overrides {
    pub force: bool,
    pub accept_risks: BTreeSet<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Verdict {
    Passed,
    Blocked,
    /// Blocking, but accepted by name in `acceptRisks`.
    Accepted,
    /// Blocking, but `force` was set.
    Forced,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreconditionResult {
    /// `ClusterOperatorUpgradeable-dns`, `MajorVersionUpdate`, ...
    pub name: String,
    pub verdict: Verdict,
    pub reason: String,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreconditionReport {
    pub kind: UpdateKind,
    pub results: Vec<PreconditionResult>,
}

impl PreconditionReport {
    pub fn allowed(&self) -> bool {
        self.results.iter().all(|r| r.verdict != Verdict::Blocked)
    }

    pub fn blocking(&self) -> impl Iterator<Item = &PreconditionResult> {
        self.results
            .iter()
            .filter(|r| r.verdict == Verdict::Blocked)
    }

    /// The history entry's `acceptedRisks`: what was let through and how; empty when nothing.
    pub fn accepted_risks(&self) -> String {
        let part = |verdict: Verdict, heading: &str| {
            let items: Vec<String> = self
                .results
                .iter()
                .filter(|r| r.verdict == verdict)
                .map(|r| format!("{} ({}: {})", r.name, r.reason, r.message))
                .collect();
            (!items.is_empty()).then(|| format!("{heading}: {}", items.join("; ")))
        };
        [
            part(Verdict::Accepted, "Accepted risks"),
            part(Verdict::Forced, "Forced through"),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(". ")
    }

    /// One line for a condition message: why the update is blocked, or that it may go.
    pub fn summary(&self) -> String {
        let blocked: Vec<String> = self
            .blocking()
            .map(|r| format!("{}: {}", r.name, r.message))
            .collect();
        if blocked.is_empty() {
            format!("the {} may start", self.kind)
        } else {
            format!("the {} is blocked: {}", self.kind, blocked.join("; "))
        }
    }
}

fn judged(
    name: String,
    reason: &str,
    message: String,
    overrides: &Overrides,
) -> PreconditionResult {
    let verdict = if overrides.accept_risks.contains(&name) {
        Verdict::Accepted
    } else if overrides.force {
        Verdict::Forced
    } else {
        Verdict::Blocked
    };
    PreconditionResult {
        name,
        verdict,
        reason: reason.into(),
        message,
    }
}

/// The preconditions of a forward update from `current` to `target`.
pub fn check_update(
    current: &Version,
    target: &Version,
    not_upgradeable: &[NotUpgradeable],
    overrides: &Overrides,
) -> PreconditionReport {
    let kind = classify(current, target);
    let mut results = Vec::new();
    match kind {
        UpdateKind::Same => {}
        UpdateKind::Downgrade => results.push(judged(
            "LowDesiredVersion".into(),
            "LowDesiredVersion",
            format!(
                "{target} is older than {current}; going back is a rollback, with its own rules"
            ),
            overrides,
        )),
        UpdateKind::Patch => {
            for n in not_upgradeable {
                results.push(PreconditionResult {
                    name: n.risk_name(),
                    verdict: Verdict::Passed,
                    reason: n.reason.clone(),
                    message: format!(
                        "{} is not upgradeable ({}), which does not block a patch update",
                        n.component, n.message
                    ),
                });
            }
        }
        UpdateKind::Minor | UpdateKind::Major => {
            if kind == UpdateKind::Major {
                results.push(judged(
                    "MajorVersionUpdate".into(),
                    "MajorVersionUpdate",
                    format!(
                        "{target} has a larger major version than {current}; only updates within a major version are supported"
                    ),
                    overrides,
                ));
            } else if target.minor > current.minor + 1 {
                results.push(judged(
                    "MultipleMinorVersionsUpdate".into(),
                    "MultipleMinorVersionsUpdate",
                    format!(
                        "{target} is more than one minor version beyond {current}; update to {}.{} first",
                        current.major,
                        current.minor + 1
                    ),
                    overrides,
                ));
            }
            for n in not_upgradeable {
                results.push(judged(
                    n.risk_name(),
                    &n.reason,
                    format!("{} is not upgradeable: {}", n.component, n.message),
                    overrides,
                ));
            }
        }
    }
    PreconditionReport { kind, results }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RollbackKind {
    /// Asked for by a person.
    Manual,
    /// windlass undoing an update that failed.
    Automatic,
}

/// Why a rollback is refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "camelCase", tag = "reason")]
pub enum RollbackRefusal {
    #[error("the cluster has no history to go back in")]
    NoHistory,
    #[error("{version} is the release the cluster is at")]
    AlreadyThere { version: String },
    #[error(
        "{version} never completed on this cluster, so windlass has no applied content to go back to"
    )]
    NotInHistory { version: String },
    #[error(
        "{from} started irreversible level(s) {}; the cluster cannot go back past it to {to}",
        levels.join(", ")
    )]
    IrreversibleCrossed {
        from: String,
        to: String,
        levels: Vec<String>,
    },
    #[error(
        "going from {from} back to {to} changes the major or minor version; only rollbacks within {from_minor} are allowed unless forced"
    )]
    CrossesMinor {
        from: String,
        to: String,
        from_minor: String,
    },
    #[error("nothing to undo: the newest update ({version}) completed")]
    NothingFailed { version: String },
    #[error(
        "automatic rollback goes only to the release before the failed update ({expected}), not {version}"
    )]
    NotThePrevious { version: String, expected: String },
}

/// A rollback that may go ahead.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RollbackPlan {
    /// The history entry to go back to (its version and image).
    pub target: HistoryEntry,
    /// Set when `force` let a manual rollback across a minor version; for the history entry.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub forced: String,
}

fn minor(v: &str) -> Option<(u64, u64)> {
    Version::parse(v).ok().map(|v| (v.major, v.minor))
}

/// Whether the cluster may go back from its newest history entry to `target`.
pub fn check_rollback(
    history: &[HistoryEntry],
    target: &Version,
    kind: RollbackKind,
    force: bool,
) -> Result<RollbackPlan, RollbackRefusal> {
    let current = history.first().ok_or(RollbackRefusal::NoHistory)?;
    let target_text = target.to_string();
    if current.version == target_text {
        return Err(RollbackRefusal::AlreadyThere {
            version: target_text,
        });
    }
    let index = history
        .iter()
        .enumerate()
        .skip(1)
        .find(|(_, e)| e.version == target_text && e.state == UpdateState::Completed)
        .map(|(i, _)| i)
        .ok_or_else(|| RollbackRefusal::NotInHistory {
            version: target_text.clone(),
        })?;
    if let Some(crossing) = history[..index]
        .iter()
        .find(|e| !e.crossed_irreversible.is_empty())
    {
        return Err(RollbackRefusal::IrreversibleCrossed {
            from: crossing.version.clone(),
            to: target_text,
            levels: crossing.crossed_irreversible.clone(),
        });
    }
    let mut forced = String::new();
    match kind {
        RollbackKind::Automatic => {
            if current.state == UpdateState::Completed {
                return Err(RollbackRefusal::NothingFailed {
                    version: current.version.clone(),
                });
            }
            let previous = history[1..]
                .iter()
                .find(|e| e.state == UpdateState::Completed)
                .expect("the target is a completed entry after the first");
            if previous.version != target_text {
                return Err(RollbackRefusal::NotThePrevious {
                    version: target_text,
                    expected: previous.version.clone(),
                });
            }
        }
        RollbackKind::Manual => {
            let (from, to) = (minor(&current.version), minor(&target_text));
            if from.is_none() || from != to {
                let refusal = RollbackRefusal::CrossesMinor {
                    from: current.version.clone(),
                    to: target_text.clone(),
                    from_minor: from
                        .map(|(a, b)| format!("{a}.{b}"))
                        .unwrap_or_else(|| current.version.clone()),
                };
                if !force {
                    return Err(refusal);
                }
                forced = format!("Forced rollback: {refusal}");
            }
        }
    }
    Ok(RollbackPlan {
        target: history[index].clone(),
        forced,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        Version::parse(text).unwrap()
    }

    #[test]
    fn updates_are_classified_by_semver_precedence() {
        let table = [
            ("4.1.0", "4.1.0", UpdateKind::Same),
            ("4.1.0", "4.1.0+build.2", UpdateKind::Same),
            ("4.1.0", "4.1.1", UpdateKind::Patch),
            ("4.1.0-rc.1", "4.1.0", UpdateKind::Patch),
            ("4.1.9", "4.2.0", UpdateKind::Minor),
            ("4.9.0", "5.0.0", UpdateKind::Major),
            ("4.2.0", "4.1.9", UpdateKind::Downgrade),
            ("4.1.0", "4.1.0-rc.1", UpdateKind::Downgrade),
        ];
        for (from, to, kind) in table {
            assert_eq!(classify(&v(from), &v(to)), kind, "{from} -> {to}");
        }
    }

    #[test]
    fn upgradeable_false_blocks_minor_not_patch_and_overrides_are_recorded() {
        let dns = NotUpgradeable {
            component: "dns".into(),
            reason: "MigrationPending".into(),
            message: "DNS records are migrating".into(),
            risk: None,
        };
        let blocked = [dns.clone()];
        let none = Overrides::default();
        let accept = Overrides {
            force: false,
            accept_risks: ["ClusterOperatorUpgradeable-dns".to_string()].into(),
        };
        let force = Overrides {
            force: true,
            accept_risks: BTreeSet::new(),
        };
        type Case<'a> = (&'a str, &'a str, &'a Overrides, bool, Option<Verdict>);
        let table: &[Case] = &[
            ("4.1.0", "4.1.1", &none, true, Some(Verdict::Passed)),
            ("4.1.0", "4.2.0", &none, false, Some(Verdict::Blocked)),
            ("4.1.0", "4.2.0", &accept, true, Some(Verdict::Accepted)),
            ("4.1.0", "4.2.0", &force, true, Some(Verdict::Forced)),
            ("4.1.0", "4.1.0", &none, true, None),
        ];
        for (from, to, overrides, allowed, verdict) in table {
            let report = check_update(&v(from), &v(to), &blocked, overrides);
            assert_eq!(report.allowed(), *allowed, "{from} -> {to}: {report:?}");
            assert_eq!(
                report.results.first().map(|r| r.verdict),
                *verdict,
                "{from} -> {to}"
            );
        }
        let report = check_update(&v("4.1.0"), &v("4.2.0"), &blocked, &none);
        assert_eq!(
            report.summary(),
            "the minor update is blocked: ClusterOperatorUpgradeable-dns: dns is not upgradeable: DNS records are migrating"
        );
        assert_eq!(report.accepted_risks(), "");
        let report = check_update(&v("4.1.0"), &v("4.2.0"), &blocked, &accept);
        assert_eq!(
            report.accepted_risks(),
            "Accepted risks: ClusterOperatorUpgradeable-dns (MigrationPending: dns is not upgradeable: DNS records are migrating)"
        );
        assert!(check_update(&v("4.1.0"), &v("4.2.0"), &[], &none).allowed());
    }

    #[test]
    fn giant_hops_and_downgrades_need_force() {
        let none = Overrides::default();
        let force = Overrides {
            force: true,
            ..Default::default()
        };
        for (from, to, name) in [
            ("4.1.0", "5.0.0", "MajorVersionUpdate"),
            ("4.1.0", "4.3.0", "MultipleMinorVersionsUpdate"),
            ("4.2.0", "4.1.0", "LowDesiredVersion"),
        ] {
            let report = check_update(&v(from), &v(to), &[], &none);
            assert!(!report.allowed(), "{from} -> {to}");
            assert_eq!(report.blocking().next().unwrap().name, name);
            let forced = check_update(&v(from), &v(to), &[], &force);
            assert!(forced.allowed());
            assert!(
                forced
                    .accepted_risks()
                    .starts_with(&format!("Forced through: {name}")),
                "{}",
                forced.accepted_risks()
            );
        }
    }

    fn entry(version: &str, state: UpdateState, crossed: &[&str]) -> HistoryEntry {
        HistoryEntry {
            state,
            started_time: jiff::Timestamp::UNIX_EPOCH,
            completion_time: None,
            version: version.into(),
            image: format!("r@sha256:{version}"),
            verified: true,
            accepted_risks: String::new(),
            crossed_irreversible: crossed.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn rollback_rules() {
        use RollbackKind::{Automatic, Manual};
        use UpdateState::{Completed as C, Partial as P};
        let patch_done = vec![entry("4.1.1", C, &[]), entry("4.1.0", C, &[])];
        let minor_failed = vec![
            entry("4.2.0", P, &[]),
            entry("4.1.1", C, &[]),
            entry("4.1.0", C, &[]),
        ];
        let minor_failed_after_irreversible =
            vec![entry("4.2.0", P, &["40"]), entry("4.1.1", C, &[])];
        let minor_done = vec![entry("4.2.0", C, &[]), entry("4.1.1", C, &[])];
        let irreversible_then_patch = vec![
            entry("4.2.1", C, &[]),
            entry("4.2.0", C, &["40"]),
            entry("4.1.1", C, &[]),
        ];
        type Case<'a> = (
            &'a [HistoryEntry],
            &'a str,
            RollbackKind,
            bool,
            Result<&'a str, &'a str>,
        );
        let table: &[Case] = &[
            (&patch_done, "4.1.0", Manual, false, Ok("")),
            (
                &patch_done,
                "4.1.1",
                Manual,
                false,
                Err("is the release the cluster is at"),
            ),
            (&patch_done, "4.0.0", Manual, false, Err("never completed")),
            (
                &patch_done,
                "4.1.0",
                Automatic,
                false,
                Err("nothing to undo"),
            ),
            (&minor_failed, "4.1.1", Automatic, false, Ok("")),
            (
                &minor_failed,
                "4.1.0",
                Automatic,
                false,
                Err("only to the release before the failed update (4.1.1)"),
            ),
            (
                &minor_failed,
                "4.1.1",
                Manual,
                false,
                Err("only rollbacks within 4.2 are allowed unless forced"),
            ),
            (&minor_failed, "4.1.1", Manual, true, Ok("Forced rollback")),
            (
                &minor_failed_after_irreversible,
                "4.1.1",
                Automatic,
                false,
                Err("4.2.0 started irreversible level(s) 40"),
            ),
            (
                &minor_failed_after_irreversible,
                "4.1.1",
                Manual,
                true,
                Err("cannot go back past it to 4.1.1"),
            ),
            (
                &minor_done,
                "4.1.1",
                Manual,
                false,
                Err("only rollbacks within 4.2"),
            ),
            (&minor_done, "4.1.1", Manual, true, Ok("Forced rollback")),
            (&irreversible_then_patch, "4.2.0", Manual, false, Ok("")),
            (
                &irreversible_then_patch,
                "4.1.1",
                Manual,
                true,
                Err("4.2.0 started irreversible level(s) 40"),
            ),
        ];
        for (history, target, kind, force, expected) in table {
            let got = check_rollback(history, &v(target), *kind, *force);
            match (expected, &got) {
                (Ok(part), Ok(plan)) if plan.forced.starts_with(part) => {
                    assert_eq!(plan.target.version, *target);
                }
                (Err(part), Err(refusal)) if refusal.to_string().contains(part) => {}
                _ => panic!(
                    "{} -> {target} {kind:?} force={force}: expected {expected:?}, got {got:?}",
                    history[0].version
                ),
            }
        }
        assert_eq!(
            check_rollback(&[], &v("1.0.0"), Manual, false),
            Err(RollbackRefusal::NoHistory)
        );
    }
}
