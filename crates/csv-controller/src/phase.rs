//! The CSV phase machine, OLM-compatible: Pending -> InstallReady -> Installing -> Succeeded
//! (InstallReady is skipped when the pass that finds the requirements met has applied already),
//! Failed when the deadline passes or a healthy operator breaks, Replacing -> Deleting when a
//! successor takes over. Pure: the reconciler gathers the inputs and applies the decision.

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use windlass_api::CsvPhase;

use crate::health::Health;

/// OLM's reasons, so tooling that reads OLM CSVs reads ours.
pub use windlass_api::names::reasons::csv as reason;

/// The CSV that names this one in `supersedes`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Successor {
    pub name: String,
    pub succeeded: bool,
}

#[derive(Clone, Debug)]
pub struct Inputs<'a> {
    pub current: Option<CsvPhase>,
    pub current_reason: &'a str,
    /// The spec changed since the status was written: a new install starts.
    pub new_generation: bool,
    pub successor: Option<Successor>,
    pub requirements_unmet: Option<String>,
    /// The install strategy cannot be applied as written.
    pub invalid_strategy: Option<String>,
    /// The install ServiceAccount was refused an object (the API server's message).
    pub forbidden: Option<String>,
    /// Health of the Deployments after applying; `None` when nothing was applied.
    pub health: Option<Health>,
    pub install_started: Option<Timestamp>,
    pub now: Timestamp,
    pub deadline: SignedDuration,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub phase: CsvPhase,
    pub reason: &'static str,
    pub message: String,
    /// Record `now` as the install start (the deadline counts from it).
    pub restart_clock: bool,
}

fn decide(phase: CsvPhase, reason: &'static str, message: impl Into<String>) -> Decision {
    Decision {
        phase,
        reason,
        message: message.into(),
        restart_clock: false,
    }
}

/// Whether the reconciler should apply the install strategy in this phase: not while
/// requirements are unmet, and never once a successor has taken the Deployments over. The pass
/// that finds the requirements met applies already, so the Deployments roll out one watch
/// round-trip sooner and the CSV moves straight on to Installing.
pub fn should_apply(inputs: &Inputs<'_>) -> bool {
    inputs.successor.is_none()
        && inputs.requirements_unmet.is_none()
        && inputs.invalid_strategy.is_none()
}

/// Whether `decision` only takes a CSV into Installing from before it (no phase yet, Pending or
/// InstallReady): the install started and nothing went wrong. That is usually over moments
/// later, when the rollout completes, so writing it can wait a few seconds
/// (`ProgressHold::wait_for_step`): a quick install goes straight to Succeeded.
pub fn is_first_step(current: Option<CsvPhase>, decision: &Decision) -> bool {
    decision.phase == CsvPhase::Installing
        && matches!(
            current,
            None | Some(CsvPhase::Pending) | Some(CsvPhase::InstallReady)
        )
}

pub fn next(inputs: &Inputs<'_>) -> Decision {
    if let Some(successor) = &inputs.successor {
        return if successor.succeeded {
            decide(
                CsvPhase::Deleting,
                reason::REPLACED,
                format!("replaced by {}", successor.name),
            )
        } else {
            decide(
                CsvPhase::Replacing,
                reason::BEING_REPLACED,
                format!("being replaced by {}", successor.name),
            )
        };
    }
    if let Some(message) = &inputs.invalid_strategy {
        return decide(CsvPhase::Failed, reason::INVALID_STRATEGY, message.clone());
    }
    if let Some(message) = &inputs.forbidden {
        // Tried again while the deadline runs: the platform team may grant what is missing.
        let expired = inputs
            .install_started
            .is_some_and(|started| inputs.now > started + inputs.deadline);
        let phase = if expired {
            CsvPhase::Failed
        } else {
            CsvPhase::Installing
        };
        return decide(phase, reason::INSTALL_FORBIDDEN, message.clone());
    }
    if let Some(message) = &inputs.requirements_unmet {
        return decide(
            CsvPhase::Pending,
            reason::REQUIREMENTS_NOT_MET,
            message.clone(),
        );
    }
    match inputs.current {
        None | Some(CsvPhase::Pending) | Some(CsvPhase::Unknown) => {
            // The pass that found the requirements met has applied the strategy already:
            // InstallReady would be over before anyone read it, so the CSV goes on to what its
            // Deployments say (one status write and one Event fewer per install).
            if inputs.health.is_some() {
                let mut d = decide(CsvPhase::Installing, reason::INSTALL_WAITING, "installing");
                d.restart_clock = true;
                return with_health(d, inputs);
            }
            return decide(
                CsvPhase::InstallReady,
                reason::ALL_REQUIREMENTS_MET,
                "all requirements met",
            );
        }
        Some(CsvPhase::InstallReady) => {
            let mut d = decide(CsvPhase::Installing, reason::INSTALL_WAITING, "installing");
            d.restart_clock = true;
            return with_health(d, inputs);
        }
        _ => {}
    }
    // A CSV that was being replaced but whose successor is gone or no longer supersedes it
    // (a rollback restores it, or the successor was deleted) owns its Deployments again: it
    // installs afresh, with a new deadline, rather than being judged by its old install clock.
    if inputs.new_generation || inputs.current == Some(CsvPhase::Replacing) {
        let message = if inputs.new_generation {
            "installing the changed spec"
        } else {
            "installing again: no successor supersedes it any more"
        };
        let mut d = decide(CsvPhase::Installing, reason::INSTALL_WAITING, message);
        d.restart_clock = true;
        return with_health(d, inputs);
    }
    let Some(health) = &inputs.health else {
        return decide(CsvPhase::Installing, reason::INSTALL_WAITING, "installing");
    };
    let was_healthy = inputs.current == Some(CsvPhase::Succeeded)
        || (inputs.current == Some(CsvPhase::Failed)
            && inputs.current_reason == reason::COMPONENT_UNHEALTHY);
    match health {
        Health::Healthy => decide(
            CsvPhase::Succeeded,
            reason::INSTALL_SUCCEEDED,
            "install strategy completed with no errors",
        ),
        Health::Unhealthy(message) if was_healthy => decide(
            CsvPhase::Failed,
            reason::COMPONENT_UNHEALTHY,
            message.clone(),
        ),
        Health::Progressing(_) if inputs.current == Some(CsvPhase::Succeeded) => {
            // A healthy operator whose pods are being replaced stays Succeeded until something
            // is known to be wrong.
            decide(
                CsvPhase::Succeeded,
                reason::INSTALL_SUCCEEDED,
                "install strategy completed with no errors",
            )
        }
        Health::Unhealthy(message) | Health::Progressing(message) => {
            // Once the deadline has passed the CSV stays Failed (with the same wording) until
            // the operator becomes healthy.
            let already_failed = inputs.current == Some(CsvPhase::Failed)
                && inputs.current_reason == reason::INSTALL_CHECK_FAILED;
            let started = inputs.install_started.unwrap_or(inputs.now);
            if already_failed || inputs.now.duration_since(started) > inputs.deadline {
                decide(
                    CsvPhase::Failed,
                    reason::INSTALL_CHECK_FAILED,
                    format!(
                        "not healthy within the progress deadline of {}s: {message}",
                        inputs.deadline.as_secs()
                    ),
                )
            } else {
                decide(
                    CsvPhase::Installing,
                    reason::INSTALL_WAITING,
                    message.clone(),
                )
            }
        }
    }
}

fn with_health(mut decision: Decision, inputs: &Inputs<'_>) -> Decision {
    match &inputs.health {
        Some(Health::Healthy) => decide(
            CsvPhase::Succeeded,
            reason::INSTALL_SUCCEEDED,
            "install strategy completed with no errors",
        ),
        Some(Health::Progressing(message)) | Some(Health::Unhealthy(message)) => {
            decision.message = message.clone();
            decision
        }
        None => decision,
    }
}

#[cfg(test)]
#[path = "phase_tests.rs"]
mod tests;
