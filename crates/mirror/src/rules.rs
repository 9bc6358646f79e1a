//! Mirror rules: a source prefix and the mirrors that serve the same images, as OpenShift's
//! image digest mirror sets and Crossplane's image rewriting have them.
//!
//! The most specific source covering a reference wins (`quay.io/acme/db` over `quay.io/acme`
//! over `quay.io`); rules of several sets with the same source pool their mirrors, ordered by
//! set name. Pulls try each mirror in order, then the source unless a rule says never to
//! contact it; what runs in a Deployment is rewritten to the first mirror, since a kubelet
//! cannot be told to try several.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::reference::{ImageReference, ReferenceError, RepositoryPrefix};

/// One rule, as a mirror set lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MirrorRule {
    /// The mirror set it comes from (its name), for records and messages.
    pub set: String,
    /// Where in that set's list it is (`spec.mirrors[index]`), for messages.
    pub index: usize,
    pub source: String,
    pub mirrors: Vec<String>,
    /// Pulls never fall back to the source (an air-gapped site cannot reach it).
    pub never_contact_source: bool,
}

/// Why a rule cannot be used; names the set and the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("ImageMirrorSet {set}: spec.mirrors[{index}].{field}: {error}")]
pub struct RuleError {
    pub set: String,
    pub index: usize,
    /// `source` or `mirrors[N]`.
    pub field: String,
    pub error: String,
}

/// A checked rule.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Checked {
    set: String,
    source: RepositoryPrefix,
    mirrors: Vec<RepositoryPrefix>,
    never_contact_source: bool,
}

/// The rules in force: every set's rules, checked and indexed by source.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MirrorRules {
    /// By source prefix; each source's rules in set-name order.
    by_source: BTreeMap<RepositoryPrefix, Vec<Checked>>,
}

/// One place an image may be pulled from, in the order to try them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub reference: String,
    /// The mirror set that sent the pull here; `None` for the source itself.
    pub mirror_set: Option<String>,
}

/// What a rule did to one image reference.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rewrite {
    /// The image as the bundle names it.
    pub image: String,
    /// Where it is taken from instead.
    pub mirror: String,
    /// The mirror set whose rule matched.
    pub mirror_set: String,
}

impl MirrorRules {
    /// Checks and indexes `rules`; the rules that fail their checks are left out and returned
    /// with what is wrong, so one bad rule never disables the others.
    pub fn new(rules: impl IntoIterator<Item = MirrorRule>) -> (MirrorRules, Vec<RuleError>) {
        let mut problems = Vec::new();
        let mut by_source: BTreeMap<RepositoryPrefix, Vec<Checked>> = BTreeMap::new();
        for rule in rules {
            match check(&rule) {
                Ok(checked) => by_source
                    .entry(checked.source.clone())
                    .or_default()
                    .push(checked),
                Err(error) => problems.push(error),
            }
        }
        for rules in by_source.values_mut() {
            rules.sort_by(|a, b| a.set.cmp(&b.set));
        }
        (MirrorRules { by_source }, problems)
    }

    pub fn is_empty(&self) -> bool {
        self.by_source.is_empty()
    }

    /// The most specific source covering `name` (`domain/path`), with its rules.
    fn lookup(&self, name: &str) -> Option<(&RepositoryPrefix, &[Checked])> {
        self.by_source
            .iter()
            .filter(|(source, _)| source.covers(name))
            .max_by_key(|(source, _)| source.as_str().len())
            .map(|(source, rules)| (source, rules.as_slice()))
    }

    /// Where to pull `reference` from, in order: each mirror of the matching rules, then the
    /// reference itself unless a matching rule never contacts the source. A reference no rule
    /// covers (or that does not parse) is pulled from where it says.
    pub fn candidates(&self, reference: &str) -> Vec<Candidate> {
        let source = Candidate {
            reference: reference.to_string(),
            mirror_set: None,
        };
        let Ok(parsed) = ImageReference::parse(reference) else {
            return vec![source];
        };
        let name = parsed.name();
        let Some((prefix, rules)) = self.lookup(&name) else {
            return vec![source];
        };
        let mut out: Vec<Candidate> = Vec::new();
        for rule in rules {
            for mirror in &rule.mirrors {
                let Some(mirrored) = prefix.replace_in(&name, mirror) else {
                    continue;
                };
                let reference = format!("{mirrored}{}", parsed.suffix());
                if !out.iter().any(|c| c.reference == reference) {
                    out.push(Candidate {
                        reference,
                        mirror_set: Some(rule.set.clone()),
                    });
                }
            }
        }
        if !rules.iter().any(|r| r.never_contact_source) {
            out.push(source);
        }
        out
    }

    /// What `reference` becomes where only one name can be given (a Deployment's image): the
    /// first mirror of the matching rules. `None` when no rule covers it.
    pub fn rewrite(&self, reference: &str) -> Option<Rewrite> {
        let first = self.candidates(reference).into_iter().next()?;
        Some(Rewrite {
            image: reference.to_string(),
            mirror: first.reference,
            mirror_set: first.mirror_set?,
        })
    }

    /// [`MirrorRules::rewrite`] of each image, sorted, each image once.
    pub fn rewrite_all<'a>(&self, images: impl IntoIterator<Item = &'a str>) -> Vec<Rewrite> {
        let mut out: Vec<Rewrite> = images
            .into_iter()
            .filter_map(|image| self.rewrite(image))
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

fn check(rule: &MirrorRule) -> Result<Checked, RuleError> {
    let error = |field: String, error: String| RuleError {
        set: rule.set.clone(),
        index: rule.index,
        field,
        error,
    };
    let source = RepositoryPrefix::parse(&rule.source)
        .map_err(|e: ReferenceError| error("source".into(), e.to_string()))?;
    if rule.mirrors.is_empty() {
        return Err(error(
            "mirrors".into(),
            "lists no mirror: a rule needs at least one".into(),
        ));
    }
    let mut mirrors = Vec::new();
    for (i, mirror) in rule.mirrors.iter().enumerate() {
        let parsed = RepositoryPrefix::parse(mirror)
            .map_err(|e| error(format!("mirrors[{i}]"), e.to_string()))?;
        if parsed == source {
            return Err(error(
                format!("mirrors[{i}]"),
                format!("`{mirror}` is the source itself"),
            ));
        }
        mirrors.push(parsed);
    }
    Ok(Checked {
        set: rule.set.clone(),
        source,
        mirrors,
        never_contact_source: rule.never_contact_source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn rule(set: &str, source: &str, mirrors: &[&str]) -> MirrorRule {
        MirrorRule {
            set: set.into(),
            index: 0,
            source: source.into(),
            mirrors: mirrors.iter().map(|m| m.to_string()).collect(),
            never_contact_source: false,
        }
    }

    fn rules(list: Vec<MirrorRule>) -> MirrorRules {
        let (rules, problems) = MirrorRules::new(list);
        assert_eq!(problems, []);
        rules
    }

    #[test]
    fn the_most_specific_source_wins_and_keeps_tags_and_digests() {
        let rules = rules(vec![
            rule("site", "quay.io", &["mirror.site/quay"]),
            rule("site", "quay.io/acme", &["mirror.site/acme"]),
            rule("site", "docker.io/library", &["mirror.site/hub"]),
        ]);
        let cases = [
            (
                format!("quay.io/acme/db@{DIGEST}"),
                Some(format!("mirror.site/acme/db@{DIGEST}")),
            ),
            (
                "quay.io/acme:1".to_string(),
                Some("mirror.site/acme:1".to_string()),
            ),
            (
                "quay.io/acmecorp/db:1".to_string(),
                Some("mirror.site/quay/acmecorp/db:1".to_string()),
            ),
            (
                "nginx:1.27".to_string(),
                Some("mirror.site/hub/nginx:1.27".to_string()),
            ),
            ("ghcr.io/acme/db:1".to_string(), None),
            ("Not A Reference".to_string(), None),
        ];
        for (image, expected) in cases {
            assert_eq!(rules.rewrite(&image).map(|r| r.mirror), expected, "{image}");
        }
    }

    #[test]
    fn pulls_try_every_mirror_then_the_source_unless_told_not_to() {
        let mut never = rule("b-site", "quay.io/acme", &["m2.site/acme"]);
        never.never_contact_source = true;
        let rules = rules(vec![
            rule("a-site", "quay.io/acme", &["m1.site/acme"]),
            never,
        ]);
        let image = format!("quay.io/acme/db@{DIGEST}");
        let candidates = rules.candidates(&image);
        let references: Vec<&str> = candidates.iter().map(|c| c.reference.as_str()).collect();
        assert_eq!(
            references,
            [
                format!("m1.site/acme/db@{DIGEST}"),
                format!("m2.site/acme/db@{DIGEST}")
            ]
        );
        assert_eq!(candidates[1].mirror_set.as_deref(), Some("b-site"));
        let mut allowed = rules.clone();
        for checked in allowed.by_source.values_mut().flatten() {
            checked.never_contact_source = false;
        }
        assert_eq!(allowed.candidates(&image).last().unwrap().reference, image);
        // No rule: the reference as given, and only that.
        assert_eq!(
            rules.candidates("ghcr.io/x/y:1"),
            [Candidate {
                reference: "ghcr.io/x/y:1".into(),
                mirror_set: None
            }]
        );
    }

    #[test]
    fn bad_rules_are_left_out_naming_the_set_and_field() {
        let (rules, problems) = MirrorRules::new(vec![
            rule("a", "quay.io/acme:v1", &["m.site/acme"]),
            MirrorRule {
                index: 3,
                ..rule("b", "quay.io/acme", &["m.site/acme", "nope"])
            },
            rule("c", "quay.io/acme", &[]),
            rule("d", "quay.io/acme", &["quay.io/acme"]),
            rule("e", "ghcr.io", &["m.site/ghcr"]),
        ]);
        let messages: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(messages.len(), 4, "{messages:#?}");
        assert!(messages[0].starts_with("ImageMirrorSet a: spec.mirrors[0].source: "));
        assert!(messages[1].starts_with("ImageMirrorSet b: spec.mirrors[3].mirrors[1]: "));
        assert!(messages[2].contains("spec.mirrors[0].mirrors: lists no mirror"));
        assert!(messages[3].contains("is the source itself"));
        assert!(rules.rewrite("ghcr.io/x/y:1").is_some());
        assert!(rules.rewrite("quay.io/acme/db:1").is_none());
    }

    #[test]
    fn rewrite_all_lists_each_image_once_sorted() {
        let rules = rules(vec![rule("site", "quay.io", &["m.site"])]);
        let rewrites =
            rules.rewrite_all(["quay.io/b:1", "quay.io/a:1", "quay.io/b:1", "ghcr.io/c:1"]);
        let images: Vec<&str> = rewrites.iter().map(|r| r.image.as_str()).collect();
        assert_eq!(images, ["quay.io/a:1", "quay.io/b:1"]);
        assert_eq!(rewrites[0].mirror_set, "site");
    }

    proptest::proptest! {
        /// A rewritten reference is the mirror prefix, the rest of the name, and the same tag
        /// and digest; rewriting it again with the reverse rule gives the original back.
        #[test]
        fn rewriting_moves_only_the_prefix(
            path in proptest::collection::vec("[a-z0-9]{1,8}", 1..4),
            tag in proptest::option::of("[a-z0-9][a-z0-9._-]{0,10}"),
            pinned in proptest::bool::ANY,
        ) {
            let mut image = format!("quay.io/{}", path.join("/"));
            if let Some(tag) = &tag {
                image.push(':');
                image.push_str(tag);
            }
            if pinned {
                image.push('@');
                image.push_str(DIGEST);
            }
            let forward = rules(vec![rule("site", "quay.io", &["127.0.0.1:5000/mirror"])]);
            let rewritten = forward.rewrite(&image).unwrap().mirror;
            let parsed = ImageReference::parse(&rewritten).unwrap();
            proptest::prop_assert_eq!(parsed.domain.as_str(), "127.0.0.1:5000");
            proptest::prop_assert_eq!(parsed.path, format!("mirror/{}", path.join("/")));
            proptest::prop_assert_eq!(parsed.tag, tag);
            proptest::prop_assert_eq!(parsed.digest.is_some(), pinned);
            let back = rules(vec![rule("back", "127.0.0.1:5000/mirror", &["quay.io"])]);
            proptest::prop_assert_eq!(back.rewrite(&rewritten).unwrap().mirror, image);
        }
    }
}
