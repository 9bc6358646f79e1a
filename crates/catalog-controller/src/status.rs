//! What a Catalog's status should say after a poll: pure, so "an unchanged poll writes
//! nothing" is a unit test.

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use windlass_api::names::{conditions, reasons};
use windlass_api::{
    CatalogStatus,
    catalog::CatalogPhase,
    condition::{Condition, ConditionStatus, set_condition},
};

use windlass_catalog_store::ServedCatalog;

/// Why the last poll failed, as the status and metrics show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// CamelCase condition reason (`PullFailed`, `InvalidContent`, ...).
    pub reason: &'static str,
    pub message: String,
    pub metric_label: &'static str,
}

impl From<&crate::source::SourceError> for Failure {
    fn from(error: &crate::source::SourceError) -> Failure {
        Failure {
            reason: error.reason(),
            message: error.to_string(),
            metric_label: error.metric_label(),
        }
    }
}

/// What the status is computed from.
#[derive(Clone, Copy, Debug)]
pub struct Observation<'a> {
    pub generation: Option<i64>,
    /// `None` when the last poll succeeded.
    pub failure: Option<&'a Failure>,
    /// What the store serves for this catalog now (the last good content).
    pub served: Option<&'a ServedCatalog>,
    /// Bundles the catalog lists without an image (they cannot be installed).
    pub without_image: &'a [String],
    /// Where the content comes from, for messages ("image r/c:1", "the built-in catalog").
    pub source: &'a str,
    /// When the poll that produced this observation ran.
    pub polled_at: Timestamp,
}

/// Something a person would want to see in `kubectl describe`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transition {
    /// Now serving (first read, or recovered).
    Serving { message: String },
    /// Still serving, new content.
    ContentChanged { message: String },
    /// The last poll failed.
    Unreachable {
        reason: &'static str,
        message: String,
    },
}

/// The status to write, or `None` when the current one already says it all.
#[derive(Clone, Debug, PartialEq)]
pub struct Update {
    pub status: CatalogStatus,
    pub transition: Option<Transition>,
}

fn served_summary(served: &ServedCatalog) -> String {
    format!(
        "{} packages ({} bundles) at {}",
        served.catalog.packages.len(),
        served.bundle_count(),
        served.digest
    )
}

/// The digest the served content was read at, for the `Verified` message.
fn served_summary_digest(observation: &Observation) -> String {
    observation
        .served
        .map(|s| format!("content at {}", s.digest))
        .unwrap_or_default()
}

/// The status of a Catalog whose first read has started: `Pending`, `Serving=Unknown`.
/// `None` once anything was written (a read never sends a Catalog back to Pending).
pub fn pending(
    current: Option<&CatalogStatus>,
    generation: Option<i64>,
    source: &str,
    now: Timestamp,
) -> Option<CatalogStatus> {
    if current.is_some_and(|s| s.phase.is_some()) {
        return None;
    }
    let mut status = current.cloned().unwrap_or_default();
    status.phase = Some(CatalogPhase::Pending);
    status.observed_generation = generation;
    set_condition(
        &mut status.conditions,
        Condition::new(
            conditions::catalog::SERVING,
            ConditionStatus::Unknown,
            "Reading",
            format!("reading {source}"),
        )
        .observed(generation),
        now,
    );
    Some(status)
}

/// The status after `observation`. Timestamps move only when something else changed, so a
/// poll that finds the same content writes nothing.
pub fn next(current: Option<&CatalogStatus>, observation: &Observation) -> Option<Update> {
    let old = current.cloned().unwrap_or_default();
    let mut status = old.clone();
    status.observed_generation = observation.generation;
    status.resolved_digest = observation.served.map(|s| s.digest.clone());
    status.packages = observation.served.map(|s| s.catalog.packages.len() as i64);
    let verification = observation.served.and_then(|s| s.verification.as_ref());
    status.verified = verification.map(|v| v.verified);
    status.verified_by = verification
        .map(|v| v.verified_by.clone())
        .unwrap_or_default();
    match verification {
        Some(v) => {
            let reason = if v.verified {
                reasons::catalog::VERIFIED
            } else if v.covered {
                reasons::catalog::UNSIGNED_REPORTED
            } else {
                reasons::catalog::NOT_COVERED
            };
            set_condition(
                &mut status.conditions,
                Condition::new(
                    conditions::catalog::VERIFIED,
                    if v.verified {
                        ConditionStatus::True
                    } else {
                        ConditionStatus::False
                    },
                    reason,
                    format!("{}: {}", served_summary_digest(observation), v.summary),
                )
                .observed(observation.generation),
                observation.polled_at,
            );
        }
        None => status
            .conditions
            .retain(|c| c.type_ != conditions::catalog::VERIFIED),
    }
    let condition = match (observation.failure, observation.served) {
        (None, Some(served)) => {
            status.phase = Some(CatalogPhase::Serving);
            let mut message = format!(
                "serving {} from {}",
                served_summary(served),
                observation.source
            );
            if let Some(mirrored) = &served.pulled_from {
                message.push_str(&format!(
                    ", read from the mirror {} (ImageMirrorSet {})",
                    mirrored.reference, mirrored.mirror_set
                ));
            }
            if !observation.without_image.is_empty() {
                message.push_str(&format!(
                    "; {} bundles have no image and cannot be installed: {}",
                    observation.without_image.len(),
                    observation.without_image.join(", ")
                ));
            }
            Condition::new(
                conditions::catalog::SERVING,
                ConditionStatus::True,
                reasons::catalog::CONTENT_SERVED,
                message,
            )
        }
        (failure, served) => {
            let (reason, error) = match failure {
                Some(f) => (f.reason, f.message.clone()),
                None => ("NotRead", "the catalog has not been read".to_string()),
            };
            status.phase = Some(if reason == reasons::catalog::VERIFICATION_FAILED {
                CatalogPhase::Refused
            } else {
                CatalogPhase::Unreachable
            });
            let kept = match served {
                Some(served) => format!(
                    "; still serving the last good content: {}",
                    served_summary(served)
                ),
                None => "; nothing is served from this catalog".to_string(),
            };
            Condition::new(
                conditions::catalog::SERVING,
                ConditionStatus::False,
                reason,
                format!("{error}{kept}"),
            )
        }
    }
    .observed(observation.generation);
    set_condition(
        &mut status.conditions,
        condition.clone(),
        observation.polled_at,
    );

    let succeeded = observation.failure.is_none() && observation.served.is_some();
    let first_success = succeeded && old.last_successful_poll_time.is_none();
    if status == old && !first_success {
        return None;
    }
    status.last_poll_time = Some(Time(observation.polled_at));
    if succeeded {
        status.last_successful_poll_time = Some(Time(observation.polled_at));
    }
    let transition = match (old.phase, status.phase) {
        (Some(CatalogPhase::Serving), Some(CatalogPhase::Serving)) => {
            (old.resolved_digest != status.resolved_digest).then(|| Transition::ContentChanged {
                message: condition.message.clone(),
            })
        }
        (_, Some(CatalogPhase::Serving)) => Some(Transition::Serving {
            message: condition.message.clone(),
        }),
        (Some(old), Some(new)) if old == new => None,
        (_, _) => Some(Transition::Unreachable {
            reason: observation.failure.map(|f| f.reason).unwrap_or("NotRead"),
            message: condition.message.clone(),
        }),
    };
    Some(Update { status, transition })
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
