//! Release signatures from HTTP signature stores, as the CVO verifies OpenShift releases: the
//! keys (`verifier-public-key-<name>`) and stores (`store-<name>`) of the manager namespace's
//! ConfigMaps annotated `release.openshift.io/verification-config-map`, or the stores of
//! `spec.signatureStores` in their place; signature `n` of a digest at
//! `<store>/sha256=<hex>/signature-<n>`, asked for `n = 1, 2, ...` until the store has no more.
//! Whether a signature counts is `windlass_trust::openpgp`'s decision.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use windlass_api::{
    ClusterVersion,
    clusterversion::SignatureStoreSpec,
    names::{STORE_KEY_PREFIX, VERIFICATION_CONFIG_MAP_ANNOTATION, VERIFIER_KEY_PREFIX},
};
use windlass_trust::openpgp::{KeyRing, signature_url, verify_signature};

use crate::Context;

/// How many signatures of one digest a store is asked for at most.
const MAX_SIGNATURES: usize = 16;
/// The biggest signature read.
const MAX_SIGNATURE_BYTES: usize = 64 * 1024;

/// The keys and stores in effect.
pub struct Stores {
    ring: KeyRing,
    stores: Vec<SignatureStoreSpec>,
}

/// What the stores said about a digest.
pub enum StoreVerdict {
    /// `<ConfigMap>/<key>` of the key that verified, and the signature's URL.
    Verified { key: String, url: String },
    /// Why nothing verified, one reason per store or signature.
    NotVerified(Vec<String>),
}

/// The verification configuration, or `None` when no verification ConfigMap holds a key (then
/// the TrustPolicies alone decide).
pub async fn configured(ctx: &Context, version: &ClusterVersion) -> Result<Option<Stores>, String> {
    let config_maps = ctx
        .config_maps()
        .list(&Default::default())
        .await
        .map_err(|e| {
            format!(
                "listing the verification ConfigMaps of {}: {e}",
                ctx.namespace
            )
        })?;
    let mut keys = Vec::new();
    let mut stores = Vec::new();
    for config_map in config_maps.items.iter().filter(|c| {
        c.metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(VERIFICATION_CONFIG_MAP_ANNOTATION))
    }) {
        let name = config_map.metadata.name.clone().unwrap_or_default();
        for (key, value) in config_map.data.iter().flatten() {
            if let Some(key_name) = key.strip_prefix(VERIFIER_KEY_PREFIX) {
                keys.push((format!("{name}/{key_name}"), value.clone()));
            } else if key.starts_with(STORE_KEY_PREFIX) {
                stores.push(SignatureStoreSpec {
                    url: value.trim().to_string(),
                    ca_config_map: None,
                });
            }
        }
    }
    if keys.is_empty() {
        return Ok(None);
    }
    let ring = KeyRing::from_armored(&keys)
        .map_err(|e| format!("ConfigMap {} (release verification): {e}", ctx.namespace))?;
    if !version.spec.signature_stores.is_empty() {
        stores = version.spec.signature_stores.clone();
    }
    Ok(Some(Stores { ring, stores }))
}

/// Asks each store for the signatures of `digest` until one verifies.
pub async fn verify(ctx: &Context, stores: &Stores, digest: &str) -> StoreVerdict {
    let mut reasons = Vec::new();
    if stores.stores.is_empty() {
        reasons.push(
            "no signature store is configured (store-<name> in the verification ConfigMap, or spec.signatureStores)"
                .to_string(),
        );
    }
    for store in &stores.stores {
        let client = match client_for(ctx, store).await {
            Ok(client) => client,
            Err(reason) => {
                reasons.push(reason);
                continue;
            }
        };
        let mut found = 0;
        for n in 1..=MAX_SIGNATURES {
            let url = match signature_url(&store.url, digest, n) {
                Ok(url) => url,
                Err(e) => {
                    reasons.push(format!("store {}: {e}", store.url));
                    break;
                }
            };
            let signature = match fetch(&client, &url).await {
                Ok(Some(bytes)) => bytes,
                Ok(None) => break,
                Err(reason) => {
                    reasons.push(reason);
                    break;
                }
            };
            found += 1;
            match verify_signature(&stores.ring, &signature, digest) {
                Ok(verified) => {
                    return StoreVerdict::Verified {
                        key: verified.key,
                        url,
                    };
                }
                Err(e) => reasons.push(format!("{url}: {e}")),
            }
        }
        if found == 0 {
            reasons.push(format!("store {} has no signature of {digest}", store.url));
        }
    }
    StoreVerdict::NotVerified(reasons)
}

async fn client_for(ctx: &Context, store: &SignatureStoreSpec) -> Result<reqwest::Client, String> {
    let Some(ca) = &store.ca_config_map else {
        return Ok(ctx.http.clone());
    };
    let key = ca.data_key("ca.crt");
    let where_ = format!(
        "store {}: CA ConfigMap {}/{} key {key}",
        store.url, ctx.namespace, ca.name
    );
    let pem = Api::<ConfigMap>::namespaced(ctx.shell.client.clone(), &ctx.namespace)
        .get_opt(&ca.name)
        .await
        .map_err(|e| format!("{where_}: {e}"))?
        .and_then(|c| c.data)
        .and_then(|d| d.get(key).cloned())
        .ok_or_else(|| format!("{where_}: not found"))?;
    let certificates = reqwest::Certificate::from_pem_bundle(pem.as_bytes())
        .ok()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| format!("{where_}: holds no PEM certificate"))?;
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .tls_certs_only(certificates)
        .build()
        .map_err(|e| format!("{where_}: {e}"))
}

/// The signature at `url`: `None` when the store has none there (404), as the CVO stops.
async fn fetch(client: &reqwest::Client, url: &str) -> Result<Option<Vec<u8>>, String> {
    let mut response = client
        .get(url)
        .send()
        .await
        .map_err(|e| format!("asking {url}: {e}"))?;
    if response.status() == reqwest::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !response.status().is_success() {
        return Err(format!("{url} answered {}", response.status()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("reading {url}: {e}"))?
    {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_SIGNATURE_BYTES {
            return Err(format!("{url} is larger than {MAX_SIGNATURE_BYTES} bytes"));
        }
    }
    Ok(Some(body))
}
