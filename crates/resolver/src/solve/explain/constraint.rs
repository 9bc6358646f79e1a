//! The parts of an explanation that concern `olm.constraint` requirements.

use windlass_catalog::{Bundle, Constraint};

use super::{BundleRef, Problem, Requirement};
use crate::solve::index::{BundleId, Index};

/// Bundles named when nothing satisfies a constraint; the rest are counted.
const CONSIDERED: usize = 5;
/// How much of an unusable constraint's value is quoted.
const QUOTED: usize = 120;

/// Requirement `r` of `bundle`, a constraint. One that cannot be used is quoted as written.
pub(super) fn requirement(
    bundle: &Bundle,
    r: u32,
    parsed: &Result<Constraint, String>,
) -> Requirement {
    match parsed {
        Ok(c) => Requirement::Constraint {
            message: c.failure_message.clone(),
            constraint: c.to_string(),
        },
        Err(_) => {
            // Constraints follow the package and API requirements in the bundle's list.
            let before = bundle.required_packages().count() + bundle.required_gvks().count();
            let value = bundle
                .constraint_values()
                .nth((r as usize).saturating_sub(before));
            let written = value.as_ref().map(|v| v.to_string()).unwrap_or_default();
            let constraint = match written.char_indices().nth(QUOTED) {
                Some((cut, _)) => format!("{}...", &written[..cut]),
                None => written,
            };
            Requirement::Constraint {
                message: value
                    .as_ref()
                    .and_then(|v| v.get("failureMessage"))
                    .and_then(|m| m.as_str())
                    .filter(|m| !m.trim().is_empty())
                    .map(String::from),
                constraint,
            }
        }
    }
}

/// Why requirement `r` of bundle `b`, a constraint, has no candidate at all.
pub(super) fn nothing_satisfies(ix: &Index<'_>, b: BundleId, r: u32) -> Problem {
    let considered = ix.constraint_considered(b, r);
    Problem::NoBundleSatisfies {
        more_considered: considered.len().saturating_sub(CONSIDERED),
        considered: considered
            .into_iter()
            .take(CONSIDERED)
            .map(|c| BundleRef::of(ix, c))
            .collect(),
    }
}
