//! Requirements a CSV checks before installing anything: the Kubernetes version, the CRDs it
//! owns and requires, and the native APIs it needs. Pure: the caller observes the cluster.

use std::collections::BTreeMap;

use windlass_api::csv::RequirementStatus;
use windlass_bundle::csv::ClusterServiceVersion as OlmCsv;

/// What the cluster looks like, as far as requirements go.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    pub server_version: Option<semver::Version>,
    /// CRD name -> (Established, served versions).
    pub crds: BTreeMap<String, CrdState>,
    /// `group/version/kind` strings the server serves, for the native APIs asked about.
    pub served_kinds: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct CrdState {
    pub established: bool,
    pub served_versions: Vec<String>,
}

pub const PRESENT: &str = "Present";
pub const NOT_PRESENT: &str = "NotPresent";
pub const NOT_SATISFIED: &str = "NotSatisfied";

/// `"1.37.2"`, `"v1.21"`, `"1.16.0-beta.1"`: minKubeVersion as bundles write it.
pub fn parse_kube_version(text: &str) -> Option<semver::Version> {
    let trimmed = text.trim().trim_start_matches('v');
    let core = trimmed.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u64>());
    let major = parts.next()?.ok()?;
    let minor = parts.next().unwrap_or(Ok(0)).ok()?;
    let patch = parts.next().unwrap_or(Ok(0)).ok()?;
    Some(semver::Version::new(major, minor, patch))
}

/// The GVK strings of the native APIs a CSV needs, as `group/version/kind` (core group empty).
pub fn native_kinds(csv: &OlmCsv) -> Vec<String> {
    csv.spec
        .native_apis
        .iter()
        .map(|g| format!("{}/{}/{}", g.group, g.version, g.kind))
        .collect()
}

/// Checks every requirement; all `Present` means the CSV may install.
pub fn check(csv: &OlmCsv, observed: &Observed) -> Vec<RequirementStatus> {
    let mut statuses = Vec::new();
    if let Some(min) = csv
        .spec
        .min_kube_version
        .as_deref()
        .filter(|v| !v.trim().is_empty())
    {
        let status = match (parse_kube_version(min), &observed.server_version) {
            (None, _) => (
                NOT_SATISFIED,
                format!("minKubeVersion {min:?} is not a version"),
            ),
            (Some(_), None) => (NOT_SATISFIED, "the server version is unknown".to_string()),
            (Some(want), Some(have)) if have < &want => (
                NOT_SATISFIED,
                format!("needs Kubernetes {want} or newer, the server is {have}"),
            ),
            (Some(_), Some(have)) => (PRESENT, format!("the server is {have}")),
        };
        statuses.push(RequirementStatus {
            kind: "KubernetesVersion".into(),
            name: min.to_string(),
            status: status.0.into(),
            message: status.1,
        });
    }
    let crds = csv
        .owned_crds()
        .iter()
        .map(|c| ("owned", c))
        .chain(csv.required_crds().iter().map(|c| ("required", c)));
    for (role, crd) in crds {
        let (status, message) = match observed.crds.get(&crd.name) {
            None => (
                NOT_PRESENT,
                format!("{role} CRD {} does not exist", crd.name),
            ),
            Some(state) if !state.established => (
                NOT_SATISFIED,
                format!("{role} CRD {} is not Established", crd.name),
            ),
            Some(state)
                if !crd.version.is_empty() && !state.served_versions.contains(&crd.version) =>
            {
                (
                    NOT_SATISFIED,
                    format!(
                        "{role} CRD {} does not serve version {} (serves {})",
                        crd.name,
                        crd.version,
                        state.served_versions.join(", ")
                    ),
                )
            }
            Some(_) => (PRESENT, String::new()),
        };
        statuses.push(RequirementStatus {
            kind: "CustomResourceDefinition".into(),
            name: crd.name.clone(),
            status: status.into(),
            message,
        });
    }
    for kind in native_kinds(csv) {
        let served = observed.served_kinds.contains(&kind);
        statuses.push(RequirementStatus {
            kind: "NativeAPI".into(),
            message: if served {
                String::new()
            } else {
                format!("the server does not serve {kind}")
            },
            name: kind,
            status: if served { PRESENT } else { NOT_PRESENT }.into(),
        });
    }
    statuses
}

/// One line naming everything missing, for the CSV's status message.
pub fn unmet_summary(statuses: &[RequirementStatus]) -> Option<String> {
    let unmet: Vec<&str> = statuses
        .iter()
        .filter(|s| s.status != PRESENT)
        .map(|s| s.message.as_str())
        .collect();
    if unmet.is_empty() {
        None
    } else {
        Some(unmet.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn csv(spec: serde_json::Value) -> OlmCsv {
        OlmCsv::from_value(
            &json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": "x.v1.0.0"}, "spec": spec}),
        )
        .unwrap()
    }

    fn observed() -> Observed {
        Observed {
            server_version: Some(semver::Version::new(1, 37, 2)),
            crds: [(
                "databases.acme.windlass.dev".to_string(),
                CrdState {
                    established: true,
                    served_versions: vec!["v1".into()],
                },
            )]
            .into(),
            served_kinds: vec!["apps/v1/Deployment".into()],
        }
    }

    #[test]
    fn kube_versions_parse_as_bundles_write_them() {
        assert_eq!(
            parse_kube_version("1.16.0"),
            Some(semver::Version::new(1, 16, 0))
        );
        assert_eq!(
            parse_kube_version("v1.21"),
            Some(semver::Version::new(1, 21, 0))
        );
        assert_eq!(
            parse_kube_version("1.19.0-beta.1"),
            Some(semver::Version::new(1, 19, 0))
        );
        assert_eq!(parse_kube_version("latest"), None);
    }

    #[test]
    fn everything_present_is_met() {
        let c = csv(json!({"minKubeVersion": "1.25.0",
            "customresourcedefinitions": {"required": [{"name": "databases.acme.windlass.dev", "version": "v1", "kind": "Database"}]},
            "nativeAPIs": [{"group": "apps", "version": "v1", "kind": "Deployment"}]}));
        let statuses = check(&c, &observed());
        assert_eq!(statuses.len(), 3);
        assert_eq!(unmet_summary(&statuses), None);
    }

    #[test]
    fn unmet_requirements_are_named() {
        let c = csv(json!({"minKubeVersion": "1.99.0",
            "customresourcedefinitions": {
                "owned": [{"name": "databases.acme.windlass.dev", "version": "v2", "kind": "Database"}],
                "required": [{"name": "monitors.acme.windlass.dev", "version": "v1", "kind": "Monitor"}]},
            "nativeAPIs": [{"group": "example.com", "version": "v1", "kind": "Gadget"}]}));
        let summary = unmet_summary(&check(&c, &observed())).unwrap();
        assert!(
            summary.contains("needs Kubernetes 1.99.0 or newer, the server is 1.37.2"),
            "{summary}"
        );
        assert!(
            summary.contains("owned CRD databases.acme.windlass.dev does not serve version v2"),
            "{summary}"
        );
        assert!(
            summary.contains("required CRD monitors.acme.windlass.dev does not exist"),
            "{summary}"
        );
        assert!(
            summary.contains("does not serve example.com/v1/Gadget"),
            "{summary}"
        );
    }

    #[test]
    fn a_crd_that_is_not_established_is_not_satisfied() {
        let mut o = observed();
        o.crds
            .get_mut("databases.acme.windlass.dev")
            .unwrap()
            .established = false;
        let c = csv(
            json!({"customresourcedefinitions": {"required": [{"name": "databases.acme.windlass.dev", "version": "v1", "kind": "Database"}]}}),
        );
        let statuses = check(&c, &o);
        assert_eq!(statuses[0].status, NOT_SATISFIED);
    }
}
