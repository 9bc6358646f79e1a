//! Trust policies: which keys must have signed which artifacts.
//!
//! A policy names keys (material is looked up by name, so a controller can read it from a
//! Secret and the CLI from a file) and has rules. A rule applies to some artifact classes and
//! repositories (globs on `registry/path`, no tag or digest) and says what it needs: every key
//! it lists (the default, as the CVO does for release payloads), any one of them, or at least
//! N. Every rule that applies must be satisfied. `unsigned: Report` lets an artifact with no
//! signature at all through, reported as unverified; a signature that is present but invalid
//! is always refused.
//!
//! The types serialise in camelCase with PascalCase enum values and carry JSON schemas, so
//! they can be embedded in a Kubernetes custom resource as they are.
//!
//! ```yaml
//! keys:
//!   - name: release-2026
//!     notAfter: "2027-01-31T00:00:00Z"
//!   - name: release-2027
//!     notBefore: "2026-12-01T00:00:00Z"
//!   - name: catalog-team
//! rules:
//!   - name: releases
//!     classes: [Release]
//!     keys: [release-2026, release-2027]
//!     require: Any
//!   - name: our-catalogs
//!     classes: [Catalog, Bundle]
//!     images: ["quay.io/acme/**"]
//!     keys: [catalog-team, release-2026]
//!     require: AtLeast
//!     atLeast: 1
//!     unsigned: Report
//! ```

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What kind of artifact is being checked; rules select by class.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub enum ArtifactClass {
    /// A release payload image (ClusterVersion).
    Release,
    /// A catalog image (Catalog).
    Catalog,
    /// A bundle image.
    Bundle,
    /// An image a bundle's Deployments run.
    OperatorImage,
}

impl ArtifactClass {
    pub const ALL: [ArtifactClass; 4] = [
        ArtifactClass::Release,
        ArtifactClass::Catalog,
        ArtifactClass::Bundle,
        ArtifactClass::OperatorImage,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ArtifactClass::Release => "Release",
            ArtifactClass::Catalog => "Catalog",
            ArtifactClass::Bundle => "Bundle",
            ArtifactClass::OperatorImage => "OperatorImage",
        }
    }
}

impl std::fmt::Display for ArtifactClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How many of a rule's keys must have signed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Requirement {
    /// Every listed key.
    #[default]
    All,
    /// Any one listed key.
    Any,
    /// At least `atLeast` of the listed keys.
    AtLeast,
}

/// What to do with an artifact that carries no signature at all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum UnsignedAction {
    /// Refuse it.
    #[default]
    Refuse,
    /// Let it through, reported as unverified.
    Report,
}

/// A key the policy trusts, by name. `notBefore`/`notAfter` bound when signatures by it count
/// (checked against the time of verification: key-signed cosign signatures carry no trusted
/// signing time), so a rotated key can be retired on a date.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrustedKey {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_after: Option<DateTime<Utc>>,
}

/// One requirement, for the artifacts it selects.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrustRule {
    /// A name for messages; `rules[N]` when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The classes it applies to; every class when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<ArtifactClass>,
    /// Globs on the repository (`registry/path`): `*` stays within one path segment, `**`
    /// spans segments. Every repository when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
    /// The keys that count, by name (each must be in the policy's `keys`).
    pub keys: Vec<String>,
    #[serde(default)]
    pub require: Requirement,
    /// With `require: AtLeast`, how many of `keys` must have signed (1 to the number of keys).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_least: Option<u32>,
    #[serde(default)]
    pub unsigned: UnsignedAction,
}

/// A whole policy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrustPolicy {
    #[serde(default)]
    pub keys: Vec<TrustedKey>,
    #[serde(default)]
    pub rules: Vec<TrustRule>,
    /// Classes of artifact that must be signed wherever they come from: one that no rule
    /// covers is refused (not let through as uncovered), and `unsigned: Report` does not let an
    /// unsigned one through. Empty (the default): uncovered artifacts are used, unverified.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub require_signatures: Vec<ArtifactClass>,
}

/// A policy that cannot be used, with the field at fault.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("trust policy field `{field}`: {message}")]
pub struct PolicyError {
    pub field: String,
    pub message: String,
}

fn policy_error(field: impl Into<String>, message: impl Into<String>) -> PolicyError {
    PolicyError {
        field: field.into(),
        message: message.into(),
    }
}

fn compile_glob(pattern: &str) -> Result<glob::Pattern, glob::PatternError> {
    glob::Pattern::new(pattern)
}

const GLOB_OPTIONS: glob::MatchOptions = glob::MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: false,
};

impl TrustRule {
    /// The name used in messages.
    pub fn display_name(&self, index: usize) -> String {
        if self.name.is_empty() {
            format!("rules[{index}]")
        } else {
            self.name.clone()
        }
    }

    /// Whether the rule covers an artifact of `class` in `repository`.
    pub fn applies_to(&self, class: ArtifactClass, repository: &str) -> bool {
        let class_matches = self.classes.is_empty() || self.classes.contains(&class);
        let image_matches = self.images.is_empty()
            || self.images.iter().any(|pattern| {
                compile_glob(pattern).is_ok_and(|p| p.matches_with(repository, GLOB_OPTIONS))
            });
        class_matches && image_matches
    }

    /// How many valid key signatures the rule needs.
    pub fn needed(&self) -> usize {
        match self.require {
            Requirement::All => self.keys.len(),
            Requirement::Any => 1,
            Requirement::AtLeast => self.at_least.unwrap_or(1) as usize,
        }
    }
}

impl TrustPolicy {
    /// A policy for the CLI's `--key` flags: every given key must have signed, any artifact.
    pub fn require_all(key_names: &[String]) -> Self {
        TrustPolicy {
            keys: key_names
                .iter()
                .map(|name| TrustedKey {
                    name: name.clone(),
                    ..Default::default()
                })
                .collect(),
            rules: vec![TrustRule {
                name: "command line".into(),
                keys: key_names.to_vec(),
                ..Default::default()
            }],
            require_signatures: Vec::new(),
        }
    }

    /// Checks the policy is usable: unique key names, rules naming known keys, counts that can
    /// be met, globs that parse, windows that are not empty.
    pub fn validate(&self) -> Result<(), PolicyError> {
        let mut names = BTreeSet::new();
        for (i, key) in self.keys.iter().enumerate() {
            if key.name.trim().is_empty() {
                return Err(policy_error(format!("keys[{i}].name"), "must not be empty"));
            }
            if !names.insert(key.name.as_str()) {
                return Err(policy_error(
                    format!("keys[{i}].name"),
                    format!("key `{}` is listed twice", key.name),
                ));
            }
            if let (Some(from), Some(until)) = (key.not_before, key.not_after)
                && from >= until
            {
                return Err(policy_error(
                    format!("keys[{i}]"),
                    format!(
                        "notBefore ({}) is not before notAfter ({})",
                        from.to_rfc3339(),
                        until.to_rfc3339()
                    ),
                ));
            }
        }
        for (i, rule) in self.rules.iter().enumerate() {
            if rule.keys.is_empty() {
                return Err(policy_error(
                    format!("rules[{i}].keys"),
                    "must name at least one key",
                ));
            }
            let mut seen = BTreeSet::new();
            for (j, key) in rule.keys.iter().enumerate() {
                if !names.contains(key.as_str()) {
                    return Err(policy_error(
                        format!("rules[{i}].keys[{j}]"),
                        format!("`{key}` is not one of the policy's keys"),
                    ));
                }
                if !seen.insert(key.as_str()) {
                    return Err(policy_error(
                        format!("rules[{i}].keys[{j}]"),
                        format!("`{key}` is listed twice"),
                    ));
                }
            }
            match (rule.require, rule.at_least) {
                (Requirement::AtLeast, None) => {
                    return Err(policy_error(
                        format!("rules[{i}].atLeast"),
                        "is required with `require: AtLeast`",
                    ));
                }
                (Requirement::AtLeast, Some(n)) if n == 0 || n as usize > rule.keys.len() => {
                    return Err(policy_error(
                        format!("rules[{i}].atLeast"),
                        format!(
                            "must be between 1 and {} (the number of keys)",
                            rule.keys.len()
                        ),
                    ));
                }
                (Requirement::All | Requirement::Any, Some(_)) => {
                    return Err(policy_error(
                        format!("rules[{i}].atLeast"),
                        "only applies with `require: AtLeast`",
                    ));
                }
                _ => {}
            }
            for (j, pattern) in rule.images.iter().enumerate() {
                if let Err(e) = compile_glob(pattern) {
                    return Err(policy_error(
                        format!("rules[{i}].images[{j}]"),
                        format!("`{pattern}` is not a glob: {e}"),
                    ));
                }
            }
        }
        Ok(())
    }

    pub fn key(&self, name: &str) -> Option<&TrustedKey> {
        self.keys.iter().find(|k| k.name == name)
    }

    /// Whether artifacts of `class` must be signed even where no rule covers them.
    pub fn requires_signature(&self, class: ArtifactClass) -> bool {
        self.require_signatures.contains(&class)
    }

    /// The rules that cover an artifact, with their indexes.
    pub fn rules_for(&self, class: ArtifactClass, repository: &str) -> Vec<(usize, &TrustRule)> {
        self.rules
            .iter()
            .enumerate()
            .filter(|(_, rule)| rule.applies_to(class, repository))
            .collect()
    }

    /// A digest of the policy and of the key material it resolved to (`key name -> key
    /// fingerprint`): a cached verdict is valid only under the same fingerprint.
    pub fn fingerprint(&self, key_material: &BTreeMap<String, String>) -> String {
        let mut hasher = Sha256::new();
        hasher.update(serde_json::to_vec(self).expect("a policy serialises"));
        for (name, fingerprint) in key_material {
            hasher.update(name.as_bytes());
            hasher.update([0]);
            hasher.update(fingerprint.as_bytes());
            hasher.update([0]);
        }
        format!("sha256:{:x}", hasher.finalize())
    }
}

impl TrustedKey {
    /// Why the key does not count at `now`, if it does not.
    pub fn outside_window(&self, now: DateTime<Utc>) -> Option<String> {
        if let Some(from) = self.not_before
            && now < from
        {
            return Some(format!(
                "key {} is not valid before {}",
                self.name,
                from.to_rfc3339()
            ));
        }
        if let Some(until) = self.not_after
            && now >= until
        {
            return Some(format!(
                "key {} expired at {}",
                self.name,
                until.to_rfc3339()
            ));
        }
        None
    }
}

/// `A`, `A and B`, `A, B and C`.
pub fn list_names<S: AsRef<str>>(names: &[S]) -> String {
    match names {
        [] => String::new(),
        [one] => one.as_ref().to_string(),
        [init @ .., last] => format!(
            "{} and {}",
            init.iter()
                .map(|s| s.as_ref())
                .collect::<Vec<_>>()
                .join(", "),
            last.as_ref()
        ),
    }
}

/// Whether `rule` is met by the keys that signed (`signed_by`), and if not, what a person
/// needs to know: "needs keys A and B; found a valid signature by A only".
pub fn judge_rule(rule: &TrustRule, signed_by: &BTreeSet<String>) -> Result<(), String> {
    let found: Vec<&String> = rule
        .keys
        .iter()
        .filter(|k| signed_by.contains(*k))
        .collect();
    if found.len() >= rule.needed() {
        return Ok(());
    }
    let found_text = match found.as_slice() {
        [] => "found no valid signature by any of them".to_string(),
        [one] if rule.keys.len() > 1 => format!("found a valid signature by {one} only"),
        some => format!("found valid signatures by {} only", list_names(some)),
    };
    let needs = match rule.require {
        Requirement::All if rule.keys.len() == 1 => format!("needs key {}", rule.keys[0]),
        Requirement::All => format!("needs keys {}", list_names(&rule.keys)),
        Requirement::Any => format!(
            "needs a signature by one of {}",
            list_names(&rule.keys).replace(" and ", " or ")
        ),
        Requirement::AtLeast => format!(
            "needs signatures by at least {} of {}",
            rule.needed(),
            list_names(&rule.keys)
        ),
    };
    Err(format!("{needs}; {found_text}"))
}

/// Several named policies as one: every rule of each applies. Key and rule names are prefixed
/// with their policy's name (`release-keys/2026`), so two policies may use the same key names
/// without one's rules counting the other's keys.
pub fn merge(policies: &[(String, TrustPolicy)]) -> TrustPolicy {
    let mut merged = TrustPolicy::default();
    for (policy, spec) in policies {
        let scoped = |name: &str| format!("{policy}/{name}");
        merged.keys.extend(spec.keys.iter().map(|key| TrustedKey {
            name: scoped(&key.name),
            ..key.clone()
        }));
        merged.rules.extend(
            spec.rules
                .iter()
                .enumerate()
                .map(|(index, rule)| TrustRule {
                    name: scoped(&rule.display_name(index)),
                    keys: rule.keys.iter().map(|k| scoped(k)).collect(),
                    ..rule.clone()
                }),
        );
        for class in &spec.require_signatures {
            if !merged.require_signatures.contains(class) {
                merged.require_signatures.push(*class);
            }
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(keys: &[&str], require: Requirement, at_least: Option<u32>) -> TrustRule {
        TrustRule {
            keys: keys.iter().map(|k| k.to_string()).collect(),
            require,
            at_least,
            ..Default::default()
        }
    }

    fn signed(keys: &[&str]) -> BTreeSet<String> {
        keys.iter().map(|k| k.to_string()).collect()
    }

    /// Rule keys, requirement, `atLeast`, keys with a valid signature, expected judgement.
    type JudgementCase<'a> = (
        &'a [&'a str],
        Requirement,
        Option<u32>,
        &'a [&'a str],
        Result<(), &'a str>,
    );

    /// A change that breaks a valid policy, and the field the error must name.
    type BreakingChange = (Box<dyn Fn(&mut TrustPolicy)>, &'static str);

    #[test]
    fn requirements_count_as_documented() {
        use Requirement::*;
        let table: &[JudgementCase<'_>] = &[
            (&["A", "B"], All, None, &["A", "B"], Ok(())),
            (
                &["A", "B"],
                All,
                None,
                &["A"],
                Err("needs keys A and B; found a valid signature by A only"),
            ),
            (
                &["A", "B"],
                All,
                None,
                &[],
                Err("needs keys A and B; found no valid signature by any of them"),
            ),
            (
                &["A"],
                All,
                None,
                &[],
                Err("needs key A; found no valid signature by any of them"),
            ),
            (&["A", "B"], Any, None, &["B"], Ok(())),
            (
                &["A", "B"],
                Any,
                None,
                &["C"],
                Err("needs a signature by one of A or B; found no valid signature by any of them"),
            ),
            (&["A", "B", "C"], AtLeast, Some(2), &["A", "C"], Ok(())),
            (
                &["A", "B", "C"],
                AtLeast,
                Some(2),
                &["B"],
                Err(
                    "needs signatures by at least 2 of A, B and C; found a valid signature by B only",
                ),
            ),
            (
                &["A", "B", "C"],
                AtLeast,
                Some(3),
                &["A", "B", "C", "D"],
                Ok(()),
            ),
        ];
        for (keys, require, at_least, found, expected) in table {
            let got = judge_rule(&rule(keys, *require, *at_least), &signed(found));
            assert_eq!(
                got,
                expected.map_err(str::to_string),
                "{keys:?} {require:?} {at_least:?} {found:?}"
            );
        }
    }

    #[test]
    fn rules_select_by_class_and_repository_glob() {
        let mut rule = rule(&["A"], Requirement::All, None);
        rule.classes = vec![ArtifactClass::Catalog];
        rule.images = vec!["quay.io/acme/*".into(), "127.0.0.1:*/**".into()];
        assert!(rule.applies_to(ArtifactClass::Catalog, "quay.io/acme/catalog"));
        assert!(!rule.applies_to(ArtifactClass::Catalog, "quay.io/acme/team/catalog"));
        assert!(rule.applies_to(ArtifactClass::Catalog, "127.0.0.1:5000/a/b/c"));
        assert!(!rule.applies_to(ArtifactClass::Bundle, "quay.io/acme/catalog"));
        assert!(!rule.applies_to(ArtifactClass::Catalog, "quay.io/other/catalog"));
        rule.classes.clear();
        rule.images.clear();
        assert!(rule.applies_to(ArtifactClass::OperatorImage, "anything/at/all"));
    }

    fn valid_policy() -> TrustPolicy {
        TrustPolicy {
            keys: vec![
                TrustedKey {
                    name: "A".into(),
                    ..Default::default()
                },
                TrustedKey {
                    name: "B".into(),
                    ..Default::default()
                },
            ],
            rules: vec![rule(&["A", "B"], Requirement::AtLeast, Some(1))],
            require_signatures: Vec::new(),
        }
    }

    #[test]
    fn invalid_policies_name_the_field() {
        assert_eq!(valid_policy().validate(), Ok(()));
        let cases: Vec<BreakingChange> = vec![
            (
                Box::new(|p| p.rules[0].keys.push("C".into())),
                "rules[0].keys[2]",
            ),
            (
                Box::new(|p| p.rules[0].keys.push("A".into())),
                "rules[0].keys[2]",
            ),
            (
                Box::new(|p| p.rules[0].at_least = Some(3)),
                "rules[0].atLeast",
            ),
            (
                Box::new(|p| p.rules[0].at_least = Some(0)),
                "rules[0].atLeast",
            ),
            (Box::new(|p| p.rules[0].at_least = None), "rules[0].atLeast"),
            (
                Box::new(|p| p.rules[0].require = Requirement::All),
                "rules[0].atLeast",
            ),
            (Box::new(|p| p.rules[0].keys.clear()), "rules[0].keys"),
            (
                Box::new(|p| p.rules[0].images = vec!["[".into()]),
                "rules[0].images[0]",
            ),
            (Box::new(|p| p.keys[1].name = "A".into()), "keys[1].name"),
            (Box::new(|p| p.keys[0].name = " ".into()), "keys[0].name"),
            (
                Box::new(|p| {
                    p.keys[0].not_before = Some("2026-02-01T00:00:00Z".parse().unwrap());
                    p.keys[0].not_after = Some("2026-01-01T00:00:00Z".parse().unwrap());
                }),
                "keys[0]",
            ),
        ];
        for (change, field) in cases {
            let mut policy = valid_policy();
            change(&mut policy);
            let error = policy.validate().unwrap_err();
            assert_eq!(error.field, field, "{error}");
        }
    }

    #[test]
    fn the_yaml_form_reads_with_defaults() {
        let text = r#"
keys:
  - name: old
    notAfter: "2027-01-31T00:00:00Z"
  - name: new
rules:
  - classes: [Catalog, Bundle]
    images: ["quay.io/acme/**"]
    keys: [old, new]
    require: AtLeast
    atLeast: 1
    unsigned: Report
  - keys: [new]
"#;
        let policy: TrustPolicy = serde_saphyr::from_str(text).unwrap();
        policy.validate().unwrap();
        assert_eq!(policy.rules[0].unsigned, UnsignedAction::Report);
        assert_eq!(policy.rules[1].require, Requirement::All);
        assert_eq!(policy.rules[1].unsigned, UnsignedAction::Refuse);
        let now: DateTime<Utc> = "2027-02-01T00:00:00Z".parse().unwrap();
        assert_eq!(
            policy.keys[0].outside_window(now).as_deref(),
            Some("key old expired at 2027-01-31T00:00:00+00:00")
        );
        assert_eq!(policy.keys[1].outside_window(now), None);
        // The JSON form is camelCase with PascalCase values, as a custom resource wants.
        let json = serde_json::to_value(&policy).unwrap();
        assert_eq!(json["rules"][0]["atLeast"], 1);
        assert_eq!(json["keys"][0]["notAfter"], "2027-01-31T00:00:00Z");
        assert_eq!(json["rules"][0]["classes"][1], "Bundle");
        let schema = serde_json::to_value(schemars::schema_for!(TrustPolicy)).unwrap();
        assert!(schema.to_string().contains("OperatorImage"));
    }

    #[test]
    fn fingerprints_change_with_the_policy_and_the_key_material() {
        let policy = valid_policy();
        let keys: BTreeMap<String, String> = [("A".to_string(), "sha256:1".to_string())].into();
        let base = policy.fingerprint(&keys);
        assert_eq!(base, policy.fingerprint(&keys));
        let mut rotated = keys.clone();
        rotated.insert("A".into(), "sha256:2".into());
        assert_ne!(base, policy.fingerprint(&rotated));
        let mut stricter = policy.clone();
        stricter.rules[0].require = Requirement::All;
        stricter.rules[0].at_least = None;
        assert_ne!(base, stricter.fingerprint(&keys));
    }

    #[test]
    fn merged_policies_keep_each_policys_keys_to_its_own_rules() {
        let one = TrustPolicy {
            keys: vec![TrustedKey {
                name: "release".into(),
                ..Default::default()
            }],
            rules: vec![TrustRule {
                classes: vec![ArtifactClass::Release],
                keys: vec!["release".into()],
                ..Default::default()
            }],
            require_signatures: vec![ArtifactClass::Bundle],
        };
        let two = TrustPolicy {
            keys: vec![TrustedKey {
                name: "release".into(),
                ..Default::default()
            }],
            rules: vec![TrustRule {
                name: "catalogs".into(),
                classes: vec![ArtifactClass::Catalog],
                keys: vec!["release".into()],
                ..Default::default()
            }],
            require_signatures: vec![ArtifactClass::Catalog, ArtifactClass::Bundle],
        };
        let merged = merge(&[("platform".into(), one), ("catalogs".into(), two)]);
        let keys: Vec<&str> = merged.keys.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(keys, ["platform/release", "catalogs/release"]);
        assert_eq!(merged.rules[0].name, "platform/rules[0]");
        assert_eq!(merged.rules[0].keys, ["platform/release"]);
        assert_eq!(merged.rules[1].name, "catalogs/catalogs");
        assert_eq!(merged.rules[1].keys, ["catalogs/release"]);
        // A class one policy requires signed is required of every artifact of that class.
        assert_eq!(
            merged.require_signatures,
            [ArtifactClass::Bundle, ArtifactClass::Catalog]
        );
        merged.validate().expect("a merged policy is valid");
    }
}
