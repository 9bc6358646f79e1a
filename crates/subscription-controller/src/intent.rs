//! The Blueprint a Subscription wants: its intent fields, and who owns its target.
//!
//! The Subscription controller server-side-applies only the intent fields. The Blueprint
//! controller's bookkeeping (`revision`, `oldVersion`, `oldClusterServiceVersionName`) and a
//! person's `approved` / `force` are never sent, so an apply can neither reset nor claim them.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, OwnerReference, Time};
use kube::{Resource, ResourceExt};
use serde_json::{Map, Value, json};
use windlass_api::{
    Blueprint, FIELD_MANAGER, Subscription,
    blueprint::{BlueprintSpec, ResolvedBundle},
    config::{DEFAULT_HISTORY_LIMIT, DEFAULT_PROGRESS_DEADLINE_SECONDS},
};

use crate::resolution::Resolution;

/// Names the Subscription a Blueprint belongs to.
pub const SUBSCRIPTION_LABEL: &str = "windlass.dev/subscription";
/// Names the package a Blueprint installs.
pub const PACKAGE_LABEL: &str = "windlass.dev/package";
/// Set to `true` on a Blueprint by `windlass resume`: hand the target back to the catalog.
pub const RESUME_ANNOTATION: &str = "windlass.dev/resume";

/// The intent fields, in the order the design lists them. Comparing these (and only these)
/// decides whether an apply is needed.
const INTENT_FIELDS: [&str; 11] = [
    "package",
    "clusterServiceVersionName",
    "bundle",
    "approval",
    "dependencies",
    "targetNamespaces",
    "config",
    "progressDeadlineSeconds",
    "automaticRollback",
    "historyLimit",
    "crdDeletionPolicy",
];

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

/// Whether a person asked (through `windlass resume`) to hand the target back to the catalog.
pub fn wants_resume(blueprint: &Blueprint) -> bool {
    blueprint
        .annotations()
        .get(RESUME_ANNOTATION)
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

/// The Blueprint to apply. `set_target` is false while a person pins the target: the field is
/// then left out so the apply neither changes it nor takes it back.
pub fn desired_blueprint(
    subscription: &Subscription,
    target: Target<'_>,
    set_target: bool,
) -> Value {
    let spec = &subscription.spec;
    let mut intent = Map::new();
    let mut put = |key: &str, value: Value| {
        let empty = value.is_null()
            || value.as_array().is_some_and(Vec::is_empty)
            || value.as_object().is_some_and(Map::is_empty);
        if !empty {
            intent.insert(key.to_string(), value);
        }
    };
    put("package", json!(spec.package));
    if set_target {
        put("clusterServiceVersionName", json!(target.csv_name));
    }
    put("bundle", json!(target.bundle));
    put("approval", json!(spec.approval));
    put("dependencies", json!(target.dependencies));
    put("targetNamespaces", json!(spec.target_namespaces));
    put("config", json!(spec.config));
    let rollback = spec.rollback.clone().unwrap_or_default();
    put(
        "progressDeadlineSeconds",
        json!(
            rollback
                .progress_deadline_seconds
                .unwrap_or(DEFAULT_PROGRESS_DEADLINE_SECONDS)
        ),
    );
    put(
        "automaticRollback",
        json!(rollback.automatic.unwrap_or(true)),
    );
    put(
        "historyLimit",
        json!(spec.history_limit.unwrap_or(DEFAULT_HISTORY_LIMIT)),
    );
    put("crdDeletionPolicy", json!(spec.crd_deletion_policy));
    json!({
        "apiVersion": Blueprint::api_version(&()),
        "kind": Blueprint::kind(&()),
        "metadata": {
            "name": subscription.name_any(),
            "namespace": subscription.namespace(),
            "labels": {
                SUBSCRIPTION_LABEL: subscription.name_any(),
                PACKAGE_LABEL: spec.package,
            },
            "ownerReferences": [owner_reference(subscription, true)],
        },
        "spec": intent,
    })
}

/// Whether the live Blueprint already carries everything `desired` says, so applying it would
/// change nothing (a reconcile in steady state makes no write).
pub fn is_current(live: &Blueprint, desired: &Value) -> bool {
    let Ok(live_spec) = serde_json::to_value(&live.spec) else {
        return false;
    };
    let desired_spec = &desired["spec"];
    let fields_match = INTENT_FIELDS.iter().all(|field| {
        // A field left out of the apply (the pinned target) is not ours to compare.
        if *field == "clusterServiceVersionName" && desired_spec.get(field).is_none() {
            return true;
        }
        desired_spec.get(field) == normalise(live_spec.get(field))
    });
    let labels = live.labels();
    let labels_match = desired["metadata"]["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| labels.get(k).map(|l| json!(l)) == Some(v.clone()));
    let owner = &desired["metadata"]["ownerReferences"][0];
    let owned = live.owner_references().iter().any(|o| {
        json!(o.uid) == owner["uid"] && o.controller == Some(true) && json!(o.name) == owner["name"]
    });
    fields_match && labels_match && owned
}

/// The live object serialises empty lists and maps as absent, as the apply does.
fn normalise(value: Option<&Value>) -> Option<&Value> {
    value.filter(|v| {
        !(v.is_null()
            || v.as_array().is_some_and(Vec::is_empty)
            || v.as_object().is_some_and(Map::is_empty))
    })
}

#[cfg(test)]
#[path = "intent_tests.rs"]
mod tests;
