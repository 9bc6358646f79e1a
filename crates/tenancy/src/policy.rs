//! InstallPolicies evaluated for one install: which policy permits it, as whom it is installed,
//! and, when none permits it, a refusal that says what is missing.

use std::collections::{BTreeMap, BTreeSet};

use windlass_api::selector::label_selector_matches;
use windlass_api::{
    names::reasons::policy as reasons,
    policy::{ClusterScopedGrant, InstallModeType, InstallPolicy, InstallPolicySpec, Revocation},
};

/// The install ServiceAccount when neither the Subscription nor a policy names one.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "windlass-installer";

/// The namespace an install happens in.
#[derive(Clone, Copy, Debug)]
pub struct NamespaceFacts<'a> {
    pub name: &'a str,
    pub labels: &'a BTreeMap<String, String>,
}

/// One install to decide on.
#[derive(Clone, Copy, Debug)]
pub struct InstallRequest<'a> {
    pub namespace: NamespaceFacts<'a>,
    pub package: &'a str,
    /// The Catalog the bundle was resolved from.
    pub catalog: Option<&'a str>,
    pub mode: InstallModeType,
    pub targets: &'a [String],
    /// The cluster-scoped grants the bundle needs ([`crate::needs`]).
    pub needs: &'a BTreeSet<ClusterScopedGrant>,
    /// The Subscription's `serviceAccountName`.
    pub service_account: Option<&'a str>,
}

/// Whom windlass acts as when it installs.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Identity {
    /// The manager's own identity (trusted namespaces only).
    Manager,
    /// A ServiceAccount, impersonated.
    ServiceAccount { namespace: String, name: String },
}

impl Identity {
    /// The user name the API server knows the identity by (`None` for the manager).
    pub fn username(&self) -> Option<String> {
        match self {
            Identity::Manager => None,
            Identity::ServiceAccount { namespace, name } => {
                Some(format!("system:serviceaccount:{namespace}:{name}"))
            }
        }
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Identity::Manager => f.write_str("the windlass manager"),
            Identity::ServiceAccount { namespace, name } => {
                write!(f, "ServiceAccount {namespace}/{name}")
            }
        }
    }
}

/// An install a policy permits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Permit {
    /// The policy that permits it (`None`: what every namespace may do without one).
    pub policy: Option<String>,
    /// That policy's `metadata.generation`: a permit holds for this generation only.
    pub policy_generation: Option<i64>,
    /// What the policy says happens to the install when it stops granting it.
    pub revocation: Revocation,
    pub identity: Identity,
    /// The cluster-scoped objects the manager may create for it.
    pub granted: BTreeSet<ClusterScopedGrant>,
}

/// A running install that no policy permits as it is any more, but one permits without some
/// cluster-scoped objects it has: what it keeps, and what it loses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Narrowed {
    /// What it may still have, from the first candidate that permits everything else.
    pub permit: Permit,
    /// The grants it needs and no policy gives it any more.
    pub withdrawn: BTreeSet<ClusterScopedGrant>,
}

/// Why a running install is not permitted as it is, and what it keeps if a policy permits it
/// without some of its cluster-scoped objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotPermitted {
    pub refusal: Refusal,
    pub narrowed: Option<Box<Narrowed>>,
}

/// Why no policy permits an install.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// CamelCase, for the condition.
    pub reason: &'static str,
    pub message: String,
}

/// What each candidate (every matching policy, then the baseline) lacks.
struct Shortfall {
    reason: &'static str,
    problems: Vec<String>,
}

/// Whether `policy` applies to `namespace`: named in `namespaces`, or matched by
/// `namespaceSelector` (an empty selector matches every namespace, as in Kubernetes).
pub fn selects(policy: &InstallPolicySpec, namespace: &NamespaceFacts<'_>) -> bool {
    policy.namespaces.iter().any(|n| n == namespace.name)
        || policy
            .namespace_selector
            .as_ref()
            .is_some_and(|s| label_selector_matches(s, namespace.labels))
}

/// What `spec` (or the baseline, `None`) lacks for `request`; empty when it permits it.
fn shortfall(spec: Option<&InstallPolicySpec>, request: &InstallRequest<'_>) -> Shortfall {
    let baseline = InstallPolicySpec::default();
    let spec = spec.unwrap_or(&baseline);
    let mut reason = "";
    let mut problems = Vec::new();
    let mut fail = |r: &'static str, problem: String| {
        if reason.is_empty() {
            reason = r;
        }
        problems.push(problem);
    };
    if let Some(catalog) = request.catalog
        && !spec.catalogs.is_empty()
        && !spec.catalogs.iter().any(|c| c == catalog)
    {
        fail(
            reasons::CATALOG_NOT_ALLOWED,
            format!(
                "catalog {catalog} is not among {}",
                spec.catalogs.join(", ")
            ),
        );
    }
    if !spec.packages.is_empty() && !spec.packages.iter().any(|p| p == request.package) {
        fail(
            reasons::PACKAGE_NOT_ALLOWED,
            format!(
                "package {} is not among {}",
                request.package,
                spec.packages.join(", ")
            ),
        );
    }
    if request.mode != InstallModeType::OwnNamespace && !spec.install_modes.contains(&request.mode)
    {
        fail(
            reasons::INSTALL_MODE_NOT_ALLOWED,
            format!("install mode {} is not allowed", request.mode.as_str()),
        );
    }
    if matches!(
        request.mode,
        InstallModeType::SingleNamespace | InstallModeType::MultiNamespace
    ) {
        let outside: Vec<&str> = request
            .targets
            .iter()
            .map(String::as_str)
            .filter(|t| *t != request.namespace.name)
            .filter(|t| !spec.target_namespaces.iter().any(|allowed| allowed == t))
            .collect();
        if !outside.is_empty() {
            fail(
                reasons::TARGET_NAMESPACE_NOT_ALLOWED,
                format!("target namespace {} is not allowed", outside.join(", ")),
            );
        }
    }
    let missing: Vec<&str> = request
        .needs
        .iter()
        .filter(|n| !spec.cluster_scoped.contains(n))
        .map(|n| n.as_str())
        .collect();
    if !missing.is_empty() {
        fail(
            reasons::CLUSTER_SCOPED_NOT_ALLOWED,
            format!("cluster-scoped {} not granted", missing.join(", ")),
        );
    }
    Shortfall { reason, problems }
}

/// Decides `request` against `policies`: the first policy (by name) that permits it wins; the
/// baseline (OwnNamespace, namespaced objects only, as the install ServiceAccount) applies to
/// every namespace. A refusal names each candidate and what it lacks.
pub fn evaluate(
    request: &InstallRequest<'_>,
    policies: &[InstallPolicy],
) -> Result<Permit, Refusal> {
    let matching = crate::scope::selecting(&request.namespace, policies);
    // The namespace's install ServiceAccount: the Subscription's, else the first policy's that
    // names one, else the default.
    let default_account = matching
        .iter()
        .find_map(|(_, spec)| spec.service_account_name.as_deref())
        .unwrap_or(DEFAULT_SERVICE_ACCOUNT);
    let identity = |spec: Option<&InstallPolicySpec>| match (request.service_account, spec) {
        (None, Some(spec)) if spec.trusted => Identity::Manager,
        (explicit, spec) => Identity::ServiceAccount {
            namespace: request.namespace.name.to_string(),
            name: explicit
                .or(spec.and_then(|s| s.service_account_name.as_deref()))
                .unwrap_or(default_account)
                .to_string(),
        },
    };
    let generation = |name: &str| {
        policies
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some(name))
            .and_then(|p| p.metadata.generation)
    };
    let permit = |name: Option<&str>, spec: Option<&InstallPolicySpec>| Permit {
        policy: name.map(str::to_string),
        policy_generation: name.and_then(generation),
        revocation: spec.map(|s| s.revocation).unwrap_or_default(),
        identity: identity(spec),
        granted: spec
            .map(|s| s.cluster_scoped.iter().copied().collect())
            .unwrap_or_default(),
    };
    let mut refusals = Vec::new();
    for (name, spec) in &matching {
        let lacks = shortfall(Some(spec), request);
        if lacks.problems.is_empty() {
            return Ok(permit(Some(name), Some(spec)));
        }
        refusals.push((format!("InstallPolicy {name}"), lacks));
    }
    let lacks = shortfall(None, request);
    if lacks.problems.is_empty() {
        // What every namespace may do still applies when no policy permits more: policies
        // grant, they never take away (a namespace admin can create namespaced objects anyway).
        return Ok(permit(None, None));
    }
    refusals.push(("without a policy".into(), lacks));
    // The candidate that lacks least says best what to change.
    refusals.sort_by_key(|(_, lacks)| lacks.problems.len());
    let reason = refusals[0].1.reason;
    let details: Vec<String> = refusals
        .iter()
        .map(|(who, lacks)| format!("{who}: {}", lacks.problems.join("; ")))
        .collect();
    Err(Refusal {
        reason,
        message: format!(
            "namespace {} may not install {} this way: {}",
            request.namespace.name,
            request.package,
            details.join(". ")
        ),
    })
}

/// [`evaluate`] for an install that runs already. When no policy permits it as it is, the
/// first candidate (each selecting policy by name, then the baseline) that would permit it
/// without some of its cluster-scoped objects says what it keeps; `Err` with `None` when none
/// permits even that (its install mode, target namespaces, catalog or package are refused).
pub fn evaluate_running(
    request: &InstallRequest<'_>,
    policies: &[InstallPolicy],
) -> Result<Permit, NotPermitted> {
    let refusal = match evaluate(request, policies) {
        Ok(permit) => return Ok(permit),
        Err(refusal) => refusal,
    };
    let matching = crate::scope::selecting(&request.namespace, policies);
    let baseline = InstallPolicySpec::default();
    let candidates = matching
        .iter()
        .map(|(_, spec)| *spec)
        .chain(std::iter::once(&baseline));
    for spec in candidates {
        let kept: BTreeSet<ClusterScopedGrant> = request
            .needs
            .iter()
            .copied()
            .filter(|n| spec.cluster_scoped.contains(n))
            .collect();
        let narrower = InstallRequest {
            needs: &kept,
            ..*request
        };
        // Evaluated alone, so the identity and generation are this candidate's.
        let Ok(permit) = evaluate(&narrower, policies) else {
            continue;
        };
        let withdrawn = request.needs.difference(&kept).copied().collect();
        return Err(NotPermitted {
            refusal,
            narrowed: Some(Box::new(Narrowed { permit, withdrawn })),
        });
    }
    Err(NotPermitted {
        refusal,
        narrowed: None,
    })
}

/// Whether some policy that selects the namespace grants `grant` for `package` from
/// `catalog`: for what an uninstall does (deleting CRDs), decided when it happens.
pub fn grants(
    namespace: &NamespaceFacts<'_>,
    package: &str,
    catalog: Option<&str>,
    grant: ClusterScopedGrant,
    policies: &[InstallPolicy],
) -> bool {
    crate::scope::selecting(namespace, policies)
        .iter()
        .any(|(_, spec)| {
            spec.cluster_scoped.contains(&grant)
                && (spec.packages.is_empty() || spec.packages.iter().any(|p| p == package))
                && catalog.is_none_or(|c| {
                    spec.catalogs.is_empty() || spec.catalogs.iter().any(|a| a == c)
                })
        })
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
