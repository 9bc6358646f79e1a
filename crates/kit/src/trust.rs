//! Signature checks for controllers: every TrustPolicy's rules, key material read from the
//! manager's namespace, an artifact's digest checked against them.
//!
//! One [`TrustGate`] serves every controller of the manager, so verdicts are cached once per
//! digest (a poll of an unchanged, verified image asks the registry nothing more). Key material
//! is read only for the keys of rules that cover the artifact: an artifact no rule covers costs
//! one list of TrustPolicies and no registry request.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::{Api, Client, ResourceExt, api::ListParams};
use windlass_api::{TrustPolicy, trust::PolicyKey};
use windlass_oci::{Auth, RegistryClient, RegistryOptions};
use windlass_trust::{Artifact, KeyResolver, Limits, PublicKey, Verdict, Verifier, policy::merge};

/// Checks artifacts against the cluster's TrustPolicies. Cheap to share (`Arc`).
pub struct TrustGate {
    client: Client,
    /// Where key material lives (the manager's namespace).
    namespace: String,
    /// One verifier (and verdict cache) per way of reaching registries.
    verifiers: Mutex<Vec<ReachedAs>>,
}

/// A verifier for registries reached over plain HTTP or not, with these credentials.
type ReachedAs = (bool, Auth, Arc<Verifier<RegistryClient>>);

impl std::fmt::Debug for TrustGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrustGate")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl TrustGate {
    pub fn new(client: Client, namespace: impl Into<String>) -> TrustGate {
        TrustGate {
            client,
            namespace: namespace.into(),
            verifiers: Mutex::default(),
        }
    }

    /// The verifier that reaches registries as `registry` says (plain HTTP, credentials).
    fn verifier(&self, registry: &RegistryOptions) -> Arc<Verifier<RegistryClient>> {
        let mut verifiers = self.verifiers.lock().expect("verifier lock poisoned");
        if let Some((_, _, verifier)) = verifiers
            .iter()
            .find(|(plain, auth, _)| *plain == registry.plain_http && *auth == registry.auth)
        {
            return verifier.clone();
        }
        let options = RegistryOptions {
            plain_http: registry.plain_http,
            auth: registry.auth.clone(),
            ..RegistryOptions::default()
        };
        let verifier = Arc::new(Verifier::new(
            RegistryClient::new(&options),
            Limits::default(),
        ));
        verifiers.push((registry.plain_http, registry.auth.clone(), verifier.clone()));
        verifier
    }

    /// Checks `artifact` (its digest resolved by the caller) against every TrustPolicy. An
    /// `Err` is a registry or cluster problem that a retry may fix, worded for a condition.
    pub async fn verify(
        &self,
        artifact: &Artifact,
        registry: &RegistryOptions,
    ) -> Result<Verdict, String> {
        self.verify_mirrored(artifact, None, registry).await
    }

    /// [`TrustGate::verify`] of an artifact pulled from `mirror` (an ImageMirrorSet sent it
    /// there): the rules of the artifact's own repository apply, its signatures are looked
    /// for in the mirror, reached as `registry` says.
    pub async fn verify_mirrored(
        &self,
        artifact: &Artifact,
        mirror: Option<&str>,
        registry: &RegistryOptions,
    ) -> Result<Verdict, String> {
        let policies = Api::<TrustPolicy>::all(self.client.clone())
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("reading TrustPolicies: {e}"))?
            .items;
        let named: Vec<(String, windlass_trust::TrustPolicy)> = policies
            .iter()
            .map(|p| {
                (
                    p.name_any(),
                    windlass_trust::TrustPolicy {
                        keys: p.spec.keys.iter().map(|k| k.key.clone()).collect(),
                        rules: p.spec.rules.clone(),
                        require_signatures: p.spec.require_signatures.clone(),
                    },
                )
            })
            .collect();
        let merged = merge(&named);
        let repository = windlass_oci::repository_of(&artifact.reference)
            .map_err(|e| format!("verifying {}: {e}", artifact.reference))?;
        let needed: BTreeSet<String> = merged
            .rules_for(artifact.class, &repository)
            .iter()
            .flat_map(|(_, rule)| rule.keys.iter().cloned())
            .collect();
        let keys = self.key_material(&policies, &needed).await;
        self.verifier(registry)
            .verify_mirrored(artifact, mirror, &merged, &keys)
            .await
            .map_err(|e| format!("verifying {}: {e}", artifact.reference))
    }

    /// The public keys named in `needed` (`<policy>/<key>`, as [`merge`] names them), or why
    /// each could not be read.
    async fn key_material(
        &self,
        policies: &[TrustPolicy],
        needed: &BTreeSet<String>,
    ) -> KeyMaterial {
        let mut keys = BTreeMap::new();
        for policy in policies {
            for key in &policy.spec.keys {
                let name = format!("{}/{}", policy.name_any(), key.key.name);
                if needed.contains(&name) {
                    let material = self.read_key(&policy.name_any(), key).await;
                    keys.insert(name, material);
                }
            }
        }
        KeyMaterial(keys)
    }

    async fn read_key(&self, policy: &str, key: &PolicyKey) -> Result<PublicKey, String> {
        let namespace = &self.namespace;
        let (pem, where_) = match (&key.config_map, &key.secret) {
            (Some(source), _) => {
                let where_ = format!(
                    "ConfigMap {namespace}/{} key {}",
                    source.name,
                    source.data_key()
                );
                let maps = Api::<ConfigMap>::namespaced(self.client.clone(), namespace);
                let pem = match maps.get_opt(&source.name).await {
                    Ok(Some(map)) => map
                        .data
                        .and_then(|d| d.get(source.data_key()).cloned())
                        .map(String::into_bytes)
                        .ok_or_else(|| format!("{where_} does not exist"))?,
                    Ok(None) => return Err(format!("{where_}: no such ConfigMap")),
                    Err(e) => return Err(format!("{where_}: {e}")),
                };
                (pem, where_)
            }
            (None, Some(source)) => {
                let where_ = format!(
                    "Secret {namespace}/{} key {}",
                    source.name,
                    source.data_key()
                );
                let secrets = Api::<Secret>::namespaced(self.client.clone(), namespace);
                let pem = match secrets.get_opt(&source.name).await {
                    Ok(Some(secret)) => secret
                        .data
                        .and_then(|d| d.get(source.data_key()).map(|b| b.0.clone()))
                        .ok_or_else(|| format!("{where_} does not exist"))?,
                    Ok(None) => return Err(format!("{where_}: no such Secret")),
                    Err(e) => return Err(format!("{where_}: {e}")),
                };
                (pem, where_)
            }
            (None, None) => {
                return Err(format!(
                    "TrustPolicy {policy} key {} names neither a configMap nor a secret",
                    key.key.name
                ));
            }
        };
        PublicKey::from_pem(&pem, &where_).map_err(|e| e.to_string())
    }
}

/// Public keys by policy-scoped name, or why each could not be read.
struct KeyMaterial(BTreeMap<String, Result<PublicKey, String>>);

impl KeyResolver for KeyMaterial {
    fn resolve(&self, name: &str) -> Result<PublicKey, String> {
        match self.0.get(name) {
            Some(Ok(key)) => Ok(key.clone()),
            Some(Err(why)) => Err(why.clone()),
            None => Err(format!("no key material for key {name}")),
        }
    }
}
