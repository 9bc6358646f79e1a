//! ImageMirrorSet: where a site's registries serve copies of the images bundles name
//! (cluster-scoped, written by cluster admins).
//!
//! Each rule rewrites image references by prefix, as OpenShift's ImageDigestMirrorSet and
//! Crossplane's image rewriting do: `source: quay.io/acme` with `mirrors: [registry.site/acme]`
//! sends `quay.io/acme/db@sha256:...` to `registry.site/acme/db@sha256:...`. windlass uses
//! the rules when it pulls bundle and catalog images (each mirror in turn, then the source
//! unless `mirrorSourcePolicy: NeverContactSource`) and when it installs an operator's
//! Deployments (the first mirror; the rewrite is recorded on the Blueprint's revision).
//! Credentials for a mirror come from the pull Secret of the Catalog being read, by the
//! mirror's host, like any other registry of that Catalog.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Most rules one set holds, and mirrors one rule lists: bounds the API server's checks (their
/// estimated cost is counted once per possible item).
const MAX_RULES: u64 = 64;
const MAX_MIRRORS: u64 = 8;
/// Longest repository name a registry accepts.
const MAX_PREFIX: u64 = 255;

/// A registry host (with a `.` or a port, or `localhost`, or a bracketed IPv6 address),
/// optionally followed by a repository path of lowercase components; no tag or digest. The
/// same grammar as `windlass_mirror::RepositoryPrefix`, for the API server to check.
pub const PREFIX_PATTERN: &str = r"^(localhost(:[0-9]{1,5})?|\[[0-9A-Fa-f:]+\](:[0-9]{1,5})?|[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+(:[0-9]{1,5})?|[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?:[0-9]{1,5})(/[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*)*$";

/// What a prefix that does not match [`PREFIX_PATTERN`] is told.
const PREFIX_MESSAGE: &str = "must be a registry host, optionally followed by a repository path, with no tag or digest (quay.io, quay.io/acme, registry.site:5000/mirror)";

/// Where the images of a registry or repository are also served. Cluster admins write these;
/// windlass pulls bundles and catalogs from the mirrors and runs operators' images from them.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "windlass.dev",
    version = "v1alpha1",
    kind = "ImageMirrorSet",
    shortname = "wims",
    category = "windlass",
    doc = "Where a site's registries serve copies of the images bundles name: image references are rewritten by prefix when windlass pulls bundles and catalogs and when it installs Deployments (cluster admins write these).",
    printcolumn(
        name = "Sources",
        type_ = "string",
        json_path = ".spec.mirrors[*].source"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ImageMirrorSetSpec {
    /// Each source prefix and the mirrors that serve its images. The most specific source
    /// covering an image wins; several sets naming one source pool their mirrors, ordered by
    /// set name.
    #[schemars(schema_with = "rules_schema")]
    pub mirrors: Vec<ImageMirror>,
}

/// One source and its mirrors.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageMirror {
    /// A registry (`quay.io`) or repository prefix (`quay.io/acme`); it covers itself and
    /// every repository below it.
    pub source: String,
    /// Prefixes that replace `source`, tried in order when pulling; Deployments run from the
    /// first.
    pub mirrors: Vec<String>,
    #[serde(default)]
    pub mirror_source_policy: MirrorSourcePolicy,
}

/// Whether a pull may fall back to the source when no mirror has the image.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum MirrorSourcePolicy {
    /// Try the mirrors, then the source.
    #[default]
    AllowContactingSource,
    /// Only the mirrors (an air-gapped site cannot reach the source).
    NeverContactSource,
}

/// What a mirror rule did to one image, as a Blueprint revision and its
/// ClusterServiceVersion record it.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct ImageRewrite {
    /// The image as the bundle names it.
    pub image: String,
    /// Where windlass took it from, or what the Deployment runs, instead.
    pub mirror: String,
    /// The ImageMirrorSet whose rule matched.
    pub mirror_set: String,
}

impl From<windlass_mirror::Rewrite> for ImageRewrite {
    fn from(rewrite: windlass_mirror::Rewrite) -> Self {
        ImageRewrite {
            image: rewrite.image,
            mirror: rewrite.mirror,
            mirror_set: rewrite.mirror_set,
        }
    }
}

impl From<ImageRewrite> for windlass_mirror::Rewrite {
    fn from(rewrite: ImageRewrite) -> Self {
        windlass_mirror::Rewrite {
            image: rewrite.image,
            mirror: rewrite.mirror,
            mirror_set: rewrite.mirror_set,
        }
    }
}

impl ImageMirrorSet {
    /// This set's rules, for [`windlass_mirror::MirrorRules::new`].
    pub fn rules(&self) -> Vec<windlass_mirror::MirrorRule> {
        let set = self.metadata.name.clone().unwrap_or_default();
        self.spec
            .mirrors
            .iter()
            .enumerate()
            .map(|(index, rule)| windlass_mirror::MirrorRule {
                set: set.clone(),
                index,
                source: rule.source.clone(),
                mirrors: rule.mirrors.clone(),
                never_contact_source: rule.mirror_source_policy
                    == MirrorSourcePolicy::NeverContactSource,
            })
            .collect()
    }
}

/// The rules of every set, checked; the problems of rules left out.
pub fn mirror_rules<'a>(
    sets: impl IntoIterator<Item = &'a ImageMirrorSet>,
) -> (
    windlass_mirror::MirrorRules,
    Vec<windlass_mirror::RuleError>,
) {
    windlass_mirror::MirrorRules::new(sets.into_iter().flat_map(ImageMirrorSet::rules))
}

/// `spec.mirrors`: bounded lists of prefixes, each checked by the API server with a message
/// naming the field, so a bad rule is refused when it is written rather than ignored later.
fn rules_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let prefix = serde_json::json!({
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_PREFIX,
        "x-kubernetes-validations": [{
            "rule": format!("self.matches('{}')", PREFIX_PATTERN.replace('\\', "\\\\")),
            "message": PREFIX_MESSAGE,
        }],
    });
    schemars::json_schema!({
        "type": "array",
        "minItems": 1,
        "maxItems": MAX_RULES,
        "items": {
            "type": "object",
            "required": ["source", "mirrors"],
            "properties": {
                "source": {
                    "description": "A registry (quay.io) or repository prefix (quay.io/acme); it covers itself and every repository below it.",
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_PREFIX,
                    "x-kubernetes-validations": prefix["x-kubernetes-validations"],
                },
                "mirrors": {
                    "description": "Prefixes that replace source, tried in order when pulling; Deployments run from the first.",
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_MIRRORS,
                    "items": prefix,
                },
                "mirrorSourcePolicy": {
                    "description": "AllowContactingSource (default): try the mirrors, then the source. NeverContactSource: only the mirrors.",
                    "type": "string",
                    "enum": ["AllowContactingSource", "NeverContactSource"],
                    "default": "AllowContactingSource",
                },
            },
            "x-kubernetes-validations": [{
                "rule": "!self.mirrors.exists(m, m == self.source)",
                "message": "a mirror cannot be the source itself",
                "fieldPath": ".mirrors",
            }],
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The API server's pattern and windlass's own parser agree on what a prefix is.
    #[test]
    fn the_schema_pattern_and_the_parser_agree() {
        let pattern = regex::Regex::new(PREFIX_PATTERN).unwrap();
        let cases = [
            "quay.io",
            "quay.io/acme",
            "quay.io/acme/db-operator",
            "registry.site:5000/mirror",
            "127.0.0.1:5000/a/b_c/d__e/f.g",
            "localhost",
            "localhost:5000/x",
            "[::1]:5000/x",
            "registry:5000/x",
            "nginx",
            "acme/db",
            "quay.io/acme:v1",
            "quay.io/acme@sha256:0123",
            "quay.io/",
            "quay.io/Acme",
            "quay.io//acme",
            "-bad.io/x",
            "quay.io/acme/-x",
            "",
        ];
        for case in cases {
            assert_eq!(
                pattern.is_match(case),
                windlass_mirror::RepositoryPrefix::parse(case).is_ok(),
                "{case:?}"
            );
        }
    }

    #[test]
    fn a_set_gives_its_rules_with_its_name_and_positions() {
        let mut set = ImageMirrorSet::new(
            "site",
            ImageMirrorSetSpec {
                mirrors: vec![
                    ImageMirror {
                        source: "quay.io/acme".into(),
                        mirrors: vec!["registry.site/acme".into()],
                        mirror_source_policy: MirrorSourcePolicy::NeverContactSource,
                    },
                    ImageMirror {
                        source: "quay.io/acme:v1".into(),
                        mirrors: vec!["registry.site/acme".into()],
                        ..Default::default()
                    },
                ],
            },
        );
        set.metadata.name = Some("site".into());
        let (rules, problems) = mirror_rules([&set]);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0]
                .to_string()
                .starts_with("ImageMirrorSet site: spec.mirrors[1].source: ")
        );
        let rewrite = rules.rewrite("quay.io/acme/db:1").unwrap();
        assert_eq!(rewrite.mirror, "registry.site/acme/db:1");
        assert_eq!(rewrite.mirror_set, "site");
        assert_eq!(
            rules.candidates("quay.io/acme/db:1").len(),
            1,
            "never the source"
        );
    }
}
