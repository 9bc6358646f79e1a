//! `windlass release new --component DIR`: operators' own `manifests/` folders added to a
//! payload as `oc adm release new` adds them, each folder's `image-references` naming the
//! images its manifests use; `--image NAME=REPOSITORY@sha256:...` pins a tag name, and a tag
//! given no pin is resolved to its digest in its registry. Every pull spec the folder names is
//! replaced by its pinned image, so the payload comes out pinned by digest.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use windlass_bundle::{FileTree, Limits};
use windlass_release::metadata::{ImageReference, ImageReferences, is_pinned_by_digest};
use windlass_release::substitute::{component_references, pin, substitute_text};

use super::bundle_registry::RegistryArgs;

/// The `--image NAME=REF` pins, by name; a malformed one names itself.
pub fn pins(images: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    images
        .iter()
        .map(|pair| match pair.split_once('=') {
            Some((name, image)) if !name.is_empty() && !image.is_empty() => {
                Ok((name.to_string(), image.to_string()))
            }
            _ => bail!("--image {pair:?}: expected NAME=REPOSITORY@sha256:<digest>"),
        })
        .collect()
}

/// Adds each component folder to `tree` under `release-manifests/`, its images pinned;
/// returns the pinned images of all of them, for the payload's `image-references`.
pub fn add_components(
    tree: &mut FileTree,
    components: &[PathBuf],
    pinned: &BTreeMap<String, String>,
    registry: &RegistryArgs,
) -> anyhow::Result<Vec<ImageReference>> {
    let mut all: Vec<ImageReference> = Vec::new();
    for dir in components {
        let shown = dir.display().to_string();
        let read = FileTree::read_dir(dir, Limits::default())
            .with_context(|| format!("reading component {shown}"))?;
        let references_file = format!("{shown}/image-references");
        let Some(bytes) = read.files.get("image-references") else {
            bail!(
                "{references_file}: missing: a component names the images its manifests use there"
            );
        };
        let wanted = component_references(&references_file, bytes)?;
        let mut given = pinned.clone();
        for reference in &wanted {
            if !given.contains_key(&reference.name) && !is_pinned_by_digest(&reference.image) {
                given.insert(
                    reference.name.clone(),
                    resolve(
                        &reference.image,
                        registry,
                        &references_file,
                        &reference.name,
                    )?,
                );
            }
        }
        let pinned_here = pin(&references_file, &wanted, &given)?;
        let pairs: Vec<(&str, &str)> = wanted
            .iter()
            .zip(&pinned_here)
            .map(|(from, to)| (from.image.as_str(), to.image.as_str()))
            .collect();
        for (name, bytes) in &read.files {
            if name == "image-references" || !is_manifest(name) {
                continue;
            }
            let target = format!("release-manifests/{}", file_name(name));
            if tree.files.contains_key(&target) {
                bail!(
                    "{shown}/{name}: {target} is already in the payload (from another component or --from-dir)"
                );
            }
            let text = std::str::from_utf8(bytes)
                .map_err(|_| anyhow::anyhow!("{shown}/{name}: not UTF-8 text"))?;
            let (text, _) = substitute_text(text, &pairs);
            tree.files.insert(target, text.into_bytes());
        }
        for reference in pinned_here {
            match all.iter().find(|r| r.name == reference.name) {
                Some(existing) if existing.image != reference.image => bail!(
                    "{references_file}: tag {} is pinned to {}, but another component pins it to {}",
                    reference.name,
                    reference.image,
                    existing.image
                ),
                Some(_) => {}
                None => all.push(reference),
            }
        }
    }
    Ok(all)
}

/// `refs` with the components' images added (a component's name wins over a generated one).
pub fn merged(mut refs: ImageReferences, components: Vec<ImageReference>) -> ImageReferences {
    refs.images.retain(|r| {
        !components
            .iter()
            .any(|c| c.name == r.name || c.image == r.image)
    });
    refs.images.extend(components);
    refs
}

fn is_manifest(name: &str) -> bool {
    !name.contains('/') && [".yaml", ".yml", ".json"].iter().any(|e| name.ends_with(e))
}

fn file_name(name: &str) -> &str {
    Path::new(name)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(name)
}

/// `image`'s digest in its registry, as `repository@sha256:...`.
fn resolve(image: &str, registry: &RegistryArgs, file: &str, name: &str) -> anyhow::Result<String> {
    let options = registry.options(image)?;
    let digest = super::release::runtime()?
        .block_on(windlass_oci::resolve_digest(image, &options))
        .with_context(|| {
            format!("{file}: tag {name}: resolving {image} to a digest (or pin it with --image {name}=REPOSITORY@sha256:...)")
        })?;
    let repository = match image.rsplit_once(':') {
        Some((repository, tag)) if !tag.contains('/') => repository,
        _ => image,
    };
    Ok(format!("{repository}@{digest}"))
}
