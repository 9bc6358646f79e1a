//! The Subscription's status, read off its Blueprint and the last resolution, and the Events
//! its changes deserve.

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use windlass_api::{
    Blueprint, Condition, ConditionStatus, SubscriptionStatus,
    blueprint::{BlueprintPhase, BlueprintStatus, RevisionOutcome},
    catalog::CatalogPhase,
    condition::{find, set_condition},
    subscription::SubscriptionState,
};

use crate::{
    delisting::Delisted,
    intent::Pin,
    resolution::{Resolution, ResolutionFailure, summary},
};
use windlass_api::names::reasons::{
    delisting as delisting_reasons, resolution as resolution_reasons,
};

pub use windlass_api::names::conditions::subscription as conditions;

/// Everything the status is computed from.
#[derive(Clone, Copy, Debug)]
pub struct Observation<'a> {
    pub generation: Option<i64>,
    pub blueprint: Option<&'a Blueprint>,
    pub pin: Option<&'a Pin>,
    pub resolution: &'a Result<Resolution, ResolutionFailure>,
    /// One message per catalog in trouble.
    pub unhealthy_catalogs: &'a [String],
    pub required_by: &'a [String],
    /// `None` when the target needs nothing; otherwise the problems found (empty when fine).
    pub dependency_problems: Option<&'a [String]>,
    /// What the Subscription installs, or asks for, and is no longer offered.
    pub delisted: Option<&'a Delisted>,
}

/// The status to write: `old` with every field recomputed. Conditions keep their transition
/// times unless their status flips, so an unchanged world gives an identical status.
pub fn next_status(
    old: &SubscriptionStatus,
    seen: &Observation<'_>,
    now: Timestamp,
) -> SubscriptionStatus {
    let mut status = old.clone();
    let blueprint = seen.blueprint;
    let choice = seen
        .resolution
        .as_ref()
        .ok()
        .map(|r| r.target.cluster_service_version_name.as_str());
    status.state = state(blueprint, seen.pin, choice);
    status.installed_csv = blueprint.and_then(|b| last_completed(b.status.as_ref()));
    status.current_csv = blueprint.map(|b| b.spec.cluster_service_version_name.clone());
    status.blueprint = blueprint.map(|b| b.name_any());
    status.required_by = seen.required_by.to_vec();
    status.observed_generation = seen.generation;

    let mut merge = |type_: &str, status_: ConditionStatus, reason: &str, message: String| {
        let condition = Condition::new(type_, status_, reason, message).observed(seen.generation);
        set_condition(&mut status.conditions, condition, now);
    };
    match seen.resolution {
        Ok(resolution) => merge(
            conditions::RESOLUTION_SUCCEEDED,
            ConditionStatus::True,
            "Resolved",
            summary(resolution),
        ),
        Err(failure) => merge(
            conditions::RESOLUTION_SUCCEEDED,
            ConditionStatus::False,
            &failure.reason,
            failure.message.clone(),
        ),
    }
    match (seen.pin, blueprint) {
        (Some(pin), Some(b)) => merge(
            conditions::TARGET_PINNED,
            ConditionStatus::True,
            "SetByUser",
            format!(
                "the target {} was set by {}; the catalog would pick {}. `windlass resume {}` hands the target back",
                b.spec.cluster_service_version_name,
                pin.describe(),
                choice.unwrap_or("nothing (resolution failed)"),
                b.name_any()
            ),
        ),
        _ => merge(
            conditions::TARGET_PINNED,
            ConditionStatus::False,
            "FollowingCatalog",
            "the target is the catalog's choice".into(),
        ),
    }
    if seen.unhealthy_catalogs.is_empty() {
        merge(
            conditions::CATALOG_SOURCES_UNHEALTHY,
            ConditionStatus::False,
            "AllCatalogsHealthy",
            "every catalog this Subscription uses is served".into(),
        );
    } else {
        merge(
            conditions::CATALOG_SOURCES_UNHEALTHY,
            ConditionStatus::True,
            "CatalogUnhealthy",
            seen.unhealthy_catalogs.join("; "),
        );
    }
    // Present once it has been true, so the way back is visible too.
    let was_delisted = find(&old.conditions, conditions::DELISTED).is_some();
    match seen.delisted {
        Some(delisted) => merge(
            conditions::DELISTED,
            ConditionStatus::True,
            delisted.reason,
            delisted.message.clone(),
        ),
        None if was_delisted => merge(
            conditions::DELISTED,
            ConditionStatus::False,
            delisting_reasons::LISTED,
            "what this Subscription installs is offered again; upgrades resume".into(),
        ),
        None => {}
    }
    let (installed, reason, message) = installed_condition(blueprint);
    merge(conditions::INSTALLED, installed, reason, message);
    match seen.dependency_problems {
        None => {
            status
                .conditions
                .retain(|c| c.type_ != conditions::DEPENDENCIES_SUBSCRIBED);
        }
        Some([]) => merge(
            conditions::DEPENDENCIES_SUBSCRIBED,
            ConditionStatus::True,
            "Subscribed",
            "every dependency has a Subscription".into(),
        ),
        Some(problems) => merge(
            conditions::DEPENDENCIES_SUBSCRIBED,
            ConditionStatus::False,
            "SubscriptionFailed",
            problems.join("; "),
        ),
    }
    status
}

/// Where the Subscription stands, from its Blueprint; `None` before a Blueprint exists.
pub fn state(
    blueprint: Option<&Blueprint>,
    pin: Option<&Pin>,
    choice: Option<&str>,
) -> Option<SubscriptionState> {
    let blueprint = blueprint?;
    let target = blueprint.spec.cluster_service_version_name.as_str();
    let phase = blueprint.status.as_ref().and_then(|s| s.phase);
    let installed = last_completed(blueprint.status.as_ref());
    let differs = choice.is_some_and(|c| c != target);
    Some(match phase {
        None | Some(BlueprintPhase::Pending) | Some(BlueprintPhase::Installing) => {
            SubscriptionState::Upgrading
        }
        Some(BlueprintPhase::RequiresApproval) => SubscriptionState::UpgradePending,
        Some(BlueprintPhase::Failed) | Some(BlueprintPhase::RollingBack) => {
            SubscriptionState::UpgradeFailed
        }
        Some(BlueprintPhase::RolledBack) => SubscriptionState::RolledBack,
        // Succeeded, but not yet for the target it was just given.
        Some(BlueprintPhase::Succeeded) if installed.as_deref() != Some(target) => {
            SubscriptionState::Upgrading
        }
        Some(BlueprintPhase::Succeeded) if differs && pin.is_some() => {
            SubscriptionState::UpgradeAvailable
        }
        Some(BlueprintPhase::Succeeded) if differs => SubscriptionState::Upgrading,
        Some(BlueprintPhase::Succeeded) => SubscriptionState::AtLatestKnown,
    })
}

/// The CSV of the newest revision that completed.
pub fn last_completed(status: Option<&BlueprintStatus>) -> Option<String> {
    status?
        .history
        .iter()
        .find(|r| r.outcome == RevisionOutcome::Completed)
        .map(|r| r.cluster_service_version_name.clone())
}

fn installed_condition(blueprint: Option<&Blueprint>) -> (ConditionStatus, &'static str, String) {
    let Some(blueprint) = blueprint else {
        return (
            ConditionStatus::False,
            "NoBlueprint",
            "nothing has been resolved to install yet".into(),
        );
    };
    let target = &blueprint.spec.cluster_service_version_name;
    let status = blueprint.status.clone().unwrap_or_default();
    let installed = last_completed(Some(&status));
    let newest = |outcome: RevisionOutcome| status.history.iter().find(|r| r.outcome == outcome);
    let step = status.plan.iter().find(|s| s.status != "Done").map(|s| {
        // That step's message follows each phase of the ClusterServiceVersion as it installs;
        // repeating it here would write this status again at every one of them.
        if s.name == windlass_api::names::steps::CLUSTER_SERVICE_VERSION && s.status == "InProgress"
        {
            return format!(
                "{}: InProgress {target} (Blueprint {} shows its progress)",
                s.name,
                blueprint.name_any()
            );
        }
        format!("{}: {} {}", s.name, s.status, s.message)
            .trim()
            .to_string()
    });
    let running = installed
        .as_ref()
        .map(|i| format!("; {i} runs"))
        .unwrap_or_default();
    // A refusal (policy, CRD owner, the install account's RBAC) says more than the phase.
    if let Some(refused) = windlass_api::condition::find(
        &status.conditions,
        windlass_api::names::conditions::blueprint::INSTALL_PERMITTED,
    )
    .filter(|c| c.status == ConditionStatus::False)
    {
        return (
            ConditionStatus::False,
            "NotPermitted",
            format!("{}: {}{running}", refused.reason, refused.message),
        );
    }
    match status.phase {
        Some(BlueprintPhase::Succeeded) if installed.as_ref() == Some(target) => (
            ConditionStatus::True,
            "Succeeded",
            format!("{target} is installed"),
        ),
        Some(BlueprintPhase::Succeeded) | None => (
            ConditionStatus::False,
            "Pending",
            format!(
                "waiting for Blueprint {} to start on {target}",
                blueprint.name_any()
            ),
        ),
        Some(BlueprintPhase::Pending) => (
            ConditionStatus::False,
            "Pending",
            step.unwrap_or_else(|| format!("{target} waits to be installed")),
        ),
        Some(BlueprintPhase::Installing) => (
            ConditionStatus::False,
            "Installing",
            step.unwrap_or_else(|| format!("installing {target}")),
        ),
        Some(BlueprintPhase::RequiresApproval) => (
            ConditionStatus::False,
            "RequiresApproval",
            format!(
                "{target} waits for approval of its plan on Blueprint {}: `windlass plan` shows it, \
                 `windlass approve` approves it",
                blueprint.name_any()
            ),
        ),
        Some(BlueprintPhase::Failed) => (
            ConditionStatus::False,
            "Failed",
            newest(RevisionOutcome::Failed)
                .map(|r| format!("{} failed: {}", r.cluster_service_version_name, r.reason))
                .or(step)
                .unwrap_or_else(|| format!("{target} failed"))
                + &running,
        ),
        Some(BlueprintPhase::RollingBack) => (
            ConditionStatus::False,
            "RollingBack",
            format!("{target} failed; rolling back{running}"),
        ),
        Some(BlueprintPhase::RolledBack) => (
            ConditionStatus::False,
            "RolledBack",
            newest(RevisionOutcome::RolledBack)
                .map(|r| {
                    format!(
                        "{} was rolled back: {}",
                        r.cluster_service_version_name, r.reason
                    )
                })
                .unwrap_or_else(|| format!("{target} was rolled back"))
                + &running,
        ),
    }
}

/// What is known about one catalog a Subscription uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogView {
    pub name: String,
    /// `None` when no Catalog object of that name exists.
    pub phase: Option<Option<CatalogPhase>>,
    /// The Catalog's `Serving` condition message, if any.
    pub message: String,
    /// Whether the store serves content for it.
    pub served: bool,
}

/// One line per catalog in trouble, for `CatalogSourcesUnhealthy`.
pub fn catalog_problems(catalogs: &[CatalogView]) -> Vec<String> {
    catalogs
        .iter()
        .filter_map(|c| {
            let name = &c.name;
            let detail = if c.message.is_empty() {
                String::new()
            } else {
                format!(" ({})", c.message)
            };
            match (c.phase, c.served) {
                (None, _) => Some(format!("catalog {name} does not exist")),
                (Some(Some(CatalogPhase::Unreachable)), true) => Some(format!(
                    "catalog {name} is unreachable{detail}; its last good content is still used"
                )),
                (Some(Some(CatalogPhase::Unreachable)), false) => Some(format!(
                    "catalog {name} is unreachable{detail} and nothing has been read from it yet"
                )),
                (Some(_), false) => Some(format!("catalog {name} has not been read yet")),
                (Some(_), true) => None,
            }
        })
        .collect()
}

pub use windlass_kit::Notice;

/// The Events a status change deserves: a new state, resolution failing or recovering, the
/// target pinned or resumed, a catalog turning unhealthy. Nothing when nothing changed. A
/// resolution that succeeds as the state changes (a first install, an upgrade found) is told
/// in the state's Event: one Event for one moment, each a write the API server pays for.
pub fn notices(old: &SubscriptionStatus, new: &SubscriptionStatus) -> Vec<Notice> {
    let mut out = Vec::new();
    let flipped = |type_: &str| {
        let before = find(&old.conditions, type_).map(|c| c.status);
        let after = find(&new.conditions, type_);
        after.filter(|a| Some(a.status) != before).cloned()
    };
    let mut state_notice = None;
    if new.state != old.state
        && let Some(state) = new.state
    {
        let installed = find(&new.conditions, conditions::INSTALLED)
            .map(|c| c.message.clone())
            .unwrap_or_default();
        state_notice = Some(out.len());
        out.push(Notice {
            warning: matches!(
                state,
                SubscriptionState::UpgradeFailed | SubscriptionState::RolledBack
            ),
            reason: format!("{state:?}"),
            action: "Reconcile".into(),
            message: installed,
        });
    }
    if let Some(c) = flipped(conditions::DELISTED) {
        let delisted = c.status == ConditionStatus::True;
        out.push(Notice {
            warning: delisted,
            reason: if delisted { "Delisted" } else { "Relisted" }.into(),
            action: "Reconcile".into(),
            message: c.message,
        });
    }
    // A delisting is told once, by its own Event above.
    if let Some(c) = flipped(conditions::RESOLUTION_SUCCEEDED)
        .filter(|c| c.reason != resolution_reasons::DELISTED)
    {
        let failed = c.status == ConditionStatus::False;
        // A resolution that succeeds as the state changes (a first install, an upgrade found)
        // is told in the state's Event: one Event for one moment.
        match state_notice.filter(|_| !failed).map(|i| &mut out[i]) {
            Some(told) if told.message.is_empty() => told.message = c.message,
            Some(told) => told.message = format!("{}; {}", told.message, c.message),
            None => out.push(Notice {
                warning: failed,
                reason: if failed {
                    "ResolutionFailed"
                } else {
                    "Resolved"
                }
                .into(),
                action: "Reconcile".into(),
                message: c.message,
            }),
        }
    }
    if let Some(c) = flipped(conditions::TARGET_PINNED) {
        let pinned = c.status == ConditionStatus::True;
        // A first status that says "not pinned" is no news.
        if pinned || find(&old.conditions, conditions::TARGET_PINNED).is_some() {
            out.push(Notice {
                warning: false,
                reason: if pinned {
                    "TargetPinned"
                } else {
                    "TargetResumed"
                }
                .into(),
                action: "Reconcile".into(),
                message: c.message,
            });
        }
    }
    if let Some(c) = flipped(conditions::CATALOG_SOURCES_UNHEALTHY)
        && c.status == ConditionStatus::True
    {
        out.push(Notice {
            warning: true,
            reason: "CatalogUnhealthy".into(),
            action: "Reconcile".into(),
            message: c.message,
        });
    }
    if let Some(c) = flipped(conditions::DEPENDENCIES_SUBSCRIBED)
        && c.status == ConditionStatus::False
    {
        out.push(Notice {
            warning: true,
            reason: "DependencySubscriptionFailed".into(),
            action: "Reconcile".into(),
            message: c.message,
        });
    }
    out
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
