//! Which manifests of a payload this cluster takes: its profile, its capabilities (an enabled
//! capability stays enabled, `windlass_release::capabilities`). Overrides are not a matter of
//! inclusion: an unmanaged object stays in the plan and is skipped where it is applied.

use std::collections::BTreeSet;

use windlass_api::{ClusterVersion, ClusterVersionStatus, clusterversion::CapabilitiesStatus};
use windlass_release::{InclusionOptions, annotations::DEFAULT_PROFILE, capabilities};

/// The inclusion options of `version` and the capabilities status that goes with them, or
/// why the spec cannot be honoured.
pub fn options(
    version: &ClusterVersion,
    status: &ClusterVersionStatus,
) -> Result<(InclusionOptions, Option<CapabilitiesStatus>), String> {
    let spec = &version.spec;
    let (capabilities, shown) = match &spec.capabilities {
        None => (None, None),
        Some(asked) => {
            let before: BTreeSet<String> = status
                .capabilities
                .iter()
                .flat_map(|c| c.enabled_capabilities.iter().cloned())
                .collect();
            let effective = capabilities::effective(
                asked.baseline_capability_set.as_deref(),
                &asked.additional_enabled_capabilities,
                &before,
            )
            .map_err(|e| e.to_string())?;
            let shown = CapabilitiesStatus {
                enabled_capabilities: effective.enabled.iter().cloned().collect(),
                known_capabilities: capabilities::known().iter().cloned().collect(),
            };
            (Some(effective.inclusion()), Some(shown))
        }
    };
    let options = InclusionOptions {
        profile: spec
            .profile
            .clone()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| DEFAULT_PROFILE.to_string()),
        capabilities,
        ..InclusionOptions::default()
    };
    Ok((options, shown))
}
