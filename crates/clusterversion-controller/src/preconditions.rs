//! What may block a forward update: components reporting `Upgradeable=False` (OpenShift's
//! ClusterOperators, where the cluster serves that API) and admin gates not acknowledged
//! (`admin-gates` / `admin-acks` in the manager's namespace), judged by
//! `windlass_release::policy::check_update`.

use semver::Version;
use windlass_api::{
    clusterversion::DesiredUpdate,
    names::{ADMIN_ACKS_CONFIG_MAP, ADMIN_GATES_CONFIG_MAP, reasons::cluster_version as reasons},
};
use windlass_release::{
    admin_gates,
    policy::{NotUpgradeable, Overrides, check_update},
};

use crate::Context;

const CLUSTER_OPERATOR_API: &str = "config.openshift.io/v1";

/// What the cluster says about an update: the components that are not upgradeable (sorted),
/// and every ClusterOperator as read (for the release's own health).
pub struct Readings {
    pub not_upgradeable: Vec<NotUpgradeable>,
    pub operators: Vec<serde_json::Value>,
}

/// Reads the ClusterOperators (a cluster without that API has none) and the admin gates of
/// the manager's namespace for a cluster at `current`; an `Err` is a read that failed.
pub async fn read(ctx: &Context, current: Option<&Version>) -> Result<Readings, String> {
    let operators = match ctx
        .applier
        .list_current(CLUSTER_OPERATOR_API, "ClusterOperator", None, "")
        .await
    {
        Ok(operators) => operators,
        // Not served here: nothing reports upgradeability.
        Err(windlass_kit::ApplyError::List { source, .. }) if is_not_served(&source) => Vec::new(),
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
                risk: None,
            })
        })
        .collect();
    found.sort_by(|a, b| a.component.cmp(&b.component));
    if let Some(current) = current {
        found.extend(admin_gates(ctx, current).await?);
    }
    let operators = operators
        .into_iter()
        .map(|o| {
            let mut value = o.data;
            value["metadata"] = serde_json::json!({"name": o.metadata.name});
            value
        })
        .collect();
    Ok(Readings {
        not_upgradeable: found,
        operators,
    })
}

/// The admin gates of `current`'s minor that no admin acknowledged.
async fn admin_gates(ctx: &Context, current: &Version) -> Result<Vec<NotUpgradeable>, String> {
    let config_maps = ctx.config_maps();
    let data = |name: &'static str| {
        let config_maps = config_maps.clone();
        async move {
            config_maps
                .get_opt(name)
                .await
                .map(|c| c.and_then(|c| c.data).unwrap_or_default())
                .map_err(|e| format!("reading ConfigMap {}/{name}: {e}", ctx.namespace))
        }
    };
    let gates = data(ADMIN_GATES_CONFIG_MAP).await?;
    if gates.is_empty() {
        return Ok(Vec::new());
    }
    let acks = data(ADMIN_ACKS_CONFIG_MAP).await?;
    Ok(
        admin_gates::unacknowledged(&gates, &acks, current).unwrap_or_else(|e| {
            vec![NotUpgradeable {
                component: ADMIN_GATES_CONFIG_MAP.into(),
                reason: reasons::ADMIN_GATES_INVALID.into(),
                message: format!("{}/{ADMIN_GATES_CONFIG_MAP}: {e}", ctx.namespace),
                risk: Some(admin_gates::ADMIN_ACK_REQUIRED.into()),
            }]
        }),
    )
}

fn is_not_served(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => status.code == 404,
        // Discovery finds no such kind.
        kube::Error::Discovery(_) => true,
        _ => false,
    }
}

/// The `Upgradeable` condition for what `blocking` lists: status, reason, message.
pub fn upgradeable(blocking: &[NotUpgradeable]) -> (bool, &'static str, String) {
    if blocking.is_empty() {
        return (
            true,
            reasons::AS_EXPECTED,
            "no component reports Upgradeable=False".into(),
        );
    }
    let listed: Vec<String> = blocking
        .iter()
        .map(|n| format!("{} ({}: {})", n.component, n.reason, n.message))
        .collect();
    let only_acks = blocking.iter().all(|n| n.risk.is_some());
    (
        false,
        if only_acks {
            reasons::ADMIN_ACK_REQUIRED
        } else {
            reasons::NOT_UPGRADEABLE
        },
        format!(
            "not upgradeable, which blocks minor and major updates: {}",
            listed.join("; ")
        ),
    )
}

/// Judges the update from `current` (`None`: the first release, nothing to judge) to `target`
/// with `blocking` not upgradeable: what `acceptRisks` or `force` let through, for history
/// (empty when nothing), or the refusal's message (what blocks it and how to let it through).
pub fn judge(
    blocking: &[NotUpgradeable],
    current: Option<&Version>,
    target: &Version,
    desired: &DesiredUpdate,
) -> Result<String, String> {
    let Some(current) = current else {
        return Ok(String::new());
    };
    let overrides = Overrides {
        force: desired.force,
        accept_risks: desired.accept_risks.iter().cloned().collect(),
    };
    let judged = check_update(current, target, blocking, &overrides);
    if !judged.allowed() {
        let names: Vec<&str> = judged.blocking().map(|r| r.name.as_str()).collect();
        return Err(format!(
            "{}; to go anyway, list {} in spec.desiredUpdate.acceptRisks (or set force)",
            judged.summary(),
            names.join(", ")
        ));
    }
    Ok(judged.accepted_risks())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dns() -> NotUpgradeable {
        NotUpgradeable {
            component: "dns".into(),
            reason: "AdminAckRequired".into(),
            message: "check the DNS settings".into(),
            risk: None,
        }
    }

    #[test]
    fn a_blocking_component_stops_a_minor_update_but_not_a_patch_until_accepted() {
        let v = |s: &str| Version::parse(s).unwrap();
        let desired = DesiredUpdate::default();
        let (ok, _, message) = upgradeable(&[dns()]);
        assert!(!ok);
        assert!(
            message.contains("dns (AdminAckRequired: check the DNS settings)"),
            "{message}"
        );
        assert!(upgradeable(&[]).0);
        assert_eq!(
            judge(&[dns()], Some(&v("4.1.0")), &v("4.1.1"), &desired),
            Ok(String::new())
        );
        let refusal = judge(&[dns()], Some(&v("4.1.0")), &v("4.2.0"), &desired).unwrap_err();
        assert!(
            refusal.contains("ClusterOperatorUpgradeable-dns"),
            "{refusal}"
        );
        let accepted = DesiredUpdate {
            accept_risks: vec!["ClusterOperatorUpgradeable-dns".into()],
            ..DesiredUpdate::default()
        };
        let let_through = judge(&[dns()], Some(&v("4.1.0")), &v("4.2.0"), &accepted).unwrap();
        assert!(
            let_through.contains("ClusterOperatorUpgradeable-dns"),
            "{let_through}"
        );
        assert_eq!(
            judge(&[dns()], None, &v("4.2.0"), &desired),
            Ok(String::new())
        );
    }
}
