//! What a reconcile records: a new update's status and history entry, refusals, and the one
//! status write.

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use kube::{Api, ResourceExt, runtime::controller::Action};
use windlass_api::{
    ClusterVersion, ClusterVersionStatus, Condition, ConditionStatus,
    clusterversion::{LevelState, LevelStatus, Release, UpdateHistory, UpdateState},
    names::conditions::cluster_version as types,
    set_condition,
};
use windlass_kit::status;
use windlass_release::RunLevel;

use crate::{Context, Error, Loaded, ReleaseApi, levels, openshift, rollback};

use windlass_release::history::{self, MAX_HISTORY};

/// How an update was accepted, for its status and history.
pub struct Started<'a> {
    /// The image as the spec named it.
    pub image: &'a str,
    pub verified: bool,
    pub verified_by: &'a [String],
    pub overridden: &'a str,
}

/// Records a new update to `loaded`: the desired release, every level Pending, and a Partial
/// history entry on top, the history pruned as the CVO prunes it. Returns the images of the
/// entries pruning removed.
pub fn start_update(
    status: &mut ClusterVersionStatus,
    loaded: &Loaded,
    levels: &[(String, &RunLevel)],
    started: &Started<'_>,
    now: Timestamp,
) -> Vec<String> {
    let version = loaded.payload.version().to_string();
    status.desired = Some(Release {
        version: version.clone(),
        image: loaded.image.clone(),
        verified: started.verified,
        verified_by: started.verified_by.to_vec(),
        requested: started.image.to_string(),
        manifest_digest: loaded.plan.manifest_digest.clone(),
    });
    status.levels = pending_levels(levels);
    status.history.insert(
        0,
        UpdateHistory {
            state: UpdateState::Partial,
            version,
            image: loaded.image.clone(),
            verified: started.verified,
            started_time: Time(now),
            completion_time: None,
            accepted_risks: started.overridden.to_string(),
            crossed_irreversible: Vec::new(),
        },
    );
    prune(&mut status.history)
}

/// Every level of the plan, none started.
pub fn pending_levels(levels: &[(String, &RunLevel)]) -> Vec<LevelStatus> {
    levels
        .iter()
        .map(|(name, level)| LevelStatus {
            name: name.clone(),
            state: LevelState::Pending,
            manifests: level.manifests().count() as i64,
            components: levels::components(level),
            started_time: None,
            completion_time: None,
            message: String::new(),
        })
        .collect()
}

/// Prunes `history` to [`MAX_HISTORY`] entries the way the CVO does
/// (`windlass_release::history::prune`); returns the images of the entries removed.
pub fn prune(history: &mut Vec<UpdateHistory>) -> Vec<String> {
    if history.len() <= MAX_HISTORY {
        return Vec::new();
    }
    let kept = history::kept_after_pruning(&rollback::release_history(history), MAX_HISTORY);
    let mut removed = Vec::new();
    let mut index = 0;
    history.retain(|entry| {
        let keep = kept.contains(&index);
        index += 1;
        if !keep {
            removed.push(entry.image.clone());
        }
        keep
    });
    removed
}

/// `first. second`, leaving out what is empty.
pub fn joined(first: String, second: String) -> String {
    match (first.is_empty(), second.is_empty()) {
        (_, true) => first,
        (true, false) => second,
        (false, false) => format!("{first}. {second}"),
    }
}

/// What a reconcile reports with: the object, its status as read, and the time.
pub struct Report<'a> {
    pub ctx: &'a Context,
    pub version: &'a ClusterVersion,
    pub before: &'a ClusterVersionStatus,
    pub now: Timestamp,
}

impl Report<'_> {
    /// Writes `ReleaseAccepted=False` with `reason` and `message` (nothing of the release is
    /// applied), then `then`.
    pub async fn refuse(
        &self,
        mut status: ClusterVersionStatus,
        mut conditions: Vec<Condition>,
        reason: &str,
        message: String,
        then: Action,
    ) -> Result<Action, Error> {
        set_condition(
            &mut conditions,
            Condition::new(
                types::RELEASE_ACCEPTED,
                ConditionStatus::False,
                reason,
                message,
            )
            .observed(self.version.metadata.generation),
            self.now,
        );
        status.conditions = conditions;
        write(self.ctx, self.version, self.before, &status).await?;
        Ok(then)
    }

    /// [`Report::refuse`] for what may change by itself (a registry back, a signature pushed,
    /// a component upgradeable again): looked at again in [`RETRY_REFUSED`].
    pub async fn refuse_for_now(
        &self,
        status: ClusterVersionStatus,
        conditions: Vec<Condition>,
        reason: &str,
        message: String,
    ) -> Result<Action, Error> {
        self.refuse(
            status,
            conditions,
            reason,
            message,
            Action::requeue(RETRY_REFUSED),
        )
        .await
    }
}

/// Says why `version`'s spec cannot be read (`ReleaseAccepted=False`), changing nothing else.
pub async fn refuse_spec(
    ctx: &Context,
    version: &ClusterVersion,
    message: String,
) -> Result<Action, Error> {
    let before = version.status.clone().unwrap_or_default();
    let report = Report {
        ctx,
        version,
        before: &before,
        now: Timestamp::now(),
    };
    let mut status = before.clone();
    let conditions = std::mem::take(&mut status.conditions);
    report
        .refuse(
            status,
            conditions,
            windlass_api::names::reasons::cluster_version::INVALID_SPEC,
            message,
            Action::await_change(),
        )
        .await
}

/// How soon a refusal that may resolve itself is looked at again.
pub const RETRY_REFUSED: std::time::Duration = std::time::Duration::from_secs(30);

/// Writes `status` unless it is what the object already has.
pub async fn write(
    ctx: &Context,
    version: &ClusterVersion,
    before: &ClusterVersionStatus,
    status: &ClusterVersionStatus,
) -> Result<(), Error> {
    if before == status {
        return Ok(());
    }
    if ctx.api == ReleaseApi::OpenShift {
        return openshift::write(&ctx.shell.client, &ctx.namespace, version, status)
            .await
            .map_err(|source| Error::Status { source });
    }
    let api = Api::<ClusterVersion>::all(ctx.shell.client.clone());
    status::apply_status(&api, &version.name_any(), status, None)
        .await
        .map(|_| ())
        .map_err(|source| Error::Status { source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: usize) -> UpdateHistory {
        UpdateHistory {
            state: if i % 4 == 1 {
                UpdateState::Partial
            } else {
                UpdateState::Completed
            },
            version: format!("4.{}.{}", 20 - i / 10, 9 - i % 10),
            image: format!("r@sha256:{i}"),
            verified: true,
            started_time: Time(Timestamp::from_second(2_000_000_000 - i as i64).unwrap()),
            completion_time: None,
            accepted_risks: String::new(),
            crossed_irreversible: Vec::new(),
        }
    }

    #[test]
    fn history_is_pruned_as_the_cvo_prunes_it_and_says_which_payloads_left() {
        let mut history: Vec<UpdateHistory> = (0..=MAX_HISTORY).map(entry).collect();
        let newest = history[0].clone();
        let initial = history[MAX_HISTORY].clone();
        let removed = prune(&mut history);
        assert_eq!(history.len(), MAX_HISTORY);
        assert_eq!(removed.len(), 1);
        assert_eq!(history[0], newest);
        assert_eq!(history.last(), Some(&initial), "the initial entry stays");
        assert!(!history.iter().any(|h| h.image == removed[0]));
        // Not the oldest entry but the least interesting one (a partial z-stream update).
        assert_ne!(removed[0], initial.image);
        let mut short: Vec<UpdateHistory> = (0..5).map(entry).collect();
        assert!(prune(&mut short).is_empty());
        assert_eq!(short.len(), 5);
    }
}
