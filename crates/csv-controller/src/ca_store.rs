//! The manager's webhook CA in its namespace: made by the first manager that starts, rotated by
//! a manager that starts with less than [`certs::CA_ROTATE_BEFORE`] of it left. Only the
//! manager and cluster admins can read that namespace's Secrets, so no tenant can sign a
//! certificate webhook clients trust, nor change what they trust.

use std::collections::BTreeMap;

use k8s_openapi::{ByteString, api::core::v1::Secret, jiff::Timestamp};
use kube::{
    Api, Client,
    api::{ObjectMeta, PostParams},
};
use windlass_api::names::labels;

use crate::certs::{self, WebhookCa, ca_secret};

#[derive(Debug, thiserror::Error)]
pub enum CaStoreError {
    #[error("reading Secret {namespace}/{name}: {source}")]
    Read {
        namespace: String,
        name: &'static str,
        source: kube::Error,
    },
    #[error("writing Secret {namespace}/{name}: {source}")]
    Write {
        namespace: String,
        name: &'static str,
        source: kube::Error,
    },
    #[error(transparent)]
    Generate(#[from] certs::CertError),
    #[error(
        "Secret {namespace}/windlass-webhook-ca kept changing while it was written; start again"
    )]
    Contended { namespace: String },
}

fn secret(namespace: &str, ca: &WebhookCa, resource_version: Option<String>) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(ca_secret::NAME.into()),
            namespace: Some(namespace.into()),
            labels: Some(BTreeMap::from([(
                labels::MANAGED_BY.to_string(),
                labels::MANAGED_BY_VALUE.to_string(),
            )])),
            annotations: Some(ca.secret_annotations()),
            resource_version,
            ..ObjectMeta::default()
        },
        type_: Some("windlass.dev/webhook-ca".into()),
        data: Some(
            ca.secret_data()
                .into_iter()
                .map(|(k, v)| (k, ByteString(v.into_bytes())))
                .collect(),
        ),
        ..Secret::default()
    }
}

/// The CA in `namespace`, made or rotated when needed. Managers starting together race for
/// the write; the loser reads the winner's CA.
pub async fn load_or_create(client: &Client, namespace: &str) -> Result<WebhookCa, CaStoreError> {
    let api = Api::<Secret>::namespaced(client.clone(), namespace);
    let read = |source| CaStoreError::Read {
        namespace: namespace.into(),
        name: ca_secret::NAME,
        source,
    };
    let write = |source| CaStoreError::Write {
        namespace: namespace.into(),
        name: ca_secret::NAME,
        source,
    };
    let now = Timestamp::now();
    for _ in 0..3 {
        let existing = api.get_opt(ca_secret::NAME).await.map_err(read)?;
        let Some(existing) = existing else {
            let ca = WebhookCa::generate(now)?;
            match api
                .create(&PostParams::default(), &secret(namespace, &ca, None))
                .await
            {
                Ok(_) => return Ok(ca),
                Err(kube::Error::Api(status)) if status.code == 409 => continue,
                Err(source) => return Err(write(source)),
            }
        };
        let data: BTreeMap<String, Vec<u8>> = existing
            .data
            .clone()
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect();
        let notes = existing.metadata.annotations.clone().unwrap_or_default();
        let found = WebhookCa::from_secret(&data, &notes);
        let (ca, changed) = match found {
            Some(ca) if !ca.needs_rotation(now) => {
                let settled = ca.clone().settled(now);
                let changed = settled != ca;
                (settled, changed)
            }
            Some(ca) => (ca.rotated(now)?, true),
            // Unreadable: whatever trusted it cannot have been served by windlass anyway.
            None => (WebhookCa::generate(now)?, true),
        };
        if !changed {
            return Ok(ca);
        }
        let replacement = secret(namespace, &ca, existing.metadata.resource_version.clone());
        match api
            .replace(ca_secret::NAME, &PostParams::default(), &replacement)
            .await
        {
            Ok(_) => return Ok(ca),
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(source) => return Err(write(source)),
        }
    }
    Err(CaStoreError::Contended {
        namespace: namespace.into(),
    })
}
