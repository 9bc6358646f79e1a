//! The plan document: what a revision creates, changes and deletes, the permissions and
//! images it changes, its CRD verdicts and the out-of-band edits it overwrites. It is stored as
//! JSON (camelCase), so its shape is a format: [`FORMAT`] says which.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::binding::Binding;

/// The version of the plan document's format.
pub const FORMAT: u32 = 1;

/// The plan of one Blueprint revision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub format: u32,
    /// `namespace/name` of the Blueprint.
    pub blueprint: String,
    pub revision: i64,
    pub package: String,
    pub kind: PlanKind,
    /// What runs now, when something does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Release>,
    pub to: Release,
    /// `sha256:...` of [`Plan::binding`]: what approving names.
    pub digest: String,
    pub binding: Binding,
    /// Why this version: the revision's reason and the resolver's explanation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// Who applies what: namespaced objects as the install identity, cluster-scoped ones and the
    /// ClusterServiceVersion as the manager.
    pub identity: String,
    /// Every object the revision applies or removes, in apply order.
    #[serde(default)]
    pub objects: Vec<ObjectChange>,
    /// Permissions the operator's ServiceAccounts gain and lose.
    #[serde(default)]
    pub rbac: RbacDelta,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageChange>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub crds: Vec<CrdChange>,
    /// Live objects edited since the revision that runs now applied them; this plan overwrites
    /// those edits.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drift: Vec<Drift>,
    /// For a rollback: what it does with the operator's custom resources, from a server-side
    /// dry run of restoring them to the snapshot taken before the upgrade it undoes. Live
    /// state, like `drift`: not bound by the digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operands: Option<String>,
    /// What differs from the plan before it (this revision's plan shown earlier, or the
    /// previous revision's), the first line saying which.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<String>,
    /// What a reader should know about the plan itself (values hidden, details left out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// RFC 3339.
    pub computed_at: String,
}

/// What kind of move the revision is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PlanKind {
    Install,
    Upgrade,
    Downgrade,
    /// The same version again (its bundle or the install settings changed).
    Reinstall,
    /// A stored revision restored (a person's rollback or an automatic one).
    Rollback,
}

impl fmt::Display for PlanKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PlanKind::Install => "install",
            PlanKind::Upgrade => "upgrade",
            PlanKind::Downgrade => "downgrade",
            PlanKind::Reinstall => "reinstall",
            PlanKind::Rollback => "rollback",
        })
    }
}

/// A version of the package.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Release {
    pub version: String,
    #[serde(rename = "clusterServiceVersionName")]
    pub cluster_service_version_name: String,
}

/// One object: `apiVersion`, `kind`, `namespace` (none when cluster-scoped), `name`.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectRef {
    /// The reference of a manifest; missing fields read as empty.
    pub fn of(object: &Value) -> ObjectRef {
        let text = |pointer: &str| {
            object
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        ObjectRef {
            api_version: text("/apiVersion"),
            kind: text("/kind"),
            namespace: object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .filter(|ns| !ns.is_empty())
                .map(str::to_string),
            name: text("/metadata/name"),
        }
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {ns}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// What happens to one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ObjectAction {
    Create,
    Change,
    Delete,
    Unchanged,
}

/// One object of the plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectChange {
    pub object: ObjectRef,
    pub action: ObjectAction,
    /// Who writes it: `manager`, or the install identity's user name.
    pub by: String,
    /// The ClusterServiceVersion's controller creates it (RBAC, Deployments), not the
    /// Blueprint's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_csv: bool,
    /// Field-level changes (empty for a create or delete).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FieldChange>,
    /// How many field changes were left out to keep the plan within its size limit.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fields_left_out: usize,
    /// The API server refused the dry run: the apply would fail the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// When it happens, if not at once (an old ClusterServiceVersion goes once the new one
    /// Succeeded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One field that differs, by path (`spec.template.spec.containers[name=operator].image`).
/// `old` is absent when the field is added, `new` when it is removed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldChange {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new: Option<Value>,
}

/// The permissions that change, each a single verb on a single resource (or URL), so that
/// "gained" and "lost" are exact.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RbacDelta {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gained: Vec<Grant>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost: Vec<Grant>,
}

impl RbacDelta {
    pub fn is_empty(&self) -> bool {
        self.gained.is_empty() && self.lost.is_empty()
    }
}

/// One verb a ServiceAccount may use, where.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    /// `namespace/name` of the ServiceAccount (or the subject's kind and name otherwise).
    pub subject: String,
    /// The namespace it holds in; `None`: cluster-wide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The API group (`""` for the core group); empty for a non-resource URL.
    #[serde(default)]
    pub api_group: String,
    /// The resource (`deployments`, `pods/log`), or the non-resource URL.
    pub resource: String,
    pub verb: String,
    /// Limited to this object name, when the rule names some.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
}

impl Grant {
    pub fn cluster_wide(&self) -> bool {
        self.namespace.is_none()
    }
}

/// One image that changes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageChange {
    /// Where it runs: `Deployment acme-db-operator, container operator`, or `relatedImage
    /// operator`.
    pub place: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new: Option<String>,
}

/// What happens to a CRD the bundle ships, and the safety verdict on it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrdChange {
    pub name: String,
    pub action: CrdAction,
    pub verdict: CrdVerdict,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<CrdFinding>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CrdAction {
    Create,
    Change,
    Unchanged,
    /// The live definition is newer (a later version of the package, or a rollback): kept.
    KeepLive,
}

/// The CRD safety verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum CrdVerdict {
    Safe,
    /// Allowed, with findings a person should read.
    Warns,
    /// The upgrade is refused until the problem is fixed.
    Blocks,
}

/// One finding of the CRD safety check, as its reader may see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrdFinding {
    /// The rule (`FieldRemoved`, `ExistingObjectFailsRule`, ...).
    pub reason: String,
    pub verdict: CrdVerdict,
    /// The live CRD already had this problem, so it does not block.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ratcheted: bool,
    pub message: String,
}

/// A live object edited out of band since windlass applied it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Drift {
    pub object: ObjectRef,
    /// `old` is what windlass applied, `new` what the object holds now.
    pub fields: Vec<FieldChange>,
    /// The field managers that own the edited fields now (`kubectl-edit`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub editors: Vec<String>,
}

impl Plan {
    /// How many objects take each action.
    pub fn count(&self, action: ObjectAction) -> usize {
        self.objects.iter().filter(|o| o.action == action).count()
    }

    /// The worst CRD verdict, `None` when the bundle ships no CRD.
    pub fn crd_verdict(&self) -> Option<CrdVerdict> {
        self.crds.iter().map(|c| c.verdict).max()
    }
}
