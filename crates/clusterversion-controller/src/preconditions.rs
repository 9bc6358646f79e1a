//! What may block a forward update: components reporting `Upgradeable=False` (OpenShift's
//! ClusterOperators, where the cluster serves that API), judged by
//! `windlass_release::policy::check_update`.

use windlass_release::policy::NotUpgradeable;

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
