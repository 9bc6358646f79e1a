//! What a member's own objects say about the rollout's target there, and what the hub writes
//! into a member. The member's words (its condition messages) are passed on as they are, so
//! the hub says why in the member's terms.

use serde_json::{Value, json};
use windlass_api::{
    Blueprint, ClusterVersion, Subscription,
    blueprint::BlueprintPhase,
    clusterversion::ReleaseApproval,
    condition::{ConditionStatus, find},
    config::Approval,
    fleet::{ClusterVersionTarget, SubscriptionTarget},
    names::conditions,
    subscription::SubscriptionState,
};

/// Whether a member's object asks for the rollout's target, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    /// It does not (absent, or asking for something else).
    No,
    /// As the rollout wrote it for a Manual wave: the target, waiting for approval.
    Manual,
    /// Exactly as the rollout's template says.
    AsTemplate,
}

/// Where the member stands with the target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Health {
    Healthy,
    Progressing(String),
    /// Its own plan waits for approval: the digest it binds and its summary.
    AwaitingApproval {
        digest: String,
        summary: String,
    },
    /// Failed, or rolled back by itself: the member's own words.
    Failed(String),
}

/// One member, as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    pub applied: Applied,
    /// What it runs now, by the name a rollback returns to: the installed CSV, or the
    /// release's version.
    pub running: Option<String>,
    /// The version it runs, for people.
    pub version: Option<String>,
    pub health: Health,
    /// Whatever it was asked for, it has settled on what it runs (what a rollback waits for).
    pub settled: bool,
    /// Why the member refuses the rollback it was asked for, in its own words.
    pub rollback_refused: Option<String>,
}

/// A member as the hub saw it this time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    /// Its API server did not answer (or refused the hub's credentials): the error.
    Unreachable(String),
    View(View),
}

/// The Subscription's name in the member.
pub fn subscription_name(target: &SubscriptionTarget) -> &str {
    target.name.as_deref().unwrap_or(&target.spec.package)
}

/// The Subscription the hub applies in a member: the template, with approval Manual while the
/// wave waits for a person.
pub fn subscription_body(target: &SubscriptionTarget, manual: bool) -> Value {
    let mut spec = target.spec.clone();
    if manual {
        spec.approval = Approval::Manual;
    }
    json!({
        "apiVersion": "windlass.dev/v1alpha1",
        "kind": "Subscription",
        "metadata": { "name": subscription_name(target), "namespace": target.namespace },
        "spec": spec,
    })
}

/// A member's Subscription and its Blueprint, judged against the target.
pub fn subscription_view(
    target: &SubscriptionTarget,
    subscription: Option<&Subscription>,
    blueprint: Option<&Blueprint>,
) -> View {
    let Some(subscription) = subscription else {
        return View {
            applied: Applied::No,
            running: None,
            version: None,
            health: Health::Progressing("no Subscription yet".into()),
            settled: false,
            rollback_refused: None,
        };
    };
    let mut manual = target.spec.clone();
    manual.approval = Approval::Manual;
    let applied = if subscription.spec == target.spec {
        Applied::AsTemplate
    } else if subscription.spec == manual {
        Applied::Manual
    } else {
        Applied::No
    };
    let status = subscription.status.clone().unwrap_or_default();
    let blueprint_status = blueprint.and_then(|b| b.status.clone()).unwrap_or_default();
    let version = blueprint_status.version.clone();
    let running = status.installed_csv.clone();
    let phase = blueprint_status.phase;
    let current = subscription.metadata.generation.is_some()
        && status.observed_generation == subscription.metadata.generation
        && blueprint.is_some_and(|b| {
            b.metadata.generation.is_some()
                && blueprint_status.observed_generation == b.metadata.generation
        });
    let settled = current && phase == Some(BlueprintPhase::Succeeded);
    let rollback_refused = find(
        &blueprint_status.conditions,
        conditions::blueprint::ROLLBACK_ALLOWED,
    )
    .filter(|c| current && c.status == ConditionStatus::False)
    .map(|c| c.message.clone());
    let view = |health| View {
        applied,
        running: running.clone(),
        version: version.clone(),
        health,
        settled,
        rollback_refused: rollback_refused.clone(),
    };
    let ready = find(&blueprint_status.conditions, conditions::blueprint::READY)
        .map(|c| c.message.clone())
        .filter(|m| !m.is_empty());
    let installed = find(&status.conditions, conditions::subscription::INSTALLED)
        .map(|c| c.message.clone())
        .filter(|m| !m.is_empty());
    let words = || {
        ready
            .clone()
            .or_else(|| installed.clone())
            .unwrap_or_default()
    };
    // Until the member's controllers have seen the spec the hub wrote, what they say is about
    // the spec before it.
    if !current {
        return view(Health::Progressing(
            "the member has not acted on the Subscription yet".into(),
        ));
    }
    if matches!(
        phase,
        Some(BlueprintPhase::Failed | BlueprintPhase::RollingBack | BlueprintPhase::RolledBack)
    ) || matches!(
        status.state,
        Some(SubscriptionState::UpgradeFailed | SubscriptionState::RolledBack)
    ) {
        let what = match phase {
            Some(BlueprintPhase::RollingBack) => "rolling back",
            Some(BlueprintPhase::RolledBack) => "rolled back",
            _ => "failed",
        };
        return view(Health::Failed(format!("{what}: {}", words())));
    }
    if phase == Some(BlueprintPhase::RequiresApproval) {
        return match &blueprint_status.preview {
            Some(preview) => view(Health::AwaitingApproval {
                digest: preview.digest.clone(),
                summary: preview.summary.clone(),
            }),
            None => view(Health::Progressing("its plan is being computed".into())),
        };
    }
    let at_version = match &target.version {
        Some(wanted) => version.as_deref() == Some(wanted.as_str()),
        None => status.state == Some(SubscriptionState::AtLatestKnown),
    };
    if phase == Some(BlueprintPhase::Succeeded) && at_version && running.is_some() {
        return view(Health::Healthy);
    }
    let message = match (phase, &version) {
        (Some(BlueprintPhase::Succeeded), Some(v)) => format!("runs {v}"),
        _ => words(),
    };
    view(Health::Progressing(if message.is_empty() {
        "installing".into()
    } else {
        message
    }))
}

/// The merge patch that moves a member's ClusterVersion to the target.
pub fn cluster_version_patch(target: &ClusterVersionTarget, manual: bool) -> Value {
    let mut update = json!({ "version": target.version });
    if let Some(image) = &target.image {
        update["image"] = json!(image);
    }
    let mut patch = json!({ "spec": { "desiredUpdate": update } });
    if manual {
        patch["spec"]["approval"] = json!("Manual");
    }
    patch
}

/// A member's ClusterVersion, judged against the target.
pub fn cluster_version_view(target: &ClusterVersionTarget, live: Option<&ClusterVersion>) -> View {
    let Some(live) = live else {
        return View {
            applied: Applied::No,
            running: None,
            version: None,
            health: Health::Failed("the member has no ClusterVersion".into()),
            settled: false,
            rollback_refused: None,
        };
    };
    let asked = live.spec.desired_update.as_ref().is_some_and(|u| {
        u.version.as_deref() == Some(target.version.as_str())
            && (target.image.is_none() || u.image == target.image)
    });
    let manual = live.spec.approval == Some(ReleaseApproval::Manual);
    let applied = match (asked, manual) {
        (false, _) => Applied::No,
        (true, true) => Applied::Manual,
        (true, false) => Applied::AsTemplate,
    };
    let status = live.status.clone().unwrap_or_default();
    let version = status.desired.as_ref().map(|d| d.version.clone());
    let condition = |type_: &str| find(&status.conditions, type_);
    let is =
        |type_: &str, wanted: ConditionStatus| condition(type_).is_some_and(|c| c.status == wanted);
    let current = status.observed_generation.is_some()
        && status.observed_generation == live.metadata.generation;
    let settled = current
        && is(
            conditions::cluster_version::AVAILABLE,
            ConditionStatus::True,
        )
        && is(
            conditions::cluster_version::PROGRESSING,
            ConditionStatus::False,
        );
    let view = |health| View {
        applied,
        running: version.clone(),
        version: version.clone(),
        health,
        settled,
        rollback_refused: None,
    };
    if let Some(held) = status
        .held_back
        .as_ref()
        .filter(|h| h.version == target.version)
    {
        return view(Health::Failed(format!(
            "rolled back to {}: {}",
            held.rollback_to, held.reason
        )));
    }
    if let Some(failing) = condition(conditions::cluster_version::FAILING)
        .filter(|c| c.status == ConditionStatus::True)
    {
        return view(Health::Failed(failing.message.clone()));
    }
    if !asked {
        return view(Health::Progressing("not asked for the release yet".into()));
    }
    if let Some(plan) = status
        .plan
        .as_ref()
        .filter(|p| manual && !p.approved && p.version == target.version)
    {
        return view(Health::AwaitingApproval {
            digest: plan.digest.clone(),
            summary: format!("{} levels to {}", plan.levels.len(), plan.version),
        });
    }
    if settled && version.as_deref() == Some(target.version.as_str()) {
        return view(Health::Healthy);
    }
    let message = condition(conditions::cluster_version::PROGRESSING)
        .map(|c| c.message.clone())
        .unwrap_or_else(|| "updating".into());
    view(Health::Progressing(message))
}

#[cfg(test)]
#[path = "observe_tests.rs"]
mod tests;
