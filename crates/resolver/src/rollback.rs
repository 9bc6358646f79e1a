//! Whether a rollback to an earlier version may go ahead.
//!
//! The rules: the target must be a version this installation ran before.
//! An automatic rollback of an upgrade that never Succeeded is always allowed, across any
//! distance. A manual rollback away from a version that Succeeded is refused when it crosses a
//! major or minor version, unless forced; the caller records a forced rollback (like the Cluster
//! Version Operator records accepted risks).

use semver::Version;
use serde::Serialize;
use windlass_catalog::range::precedence;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum RollbackReason {
    /// The new version never Succeeded; windlass is undoing its own upgrade.
    Automatic,
    /// A person asked to go back from a version that Succeeded.
    Manual,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RollbackRequest<'a> {
    pub installed: &'a Version,
    pub target: &'a Version,
    /// Versions this installation ran before (for example the Blueprint's history).
    pub previously_installed: &'a [Version],
    pub reason: RollbackReason,
    pub force: bool,
}

/// An allowed rollback; `forced` tells the caller to record that a rule was overridden.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RollbackDecision {
    pub target: Version,
    pub forced: bool,
    /// The rule that was overridden, when `forced`.
    pub overridden: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(tag = "reason", rename_all = "camelCase")]
pub enum RollbackRefused {
    #[error("rollback target {target} is the installed version")]
    SameVersion { target: Version },
    #[error("rollback target {target} was never installed here (history: {history})")]
    NotPreviouslyInstalled { target: Version, history: String },
    #[error(
        "rollback from {installed} to {target} crosses a {crossing} version; refused unless forced"
    )]
    CrossesVersion {
        installed: Version,
        target: Version,
        crossing: &'static str,
    },
}

impl RollbackRefused {
    /// A CamelCase constant for condition reasons.
    pub fn reason(&self) -> &'static str {
        match self {
            RollbackRefused::SameVersion { .. } => "RollbackToSameVersion",
            RollbackRefused::NotPreviouslyInstalled { .. } => "RollbackTargetNotInHistory",
            RollbackRefused::CrossesVersion { .. } => "RollbackCrossesVersion",
        }
    }
}

/// Decide a rollback. Being in the history is never overridable: windlass cannot know the old
/// version ever worked with this cluster's data otherwise.
pub fn check_rollback(req: &RollbackRequest<'_>) -> Result<RollbackDecision, RollbackRefused> {
    if precedence(req.installed, req.target).is_eq() {
        return Err(RollbackRefused::SameVersion {
            target: req.target.clone(),
        });
    }
    if !req
        .previously_installed
        .iter()
        .any(|v| precedence(v, req.target).is_eq())
    {
        return Err(RollbackRefused::NotPreviouslyInstalled {
            target: req.target.clone(),
            history: if req.previously_installed.is_empty() {
                "empty".into()
            } else {
                req.previously_installed
                    .iter()
                    .map(Version::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        });
    }
    let crossing = if req.installed.major != req.target.major {
        Some("major")
    } else if req.installed.minor != req.target.minor {
        Some("minor")
    } else {
        None
    };
    match (req.reason, crossing) {
        (RollbackReason::Automatic, _) | (_, None) => Ok(RollbackDecision {
            target: req.target.clone(),
            forced: false,
            overridden: None,
        }),
        (RollbackReason::Manual, Some(crossing)) if req.force => Ok(RollbackDecision {
            target: req.target.clone(),
            forced: true,
            overridden: Some(format!(
                "manual rollback from {} to {} crosses a {crossing} version",
                req.installed, req.target
            )),
        }),
        (RollbackReason::Manual, Some(crossing)) => Err(RollbackRefused::CrossesVersion {
            installed: req.installed.clone(),
            target: req.target.clone(),
            crossing,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn table() {
        use RollbackReason::*;
        // (installed, target, history, reason, force, expected: Ok(forced) or Err(reason))
        type Case<'a> = (
            &'a str,
            &'a str,
            &'a [&'a str],
            RollbackReason,
            bool,
            Result<bool, &'a str>,
        );
        let cases: &[Case] = &[
            ("1.2.4", "1.2.3", &["1.2.3"], Manual, false, Ok(false)),
            (
                "1.3.0",
                "1.2.3",
                &["1.2.3"],
                Manual,
                false,
                Err("RollbackCrossesVersion"),
            ),
            (
                "2.0.0",
                "1.9.0",
                &["1.9.0"],
                Manual,
                false,
                Err("RollbackCrossesVersion"),
            ),
            ("1.3.0", "1.2.3", &["1.2.3"], Manual, true, Ok(true)),
            ("2.0.0", "1.0.0", &["1.0.0"], Automatic, false, Ok(false)),
            (
                "1.3.0",
                "1.2.3",
                &["1.1.0"],
                Automatic,
                false,
                Err("RollbackTargetNotInHistory"),
            ),
            (
                "1.3.0",
                "1.2.3",
                &[],
                Manual,
                true,
                Err("RollbackTargetNotInHistory"),
            ),
            (
                "1.3.0",
                "1.3.0",
                &["1.3.0"],
                Manual,
                true,
                Err("RollbackToSameVersion"),
            ),
            // build metadata does not make a different version
            (
                "1.2.4",
                "1.2.3",
                &["1.2.3+build.7"],
                Manual,
                false,
                Ok(false),
            ),
        ];
        for (installed, target, history, reason, force, expected) in cases {
            let history: Vec<Version> = history.iter().map(|s| v(s)).collect();
            let (i, t) = (v(installed), v(target));
            let got = check_rollback(&RollbackRequest {
                installed: &i,
                target: &t,
                previously_installed: &history,
                reason: *reason,
                force: *force,
            });
            match (got, expected) {
                (Ok(d), Ok(forced)) => {
                    assert_eq!(d.forced, *forced, "{installed}->{target}");
                    assert_eq!(d.overridden.is_some(), *forced);
                }
                (Err(e), Err(r)) => assert_eq!(e.reason(), *r, "{installed}->{target}: {e}"),
                (got, want) => panic!("{installed}->{target}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn refusal_names_both_versions() {
        let (i, t) = (v("1.3.0"), v("1.2.3"));
        let e = check_rollback(&RollbackRequest {
            installed: &i,
            target: &t,
            previously_installed: std::slice::from_ref(&t),
            reason: RollbackReason::Manual,
            force: false,
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "rollback from 1.3.0 to 1.2.3 crosses a minor version; refused unless forced"
        );
    }
}
