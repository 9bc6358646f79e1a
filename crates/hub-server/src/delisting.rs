//! Delist and relist from the hub, as the person: the Catalog is read and server-side-applied
//! with their client under the field manager `windlass catalog delist | relist` uses, so RBAC
//! decides, the audit log names them, and the CLI and the hub edit one set of entries. What to
//! write is decided in `windlass_hub::delisting`.

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::{
    Api, Client,
    api::{Patch, PatchParams, PostParams},
};
use windlass_api::{Catalog, names::DELIST_FIELD_MANAGER};
use windlass_hub::{
    HubIndex,
    delisting::{self, DelistRequest, Edit, Plan},
};

use crate::cluster::Outcome;

/// Whether the person may patch Catalog `catalog`, as the API server answers them. It only
/// decides whether the page offers Delist and Relist: the write is authorized on its own.
pub async fn may_delist(client: &Client, catalog: &str) -> bool {
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                group: Some("windlass.dev".into()),
                resource: Some("catalogs".into()),
                verb: Some("patch".into()),
                name: Some(catalog.into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    match Api::<SelfSubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
    {
        Ok(answer) => answer.status.is_some_and(|s| s.allowed),
        Err(error) => {
            tracing::debug!(%error, catalog, "asking whether the person may patch the Catalog");
            false
        }
    }
}

fn outcome(status: u16, message: String) -> Outcome {
    Outcome {
        status,
        message,
        location: None,
    }
}

/// Delists or relists what the form names in the Catalog it names. The catalog must offer the
/// package (and version) among the content `index` shows the person.
pub async fn edit(client: &Client, index: &HubIndex, form: &DelistRequest, edit: Edit) -> Outcome {
    let (catalog, target) = match form.target() {
        Ok(parsed) => parsed,
        Err(error) => return Outcome::refused(error),
    };
    let Some((_, package)) = index.package(&target.package, Some(&catalog)) else {
        return outcome(
            404,
            format!(
                "catalog {catalog} has no package {} (or you may not read it)",
                target.package
            ),
        );
    };
    let versions: Vec<String> = package
        .bundles
        .values()
        .map(|b| b.version.to_string())
        .collect();
    let offered: Vec<&str> = versions.iter().map(String::as_str).collect();
    if let Err(error) = delisting::check_version(&catalog, &target, &offered, &[]) {
        return outcome(404, error.to_string());
    }
    let catalogs = Api::<Catalog>::all(client.clone());
    let object = match catalogs.get(&catalog).await {
        Ok(object) => object,
        Err(error) => return Outcome::api(&format!("reading Catalog {catalog}"), error),
    };
    // The hub never takes an entry over from the tool that manages it.
    let plan = match delisting::plan(&object, &target, &edit, DELIST_FIELD_MANAGER, false) {
        Ok(plan) => plan,
        Err(error) => return outcome(409, error.to_string()),
    };
    let (document, entry) = match plan {
        Plan::Nothing(why) => return Outcome::ok(delisting::nothing_message(&catalog, &why), None),
        Plan::Apply {
            document, entry, ..
        } => (document, entry),
    };
    let what = match edit {
        Edit::Delist { .. } => format!("delisting {target} in Catalog {catalog}"),
        Edit::Relist => format!("relisting {target} in Catalog {catalog}"),
    };
    match catalogs
        .patch(
            &catalog,
            &PatchParams::apply(DELIST_FIELD_MANAGER),
            &Patch::Apply(&document),
        )
        .await
    {
        Ok(after) => {
            match delisting::check_written(
                &after,
                &target.package,
                entry.as_ref(),
                DELIST_FIELD_MANAGER,
            ) {
                Ok(()) => Outcome::ok(
                    delisting::done_message(&catalog, &target, &edit, entry.as_ref()),
                    None,
                ),
                Err(error) => outcome(409, error.to_string()),
            }
        }
        Err(kube::Error::Api(status)) if status.code == 409 => {
            outcome(409, delisting::conflict_message(&catalog, &status.message))
        }
        Err(error) => Outcome::api(&what, error),
    }
}
