//! What a Catalog's status should say after a poll: pure, so "an unchanged poll writes
//! nothing" is a unit test.

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use windlass_api::names::{conditions, reasons};
use windlass_api::{
    CatalogStatus,
    catalog::{CatalogPhase, HeldBackVersion},
    condition::{Condition, ConditionStatus, set_condition},
};
use windlass_kit::Notice;

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
    /// What is wrong with `spec.delisted` (unreadable versions, packages or versions the
    /// catalog does not have).
    pub delisting_problems: &'a [String],
}

/// At most this many held-back versions, problems, and findings per version are listed in
/// the status (the counts and the Events say how many more), so a catalog full of broken
/// bundles cannot make its Catalog object too large to store.
const MAX_LISTED: usize = 50;
const MAX_FINDINGS: usize = 10;
/// Characters kept of one finding or problem.
const MAX_MESSAGE: usize = 512;

fn bounded(text: &str) -> String {
    match text.char_indices().nth(MAX_MESSAGE) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}...", &text[..cut]),
    }
}

/// The held-back versions, the problems and the `ContentValid` condition for what is served.
fn listing(status: &mut CatalogStatus, observation: &Observation) -> Option<Condition> {
    let Some(served) = observation.served else {
        status.held_back = Vec::new();
        status.held_back_count = None;
        status.problems = observation
            .delisting_problems
            .iter()
            .take(MAX_LISTED)
            .map(|p| bounded(p))
            .collect();
        return None;
    };
    let state = &served.listing;
    status.held_back = state
        .held_back
        .iter()
        .take(MAX_LISTED)
        .map(|h| HeldBackVersion {
            package: h.package.clone(),
            bundle: h.bundle.clone(),
            version: h.version.as_ref().map(ToString::to_string),
            source: h.source.clone(),
            findings: h
                .findings
                .iter()
                .take(MAX_FINDINGS)
                .map(|f| bounded(f))
                .collect(),
        })
        .collect();
    status.held_back_count = Some(state.held_back.len() as i64);
    let problems: Vec<&String> = state
        .problems
        .iter()
        .chain(observation.delisting_problems)
        .collect();
    status.problems = problems
        .iter()
        .take(MAX_LISTED)
        .map(|p| bounded(p))
        .collect();
    let (condition_status, reason, message) = match (state.held_back.len(), problems.len()) {
        (0, 0) => (
            ConditionStatus::True,
            reasons::catalog::VALID,
            "every version passed lint and is offered".to_string(),
        ),
        (0, n) => (
            ConditionStatus::False,
            reasons::catalog::PROBLEMS_FOUND,
            format!(
                "every version is offered; {n} problem(s): {}",
                summarize(problems.iter().map(|p| p.as_str()))
            ),
        ),
        (held, n) => {
            let versions = summarize(state.held_back.iter().map(|h| {
                format!(
                    "{} {}",
                    h.package,
                    h.version
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_else(|| h.bundle.clone())
                )
            }));
            let more = if n > 0 {
                format!("; {n} other problem(s)")
            } else {
                String::new()
            };
            (
                ConditionStatus::False,
                reasons::catalog::VERSIONS_HELD_BACK,
                format!(
                    "{held} version(s) fail lint and are not offered ({versions}){more}; status.heldBack says why"
                ),
            )
        }
    };
    Some(
        Condition::new(
            conditions::catalog::CONTENT_VALID,
            condition_status,
            reason,
            message,
        )
        .observed(observation.generation),
    )
}

/// The first few items, and how many more.
fn summarize<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    let items: Vec<String> = items.into_iter().map(|s| s.as_ref().to_string()).collect();
    let shown: Vec<String> = items.iter().take(5).map(|s| bounded(s)).collect();
    match items.len().saturating_sub(shown.len()) {
        0 => shown.join(", "),
        more => format!("{}, and {more} more", shown.join(", ")),
    }
}

/// The Event a change in what the catalog holds back deserves: a warning naming the versions
/// newly held back, or a note that everything is offered again. `None` when nothing changed.
pub fn listing_notice(old: Option<&CatalogStatus>, new: &CatalogStatus) -> Option<Notice> {
    let key = |h: &HeldBackVersion| (h.package.clone(), h.bundle.clone(), h.source.clone());
    let before: std::collections::BTreeSet<_> = old
        .map(|s| s.held_back.iter().map(key).collect())
        .unwrap_or_default();
    let added: Vec<&HeldBackVersion> = new
        .held_back
        .iter()
        .filter(|h| !before.contains(&key(h)))
        .collect();
    if !added.is_empty() {
        let message = added
            .iter()
            .map(|h| {
                format!(
                    "{} {} from {}: {}",
                    h.package,
                    h.version.as_deref().unwrap_or(&h.bundle),
                    h.source,
                    h.findings.first().map(String::as_str).unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        return Some(Notice::warning(
            reasons::catalog::VERSIONS_HELD_BACK,
            format!("held back (not offered): {message}"),
        ));
    }
    (!before.is_empty() && new.held_back.is_empty()).then(|| {
        Notice::normal(
            "AllVersionsListed",
            "every version passed lint and is offered",
        )
    })
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
    match listing(&mut status, observation) {
        Some(valid) => {
            set_condition(&mut status.conditions, valid, observation.polled_at);
        }
        None => status
            .conditions
            .retain(|c| c.type_ != conditions::catalog::CONTENT_VALID),
    }

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
