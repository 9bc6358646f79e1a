//! Adopting a Helm release of an operator whose bundle a windlass Catalog serves: Helm's
//! release record (its Secrets) read, the objects its manifest names handed to the windlass
//! Subscription that installs the same operator, and Helm told to forget the release without
//! deleting anything.

use std::io::Read as _;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use windlass_api::names::annotations;

use crate::{
    olm::{Adoption, CatalogPlan, TakeOver},
    olm_objects::ObjectKey,
};

/// Largest release record read (Helm keeps each one under a Secret's 1 MiB).
const MAX_RELEASE_BYTES: u64 = 8 * 1024 * 1024;

/// Helm's label and annotation names on what it installs.
pub const HELM_MANAGED_BY: &str = "Helm";
pub const RELEASE_NAME: &str = "meta.helm.sh/release-name";
pub const RELEASE_NAMESPACE: &str = "meta.helm.sh/release-namespace";

#[derive(Debug, thiserror::Error)]
pub enum HelmError {
    #[error("Secret {secret}: data.release is not base64: {message}")]
    Base64 { secret: String, message: String },
    #[error("Secret {secret}: data.release is not a gzip stream: {message}")]
    Gzip { secret: String, message: String },
    #[error("Secret {secret}: data.release is larger than {MAX_RELEASE_BYTES} bytes unpacked")]
    TooLarge { secret: String },
    #[error("Secret {secret}: data.release is not a Helm release: {message}")]
    Json { secret: String, message: String },
    #[error("Secret {secret}: the release's manifest does not read as YAML: {message}")]
    Manifest { secret: String, message: String },
}

/// One revision of a release, as Helm stores it.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct HelmRelease {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub version: i64,
    #[serde(default)]
    pub info: ReleaseInfo,
    #[serde(default)]
    pub chart: Chart,
    #[serde(default)]
    pub manifest: String,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct ReleaseInfo {
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub last_deployed: String,
    #[serde(default)]
    pub description: String,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct Chart {
    #[serde(default)]
    pub metadata: ChartMetadata,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChartMetadata {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub app_version: String,
}

/// Decodes a release Secret's `data.release` (already base64-decoded once by the API's
/// Secret encoding): Helm's base64 of a gzip of the release's JSON.
pub fn decode_release(secret: &str, data: &[u8]) -> Result<HelmRelease, HelmError> {
    let packed = base64::engine::general_purpose::STANDARD
        .decode(data.trim_ascii())
        .map_err(|e| HelmError::Base64 {
            secret: secret.into(),
            message: e.to_string(),
        })?;
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(packed.as_slice())
        .take(MAX_RELEASE_BYTES + 1)
        .read_to_end(&mut json)
        .map_err(|e| HelmError::Gzip {
            secret: secret.into(),
            message: e.to_string(),
        })?;
    if json.len() as u64 > MAX_RELEASE_BYTES {
        return Err(HelmError::TooLarge {
            secret: secret.into(),
        });
    }
    serde_json::from_slice(&json).map_err(|e| HelmError::Json {
        secret: secret.into(),
        message: e.to_string(),
    })
}

/// The objects a release's manifest names, in order.
pub fn manifest_objects(secret: &str, release: &HelmRelease) -> Result<Vec<ObjectKey>, HelmError> {
    let documents = windlass_bundle::yaml::parse_documents(secret, &release.manifest)
        .map_err(|e| HelmError::Manifest {
            secret: secret.into(),
            message: e.to_string(),
        })?
        .documents;
    Ok(documents
        .iter()
        .filter(|d| d.is_object())
        .map(|d| {
            let mut key = ObjectKey::of(d);
            // Helm fills in the release namespace for namespaced objects that name none; the
            // CLI finds out which kinds are cluster-scoped.
            if key.namespace.is_none() {
                key.namespace = Some(release.namespace.clone());
            }
            key.resource_version.clear();
            key
        })
        .collect())
}

/// A Helm release and what it stands on, as read from the cluster.
#[derive(Clone, Debug, Default)]
pub struct HelmInstall {
    /// The newest revision.
    pub release: HelmRelease,
    /// Every revision read, newest first.
    pub history: Vec<HelmRelease>,
    /// Live objects the manifest names (metadata is enough).
    pub live: Vec<Value>,
    /// Objects the manifest names that are not there.
    pub missing: Vec<ObjectKey>,
    /// What to install instead: the package, the CSV that matches what runs, the Catalog
    /// serving it, and optionally the channel.
    pub package: String,
    pub csv: String,
    pub catalog: String,
    pub channel: Option<String>,
    pub approval: String,
}

/// Plans the adoption of a Helm release.
pub fn plan(install: &HelmInstall) -> Adoption {
    let release = &install.release;
    let ns = release.namespace.clone();
    let origin = format!("helm:{ns}/{}", release.name);
    let mut adoption = Adoption {
        origin: origin.clone(),
        namespace: ns.clone(),
        name: release.name.clone(),
        package: install.package.clone(),
        csv: install.csv.clone(),
        approval: install.approval.clone(),
        catalog: CatalogPlan {
            name: install.catalog.clone(),
            create: None,
        },
        ..Adoption::default()
    };
    if release.info.status != "deployed" {
        adoption.blockers.push(format!(
            "Helm release {ns}/{} revision {} is {:?}, not deployed: finish or roll back with \
             Helm first",
            release.name, release.version, release.info.status
        ));
    }
    for missing in &install.missing {
        adoption.blockers.push(format!(
            "{missing}, which the release's manifest names, is not there: Helm's view and the \
             cluster differ"
        ));
    }
    adoption.stop_first.push(format!(
        "no `helm upgrade`, `helm rollback` or `helm uninstall` of {ns}/{} while it is adopted \
         (uninstall deletes what windlass then runs); the adopted objects lose Helm's \
         release annotations, so a later `helm upgrade` refuses them",
        release.name
    ));
    let blueprint = format!("{ns}/{}", release.name);
    for live in &install.live {
        let key = ObjectKey::of(live);
        let extra = if key.kind == "CustomResourceDefinition" {
            vec![
                (annotations::CRD_ADOPT, install.package.clone()),
                (annotations::ADOPTED_FROM, origin.clone()),
            ]
        } else {
            vec![
                (annotations::ADOPT, blueprint.clone()),
                (annotations::ADOPTED_FROM, origin.clone()),
            ]
        };
        let mut take = TakeOver::new(
            live,
            &extra,
            format!(
                "in Helm release {ns}/{}: handed to the windlass install",
                release.name
            ),
        );
        strip_helm(&mut take, live);
        adoption.take_over.push(take);
    }
    let mut spec = json!({
        "package": install.package,
        "startingCSV": install.csv,
        "catalog": install.catalog,
        "approval": "Manual",
    });
    if let Some(channel) = &install.channel {
        spec["channel"] = json!(channel);
    }
    let history: Vec<Value> = install
        .history
        .iter()
        .map(|r| {
            json!({
                "revision": r.version,
                "chart": format!("{}-{}", r.chart.metadata.name, r.chart.metadata.version),
                "appVersion": r.chart.metadata.app_version,
                "status": r.info.status,
                "deployed": r.info.last_deployed,
                "description": r.info.description,
            })
        })
        .collect();
    adoption.subscription = json!({
        "apiVersion": "windlass.dev/v1alpha1",
        "kind": "Subscription",
        "metadata": {
            "name": release.name,
            "namespace": ns,
            "annotations": {
                annotations::ADOPTED_FROM: origin,
                annotations::ADOPTED_HISTORY: serde_json::to_string(&history).unwrap_or_default(),
            },
        },
        "spec": spec,
    });
    adoption.let_go.push(format!(
        "kubectl label secret -n {ns} -l owner=helm,name={} owner-   # Helm forgets the \
         release; its history stays in those Secrets",
        release.name
    ));
    adoption
}

/// Adds Helm's own ownership marks to a take-over and its undo: its managed-by label (windlass
/// applies its own) and release annotations go, so Helm no longer counts the object as its.
fn strip_helm(take: &mut TakeOver, live: &Value) {
    let meta = &live["metadata"];
    if meta["labels"][windlass_api::names::labels::MANAGED_BY] == json!(HELM_MANAGED_BY) {
        take.patch["metadata"]["labels"][windlass_api::names::labels::MANAGED_BY] = Value::Null;
        take.undo["metadata"]["labels"][windlass_api::names::labels::MANAGED_BY] =
            json!(HELM_MANAGED_BY);
    }
    for key in [RELEASE_NAME, RELEASE_NAMESPACE] {
        if let Some(value) = meta["annotations"][key].as_str() {
            take.patch["metadata"]["annotations"][key] = Value::Null;
            take.undo["metadata"]["annotations"][key] = json!(value);
        }
    }
}

#[cfg(test)]
#[path = "helm_tests.rs"]
mod tests;
