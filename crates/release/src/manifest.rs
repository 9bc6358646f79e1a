//! One object of a payload: where it came from (file, run level, component), what it is, and
//! the CVO annotations that decide whether and how it is applied.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::annotations;

/// The two payload directories. The updater's own objects (`manifests/`) are applied first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PayloadDir {
    /// `manifests/`
    Updater,
    /// `release-manifests/`
    Release,
}

impl PayloadDir {
    pub fn path(self) -> &'static str {
        match self {
            PayloadDir::Updater => "manifests",
            PayloadDir::Release => "release-manifests",
        }
    }
}

/// Run level and component from a file name `0000_<NN>_<component>_<rest>`, by the CVO's rule:
/// `NN` is one or more digits and the component is letters and digits in `-`-joined words,
/// ended by `_`. Names that do not match have neither and run after every level.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileName {
    pub run_level: Option<String>,
    pub component: Option<String>,
}

impl FileName {
    pub fn parse(name: &str) -> FileName {
        let none = FileName {
            run_level: None,
            component: None,
        };
        let Some(rest) = name.strip_prefix("0000_") else {
            return none;
        };
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || rest.as_bytes().get(digits) != Some(&b'_') {
            return none;
        }
        let level = &rest[..digits];
        let after = &rest[digits + 1..];
        let Some(end) = after.find('_') else {
            return none;
        };
        let component = &after[..end];
        let valid = !component.is_empty()
            && component
                .split('-')
                .all(|word| !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric()));
        if !valid {
            return none;
        }
        FileName {
            run_level: Some(level.to_string()),
            component: Some(component.to_string()),
        }
    }
}

/// Whether a file is one the CVO reads: `.yaml`, `.yml` or `.json`.
pub fn has_manifest_extension(name: &str) -> bool {
    [".yaml", ".yml", ".json"]
        .iter()
        .any(|ext| name.len() > ext.len() && name.ends_with(ext))
}

/// What an object is: enough to find it in a cluster and to name it to a person.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectRef {
    /// The API group (`apps`), empty for the core group (`v1`).
    pub fn group(&self) -> &str {
        self.api_version
            .rsplit_once('/')
            .map_or("", |(group, _)| group)
    }

    /// Identity across API versions: group, kind, namespace, name.
    pub fn id(&self) -> ObjectId {
        ObjectId {
            group: self.group().to_string(),
            kind: self.kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }
}

impl fmt::Display for ObjectRef {
    /// `Deployment dns/dns-operator`, `Namespace dns`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {ns}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// An object's identity regardless of API version (what makes two manifests duplicates, and
/// what a component override names).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectId {
    pub group: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectId {
    /// Whether one of `overrides` (objects left unmanaged) names this object. An override of a
    /// cluster-scoped object matches whatever namespace it names.
    pub fn overridden_by(&self, overrides: &[ObjectId]) -> bool {
        overrides.iter().any(|o| {
            o.group == self.group
                && o.kind == self.kind
                && o.name == self.name
                && (self.namespace.is_none() || o.namespace == self.namespace)
        })
    }
}

/// What to do with a manifest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Action {
    /// Server-side apply, and keep it matching.
    Apply,
    /// Create when missing, never update (`release.openshift.io/create-only: "true"`).
    CreateOnly,
    /// Delete (`release.openshift.io/delete: "true"`).
    Delete,
}

/// A container of a pod template and its image.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerImage {
    pub container: String,
    pub image: String,
}

/// One document of one payload file.
#[derive(Clone, Debug, PartialEq)]
pub struct Manifest {
    /// Path inside the payload, `release-manifests/0000_20_dns_02_deployment.yaml`.
    pub file: String,
    /// Index among the file's non-empty documents.
    pub document: usize,
    pub dir: PayloadDir,
    pub file_name: FileName,
    pub object: ObjectRef,
    pub annotations: BTreeMap<String, String>,
    /// The object as written (after the updater templates were rendered).
    pub body: serde_json::Value,
}

/// Kinds whose pod template the payload's image rule covers, with the path to the pod spec.
const POD_TEMPLATE_PATHS: [(&str, &[&str]); 7] = [
    ("Deployment", &["spec", "template", "spec"]),
    ("DaemonSet", &["spec", "template", "spec"]),
    ("StatefulSet", &["spec", "template", "spec"]),
    ("ReplicaSet", &["spec", "template", "spec"]),
    ("Job", &["spec", "template", "spec"]),
    (
        "CronJob",
        &["spec", "jobTemplate", "spec", "template", "spec"],
    ),
    ("Pod", &["spec"]),
];

impl Manifest {
    pub fn action(&self) -> Action {
        if self
            .annotations
            .get(annotations::DELETE)
            .map(String::as_str)
            == Some("true")
        {
            Action::Delete
        } else if self
            .annotations
            .get(annotations::CREATE_ONLY)
            .map(String::as_str)
            == Some("true")
        {
            Action::CreateOnly
        } else {
            Action::Apply
        }
    }

    pub fn irreversible(&self) -> bool {
        self.annotations
            .get(annotations::IRREVERSIBLE)
            .map(String::as_str)
            == Some("true")
    }

    pub fn is_job(&self) -> bool {
        self.object.kind == "Job" && self.object.group() == "batch"
    }

    /// Every container, init container and ephemeral container image of the object's pod
    /// template (empty for kinds without one).
    pub fn images(&self) -> Vec<ContainerImage> {
        let Some((_, path)) = POD_TEMPLATE_PATHS
            .iter()
            .find(|(kind, _)| *kind == self.object.kind)
        else {
            return Vec::new();
        };
        let mut spec = &self.body;
        for key in *path {
            spec = &spec[*key];
        }
        ["initContainers", "containers", "ephemeralContainers"]
            .iter()
            .filter_map(|list| spec[*list].as_array())
            .flatten()
            .map(|c| ContainerImage {
                container: c["name"].as_str().unwrap_or("").to_string(),
                image: c["image"].as_str().unwrap_or("").to_string(),
            })
            .collect()
    }

    /// Profiles this manifest is included in (`include.release.openshift.io/<p>: "true"`).
    pub fn profiles(&self) -> BTreeSet<&str> {
        self.annotations
            .iter()
            .filter(|(_, v)| v.as_str() == "true")
            .filter_map(|(k, _)| k.strip_prefix(annotations::PROFILE_PREFIX))
            .collect()
    }

    /// Feature sets named by the annotation; `None` when it is absent (every feature set).
    pub fn feature_sets(&self) -> Option<BTreeSet<&str>> {
        self.annotations
            .get(annotations::FEATURE_SET)
            .map(|v| v.split(',').map(str::trim).collect())
    }

    /// Whether the cluster described by `options` gets this manifest; the reason when not. The
    /// checks and their order are the CVO's.
    pub fn inclusion(&self, options: &InclusionOptions) -> Result<(), Exclusion> {
        let a = &self.annotations;
        if let Some(identifier) = &options.exclude_identifier {
            let key = format!("{}{identifier}", annotations::EXCLUDE_PREFIX);
            if a.get(&key).map(String::as_str) == Some("true") {
                return Err(Exclusion::Excluded { annotation: key });
            }
        }
        if options.enabled_feature_gates.is_some()
            && a.contains_key(annotations::FEATURE_SET)
            && a.contains_key(annotations::FEATURE_GATE)
        {
            return Err(Exclusion::FeatureSetAndGate);
        }
        if let Some(sets) = self.feature_sets() {
            if let Some(unknown) = sets
                .iter()
                .find(|s| !annotations::KNOWN_FEATURE_SETS.contains(s))
            {
                return Err(Exclusion::UnknownFeatureSet {
                    value: unknown.to_string(),
                });
            }
            let required = if options.feature_set.is_empty() {
                "Default"
            } else {
                options.feature_set.as_str()
            };
            if !sets.contains(required) {
                return Err(Exclusion::FeatureSet {
                    required: required.to_string(),
                    listed: a[annotations::FEATURE_SET].clone(),
                });
            }
        }
        if let (Some(enabled), Some(gates)) = (
            &options.enabled_feature_gates,
            a.get(annotations::FEATURE_GATE),
        ) {
            for gate in gates.split(',').map(str::trim).filter(|g| !g.is_empty()) {
                match gate.strip_prefix('-') {
                    Some(off) if enabled.contains(off) => {
                        return Err(Exclusion::FeatureGate {
                            gate: off.to_string(),
                            needs_enabled: false,
                        });
                    }
                    None if !enabled.contains(gate) => {
                        return Err(Exclusion::FeatureGate {
                            gate: gate.to_string(),
                            needs_enabled: true,
                        });
                    }
                    _ => {}
                }
            }
        }
        let key = format!("{}{}", annotations::PROFILE_PREFIX, options.profile);
        match a.get(&key) {
            None => {
                return Err(Exclusion::ProfileUnset {
                    profile: options.profile.clone(),
                });
            }
            Some(value) if value != "true" => {
                return Err(Exclusion::ProfileValue {
                    profile: options.profile.clone(),
                    value: value.clone(),
                });
            }
            Some(_) => {}
        }
        if let Some(capabilities) = &options.capabilities {
            let names: Vec<&str> = a
                .get(annotations::CAPABILITY)
                .filter(|v| !v.is_empty())
                .map(|v| v.split('+').collect())
                .unwrap_or_default();
            let unknown: Vec<String> = names
                .iter()
                .filter(|n| {
                    capabilities
                        .known
                        .as_ref()
                        .is_some_and(|known| !known.contains(**n))
                })
                .map(|n| n.to_string())
                .collect();
            if !unknown.is_empty() {
                return Err(Exclusion::UnknownCapabilities { names: unknown });
            }
            let disabled: Vec<String> = names
                .iter()
                .filter(|n| !capabilities.enabled.contains(**n))
                .map(|n| n.to_string())
                .collect();
            if !disabled.is_empty() {
                return Err(Exclusion::DisabledCapabilities { names: disabled });
            }
        }
        if self.object.id().overridden_by(&options.overrides) {
            return Err(Exclusion::Overridden);
        }
        Ok(())
    }
}

/// What the cluster is, as far as choosing manifests goes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InclusionOptions {
    /// Cluster profile; [`annotations::DEFAULT_PROFILE`] unless set.
    pub profile: String,
    /// The cluster's feature set; empty is `Default`.
    pub feature_set: String,
    /// Enabled feature gates; `None` ignores the feature-gate annotation.
    pub enabled_feature_gates: Option<BTreeSet<String>>,
    /// `None` applies every capability's manifests (a cluster that does not use capabilities).
    pub capabilities: Option<Capabilities>,
    /// Identifier for `exclude.release.openshift.io/<identifier>`.
    pub exclude_identifier: Option<String>,
    /// Objects left unmanaged (ClusterVersion `spec.overrides` with `unmanaged: true`).
    pub overrides: Vec<ObjectId>,
}

impl Default for InclusionOptions {
    fn default() -> Self {
        InclusionOptions {
            profile: annotations::DEFAULT_PROFILE.into(),
            feature_set: String::new(),
            enabled_feature_gates: Some(BTreeSet::new()),
            capabilities: None,
            exclude_identifier: None,
            overrides: Vec::new(),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    /// Capability names the cluster knows; `None` accepts any name (an update to a release that
    /// introduces new capabilities).
    pub known: Option<BTreeSet<String>>,
    pub enabled: BTreeSet<String>,
}

/// Why a manifest is left out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "camelCase", tag = "reason")]
pub enum Exclusion {
    #[error("{annotation}=true")]
    Excluded { annotation: String },
    #[error(
        "both {} and {} are set; a manifest may name a feature set or feature gates, not both",
        annotations::FEATURE_SET,
        annotations::FEATURE_GATE
    )]
    FeatureSetAndGate,
    #[error("unknown feature set {value:?} in {}", annotations::FEATURE_SET)]
    UnknownFeatureSet { value: String },
    #[error(
        "feature set {required} is the cluster's, and {}={listed}",
        annotations::FEATURE_SET
    )]
    FeatureSet { required: String, listed: String },
    #[error("feature gate {gate} {}", if *needs_enabled { "is required but not enabled" } else { "is enabled but the manifest needs it disabled" })]
    FeatureGate { gate: String, needs_enabled: bool },
    #[error("{}{profile} unset", annotations::PROFILE_PREFIX)]
    ProfileUnset { profile: String },
    #[error("{}{profile}={value:?} is not \"true\"", annotations::PROFILE_PREFIX)]
    ProfileValue { profile: String, value: String },
    #[error("unknown capabilities: {}", names.join(", "))]
    UnknownCapabilities { names: Vec<String> },
    #[error("disabled capabilities: {}", names.join(", "))]
    DisabledCapabilities { names: Vec<String> },
    #[error("overridden: left unmanaged by the ClusterVersion")]
    Overridden,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_follow_the_cvo_pattern() {
        let table: &[(&str, Option<(&str, &str)>)] = &[
            ("0000_10_dns_00_namespace.yaml", Some(("10", "dns"))),
            (
                "0000_50_cluster-monitoring-operator_02_deployment.yaml",
                Some(("50", "cluster-monitoring-operator")),
            ),
            ("0000_5_a1-b2_x.json", Some(("5", "a1-b2"))),
            ("0000_100_x_y.yml", Some(("100", "x"))),
            ("0000_10_dns.yaml", None),
            ("0000_10__dns_x.yaml", None),
            ("0000_10_-dns_x.yaml", None),
            ("0000_10_dns-_x.yaml", None),
            ("0000_10_dns--a_x.yaml", None),
            ("0000_xx_dns_x.yaml", None),
            ("0000__dns_x.yaml", None),
            ("000_10_dns_x.yaml", None),
            ("crd.yaml", None),
        ];
        for (name, expected) in table {
            let parsed = FileName::parse(name);
            let got = parsed.run_level.as_deref().zip(parsed.component.as_deref());
            assert_eq!(got, *expected, "{name}");
        }
    }

    #[test]
    fn only_yaml_yml_and_json_are_manifests() {
        for (name, yes) in [
            ("a.yaml", true),
            ("a.yml", true),
            ("a.json", true),
            ("a.YAML", false),
            ("a.yaml.orig", false),
            ("README.md", false),
            (".yaml", false),
        ] {
            assert_eq!(has_manifest_extension(name), yes, "{name}");
        }
    }

    fn manifest(annotations: &[(&str, &str)]) -> Manifest {
        Manifest {
            file: "release-manifests/0000_10_a_x.yaml".into(),
            document: 0,
            dir: PayloadDir::Release,
            file_name: FileName::parse("0000_10_a_x.yaml"),
            object: ObjectRef {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                namespace: Some("ns".into()),
                name: "cm".into(),
            },
            annotations: annotations
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: serde_json::Value::Null,
        }
    }

    const HA: &str = "include.release.openshift.io/self-managed-high-availability";

    #[test]
    fn inclusion_follows_the_cvo_checks() {
        let caps = |enabled: &[&str]| Capabilities {
            known: Some(
                ["Console", "Insights"]
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
            ),
            enabled: enabled.iter().map(|s| s.to_string()).collect(),
        };
        let defaults = InclusionOptions::default();
        let tech = InclusionOptions {
            feature_set: "TechPreviewNoUpgrade".into(),
            ..Default::default()
        };
        let with_caps = InclusionOptions {
            capabilities: Some(caps(&["Console"])),
            ..Default::default()
        };
        let gates = InclusionOptions {
            enabled_feature_gates: Some(["GateA".to_string()].into()),
            ..Default::default()
        };
        let excluding = InclusionOptions {
            exclude_identifier: Some("internal-openshift-hosted".into()),
            ..Default::default()
        };
        type Case<'a> = (
            &'a [(&'a str, &'a str)],
            &'a InclusionOptions,
            Result<(), &'a str>,
        );
        let table: &[Case] = &[
            (&[(HA, "true")], &defaults, Ok(())),
            (&[], &defaults, Err("self-managed-high-availability unset")),
            (&[(HA, "false")], &defaults, Err("is not \"true\"")),
            (
                &[("include.release.openshift.io/single-node-developer", "true")],
                &defaults,
                Err("unset"),
            ),
            (
                &[
                    (HA, "true"),
                    ("release.openshift.io/feature-set", "TechPreviewNoUpgrade"),
                ],
                &defaults,
                Err("feature set Default is the cluster's"),
            ),
            (
                &[
                    (HA, "true"),
                    (
                        "release.openshift.io/feature-set",
                        "Default,TechPreviewNoUpgrade",
                    ),
                ],
                &tech,
                Ok(()),
            ),
            (
                &[(HA, "true"), ("release.openshift.io/feature-set", "Bogus")],
                &defaults,
                Err("unknown feature set \"Bogus\""),
            ),
            (
                &[(HA, "true"), ("release.openshift.io/feature-gate", "GateA")],
                &gates,
                Ok(()),
            ),
            (
                &[(HA, "true"), ("release.openshift.io/feature-gate", "GateB")],
                &gates,
                Err("GateB is required"),
            ),
            (
                &[
                    (HA, "true"),
                    ("release.openshift.io/feature-gate", "-GateA"),
                ],
                &gates,
                Err("GateA is enabled"),
            ),
            (
                &[
                    (HA, "true"),
                    ("release.openshift.io/feature-gate", "x"),
                    ("release.openshift.io/feature-set", "Default"),
                ],
                &gates,
                Err("not both"),
            ),
            (
                &[(HA, "true"), ("capability.openshift.io/name", "Console")],
                &with_caps,
                Ok(()),
            ),
            (
                &[
                    (HA, "true"),
                    ("capability.openshift.io/name", "Console+Insights"),
                ],
                &with_caps,
                Err("disabled capabilities: Insights"),
            ),
            (
                &[(HA, "true"), ("capability.openshift.io/name", "Nope")],
                &with_caps,
                Err("unknown capabilities: Nope"),
            ),
            (
                &[(HA, "true"), ("capability.openshift.io/name", "Insights")],
                &defaults,
                Ok(()),
            ),
            (
                &[
                    (HA, "true"),
                    (
                        "exclude.release.openshift.io/internal-openshift-hosted",
                        "true",
                    ),
                ],
                &excluding,
                Err("internal-openshift-hosted=true"),
            ),
            (
                &[(HA, "true"), ("some.other/annotation", "whatever")],
                &defaults,
                Ok(()),
            ),
        ];
        for (annotations, options, expected) in table {
            let got = manifest(annotations)
                .inclusion(options)
                .map_err(|e| e.to_string());
            match (expected, &got) {
                (Ok(()), Ok(())) => {}
                (Err(part), Err(message)) if message.contains(part) => {}
                _ => panic!("{annotations:?}: expected {expected:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn overrides_match_group_kind_namespace_and_name() {
        let m = manifest(&[(HA, "true")]);
        let mut options = InclusionOptions::default();
        options.overrides.push(ObjectId {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: Some("other".into()),
            name: "cm".into(),
        });
        assert!(m.inclusion(&options).is_ok());
        options.overrides[0].namespace = Some("ns".into());
        assert_eq!(m.inclusion(&options), Err(Exclusion::Overridden));
    }

    #[test]
    fn actions_and_images() {
        assert_eq!(manifest(&[]).action(), Action::Apply);
        assert_eq!(
            manifest(&[(annotations::CREATE_ONLY, "true")]).action(),
            Action::CreateOnly
        );
        assert_eq!(
            manifest(&[(annotations::CREATE_ONLY, "yes")]).action(),
            Action::Apply
        );
        assert_eq!(
            manifest(&[(annotations::DELETE, "true")]).action(),
            Action::Delete
        );
        assert!(manifest(&[(annotations::IRREVERSIBLE, "true")]).irreversible());
        let mut cron = manifest(&[]);
        cron.object.kind = "CronJob".into();
        cron.object.api_version = "batch/v1".into();
        cron.body = serde_json::json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {
            "initContainers": [{"name": "init", "image": "a@sha256:1"}],
            "containers": [{"name": "main", "image": "b@sha256:2"}]}}}}}});
        assert_eq!(
            cron.images(),
            vec![
                ContainerImage {
                    container: "init".into(),
                    image: "a@sha256:1".into()
                },
                ContainerImage {
                    container: "main".into(),
                    image: "b@sha256:2".into()
                },
            ]
        );
        assert!(manifest(&[]).images().is_empty());
    }
}
