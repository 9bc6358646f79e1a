//! The Blueprint a Subscription wants: its intent fields, and who owns its target.
//!
//! The Subscription controller server-side-applies only the intent fields. The Blueprint
//! controller's bookkeeping (`revision`, `oldVersion`, `oldClusterServiceVersionName`) and a
//! person's `approved` / `force` are never sent, so an apply can neither reset nor claim them.

use std::collections::BTreeMap;
use windlass_api::names::{annotations, finalizers, labels};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    FieldsV1, ManagedFieldsEntry, OwnerReference, Time,
};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};
use windlass_api::{
    Blueprint, BlueprintIntent, FIELD_MANAGER, Subscription,
    blueprint::{BlueprintSpec, ResolvedBundle},
    config::{DEFAULT_HISTORY_LIMIT, DEFAULT_PROGRESS_DEADLINE_SECONDS},
};

use crate::resolution::Resolution;

/// Who set the Blueprint's target when it was not this controller's apply.
#[derive(Clone, Debug, PartialEq)]
pub struct Pin {
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: String,
    pub time: Option<Time>,
}

impl Pin {
    /// "windlass-cli (Update, 2025-01-01T00:00:00Z)" for condition messages.
    pub fn describe(&self) -> String {
        match &self.time {
            Some(t) => format!("{} ({}, {})", self.manager, self.operation, t.0),
            None => format!("{} ({})", self.manager, self.operation),
        }
    }
}

/// Who pinned `spec.clusterServiceVersionName`, if anyone: someone owns it and this
/// controller's apply does not. A person who set it with `kubectl edit`, `kubectl apply
/// --force-conflicts` or `windlass rollback` took it from our apply, so it is pinned until
/// `windlass resume`. The resume's forced apply makes the field ours again even when the value
/// does not change (the person may then still co-own it), which is why "our apply owns it"
/// decides rather than "nobody else owns it". Status entries cannot own spec fields.
pub fn pinned_by(managed_fields: &[ManagedFieldsEntry]) -> Option<Pin> {
    let owns_target = |entry: &&ManagedFieldsEntry| {
        entry.subresource.as_deref().unwrap_or_default().is_empty()
            && entry
                .fields_v1
                .as_ref()
                .and_then(|fields| fields.0.get("f:spec"))
                .and_then(|spec| spec.get("f:clusterServiceVersionName"))
                .is_some()
    };
    let ours = |entry: &&ManagedFieldsEntry| {
        entry.manager.as_deref() == Some(FIELD_MANAGER)
            && entry.operation.as_deref() == Some("Apply")
    };
    let owners: Vec<&ManagedFieldsEntry> = managed_fields.iter().filter(owns_target).collect();
    if owners.iter().any(ours) {
        return None;
    }
    owners.first().map(|entry| Pin {
        manager: entry.manager.clone().unwrap_or_else(|| "unknown".into()),
        operation: entry.operation.clone().unwrap_or_default(),
        time: entry.time.clone(),
    })
}

/// Trims a cached Blueprint to what this controller reads of its `managedFields`: the entries
/// that own the target, each reduced to that one field. [`pinned_by`] answers the same on the
/// trimmed object, and the cache does not hold every manager's field set.
pub fn keep_target_owners(blueprint: &mut Blueprint) {
    let Some(entries) = blueprint.metadata.managed_fields.take() else {
        return;
    };
    let target = json!({"f:spec": {"f:clusterServiceVersionName": {}}});
    let kept: Vec<ManagedFieldsEntry> = entries
        .into_iter()
        .filter(|entry| {
            entry.subresource.as_deref().unwrap_or_default().is_empty()
                && entry
                    .fields_v1
                    .as_ref()
                    .and_then(|fields| fields.0.get("f:spec"))
                    .and_then(|spec| spec.get("f:clusterServiceVersionName"))
                    .is_some()
        })
        .map(|entry| ManagedFieldsEntry {
            fields_v1: Some(FieldsV1(target.clone())),
            ..entry
        })
        .collect();
    blueprint.metadata.managed_fields = Some(kept);
}

/// Whether a person asked (through `windlass resume`) to hand the target back to the catalog.
pub fn wants_resume(blueprint: &Blueprint) -> bool {
    blueprint
        .annotations()
        .get(annotations::RESUME)
        .is_some_and(|v| v == "true")
}

/// What the Blueprint should install: the catalog's choice, or what it carries already.
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    pub csv_name: &'a str,
    pub bundle: Option<&'a ResolvedBundle>,
    pub dependencies: &'a [ResolvedBundle],
}

impl<'a> Target<'a> {
    pub fn resolved(resolution: &'a Resolution) -> Target<'a> {
        Target {
            csv_name: &resolution.target.cluster_service_version_name,
            bundle: Some(&resolution.target),
            dependencies: &resolution.dependencies,
        }
    }

    /// The target as the live Blueprint has it: while a person pins it (their bundle and
    /// dependencies stay with their target), or while nothing can be resolved.
    pub fn kept(spec: &'a BlueprintSpec) -> Target<'a> {
        Target {
            csv_name: &spec.cluster_service_version_name,
            bundle: spec.bundle.as_ref(),
            dependencies: &spec.dependencies,
        }
    }
}

/// The owner reference a Subscription puts on what it creates.
pub fn owner_reference(subscription: &Subscription, controller: bool) -> OwnerReference {
    OwnerReference {
        api_version: Subscription::api_version(&()).into_owned(),
        kind: Subscription::kind(&()).into_owned(),
        name: subscription.name_any(),
        uid: subscription.uid().unwrap_or_default(),
        controller: Some(controller),
        block_owner_deletion: Some(controller),
    }
}

/// The Blueprint a Subscription wants: its intent, its labels and its owner.
#[derive(Clone, Debug, PartialEq)]
pub struct DesiredBlueprint {
    pub name: String,
    pub namespace: String,
    pub intent: BlueprintIntent,
    pub labels: BTreeMap<String, String>,
    pub owner: OwnerReference,
}

impl DesiredBlueprint {
    /// The server-side apply document. The Blueprint is created with its controller's
    /// finalizer, so that controller starts on the install at once instead of first adding it
    /// (a write and a round trip per install). Always in the document: a later apply without
    /// it would take it away.
    pub fn document(&self) -> Value {
        json!({
            "apiVersion": Blueprint::api_version(&()),
            "kind": Blueprint::kind(&()),
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": self.labels,
                "ownerReferences": [self.owner],
                "finalizers": [finalizers::BLUEPRINT_CLEANUP],
            },
            "spec": self.intent,
        })
    }
}

/// The Blueprint to apply. `set_target` is false while a person pins the target: the field is
/// then left out so the apply neither changes it nor takes it back.
pub fn desired_blueprint(
    subscription: &Subscription,
    target: Target<'_>,
    set_target: bool,
) -> DesiredBlueprint {
    let spec = &subscription.spec;
    let rollback = spec.rollback.clone().unwrap_or_default();
    let intent = BlueprintIntent {
        package: spec.package.clone(),
        cluster_service_version_name: set_target.then(|| target.csv_name.to_string()),
        bundle: target.bundle.cloned(),
        approval: spec.approval,
        dependencies: target.dependencies.to_vec(),
        target_namespaces: spec
            .target_namespaces
            .clone()
            .filter(|namespaces| !namespaces.is_empty()),
        config: spec.config.clone(),
        preview: spec.preview,
        progress_deadline_seconds: rollback
            .progress_deadline_seconds
            .unwrap_or(DEFAULT_PROGRESS_DEADLINE_SECONDS),
        automatic_rollback: rollback.automatic.unwrap_or(true),
        history_limit: spec.history_limit.unwrap_or(DEFAULT_HISTORY_LIMIT),
        crd_deletion_policy: spec.crd_deletion_policy,
    };
    DesiredBlueprint {
        name: subscription.name_any(),
        namespace: subscription.namespace().unwrap_or_default(),
        intent,
        labels: BTreeMap::from([
            (labels::SUBSCRIPTION.to_string(), subscription.name_any()),
            (labels::PACKAGE.to_string(), spec.package.clone()),
        ]),
        owner: owner_reference(subscription, true),
    }
}

/// Whether the live Blueprint already carries everything `desired` says, so applying it would
/// change nothing (a reconcile in steady state makes no write).
pub fn is_current(live: &Blueprint, desired: &DesiredBlueprint) -> bool {
    let with_target = desired.intent.cluster_service_version_name.is_some();
    let intent_matches = BlueprintIntent::of(&live.spec, with_target) == desired.intent;
    let live_labels = live.labels();
    let labels_match = desired
        .labels
        .iter()
        .all(|(key, value)| live_labels.get(key) == Some(value));
    let owned = live.owner_references().iter().any(|o| {
        o.uid == desired.owner.uid && o.controller == Some(true) && o.name == desired.owner.name
    });
    intent_matches && labels_match && owned
}

#[cfg(test)]
#[path = "intent_tests.rs"]
mod tests;
