//! What a namespace has installed, who needs whom, and the Subscriptions dependencies get.
//!
//! A dependency gets a Subscription of its own, named after its package, so it is upgraded,
//! rolled back and reported like any other. Each Subscription that needs it is one of its
//! (non-controller) owners, so Kubernetes deletes it only once nobody needs it any more. A
//! Subscription a person created for the package is used as it is and never owned.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::ResourceExt;
use semver::Version;
use windlass_api::names::labels;
use windlass_api::{
    Blueprint, Subscription,
    blueprint::{ResolvedBundle, RevisionOutcome},
    subscription::SubscriptionSpec,
};

use crate::{intent::owner_reference, resolution::InstalledPackage};

/// What the other Subscriptions of a namespace read from a Blueprint: its package, what it
/// depends on, whether it is leaving, and what it last completed ([`installed_packages`],
/// [`requesters`]). A Blueprint change that leaves these alone matters only to its own
/// Subscription, so only that one is woken.
#[derive(Clone, Debug, PartialEq)]
pub struct NeighbourView {
    package: String,
    dependencies: Vec<ResolvedBundle>,
    leaving: bool,
    completed: Option<(String, String)>,
}

impl NeighbourView {
    pub fn of(blueprint: &Blueprint) -> NeighbourView {
        let completed = blueprint.status.as_ref().and_then(|s| {
            s.history
                .iter()
                .find(|r| r.outcome == RevisionOutcome::Completed)
                .map(|r| (r.version.clone(), r.cluster_service_version_name.clone()))
        });
        NeighbourView {
            package: blueprint.spec.package.clone(),
            dependencies: blueprint.spec.dependencies.clone(),
            leaving: blueprint.metadata.deletion_timestamp.is_some(),
            completed,
        }
    }

    /// Whether the Blueprint is being deleted.
    pub fn leaving(&self) -> bool {
        self.leaving
    }

    /// Whether the Blueprint shows its neighbours nothing yet: no dependency, nothing
    /// completed, not leaving. A new Blueprint seen like this wakes no neighbour.
    pub fn inert(&self) -> bool {
        self.dependencies.is_empty() && self.completed.is_none() && !self.leaving
    }
}

/// What each package's Blueprint last completed. A Blueprint being deleted is leaving and no
/// longer counts; with two Blueprints for one package, the first (by name) wins.
pub fn installed_packages(blueprints: &[Blueprint]) -> Vec<InstalledPackage> {
    let mut sorted: Vec<&Blueprint> = blueprints
        .iter()
        .filter(|b| b.metadata.deletion_timestamp.is_none())
        .collect();
    sorted.sort_by_key(|b| b.name_any());
    let mut out: Vec<InstalledPackage> = Vec::new();
    for blueprint in sorted {
        let package = &blueprint.spec.package;
        if out.iter().any(|i| &i.package == package) {
            continue;
        }
        let completed = blueprint.status.as_ref().and_then(|s| {
            s.history
                .iter()
                .find(|r| r.outcome == RevisionOutcome::Completed)
        });
        if let Some(record) = completed
            && let Ok(version) = Version::parse(&record.version)
        {
            out.push(InstalledPackage {
                package: package.clone(),
                version,
                csv_name: record.cluster_service_version_name.clone(),
            });
        }
    }
    out
}

/// The other Subscriptions of the namespace whose Blueprints list `me`'s package among their
/// dependencies, by name.
pub fn requesters<'s>(
    me: &Subscription,
    subscriptions: &'s [Subscription],
    blueprints: &[Blueprint],
) -> Vec<&'s Subscription> {
    let mut out: Vec<&Subscription> = subscriptions
        .iter()
        .filter(|s| s.name_any() != me.name_any() && s.metadata.deletion_timestamp.is_none())
        .filter(|s| {
            blueprints.iter().any(|b| {
                b.name_any() == s.name_any()
                    && b.spec
                        .dependencies
                        .iter()
                        .any(|d| d.package == me.spec.package)
            })
        })
        .collect();
    out.sort_by_key(|s| s.name_any());
    out
}

/// `status.requiredBy`: the names of the requesters.
pub fn required_by(requesters: &[&Subscription]) -> Vec<String> {
    requesters.iter().map(|s| s.name_any()).collect()
}

/// One change to make to the namespace's Subscriptions.
#[derive(Clone, Debug, PartialEq)]
pub enum DependencyChange {
    /// Create a Subscription with this metadata and spec.
    Create {
        metadata: Box<ObjectMeta>,
        spec: Box<SubscriptionSpec>,
    },
    /// Replace the owner list of a dependency Subscription, at this resourceVersion so a
    /// concurrent change by another requester is not lost.
    SetOwners {
        name: String,
        resource_version: String,
        owners: Vec<OwnerReference>,
    },
    /// A Subscription of that name exists for another package; nothing can be created.
    NameTaken {
        package: String,
        name: String,
        holds: String,
    },
}

/// The changes that give every dependency a Subscription owned by `me`, and release those `me`
/// no longer needs. A Subscription `me` was the last owner of is left as it is: deleting an
/// installed operator because one version of its user stopped declaring it would be a surprise;
/// it goes away with `me`.
pub fn plan(
    me: &Subscription,
    dependencies: &[ResolvedBundle],
    subscriptions: &[Subscription],
) -> Vec<DependencyChange> {
    let uid = me.uid().unwrap_or_default();
    let others = || {
        subscriptions
            .iter()
            .filter(|s| s.name_any() != me.name_any())
    };
    let mut changes = Vec::new();
    for dependency in dependencies {
        if dependency.package == me.spec.package {
            continue;
        }
        let for_package: Vec<&Subscription> = others()
            .filter(|s| s.spec.package == dependency.package)
            .collect();
        // A person's own Subscription wins; otherwise one created for a dependency.
        let existing = for_package
            .iter()
            .find(|s| !is_dependency(s))
            .or_else(|| for_package.first());
        match existing {
            Some(s) if !is_dependency(s) || s.metadata.deletion_timestamp.is_some() => {}
            Some(s) => {
                let owners = s.owner_references();
                if !owners.iter().any(|o| o.uid == uid) {
                    let mut owners = owners.to_vec();
                    owners.push(owner_reference(me, false));
                    changes.push(set_owners(s, owners));
                }
            }
            None => match others().find(|s| s.name_any() == dependency.package) {
                Some(taken) => changes.push(DependencyChange::NameTaken {
                    package: dependency.package.clone(),
                    name: taken.name_any(),
                    holds: taken.spec.package.clone(),
                }),
                None => {
                    let created = dependency_subscription(me, dependency);
                    changes.push(DependencyChange::Create {
                        metadata: Box::new(created.metadata),
                        spec: Box::new(created.spec),
                    });
                }
            },
        }
    }
    for s in others().filter(|s| is_dependency(s)) {
        let still_needed = dependencies.iter().any(|d| d.package == s.spec.package);
        let owners = s.owner_references();
        if still_needed || !owners.iter().any(|o| o.uid == uid) || owners.len() < 2 {
            continue;
        }
        let rest = owners.iter().filter(|o| o.uid != uid).cloned().collect();
        changes.push(set_owners(s, rest));
    }
    changes
}

fn is_dependency(s: &Subscription) -> bool {
    s.labels()
        .get(labels::DEPENDENCY)
        .is_some_and(|v| v == "true")
}

fn set_owners(s: &Subscription, owners: Vec<OwnerReference>) -> DependencyChange {
    DependencyChange::SetOwners {
        name: s.name_any(),
        resource_version: s.resource_version().unwrap_or_default(),
        owners,
    }
}

/// The Subscription created for a dependency: its package from the catalog the resolver took it
/// from, following that package's default channel, approved and targeted like its requester.
fn dependency_subscription(me: &Subscription, dependency: &ResolvedBundle) -> Subscription {
    let mut subscription = Subscription::new(
        &dependency.package,
        SubscriptionSpec {
            package: dependency.package.clone(),
            catalog: dependency.catalog.clone(),
            approval: me.spec.approval,
            target_namespaces: me.spec.target_namespaces.clone(),
            ..Default::default()
        },
    );
    subscription.metadata.namespace = me.namespace();
    subscription.metadata.labels =
        Some([(labels::DEPENDENCY.to_string(), "true".to_string())].into());
    subscription.metadata.owner_references = Some(vec![owner_reference(me, false)]);
    subscription
}

#[cfg(test)]
#[path = "dependencies_tests.rs"]
mod tests;
