//! What the safety checks find, the verdict of each rule, and how findings are shown to a person
//! who may only see one namespace.

use std::collections::BTreeMap;
use std::fmt;

/// Which rule a [`Violation`] breaks. [`ViolationKind::verdict`] is the rule's verdict; the
/// module documentation has the whole table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ViolationKind {
    /// A version in the live `status.storedVersions` is missing from the new `spec.versions`.
    StoredVersionRemoved,
    /// `spec.scope` differs between the live and the new CRD.
    ScopeChanged,
    /// A version the live CRD serves is no longer served (or no longer defined).
    ServedVersionRemoved,
    /// A property of the old schema is missing from the new one.
    FieldRemoved,
    /// A node's `type` (or int-or-string) changed.
    TypeChanged,
    /// A property became required.
    RequiredFieldAdded,
    DefaultAdded,
    DefaultChanged,
    DefaultRemoved,
    /// Values of an `enum` were removed.
    EnumValuesRemoved,
    /// An `enum` was put on a node that had none.
    EnumAdded,
    /// `maximum` lowered or added, or `exclusiveMaximum` switched on.
    MaximumTightened,
    /// `minimum` raised or added, or `exclusiveMinimum` switched on.
    MinimumTightened,
    MaxLengthTightened,
    MinLengthTightened,
    MaxItemsTightened,
    MinItemsTightened,
    MaxPropertiesTightened,
    MinPropertiesTightened,
    /// A `pattern` was added or changed.
    PatternChanged,
    /// A `format` was added or changed.
    FormatChanged,
    /// A `multipleOf` was added or changed.
    MultipleOfChanged,
    /// A nullable node is no longer nullable: nulls stored there are dropped when read.
    NullableRemoved,
    /// `x-kubernetes-preserve-unknown-fields` was removed: unknown fields are pruned from now on.
    UnknownFieldsNoLongerPreserved,
    /// `x-kubernetes-list-type`, its map keys or `x-kubernetes-map-type` changed.
    ListTypeChanged,
    /// `x-kubernetes-validations` rules were added or changed (existing objects are checked
    /// against them separately).
    ValidationRulesChanged,
    /// Any other change to a schema node that windlass does not analyse (junctors, embedded
    /// resources, `additionalProperties`, ...): refused, as OLM v1 refuses what it cannot judge.
    OtherSchemaChange,
    /// An existing custom resource fails the new schema of its version.
    InvalidExistingObject,
    /// An existing custom resource fails an `x-kubernetes-validations` rule of the new schema.
    ExistingObjectFailsRule,
    /// A field of an existing custom resource would be pruned by the new schema: data loss.
    ExistingFieldPruned,
    /// A rule windlass cannot compile or does not implement, so it could not be checked.
    RuleNotEvaluated,
}

/// What a finding means for the upgrade.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verdict {
    /// The new CRD must not replace the live one.
    Blocks,
    /// Allowed, and said so.
    Warns,
}

impl ViolationKind {
    /// CamelCase, usable as a condition or Event reason.
    pub fn reason(self) -> &'static str {
        use ViolationKind::*;
        match self {
            StoredVersionRemoved => "StoredVersionRemoved",
            ScopeChanged => "ScopeChanged",
            ServedVersionRemoved => "ServedVersionRemoved",
            FieldRemoved => "FieldRemoved",
            TypeChanged => "TypeChanged",
            RequiredFieldAdded => "RequiredFieldAdded",
            DefaultAdded => "DefaultAdded",
            DefaultChanged => "DefaultChanged",
            DefaultRemoved => "DefaultRemoved",
            EnumValuesRemoved => "EnumValuesRemoved",
            EnumAdded => "EnumAdded",
            MaximumTightened => "MaximumTightened",
            MinimumTightened => "MinimumTightened",
            MaxLengthTightened => "MaxLengthTightened",
            MinLengthTightened => "MinLengthTightened",
            MaxItemsTightened => "MaxItemsTightened",
            MinItemsTightened => "MinItemsTightened",
            MaxPropertiesTightened => "MaxPropertiesTightened",
            MinPropertiesTightened => "MinPropertiesTightened",
            PatternChanged => "PatternChanged",
            FormatChanged => "FormatChanged",
            MultipleOfChanged => "MultipleOfChanged",
            NullableRemoved => "NullableRemoved",
            UnknownFieldsNoLongerPreserved => "UnknownFieldsNoLongerPreserved",
            ListTypeChanged => "ListTypeChanged",
            ValidationRulesChanged => "ValidationRulesChanged",
            OtherSchemaChange => "OtherSchemaChange",
            InvalidExistingObject => "InvalidExistingObject",
            ExistingObjectFailsRule => "ExistingObjectFailsRule",
            ExistingFieldPruned => "ExistingFieldPruned",
            RuleNotEvaluated => "RuleNotEvaluated",
        }
    }

    /// The rule's verdict when the problem is new (a problem the live CRD already had is
    /// downgraded to [`Verdict::Warns`]).
    pub fn verdict(self) -> Verdict {
        use ViolationKind::*;
        match self {
            ServedVersionRemoved | NullableRemoved | ValidationRulesChanged | RuleNotEvaluated => {
                Verdict::Warns
            }
            _ => Verdict::Blocks,
        }
    }

    /// True for the findings about existing custom resources, which name an object.
    pub fn is_about_an_object(self) -> bool {
        matches!(
            self,
            ViolationKind::InvalidExistingObject
                | ViolationKind::ExistingObjectFailsRule
                | ViolationKind::ExistingFieldPruned
                | ViolationKind::RuleNotEvaluated
        )
    }

    /// True for the rules about the CRD as a whole, whose message says everything.
    pub fn is_crd_wide(self) -> bool {
        matches!(
            self,
            ViolationKind::StoredVersionRemoved
                | ViolationKind::ScopeChanged
                | ViolationKind::ServedVersionRemoved
        )
    }

    /// What is wrong with objects, for counts of objects a viewer may not see.
    fn object_problem(self, one: bool) -> &'static str {
        match (self, one) {
            (ViolationKind::ExistingObjectFailsRule, true) => {
                "fails a validation rule of the new schema"
            }
            (ViolationKind::ExistingObjectFailsRule, false) => {
                "fail a validation rule of the new schema"
            }
            (ViolationKind::ExistingFieldPruned, _) => "would lose fields the new schema prunes",
            (ViolationKind::RuleNotEvaluated, _) => "could not be checked against every rule",
            (_, true) => "is invalid under the new schema",
            (_, false) => "are invalid under the new schema",
        }
    }
}

/// One finding about replacing a live CRD with a new one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The CRD's name, for example `databases.acme.windlass.dev`.
    pub crd: String,
    pub kind: ViolationKind,
    pub verdict: Verdict,
    /// The live CRD already had this problem (a served-version pair, or an object that was
    /// already invalid): reported, not blocking.
    pub ratcheted: bool,
    /// The custom resource's kind (`Database`), for findings about an existing object.
    pub object_kind: Option<String>,
    /// `namespace/name` (or `name` when cluster-scoped) of the custom resource.
    pub object: Option<String>,
    /// The custom resource's namespace (None when cluster-scoped or not about an object).
    pub namespace: Option<String>,
    /// The API version concerned (`v1`), or a pair of served versions (`v1alpha1 -> v1`).
    pub version: Option<String>,
    /// Field path inside the custom resource (`spec.items[0].name`), or in the schema
    /// (`spec.items[*].name`) for schema changes.
    pub field: Option<String>,
    /// The old and new value of what changed, as JSON, for schema changes.
    pub old: Option<String>,
    pub new: Option<String>,
    /// A sentence for a person.
    pub message: String,
}

impl Violation {
    /// A finding with the rule's own verdict and nothing but the CRD and the message.
    pub fn new(crd: &str, kind: ViolationKind, message: String) -> Self {
        Violation {
            crd: crd.to_string(),
            kind,
            verdict: kind.verdict(),
            ratcheted: false,
            object_kind: None,
            object: None,
            namespace: None,
            version: None,
            field: None,
            old: None,
            new: None,
            message,
        }
    }

    pub fn blocks(&self) -> bool {
        self.verdict == Verdict::Blocks
    }

    /// Marks a problem the live CRD already had: it no longer blocks.
    pub(crate) fn ratchet(mut self) -> Self {
        self.ratcheted = true;
        self.verdict = Verdict::Warns;
        self
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.crd)?;
        if self.kind.is_about_an_object() {
            write!(
                f,
                "existing {} {}",
                self.object_kind.as_deref().unwrap_or("object"),
                self.object.as_deref().unwrap_or("<unnamed>")
            )?;
            if let Some(version) = &self.version {
                write!(f, " ({version})")?;
            }
            let what = match self.kind {
                ViolationKind::ExistingFieldPruned => "loses a field under the new schema",
                ViolationKind::ExistingObjectFailsRule => "fails a rule of the new schema",
                ViolationKind::RuleNotEvaluated => "was not checked against a rule",
                _ => "is invalid under the new schema",
            };
            write!(
                f,
                " {what}: {}: {}",
                self.field.as_deref().unwrap_or("<root>"),
                self.message
            )?;
        } else if self.kind.is_crd_wide() {
            write!(f, "{}", self.message)?;
        } else {
            if let Some(version) = &self.version {
                write!(f, "{version}: ")?;
            }
            if let Some(field) = &self.field {
                write!(f, "{}: ", if field.is_empty() { "<root>" } else { field })?;
            }
            write!(f, "{}", self.message)?;
        }
        if self.ratcheted {
            write!(f, " (the live CRD already has this; not blocking)")?;
        }
        Ok(())
    }
}

/// Who reads the findings: a cluster admin sees every object; a namespace's user sees the
/// objects of that namespace by name and only counts of the others (other namespaces and
/// cluster-scoped objects alike), so nothing of another namespace reaches them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Viewer<'a> {
    Cluster,
    Namespace(&'a str),
}

impl Viewer<'_> {
    /// Whether this viewer may see the finding as it is.
    pub fn sees(&self, violation: &Violation) -> bool {
        match self {
            Viewer::Cluster => true,
            Viewer::Namespace(ns) => {
                !violation.kind.is_about_an_object() || violation.namespace.as_deref() == Some(ns)
            }
        }
    }
}

/// Findings about objects a viewer may not see, reduced to a count per CRD, version and rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HiddenObjects {
    pub crd: String,
    pub kind: ViolationKind,
    pub verdict: Verdict,
    pub version: Option<String>,
    /// How many distinct objects.
    pub objects: usize,
}

impl fmt::Display for HiddenObjects {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let one = self.objects == 1;
        let noun = if one { "object" } else { "objects" };
        let verb = self.kind.object_problem(one);
        write!(
            f,
            "{}: {} {noun} outside your namespace",
            self.crd, self.objects
        )?;
        if let Some(version) = &self.version {
            write!(f, " ({version})")?;
        }
        write!(f, " {verb}")?;
        if self.verdict == Verdict::Warns {
            write!(f, " (not blocking)")?;
        }
        Ok(())
    }
}

/// The findings as one viewer may see them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Assessment {
    /// Findings the viewer may see in full, in the order they were found.
    pub findings: Vec<Violation>,
    /// Counts of the findings about objects the viewer may not see.
    pub hidden: Vec<HiddenObjects>,
}

impl Assessment {
    /// Splits `violations` into what `viewer` may see and counts of the rest.
    pub fn for_viewer(violations: Vec<Violation>, viewer: Viewer<'_>) -> Self {
        let mut findings = Vec::new();
        let mut hidden: BTreeMap<(String, ViolationKind, Verdict, Option<String>), Vec<String>> =
            BTreeMap::new();
        for v in violations {
            if viewer.sees(&v) {
                findings.push(v);
                continue;
            }
            let objects = hidden
                .entry((v.crd.clone(), v.kind, v.verdict, v.version.clone()))
                .or_default();
            let id = v.object.unwrap_or_default();
            if !objects.contains(&id) {
                objects.push(id);
            }
        }
        let hidden = hidden
            .into_iter()
            .map(|((crd, kind, verdict, version), objects)| HiddenObjects {
                crd,
                kind,
                verdict,
                version,
                objects: objects.len(),
            })
            .collect();
        Assessment { findings, hidden }
    }

    /// True when anything, seen or hidden, blocks the upgrade.
    pub fn blocks(&self) -> bool {
        self.findings.iter().any(Violation::blocks)
            || self.hidden.iter().any(|h| h.verdict == Verdict::Blocks)
    }

    /// The blocking findings the viewer may see.
    pub fn blocking(&self) -> impl Iterator<Item = &Violation> {
        self.findings.iter().filter(|v| v.blocks())
    }

    /// One line for a condition message: blocking findings first, then warnings; at most `max`
    /// findings shown, then the counts of hidden objects, then how many more there are.
    pub fn summary(&self, max: usize) -> String {
        let mut lines: Vec<String> = Vec::new();
        let mut ordered: Vec<&Violation> = self.findings.iter().filter(|v| v.blocks()).collect();
        ordered.extend(self.findings.iter().filter(|v| !v.blocks()));
        let max = max.max(1);
        lines.extend(ordered.iter().take(max).map(ToString::to_string));
        let mut hidden: Vec<&HiddenObjects> = self
            .hidden
            .iter()
            .filter(|h| h.verdict == Verdict::Blocks)
            .collect();
        hidden.extend(self.hidden.iter().filter(|h| h.verdict == Verdict::Warns));
        lines.extend(hidden.iter().map(ToString::to_string));
        let rest = ordered.len().saturating_sub(max);
        let mut out = lines.join("; ");
        if rest > 0 {
            out.push_str(&format!(" (and {rest} more)"));
        }
        out
    }
}

/// One line for a condition message: the first `max` violations and how many more there are.
/// Names every object: for a reader who may see only one namespace use [`summary_for`].
pub fn summary(violations: &[Violation], max: usize) -> String {
    let mut out = violations
        .iter()
        .take(max.max(1))
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    let rest = violations.len().saturating_sub(max.max(1));
    if rest > 0 {
        out.push_str(&format!(" (and {rest} more)"));
    }
    out
}

/// [`summary`] for `viewer`: objects outside the viewer's namespace are only counted
/// ("3 objects outside your namespace are invalid under the new schema").
pub fn summary_for(violations: &[Violation], viewer: Viewer<'_>, max: usize) -> String {
    Assessment::for_viewer(violations.to_vec(), viewer).summary(max)
}
