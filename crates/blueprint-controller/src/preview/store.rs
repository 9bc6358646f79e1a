//! Where plans are kept: one Secret per revision, `<blueprint>.r<N>.plan` in the Blueprint's
//! namespace next to the revision's own, holding the gzip of the plan's JSON and sealed like
//! revisions (under the manager's key, bound to the Blueprint's uid and the revision), so a
//! plan written or edited by anyone else is never shown as windlass's. Owned by the Blueprint,
//! and removed with the revision it belongs to.
//!
//! The status records the SHA-256 of the stored bytes (`status.preview.checksum`), which lets
//! a reader without the key (`windlass plan`) tell the stored plan is the one the status
//! describes.

use std::collections::BTreeMap;

use k8s_openapi::{
    ByteString,
    api::core::v1::Secret,
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference},
};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{DeleteParams, Patch, PatchParams},
};
use windlass_api::{
    Blueprint, FIELD_MANAGER,
    names::{annotations, labels, plan_secret, seal},
};
use windlass_preview::{Plan, sha256_hex, summary};
use windlass_revisions::{CodecError, SealKey, Subject, codec};

use crate::{Error, names};

/// A stored plan, as read back.
pub struct Stored {
    pub plan: Plan,
    /// `sha256:` of the stored bytes.
    pub checksum: String,
}

fn subject(blueprint: &Blueprint, revision: i64) -> Subject {
    let meta = blueprint.meta();
    Subject {
        kind: plan_secret::SEAL_KIND.to_string(),
        object: format!(
            "{}/{}",
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default()
        ),
        uid: meta.uid.clone().unwrap_or_default(),
        revision: Some(revision),
    }
}

fn sealed_parts<'a>(data: &'a [u8], digest: &'a str) -> [&'a [u8]; 2] {
    [data, digest.as_bytes()]
}

fn checksum(data: &[u8]) -> String {
    format!("sha256:{}", sha256_hex(data))
}

/// The plan of `revision`, when its Secret exists, is sealed by this windlass and reads.
/// Anything else is treated as no plan (it is computed and written again).
pub async fn read(
    client: &Client,
    key: &SealKey,
    blueprint: &Blueprint,
    revision: i64,
) -> Result<Option<Stored>, Error> {
    let name = plan_secret::name(&blueprint.name_any(), revision);
    let secret = secrets(client, blueprint)
        .get_opt(&name)
        .await
        .map_err(|source| Error::Read {
            what: format!("plan Secret {name}"),
            source,
        })?;
    let Some(secret) = secret else {
        return Ok(None);
    };
    let Some(data) = secret
        .data
        .as_ref()
        .and_then(|d| d.get(plan_secret::DATA_KEY))
    else {
        return Ok(None);
    };
    let annotations = secret.annotations();
    let digest = annotations
        .get(annotations::PLAN_DIGEST)
        .map_or("", String::as_str);
    let sealed = windlass_revisions::seal::verify(
        key,
        &subject(blueprint, revision),
        &sealed_parts(&data.0, digest),
        annotations.get(seal::ANNOTATION).map(String::as_str),
    );
    if let Err(problem) = sealed {
        tracing::warn!(secret = %name, %problem, "plan Secret fails its seal; computing the plan again");
        return Ok(None);
    }
    match codec::decode::<Plan>(&data.0) {
        Ok(plan) if plan.digest == digest && plan.revision == revision => Ok(Some(Stored {
            plan,
            checksum: checksum(&data.0),
        })),
        Ok(_) => Ok(None),
        Err(problem) => {
            tracing::warn!(secret = %name, %problem, "plan Secret does not read; computing the plan again");
            Ok(None)
        }
    }
}

/// Writes the plan (shrunk until it fits a Secret, saying so in its notes) and returns the
/// checksum of what was stored.
pub async fn write(
    client: &Client,
    key: &SealKey,
    blueprint: &Blueprint,
    plan: &mut Plan,
) -> Result<String, Error> {
    let name = plan_secret::name(&blueprint.name_any(), plan.revision);
    let data = encode_within_limit(plan).map_err(|problem| Error::Build {
        name: name.clone(),
        message: format!("the plan cannot be stored: {problem}"),
    })?;
    let meta = blueprint.meta();
    let owner = OwnerReference {
        api_version: Blueprint::api_version(&()).into_owned(),
        kind: Blueprint::kind(&()).into_owned(),
        name: blueprint.name_any(),
        uid: meta.uid.clone().unwrap_or_default(),
        controller: Some(false),
        block_owner_deletion: Some(false),
    };
    let seal = windlass_revisions::seal::seal(
        key,
        &subject(blueprint, plan.revision),
        &sealed_parts(&data, &plan.digest),
    );
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: meta.namespace.clone(),
            labels: Some(BTreeMap::from([
                (
                    labels::BLUEPRINT.to_string(),
                    names::label_value(&blueprint.name_any()),
                ),
                (labels::PLAN_REVISION.to_string(), plan.revision.to_string()),
                (
                    labels::MANAGED_BY.to_string(),
                    labels::MANAGED_BY_VALUE.to_string(),
                ),
            ])),
            annotations: Some(BTreeMap::from([
                (annotations::PLAN_DIGEST.to_string(), plan.digest.clone()),
                (seal::ANNOTATION.to_string(), seal),
            ])),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        type_: Some(plan_secret::TYPE.to_string()),
        data: Some(BTreeMap::from([(
            plan_secret::DATA_KEY.to_string(),
            ByteString(data.clone()),
        )])),
        ..Secret::default()
    };
    secrets(client, blueprint)
        .patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&secret),
        )
        .await
        .map_err(|source| Error::Store {
            secret: name,
            source,
        })?;
    Ok(checksum(&data))
}

/// The plan's bytes, leaving out more detail at each step until they fit.
fn encode_within_limit(plan: &mut Plan) -> Result<Vec<u8>, CodecError> {
    let mut step = 0;
    loop {
        match codec::encode(&*plan) {
            Err(CodecError::TooLarge { .. }) if step < summary::SHRINK_STEPS => {
                step += 1;
                summary::shrink(plan, step);
            }
            other => return other,
        }
    }
}

/// Removes the plan of a pruned revision (gone already is fine).
pub async fn delete(client: &Client, blueprint: &Blueprint, revision: i64) -> Result<(), Error> {
    let name = plan_secret::name(&blueprint.name_any(), revision);
    match secrets(client, blueprint)
        .delete(&name, &DeleteParams::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(source) => Err(Error::Delete {
            kind: "Secret".into(),
            name,
            source,
        }),
    }
}

fn secrets(client: &Client, blueprint: &Blueprint) -> Api<Secret> {
    Api::namespaced(client.clone(), &blueprint.namespace().unwrap_or_default())
}
