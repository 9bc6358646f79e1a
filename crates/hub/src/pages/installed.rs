//! The installed view of one namespace: each Subscription with its state, its Blueprint's
//! phase and version, what went wrong, the revision history with reasons, and the buttons a
//! person uses (approve, roll back, resume). The table is a fragment the page's script fetches
//! again every two seconds, so progress shows without a reload.

use std::fmt::Write as _;

use windlass_api::{
    Blueprint, ConditionStatus, Subscription, blueprint::BlueprintPhase,
    names::conditions::subscription as sub_conditions,
};

use crate::{
    actions::rollback_target,
    html::{Section, Viewer, escape, layout, query},
};

/// One Subscription and its Blueprint (absent until the controller made it).
#[derive(Clone, Debug)]
pub struct Installed {
    pub subscription: Subscription,
    pub blueprint: Option<Blueprint>,
}

/// What reading the namespace gave: its installs, or the API server's refusal.
pub type Listing = Result<Vec<Installed>, String>;

pub fn installed_page(namespace: &str, listing: &Listing, viewer: &Viewer) -> String {
    let mut body = String::new();
    body.push_str("<h1>Installed operators</h1>");
    let _ = write!(
        body,
        "<form class=\"search\" method=\"get\" action=\"/installed\"><label>Namespace <input name=\"namespace\" id=\"namespace\" value=\"{}\" required></label><button type=\"submit\">Show</button></form>",
        escape(namespace)
    );
    body.push_str(
        "<p class=\"message\" id=\"action-result\" role=\"status\" aria-live=\"polite\"></p>",
    );
    if namespace.is_empty() {
        body.push_str("<p class=\"empty\">Name a namespace to see what is installed there.</p>");
    } else {
        let _ = write!(
            body,
            "<div id=\"installed\" data-refresh=\"/installed/rows?{}\">{}</div>",
            escape(&query(&[("namespace", namespace)])),
            rows(namespace, listing, viewer)
        );
    }
    layout("Installed", Section::Installed, viewer, &body)
}

/// The refreshed part of the installed view.
pub fn rows(namespace: &str, listing: &Listing, viewer: &Viewer) -> String {
    let installed = match listing {
        Ok(installed) => installed,
        Err(refusal) => {
            return format!(
                "<p class=\"message error\" id=\"listing-error\">{}</p>",
                escape(refusal)
            );
        }
    };
    if installed.is_empty() {
        return format!(
            "<p class=\"empty\">No Subscriptions in namespace {}.</p>",
            escape(namespace)
        );
    }
    let mut out = String::from(
        "<table class=\"installed\"><thead><tr><th>Subscription</th><th>State</th><th>Blueprint</th><th>History</th><th></th></tr></thead><tbody>",
    );
    for item in installed {
        row(&mut out, namespace, item, viewer);
    }
    out.push_str("</tbody></table>");
    out
}

fn row(out: &mut String, namespace: &str, item: &Installed, viewer: &Viewer) {
    let sub = &item.subscription;
    let name = sub.metadata.name.clone().unwrap_or_default();
    let status = sub.status.clone().unwrap_or_default();
    let _ = write!(
        out,
        "<tr data-subscription=\"{n}\"><td><strong>{n}</strong><br><span class=\"detail\">package {} · channel {} · {:?} approval</span></td>",
        escape(&sub.spec.package),
        escape(sub.spec.channel.as_deref().unwrap_or("default")),
        sub.spec.approval,
        n = escape(&name),
    );
    let _ = write!(
        out,
        "<td><span class=\"state\">{}</span><br><span class=\"detail\">installed {}</span>{}</td>",
        status
            .state
            .map(|s| format!("{s:?}"))
            .unwrap_or_else(|| "-".into()),
        escape(status.installed_csv.as_deref().unwrap_or("nothing yet")),
        problems(
            status
                .conditions
                .iter()
                .filter(|c| worth_showing(&c.type_, &c.status))
                .map(|c| (c.type_.as_str(), c.reason.as_str(), c.message.as_str()))
        ),
    );
    let pinned = status
        .conditions
        .iter()
        .any(|c| c.type_ == sub_conditions::TARGET_PINNED && c.status == ConditionStatus::True);
    match &item.blueprint {
        None => out.push_str("<td><span class=\"phase\">-</span></td><td></td><td></td>"),
        Some(blueprint) => {
            let bs = blueprint.status.clone().unwrap_or_default();
            let phase = bs
                .phase
                .map(|p| format!("{p:?}"))
                .unwrap_or_else(|| "-".into());
            let _ = write!(
                out,
                "<td><span class=\"phase phase-{p}\">{p}</span> <span class=\"version\">{}</span><br><span class=\"detail\">target {}</span>{}</td>",
                escape(bs.version.as_deref().unwrap_or("")),
                escape(&blueprint.spec.cluster_service_version_name),
                problems(
                    bs.conditions
                        .iter()
                        .filter(|c| c.status == ConditionStatus::False)
                        .map(|c| (c.type_.as_str(), c.reason.as_str(), c.message.as_str()))
                ),
                p = escape(&phase),
            );
            out.push_str("<td><ol class=\"history\">");
            for record in &bs.history {
                let _ = write!(
                    out,
                    "<li><span class=\"revision\">r{}</span> {} <span class=\"outcome\">{:?}</span>{}{}</li>",
                    record.revision,
                    escape(&record.version),
                    record.outcome,
                    if record.forced { " (forced)" } else { "" },
                    if record.reason.is_empty() {
                        String::new()
                    } else {
                        format!(": <span class=\"reason\">{}</span>", escape(&record.reason))
                    },
                );
            }
            out.push_str("</ol></td><td class=\"actions\">");
            let blueprint_name = blueprint.metadata.name.clone().unwrap_or_default();
            // The plan shown is the plan approved: the form carries its digest.
            let shown = bs
                .preview
                .as_ref()
                .filter(|p| blueprint.spec.approved_plan.as_deref() != Some(p.digest.as_str()));
            let waiting = bs.phase == Some(BlueprintPhase::RequiresApproval)
                && (shown.is_some() || (bs.preview.is_none() && !blueprint.spec.approved));
            if waiting {
                if let Some(plan) = shown {
                    let _ = write!(
                        out,
                        "<p class=\"plan\"><span class=\"plan-summary\">{}</span><br><code class=\"plan-digest\">{}</code> (<code>windlass plan</code> shows it whole)</p>",
                        escape(&plan.summary),
                        escape(&plan.digest),
                    );
                }
                let plan = shown.map(|p| p.digest.as_str());
                button_with(
                    out,
                    "approve",
                    "Approve",
                    namespace,
                    &blueprint_name,
                    viewer,
                    plan.map(|d| ("plan", d)),
                );
            }
            if let Ok(rollback) = rollback_target(blueprint, None) {
                let label = format!("Roll back to {}", rollback.to);
                button(out, "rollback", &label, namespace, &blueprint_name, viewer);
            }
            if pinned {
                button(out, "resume", "Resume", namespace, &name, viewer);
            }
            out.push_str("</td>");
        }
    }
    out.push_str("</tr>");
}

/// Whether a Subscription condition tells the person something: a failing one, a pin, or
/// unhealthy catalogs (whose good state is False).
fn worth_showing(type_: &str, status: &ConditionStatus) -> bool {
    match type_ {
        sub_conditions::TARGET_PINNED | sub_conditions::CATALOG_SOURCES_UNHEALTHY => {
            *status == ConditionStatus::True
        }
        _ => *status == ConditionStatus::False,
    }
}

fn problems<'a>(conditions: impl Iterator<Item = (&'a str, &'a str, &'a str)>) -> String {
    let mut out = String::new();
    for (type_, reason, message) in conditions {
        let _ = write!(
            out,
            "<br><span class=\"condition\" title=\"{}\">{}: {} {}</span>",
            escape(type_),
            escape(type_),
            escape(reason),
            escape(message)
        );
    }
    out
}

fn button(
    out: &mut String,
    action: &str,
    label: &str,
    namespace: &str,
    name: &str,
    viewer: &Viewer,
) {
    button_with(out, action, label, namespace, name, viewer, None);
}

/// A button posting `action` for one object, with one more hidden field when given.
fn button_with(
    out: &mut String,
    action: &str,
    label: &str,
    namespace: &str,
    name: &str,
    viewer: &Viewer,
    extra: Option<(&str, &str)>,
) {
    let extra = extra
        .map(|(field, value)| {
            format!(
                "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
                escape(field),
                escape(value)
            )
        })
        .unwrap_or_default();
    let _ = write!(
        out,
        "<form method=\"post\" action=\"/actions/{action}\" data-action=\"{action}\" data-result=\"action-result\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><input type=\"hidden\" name=\"namespace\" value=\"{}\"><input type=\"hidden\" name=\"name\" value=\"{}\">{extra}<button type=\"submit\" class=\"{action}\">{}</button></form>",
        escape(&viewer.csrf_token),
        escape(namespace),
        escape(name),
        escape(label)
    );
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn item(phase: &str, old: Option<&str>, pinned: bool) -> Installed {
        let subscription: Subscription = serde_json::from_value(json!({
            "apiVersion": "windlass.dev/v1alpha1", "kind": "Subscription",
            "metadata": {"name": "acme-db", "namespace": "team-a"},
            "spec": {"package": "acme-db", "channel": "stable", "approval": "Manual"},
            "status": {"state": "UpgradePending", "installedCSV": "acme-db.v1.0.0",
                "conditions": [{"type": "TargetPinned", "status": if pinned {"True"} else {"False"}, "reason": "PinnedByPerson", "message": "<held>", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
        }))
        .unwrap();
        let blueprint: Blueprint = serde_json::from_value(json!({
            "apiVersion": "windlass.dev/v1alpha1", "kind": "Blueprint",
            "metadata": {"name": "acme-db", "namespace": "team-a"},
            "spec": {"package": "acme-db", "clusterServiceVersionName": "acme-db.v1.0.1", "oldClusterServiceVersionName": old},
            "status": {"phase": phase, "version": "1.0.1", "history": [
                {"revision": 2, "version": "1.0.1", "clusterServiceVersionName": "acme-db.v1.0.1", "outcome": "InProgress", "reason": "upgrade <from> 1.0.0"},
                {"revision": 1, "version": "1.0.0", "clusterServiceVersionName": "acme-db.v1.0.0", "outcome": "Completed"}
            ]},
        }))
        .unwrap();
        Installed {
            subscription,
            blueprint: Some(blueprint),
        }
    }

    fn viewer() -> Viewer {
        Viewer {
            user: None,
            csrf_token: "tok".into(),
        }
    }

    #[test]
    fn only_conditions_that_say_something_are_shown() {
        assert!(worth_showing(
            sub_conditions::TARGET_PINNED,
            &ConditionStatus::True
        ));
        assert!(!worth_showing(
            sub_conditions::TARGET_PINNED,
            &ConditionStatus::False
        ));
        assert!(!worth_showing(
            sub_conditions::CATALOG_SOURCES_UNHEALTHY,
            &ConditionStatus::False
        ));
        assert!(worth_showing(
            sub_conditions::CATALOG_SOURCES_UNHEALTHY,
            &ConditionStatus::True
        ));
        assert!(worth_showing("Installed", &ConditionStatus::False));
        assert!(!worth_showing("Installed", &ConditionStatus::True));
        let following = rows(
            "team-a",
            &Ok(vec![item("Succeeded", None, false)]),
            &viewer(),
        );
        assert!(!following.contains("PinnedByPerson"), "{following}");
    }

    #[test]
    fn approving_from_the_page_names_the_plan_it_shows() {
        let digest = format!("sha256:{}", "ab".repeat(32));
        let mut waiting = item("RequiresApproval", Some("acme-db.v1.0.0"), false);
        let blueprint = waiting.blueprint.as_mut().unwrap();
        blueprint.status.as_mut().unwrap().preview = Some(windlass_api::blueprint::PlanPreview {
            revision: 2,
            digest: digest.clone(),
            summary: "upgrade 1.0.0 -> 1.0.1; RBAC: gains <2> grants".into(),
            ..Default::default()
        });
        let out = rows("team-a", &Ok(vec![waiting.clone()]), &viewer());
        assert!(out.contains(&format!(
            "<input type=\"hidden\" name=\"plan\" value=\"{digest}\">"
        )));
        assert!(out.contains("RBAC: gains &lt;2&gt; grants"), "{out}");

        // Once that plan is approved, nothing is left to approve.
        let blueprint = waiting.blueprint.as_mut().unwrap();
        blueprint.spec.approved_plan = Some(digest);
        let out = rows("team-a", &Ok(vec![waiting]), &viewer());
        assert!(!out.contains("/actions/approve"), "{out}");
    }

    #[test]
    fn a_waiting_upgrade_offers_approval_and_a_rollback() {
        let out = rows(
            "team-a",
            &Ok(vec![item(
                "RequiresApproval",
                Some("acme-db.v1.0.0"),
                false,
            )]),
            &viewer(),
        );
        assert!(
            out.contains("<span class=\"phase phase-RequiresApproval\">RequiresApproval</span>")
        );
        assert!(out.contains("action=\"/actions/approve\""));
        assert!(out.contains("Roll back to acme-db.v1.0.0"));
        assert!(!out.contains("/actions/resume"));
        assert!(out.contains("name=\"csrf\" value=\"tok\""));
        assert!(
            out.contains("upgrade &lt;from&gt; 1.0.0"),
            "history reasons, escaped"
        );
    }

    #[test]
    fn a_pinned_target_offers_resume_and_nothing_is_offered_that_cannot_be_done() {
        let out = rows(
            "team-a",
            &Ok(vec![item("Succeeded", None, true)]),
            &viewer(),
        );
        assert!(out.contains("action=\"/actions/resume\""));
        assert!(!out.contains("/actions/approve"));
        assert!(!out.contains("/actions/rollback"));
        assert!(out.contains("TargetPinned: PinnedByPerson &lt;held&gt;"));
    }

    #[test]
    fn a_refused_listing_shows_the_api_servers_words() {
        let out = rows(
            "team-a",
            &Err("subscriptions is forbidden: User \"x\"".into()),
            &viewer(),
        );
        assert!(out.contains("subscriptions is forbidden: User &quot;x&quot;"));
        let page = installed_page("team-a", &Ok(vec![]), &viewer());
        assert!(page.contains("data-refresh=\"/installed/rows?namespace=team-a\""));
        assert!(page.contains("No Subscriptions in namespace team-a."));
    }
}
