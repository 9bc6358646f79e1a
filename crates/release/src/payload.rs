//! Reading a payload: a directory or an image's files ([`FileTree`]) in the CVO layout, checked
//! whole before anything uses it.
//!
//! As the CVO does, only the top level of `manifests/` and `release-manifests/` is read, only
//! `.yaml`, `.yml` and `.json` files, every document of a multi-document file. What the CVO leaves
//! to `oc adm release new` (every image pinned by digest and listed in `image-references`) is
//! checked here instead, so a payload that loads is one that can be verified and mirrored.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use windlass_bundle::files::{FileTree, Limits, ReadError};

use crate::annotations::{self, DEFAULT_PROFILE};
use crate::error::{InvalidPayload, PayloadError};
use crate::manifest::{FileName, Manifest, ObjectRef, PayloadDir, has_manifest_extension};
use crate::metadata::{
    IMAGE_REFERENCES_FILE, ImageReferences, METADATA_FILE, ReleaseMetadata, is_pinned_by_digest,
};

/// The template text an updater manifest uses for the payload's own image.
pub const RELEASE_IMAGE_TEMPLATE: &str = "{{.ReleaseImage}}";

/// Inputs to reading a payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadOptions {
    /// The payload's own image (by digest) for `{{.ReleaseImage}}` in `manifests/`; without it
    /// the template text stays.
    pub release_image: Option<String>,
    /// For `{{.ClusterProfile}}` in `manifests/`.
    pub profile: String,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            release_image: None,
            profile: DEFAULT_PROFILE.into(),
        }
    }
}

/// Something in a payload that is not wrong but that a person should know about.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PayloadWarning {
    pub file: String,
    pub message: String,
}

impl std::fmt::Display for PayloadWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file, self.message)
    }
}

/// A checked payload.
#[derive(Clone, Debug, PartialEq)]
pub struct Payload {
    /// Where it was read from (a directory or an image reference), for messages.
    pub source: String,
    pub metadata: ReleaseMetadata,
    pub image_references: ImageReferences,
    /// Every document of every read file: `manifests/` first, each directory in file-name order.
    pub manifests: Vec<Manifest>,
    pub warnings: Vec<PayloadWarning>,
}

/// Why a directory could not become a payload.
#[derive(Debug, thiserror::Error)]
pub enum ReadPayloadError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Invalid(#[from] InvalidPayload),
}

impl Payload {
    /// Reads a payload directory (the root holding `release-manifests/`).
    pub fn read_dir(dir: &Path, options: &LoadOptions) -> Result<Payload, ReadPayloadError> {
        let tree = FileTree::read_dir(dir, Limits::default())?;
        Ok(Payload::from_tree(
            &tree,
            &dir.display().to_string(),
            options,
        )?)
    }

    /// Reads a payload from its files (a directory read into memory or a pulled image).
    pub fn from_tree(
        tree: &FileTree,
        source: &str,
        options: &LoadOptions,
    ) -> Result<Payload, InvalidPayload> {
        let mut errors = Vec::new();
        let mut warnings = Vec::new();
        let invalid = |errors| InvalidPayload {
            source_name: source.to_string(),
            errors,
        };
        if tree.under(PayloadDir::Release.path()).next().is_none() {
            return Err(invalid(vec![PayloadError::NotAPayload {
                source_name: source.to_string(),
            }]));
        }
        let metadata = match tree.get(METADATA_FILE) {
            None => Err(PayloadError::MissingFile {
                file: METADATA_FILE.into(),
                what: "Cincinnati metadata (kind, version, previous, next)",
            }),
            Some(bytes) => ReleaseMetadata::parse(METADATA_FILE, bytes),
        };
        let image_references = match tree.get(IMAGE_REFERENCES_FILE) {
            None => Err(PayloadError::MissingFile {
                file: IMAGE_REFERENCES_FILE.into(),
                what: "the ImageStream listing every image by digest",
            }),
            Some(bytes) => ImageReferences::parse(IMAGE_REFERENCES_FILE, bytes),
        };
        if let (Ok(metadata), Ok(refs)) = (&metadata, &image_references)
            && refs.version != metadata.version.to_string()
        {
            errors.push(PayloadError::ImageReferences {
                file: IMAGE_REFERENCES_FILE.into(),
                message: format!(
                    "metadata.name is {}, but {METADATA_FILE} says version {}",
                    refs.version, metadata.version
                ),
            });
        }
        let (manifests, mut found_errors, mut found_warnings) = read_all(tree, options);
        errors.append(&mut found_errors);
        warnings.append(&mut found_warnings);
        if let Ok(refs) = &image_references {
            errors.extend(unlisted_images(&manifests, refs, options));
        }
        for m in &manifests {
            if m.profiles().is_empty() {
                warnings.push(PayloadWarning {
                    file: m.file.clone(),
                    message: format!(
                        "{} has no {}<profile>: \"true\" annotation, so no cluster profile applies it",
                        m.object,
                        annotations::PROFILE_PREFIX
                    ),
                });
            }
        }
        let metadata = metadata.map_err(|e| errors.insert(0, e)).ok();
        let image_references = image_references.map_err(|e| errors.insert(0, e)).ok();
        match (metadata, image_references) {
            (Some(metadata), Some(image_references)) if errors.is_empty() => Ok(Payload {
                source: source.into(),
                metadata,
                image_references,
                manifests,
                warnings,
            }),
            _ => Err(invalid(errors)),
        }
    }

    pub fn version(&self) -> &semver::Version {
        &self.metadata.version
    }
}

/// Reads the manifests of both directories with the per-file checks, duplicates and level
/// widths, but neither metadata nor image rules: what building a payload needs before its
/// `image-references` exists.
pub fn read_manifests(
    tree: &FileTree,
    source: &str,
    options: &LoadOptions,
) -> Result<(Vec<Manifest>, Vec<PayloadWarning>), InvalidPayload> {
    let (manifests, errors, warnings) = read_all(tree, options);
    if errors.is_empty() {
        Ok((manifests, warnings))
    } else {
        Err(InvalidPayload {
            source_name: source.to_string(),
            errors,
        })
    }
}

/// An `image-references` for `manifests`: one tag per distinct pod-template image, named after
/// the first container that runs it (`-2`, `-3` for a name already taken). Manifests that delete
/// their object and the updater's `{{.ReleaseImage}}` do not count.
pub fn generate_image_references(version: &str, manifests: &[Manifest]) -> ImageReferences {
    let mut refs = ImageReferences {
        version: version.to_string(),
        images: Vec::new(),
    };
    let mut names = BTreeSet::new();
    for m in manifests
        .iter()
        .filter(|m| m.action() != crate::manifest::Action::Delete)
    {
        for c in m.images() {
            if c.image == RELEASE_IMAGE_TEMPLATE || refs.contains_image(&c.image) {
                continue;
            }
            let base = if c.container.is_empty() {
                "image".to_string()
            } else {
                c.container
            };
            let mut name = base.clone();
            let mut n = 2;
            while !names.insert(name.clone()) {
                name = format!("{base}-{n}");
                n += 1;
            }
            refs.images.push(crate::metadata::ImageReference {
                name,
                image: c.image,
            });
        }
    }
    refs
}

fn read_all(
    tree: &FileTree,
    options: &LoadOptions,
) -> (Vec<Manifest>, Vec<PayloadError>, Vec<PayloadWarning>) {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut manifests = Vec::new();
    for dir in [PayloadDir::Updater, PayloadDir::Release] {
        for (key, bytes) in tree.under(dir.path()) {
            if key == METADATA_FILE || key == IMAGE_REFERENCES_FILE {
                continue;
            }
            let name = &key[dir.path().len() + 1..];
            if name.contains('/') {
                warnings.push(PayloadWarning {
                    file: key.into(),
                    message: "in a subdirectory; only the top level is read".into(),
                });
                continue;
            }
            if !has_manifest_extension(name) {
                warnings.push(PayloadWarning {
                    file: key.into(),
                    message: "not read: only .yaml, .yml and .json files are manifests".into(),
                });
                continue;
            }
            match read_file(key, name, dir, bytes, options, &mut warnings) {
                Ok(found) => manifests.extend(found),
                Err(mut found) => errors.append(&mut found),
            }
        }
    }
    errors.extend(duplicates(&manifests));
    errors.extend(mixed_level_widths(&manifests));
    (manifests, errors, warnings)
}

/// Renders the updater templates windlass knows; any other `{{ }}` is an error, because the
/// CVO would render it and windlass cannot.
fn render_updater_templates(
    file: &str,
    text: &str,
    options: &LoadOptions,
) -> Result<String, PayloadError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let Some(len) = rest[start..].find("}}") else {
            return Err(PayloadError::Template {
                file: file.into(),
                expression: rest[start..].lines().next().unwrap_or("").to_string(),
            });
        };
        let expression = &rest[start..start + len + 2];
        match expression[2..expression.len() - 2].trim() {
            ".ReleaseImage" => match &options.release_image {
                Some(image) => out.push_str(image),
                None => out.push_str(RELEASE_IMAGE_TEMPLATE),
            },
            ".ClusterProfile" => out.push_str(&options.profile),
            _ => {
                return Err(PayloadError::Template {
                    file: file.into(),
                    expression: expression.to_string(),
                });
            }
        }
        rest = &rest[start + len + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

fn read_file(
    key: &str,
    name: &str,
    dir: PayloadDir,
    bytes: &[u8],
    options: &LoadOptions,
    warnings: &mut Vec<PayloadWarning>,
) -> Result<Vec<Manifest>, Vec<PayloadError>> {
    let text =
        std::str::from_utf8(bytes).map_err(|_| vec![PayloadError::NotText { file: key.into() }])?;
    let rendered;
    let text = if dir == PayloadDir::Updater {
        rendered = render_updater_templates(key, text, options).map_err(|e| vec![e])?;
        rendered.as_str()
    } else {
        text
    };
    let parsed = windlass_bundle::yaml::parse_documents(key, text).map_err(|e| vec![e.into()])?;
    if let Some(dup) = parsed.duplicate_key {
        warnings.push(PayloadWarning {
            file: key.into(),
            message: format!("{}; the last value is used", dup.message),
        });
    }
    let file_name = FileName::parse(name);
    let mut errors = Vec::new();
    let mut manifests: Vec<Manifest> = Vec::new();
    for (document, body) in parsed.documents.into_iter().enumerate() {
        match manifest(key, document, dir, &file_name, body) {
            Ok(m) => {
                if let Some(first) = manifests.iter().find(|o| o.object.id() == m.object.id()) {
                    errors.push(PayloadError::DuplicateObject {
                        file: key.into(),
                        object: m.object.to_string(),
                        other: format!("{key} document {}", first.document),
                    });
                }
                manifests.push(m);
            }
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(manifests)
    } else {
        Err(errors)
    }
}

fn manifest(
    file: &str,
    document: usize,
    dir: PayloadDir,
    file_name: &FileName,
    body: serde_json::Value,
) -> Result<Manifest, PayloadError> {
    let bad = |message: String| PayloadError::Object {
        file: file.into(),
        document,
        message,
    };
    if !body.is_object() {
        return Err(bad(format!("is not an object: {body}")));
    }
    let text = |value: &serde_json::Value, field: &str| -> Result<String, PayloadError> {
        match value {
            serde_json::Value::String(s) if !s.is_empty() => Ok(s.clone()),
            serde_json::Value::Null => Err(bad(format!("{field} is missing"))),
            other => Err(bad(format!("{field} is not a non-empty string: {other}"))),
        }
    };
    let api_version = text(&body["apiVersion"], "apiVersion")?;
    let kind = text(&body["kind"], "kind")?;
    let name = text(&body["metadata"]["name"], "metadata.name")?;
    let namespace = match &body["metadata"]["namespace"] {
        serde_json::Value::Null => None,
        value => Some(text(value, "metadata.namespace")?),
    };
    let object = ObjectRef {
        api_version,
        kind,
        namespace,
        name,
    };
    let mut annotations = BTreeMap::new();
    match &body["metadata"]["annotations"] {
        serde_json::Value::Null => {}
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                let value = value.as_str().ok_or_else(|| {
                    bad(format!(
                        "{object}: metadata.annotations.{key} is not a string ({value}); quote it"
                    ))
                })?;
                annotations.insert(key.clone(), value.to_string());
            }
        }
        other => return Err(bad(format!("metadata.annotations is not a map: {other}"))),
    }
    let annotation_error = |key: &str, value: &str, message: &str| PayloadError::Annotation {
        file: file.into(),
        object: object.to_string(),
        key: key.into(),
        value: value.into(),
        message: message.into(),
    };
    if let Some(value) = annotations.get(annotations::DELETE)
        && value != "true"
    {
        return Err(annotation_error(
            annotations::DELETE,
            value,
            "the only value is \"true\"",
        ));
    }
    if let Some(value) = annotations.get(annotations::IRREVERSIBLE)
        && value != "true"
        && value != "false"
    {
        return Err(annotation_error(
            annotations::IRREVERSIBLE,
            value,
            "must be \"true\" or \"false\"",
        ));
    }
    Ok(Manifest {
        file: file.into(),
        document,
        dir,
        file_name: file_name.clone(),
        object,
        annotations,
        body,
    })
}

/// The same object in two files is a duplicate when some cluster would get both: their profiles
/// overlap and so do their feature sets. Per-profile and per-feature-set variants of one object
/// (real payloads have them) are not duplicates.
fn duplicates(manifests: &[Manifest]) -> Vec<PayloadError> {
    let mut by_id: BTreeMap<_, Vec<&Manifest>> = BTreeMap::new();
    for m in manifests {
        by_id.entry(m.object.id()).or_default().push(m);
    }
    let mut errors = Vec::new();
    for group in by_id.values().filter(|g| g.len() > 1) {
        for (i, later) in group.iter().enumerate() {
            let clash = group[..i]
                .iter()
                .find(|earlier| earlier.file != later.file && overlap(earlier, later));
            if let Some(earlier) = clash {
                errors.push(PayloadError::DuplicateObject {
                    file: later.file.clone(),
                    object: later.object.to_string(),
                    other: earlier.file.clone(),
                });
            }
        }
    }
    errors
}

fn overlap(a: &Manifest, b: &Manifest) -> bool {
    let profiles = !a.profiles().is_disjoint(&b.profiles());
    let feature_sets = match (a.feature_sets(), b.feature_sets()) {
        (Some(x), Some(y)) => !x.is_disjoint(&y),
        _ => true,
    };
    profiles && feature_sets
}

/// Levels are ordered by file name, as the CVO orders them, so `0000_9_` would run after
/// `0000_10_`; a payload mixing widths is refused rather than run in a surprising order.
fn mixed_level_widths(manifests: &[Manifest]) -> Vec<PayloadError> {
    let mut errors = Vec::new();
    for dir in [PayloadDir::Updater, PayloadDir::Release] {
        let mut first: Option<(&str, &str)> = None;
        let mut reported = BTreeSet::new();
        for m in manifests.iter().filter(|m| m.dir == dir) {
            let Some(level) = m.file_name.run_level.as_deref() else {
                continue;
            };
            match first {
                None => first = Some((level, &m.file)),
                Some((other_level, other)) => {
                    if level.len() != other_level.len() && reported.insert(m.file.as_str()) {
                        errors.push(PayloadError::MixedLevelWidths {
                            file: m.file.clone(),
                            level: level.into(),
                            width: level.len(),
                            other: other.into(),
                            other_level: other_level.into(),
                        });
                    }
                }
            }
        }
    }
    errors
}

/// Every pod-template image must be pinned by digest and listed in `image-references`
/// (manifests that delete their object are exempt; the updater may also run the payload image
/// itself through `{{.ReleaseImage}}`).
fn unlisted_images(
    manifests: &[Manifest],
    refs: &ImageReferences,
    options: &LoadOptions,
) -> Vec<PayloadError> {
    let mut errors = Vec::new();
    for m in manifests {
        if m.action() == crate::manifest::Action::Delete {
            continue;
        }
        for c in m.images() {
            let is_release_image = m.dir == PayloadDir::Updater
                && (c.image == RELEASE_IMAGE_TEMPLATE
                    || options.release_image.as_deref() == Some(c.image.as_str()));
            if is_release_image {
                continue;
            }
            if !is_pinned_by_digest(&c.image) {
                errors.push(PayloadError::ContainerImageNotByDigest {
                    file: m.file.clone(),
                    object: m.object.to_string(),
                    container: c.container,
                    image: c.image,
                });
            } else if !refs.contains_image(&c.image) {
                errors.push(PayloadError::ContainerImageNotReferenced {
                    file: m.file.clone(),
                    object: m.object.to_string(),
                    container: c.container,
                    image: c.image,
                });
            }
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updater_templates_render_the_two_known_fields_only() {
        let options = LoadOptions {
            release_image: Some("r@sha256:1".into()),
            profile: "single-node-developer".into(),
        };
        assert_eq!(
            render_updater_templates(
                "f",
                "image: '{{.ReleaseImage}}' p: {{ .ClusterProfile }}",
                &options
            )
            .unwrap(),
            "image: 'r@sha256:1' p: single-node-developer"
        );
        assert_eq!(
            render_updater_templates("f", "image: '{{.ReleaseImage}}'", &LoadOptions::default())
                .unwrap(),
            "image: '{{.ReleaseImage}}'"
        );
        let error = render_updater_templates("f", "x: {{ .Images.dns }}", &options).unwrap_err();
        assert_eq!(
            error,
            PayloadError::Template {
                file: "f".into(),
                expression: "{{ .Images.dns }}".into()
            }
        );
        assert!(render_updater_templates("f", "x: {{ open", &options).is_err());
    }
}
