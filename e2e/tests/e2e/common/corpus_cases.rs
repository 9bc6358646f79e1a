//! The corpus CRDs and their `alm-examples`, as the CRD safety differential test uses them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use windlass_bundle::crd::safety;
use windlass_bundle::{Bundle, crd, legacy_apis, load_bundle};

/// Samples per CRD: enough to see one pass and one fail, few enough to stay quick.
const MAX_SAMPLES: usize = 3;

pub fn corpus() -> Option<PathBuf> {
    windlass_corpus::operatorhub_or_skip()
}

/// The highest-versioned bundle of every package folder.
pub fn highest_versions(root: &Path) -> Vec<(String, Bundle)> {
    let mut packages: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    packages.sort();
    let mut out = Vec::new();
    for package in packages {
        let best = std::fs::read_dir(&package)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .filter_map(|v| load_bundle(&v).ok())
            .filter_map(|b| b.csv.version().ok().map(|v| (v, b)))
            .max_by(|a, b| a.0.cmp(&b.0));
        if let Some((_, bundle)) = best {
            out.push((
                package.file_name().unwrap().to_string_lossy().into_owned(),
                bundle,
            ));
        }
    }
    out
}

/// One corpus CRD with the samples of one version.
pub struct Case {
    pub package: String,
    pub crd: Value,
    pub version: String,
    pub samples: Vec<Value>,
}

pub fn cases(root: &Path) -> Vec<Case> {
    let mut out = Vec::new();
    for (package, bundle) in highest_versions(root) {
        let Ok(converted) = legacy_apis::convert_manifests(&bundle.manifests) else {
            continue;
        };
        let examples: Vec<Value> = bundle
            .manifests
            .iter()
            .find(|m| m.object["kind"] == "ClusterServiceVersion")
            .and_then(|m| m.object.pointer("/metadata/annotations/alm-examples"))
            .and_then(Value::as_str)
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default();
        let mut package_cases = Vec::new();
        for c in converted
            .objects
            .iter()
            .map(|m| &m.object)
            .filter(|o| crd::is_crd(o))
        {
            let group = c["spec"]["group"].as_str().unwrap_or_default();
            let kind = c["spec"]["names"]["kind"].as_str().unwrap_or_default();
            let mut by_version: BTreeMap<String, Vec<Value>> = BTreeMap::new();
            for e in &examples {
                let api = e["apiVersion"].as_str().unwrap_or_default();
                if let Some((g, v)) = api.rsplit_once('/')
                    && g == group
                    && e["kind"] == kind
                    && safety::served_versions(c).iter().any(|s| s == v)
                {
                    by_version.entry(v.to_string()).or_default().push(e.clone());
                }
            }
            let Some((version, samples)) = by_version.into_iter().max_by_key(|(_, s)| s.len())
            else {
                continue;
            };
            package_cases.push(Case {
                package: package.clone(),
                crd: c.clone(),
                version,
                samples: samples.into_iter().take(MAX_SAMPLES).collect(),
            });
        }
        // One CRD per package, the one with the most samples: the run stays within minutes on
        // a small machine, and every package's schema style is still seen.
        if let Some(best) = package_cases.into_iter().max_by_key(|c| c.samples.len()) {
            out.push(best);
        }
    }
    out
}

/// The CRD under `group`, named for it, with no conversion webhook (its service does not run
/// here) and no subresources (so that a create validates `status` too).
pub fn renamed(crd_object: &Value, group: &str) -> Value {
    let mut c = crd_object.clone();
    let plural = c["spec"]["names"]["plural"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    c["spec"]["group"] = json!(group);
    c["metadata"] = json!({ "name": format!("{plural}.{group}") });
    if let Some(spec) = c["spec"].as_object_mut() {
        spec.remove("conversion");
    }
    for v in c["spec"]["versions"].as_array_mut().into_iter().flatten() {
        if let Some(v) = v.as_object_mut() {
            v.remove("subresources");
        }
    }
    if let Some(o) = c.as_object_mut() {
        o.remove("status");
    }
    c
}

/// An object as a client sends it to `group/version`: the API server's own metadata removed.
pub fn as_sent(object: &Value, group: &str, version: &str) -> Value {
    let mut o = object.clone();
    o["apiVersion"] = json!(format!("{group}/{version}"));
    let meta = &object["metadata"];
    let mut clean = json!({"name": meta["name"]});
    for key in ["labels", "annotations", "generateName"] {
        if let Some(v) = meta.get(key) {
            clean[key] = v.clone();
        }
    }
    o["metadata"] = clean;
    o
}
