//! Image substitution, as `oc adm release new` does it for the operators a release is made
//! of: each operator's `manifests/` folder carries an `image-references` ImageStream whose tags
//! name the images its manifests use (`from.name`, usually a tag such as
//! `quay.io/openshift/origin-cluster-dns-operator:latest`); the release pins each tag name to an
//! image by digest, and every occurrence of the named pull spec in the manifests is replaced by
//! the pinned one. The result is a payload whose every image is pinned.

use std::collections::BTreeMap;

use crate::metadata::{ImageReference, is_pinned_by_digest};

/// Why a component's images cannot be pinned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SubstituteError {
    #[error("{file}: {message}")]
    References { file: String, message: String },
    #[error(
        "{file}: tag {name} names {image}, which is not pinned by digest, and no pinned image was given for {name} (--image {name}=REPOSITORY@sha256:...)"
    )]
    Unpinned {
        file: String,
        name: String,
        image: String,
    },
    #[error("--image {name}={image}: not pinned by digest (name@sha256:<64 hex digits>)")]
    MappingNotPinned { name: String, image: String },
}

/// A component's `image-references`: each tag's name and the pull spec its manifests use (a tag
/// or a digest; nothing is pinned yet).
pub fn component_references(
    file: &str,
    bytes: &[u8],
) -> Result<Vec<ImageReference>, SubstituteError> {
    let bad = |message: String| SubstituteError::References {
        file: file.to_string(),
        message,
    };
    let text = std::str::from_utf8(bytes).map_err(|_| bad("not UTF-8 text".into()))?;
    let documents = windlass_bundle::yaml::parse_one(file, text)
        .map_err(|e| bad(e.to_string()))?
        .documents;
    let value = documents.first().ok_or_else(|| bad("empty".into()))?;
    if value["kind"] != "ImageStream" {
        return Err(bad(format!(
            "kind is {}; expected ImageStream",
            value["kind"]
        )));
    }
    let mut references = Vec::new();
    for (i, tag) in value["spec"]["tags"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let name = tag["name"].as_str().unwrap_or_default();
        let image = tag["from"]["name"].as_str().unwrap_or_default();
        if name.is_empty() || image.is_empty() {
            return Err(bad(format!("spec.tags[{i}] needs a name and from.name")));
        }
        if tag["from"]["kind"] != "DockerImage" {
            return Err(bad(format!("tag {name}: from.kind must be DockerImage")));
        }
        references.push(ImageReference {
            name: name.to_string(),
            image: image.to_string(),
        });
    }
    Ok(references)
}

/// The pinned image of each of `wanted`'s tags: the one `pinned` gives by name, else the pull
/// spec itself when it is pinned already.
pub fn pin(
    file: &str,
    wanted: &[ImageReference],
    pinned: &BTreeMap<String, String>,
) -> Result<Vec<ImageReference>, SubstituteError> {
    for (name, image) in pinned {
        if !is_pinned_by_digest(image) {
            return Err(SubstituteError::MappingNotPinned {
                name: name.clone(),
                image: image.clone(),
            });
        }
    }
    wanted
        .iter()
        .map(|reference| match pinned.get(&reference.name) {
            Some(image) => Ok(ImageReference {
                name: reference.name.clone(),
                image: image.clone(),
            }),
            None if is_pinned_by_digest(&reference.image) => Ok(reference.clone()),
            None => Err(SubstituteError::Unpinned {
                file: file.to_string(),
                name: reference.name.clone(),
                image: reference.image.clone(),
            }),
        })
        .collect()
}

/// Characters that may continue an image reference: a match followed or preceded by one of
/// them is part of a longer reference and is left alone.
fn continues_reference(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | ':' | '@')
}

/// `text` with every whole occurrence of each `from` pull spec replaced by its pinned image;
/// how many were replaced.
pub fn substitute_text(text: &str, pairs: &[(&str, &str)]) -> (String, usize) {
    let mut out = text.to_string();
    let mut replaced = 0;
    for (from, to) in pairs {
        if from == to || from.is_empty() {
            continue;
        }
        let mut result = String::with_capacity(out.len());
        let mut rest = out.as_str();
        while let Some(at) = rest.find(from) {
            let before = if at > 0 {
                rest[..at].chars().last()
            } else {
                result.chars().last()
            };
            let after = rest[at + from.len()..].chars().next();
            result.push_str(&rest[..at]);
            if before.is_some_and(continues_reference) || after.is_some_and(continues_reference) {
                result.push_str(from);
            } else {
                result.push_str(to);
                replaced += 1;
            }
            rest = &rest[at + from.len()..];
        }
        result.push_str(rest);
        out = result;
    }
    (out, replaced)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAUSE: &str = "registry.k8s.io/pause@sha256:7031c1b283388d2c2e09b57badb803c05ebed362dc88d84b480cc47f72a21097";

    #[test]
    fn tags_are_pinned_by_name_and_whole_references_replaced() {
        let refs = component_references(
            "dns/image-references",
            b"kind: ImageStream\napiVersion: image.openshift.io/v1\nspec:\n  tags:\n  - name: cluster-dns-operator\n    from:\n      kind: DockerImage\n      name: quay.io/openshift/origin-cluster-dns-operator:latest\n",
        )
        .unwrap();
        let pinned = pin(
            "dns/image-references",
            &refs,
            &BTreeMap::from([("cluster-dns-operator".to_string(), PAUSE.to_string())]),
        )
        .unwrap();
        assert_eq!(pinned[0].image, PAUSE);
        let from = refs[0].image.as_str();
        let text = format!(
            "image: {from}\n        - name: IMAGE\n          value: \"{from}\"\n        other: {from}-debug\n"
        );
        let (out, n) = substitute_text(&text, &[(from, PAUSE)]);
        assert_eq!(n, 2);
        assert!(out.contains(&format!("image: {PAUSE}\n")));
        assert!(out.contains(&format!("value: \"{PAUSE}\"")));
        assert!(
            out.contains(&format!("{from}-debug")),
            "a longer reference is left alone"
        );
    }

    #[test]
    fn an_unpinned_tag_without_a_mapping_is_refused_naming_it() {
        let refs = vec![ImageReference {
            name: "ingress".into(),
            image: "quay.io/o/ingress:v4".into(),
        }];
        let error = pin("ingress/image-references", &refs, &BTreeMap::new()).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("tag ingress names quay.io/o/ingress:v4"),
            "{error}"
        );
        let bad = pin(
            "x",
            &refs,
            &BTreeMap::from([("ingress".to_string(), "quay.io/o/ingress:v5".to_string())]),
        )
        .unwrap_err();
        assert!(matches!(bad, SubstituteError::MappingNotPinned { .. }));
        let wrong = component_references("x", b"kind: ConfigMap\n").unwrap_err();
        assert!(
            wrong.to_string().contains("expected ImageStream"),
            "{wrong}"
        );
    }
}
