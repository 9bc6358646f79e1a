//! What the reconciler reports back: the CSV's status, and Events on it.

use kube::{
    Api, Client, Resource, ResourceExt,
    api::{Patch, PatchParams},
    runtime::events::{Event, EventType},
};
use serde_json::json;
use tracing::warn;
use windlass_api::{ClusterServiceVersion, ClusterServiceVersionStatus, FIELD_MANAGER};

use super::{Context, Error};

pub(super) async fn write_status(
    client: &Client,
    csv: &ClusterServiceVersion,
    status: &ClusterServiceVersionStatus,
) -> Result<(), Error> {
    let api = Api::<ClusterServiceVersion>::namespaced(
        client.clone(),
        &csv.namespace().unwrap_or_default(),
    );
    let patch = json!({"apiVersion": ClusterServiceVersion::api_version(&()), "kind": ClusterServiceVersion::kind(&()), "status": status});
    api.patch_status(
        &csv.name_any(),
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await
    .map(|_| ())
    .map_err(|source| Error::Status {
        name: csv.name_any(),
        source,
    })
}

pub(super) async fn publish(
    ctx: &Context,
    csv: &ClusterServiceVersion,
    type_: EventType,
    reason: &str,
    note: String,
) {
    let event = Event {
        type_,
        reason: reason.into(),
        note: Some(truncate(note, 1000)),
        action: "Reconcile".into(),
        secondary: None,
    };
    if let Err(error) = ctx.recorder.publish(&event, &csv.object_ref(&())).await {
        warn!(%error, "publishing an event");
    }
}

fn truncate(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut cut = max;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    text
}
