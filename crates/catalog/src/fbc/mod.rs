//! File-based catalogs: reading `olm.package` / `olm.channel` / `olm.bundle` /
//! `olm.deprecations` blobs (JSON or YAML streams) and rendering a catalog in the same shape
//! `opm render` emits.

mod render;

use std::path::Path;

use serde_json::Value;

pub use render::{render, write_json, write_yaml};

use crate::load::{IssueKind, LoadError, LoadIssue, Loaded};
use crate::model::{Bundle, Channel, ChannelEntry, Deprecation, Package, Property, RelatedImage};
use crate::validate::Severity;

/// Reads a file-based catalog: one file, or every `.json`/`.yaml`/`.yml` file under a folder.
pub fn read(path: &Path) -> Result<Loaded, LoadError> {
    let mut files = Vec::new();
    collect(path, &mut files)?;
    let mut loaded = Loaded::default();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|source| LoadError::Io {
            path: file.clone(),
            source,
        })?;
        for blob in parse_blobs(&file, &text)? {
            add_blob(&file, blob, &mut loaded)?;
        }
    }
    for (name, package) in &loaded.catalog.packages {
        loaded
            .package_sources
            .entry(name.clone())
            .or_insert_with(|| path.to_path_buf());
        let _ = package;
    }
    Ok(loaded)
}

/// The label naming the folder of a catalog image that holds its file-based catalog.
pub const CONFIGS_LABEL: &str = "operators.operatorframework.io.index.configs.v1";

/// Reads a file-based catalog held in memory (a pulled catalog image): every `.json`, `.yaml`
/// and `.yml` file under `dir` (empty: the whole tree).
pub fn read_tree(
    tree: &windlass_bundle::FileTree,
    dir: &str,
    source: &str,
) -> Result<Loaded, LoadError> {
    let dir = dir.trim_matches('/');
    let mut loaded = Loaded::default();
    for (key, bytes) in &tree.files {
        let inside = dir.is_empty() || key.starts_with(&format!("{dir}/"));
        let path = Path::new(key);
        if !inside
            || !path
                .extension()
                .is_some_and(|e| e == "json" || e == "yaml" || e == "yml")
        {
            continue;
        }
        let file = Path::new(source).join(key);
        let text = std::str::from_utf8(bytes).map_err(|_| LoadError::Invalid {
            file: file.clone(),
            message: "not UTF-8 text".into(),
        })?;
        for blob in parse_blobs(&file, text)? {
            add_blob(&file, blob, &mut loaded)?;
        }
    }
    for name in loaded.catalog.packages.keys() {
        loaded
            .package_sources
            .insert(name.clone(), std::path::PathBuf::from(source));
    }
    Ok(loaded)
}

/// A catalog as the files of a catalog image: `configs/<package>/catalog.json`, one per
/// package, each the rendered blobs of that package.
pub fn image_tree(catalog: &crate::model::Catalog) -> std::io::Result<windlass_bundle::FileTree> {
    let mut tree = windlass_bundle::FileTree::default();
    for (name, package) in &catalog.packages {
        let single = crate::model::Catalog {
            packages: [(name.clone(), package.clone())].into(),
        };
        let mut bytes = Vec::new();
        write_json(&render(&single), &mut bytes)?;
        tree.files
            .insert(format!("configs/{name}/catalog.json"), bytes);
    }
    Ok(tree)
}

fn collect(path: &Path, out: &mut Vec<std::path::PathBuf>) -> Result<(), LoadError> {
    if path.is_file() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    for entry in crate::load::entries(path)? {
        if entry.is_dir() {
            collect(&entry, out)?;
        } else if entry
            .extension()
            .is_some_and(|e| e == "json" || e == "yaml" || e == "yml")
        {
            out.push(entry);
        }
    }
    Ok(())
}

/// JSON files are concatenated objects (what `opm render` writes); YAML files are `---` streams.
pub fn parse_blobs(file: &Path, text: &str) -> Result<Vec<Value>, LoadError> {
    let display = file.display().to_string();
    if file.extension().is_some_and(|e| e == "json") {
        let mut out = Vec::new();
        let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
        loop {
            match stream.next() {
                None => break,
                Some(Ok(v)) => out.push(v),
                Some(Err(e)) => {
                    return Err(LoadError::Yaml(windlass_bundle::yaml::YamlError {
                        file: display,
                        line: Some(e.line() as u64),
                        column: Some(e.column() as u64),
                        message: e.to_string(),
                    }));
                }
            }
        }
        Ok(out)
    } else {
        Ok(windlass_bundle::yaml::parse_documents(&display, text)?.documents)
    }
}

fn field<T: serde::de::DeserializeOwned>(
    file: &Path,
    blob: &Value,
    schema: &str,
) -> Result<T, LoadError> {
    serde_path_to_error::deserialize(blob).map_err(|e| LoadError::Invalid {
        file: file.to_path_buf(),
        message: format!(
            "{schema} blob {:?}: {}: {}",
            blob["name"].as_str().unwrap_or("?"),
            e.path(),
            e.inner()
        ),
    })
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct PackageBlob {
    name: String,
    default_channel: Option<String>,
    description: Option<String>,
    icon: Option<Value>,
}

#[derive(serde::Deserialize)]
struct ChannelBlob {
    name: String,
    package: String,
    #[serde(default)]
    entries: Vec<ChannelEntry>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct BundleBlob {
    name: String,
    package: String,
    image: Option<String>,
    #[serde(default)]
    properties: Vec<Property>,
    #[serde(default)]
    related_images: Vec<RelatedImage>,
}

#[derive(serde::Deserialize)]
struct DeprecationsBlob {
    package: String,
    #[serde(default)]
    entries: Vec<Deprecation>,
}

fn package<'a>(loaded: &'a mut Loaded, name: &str) -> &'a mut Package {
    loaded
        .catalog
        .packages
        .entry(name.to_string())
        .or_insert_with(|| Package {
            name: name.to_string(),
            ..Default::default()
        })
}

fn add_blob(file: &Path, blob: Value, loaded: &mut Loaded) -> Result<(), LoadError> {
    let Some(schema) = blob["schema"].as_str().map(String::from) else {
        return Err(LoadError::Invalid {
            file: file.to_path_buf(),
            message: "a blob has no `schema`".into(),
        });
    };
    match schema.as_str() {
        "olm.package" => {
            let b: PackageBlob = field(file, &blob, &schema)?;
            let p = package(loaded, &b.name);
            p.default_channel = b.default_channel;
            p.description = b.description;
            p.icon = b.icon;
        }
        "olm.channel" => {
            let b: ChannelBlob = field(file, &blob, &schema)?;
            let channel = Channel {
                name: b.name.clone(),
                package: b.package.clone(),
                entries: b.entries,
            };
            package(loaded, &b.package).channels.insert(b.name, channel);
        }
        "olm.bundle" => {
            let b: BundleBlob = field(file, &blob, &schema)?;
            let version = b.properties.iter().find_map(|p| match p {
                Property::Package { version, .. } => Some(version.clone()),
                _ => None,
            });
            let parsed = version
                .as_deref()
                .map(|v| semver::Version::parse(v.trim_start_matches('v')));
            let version = match parsed {
                Some(Ok(v)) => v,
                other => {
                    let why = match other {
                        Some(Err(e)) => format!("olm.package version is not semver: {e}"),
                        _ => "no olm.package property".to_string(),
                    };
                    loaded.issues.push(LoadIssue::new(
                        Severity::Error,
                        IssueKind::BadVersion,
                        Some(&b.package),
                        file.display().to_string(),
                        format!("bundle {}: {why}; bundle left out", b.name),
                    ));
                    return Ok(());
                }
            };
            for (i, property) in b.properties.iter().enumerate() {
                let Property::Other { type_, value } = property else {
                    continue;
                };
                if type_ != crate::constraint::CONSTRAINT_TYPE {
                    continue;
                }
                if let Err(e) = crate::constraint::Constraint::parse(value) {
                    let field = match e.field.as_str() {
                        "" => format!("properties[{i}].value"),
                        inner => format!("properties[{i}].value.{inner}"),
                    };
                    loaded.issues.push(LoadIssue::new(
                        Severity::Error,
                        IssueKind::BadConstraint,
                        Some(&b.package),
                        file.display().to_string(),
                        format!(
                            "olm.bundle {}: {field}: {}; resolution never chooses this bundle",
                            b.name, e.problem
                        ),
                    ));
                }
            }
            let bundle = Bundle {
                name: b.name.clone(),
                package: b.package.clone(),
                version,
                image: b.image.filter(|i| !i.is_empty()),
                properties: b.properties,
                related_images: b.related_images,
            };
            if package(loaded, &b.package)
                .bundles
                .insert(b.name.clone(), bundle)
                .is_some()
            {
                loaded.issues.push(LoadIssue::new(
                    Severity::Error,
                    IssueKind::DuplicateBundle,
                    Some(&b.package),
                    file.display().to_string(),
                    format!("bundle {} is already added", b.name),
                ));
            }
        }
        "olm.deprecations" => {
            let b: DeprecationsBlob = field(file, &blob, &schema)?;
            package(loaded, &b.package).deprecations.extend(b.entries);
        }
        other => loaded.issues.push(LoadIssue::new(
            Severity::Warning,
            IssueKind::UnknownSchema,
            blob["package"].as_str(),
            file.display().to_string(),
            format!("blob of schema {other} ignored"),
        )),
    }
    Ok(())
}

#[cfg(test)]
mod tests;
