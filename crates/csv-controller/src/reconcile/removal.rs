//! Removing the external objects a CSV created: pruning the ones its current spec no longer
//! wants, and all of them when the CSV itself goes away (the finalizer's cleanup).

use kube::{ResourceExt, runtime::controller::Action};
use windlass_api::{ClusterServiceVersion, names::labels};
use windlass_kit::{Applier, Freshness, Notice, ObjectKey};

use super::{Context, Error};
use crate::{desired::DesiredObject, names};

/// Kinds not owned through ownerReferences (cluster-scoped, or in another namespace), so found
/// by label for pruning and cleanup.
pub const EXTERNAL_KINDS: &[(&str, &str)] = &[
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
    ),
];

fn selector_labels(csv: &ClusterServiceVersion) -> String {
    format!(
        "{}={},{}={}",
        labels::CSV,
        names::label_value(&csv.name_any()),
        labels::CSV_NAMESPACE,
        names::label_value(&csv.namespace().unwrap_or_default())
    )
}

/// Every external object this CSV created: as the cluster is now for removing them all; from
/// the API server's cache, which shows every object this controller wrote, for pruning
/// (repeated on every apply).
async fn created_by(
    applier: &Applier,
    csv: &ClusterServiceVersion,
    freshness: Freshness,
) -> Result<Vec<ObjectKey>, Error> {
    let selector = selector_labels(csv);
    let mut found = Vec::new();
    for (api_version, kind) in EXTERNAL_KINDS {
        let objects = applier
            .list_with(api_version, kind, None, &selector, freshness)
            .await
            .map_err(|source| Error::Cleanup {
                what: format!("{kind}s labelled {selector}"),
                source,
            })?;
        found.extend(objects.into_iter().map(|object| ObjectKey {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            namespace: object.namespace(),
            name: object.name_any(),
        }));
    }
    Ok(found)
}

async fn remove(applier: &Applier, key: &ObjectKey) -> Result<(), Error> {
    applier
        .delete(key)
        .await
        .map(|_| ())
        .map_err(|source| Error::Cleanup {
            what: key.to_string(),
            source,
        })
}

/// Whether objects this CSV created earlier may no longer be wanted. What it creates follows
/// from its spec alone, so a CSV whose spec never changed (generation 1) wants everything it
/// created; pruning it would cost a cluster-wide list of every external kind per new CSV.
/// Leftovers of an earlier CSV of the same name were removed by that CSV's finalizer.
pub(super) fn may_have_unwanted(csv: &ClusterServiceVersion) -> bool {
    csv.metadata
        .generation
        .is_none_or(|generation| generation > 1)
}

/// Removes external objects this CSV created earlier that its current spec no longer wants.
pub(super) async fn prune(
    applier: &Applier,
    csv: &ClusterServiceVersion,
    desired: &[DesiredObject],
) -> Result<(), Error> {
    for key in created_by(applier, csv, Freshness::Cached).await? {
        let wanted = desired.iter().any(|d| {
            d.kind() == key.kind
                && d.name() == key.name
                && d.namespace() == key.namespace.as_deref()
        });
        if !wanted {
            remove(applier, &key).await?;
        }
    }
    Ok(())
}

pub(super) async fn cleanup(csv: &ClusterServiceVersion, ctx: &Context) -> Result<Action, Error> {
    for key in created_by(&ctx.applier, csv, Freshness::Current).await? {
        remove(&ctx.applier, &key).await?;
    }
    let notice = Notice::normal("Deleted", "removed the objects this CSV created");
    ctx.shell
        .events
        .publish(&kube::Resource::object_ref(csv, &()), &notice)
        .await;
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use kube::api::ObjectMeta;

    use super::*;

    fn at(generation: Option<i64>) -> ClusterServiceVersion {
        ClusterServiceVersion {
            metadata: ObjectMeta {
                generation,
                ..ObjectMeta::default()
            },
            spec: Default::default(),
            status: None,
        }
    }

    #[test]
    fn only_a_changed_spec_can_leave_objects_unwanted() {
        assert!(!may_have_unwanted(&at(Some(1))));
        assert!(may_have_unwanted(&at(Some(2))));
        // Not knowing is treated as changed: pruning is the safe side.
        assert!(may_have_unwanted(&at(None)));
    }
}
