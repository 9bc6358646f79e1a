//! The one way windlass writes status: server-side apply of the whole status under the one
//! field manager, so a field left out (a condition no longer relevant) is removed.

use std::fmt::Debug;

use kube::{
    Api, Resource,
    api::{Patch, PatchParams},
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::json;
use windlass_api::FIELD_MANAGER;

/// Applies `status` to the object `name`. With `guard`, the write succeeds only if the object
/// still has that resourceVersion (a 409 otherwise): a decision made from state someone has
/// since changed is thrown away and made again. Returns the object as written.
pub async fn apply_status<K, S>(
    api: &Api<K>,
    name: &str,
    status: &S,
    guard: Option<&str>,
) -> Result<K, kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
    S: Serialize,
{
    let mut patch = json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": status,
    });
    if let Some(resource_version) = guard {
        patch["metadata"] = json!({ "name": name, "resourceVersion": resource_version });
    }
    api.patch_status(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await
}
