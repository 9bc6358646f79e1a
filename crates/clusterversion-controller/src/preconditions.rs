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
        .list_current(CLUSTER_OPERATOR_API, "ClusterOperator", None, "")
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
    (
        false,
        reasons::NOT_UPGRADEABLE,
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
