//! `olm.constraint`: a dependency written as a predicate over one candidate bundle.
//!
//! A bundle carrying a constraint needs some bundle that satisfies the predicate installed
//! alongside it (itself included, as in OLM). The predicate is exactly one of
//! - `package {packageName, versionRange}`: a bundle of that package in the range;
//! - `gvk {group, version, kind}`: a bundle that owns that API;
//! - `cel {rule}`: a CEL rule over the candidate's `properties` (see [`cel`]);
//! - `all`, `any`, `not {constraints: [...]}`: every, at least one, or none of the nested
//!   predicates hold for the *same* candidate. So `not` does not forbid anything from being
//!   installed: `all{package foo, not{package foo 1.2.0}}` asks for a foo other than 1.2.0, and a
//!   `not` alone is met by any bundle that matches none of its members, usually the bundle itself.
//!
//! Each level may carry a `failureMessage`, shown when the constraint cannot be met. Parsing is
//! strict, as OLM's is (unknown keys are refused), and goes further where OLM silently picks one
//! meaning: a value naming two predicates, an empty list of constraints, an unreadable range or a
//! CEL rule that does not compile is an error naming the field.

pub mod cel;
mod check;

use std::fmt;

use serde_json::{Map, Value};

use crate::model::{Bundle, Gvk};
use crate::range::VersionRange;

pub use cel::{CelProperties, CelRule, semver_compare};
pub use check::{Unusable, unusable_in_bundle};

/// The property (and `dependencies.yaml`) type that carries a constraint.
pub const CONSTRAINT_TYPE: &str = "olm.constraint";

/// OLM refuses constraint values larger than this many bytes of JSON.
pub const MAX_CONSTRAINT_BYTES: usize = 2 << 16;

/// Nesting deeper than this is refused, so evaluation stays shallow.
pub const MAX_DEPTH: usize = 32;

const PREDICATE_KEYS: [&str; 6] = ["cel", "package", "gvk", "all", "any", "not"];
const VALUE_KEYS: &str = "failureMessage, cel, package, gvk, all, any, not";

/// One parsed constraint: an optional message for people and the predicate.
#[derive(Clone, Debug)]
pub struct Constraint {
    pub failure_message: Option<String>,
    pub predicate: Predicate,
}

/// What a candidate bundle must satisfy.
#[derive(Clone, Debug)]
pub enum Predicate {
    Package {
        package: String,
        range: VersionRange,
    },
    Gvk(Gvk),
    Cel(CelRule),
    All(Vec<Constraint>),
    Any(Vec<Constraint>),
    Not(Vec<Constraint>),
}

/// Why a constraint value cannot be used, with the field inside the value (a JSON path such as
/// `all.constraints[1].package.versionRange`; empty for the value itself).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConstraintError {
    pub field: String,
    pub problem: ConstraintProblem,
}

impl fmt::Display for ConstraintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.problem)
        } else {
            write!(f, "{}: {}", self.field, self.problem)
        }
    }
}

impl std::error::Error for ConstraintError {}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConstraintProblem {
    #[error("must be a mapping, found {found}")]
    NotAMapping { found: &'static str },
    #[error("must be a string, found {found}")]
    NotAString { found: &'static str },
    #[error("must be a list of constraints, found {found}")]
    NotAList { found: &'static str },
    #[error("unknown key {key:?} (known: {known})")]
    UnknownKey { key: String, known: &'static str },
    #[error("is missing")]
    Missing,
    #[error("is empty")]
    Empty,
    #[error("names no predicate; give exactly one of cel, package, gvk, all, any, not")]
    NoPredicate,
    #[error("names {kinds}; give exactly one of cel, package, gvk, all, any, not")]
    SeveralPredicates { kinds: String },
    #[error("`none` is deprecated and OLM does not evaluate it; write `not`")]
    DeprecatedNone,
    #[error("lists no constraint")]
    EmptyList,
    #[error("the range {range:?} cannot be read: {error}")]
    BadRange { range: String, error: String },
    #[error("the CEL rule does not compile: {error}")]
    Cel { error: String },
    #[error(
        "the value is {size} bytes of JSON; OLM refuses constraints over {MAX_CONSTRAINT_BYTES}"
    )]
    TooLarge { size: usize },
    #[error("constraints nest deeper than {MAX_DEPTH} levels")]
    TooDeep,
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

fn join(field: &str, key: &str) -> String {
    if field.is_empty() {
        key.to_string()
    } else {
        format!("{field}.{key}")
    }
}

fn err(field: impl Into<String>, problem: ConstraintProblem) -> ConstraintError {
    ConstraintError {
        field: field.into(),
        problem,
    }
}

fn mapping<'v>(value: &'v Value, field: &str) -> Result<&'v Map<String, Value>, ConstraintError> {
    value.as_object().ok_or_else(|| {
        err(
            field,
            ConstraintProblem::NotAMapping {
                found: kind_of(value),
            },
        )
    })
}

/// Refuses keys outside `known` (OLM decodes with unknown fields disallowed).
fn known_keys(
    map: &Map<String, Value>,
    field: &str,
    known: &'static str,
) -> Result<(), ConstraintError> {
    let allowed: Vec<&str> = known.split(", ").collect();
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(key) => Err(err(
            join(field, key),
            ConstraintProblem::UnknownKey {
                key: key.clone(),
                known,
            },
        )),
        None => Ok(()),
    }
}

/// A required, non-empty string field.
fn text(map: &Map<String, Value>, field: &str, key: &str) -> Result<String, ConstraintError> {
    let path = join(field, key);
    match map.get(key) {
        None | Some(Value::Null) => Err(err(path, ConstraintProblem::Missing)),
        Some(Value::String(s)) if s.trim().is_empty() => Err(err(path, ConstraintProblem::Empty)),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(err(
            path,
            ConstraintProblem::NotAString {
                found: kind_of(other),
            },
        )),
    }
}

impl Constraint {
    /// Reads an `olm.constraint` value (the `value` of the property or dependency entry).
    pub fn parse(value: &Value) -> Result<Constraint, ConstraintError> {
        let size = serde_json::to_vec(value).map(|v| v.len()).unwrap_or(0);
        if size > MAX_CONSTRAINT_BYTES {
            return Err(err("", ConstraintProblem::TooLarge { size }));
        }
        parse_at(value, "", 0)
    }

    /// Whether `candidate` satisfies this constraint.
    pub fn matches(&self, candidate: &Candidate<'_>) -> bool {
        match &self.predicate {
            Predicate::Package { package, range } => {
                candidate.bundle.package == *package && range.matches(&candidate.bundle.version)
            }
            Predicate::Gvk(gvk) => candidate.bundle.provided_gvks().any(|g| g == gvk),
            Predicate::Cel(rule) => rule.matches(candidate.properties()),
            Predicate::All(members) => members.iter().all(|m| m.matches(candidate)),
            Predicate::Any(members) => members.iter().any(|m| m.matches(candidate)),
            Predicate::Not(members) => !members.iter().any(|m| m.matches(candidate)),
        }
    }

    /// Whether any predicate inside is a CEL rule (those read the candidate's properties).
    pub fn uses_cel(&self) -> bool {
        match &self.predicate {
            Predicate::Cel(_) => true,
            Predicate::All(m) | Predicate::Any(m) | Predicate::Not(m) => {
                m.iter().any(Constraint::uses_cel)
            }
            Predicate::Package { .. } | Predicate::Gvk(_) => false,
        }
    }
}

fn parse_at(value: &Value, field: &str, depth: usize) -> Result<Constraint, ConstraintError> {
    if depth > MAX_DEPTH {
        return Err(err(field, ConstraintProblem::TooDeep));
    }
    let map = mapping(value, field)?;
    if map.contains_key("none") {
        return Err(err(join(field, "none"), ConstraintProblem::DeprecatedNone));
    }
    known_keys(map, field, VALUE_KEYS)?;
    let failure_message = match map.get("failureMessage") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()).filter(|s| !s.trim().is_empty()),
        Some(other) => {
            return Err(err(
                join(field, "failureMessage"),
                ConstraintProblem::NotAString {
                    found: kind_of(other),
                },
            ));
        }
    };
    let kinds: Vec<&str> = PREDICATE_KEYS
        .into_iter()
        .filter(|k| map.get(*k).is_some_and(|v| !v.is_null()))
        .collect();
    let kind = match kinds.as_slice() {
        [] => return Err(err(field, ConstraintProblem::NoPredicate)),
        [one] => *one,
        several => {
            return Err(err(
                field,
                ConstraintProblem::SeveralPredicates {
                    kinds: several.join(" and "),
                },
            ));
        }
    };
    let at = join(field, kind);
    let inner = mapping(&map[kind], &at)?;
    let predicate = match kind {
        "package" => {
            known_keys(inner, &at, "packageName, versionRange")?;
            let package = text(inner, &at, "packageName")?;
            let written = text(inner, &at, "versionRange")?;
            let range = VersionRange::parse(&written).map_err(|e| {
                err(
                    join(&at, "versionRange"),
                    ConstraintProblem::BadRange {
                        range: written.clone(),
                        error: e.to_string(),
                    },
                )
            })?;
            Predicate::Package { package, range }
        }
        "gvk" => {
            known_keys(inner, &at, "group, version, kind")?;
            // The core group is the empty string, so only version and kind must be present.
            let group = match inner.get("group") {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => s.clone(),
                Some(other) => {
                    return Err(err(
                        join(&at, "group"),
                        ConstraintProblem::NotAString {
                            found: kind_of(other),
                        },
                    ));
                }
            };
            Predicate::Gvk(Gvk {
                group: group.into(),
                version: text(inner, &at, "version")?.into(),
                kind: text(inner, &at, "kind")?.into(),
            })
        }
        "cel" => {
            known_keys(inner, &at, "rule")?;
            let rule = text(inner, &at, "rule")?;
            let compiled = CelRule::compile(&rule)
                .map_err(|error| err(join(&at, "rule"), ConstraintProblem::Cel { error }))?;
            Predicate::Cel(compiled)
        }
        compound => {
            known_keys(inner, &at, "constraints")?;
            let list_at = join(&at, "constraints");
            let list = match inner.get("constraints") {
                None | Some(Value::Null) => {
                    return Err(err(list_at, ConstraintProblem::Missing));
                }
                Some(Value::Array(list)) if list.is_empty() => {
                    return Err(err(list_at, ConstraintProblem::EmptyList));
                }
                Some(Value::Array(list)) => list,
                Some(other) => {
                    return Err(err(
                        list_at,
                        ConstraintProblem::NotAList {
                            found: kind_of(other),
                        },
                    ));
                }
            };
            let members = list
                .iter()
                .enumerate()
                .map(|(i, m)| parse_at(m, &format!("{list_at}[{i}]"), depth + 1))
                .collect::<Result<Vec<_>, _>>()?;
            match compound {
                "all" => Predicate::All(members),
                "any" => Predicate::Any(members),
                _ => Predicate::Not(members),
            }
        }
    };
    Ok(Constraint {
        failure_message,
        predicate,
    })
}

/// One bundle being weighed against constraints; its CEL view is built at most once.
pub struct Candidate<'a> {
    bundle: &'a Bundle,
    properties: CandidateProperties<'a>,
}

enum CandidateProperties<'a> {
    Shared(&'a CelProperties),
    Own(std::cell::OnceCell<CelProperties>),
}

impl<'a> Candidate<'a> {
    pub fn new(bundle: &'a Bundle) -> Candidate<'a> {
        Candidate {
            bundle,
            properties: CandidateProperties::Own(std::cell::OnceCell::new()),
        }
    }

    /// A candidate whose CEL view was built beforehand (callers weighing one bundle against many
    /// constraints keep it).
    pub fn with_properties(bundle: &'a Bundle, properties: &'a CelProperties) -> Candidate<'a> {
        Candidate {
            bundle,
            properties: CandidateProperties::Shared(properties),
        }
    }

    pub fn bundle(&self) -> &'a Bundle {
        self.bundle
    }

    fn properties(&self) -> &CelProperties {
        match &self.properties {
            CandidateProperties::Shared(p) => p,
            CandidateProperties::Own(cell) => cell.get_or_init(|| CelProperties::of(self.bundle)),
        }
    }
}

/// A short, one-line rendering for explanations: `any{package acme-db >=1.1.0, gvk ...}`.
impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |f: &mut fmt::Formatter<'_>, name: &str, members: &[Constraint]| {
            write!(f, "{name}{{")?;
            for (i, m) in members.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{m}")?;
            }
            f.write_str("}")
        };
        match &self.predicate {
            Predicate::Package { package, range } => write!(f, "package {package} {range}"),
            Predicate::Gvk(g) if g.group.is_empty() => write!(f, "gvk {}/{}", g.version, g.kind),
            Predicate::Gvk(g) => write!(f, "gvk {}/{} {}", g.group, g.version, g.kind),
            Predicate::Cel(rule) => write!(f, "cel{{{}}}", rule.source()),
            Predicate::All(m) => list(f, "all", m),
            Predicate::Any(m) => list(f, "any", m),
            Predicate::Not(m) => list(f, "not", m),
        }
    }
}

#[cfg(test)]
mod tests;
