//! `windlass status`: where a Subscription's install stands, in one screen: the Blueprint's
//! phase and version, each of its conditions (readiness, rehearsed rollback, operand snapshot
//! and restore), its newest revisions, and the edits of what windlass manages that it put
//! back recently (the `DriftRepaired` Events of the Blueprint and its ClusterServiceVersions).

use std::{fmt::Write as _, process::ExitCode};

use k8s_openapi::api::core::v1::Event;
use kube::{Api, ResourceExt, api::ListParams};
use windlass_api::{Blueprint, names::reasons};

use super::lifecycle::{Target, blueprint_of, runtime};

/// How many revisions and drift repairs are shown.
const SHOWN: usize = 5;

pub fn status(target: Target) -> anyhow::Result<ExitCode> {
    runtime()?.block_on(status_async(target))
}

async fn status_async(target: Target) -> anyhow::Result<ExitCode> {
    let (_, blueprint) = blueprint_of(&target).await?;
    let client = crate::manager::client(target.kubeconfig.as_ref()).await?;
    let events = Api::<Event>::namespaced(client, &target.namespace)
        .list(&ListParams::default())
        .await?;
    let repairs = drift_repairs(&blueprint, &events.items);
    print!("{}", render(&blueprint, &repairs));
    Ok(ExitCode::SUCCESS)
}

/// The `DriftRepaired` Events about `blueprint` or one of its CSVs: (when, message), newest
/// first.
fn drift_repairs(blueprint: &Blueprint, events: &[Event]) -> Vec<(String, String)> {
    let csvs: Vec<&str> = blueprint
        .status
        .iter()
        .flat_map(|s| &s.history)
        .map(|r| r.cluster_service_version_name.as_str())
        .collect();
    let name = blueprint.name_any();
    let mut found: Vec<(String, String)> = events
        .iter()
        .filter(|e| e.reason.as_deref() == Some(reasons::drift::REPAIRED))
        .filter(|e| {
            let about = &e.involved_object;
            match about.kind.as_deref() {
                Some("Blueprint") => about.name.as_deref() == Some(name.as_str()),
                Some("ClusterServiceVersion") => {
                    about.name.as_deref().is_some_and(|n| csvs.contains(&n))
                }
                _ => false,
            }
        })
        .map(|e| {
            let when = e
                .last_timestamp
                .as_ref()
                .map(|t| t.0.to_string())
                .or_else(|| e.event_time.as_ref().map(|t| t.0.to_string()))
                .unwrap_or_default();
            (when, e.message.clone().unwrap_or_default())
        })
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0));
    found
}

fn render(blueprint: &Blueprint, repairs: &[(String, String)]) -> String {
    let mut out = String::new();
    let status = blueprint.status.clone().unwrap_or_default();
    let _ = writeln!(
        out,
        "Blueprint {}/{}: {} at {} (revision {})",
        blueprint.namespace().unwrap_or_default(),
        blueprint.name_any(),
        status
            .phase
            .map_or("no phase yet".into(), |p| format!("{p:?}")),
        status.version.as_deref().unwrap_or("nothing"),
        blueprint.spec.revision
    );
    let _ = writeln!(out, "\nConditions:");
    for c in &status.conditions {
        let _ = writeln!(
            out,
            "  {}={:?} {}: {}",
            c.type_, c.status, c.reason, c.message
        );
    }
    let _ = writeln!(out, "\nRevisions (newest first):");
    for r in status.history.iter().take(SHOWN) {
        let accepted = if r.accepted_findings.is_empty() {
            String::new()
        } else {
            format!(" [accepted: {}]", r.accepted_findings.join(", "))
        };
        let _ = writeln!(
            out,
            "  r{} {} {:?}{accepted}: {}",
            r.revision, r.version, r.outcome, r.reason
        );
    }
    let _ = writeln!(out, "\nEdits windlass put back (newest first):");
    if repairs.is_empty() {
        let _ = writeln!(
            out,
            "  none recorded (Events are kept for about an hour by default)"
        );
    }
    for (when, message) in repairs.iter().take(SHOWN) {
        let _ = writeln!(out, "  {when} {message}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ObjectReference;
    use serde_json::json;

    fn event(kind: &str, name: &str, reason: &str, at: &str, message: &str) -> Event {
        Event {
            involved_object: ObjectReference {
                kind: Some(kind.into()),
                name: Some(name.into()),
                ..ObjectReference::default()
            },
            reason: Some(reason.into()),
            message: Some(message.into()),
            last_timestamp: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                at.parse().unwrap(),
            )),
            ..Event::default()
        }
    }

    #[test]
    fn the_status_shows_conditions_revisions_and_the_repairs_of_this_install_only() {
        let blueprint: Blueprint = serde_json::from_value(json!({
            "apiVersion": "windlass.dev/v1alpha1", "kind": "Blueprint",
            "metadata": {"name": "db", "namespace": "team-a"},
            "spec": {"package": "acme-db", "clusterServiceVersionName": "acme-db.v1.0.1", "revision": 2},
            "status": {"phase": "Succeeded", "version": "1.0.1",
                "conditions": [{"type": "UpgradeReady", "status": "True", "reason": "Ready",
                                "message": "accepted by name: MinKubeVersion",
                                "lastTransitionTime": "2026-12-06T10:00:00Z"}],
                "history": [
                    {"revision": 2, "version": "1.0.1", "clusterServiceVersionName": "acme-db.v1.0.1",
                     "outcome": "Completed", "reason": "upgrade from 1.0.0 to 1.0.1",
                     "acceptedFindings": ["MinKubeVersion"]},
                    {"revision": 1, "version": "1.0.0", "clusterServiceVersionName": "acme-db.v1.0.0",
                     "outcome": "Completed", "reason": "install 1.0.0"}]}
        }))
        .unwrap();
        let events = [
            event(
                "ClusterServiceVersion",
                "acme-db.v1.0.1",
                "DriftRepaired",
                "2026-12-06T10:05:00Z",
                "put back Deployment team-a/acme-db-operator: spec.replicas: found 3, restored 1",
            ),
            event(
                "ClusterServiceVersion",
                "other.v1",
                "DriftRepaired",
                "2026-12-06T10:06:00Z",
                "someone else's",
            ),
            event(
                "Blueprint",
                "db",
                "Restored",
                "2026-12-06T10:07:00Z",
                "not drift",
            ),
            event(
                "Blueprint",
                "db",
                "DriftRepaired",
                "2026-12-06T10:08:00Z",
                "put back ConfigMap team-a/settings: data.level: found \"debug\", restored \"info\"",
            ),
        ];
        let repairs = drift_repairs(&blueprint, &events);
        assert_eq!(repairs.len(), 2);
        assert!(
            repairs[0].1.contains("ConfigMap"),
            "newest first: {repairs:?}"
        );
        let text = render(&blueprint, &repairs);
        for part in [
            "Blueprint team-a/db: Succeeded at 1.0.1 (revision 2)",
            "  UpgradeReady=True Ready: accepted by name: MinKubeVersion",
            "  r2 1.0.1 Completed [accepted: MinKubeVersion]: upgrade from 1.0.0 to 1.0.1",
            "spec.replicas: found 3, restored 1",
        ] {
            assert!(text.contains(part), "missing {part:?} in:\n{text}");
        }
        assert!(!text.contains("someone else's"));
        assert!(render(&blueprint, &[]).contains("none recorded"));
    }
}
