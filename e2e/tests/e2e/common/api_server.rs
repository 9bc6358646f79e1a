//! Helpers of the legacy CRD tests (`legacy_crds.rs`) that ask the real API server through the
//! kube client: server-side dry-run creates under strict field validation (what `kubectl create
//! --dry-run=server` sends), test CRDs under a renamed group that are waited for and deleted
//! again, and what a round trip through the API server lost. Requests go straight to the API
//! server, many at once, instead of one kubectl process (with its own discovery) per object.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams};
use kube::core::GroupVersionKind;
use kube::discovery::Scope;
use kube::{Client, Error};
use serde_json::{Value, json};

use super::api_verdict;

/// The API server, with the resources it serves looked up once per kind.
pub struct ApiServer {
    pub client: Client,
    /// `(apiVersion, kind)` -> (plural, namespaced). Only kinds found are kept: a kind a CRD
    /// adds later is looked up again.
    resources: Mutex<HashMap<(String, String), (String, bool)>>,
}

/// The collection URL of `plural` in `api_version` (`v1` for the core group).
fn collection_url(api_version: &str, plural: &str, namespace: Option<&str>) -> String {
    let root = if api_version.contains('/') {
        format!("/apis/{api_version}")
    } else {
        format!("/api/{api_version}")
    };
    match namespace {
        Some(ns) => format!("{root}/namespaces/{ns}/{plural}"),
        None => format!("{root}/{plural}"),
    }
}

/// The API server's message for a failed request.
fn message(error: &Error) -> String {
    match error {
        Error::Api(status) => format!("{} ({})", status.message, status.reason),
        other => other.to_string(),
    }
}

impl ApiServer {
    pub fn new(client: Client) -> ApiServer {
        ApiServer {
            client,
            resources: Mutex::default(),
        }
    }

    /// The plural and scope of `kind` in `api_version`, by discovery.
    async fn resource(&self, api_version: &str, kind: &str) -> Result<(String, bool), String> {
        let key = (api_version.to_string(), kind.to_string());
        if let Some(found) = self.resources.lock().unwrap().get(&key) {
            return Ok(found.clone());
        }
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (resource, capabilities) = kube::discovery::pinned_kind(&self.client, &gvk)
            .await
            .map_err(|e| {
                format!("no matches for kind \"{kind}\" in version \"{api_version}\": {e}")
            })?;
        let found = (resource.plural, capabilities.scope == Scope::Namespaced);
        self.resources.lock().unwrap().insert(key, found.clone());
        Ok(found)
    }

    /// A server-side dry-run create of `object` (in `namespace` when its kind is namespaced)
    /// under strict field validation; what the API server would have stored, or its error.
    pub async fn dry_run_create(&self, object: &Value, namespace: &str) -> Result<Value, Error> {
        let object = without_namespace(object);
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let kind = object["kind"].as_str().unwrap_or_default();
        let (plural, namespaced) = self
            .resource(api_version, kind)
            .await
            .map_err(|e| Error::Discovery(kube::error::DiscoveryError::MissingResource(e)))?;
        let url = collection_url(api_version, &plural, namespaced.then_some(namespace));
        api_verdict::create(&self.client, &url, &object, true, "Strict").await
    }

    /// Server-side dry-run create. An object that already exists passed validation (the API
    /// server validates before it looks at storage), so it counts as accepted.
    pub async fn accepted(&self, object: &Value, namespace: &str) -> Result<(), String> {
        match self.dry_run_create(object, namespace).await {
            Ok(_) => Ok(()),
            Err(Error::Api(status)) if status.reason == "AlreadyExists" => Ok(()),
            Err(e) => Err(message(&e)),
        }
    }

    /// Creates a test CRD (recorded in `created` first, so it is deleted however the test
    /// ends) and waits until it is Established and its resource is listed by discovery: an
    /// Established CRD can take a moment to be served.
    pub async fn create_crd(&self, crd: &Value, created: &CreatedCrds) -> Result<(), String> {
        let name = crd["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let typed: CustomResourceDefinition =
            serde_json::from_value(crd.clone()).map_err(|e| format!("not a CRD: {e}"))?;
        let api = Api::<CustomResourceDefinition>::all(self.client.clone());
        created.0.lock().unwrap().push(name.clone());
        api.create(&Default::default(), &typed)
            .await
            .map_err(|e| format!("creating CRD {name}: {}", message(&e)))?;
        self.established(&api, &name).await?;
        self.discovered(&name).await
    }

    /// Polls until the CRD reports Established (60 s at most).
    async fn established(
        &self,
        api: &Api<CustomResourceDefinition>,
        name: &str,
    ) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut last;
        loop {
            match api.get(name).await {
                Ok(crd) => {
                    let conditions = crd.status.and_then(|s| s.conditions).unwrap_or_default();
                    if conditions
                        .iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                    {
                        return Ok(());
                    }
                    last = format!("{conditions:?}");
                }
                Err(e) => last = message(&e),
            }
            if Instant::now() > deadline {
                return Err(format!("CRD {name} never became Established ({last})"));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Polls discovery until the CRD's resource is listed (60 s at most).
    async fn discovered(&self, crd_name: &str) -> Result<(), String> {
        let Some((plural, group)) = crd_name.split_once('.') else {
            return Err(format!("CRD {crd_name}: not plural.group"));
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let listed = match kube::discovery::group(&self.client, group).await {
                Ok(found) => found
                    .versions()
                    .flat_map(|v| found.versioned_resources(v))
                    .any(|(resource, _)| resource.plural == plural),
                Err(_) => false,
            };
            if listed {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("CRD {crd_name}: never listed by discovery"));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Deletes the CRDs in `created` now (without waiting for them to go).
    pub async fn delete_crds(&self, created: &CreatedCrds) {
        let names = std::mem::take(&mut *created.0.lock().unwrap());
        let api = Api::<CustomResourceDefinition>::all(self.client.clone());
        for name in names {
            if let Err(e) = api.delete(&name, &DeleteParams::default()).await
                && !matches!(&e, Error::Api(s) if s.code == 404)
            {
                // Left for the guard to try again.
                eprintln!("deleting CRD {name}: {}", message(&e));
                created.0.lock().unwrap().push(name);
            }
        }
    }
}

pub fn without_namespace(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("namespace");
    }
    object
}

/// The converted CRD under a group no other test uses; webhook conversion is switched off
/// because the operator's conversion service does not run here.
pub fn renamed(crd_object: &Value, tag: &str) -> Value {
    let mut c = crd_object.clone();
    let group = format!("{}.{tag}", c["spec"]["group"].as_str().unwrap_or_default());
    let plural = c["spec"]["names"]["plural"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    c["spec"]["group"] = json!(group);
    c["metadata"] = json!({ "name": format!("{plural}.{group}") });
    if let Some(spec) = c["spec"].as_object_mut() {
        spec.remove("conversion");
    }
    c
}

/// Fields of `sent` missing or different in `got` (what the API server pruned or rewrote).
pub fn lost(sent: &Value, got: &Value, path: &str, out: &mut Vec<String>) {
    match (sent, got) {
        (Value::Object(s), Value::Object(g)) => {
            for (k, v) in s {
                let at = format!("{path}.{k}");
                match g.get(k) {
                    // A null for a non-nullable field is dropped by the API server by design.
                    None if v.is_null() => {}
                    None => out.push(format!("{at} pruned")),
                    Some(gv) => lost(v, gv, &at, out),
                }
            }
        }
        (Value::Array(s), Value::Array(g)) if s.len() == g.len() => {
            for (i, (sv, gv)) in s.iter().zip(g).enumerate() {
                lost(sv, gv, &format!("{path}[{i}]"), out);
            }
        }
        (Value::Number(s), Value::Number(g)) if s.as_f64() == g.as_f64() => {}
        (s, g) if s == g => {}
        _ => out.push(format!("{path} changed")),
    }
}

/// The test CRDs created so far; whatever [`ApiServer::delete_crds`] did not delete (a test
/// that panicked on the way) is deleted when this goes.
#[derive(Default)]
pub struct CreatedCrds(pub Mutex<Vec<String>>);

impl Drop for CreatedCrds {
    fn drop(&mut self) {
        let names = std::mem::take(&mut *self.0.lock().unwrap());
        for chunk in names.chunks(50) {
            let _ = windlass_testkit::kubectl()
                .args(["delete", "crd", "--wait=false", "--ignore-not-found"])
                .args(chunk)
                .output();
        }
    }
}
