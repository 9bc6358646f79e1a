//! Admin acknowledgements, as the CVO has them: a gate ConfigMap whose keys
//! `ack-<major>.<minor>-<name>` each name something a cluster admin must acknowledge before a
//! cluster at `<major>.<minor>` moves to the next minor (an API removal, a behaviour change),
//! with the explanation as the value; an acks ConfigMap where the admin sets the same key to
//! `"true"`. An unacknowledged gate of the current minor makes the cluster not upgradeable
//! (`AdminAckRequired`), which blocks minor and major updates, never patches. See OpenShift's
//! "Preparing to update to ..." documentation on `admin-acks`.

use std::collections::BTreeMap;

use semver::Version;

use crate::policy::NotUpgradeable;

/// The risk name an unacknowledged gate raises, as the CVO's reason reads.
pub const ADMIN_ACK_REQUIRED: &str = "AdminAckRequired";

/// A gate that cannot be read as the CVO defines gates.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GateError {
    #[error("admin-gates key {key:?} is not of the form ack-<major>.<minor>-<name>")]
    BadKey { key: String },
    #[error("admin-gates key {key:?} has no description to show the admin")]
    NoDescription { key: String },
}

/// The gate's `<major>.<minor>`, or why the key is not a gate.
fn gate_version(key: &str) -> Result<(u64, u64), GateError> {
    let bad = || GateError::BadKey {
        key: key.to_string(),
    };
    let rest = key.strip_prefix("ack-").ok_or_else(bad)?;
    let (version, name) = rest.split_once('-').ok_or_else(bad)?;
    if name.is_empty() || name.starts_with('-') {
        return Err(bad());
    }
    let (major, minor) = version.split_once('.').ok_or_else(bad)?;
    Ok((
        major.parse().map_err(|_| bad())?,
        minor.parse().map_err(|_| bad())?,
    ))
}

/// The gates of `current`'s minor that `acks` does not acknowledge, as components that are
/// not upgradeable (sorted by key). A malformed gate is an error (the cluster is then not
/// upgradeable: a gate nobody can read must not be skipped).
pub fn unacknowledged(
    gates: &BTreeMap<String, String>,
    acks: &BTreeMap<String, String>,
    current: &Version,
) -> Result<Vec<NotUpgradeable>, GateError> {
    let mut blocking = Vec::new();
    for (key, description) in gates {
        let (major, minor) = gate_version(key)?;
        if (major, minor) != (current.major, current.minor) {
            continue;
        }
        if description.trim().is_empty() {
            return Err(GateError::NoDescription { key: key.clone() });
        }
        if acks.get(key).map(String::as_str) == Some("true") {
            continue;
        }
        blocking.push(NotUpgradeable {
            component: format!("admin-acks/{key}"),
            reason: ADMIN_ACK_REQUIRED.into(),
            message: format!("{description} (set {key}: \"true\" in the admin-acks ConfigMap)"),
            risk: Some(ADMIN_ACK_REQUIRED.into()),
        });
    }
    Ok(blocking)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_gate_of_the_current_minor_blocks_until_acked() {
        let gates = map(&[
            (
                "ack-4.1-kube-api-removals",
                "v1beta1 Ingress is removed in 4.2",
            ),
            ("ack-4.0-old", "no longer relevant"),
        ]);
        let at = Version::new(4, 1, 1);
        let blocking = unacknowledged(&gates, &BTreeMap::new(), &at).unwrap();
        assert_eq!(blocking.len(), 1);
        assert_eq!(blocking[0].risk_name(), ADMIN_ACK_REQUIRED);
        assert!(blocking[0].message.contains("v1beta1 Ingress"));
        let acked = map(&[("ack-4.1-kube-api-removals", "true")]);
        assert!(unacknowledged(&gates, &acked, &at).unwrap().is_empty());
        // Any value but "true" is no acknowledgement.
        let maybe = map(&[("ack-4.1-kube-api-removals", "yes")]);
        assert_eq!(unacknowledged(&gates, &maybe, &at).unwrap().len(), 1);
    }

    #[test]
    fn a_malformed_gate_is_an_error_naming_its_key() {
        let at = Version::new(4, 1, 0);
        let bad = unacknowledged(&map(&[("ack-four-x", "x")]), &BTreeMap::new(), &at).unwrap_err();
        assert!(bad.to_string().contains("ack-four-x"));
        let empty = unacknowledged(&map(&[("ack-4.1-x", " ")]), &BTreeMap::new(), &at).unwrap_err();
        assert_eq!(
            empty,
            GateError::NoDescription {
                key: "ack-4.1-x".into()
            }
        );
    }
}
