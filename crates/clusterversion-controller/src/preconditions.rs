//! What may block a forward update: components reporting `Upgradeable=False` (OpenShift's
//! ClusterOperators, where the cluster serves that API), judged by
//! `windlass_release::policy::check_update`.

use semver::Version;
use windlass_api::{clusterversion::DesiredUpdate, names::reasons::cluster_version as reasons};
use windlass_release::policy::{NotUpgradeable, Overrides, check_update};

use crate::Context;

const CLUSTER_OPERATOR_API: &str = "config.openshift.io/v1";

/// The components whose `Upgradeable` condition is False. A cluster without the
/// ClusterOperator API has none; an `Err` is a read that failed.
pub async fn not_upgradeable(ctx: &Context) -> Result<Vec<NotUpgradeable>, String> {
    let operators = match ctx
        .applier
        .list(CLUSTER_OPERATOR_API, "ClusterOperator", None, "")
        .await
    {
        Ok(operators) => operators,
        // Not served here: nothing reports upgradeability.
        Err(windlass_kit::ApplyError::List { source, .. }) if is_not_served(&source) => {
            return Ok(Vec::new());
        }
        Err(e) => return Err(format!("reading ClusterOperators: {e}")),
    };
    let mut found: Vec<NotUpgradeable> = operators
        .iter()
        .filter_map(|operator| {
            let conditions = operator.data["status"]["conditions"].as_array()?;
            let upgradeable = conditions.iter().find(|c| c["type"] == "Upgradeable")?;
            (upgradeable["status"] == "False").then(|| NotUpgradeable {
                component: operator.metadata.name.clone().unwrap_or_default(),
                reason: upgradeable["reason"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                message: upgradeable["message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            })
        })
        .collect();
    found.sort_by(|a, b| a.component.cmp(&b.component));
    Ok(found)
}

fn is_not_served(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => status.code == 404,
        // Discovery finds no such kind.
        kube::Error::Discovery(_) => true,
        _ => false,
    }
}

/// The preconditions of an update to `target`, judged.
pub struct Judged {
    /// The `Upgradeable` condition: status, reason, message.
    pub upgradeable: (bool, &'static str, String),
    /// What `acceptRisks` or `force` let through, for history (empty when nothing).
    pub accepted: String,
}

/// Judges the update from `current` (`None`: the first release, nothing to judge) to `target`;
/// an `Err` is the refusal's message (what blocks it and how to let it through).
pub async fn judge(
    ctx: &Context,
    current: Option<&Version>,
    target: &Version,
    desired: &DesiredUpdate,
) -> Result<Judged, String> {
    let blocking = not_upgradeable(ctx).await?;
    let listed: Vec<String> = blocking
        .iter()
        .map(|n| format!("{} ({}: {})", n.component, n.reason, n.message))
        .collect();
    let upgradeable = if listed.is_empty() {
        (true, reasons::AS_EXPECTED, String::new())
    } else {
        (
            false,
            reasons::NOT_UPGRADEABLE,
            format!(
                "not upgradeable, which blocks minor and major updates: {}",
                listed.join("; ")
            ),
        )
    };
    let Some(current) = current else {
        return Ok(Judged {
            upgradeable,
            accepted: String::new(),
        });
    };
    let overrides = Overrides {
        force: desired.force,
        accept_risks: desired.accept_risks.iter().cloned().collect(),
    };
    let judged = check_update(current, target, &blocking, &overrides);
    if !judged.allowed() {
        let names: Vec<&str> = judged.blocking().map(|r| r.name.as_str()).collect();
        return Err(format!(
            "{}; to go anyway, list {} in spec.desiredUpdate.acceptRisks (or set force)",
            judged.summary(),
            names.join(", ")
        ));
    }
    Ok(Judged {
        upgradeable,
        accepted: judged.accepted_risks(),
    })
}
