//! CRD upgrade safety: may a live CustomResourceDefinition be replaced by a new one?
//!
//! Pure code on plain JSON (`apiextensions.k8s.io/v1`, the new CRD already converted): the
//! caller reads the live CRD and its custom resources and passes them in. [`findings`] runs
//! every rule below and gives each finding a verdict: the Blueprint controller refuses an
//! upgrade for any finding that blocks and shows the rest in the plan it previews; [`assess`]
//! is the same for a reader of one namespace; [`check`] is the subset without the
//! schema-to-schema rules (OLM v0's rules and the existing objects). [`unchanged`] says whether
//! writing the new CRD changes anything at all (omitted keys count: the forced apply removes
//! them).
//!
//! | rule (reason) | what | verdict |
//! |---|---|---|
//! | `ScopeChanged` | `spec.scope` differs | blocks |
//! | `StoredVersionRemoved` | a version in the live `status.storedVersions` is gone | blocks |
//! | `ServedVersionRemoved` | a served version is no longer served or is gone (not stored) | warns |
//! | `FieldRemoved` | a property (or map values) no longer in the schema | blocks |
//! | `TypeChanged` | `type` or int-or-string differs | blocks |
//! | `RequiredFieldAdded` | a field becomes required (unless it has a default) | blocks |
//! | `DefaultAdded` / `DefaultChanged` / `DefaultRemoved` | the `default` differs | blocks |
//! | `EnumValuesRemoved` | enum values removed | blocks |
//! | `EnumAdded` | an enum on a node that had none | blocks |
//! | `MaximumTightened` / `MinimumTightened` | bound added, tightened, or made exclusive | blocks |
//! | `MaxLengthTightened` / `MinLengthTightened` | length bound added or tightened | blocks |
//! | `MaxItemsTightened` / `MinItemsTightened` | item count bound added or tightened | blocks |
//! | `MaxPropertiesTightened` / `MinPropertiesTightened` | property count bound added or tightened | blocks |
//! | `PatternChanged` | `pattern` added or changed (removed: allowed, no finding) | blocks |
//! | `FormatChanged` | a string `format` added or changed | blocks |
//! | `MultipleOfChanged` | `multipleOf` added, or changed to one the old step is no multiple of | blocks |
//! | `NullableRemoved` | `nullable` switched off (stored nulls are dropped on read) | warns |
//! | `UnknownFieldsNoLongerPreserved` | `x-kubernetes-preserve-unknown-fields` removed | blocks |
//! | `ListTypeChanged` | list type, list map keys or map type differ | blocks |
//! | `ValidationRulesChanged` | an `x-kubernetes-validations` rule added or changed | warns |
//! | `OtherSchemaChange` | any other keyword changes (junctors, embedded resources, ...) | blocks |
//! | `InvalidExistingObject` | an existing object fails the new schema | blocks |
//! | `ExistingObjectFailsRule` | an existing object fails a new-schema CEL rule | blocks |
//! | `ExistingFieldPruned` | a field of an existing object would be pruned (data loss) | blocks |
//! | `RuleNotEvaluated` | a rule windlass cannot compile or does not implement | warns |
//!
//! Loosening changes (a raised maximum, added enum values, a removed pattern) are not findings;
//! descriptions, titles and examples are ignored. This follows OLM v1 (crdify as
//! operator-controller configures it) with four deliberate differences: a removed pattern, an
//! added `nullable` and a required field that has a default are allowed; a removed `nullable`
//! and new CEL rules only warn, since the existing objects are checked against the rules.
//!
//! Schema rules run on every version both CRDs define, old schema against new, and on every
//! pair of versions the new CRD serves (lower priority against higher, skipped under webhook
//! conversion). Ratcheting: a problem the live CRD already had does not block. It is reported
//! with [`Verdict::Warns`] and `ratcheted` set: a served-version pair whose change the live CRD's
//! same pair already shows, an existing object whose error (or failed rule, or pruned field) it
//! already has under the live schema.
//!
//! Existing objects are checked per version served by both CRDs, each decoded as the API server
//! will read it ([`decode()`]), then validated ([`validate()`]) and, unless a type, required,
//! enum, length or count error already stands (as the API server does), run through its
//! `x-kubernetes-validations` CEL rules. Findings name the object; [`Assessment::for_viewer`] and [`summary_for`] reduce the
//! objects a reader may not see to counts.

mod cel;
mod decode;
mod diff;
mod finding;
mod format;
mod json;
mod objects;
mod unchanged;
pub mod validate;
mod versions;

use serde_json::Value;

pub use decode::decode;
pub use finding::{
    Assessment, HiddenObjects, Verdict, Viewer, Violation, ViolationKind, summary, summary_for,
};
pub use unchanged::unchanged;
pub use validate::{FieldError, FieldErrorKind, validate};
pub use versions::{served_versions, single_version_crd, stored_versions, versions_to_check};

/// Every finding about replacing `live` with `new`, as `viewer` may see them. `existing` are the
/// custom resources as read from the API server (their `apiVersion` tells the version); objects
/// of another group or kind, or of a version not served by both CRDs, are not checked. A `live`
/// that is not an object (no CRD yet) makes creation, which is always safe.
///
/// This is the one call for a plan preview: `Assessment::blocks` says whether the upgrade may
/// go ahead, `Assessment::summary` gives a line for a condition.
pub fn assess(live: &Value, new: &Value, existing: &[Value], viewer: Viewer<'_>) -> Assessment {
    Assessment::for_viewer(findings(live, new, existing), viewer)
}

/// Every finding of [`assess`], unfiltered (a cluster admin's view), in this order: CRD-wide
/// rules, schema rules, existing objects.
pub fn findings(live: &Value, new: &Value, existing: &[Value]) -> Vec<Violation> {
    if !live.is_object() {
        return Vec::new();
    }
    let crd = versions::crd_name(new, live);
    let mut out = versions::crd_rules(&crd, live, new);
    out.extend(versions::schema_rules(&crd, live, new));
    out.extend(objects::ObjectChecker::default().check(&crd, live, new, existing));
    out
}

/// The blocking findings of OLM v0's rules (stored version removed, scope changed) and of the
/// existing objects (schema, CEL rules, pruning), without the schema-to-schema rules. Empty when
/// the replacement is safe by those rules.
pub fn check(live: &Value, new: &Value, existing: &[Value]) -> Vec<Violation> {
    if !live.is_object() {
        return Vec::new();
    }
    let crd = versions::crd_name(new, live);
    let mut out: Vec<Violation> = versions::crd_rules(&crd, live, new)
        .into_iter()
        .filter(|v| v.kind != ViolationKind::ServedVersionRemoved)
        .collect();
    out.extend(objects::ObjectChecker::default().check(&crd, live, new, existing));
    out.retain(Violation::blocks);
    out
}

#[cfg(test)]
mod tests;
