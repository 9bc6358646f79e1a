//! ClusterServiceVersion: one installed operator version, as the bundle describes it.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    condition::{Condition, conditions_schema},
    config::OperatorConfig,
};

/// An operator version to install and keep healthy. `spec.definition` carries the bundle's OLM
/// ClusterServiceVersion unchanged (its annotations, labels and spec), so nothing the bundle
/// says is lost; the other fields are windlass bookkeeping.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "windlass.dev",
    version = "v1alpha1",
    kind = "ClusterServiceVersion",
    namespaced,
    status = "ClusterServiceVersionStatus",
    shortname = "wcsv",
    category = "windlass",
    doc = "One operator version to install and keep healthy, carrying the bundle's OLM ClusterServiceVersion unchanged.",
    printcolumn(
        name = "Display",
        type_ = "string",
        json_path = ".spec.definition.spec.displayName"
    ),
    printcolumn(
        name = "Version",
        type_ = "string",
        json_path = ".spec.definition.spec.version"
    ),
    printcolumn(name = "Supersedes", type_ = "string", json_path = ".spec.supersedes"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterServiceVersionSpec {
    /// The bundle's OLM ClusterServiceVersion: `{metadata: {annotations, labels}, spec}`.
    #[schemars(schema_with = "preserved_object")]
    pub definition: Definition,
    /// Namespaces the operator watches; empty means all namespaces.
    #[serde(default)]
    pub target_namespaces: Vec<String>,
    #[serde(default, skip_serializing_if = "OperatorConfig::is_empty")]
    pub config: OperatorConfig,
    /// The CSV this one takes over from (its Deployments are adopted in place).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
    /// How long the operator has to become healthy before the CSV is Failed (default 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline_seconds: Option<i64>,
    /// What windlass changed to install the bundle on this Kubernetes (converted CRDs, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conversions: Vec<String>,
    /// The ServiceAccount (in the CSV's namespace) that the operator's namespaced objects are
    /// created as, by impersonation, so the API server refuses what it could not create or
    /// grant itself. Absent: the manager's own identity (namespaces an InstallPolicy trusts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_service_account: Option<String>,
    /// Images the operator's Deployments run from a mirror: a container's image, or a
    /// `RELATED_IMAGE_*` value, equal to `image` becomes `mirror`. Set by the Blueprint from
    /// the ImageMirrorSets; `definition` keeps the bundle's own references.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_rewrites: Vec<crate::mirror::ImageRewrite>,
    /// Who applied this CSV and what it may have created, set by the Blueprint that applies it
    /// and covered by its seal. The CSV controller acts on a CSV only while that Blueprint
    /// exists, owns it and is at this revision, and while the InstallPolicy that permitted it
    /// is at the generation recorded here: a sealed copy replayed after an uninstall, after
    /// an upgrade or after its policy changed creates nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<CsvGrant>,
}

/// The authority a CSV was applied under (`spec.grant`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CsvGrant {
    /// The uid of the Blueprint that applied it; an ownerReference must name it.
    #[serde(rename = "blueprintUID")]
    pub blueprint_uid: String,
    /// The Blueprint revision it belongs to.
    pub revision: i64,
    /// The InstallPolicy that permitted the install (absent: what every namespace may do
    /// without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// That policy's `metadata.generation` when it permitted the install.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_generation: Option<i64>,
    /// The cluster-scoped objects the CSV controller may create for it (ClusterPermissions,
    /// Webhooks); what is not listed is not created, and removed if it was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_scoped: Vec<crate::policy::ClusterScopedGrant>,
}

/// The bundle's OLM ClusterServiceVersion, kept as the JSON text it arrived as and parsed when
/// read: a watch cache of a thousand CSVs holds a tenth of the memory a parsed tree takes (each
/// key, string and map of a tree is an allocation of its own).
#[derive(Clone, Debug)]
pub struct Definition(Box<serde_json::value::RawValue>);

impl Definition {
    /// The definition as a JSON tree.
    pub fn to_value(&self) -> serde_json::Value {
        // Valid JSON by construction (deserialized or serialized by serde_json).
        serde_json::from_str(self.0.get()).unwrap_or_default()
    }

    /// Reads the parts `T` names; the rest of the text is skipped without being built.
    pub fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.0.get())
    }

    /// The CRDs the definition owns and requires (`spec.customresourcedefinitions`), read
    /// without building the rest of it (none when it names none, or is not a CSV definition).
    fn crd_entries(&self) -> CrdLists {
        #[derive(Deserialize, Default)]
        #[serde(default)]
        struct Top {
            spec: Spec,
        }
        #[derive(Deserialize, Default)]
        #[serde(default)]
        struct Spec {
            customresourcedefinitions: CrdLists,
        }
        self.parse::<Top>()
            .unwrap_or_default()
            .spec
            .customresourcedefinitions
    }

    /// The names of the CRDs the definition owns and requires.
    pub fn crd_names(&self) -> CrdNames {
        let lists = self.crd_entries();
        let names = |list: Vec<CrdEntry>| list.into_iter().map(|n| n.name).collect();
        CrdNames {
            owned: names(lists.owned),
            required: names(lists.required),
        }
    }

    /// The CRDs the definition owns, with the version and kind it names for each.
    pub fn owned_crds(&self) -> Vec<CrdEntry> {
        self.crd_entries().owned
    }

    /// The JSON text.
    pub fn as_json(&self) -> &str {
        self.0.get()
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CrdLists {
    owned: Vec<CrdEntry>,
    required: Vec<CrdEntry>,
}

/// One CRD a CSV definition owns or requires, as it names it (any part may be empty).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct CrdEntry {
    pub name: String,
    pub version: String,
    pub kind: String,
}

/// The CRDs a CSV definition names, from [`Definition::crd_names`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrdNames {
    pub owned: Vec<String>,
    pub required: Vec<String>,
}

impl CrdNames {
    /// Whether `crd` is owned or required.
    pub fn names(&self, crd: &str) -> bool {
        self.owned
            .iter()
            .chain(&self.required)
            .any(|name| name == crd)
    }
}

impl From<serde_json::Value> for Definition {
    fn from(value: serde_json::Value) -> Self {
        // A Value always serializes.
        let text = serde_json::to_string(&value).unwrap_or_else(|_| "null".into());
        Definition(serde_json::value::RawValue::from_string(text).unwrap_or_else(|_| null()))
    }
}

fn null() -> Box<serde_json::value::RawValue> {
    serde_json::value::RawValue::from_string("null".into()).expect("null is JSON")
}

impl Default for Definition {
    fn default() -> Self {
        Definition(null())
    }
}

/// Equal when they hold the same JSON, whatever the spacing or the order of keys.
impl PartialEq for Definition {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get() || self.to_value() == other.to_value()
    }
}

impl Serialize for Definition {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Definition {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Box::<serde_json::value::RawValue>::deserialize(deserializer).map(Definition)
    }
}

fn preserved_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true
    })
}

/// OLM-compatible phases.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum CsvPhase {
    Pending,
    InstallReady,
    Installing,
    Succeeded,
    Failed,
    Replacing,
    Deleting,
    Unknown,
}

/// One requirement checked before install.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequirementStatus {
    pub kind: String,
    pub name: String,
    /// `Present`, `NotPresent` or `NotSatisfied`.
    pub status: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// An object the CSV created that its ownerReference cannot clean up (cluster-scoped, or in
/// another namespace); the CSV's finalizer removes these.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    pub api_version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterServiceVersionStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<CsvPhase>,
    /// CamelCase reason for the phase (OLM's vocabulary: RequirementsNotMet, InstallSucceeded, ...).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// When the phase last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// When installing this generation started; the progress deadline counts from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_start_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requirements: Vec<RequirementStatus>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub external_objects: Vec<ObjectReference>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "conditions_schema")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

#[cfg(test)]
mod definition_tests {
    use super::*;
    use serde_json::json;

    fn csv_with(definition: serde_json::Value) -> serde_json::Value {
        json!({
            "apiVersion": "windlass.dev/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {"name": "acme-db.v1.0.0", "namespace": "db"},
            "spec": {"definition": definition},
        })
    }

    #[test]
    fn a_definition_reads_back_as_the_tree_it_was_made_of() {
        let tree = json!({"spec": {"version": "1.0.0", "install": {"strategy": "deployment"}}});
        let text = serde_json::to_string(&csv_with(tree.clone())).unwrap();
        let from_text: ClusterServiceVersion = serde_json::from_str(&text).unwrap();
        assert_eq!(from_text.spec.definition.to_value(), tree);
        let from_tree: ClusterServiceVersion =
            serde_json::from_value(csv_with(tree.clone())).unwrap();
        assert_eq!(from_tree.spec.definition.to_value(), tree);
        let written = serde_json::to_value(&from_tree).unwrap();
        assert_eq!(
            written["spec"]["definition"], tree,
            "serialized as JSON, not as text"
        );
    }

    #[test]
    fn definitions_compare_by_content() {
        let a: Definition = serde_json::from_str(r#"{"a": 1, "b": [true]}"#).unwrap();
        let b: Definition = serde_json::from_str(r#"{"b":[true],"a":1}"#).unwrap();
        let c = Definition::from(json!({"a": 2}));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(Definition::default().to_value(), serde_json::Value::Null);
    }

    #[test]
    fn crd_names_are_read_from_the_owned_and_required_lists() {
        let definition = Definition::from(json!({"spec": {
            "description": "many other fields",
            "customresourcedefinitions": {
                "owned": [{"name": "a.acme.dev", "version": "v1"}],
                "required": [{"name": "b.acme.dev"}],
            },
        }}));
        let names = definition.crd_names();
        assert_eq!(names.owned, ["a.acme.dev"]);
        assert_eq!(names.required, ["b.acme.dev"]);
        assert!(names.names("a.acme.dev") && names.names("b.acme.dev"));
        assert!(!names.names("c.acme.dev"));
        assert_eq!(Definition::default().crd_names(), CrdNames::default());
    }
}
