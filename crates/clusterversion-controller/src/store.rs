//! Applied payloads kept in the cluster, so a rollback never pulls again: each payload's files
//! in a Secret of the manager's namespace (gzip of JSON, the revisions' codec), sealed under the
//! manager's key for the image it came from.

use std::collections::BTreeMap;

use k8s_openapi::{ByteString, api::core::v1::Secret};
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use serde_json::json;
use windlass_api::{
    FIELD_MANAGER,
    names::{annotations, labels, release_secret, seal},
};
use windlass_bundle::FileTree;
use windlass_revisions::{
    SealKey, codec,
    seal::{Subject, seal as seal_content, verify},
};

fn subject(image: &str) -> Subject {
    Subject {
        kind: "ReleasePayload".into(),
        object: image.to_string(),
        uid: String::new(),
        revision: None,
    }
}

fn digest_of(image: &str) -> &str {
    image.rsplit_once('@').map(|(_, d)| d).unwrap_or(image)
}

/// Stores the files of payload `image` (`repository@digest`) unless already stored. An `Err`
/// says why it could not be kept (too large, not text, the API refused).
pub async fn keep(
    api: &Api<Secret>,
    key: &SealKey,
    image: &str,
    version: &str,
    files: &FileTree,
) -> Result<(), String> {
    let name = release_secret::name(digest_of(image));
    if api
        .get_opt(&name)
        .await
        .map_err(|e| e.to_string())?
        .is_some()
    {
        return Ok(());
    }
    let text: BTreeMap<&str, &str> = files
        .files
        .iter()
        .map(|(path, bytes)| {
            std::str::from_utf8(bytes)
                .map(|text| (path.as_str(), text))
                .map_err(|_| format!("{path} is not text"))
        })
        .collect::<Result<_, _>>()?;
    let encoded = codec::encode(&text).map_err(|e| e.to_string())?;
    let sealed = seal_content(key, &subject(image), &[&encoded]);
    let secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "type": release_secret::TYPE,
        "metadata": {
            "name": name,
            "labels": {
                labels::MANAGED_BY: labels::MANAGED_BY_VALUE,
                labels::RELEASE_PAYLOAD: "true",
            },
            "annotations": {
                annotations::RELEASE_IMAGE: image,
                annotations::VERSION: version,
                seal::ANNOTATION: sealed,
            },
        },
        "data": { release_secret::DATA_KEY: ByteString(encoded) },
    });
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER),
        &Patch::Apply(&secret),
    )
    .await
    .map(|_| ())
    .map_err(|e| e.to_string())
}

/// Deletes the stored payload of `image` (a release pruned from history); gone already is fine.
pub async fn forget(api: &Api<Secret>, image: &str) -> Result<(), String> {
    let name = release_secret::name(digest_of(image));
    match api.delete(&name, &Default::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(e) => Err(format!("deleting stored payload Secret {name}: {e}")),
    }
}

/// The stored files of payload `image`: `Ok(None)` when none is stored, `Err` when the stored
/// one does not check (edited, or not written by this windlass) or cannot be read.
pub async fn stored(
    api: &Api<Secret>,
    key: &SealKey,
    image: &str,
) -> Result<Option<FileTree>, String> {
    let name = release_secret::name(digest_of(image));
    let Some(secret) = api.get_opt(&name).await.map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let found = secret
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(seal::ANNOTATION))
        .map(String::as_str);
    let data = secret
        .data
        .as_ref()
        .and_then(|d| d.get(release_secret::DATA_KEY))
        .map(|b| b.0.clone())
        .unwrap_or_default();
    verify(key, &subject(image), &[&data], found)
        .map_err(|e| format!("stored payload Secret {name}: {e}"))?;
    let text: BTreeMap<String, String> =
        codec::decode(&data).map_err(|e| format!("stored payload Secret {name}: {e}"))?;
    Ok(Some(FileTree {
        files: text.into_iter().map(|(p, t)| (p, t.into_bytes())).collect(),
    }))
}
