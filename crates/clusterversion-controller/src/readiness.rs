//! The pre-update readiness report of a release, in the vocabulary operator upgrades use
//! (`windlass_preview::readiness`): components that are not upgradeable, PodDisruptionBudgets
//! that allow no eviction of the pods the update replaces, API versions the release's CRDs
//! stop serving while objects are read through them, and critical alerts firing (where
//! `spec.prometheus` says where to ask). Each finding is accepted by name in
//! `spec.desiredUpdate.acceptRisks`.

use std::collections::BTreeMap;

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::{Api, api::ListParams};
use serde_json::Value;
use windlass_api::{
    ClusterVersion,
    clusterversion::{ReadinessFinding, ReleaseReadiness},
};
use windlass_kit::ObjectKey;
use windlass_preview::readiness::{self, Finding, FindingKind};
use windlass_release::policy::NotUpgradeable;

use crate::{Context, Loaded, promql};

/// The query that lists the critical alerts firing, as the CVO's own `PromQL` risks read them.
pub const CRITICAL_ALERTS: &str = r#"ALERTS{alertstate="firing",severity="critical"}"#;

/// Pod-template kinds whose pods an update replaces, with where their labels are.
const WORKLOADS: [&str; 3] = ["Deployment", "StatefulSet", "DaemonSet"];

/// The findings for moving the cluster to `loaded`; a read that fails is an `Err`.
pub async fn findings(
    ctx: &Context,
    version: &ClusterVersion,
    loaded: &Loaded,
    not_upgradeable: &[NotUpgradeable],
) -> Result<Vec<Finding>, String> {
    let mut found: Vec<Finding> = not_upgradeable
        .iter()
        .map(|n| readiness::not_upgradeable(&n.risk_name(), &n.component, &n.reason, &n.message))
        .collect();
    let manifests: Vec<&Value> = loaded
        .plan
        .all_levels()
        .flat_map(|level| level.manifests())
        .filter(|m| m.action != windlass_release::Action::Delete)
        .map(|m| &m.body)
        .collect();
    // PodDisruptionBudgets over the pods of the release's workloads, by namespace.
    let mut by_namespace: BTreeMap<String, Vec<BTreeMap<String, String>>> = BTreeMap::new();
    for body in manifests
        .iter()
        .filter(|b| WORKLOADS.contains(&b["kind"].as_str().unwrap_or_default()))
    {
        let labels: BTreeMap<String, String> = body["spec"]["template"]["metadata"]["labels"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect();
        let namespace = body["metadata"]["namespace"].as_str().unwrap_or_default();
        by_namespace
            .entry(namespace.to_string())
            .or_default()
            .push(labels);
    }
    for (namespace, workloads) in &by_namespace {
        let pdbs = Api::<PodDisruptionBudget>::namespaced(ctx.shell.client.clone(), namespace)
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("reading PodDisruptionBudgets in {namespace}: {e}"))?;
        let pdbs: Vec<Value> = pdbs
            .items
            .iter()
            .map(|p| serde_json::to_value(p).unwrap_or_default())
            .collect();
        for labels in workloads {
            for finding in readiness::disruption_budgets(&pdbs, labels) {
                if !found.iter().any(|f| f.name == finding.name) {
                    found.push(finding);
                }
            }
        }
    }
    // API versions the release's CRDs stop serving while objects exist.
    for crd in manifests
        .iter()
        .filter(|b| b["kind"] == "CustomResourceDefinition")
    {
        let key = ObjectKey::of(crd);
        let Ok(Some(live)) = ctx.applier.get(&key).await else {
            continue;
        };
        let group = live["spec"]["group"].as_str().unwrap_or_default();
        let kind = live["spec"]["names"]["kind"].as_str().unwrap_or_default();
        let stored = live["spec"]["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| v["storage"] == true)
            .and_then(|v| v["name"].as_str())
            .unwrap_or_default();
        let objects = ctx
            .applier
            .list_current(&format!("{group}/{stored}"), kind, None, "")
            .await
            .map(|l| l.len())
            .unwrap_or(0);
        found.extend(readiness::apis_no_longer_served(&live, crd, objects));
    }
    // Critical alerts, where the cluster says where to ask; a query that fails is shown, as
    // a finding that holds nothing (the update's own risks judge Prometheus's absence).
    if let Some(spec) = &version.spec.prometheus {
        match critical_alerts(ctx, spec).await {
            Ok(alerts) => found.extend(alerts),
            Err(why) => found.push(Finding {
                name: "CriticalAlerts".into(),
                kind: FindingKind::NotEvaluated,
                message: format!("critical alerts could not be read: {why}"),
            }),
        }
    }
    Ok(found)
}

async fn critical_alerts(
    ctx: &Context,
    spec: &windlass_api::clusterversion::PrometheusEndpoint,
) -> Result<Vec<Finding>, String> {
    let endpoint = promql::endpoint(&ctx.shell.client, &ctx.namespace, spec).await?;
    let answer = endpoint.query(CRITICAL_ALERTS).await?;
    if answer.status != "success" {
        return Err(format!(
            "asking for critical alerts: {}",
            answer.error.unwrap_or_default()
        ));
    }
    Ok(answer
        .data
        .map(|data| readiness::critical_alerts(&data.result))
        .unwrap_or_default())
}

/// The report as status shows it, each finding marked accepted or not.
pub fn report(loaded: &Loaded, findings: &[Finding], accepted: &[String]) -> ReleaseReadiness {
    ReleaseReadiness {
        version: loaded.payload.version().to_string(),
        image: loaded.image.clone(),
        findings: findings
            .iter()
            .map(|f| ReadinessFinding {
                name: f.name.clone(),
                kind: format!("{:?}", f.kind),
                message: f.message.clone(),
                accepted: accepted.contains(&f.name),
            })
            .collect(),
    }
}

/// The findings that hold the update: those not accepted, leaving out components that are
/// not upgradeable, which block minor and major updates only and are judged with the other
/// preconditions, and checks that could not be made.
pub fn holding<'a>(findings: &'a [Finding], accepted: &[String]) -> Vec<&'a Finding> {
    readiness::unaccepted(findings, accepted)
        .into_iter()
        .filter(|f| {
            !matches!(
                f.kind,
                FindingKind::NotUpgradeable | FindingKind::NotEvaluated
            )
        })
        .collect()
}
