//! What the spec asks for, compared with the revision recorded now: carry on, start a new
//! revision from the catalog, restore one from history (a manual rollback), or refuse.

use semver::Version;
use windlass_api::blueprint::{ResolvedBundle, RevisionOutcome, RevisionRecord};
use windlass_api::names::reasons;
use windlass_resolver::rollback::{RollbackReason, RollbackRequest, check_rollback};

use super::{Input, Refusal, history};

pub(super) enum Intent {
    /// Nothing to install yet.
    Waiting(Refusal),
    /// The current revision is what the spec asks for, or (`held`) the spec asks for a target
    /// that failed, was rolled back and is held back.
    Continue {
        held: bool,
    },
    Start(Start),
    /// The spec asks for a rollback the rules refuse; the current revision stays.
    Refuse(Refusal),
}

/// A revision about to be recorded.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Start {
    pub csv_name: String,
    pub version: String,
    pub digest: Option<String>,
    pub kind: StartKind,
    /// For the history record and the Event.
    pub reason: String,
    pub forced: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StartKind {
    /// The bundle the Subscription resolved.
    Catalog,
    /// The stored content of an earlier revision.
    Restore { from: i64, automatic: bool },
}

pub(super) fn resolve(input: &Input<'_>, current: Option<&RevisionRecord>) -> Intent {
    let spec = input.spec;
    let target = match (spec.cluster_service_version_name.as_str(), &spec.bundle) {
        ("", Some(bundle)) => bundle.cluster_service_version_name.as_str(),
        ("", None) => {
            return Intent::Waiting(Refusal {
                reason: reasons::blueprint::WAITING_FOR_BUNDLE,
                message: "no bundle is resolved yet; the Subscription sets one".into(),
            });
        }
        (target, _) => target,
    };
    let resolved = spec
        .bundle
        .as_ref()
        .filter(|b| b.cluster_service_version_name == target);
    let Some(current) = current else {
        return match resolved {
            Some(bundle) => Intent::Start(from_catalog(input, bundle, None)),
            None => Intent::Waiting(Refusal {
                reason: reasons::blueprint::TARGET_NOT_RESOLVED,
                message: format!(
                    "target {target} is not the resolved bundle ({}) and nothing is installed yet",
                    spec.bundle
                        .as_ref()
                        .map_or("none", |b| b.cluster_service_version_name.as_str())
                ),
            }),
        };
    };
    if current.cluster_service_version_name == target && same_content(input, current, resolved) {
        return Intent::Continue { held: false };
    }
    if held_back(input, target, resolved) {
        return Intent::Continue { held: true };
    }
    let earlier = history::completed_with_csv(input, target);
    match (earlier, resolved) {
        (Some(earlier), resolved) if is_rollback(current, &earlier, resolved) => {
            manual_rollback(input, current, earlier)
        }
        (_, Some(bundle)) => Intent::Start(from_catalog(input, bundle, Some(current))),
        (_, None) => Intent::Refuse(Refusal {
            reason: reasons::blueprint::ROLLBACK_TARGET_NOT_IN_HISTORY,
            message: format!(
                "target {target} is neither the bundle resolved for this Blueprint ({}) nor a \
                 version that Completed here (history: {}); keeping {}",
                spec.bundle
                    .as_ref()
                    .map_or("none", |b| b.cluster_service_version_name.as_str()),
                completed_names(input),
                current.cluster_service_version_name
            ),
        }),
    }
}

/// A restored revision installs its stored content whatever the catalog says now; a catalog
/// revision is redone when the bundle's digest or the install settings changed.
fn same_content(
    input: &Input<'_>,
    current: &RevisionRecord,
    resolved: Option<&ResolvedBundle>,
) -> bool {
    if current.restored_from.is_some() {
        return true;
    }
    let digest_same = match (resolved.and_then(|b| b.digest.as_ref()), &current.digest) {
        (Some(wanted), Some(installed)) => wanted == installed,
        _ => true,
    };
    let settings = input
        .stored
        .iter()
        .find(|s| s.revision == current.revision)
        .and_then(|s| s.settings.as_ref());
    let settings_same = settings.is_none_or(|s| {
        s.config == input.spec.config && s.target_namespaces == input.spec.target_namespaces
    });
    digest_same && settings_same
}

/// The target failed and was rolled back: not retried until its digest changes or someone
/// other than this controller's bookkeeping changes the Blueprint.
fn held_back(input: &Input<'_>, target: &str, resolved: Option<&ResolvedBundle>) -> bool {
    input.status.held_back.as_ref().is_some_and(|held| {
        held.cluster_service_version_name == target
            && resolved.is_none_or(|b| b.digest == held.digest)
            && input.generation <= held.generation
    })
}

/// Going back to a version that ran here: always when the catalog did not resolve the target
/// (a person set it), and when it did, only if it is older than what runs now (otherwise it is
/// an ordinary upgrade that happens to be in history).
fn is_rollback(
    current: &RevisionRecord,
    earlier: &history::Candidate,
    resolved: Option<&ResolvedBundle>,
) -> bool {
    if resolved.is_none() {
        return true;
    }
    match (parse(&earlier.version), parse(&current.version)) {
        (Some(earlier), Some(current)) => {
            windlass_catalog::range::precedence(&earlier, &current).is_lt()
        }
        _ => false,
    }
}

fn manual_rollback(
    input: &Input<'_>,
    current: &RevisionRecord,
    earlier: history::Candidate,
) -> Intent {
    if !history::is_stored(input, earlier.revision) {
        return Intent::Refuse(content_missing(input, &earlier));
    }
    let (Some(installed), Some(target)) = (parse(&current.version), parse(&earlier.version)) else {
        return Intent::Refuse(Refusal {
            reason: reasons::blueprint::INVALID_VERSION,
            message: format!(
                "cannot compare versions {} and {} for a rollback",
                current.version, earlier.version
            ),
        });
    };
    let previously: Vec<Version> = history::previously_installed(input)
        .iter()
        .filter_map(|v| parse(v))
        .collect();
    // Leaving a version that never Succeeded is undoing an upgrade, always
    // allowed; leaving one that did is a person's choice the version rules apply to.
    let reason = if current.outcome == RevisionOutcome::Completed {
        RollbackReason::Manual
    } else {
        RollbackReason::Automatic
    };
    let request = RollbackRequest {
        installed: &installed,
        target: &target,
        previously_installed: &previously,
        reason,
        force: input.spec.force,
    };
    match check_rollback(&request) {
        Ok(decision) => {
            let mut why = format!(
                "manual rollback from {} to {}",
                current.version, earlier.version
            );
            if let Some(overridden) = &decision.overridden {
                why.push_str(&format!(" (forced: {overridden})"));
            }
            Intent::Start(Start {
                csv_name: earlier.csv_name,
                version: earlier.version,
                digest: earlier.digest,
                kind: StartKind::Restore {
                    from: earlier.revision,
                    automatic: false,
                },
                reason: why,
                forced: decision.forced,
            })
        }
        Err(refused) => Intent::Refuse(Refusal {
            reason: refused.reason(),
            message: format!(
                "{refused}; keeping {} (set spec.force to override a version rule)",
                current.cluster_service_version_name
            ),
        }),
    }
}

pub(super) fn content_missing(input: &Input<'_>, earlier: &history::Candidate) -> Refusal {
    Refusal {
        reason: reasons::blueprint::REVISION_CONTENT_MISSING,
        message: format!(
            "revision {} ({}) can no longer be restored: its Secret {} was pruned or deleted; \
             install a version from the catalog instead",
            earlier.revision,
            earlier.csv_name,
            crate::revision::secret_name(input.name, earlier.revision)
        ),
    }
}

fn from_catalog(
    input: &Input<'_>,
    bundle: &ResolvedBundle,
    current: Option<&RevisionRecord>,
) -> Start {
    let version = &bundle.version;
    let retry = input
        .status
        .held_back
        .as_ref()
        .is_some_and(|h| h.cluster_service_version_name == bundle.cluster_service_version_name);
    let reason = match current {
        None => format!("install {version}"),
        Some(_) if retry => {
            format!("retry {version} after its rollback: its bundle or the Blueprint changed")
        }
        Some(current)
            if current.cluster_service_version_name == bundle.cluster_service_version_name =>
        {
            if current.digest.is_some() && bundle.digest != current.digest {
                format!("reinstall {version}: the bundle's digest changed")
            } else {
                format!("reinstall {version}: the install settings changed")
            }
        }
        Some(current) => match (parse(&current.version), parse(version)) {
            (Some(from), Some(to)) if windlass_catalog::range::precedence(&to, &from).is_lt() => {
                format!("downgrade from {} to {version}", current.version)
            }
            _ => format!("upgrade from {} to {version}", current.version),
        },
    };
    Start {
        csv_name: bundle.cluster_service_version_name.clone(),
        version: version.clone(),
        digest: bundle.digest.clone(),
        kind: StartKind::Catalog,
        reason,
        forced: false,
    }
}

pub(super) fn parse(version: &str) -> Option<Version> {
    Version::parse(version.trim().trim_start_matches('v')).ok()
}

fn completed_names(input: &Input<'_>) -> String {
    let names: Vec<&str> = input
        .status
        .history
        .iter()
        .filter(|r| r.outcome == RevisionOutcome::Completed)
        .map(|r| r.cluster_service_version_name.as_str())
        .collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}
