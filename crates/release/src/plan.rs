//! The plan: what an update applies, in which order, and what may run side by side.
//!
//! The CVO's rules, from its task graph:
//! - files run in file-name order; a run level is the files sharing `0000_<NN>_`, and levels run
//!   strictly one after another;
//! - inside a level, the files of one component (`0000_<NN>_<component>_`) run in order, and
//!   different components may run in parallel;
//! - a Job is a barrier: what comes before it in its level finishes first, the Job runs alone,
//!   then the rest of the level (the CVO splits its task graph on Jobs the same way); a level
//!   therefore has one or more [`Step`]s that run in order;
//! - `manifests/` (the updater's own objects) comes before every release level.
//!
//! windlass's one difference: a file whose name has no `0000_<NN>_<component>_` prefix runs after
//! every level, one file after another, in name order. The CVO keeps such a file at its place in
//! name order, which is also last for every name beginning with a letter (letters sort after
//! digits); only names sorting before `0000_` (`00-a.yaml`) would run earlier there.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::manifest::{
    Action, Exclusion, InclusionOptions, Manifest, ObjectId, ObjectRef, PayloadDir,
};
use crate::payload::Payload;

/// A manifest as the plan applies it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedManifest {
    pub file: String,
    pub document: usize,
    pub object: ObjectRef,
    pub action: Action,
    /// Set by `release.windlass.dev/irreversible: "true"`.
    pub irreversible: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
    /// The object to apply; left out of the JSON form of the plan (it is in the payload).
    #[serde(skip)]
    pub body: serde_json::Value,
}

/// The files of one component inside one step, applied in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComponentTasks {
    /// `None` for files without a run-level prefix.
    pub component: Option<String>,
    pub manifests: Vec<PlannedManifest>,
}

/// Components that may be applied in parallel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub components: Vec<ComponentTasks>,
}

/// One run level: its steps run in order, and the level must be healthy before the next starts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunLevel {
    /// `"30"` as written in the file names; `None` for the files without a prefix.
    pub level: Option<String>,
    /// Once an update starts applying this level, it cannot be rolled back.
    pub irreversible: bool,
    pub steps: Vec<Step>,
}

impl RunLevel {
    pub fn manifests(&self) -> impl Iterator<Item = &PlannedManifest> {
        self.steps
            .iter()
            .flat_map(|s| &s.components)
            .flat_map(|c| &c.manifests)
    }

    pub fn components(&self) -> impl Iterator<Item = &ComponentTasks> {
        self.steps.iter().flat_map(|s| &s.components)
    }

    /// `level 30`, or `the files without a run level`.
    pub fn label(&self) -> String {
        match &self.level {
            Some(level) => format!("level {level}"),
            None => "the files without a run level".into(),
        }
    }
}

/// A manifest that is left out, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExcludedManifest {
    pub file: String,
    pub document: usize,
    pub object: ObjectRef,
    pub reason: Exclusion,
    pub message: String,
}

/// Everything an update to this payload does, in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub version: String,
    /// `manifests/`: the updater's own objects, applied before every release level.
    pub updater: Vec<RunLevel>,
    /// `release-manifests/`.
    pub levels: Vec<RunLevel>,
    pub excluded: Vec<ExcludedManifest>,
    /// `sha256:` over the included manifests in plan order: two plans with the same digest apply
    /// the same objects.
    pub manifest_digest: String,
}

impl Plan {
    /// Updater levels, then release levels.
    pub fn all_levels(&self) -> impl Iterator<Item = &RunLevel> {
        self.updater.iter().chain(&self.levels)
    }

    pub fn manifest_count(&self) -> usize {
        self.all_levels().map(|l| l.manifests().count()).sum()
    }

    /// The kinds (`apiVersion`, `kind`) of the objects this plan keeps matching the payload
    /// (applied or created when missing; not deleted ones), leaving out the objects `overrides`
    /// names: what drift is watched on.
    pub fn managed_kinds(&self, overrides: &[ObjectId]) -> BTreeSet<(String, String)> {
        self.all_levels()
            .flat_map(RunLevel::manifests)
            .filter(|m| m.action != Action::Delete && !m.object.id().overridden_by(overrides))
            .map(|m| (m.object.api_version.clone(), m.object.kind.clone()))
            .collect()
    }

    /// The release levels that cannot be undone once started.
    pub fn irreversible_levels(&self) -> Vec<String> {
        self.levels
            .iter()
            .filter(|l| l.irreversible)
            .map(|l| l.level.clone().unwrap_or_default())
            .collect()
    }
}

impl Payload {
    /// The plan for a cluster described by `options`.
    pub fn plan(&self, options: &InclusionOptions) -> Plan {
        let mut excluded = Vec::new();
        let mut included: Vec<&Manifest> = Vec::new();
        for m in &self.manifests {
            match m.inclusion(options) {
                Ok(()) => included.push(m),
                Err(reason) => excluded.push(ExcludedManifest {
                    file: m.file.clone(),
                    document: m.document,
                    object: m.object.clone(),
                    message: reason.to_string(),
                    reason,
                }),
            }
        }
        let ordered = |dir: PayloadDir| {
            let mut list: Vec<&Manifest> =
                included.iter().copied().filter(|m| m.dir == dir).collect();
            list.sort_by(|a, b| order_key(a).cmp(&order_key(b)));
            list
        };
        let updater = ordered(PayloadDir::Updater);
        let release = ordered(PayloadDir::Release);
        let mut hasher = Sha256::new();
        for m in updater.iter().chain(&release) {
            hasher.update(serde_json::to_vec(&m.body).expect("a JSON value serialises"));
            hasher.update([0]);
        }
        Plan {
            version: self.metadata.version.to_string(),
            updater: levels(&updater),
            levels: levels(&release),
            excluded,
            manifest_digest: format!("sha256:{:x}", hasher.finalize()),
        }
    }
}

/// The total order of manifests inside one directory: prefixed files by name, then the files
/// without a prefix by name; documents of one file in their order.
pub fn order_key(m: &Manifest) -> (bool, &str, usize) {
    let name = m.file.rsplit('/').next().unwrap_or(&m.file);
    (m.file_name.run_level.is_none(), name, m.document)
}

fn planned(m: &Manifest) -> PlannedManifest {
    PlannedManifest {
        file: m.file.clone(),
        document: m.document,
        object: m.object.clone(),
        action: m.action(),
        irreversible: m.irreversible(),
        images: m.images().into_iter().map(|c| c.image).collect(),
        body: m.body.clone(),
    }
}

fn levels(ordered: &[&Manifest]) -> Vec<RunLevel> {
    let mut levels: Vec<RunLevel> = Vec::new();
    for chunk in ordered.chunk_by(|a, b| a.file_name.run_level == b.file_name.run_level) {
        let level = chunk[0].file_name.run_level.clone();
        let mut steps = Vec::new();
        // A Job closes the step before it and is a step of its own.
        let mut current: Vec<&Manifest> = Vec::new();
        for m in chunk {
            if m.is_job() {
                if !current.is_empty() {
                    steps.push(step(&current));
                    current.clear();
                }
                steps.push(step(&[m]));
            } else {
                current.push(m);
            }
        }
        if !current.is_empty() {
            steps.push(step(&current));
        }
        levels.push(RunLevel {
            irreversible: chunk.iter().any(|m| m.irreversible()),
            level,
            steps,
        });
    }
    levels
}

fn step(manifests: &[&Manifest]) -> Step {
    Step {
        components: manifests
            .chunk_by(|a, b| a.file_name.component == b.file_name.component)
            .map(|chunk| ComponentTasks {
                component: chunk[0].file_name.component.clone(),
                manifests: chunk.iter().map(|m| planned(m)).collect(),
            })
            .collect(),
    }
}
