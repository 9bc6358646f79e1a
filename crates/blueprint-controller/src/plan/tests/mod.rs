//! A small model of the cluster around one Blueprint. It plays the reconciler's part exactly
//! as far as the plan relies on it (answers checks, writes status, patches bookkeeping, stores
//! revision content, applies CSVs) and the CSV controller's part on request, so a test reads as
//! a scenario: subscribe, settle, let the CSV succeed or fail, settle again, look.

mod approval;
mod operands;
mod rollback;
mod transitions;

use k8s_openapi::jiff::Timestamp;
use windlass_api::{
    BlueprintSpec, BlueprintStatus, CsvPhase,
    blueprint::{BlueprintPhase, PlanPreview, ResolvedBundle, RevisionOutcome, RevisionRecord},
    condition::{Condition, ConditionStatus},
};

use super::*;

pub(super) const NAME: &str = "db";

pub(super) fn csv(version: &str) -> String {
    format!("acme-db.v{version}")
}

pub(super) fn digest(version: &str) -> String {
    format!("sha256:{}", version.replace('.', ""))
}

pub(super) fn bundle(version: &str) -> ResolvedBundle {
    ResolvedBundle {
        package: "acme-db".into(),
        cluster_service_version_name: csv(version),
        version: version.into(),
        catalog: Some("builtin".into()),
        image: None,
        digest: Some(digest(version)),
    }
}

pub(super) struct World {
    pub generation: i64,
    pub spec: BlueprintSpec,
    pub status: BlueprintStatus,
    pub stored: Vec<StoredRevision>,
    pub csvs: Vec<ObservedCsv>,
    pub dependencies: Vec<DependencyState>,
    /// What the validate stage reports when asked.
    pub validation: Validation,
    /// What the rollback-source check reports when asked.
    pub rollback_source: Result<(), Refusal>,
    /// Part of every plan digest, standing for what the digest binds besides the stored
    /// settings (the install identity, the target namespaces a policy allows).
    pub placement: String,
    /// The preview requests answered, in order.
    pub previews: Vec<PreviewRequest>,
    /// What the operand steps report when asked.
    pub snapshot: Result<Snapshotted, Refusal>,
    pub restore: Result<String, Refusal>,
    pub rehearsal: Result<String, Refusal>,
    /// The operand steps asked for, in order.
    pub operand_steps: Vec<Need>,
    pub now: Timestamp,
}

impl World {
    /// A Blueprint the Subscription just created for acme-db 1.0.0.
    pub fn new() -> World {
        World {
            generation: 1,
            spec: BlueprintSpec {
                package: "acme-db".into(),
                cluster_service_version_name: csv("1.0.0"),
                bundle: Some(bundle("1.0.0")),
                progress_deadline_seconds: Some(60),
                ..BlueprintSpec::default()
            },
            status: BlueprintStatus::default(),
            stored: Vec::new(),
            csvs: Vec::new(),
            dependencies: Vec::new(),
            validation: Validation::Ready {
                kept_crds: Vec::new(),
                verified_by: Vec::new(),
                image_rewrites: Vec::new(),
                withdrawn: None,
                findings: Vec::new(),
            },
            rollback_source: Ok(()),
            placement: "as installer".into(),
            previews: Vec::new(),
            snapshot: Ok(Snapshotted {
                reason: windlass_api::names::reasons::blueprint::SNAPSHOT_TAKEN,
                message: "kept 3 Database".into(),
            }),
            restore: Ok("restored 3".into()),
            rehearsal: Ok("would apply".into()),
            operand_steps: Vec::new(),
            now: Timestamp::from_second(1_800_000_000).unwrap(),
        }
    }

    /// One decision with the given facts, nothing committed.
    pub fn decide_with(&self, facts: &Facts) -> Decision {
        decide(&Input {
            name: NAME,
            generation: self.generation,
            spec: &self.spec,
            status: &self.status,
            stored: &self.stored,
            csvs: &self.csvs,
            dependencies: &self.dependencies,
            facts,
            now: self.now,
        })
    }

    /// One reconcile: decide, answering checks the way the reconciler does, then commit.
    pub fn reconcile(&mut self) -> Decision {
        let mut facts = Facts::default();
        for _ in 0..8 {
            let decision = self.decide_with(&facts);
            match &decision.action {
                Action::Check(Need::Validate(request)) => {
                    self.store_content(request);
                    facts.validation = Some(self.validation.clone());
                    facts.plan_digest = Some(self.plan_digest(request.revision));
                }
                Action::Check(Need::Preview(request)) => {
                    let digest = facts.plan_digest.clone().expect("validated first");
                    facts.preview = Some(PlanPreview {
                        revision: request.apply.content.revision,
                        summary: format!("{} to {}", request.kind, request.apply.content.csv_name),
                        secret: format!("{NAME}.r{}.plan", request.apply.content.revision),
                        checksum: format!("sha256:stored-{digest}"),
                        digest,
                        ..PlanPreview::default()
                    });
                    self.previews.push(*request.clone());
                }
                Action::Check(Need::RollbackSource { revision }) => {
                    facts.rollback_source = Some((*revision, self.rollback_source.clone()));
                }
                Action::Check(need @ Need::Snapshot { revision, .. }) => {
                    self.operand_steps.push(need.clone());
                    facts.snapshot = Some((*revision, self.snapshot.clone()));
                }
                Action::Check(need @ Need::RestoreOperands { revision, .. }) => {
                    self.operand_steps.push(need.clone());
                    facts.restore = Some((*revision, self.restore.clone()));
                }
                Action::Check(need @ Need::Rehearse { revision, .. }) => {
                    self.operand_steps.push(need.clone());
                    facts.rehearsal = Some((*revision, self.rehearsal.clone()));
                }
                _ => {
                    self.commit(&decision);
                    return decision;
                }
            }
        }
        panic!("the plan kept asking for facts");
    }

    /// Reconciles until a decision writes nothing new (at most a few rounds).
    pub fn settle(&mut self) -> Decision {
        let mut last = self.reconcile();
        for _ in 0..6 {
            let before = (self.status.clone(), self.spec.clone());
            let next = self.reconcile();
            if (self.status.clone(), self.spec.clone()) == before {
                return next;
            }
            last = next;
        }
        last
    }

    /// The plan digest of a stored revision: its content and settings, and the placement.
    pub fn plan_digest(&self, revision: i64) -> String {
        let stored = self
            .stored
            .iter()
            .find(|s| s.revision == revision)
            .expect("validated content is stored");
        let settings = stored.settings.clone().unwrap_or_default();
        format!(
            "sha256:{}|{:?}|{:?}|{:?}|{}",
            stored.csv_name,
            settings.digest,
            settings.config,
            settings.target_namespaces,
            self.placement
        )
    }

    /// The dereference stage: a revision's content is stored before anything is applied.
    fn store_content(&mut self, request: &ContentRequest) {
        if self.stored.iter().any(|s| s.revision == request.revision) {
            return;
        }
        let record = self.record(request.revision).clone();
        let settings = match &request.source {
            Source::Catalog { digest, .. } => Settings {
                digest: digest.clone(),
                config: self.spec.config.clone(),
                target_namespaces: self.spec.target_namespaces.clone(),
            },
            Source::Stored { revision } => self
                .stored
                .iter()
                .find(|s| s.revision == *revision)
                .and_then(|s| s.settings.clone())
                .expect("a rollback source is stored"),
        };
        self.stored.push(StoredRevision {
            revision: request.revision,
            csv_name: record.cluster_service_version_name,
            version: record.version,
            settings: Some(settings),
        });
    }

    fn commit(&mut self, decision: &Decision) {
        self.status = decision.status.clone();
        if let Some(b) = &decision.bookkeeping {
            self.spec.revision = b.revision;
            self.spec.old_version = b.old_version.clone();
            self.spec.old_cluster_service_version_name = b.old_cluster_service_version_name.clone();
            if let Some(approved) = b.approved {
                self.spec.approved = approved;
            }
            if let Some(approved_plan) = &b.approved_plan {
                self.spec.approved_plan = approved_plan.clone();
            }
            if let Some(accepted) = &b.accepted_findings {
                self.spec.accepted_findings = accepted.clone().unwrap_or_default();
            }
            self.generation += 1;
        }
        self.stored
            .retain(|s| !decision.prune_revisions.contains(&s.revision));
        if let Action::Apply(plan) = &decision.action {
            self.apply(plan);
        }
    }

    /// What the apply stage does to CSVs. A spec change bumps the generation, so the CSV's
    /// status is stale until the CSV controller looks again.
    fn apply(&mut self, plan: &ApplyPlan) {
        for name in &plan.clear_supersedes {
            let c = self.csv_mut(name);
            c.supersedes = None;
            c.generation = c.generation.map(|g| g + 1);
        }
        let revision = plan.content.revision;
        let name = plan.content.csv_name.clone();
        match self.csvs.iter_mut().find(|c| c.name == name) {
            Some(c) => {
                if c.revision != Some(revision) || c.supersedes != plan.supersedes {
                    c.generation = c.generation.map(|g| g + 1);
                }
                c.revision = Some(revision);
                c.supersedes = plan.supersedes.clone();
            }
            None => self.csvs.push(ObservedCsv {
                name,
                revision: Some(revision),
                generation: Some(1),
                supersedes: plan.supersedes.clone(),
                ..ObservedCsv::default()
            }),
        }
        self.csvs.retain(|c| !plan.delete_csvs.contains(&c.name));
    }

    /// The CSV controller reports a phase for the CSV's current spec.
    pub fn csv_reports(&mut self, version: &str, phase: CsvPhase) {
        let now = self.now;
        let c = self.csv_mut(&csv(version));
        c.observed_generation = c.generation;
        c.phase = Some(phase);
        c.reason = format!("{phase:?}Reason");
        c.message = format!("{phase:?} message");
        if c.install_start.is_none() || phase == CsvPhase::Installing {
            c.install_start = Some(now);
        }
    }

    /// What the CSV controller does to a CSV once its successor Succeeded.
    pub fn csv_replaced(&mut self, version: &str) {
        self.csvs.retain(|c| c.name != csv(version));
    }

    fn csv_mut(&mut self, name: &str) -> &mut ObservedCsv {
        self.csvs
            .iter_mut()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no CSV {name}"))
    }

    /// The Subscription (or a person) changes the target; the generation goes up.
    pub fn subscribe_to(&mut self, version: &str) {
        self.spec.cluster_service_version_name = csv(version);
        self.spec.bundle = Some(bundle(version));
        self.generation += 1;
    }

    /// A person sets the target alone, as `windlass rollback` does; the bundle stays.
    pub fn pin(&mut self, version: &str) {
        self.spec.cluster_service_version_name = csv(version);
        self.generation += 1;
    }

    pub fn tick(&mut self, seconds: i64) {
        self.now = self
            .now
            .checked_add(k8s_openapi::jiff::SignedDuration::from_secs(seconds))
            .unwrap();
    }

    /// Installs `versions` one after the other, each to Completed.
    pub fn installed(versions: &[&str]) -> World {
        let mut world = World::new();
        for (i, version) in versions.iter().enumerate() {
            if i > 0 {
                world.subscribe_to(version);
            }
            world.settle();
            world.csv_reports(version, CsvPhase::Succeeded);
            world.settle();
            if i > 0 {
                world.csv_replaced(versions[i - 1]);
            }
            assert_eq!(
                world.phase(),
                BlueprintPhase::Succeeded,
                "installing {version}"
            );
        }
        world
    }

    pub fn phase(&self) -> BlueprintPhase {
        self.status.phase.expect("a phase")
    }

    pub fn record(&self, revision: i64) -> &RevisionRecord {
        self.status
            .history
            .iter()
            .find(|r| r.revision == revision)
            .unwrap_or_else(|| panic!("no record of revision {revision}"))
    }

    pub fn outcomes(&self) -> Vec<(i64, String, RevisionOutcome)> {
        self.status
            .history
            .iter()
            .map(|r| (r.revision, r.version.clone(), r.outcome))
            .collect()
    }

    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.status.conditions.iter().find(|c| c.type_ == type_)
    }

    pub fn condition_is(&self, type_: &str, status: ConditionStatus, reason: &str) -> bool {
        self.condition(type_)
            .is_some_and(|c| c.status == status && c.reason == reason)
    }

    pub fn step(&self, name: &str) -> (String, String) {
        let s = self
            .status
            .plan
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no step {name}"));
        (s.status.clone(), s.message.clone())
    }
}
