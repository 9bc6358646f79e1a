//! Removing the external objects a CSV created: pruning the ones its current spec no longer
//! wants, and all of them when the CSV itself goes away (the finalizer's cleanup).

use kube::{
    Client, ResourceExt,
    runtime::{controller::Action, events::EventType},
};
use windlass_api::ClusterServiceVersion;

use super::{Context, Error, reporting::publish};
use crate::{apply, desired::DesiredObject, names};

fn selector_labels(csv: &ClusterServiceVersion) -> String {
    format!(
        "{}={},{}={}",
        names::CSV_LABEL,
        names::label_value(&csv.name_any()),
        names::CSV_NAMESPACE_LABEL,
        names::label_value(&csv.namespace().unwrap_or_default())
    )
}

/// Removes external objects this CSV created earlier that its current spec no longer wants.
pub(super) async fn prune(
    client: &Client,
    csv: &ClusterServiceVersion,
    desired: &[DesiredObject],
) -> Result<(), Error> {
    let selector = selector_labels(csv);
    for kind in apply::EXTERNAL_KINDS {
        let existing = apply::list_labelled(client, kind, &selector)
            .await
            .map_err(|source| Error::Read {
                what: format!("{kind}s labelled {selector}"),
                source,
            })?;
        for object in existing {
            let (ns, object_name) = (object.namespace(), object.name_any());
            let wanted = desired.iter().any(|d| {
                d.kind() == *kind && d.name() == object_name && d.namespace() == ns.as_deref()
            });
            if !wanted {
                apply::delete(client, kind, ns.as_deref(), &object_name)
                    .await
                    .map_err(|source| Error::Cleanup {
                        kind: kind.to_string(),
                        name: object_name.clone(),
                        source,
                    })?;
            }
        }
    }
    Ok(())
}

pub(super) async fn cleanup(csv: &ClusterServiceVersion, ctx: &Context) -> Result<Action, Error> {
    let selector = selector_labels(csv);
    for kind in apply::EXTERNAL_KINDS {
        let existing = apply::list_labelled(&ctx.client, kind, &selector)
            .await
            .map_err(|source| Error::Read {
                what: format!("{kind}s labelled {selector}"),
                source,
            })?;
        for object in existing {
            let (ns, name) = (object.namespace(), object.name_any());
            apply::delete(&ctx.client, kind, ns.as_deref(), &name)
                .await
                .map_err(|source| Error::Cleanup {
                    kind: kind.to_string(),
                    name,
                    source,
                })?;
        }
    }
    publish(
        ctx,
        csv,
        EventType::Normal,
        "Deleted",
        "removed the objects this CSV created".into(),
    )
    .await;
    Ok(Action::await_change())
}
