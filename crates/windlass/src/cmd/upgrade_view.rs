//! What `windlass upgrade status` and `windlass upgrade plan` print (`upgrade_recommend` has
//! what `windlass upgrade recommend` prints).

use k8s_openapi::jiff::Timestamp;
use windlass_api::{
    ClusterVersion, ClusterVersionStatus, ConditionStatus,
    clusterversion::{LevelState, ReleasePlan, UpdateState},
    condition::find,
    names::conditions::cluster_version as types,
};
use windlass_release::progress::remaining_words;

/// A release plan level by level: what it creates, changes (with the fields) and deletes.
pub fn render_plan(plan: &ReleasePlan) -> String {
    let mut out = format!(
        "Plan of the update to {} ({})\nDigest: {}{}\n",
        plan.version,
        plan.image,
        plan.digest,
        if plan.approved {
            " (approved)"
        } else {
            " (not approved)"
        }
    );
    for level in &plan.levels {
        if level.create.is_empty() && level.change.is_empty() && level.delete.is_empty() {
            out.push_str(&format!(
                "\nlevel {}: nothing changes ({} unchanged)\n",
                level.name, level.unchanged
            ));
            continue;
        }
        out.push_str(&format!(
            "\nlevel {} ({} unchanged):\n",
            level.name, level.unchanged
        ));
        for object in &level.create {
            out.push_str(&format!("  + create {object}\n"));
        }
        for change in &level.change {
            out.push_str(&format!(
                "  ~ change {}: {}\n",
                change.object,
                change.fields.join(", ")
            ));
        }
        for object in &level.delete {
            out.push_str(&format!("  - delete {object}\n"));
        }
    }
    if !plan.approved {
        out.push_str(&format!(
            "\n`windlass upgrade approve {}` approves it.\n",
            plan.digest
        ));
    }
    out
}

/// `12 s`, `3 min 5 s`, `1 h 4 min`, for how long something took or has been running.
fn took(seconds: i64) -> String {
    let seconds = seconds.max(0);
    match seconds {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min {} s", s / 60, s % 60),
        s => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

/// The update's timing: when it started and how long ago, and how long the rest should take;
/// or how long it took.
fn timing(status: &ClusterVersionStatus, now: Timestamp) -> Option<String> {
    let entry = status.history.first()?;
    let started = entry.started_time.0;
    let since = |t: Timestamp| t.as_second() - started.as_second();
    if entry.state == UpdateState::Completed {
        let done = entry.completion_time.as_ref()?.0;
        return Some(format!(
            "Completed:   {} after {}\n",
            done.strftime("%Y-%m-%d %H:%M:%S UTC"),
            took(since(done))
        ));
    }
    let mut line = format!(
        "Started:     {} ({} ago)\n",
        started.strftime("%Y-%m-%d %H:%M:%S UTC"),
        took(since(now))
    );
    let estimate = status
        .progress
        .as_ref()
        .and_then(|p| p.estimated_completion_time.as_ref())
        .map(|end| end.0);
    line.push_str(&match estimate {
        Some(end) if end > now => format!(
            "Estimate:    {} (done around {}, judging by earlier updates' levels)\n",
            remaining_words(Some((end.as_second() - now.as_second()) as f64)),
            end.strftime("%H:%M:%S UTC")
        ),
        Some(_) => "Estimate:    taking longer than earlier updates did\n".into(),
        None => format!("Estimate:    {}\n", remaining_words(None)),
    });
    Some(line)
}

/// What `windlass upgrade status` prints at `now`.
pub fn render(version: &ClusterVersion, now: Timestamp) -> String {
    let mut out = String::new();
    let Some(status) = &version.status else {
        return "no status yet: the manager has not looked at the ClusterVersion\n".into();
    };
    let condition = |type_| find(&status.conditions, type_);
    if let Some(desired) = &status.desired {
        out.push_str(&format!(
            "Release:     {} ({}, {})\n",
            desired.version,
            desired.image,
            if desired.verified {
                "verified"
            } else {
                "not verified"
            }
        ));
    }
    if let Some(timing) = timing(status, now) {
        out.push_str(&timing);
    }
    for type_ in [
        types::RELEASE_ACCEPTED,
        types::PROGRESSING,
        types::FAILING,
        types::AVAILABLE,
        types::UPGRADEABLE,
        types::RETRIEVED_UPDATES,
    ] {
        if let Some(c) = condition(type_) {
            out.push_str(&format!(
                "{:<12} {:?} ({}){}\n",
                format!("{}:", c.type_),
                c.status,
                c.reason,
                if c.message.is_empty() {
                    String::new()
                } else {
                    format!(": {}", c.message)
                }
            ));
        }
    }
    if let Some(capabilities) = &status.capabilities {
        out.push_str(&format!(
            "Capabilities: {}
",
            if capabilities.enabled_capabilities.is_empty() {
                "none enabled".to_string()
            } else {
                capabilities.enabled_capabilities.join(", ")
            }
        ));
    }
    let unmanaged: Vec<String> = version
        .spec
        .overrides
        .iter()
        .filter(|o| o.unmanaged)
        .map(|o| {
            let ns = if o.namespace.is_empty() {
                String::new()
            } else {
                format!("{}/", o.namespace)
            };
            format!("{} {ns}{}", o.kind, o.name)
        })
        .collect();
    if !unmanaged.is_empty() {
        out.push_str(&format!(
            "Unmanaged (spec.overrides): {}
",
            unmanaged.join(", ")
        ));
    }
    if let Some(readiness) = &status.readiness {
        out.push_str(&format!(
            "
Readiness of the update to {} ({}): {}
",
            readiness.version,
            readiness.image,
            if readiness.findings.is_empty() {
                "nothing blocks it".to_string()
            } else {
                format!("{} finding(s)", readiness.findings.len())
            }
        ));
        for finding in &readiness.findings {
            out.push_str(&format!(
                "  {} [{}]{}: {}
",
                finding.name,
                finding.kind,
                if finding.accepted { " (accepted)" } else { "" },
                finding.message
            ));
        }
    }
    let troubled: Vec<_> = status
        .operators
        .iter()
        .filter(|o| o.unhealthy_since.is_some())
        .collect();
    if !status.operators.is_empty() {
        out.push_str(&format!(
            "
ClusterOperators: {} ({} unhealthy)
",
            status.operators.len(),
            troubled.len()
        ));
        for operator in troubled {
            out.push_str(&format!(
                "  {:<20} Available={} Degraded={} {}\n",
                operator.name, operator.available, operator.degraded, operator.message
            ));
        }
    }
    if !status.levels.is_empty() {
        let done = status
            .levels
            .iter()
            .filter(|l| l.state == LevelState::Done)
            .count();
        out.push_str(&format!(
            "\nLevels: {done} of {} done\n",
            status.levels.len()
        ));
        out.push_str(&format!(
            "{:<14} {:<12} {:>9}  {}\n",
            "LEVEL", "STATE", "MANIFESTS", "COMPONENTS / WAITING FOR"
        ));
        for level in &status.levels {
            let duration = match (&level.started_time, &level.completion_time) {
                (Some(start), Some(end)) => {
                    format!(" in {} s", end.0.as_second() - start.0.as_second())
                }
                _ => String::new(),
            };
            let detail = if level.message.is_empty() {
                format!("{}{duration}", level.components)
            } else {
                format!("{}: {}", level.components, level.message)
            };
            out.push_str(&format!(
                "{:<14} {:<12} {:>9}  {detail}\n",
                level.name,
                format!("{:?}", level.state),
                level.manifests
            ));
        }
    }
    if let Some(progress) = &status.progress {
        out.push_str(&format!(
            "\nIn progress: level {} ({} of {}), component {}: waiting for {}\n",
            progress.level,
            progress.position,
            progress.levels,
            progress.component,
            progress.waiting_for
        ));
    }
    if !status.available_updates.is_empty() {
        out.push_str("\nAvailable updates:\n");
        for release in &status.available_updates {
            out.push_str(&format!("  {:<10} {}\n", release.version, release.image));
        }
    }
    if !status.conditional_updates.is_empty() {
        out.push_str("\nConditional updates (recommended only where their risks do not apply, or are accepted):\n");
        for update in &status.conditional_updates {
            let recommended = update
                .conditions
                .iter()
                .find(|c| c.type_ == types::RECOMMENDED)
                .map(|c| format!("Recommended={:?} ({})", c.status, c.reason))
                .unwrap_or_else(|| "not evaluated".into());
            out.push_str(&format!(
                "  {:<10} {} {recommended}\n",
                update.release.version, update.release.image
            ));
            for risk in &update.risks {
                let applies = risk.conditions.iter().find(|c| c.type_ == types::APPLIES);
                let judged = match applies {
                    Some(c) if c.status == ConditionStatus::Unknown => {
                        format!("Applies=Unknown ({}): {}", c.reason, first_line(&c.message))
                    }
                    Some(c) => format!("Applies={:?} ({})", c.status, c.reason),
                    None => "not evaluated".into(),
                };
                out.push_str(&format!("    risk {}: {judged}\n", risk.name));
                if !risk.url.is_empty() {
                    out.push_str(&format!("      {}\n", risk.url));
                }
            }
        }
    }
    if !status.history.is_empty() {
        out.push_str("\nHistory (newest first):\n");
        for entry in &status.history {
            let duration = entry
                .completion_time
                .as_ref()
                .map(|done| {
                    format!(
                        " in {}",
                        took(done.0.as_second() - entry.started_time.0.as_second())
                    )
                })
                .unwrap_or_default();
            out.push_str(&format!(
                "  {:<10} {:<9} {}{}{duration}\n",
                entry.version,
                format!("{:?}", entry.state),
                entry.image,
                if entry.verified {
                    ""
                } else {
                    " (not verified)"
                }
            ));
            if !entry.accepted_risks.is_empty() {
                out.push_str(&format!(
                    "             accepted: {}\n",
                    entry.accepted_risks
                ));
            }
        }
    }
    out
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::upgrade::newest;

    #[test]
    fn status_shows_elapsed_and_estimated_time_and_why_a_risk_is_unknown() {
        let started: Timestamp = "2026-03-01T10:00:00Z".parse().unwrap();
        let version: ClusterVersion = serde_json::from_value(serde_json::json!({
            "apiVersion": "windlass.dev/v1alpha1", "kind": "ClusterVersion",
            "metadata": {"name": "version"}, "spec": {},
            "status": {
                "desired": {"version": "4.1.1", "image": "r@sha256:b", "verified": true},
                "levels": [
                    {"name": "10", "state": "Done", "manifests": 3, "components": "dns",
                     "startedTime": "2026-03-01T10:00:00Z", "completionTime": "2026-03-01T10:00:12Z"},
                    {"name": "30", "state": "Progressing", "manifests": 4, "components": "monitoring",
                     "message": "to roll out (0/2 updated)", "startedTime": "2026-03-01T10:00:12Z"},
                ],
                "progress": {"level": "30", "position": 2, "levels": 2, "component": "monitoring",
                    "waitingFor": "Deployment platform-monitoring/monitoring-operator to roll out (0/2 updated)",
                    "estimatedCompletionTime": "2026-03-01T10:02:40Z"},
                "history": [
                    {"state": "Partial", "version": "4.1.1", "image": "r@sha256:b", "verified": true,
                     "startedTime": "2026-03-01T10:00:00Z"},
                    {"state": "Completed", "version": "4.1.0", "image": "r@sha256:a", "verified": false,
                     "startedTime": "2026-02-01T10:00:00Z", "completionTime": "2026-02-01T10:03:05Z",
                     "acceptedRisks": "force: unsigned"},
                ],
                "conditionalUpdates": [{
                    "release": {"version": "4.2.0", "image": "r@sha256:c"},
                    "risks": [{"name": "SlowIngress", "url": "https://example.invalid/slow",
                        "conditions": [{"type": "Applies", "status": "Unknown", "reason": "EvaluationFailed",
                            "message": "Could not evaluate exposure to update risk SlowIngress (connection refused)\n  more"}]}],
                    "conditions": [{"type": "Recommended", "status": "Unknown", "reason": "EvaluationFailed", "message": "m"}],
                }],
            },
        }))
        .unwrap();
        let now = started + k8s_openapi::jiff::SignedDuration::from_secs(40);
        let shown = render(&version, now);
        for expected in [
            "Started:     2026-03-01 10:00:00 UTC (40 s ago)",
            "Estimate:    about 2 min left (done around 10:02:40 UTC",
            "30             Progressing          4  monitoring: to roll out (0/2 updated)",
            "In progress: level 30 (2 of 2), component monitoring",
            "4.2.0      r@sha256:c Recommended=Unknown (EvaluationFailed)",
            "risk SlowIngress: Applies=Unknown (EvaluationFailed): Could not evaluate exposure to update risk SlowIngress (connection refused)",
            "4.1.0      Completed r@sha256:a (not verified) in 3 min 5 s",
            "accepted: force: unsigned",
        ] {
            assert!(
                shown.contains(expected),
                "missing {expected:?} in:\n{shown}"
            );
        }
        let later = started + k8s_openapi::jiff::SignedDuration::from_secs(400);
        assert!(render(&version, later).contains("taking longer than earlier updates did"));
    }

    #[test]
    fn status_lists_readiness_findings_and_the_newest_update_is_found_by_version() {
        let version: ClusterVersion = serde_json::from_value(serde_json::json!({
            "apiVersion": "windlass.dev/v1alpha1", "kind": "ClusterVersion",
            "metadata": {"name": "version"},
            "spec": {"upstream": "http://graph.example/api", "channel": "stable-4.2"},
            "status": {
                "history": [{"state": "Completed", "version": "4.1.0", "image": "r@sha256:a",
                             "verified": true, "startedTime": "2026-02-01T10:00:00Z"}],
                "availableUpdates": [{"version": "4.1.1", "image": "r@sha256:b"}],
                "conditionalUpdates": [{
                    "release": {"version": "4.2.0", "image": "r@sha256:c"},
                    "risks": [{"name": "SlowIngress", "message": "Ingress is slow after the update",
                        "url": "https://example.invalid/slow",
                        "conditions": [{"type": "Applies", "status": "True", "reason": "Match", "message": ""}]}],
                    "conditions": [{"type": "Recommended", "status": "False", "reason": "SlowIngress", "message": "Ingress is slow"}],
                }],
                "readiness": {"version": "4.2.0", "image": "r@sha256:c", "findings": [
                    {"name": "PodDisruptionBudget/platform-dns/dns", "kind": "DisruptionBudget",
                     "message": "allows no disruption", "accepted": false}]},
            },
        }))
        .unwrap();
        let status = render(&version, Timestamp::now());
        assert!(
            status.contains(
                "PodDisruptionBudget/platform-dns/dns [DisruptionBudget]: allows no disruption"
            ),
            "{status}"
        );
        let latest = newest(&version.status.as_ref().unwrap().available_updates).unwrap();
        assert_eq!(latest.version, "4.1.1");
    }
}
