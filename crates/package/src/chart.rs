//! Helm charts as hub packages: what a chart archive says about itself (`Chart.yaml`), the
//! images its values name, how an OCI registry holds a chart, and the checks of a package
//! manifest against its chart.

use std::collections::BTreeSet;
use std::io::Read;

use serde::Deserialize;
use serde_json::Value;
use windlass_mirror::ImageReference;

use crate::images::ImageUse;
use crate::layout::Descriptor;
use crate::lint::Report;
use crate::manifest::{API_VERSION, KIND, Link, PackageManifest, RelatedImage};

/// The config media type of a chart in an OCI registry.
pub const HELM_CONFIG: &str = "application/vnd.cncf.helm.config.v1+json";
/// The chart archive's layer.
pub const HELM_CONTENT: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";
/// Largest chart archive read (charts are text; the largest public ones are a few MiB).
pub const MAX_CHART_BYTES: u64 = 16 * 1024 * 1024;
/// Largest `Chart.yaml` or `values.yaml` read.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// What a chart says about itself, and the images its values name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chart {
    pub name: String,
    pub version: String,
    pub description: String,
    pub keywords: Vec<String>,
    pub home: String,
    pub images: Vec<ImageUse>,
}

/// Why a chart cannot be read; names the file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChartError {
    #[error("the chart is not a readable .tgz: {0}")]
    Archive(String),
    #[error("the chart has no {0}")]
    Missing(&'static str),
    #[error("the chart's {file} is larger than {MAX_FILE_BYTES} bytes")]
    TooLarge { file: String },
    #[error("the chart's {file}: {message}")]
    File { file: String, message: String },
    #[error("{reference} is not a Helm chart: {why}")]
    NotAChart { reference: String, why: String },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ChartYaml {
    #[serde(default)]
    name: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    home: String,
}

/// Reads a chart archive (`helm package`'s `.tgz`): the top folder's `Chart.yaml` and
/// `values.yaml` (subcharts' own files are theirs).
pub fn read_chart(tgz: &[u8]) -> Result<Chart, ChartError> {
    let archive = |e: std::io::Error| ChartError::Archive(e.to_string());
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(tgz));
    let (mut chart_yaml, mut values_yaml) = (None, None);
    for entry in tar.entries().map_err(archive)? {
        let mut entry = entry.map_err(archive)?;
        let path = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let parts: Vec<&str> = path.trim_start_matches("./").split('/').collect();
        let slot = match parts.as_slice() {
            [_, "Chart.yaml"] => &mut chart_yaml,
            [_, "values.yaml"] => &mut values_yaml,
            _ => continue,
        };
        if entry.size() > MAX_FILE_BYTES {
            return Err(ChartError::TooLarge { file: path });
        }
        let mut text = String::new();
        entry
            .read_to_string(&mut text)
            .map_err(|e| ChartError::File {
                file: path.clone(),
                message: e.to_string(),
            })?;
        *slot = Some((path, text));
    }
    let (file, text) = chart_yaml.ok_or(ChartError::Missing("Chart.yaml"))?;
    let meta: ChartYaml =
        serde_json::from_value(document(&file, &text)?).map_err(|e| ChartError::File {
            file: file.clone(),
            message: e.to_string(),
        })?;
    for (field, value) in [("name", &meta.name), ("version", &meta.version)] {
        if value.trim().is_empty() {
            return Err(ChartError::File {
                file,
                message: format!("{field} must not be empty"),
            });
        }
    }
    let images = match values_yaml {
        Some((file, text)) => values_images(&document(&file, &text)?),
        None => Vec::new(),
    };
    Ok(Chart {
        name: meta.name,
        version: meta.version,
        description: meta.description,
        keywords: meta.keywords,
        home: meta.home,
        images,
    })
}

fn document(file: &str, text: &str) -> Result<Value, ChartError> {
    let error = |message: String| ChartError::File {
        file: file.into(),
        message,
    };
    let parsed =
        windlass_bundle::yaml::parse_documents(file, text).map_err(|e| error(e.to_string()))?;
    Ok(parsed.documents.into_iter().next().unwrap_or(Value::Null))
}

/// The images a chart's values name: ACP's `global.images.<name>.{repository, tag}` below
/// `global.registry.address`, and every `image` key, as a reference or as
/// `{registry, repository, tag}`. Each once, in order.
pub fn values_images(values: &Value) -> Vec<ImageUse> {
    let mut out: Vec<ImageUse> = Vec::new();
    let mut add = |image: String, used_by: String| {
        if !out.iter().any(|u| u.image == image) {
            out.push(ImageUse { image, used_by });
        }
    };
    let registry = values["global"]["registry"]["address"]
        .as_str()
        .unwrap_or_default();
    if let Some(images) = values["global"]["images"].as_object() {
        for (key, image) in images {
            if let Some(reference) = from_parts(registry, image) {
                add(
                    reference,
                    format!("is in values.yaml as global.images.{key}"),
                );
            }
        }
    }
    let mut stack = vec![(String::new(), values)];
    while let Some((path, value)) = stack.pop() {
        let Some(map) = value.as_object() else {
            continue;
        };
        for (key, child) in map.iter().rev() {
            let here = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            if key == "image" {
                let reference = match child {
                    Value::String(s) if is_pinned_or_tagged(s) => Some(s.clone()),
                    Value::Object(_) => {
                        from_parts(child["registry"].as_str().unwrap_or_default(), child)
                    }
                    _ => None,
                };
                if let Some(reference) = reference {
                    add(reference, format!("is in values.yaml at {here}"));
                    continue;
                }
            }
            stack.push((here, child));
        }
    }
    out
}

/// `[registry/]repository:tag` (or `@digest`) from a map of those keys.
fn from_parts(registry: &str, image: &Value) -> Option<String> {
    let repository = image["repository"].as_str().filter(|r| !r.is_empty())?;
    let at = match (image["digest"].as_str(), image["tag"].as_str()) {
        (Some(digest), _) if !digest.is_empty() => format!("@{digest}"),
        (_, Some(tag)) if !tag.is_empty() => format!(":{tag}"),
        _ => return None,
    };
    let name = match registry.trim_end_matches('/') {
        "" => repository.to_string(),
        registry => format!("{registry}/{repository}"),
    };
    let reference = format!("{name}{at}");
    is_pinned_or_tagged(&reference).then_some(reference)
}

fn is_pinned_or_tagged(reference: &str) -> bool {
    ImageReference::parse(reference).is_ok_and(|r| r.tag.is_some() || r.digest.is_some())
}

/// The chart layer of an OCI manifest, when the manifest is a Helm chart's; otherwise why not.
pub fn chart_layer(reference: &str, manifest: &[u8]) -> Result<Descriptor, ChartError> {
    let not = |why: String| ChartError::NotAChart {
        reference: reference.into(),
        why,
    };
    let value: Value = serde_json::from_slice(manifest)
        .map_err(|e| not(format!("its manifest is not JSON: {e}")))?;
    let config = value["config"]["mediaType"].as_str().unwrap_or_default();
    if config != HELM_CONFIG {
        return Err(not(format!("its config is `{config}`, not {HELM_CONFIG}")));
    }
    let layers: Vec<Descriptor> =
        serde_json::from_value(value["layers"].clone()).map_err(|e| not(format!("layers: {e}")))?;
    let layer = layers
        .into_iter()
        .find(|l| l.media_type == HELM_CONTENT)
        .ok_or_else(|| not(format!("it has no {HELM_CONTENT} layer")))?;
    if layer.size > MAX_CHART_BYTES {
        return Err(not(format!(
            "its chart is {} bytes, more than {MAX_CHART_BYTES}",
            layer.size
        )));
    }
    Ok(layer)
}

/// A manifest filled from a chart: its name, version, description, keywords, home page and
/// every image its values name, with `reference` as the chart.
pub fn manifest_from_chart(
    name: &str,
    reference: &str,
    chart: &Chart,
    architectures: &[String],
) -> PackageManifest {
    let mut manifest = PackageManifest {
        api_version: API_VERSION.into(),
        kind: KIND.into(),
        ..Default::default()
    };
    manifest.metadata.name = name.to_string();
    let spec = &mut manifest.spec;
    spec.version = chart.version.clone();
    spec.chart = reference.to_string();
    spec.display_name = chart.name.clone();
    spec.description = chart.description.clone();
    spec.keywords = chart.keywords.clone();
    if chart.home.starts_with("https://") || chart.home.starts_with("http://") {
        spec.links = vec![Link {
            name: "Home".into(),
            url: chart.home.clone(),
        }];
    }
    spec.architectures = architectures.to_vec();
    spec.related_images = chart
        .images
        .iter()
        .map(|u| RelatedImage {
            name: String::new(),
            image: u.image.clone(),
        })
        .collect();
    manifest
}

/// Checks that the manifest carries every image the chart's values name and says the chart's
/// version.
pub fn lint_against_chart(manifest: &PackageManifest, chart: &Chart) -> Report {
    let mut report = Report::default();
    let listed: BTreeSet<&str> = manifest.images().into_iter().collect();
    let field = manifest.fields().related_images;
    for ImageUse { image, used_by } in &chart.images {
        if !listed.contains(image.as_str()) {
            report.error(
                field,
                format!(
                    "{field} does not list {image}, which {used_by}; the package would not carry it"
                ),
            );
        }
    }
    let version = &manifest.spec.version;
    let bare = |v: &str| v.strip_prefix('v').unwrap_or(v).to_string();
    if !version.is_empty() && bare(version) != bare(&chart.version) {
        report.error(
            "spec.version",
            format!(
                "spec.version {version} differs from the chart's, which is version {}",
                chart.version
            ),
        );
    }
    if !manifest.metadata.name.is_empty() && manifest.metadata.name != chart.name {
        report.warning(
            "metadata.name",
            format!(
                "metadata.name {} differs from the chart's name {}",
                manifest.metadata.name, chart.name
            ),
        );
    }
    report
}

#[cfg(test)]
mod tests;
