//! `release-manifests/release-metadata` (Cincinnati metadata) and
//! `release-manifests/image-references` (an ImageStream naming every image by digest).

use std::collections::BTreeMap;

use semver::Version;
use serde::{Deserialize, Serialize};

use crate::annotations::{CHANNELS_METADATA, URL_METADATA};
use crate::error::PayloadError;

pub const METADATA_FILE: &str = "release-manifests/release-metadata";
pub const IMAGE_REFERENCES_FILE: &str = "release-manifests/image-references";
pub const METADATA_KIND: &str = "cincinnati-metadata-v0";

/// What a release says about itself and its place in the update graph.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseMetadata {
    pub kind: String,
    pub version: Version,
    /// Versions that may update to this one.
    #[serde(default)]
    pub previous: Vec<Version>,
    /// Versions this one may update to.
    #[serde(default)]
    pub next: Vec<Version>,
    /// Opaque to the CVO; the graph builder reads string values (channels, url).
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

impl ReleaseMetadata {
    pub fn new(version: Version) -> ReleaseMetadata {
        ReleaseMetadata {
            kind: METADATA_KIND.into(),
            version,
            previous: Vec::new(),
            next: Vec::new(),
            metadata: BTreeMap::new(),
        }
    }

    /// Reads and checks the file: kind, semver versions, string metadata values, no self edges.
    pub fn parse(file: &str, bytes: &[u8]) -> Result<ReleaseMetadata, PayloadError> {
        let bad = |message: String| PayloadError::Metadata {
            file: file.into(),
            message,
        };
        let value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| bad(format!("not JSON: {e}")))?;
        let kind = value.get("kind").and_then(|k| k.as_str()).unwrap_or("");
        if kind != METADATA_KIND {
            return Err(bad(format!("kind is {kind:?}; expected {METADATA_KIND:?}")));
        }
        let version_text = match value.get("version") {
            Some(serde_json::Value::String(v)) if !v.is_empty() => v.clone(),
            _ => return Err(bad("version is missing".into())),
        };
        let version = Version::parse(&version_text)
            .map_err(|e| bad(format!("version {version_text:?} is not semver: {e}")))?;
        let versions = |field: &str| -> Result<Vec<Version>, PayloadError> {
            match value.get(field) {
                None | Some(serde_json::Value::Null) => Ok(Vec::new()),
                Some(serde_json::Value::Array(items)) => items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| {
                        let text = item
                            .as_str()
                            .ok_or_else(|| bad(format!("{field}[{i}] is not a string: {item}")))?;
                        Version::parse(text)
                            .map_err(|e| bad(format!("{field}[{i}] {text:?} is not semver: {e}")))
                    })
                    .collect(),
                Some(other) => Err(bad(format!("{field} is not a list: {other}"))),
            }
        };
        let previous = versions("previous")?;
        let next = versions("next")?;
        if previous.contains(&version) || next.contains(&version) {
            return Err(bad(format!(
                "version {version} lists itself in previous or next"
            )));
        }
        let mut metadata = BTreeMap::new();
        match value.get("metadata") {
            None | Some(serde_json::Value::Null) => {}
            Some(serde_json::Value::Object(map)) => {
                for (key, item) in map {
                    let text = item.as_str().ok_or_else(|| {
                        bad(format!(
                            "metadata.{key} is not a string ({item}); the graph builder reads string values only"
                        ))
                    })?;
                    metadata.insert(key.clone(), text.to_string());
                }
            }
            Some(other) => return Err(bad(format!("metadata is not an object: {other}"))),
        }
        Ok(ReleaseMetadata {
            kind: kind.into(),
            version,
            previous,
            next,
            metadata,
        })
    }

    /// The channels this release is in (`io.openshift.upgrades.graph.release.channels`).
    pub fn channels(&self) -> Vec<String> {
        self.metadata
            .get(CHANNELS_METADATA)
            .map(|list| {
                list.split(',')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn url(&self) -> Option<&str> {
        self.metadata.get(URL_METADATA).map(String::as_str)
    }

    pub fn to_json(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("metadata serialises");
        bytes.push(b'\n');
        bytes
    }
}

/// One entry of `image-references`: a name (the component image's tag) and the image by digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageReference {
    pub name: String,
    pub image: String,
}

/// `image-references`: the ImageStream listing every image of the release.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageReferences {
    /// `metadata.name`: the release version, which must match release-metadata's.
    pub version: String,
    pub images: Vec<ImageReference>,
}

/// `name@sha256:<64 lower-case hex>`: the only image form that pins content.
pub fn is_pinned_by_digest(image: &str) -> bool {
    let Some((name, digest)) = image.rsplit_once('@') else {
        return false;
    };
    let Some(hex) = digest.strip_prefix("sha256:") else {
        return false;
    };
    !name.is_empty()
        && hex.len() == 64
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl ImageReferences {
    pub fn parse(file: &str, bytes: &[u8]) -> Result<ImageReferences, PayloadError> {
        let bad = |message: String| PayloadError::ImageReferences {
            file: file.into(),
            message,
        };
        let text =
            std::str::from_utf8(bytes).map_err(|_| PayloadError::NotText { file: file.into() })?;
        let documents = windlass_bundle::yaml::parse_one(file, text)?.documents;
        let value = &documents[0];
        let kind = value["kind"].as_str().unwrap_or("");
        let api_version = value["apiVersion"].as_str().unwrap_or("");
        if kind != "ImageStream" || !api_version.starts_with("image.openshift.io/") {
            return Err(bad(format!(
                "is {api_version:?} {kind:?}; expected an image.openshift.io/v1 ImageStream"
            )));
        }
        let version = value["metadata"]["name"].as_str().unwrap_or("").to_string();
        if version.is_empty() {
            return Err(bad("metadata.name (the release version) is missing".into()));
        }
        let tags = match &value["spec"]["tags"] {
            serde_json::Value::Array(tags) => tags.as_slice(),
            serde_json::Value::Null => &[],
            other => return Err(bad(format!("spec.tags is not a list: {other}"))),
        };
        let mut images = Vec::new();
        for (i, tag) in tags.iter().enumerate() {
            let name = tag["name"].as_str().unwrap_or("").to_string();
            if name.is_empty() {
                return Err(bad(format!("spec.tags[{i}] has no name")));
            }
            if images.iter().any(|r: &ImageReference| r.name == name) {
                return Err(bad(format!("tag {name} is listed twice")));
            }
            let from_kind = tag["from"]["kind"].as_str().unwrap_or("");
            if from_kind != "DockerImage" {
                return Err(bad(format!(
                    "tag {name}: from.kind is {from_kind:?}; expected \"DockerImage\""
                )));
            }
            let image = tag["from"]["name"].as_str().unwrap_or("").to_string();
            if !is_pinned_by_digest(&image) {
                return Err(PayloadError::ReferenceNotByDigest {
                    file: file.into(),
                    tag: name,
                    image,
                });
            }
            images.push(ImageReference { name, image });
        }
        Ok(ImageReferences { version, images })
    }

    pub fn contains_image(&self, image: &str) -> bool {
        self.images.iter().any(|r| r.image == image)
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.images
            .iter()
            .find(|r| r.name == name)
            .map(|r| r.image.as_str())
    }

    /// The file content (the ImageStream `oc adm release new` writes), as JSON.
    pub fn to_file_text(&self) -> String {
        let tags: Vec<serde_json::Value> = self
            .images
            .iter()
            .map(|r| {
                serde_json::json!({
                    "name": r.name,
                    "from": { "kind": "DockerImage", "name": r.image },
                })
            })
            .collect();
        let doc = serde_json::json!({
            "kind": "ImageStream",
            "apiVersion": "image.openshift.io/v1",
            "metadata": { "name": self.version },
            "spec": { "tags": tags },
        });
        // JSON is YAML: the CVO reads either, and JSON keeps the file byte-for-byte stable.
        let mut text = serde_json::to_string_pretty(&doc).expect("a JSON value serialises");
        text.push('\n');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a";

    #[test]
    fn metadata_errors_name_the_field() {
        let cases: &[(&str, &str)] = &[
            ("{", "not JSON"),
            (r#"{"kind":"x","version":"1.0.0"}"#, "kind is \"x\""),
            (r#"{"kind":"cincinnati-metadata-v0"}"#, "version is missing"),
            (
                r#"{"kind":"cincinnati-metadata-v0","version":"4.1"}"#,
                "not semver",
            ),
            (
                r#"{"kind":"cincinnati-metadata-v0","version":"4.1.0","previous":["4.0"]}"#,
                "previous[0] \"4.0\" is not semver",
            ),
            (
                r#"{"kind":"cincinnati-metadata-v0","version":"4.1.0","next":"4.2.0"}"#,
                "next is not a list",
            ),
            (
                r#"{"kind":"cincinnati-metadata-v0","version":"4.1.0","previous":["4.1.0"]}"#,
                "lists itself",
            ),
            (
                r#"{"kind":"cincinnati-metadata-v0","version":"4.1.0","metadata":{"n":1}}"#,
                "metadata.n is not a string",
            ),
        ];
        for (text, expected) in cases {
            let error = ReleaseMetadata::parse(METADATA_FILE, text.as_bytes()).unwrap_err();
            let message = error.to_string();
            assert!(message.starts_with(METADATA_FILE), "{message}");
            assert!(message.contains(expected), "{text}: {message}");
        }
    }

    #[test]
    fn metadata_reads_versions_and_channels_and_writes_back() {
        let text = r#"{"kind":"cincinnati-metadata-v0","version":"4.2.0","previous":["4.1.0","4.1.1"],
            "metadata":{"io.openshift.upgrades.graph.release.channels":"stable-4.2, fast-4.2","url":"https://example.com/4.2.0"}}"#;
        let metadata = ReleaseMetadata::parse(METADATA_FILE, text.as_bytes()).unwrap();
        assert_eq!(metadata.version, Version::new(4, 2, 0));
        assert_eq!(metadata.previous.len(), 2);
        assert_eq!(metadata.channels(), vec!["stable-4.2", "fast-4.2"]);
        assert_eq!(metadata.url(), Some("https://example.com/4.2.0"));
        let back = ReleaseMetadata::parse(METADATA_FILE, &metadata.to_json()).unwrap();
        assert_eq!(back, metadata);
    }

    #[test]
    fn digests_are_recognised_strictly() {
        let table = [
            (format!("registry.k8s.io/pause@{DIGEST}"), true),
            (format!("registry.k8s.io/pause:3.10@{DIGEST}"), true),
            ("registry.k8s.io/pause:3.10".to_string(), false),
            (format!("@{DIGEST}"), false),
            ("registry.k8s.io/pause@sha256:abc".to_string(), false),
            (
                format!("registry.k8s.io/pause@{}", DIGEST.to_uppercase()),
                false,
            ),
            (
                format!("registry.k8s.io/pause@sha512:{}", &DIGEST[7..]),
                false,
            ),
        ];
        for (image, pinned) in table {
            assert_eq!(is_pinned_by_digest(&image), pinned, "{image}");
        }
    }

    #[test]
    fn image_references_round_trip_and_refuse_tags() {
        let refs = ImageReferences {
            version: "4.1.0".into(),
            images: vec![ImageReference {
                name: "dns".into(),
                image: format!("registry.k8s.io/pause@{DIGEST}"),
            }],
        };
        let text = refs.to_file_text();
        assert_eq!(
            ImageReferences::parse(IMAGE_REFERENCES_FILE, text.as_bytes()).unwrap(),
            refs
        );
        let by_tag = text.replace(&format!("@{DIGEST}"), ":3.10");
        let error = ImageReferences::parse(IMAGE_REFERENCES_FILE, by_tag.as_bytes()).unwrap_err();
        assert!(
            matches!(&error, PayloadError::ReferenceNotByDigest { tag, .. } if tag == "dns"),
            "{error}"
        );
        let wrong_kind = text.replace("ImageStream", "ConfigMap");
        let error =
            ImageReferences::parse(IMAGE_REFERENCES_FILE, wrong_kind.as_bytes()).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("expected an image.openshift.io/v1 ImageStream")
        );
        let twice = text.replace(
            "\"tags\": [",
            &format!("\"tags\": [{{\"name\": \"dns\", \"from\": {{\"kind\": \"DockerImage\", \"name\": \"x@{DIGEST}\"}}}},"),
        );
        let error = ImageReferences::parse(IMAGE_REFERENCES_FILE, twice.as_bytes()).unwrap_err();
        assert!(
            error.to_string().contains("tag dns is listed twice"),
            "{error}"
        );
    }
}
