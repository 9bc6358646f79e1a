//! The manager's sealing key: a Secret in the manager's namespace, created with random bytes
//! the first time a manager starts. Only the manager (and cluster admins) can read it; every
//! replica uses the same one.

use k8s_openapi::{ByteString, api::core::v1::Secret};
use kube::{
    Api, Client,
    api::{ObjectMeta, PostParams},
};
use windlass_api::names::{labels, seal};
use windlass_revisions::{SealKey, seal::KEY_BYTES};

/// Why the key could not be had.
#[derive(Debug, thiserror::Error)]
pub enum SealKeyError {
    #[error("reading Secret {namespace}/{name}: {source}")]
    Read {
        namespace: String,
        name: String,
        source: kube::Error,
    },
    #[error("creating Secret {namespace}/{name}: {source}")]
    Create {
        namespace: String,
        name: String,
        source: kube::Error,
    },
    #[error("Secret {namespace}/{name} holds no valid key under {key}: {message}")]
    Invalid {
        namespace: String,
        name: String,
        key: &'static str,
        message: String,
    },
    #[error("generating a key: {0}")]
    Random(String),
}

/// The key in `namespace`, created when there is none yet. Two managers starting together
/// both try to create it; the one that loses reads the winner's.
pub async fn load_or_create(client: &Client, namespace: &str) -> Result<SealKey, SealKeyError> {
    let api = Api::<Secret>::namespaced(client.clone(), namespace);
    let name = seal::KEY_SECRET;
    let read = |source| SealKeyError::Read {
        namespace: namespace.into(),
        name: name.into(),
        source,
    };
    if let Some(secret) = api.get_opt(name).await.map_err(read)? {
        return key_of(&secret, namespace);
    }
    let mut bytes = [0u8; KEY_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| SealKeyError::Random(e.to_string()))?;
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            labels: Some(
                [(
                    labels::MANAGED_BY.to_string(),
                    labels::MANAGED_BY_VALUE.to_string(),
                )]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        type_: Some(seal::KEY_SECRET_TYPE.into()),
        data: Some([(seal::KEY_DATA.to_string(), ByteString(bytes.to_vec()))].into()),
        ..Secret::default()
    };
    match api.create(&PostParams::default(), &secret).await {
        Ok(created) => key_of(&created, namespace),
        Err(kube::Error::Api(status)) if status.code == 409 => {
            let secret = api.get(name).await.map_err(read)?;
            key_of(&secret, namespace)
        }
        Err(source) => Err(SealKeyError::Create {
            namespace: namespace.into(),
            name: name.into(),
            source,
        }),
    }
}

fn key_of(secret: &Secret, namespace: &str) -> Result<SealKey, SealKeyError> {
    let invalid = |message: String| SealKeyError::Invalid {
        namespace: namespace.into(),
        name: seal::KEY_SECRET.into(),
        key: seal::KEY_DATA,
        message,
    };
    let bytes = secret
        .data
        .as_ref()
        .and_then(|d| d.get(seal::KEY_DATA))
        .ok_or_else(|| invalid("missing".into()))?;
    SealKey::from_bytes(&bytes.0).map_err(|e| invalid(e.to_string()))
}
