//! Which bundle a Subscription should run now, and the bundles it needs first.
//!
//! Pure: the served catalog, what the namespace has installed and the Subscriptions that depend
//! on this one go in; the target and its dependencies (in dependency order) come out, or a
//! failure whose message a person can act on.
//!
//! The resolver always prefers what is installed, so it never upgrades by itself. The next
//! version therefore comes from the channel's upgrade graph under the Subscription's policy
//! (`olm`: one edge toward the head; `semver`: the highest version reachable; `any`: the head or
//! the highest version in range, directly), and the resolver is then asked for exactly that
//! version, so the answer still honours every dependency. When that version cannot be installed
//! alongside the rest, the Subscription stays where it is and the reason is kept as a note.

use std::collections::BTreeMap;

use semver::Version;
use windlass_api::{
    blueprint::ResolvedBundle, config::UpgradePolicy, subscription::SubscriptionSpec,
};
use windlass_catalog::{Catalog, Channel, Package, range::VersionRange};
use windlass_resolver::{
    Installed, Plan, Policy, Request, Resolver, Subscription as Wanted, UpgradeGraph,
    policy::{PathError, Start, Target, upgrade_path},
    solve::Action,
};

/// A package the namespace runs now: the last revision of its Blueprint that completed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstalledPackage {
    pub package: String,
    pub version: Version,
    pub csv_name: String,
}

/// Everything one resolution looks at.
#[derive(Clone, Copy, Debug)]
pub struct ResolutionInput<'a> {
    pub subscription: &'a SubscriptionSpec,
    /// The packages the Subscription may install from (one catalog, or all merged by priority).
    pub catalog: &'a Catalog,
    /// The catalog each package was taken from, by package name.
    pub origins: &'a BTreeMap<String, String>,
    pub installed: &'a [InstalledPackage],
    /// Subscriptions whose Blueprints list this package as a dependency. They are resolved
    /// together with this one, so a dependency never moves to a version its users reject.
    pub requesters: &'a [SubscriptionSpec],
}

/// The answer for one Subscription.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolution {
    /// The channel followed (the package's default when the Subscription names none).
    pub channel: String,
    /// The bundle the Subscription should run: the catalog's choice.
    pub target: ResolvedBundle,
    /// What the target needs, dependencies first. Digests are left to their own Subscriptions.
    pub dependencies: Vec<ResolvedBundle>,
    /// Install, upgrade, downgrade or keep, relative to what is installed.
    pub action: Action,
    /// Things a person may want to know (an upgrade held up, resolver warnings).
    pub notes: Vec<String>,
}

/// Why nothing could be resolved: `reason` for the condition, `message` for a person.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ResolutionFailure {
    pub reason: String,
    pub message: String,
}

impl ResolutionFailure {
    pub fn new(reason: &str, message: impl Into<String>) -> ResolutionFailure {
        ResolutionFailure {
            reason: reason.to_string(),
            message: message.into(),
        }
    }

    /// Failures that may only mean the catalogs have not all been read yet (just after the
    /// manager starts), as opposed to a Subscription that asks for something wrong.
    pub fn may_be_catalogs_loading(&self) -> bool {
        matches!(
            self.reason.as_str(),
            reasons::PACKAGE_NOT_FOUND | reasons::NO_CATALOG | reasons::CATALOG_NOT_SERVED
        )
    }
}

pub use windlass_api::names::reasons::resolution as reasons;

/// The resolver's policy for the API's upgrade policy (the same three words).
pub fn policy(upgrade_policy: UpgradePolicy) -> Policy {
    match upgrade_policy {
        UpgradePolicy::Olm => Policy::Olm,
        UpgradePolicy::Semver => Policy::Semver,
        UpgradePolicy::Any => Policy::Any,
    }
}

/// Resolves one Subscription; the same input always gives the same answer.
pub fn resolve(input: &ResolutionInput<'_>) -> Result<Resolution, ResolutionFailure> {
    let spec = input.subscription;
    let package = find_package(input)?;
    let channel = find_channel(package, spec.channel.as_deref())?;
    let range = parse_range(spec)?;
    let installed = input.installed.iter().find(|i| i.package == spec.package);
    let mut notes = Vec::new();

    let base = match installed {
        Some(_) => wanted(spec, range.clone()),
        None => first_install(spec, package, channel, range.clone())?,
    };
    let others = requesters(input, &mut notes);
    let resolver = Resolver::new(input.catalog);
    // Packages this catalog does not offer (installed from another one) constrain nothing
    // here; left in, they would only add warnings about themselves to every message.
    let known: Vec<Installed> = input
        .installed
        .iter()
        .filter(|i| input.catalog.packages.contains_key(&i.package))
        .map(as_installed)
        .collect();
    let request = |me: Wanted| Request {
        installed: known.clone(),
        subscriptions: std::iter::once(me).chain(others.iter().cloned()).collect(),
    };

    let upgrade = match installed {
        Some(current) => next_step(package, channel, current, range.as_ref(), spec, &mut notes),
        None => None,
    };
    let plan = match upgrade {
        Some((csv_name, version)) => {
            let exact = wanted(spec, Some(VersionRange::exact(&version)));
            match resolver.resolve(&request(exact)) {
                Ok(plan) => plan,
                Err(why) => {
                    notes.push(format!("the upgrade to {csv_name} has to wait: {why}"));
                    resolve_or_explain(&resolver, &request(base))?
                }
            }
        }
        None => resolve_or_explain(&resolver, &request(base))?,
    };
    notes.extend(plan.warnings.iter().cloned());
    let (target, dependencies, action) = extract(input, &plan)?;
    Ok(Resolution {
        channel: channel.name.clone(),
        target,
        dependencies,
        action,
        notes,
    })
}

/// A one-line summary for the `ResolutionSucceeded` condition.
pub fn summary(resolution: &Resolution) -> String {
    let target = &resolution.target;
    let mut text = format!(
        "{} {} from channel {}",
        target.cluster_service_version_name, target.version, resolution.channel
    );
    if let Some(catalog) = &target.catalog {
        text.push_str(&format!(" of catalog {catalog}"));
    }
    if !resolution.dependencies.is_empty() {
        let names: Vec<&str> = resolution
            .dependencies
            .iter()
            .map(|d| d.cluster_service_version_name.as_str())
            .collect();
        text.push_str(&format!("; needs {}", names.join(", ")));
    }
    for note in &resolution.notes {
        text.push('\n');
        text.push_str(note);
    }
    text
}

fn find_package<'c>(input: &ResolutionInput<'c>) -> Result<&'c Package, ResolutionFailure> {
    let name = &input.subscription.package;
    input.catalog.packages.get(name).ok_or_else(|| {
        let mut catalogs: Vec<&str> = input.origins.values().map(String::as_str).collect();
        catalogs.sort_unstable();
        catalogs.dedup();
        let searched = match (&input.subscription.catalog, catalogs.is_empty()) {
            (Some(only), _) => format!("catalog {only} does not offer it"),
            (None, true) => "the served catalogs offer no packages".to_string(),
            (None, false) => format!("searched catalogs: {}", catalogs.join(", ")),
        };
        ResolutionFailure::new(
            reasons::PACKAGE_NOT_FOUND,
            format!("no catalog offers package {name} ({searched})"),
        )
    })
}

fn find_channel<'p>(
    package: &'p Package,
    wanted: Option<&str>,
) -> Result<&'p Channel, ResolutionFailure> {
    let names = || {
        package
            .channels
            .keys()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    };
    match wanted {
        Some(name) => package.channels.get(name).ok_or_else(|| {
            ResolutionFailure::new(
                reasons::CHANNEL_NOT_FOUND,
                format!(
                    "package {} has no channel {name} (channels: {}{})",
                    package.name,
                    names(),
                    package
                        .default_channel
                        .as_ref()
                        .map(|d| format!("; default {d}"))
                        .unwrap_or_default()
                ),
            )
        }),
        None => package.default_channel().ok_or_else(|| {
            ResolutionFailure::new(
                reasons::NO_DEFAULT_CHANNEL,
                format!(
                    "package {} declares no default channel; set spec.channel to one of {}",
                    package.name,
                    names()
                ),
            )
        }),
    }
}

fn parse_range(spec: &SubscriptionSpec) -> Result<Option<VersionRange>, ResolutionFailure> {
    spec.version_range
        .as_deref()
        .map(|text| {
            VersionRange::parse(text).map_err(|error| {
                ResolutionFailure::new(
                    reasons::INVALID_VERSION_RANGE,
                    format!("spec.versionRange {text:?} is not a version range: {error}"),
                )
            })
        })
        .transpose()
}

fn wanted(spec: &SubscriptionSpec, range: Option<VersionRange>) -> Wanted {
    Wanted {
        package: spec.package.clone(),
        channel: spec.channel.clone(),
        range,
        policy: policy(spec.upgrade_policy),
    }
}

/// Nothing installed yet: the channel's best in range, or exactly `startingCSV`.
fn first_install(
    spec: &SubscriptionSpec,
    package: &Package,
    channel: &Channel,
    range: Option<VersionRange>,
) -> Result<Wanted, ResolutionFailure> {
    let Some(starting) = spec.starting_csv.as_deref() else {
        return Ok(wanted(spec, range));
    };
    let not_found = |why: String| {
        ResolutionFailure::new(
            reasons::STARTING_CSV_NOT_FOUND,
            format!("spec.startingCSV {starting}: {why}"),
        )
    };
    let bundle = package
        .bundles
        .get(starting)
        .ok_or_else(|| not_found(format!("package {} has no such bundle", package.name)))?;
    if channel.entry(starting).is_none() {
        return Err(not_found(format!(
            "it is not in channel {} of package {}",
            channel.name, package.name
        )));
    }
    if let Some(r) = range.as_ref().filter(|r| !r.matches(&bundle.version)) {
        return Err(not_found(format!(
            "its version {} is outside spec.versionRange {r}",
            bundle.version
        )));
    }
    Ok(wanted(spec, Some(VersionRange::exact(&bundle.version))))
}

/// The requesters as resolver subscriptions; those whose package this catalog does not offer
/// cannot constrain anything here and are left out (with a note).
fn requesters(input: &ResolutionInput<'_>, notes: &mut Vec<String>) -> Vec<Wanted> {
    let mut out = Vec::new();
    for spec in input.requesters {
        if spec.package == input.subscription.package {
            continue;
        }
        let Some(package) = input.catalog.packages.get(&spec.package) else {
            notes.push(format!(
                "{} needs this package but is not offered by the same catalog; its constraints are not checked here",
                spec.package
            ));
            continue;
        };
        let range = parse_range(spec).ok().flatten();
        let installed = input.installed.iter().any(|i| i.package == spec.package);
        let sub = match find_channel(package, spec.channel.as_deref()) {
            Ok(channel) if !installed => first_install(spec, package, channel, range.clone()).ok(),
            _ => None,
        };
        out.push(sub.unwrap_or_else(|| wanted(spec, range)));
    }
    out
}

/// The version the policy moves an installed package to next, if any. Problems with the channel
/// (no head, nothing upgrades from here) are notes: the package then simply stays.
fn next_step(
    package: &Package,
    channel: &Channel,
    current: &InstalledPackage,
    range: Option<&VersionRange>,
    spec: &SubscriptionSpec,
    notes: &mut Vec<String>,
) -> Option<(String, Version)> {
    let graph = UpgradeGraph::build(package, channel);
    let start = Start {
        name: Some(current.csv_name.clone()),
        version: current.version.clone(),
    };
    let target = range.map(|r| Target::Range(r.clone()));
    let policy = policy(spec.upgrade_policy);
    let path = match upgrade_path(&graph, channel, &start, target.as_ref(), policy) {
        Ok(path) => path,
        Err(PathError::NoSuchTarget { .. } | PathError::Unreachable { .. }) if range.is_some() => {
            // The resolver explains ranges better, with what is installed in view.
            return None;
        }
        Err(error) => {
            notes.push(error.to_string());
            return None;
        }
    };
    let in_range = |v: &Version| range.is_none_or(|r| r.matches(v));
    let mut hops = path
        .hops
        .iter()
        .filter_map(|h| h.to_version.as_ref().map(|v| (h, v)))
        .filter(|(_, v)| in_range(v));
    // `olm` moves one edge at a time (the next resolution, after this step Succeeded, takes the
    // next one); the others go straight to where their path ends.
    let hop = match policy {
        Policy::Olm => hops.next(),
        Policy::Semver | Policy::Any => hops.next_back(),
    };
    hop.filter(|(h, _)| h.to != current.csv_name)
        .map(|(h, v)| (h.to.clone(), v.clone()))
}

fn as_installed(i: &InstalledPackage) -> Installed {
    Installed {
        package: i.package.clone(),
        version: i.version.clone(),
        bundle: Some(i.csv_name.clone()),
    }
}

fn resolve_or_explain(
    resolver: &Resolver<'_>,
    request: &Request,
) -> Result<Plan, ResolutionFailure> {
    resolver
        .resolve(request)
        .map_err(|why| ResolutionFailure::new(&why.reason, why.to_string()))
}

/// The target step and the steps it needs, in plan (dependency) order.
fn extract(
    input: &ResolutionInput<'_>,
    plan: &Plan,
) -> Result<(ResolvedBundle, Vec<ResolvedBundle>, Action), ResolutionFailure> {
    let package = &input.subscription.package;
    let target = plan
        .steps
        .iter()
        .find(|s| &s.package == package)
        .ok_or_else(|| {
            ResolutionFailure::new(
                "SubscriptionUnsatisfiable",
                format!("the resolver's plan has no bundle of {package}"),
            )
        })?;
    // Walk depends_on from the target: requesters resolved alongside are not dependencies.
    let mut needed: Vec<&str> = target.depends_on.iter().map(String::as_str).collect();
    let mut closure: Vec<&str> = Vec::new();
    while let Some(name) = needed.pop() {
        if closure.contains(&name) || name == target.bundle {
            continue;
        }
        closure.push(name);
        if let Some(step) = plan.steps.iter().find(|s| s.bundle == name) {
            needed.extend(step.depends_on.iter().map(String::as_str));
        }
    }
    let dependencies = plan
        .steps
        .iter()
        .filter(|s| closure.contains(&s.bundle.as_str()))
        .map(|s| resolved(input, &s.package, &s.bundle, &s.version))
        .collect();
    Ok((
        resolved(input, &target.package, &target.bundle, &target.version),
        dependencies,
        target.action.clone(),
    ))
}

fn resolved(
    input: &ResolutionInput<'_>,
    package: &str,
    csv_name: &str,
    version: &Version,
) -> ResolvedBundle {
    let image = input
        .catalog
        .packages
        .get(package)
        .and_then(|p| p.bundles.get(csv_name))
        .and_then(|b| b.image.clone());
    ResolvedBundle {
        package: package.to_string(),
        cluster_service_version_name: csv_name.to_string(),
        version: version.to_string(),
        catalog: input.origins.get(package).cloned(),
        image,
        digest: None,
    }
}

#[cfg(test)]
#[path = "resolution_tests.rs"]
mod tests;
