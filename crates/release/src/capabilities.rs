//! Cluster capabilities as OpenShift defines them: a baseline set (`None`, `v4.11` ...
//! `vCurrent`) plus capabilities enabled by name, and the rule that an enabled capability is
//! never disabled again (the CVO's `enabledCapabilities` only grows; see OpenShift's
//! "cluster capabilities" documentation). The sets are OpenShift's own, generated from the
//! pinned `github.com/openshift/api` module by `make openshift-api`.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::LazyLock,
};

use serde::Deserialize;

use crate::manifest::Capabilities;

/// The baseline set of a cluster whose spec names none, as on OpenShift.
pub const DEFAULT_BASELINE: &str = "vCurrent";

#[derive(Debug, Deserialize)]
struct SetsFile {
    known: BTreeSet<String>,
    sets: BTreeMap<String, BTreeSet<String>>,
}

static SETS: LazyLock<SetsFile> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../data/openshift-capability-sets.json"))
        .expect("the generated capability sets are valid JSON")
});

/// Every capability name OpenShift knows.
pub fn known() -> &'static BTreeSet<String> {
    &SETS.known
}

/// The names of the baseline sets.
pub fn set_names() -> impl Iterator<Item = &'static str> {
    SETS.sets.keys().map(String::as_str)
}

/// A capabilities spec that cannot be honoured.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CapabilityError {
    #[error("spec.capabilities.baselineCapabilitySet {name:?} is not one of {known}")]
    UnknownSet { name: String, known: String },
    #[error(
        "spec.capabilities.additionalEnabledCapabilities names {names:?}, which are not capabilities (known: {known})"
    )]
    UnknownCapabilities { names: Vec<String>, known: String },
}

/// The capabilities in effect and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Effective {
    pub enabled: BTreeSet<String>,
    /// Enabled only because they were before (the spec no longer asks for them).
    pub kept: BTreeSet<String>,
}

impl Effective {
    /// What manifest inclusion needs: names outside [`known`] are accepted (a newer release
    /// may bring capabilities this one does not know) and are applied only when enabled.
    pub fn inclusion(&self) -> Capabilities {
        Capabilities {
            known: None,
            enabled: self.enabled.clone(),
        }
    }
}

/// The capabilities enabled for `baseline` (default [`DEFAULT_BASELINE`]) plus `additional`,
/// never fewer than `previously_enabled`.
pub fn effective(
    baseline: Option<&str>,
    additional: &[String],
    previously_enabled: &BTreeSet<String>,
) -> Result<Effective, CapabilityError> {
    let name = baseline
        .filter(|b| !b.is_empty())
        .unwrap_or(DEFAULT_BASELINE);
    let Some(set) = SETS.sets.get(name) else {
        return Err(CapabilityError::UnknownSet {
            name: name.to_string(),
            known: set_names().collect::<Vec<_>>().join(", "),
        });
    };
    let unknown: Vec<String> = additional
        .iter()
        .filter(|c| !SETS.known.contains(*c))
        .cloned()
        .collect();
    if !unknown.is_empty() {
        return Err(CapabilityError::UnknownCapabilities {
            names: unknown,
            known: SETS.known.iter().cloned().collect::<Vec<_>>().join(", "),
        });
    }
    let asked: BTreeSet<String> = set.iter().chain(additional).cloned().collect();
    let kept: BTreeSet<String> = previously_enabled.difference(&asked).cloned().collect();
    Ok(Effective {
        enabled: asked.union(previously_enabled).cloned().collect(),
        kept,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_sets_are_openshifts() {
        assert!(SETS.sets["None"].is_empty());
        assert!(SETS.sets["v4.11"].contains("Console") || SETS.sets["v4.11"].contains("baremetal"));
        assert!(SETS.sets["vCurrent"].is_superset(&SETS.sets["v4.11"]));
        assert!(known().contains("Console"));
        assert!(SETS.sets.values().all(|set| set.is_subset(known())));
    }

    #[test]
    fn none_plus_one_enables_that_one_and_unset_is_vcurrent() {
        let one = effective(Some("None"), &["Console".into()], &BTreeSet::new()).unwrap();
        assert_eq!(one.enabled, names(&["Console"]));
        assert!(one.kept.is_empty());
        let current = effective(None, &[], &BTreeSet::new()).unwrap();
        assert_eq!(current.enabled, SETS.sets["vCurrent"]);
    }

    #[test]
    fn an_enabled_capability_stays_enabled_when_the_spec_drops_it() {
        let before = names(&["Console", "Insights"]);
        let after = effective(Some("None"), &["Insights".into()], &before).unwrap();
        assert_eq!(after.enabled, before);
        assert_eq!(after.kept, names(&["Console"]));
    }

    #[test]
    fn unknown_sets_and_names_are_refused_naming_the_field() {
        let set = effective(Some("v3.1"), &[], &BTreeSet::new()).unwrap_err();
        assert!(
            set.to_string().contains("baselineCapabilitySet \"v3.1\""),
            "{set}"
        );
        let name = effective(Some("None"), &["Consle".into()], &BTreeSet::new()).unwrap_err();
        assert!(name.to_string().contains("Consle"), "{name}");
    }
}
