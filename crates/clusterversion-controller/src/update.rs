//! One reconcile of the ClusterVersion: load the desired payload, then apply the first level
//! that is not done and wait for it, recording progress in status after every level.

use std::{collections::BTreeSet, sync::Arc, time::Duration};

use k8s_openapi::{
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::{SignedDuration, Timestamp},
};
use kube::runtime::controller::Action;
use windlass_api::{
    ClusterVersion, Condition, ConditionStatus,
    clusterversion::{HeldBackRelease, LevelState, UpdateProgress, UpdateState},
    names::{conditions::cluster_version as types, reasons::cluster_version as reasons},
    set_condition,
};
use windlass_kit::Notice;
use windlass_release::{
    RunLevel,
    policy::{RollbackKind, RollbackRefusal, check_rollback},
    progress::{
        estimate_levels, keep_durations, kept_timings, level_key, remaining_seconds,
        remaining_words,
    },
};

use windlass_release::operators;

use crate::{
    Context, Error, RESYNC, WAIT, gates, inclusion, levels, payloads, preconditions,
    record::{self, Report, Started, joined, start_update, write},
    rollback, store, updates,
    verify::{self, Acceptance},
};

const DEFAULT_LEVEL_DEADLINE: i64 = 600;
/// How soon a release failing for its operators looks at them again.
const RETRY_OPERATORS: Duration = Duration::from_secs(15);

pub async fn reconcile(version: Arc<ClusterVersion>, ctx: Arc<Context>) -> Result<Action, Error> {
    let now = Timestamp::now();
    let generation = version.metadata.generation;
    let before = version.status.clone().unwrap_or_default();
    let mut status = before.clone();
    status.observed_generation = generation;
    let mut conditions = std::mem::take(&mut status.conditions);
    let set =
        |conditions: &mut Vec<Condition>, type_: &str, ok: bool, reason: &str, message: String| {
            let state = if ok {
                ConditionStatus::True
            } else {
                ConditionStatus::False
            };
            set_condition(
                conditions,
                Condition::new(type_, state, reason, message).observed(generation),
                now,
            );
        };

    let report = Report {
        ctx: &ctx,
        version: &version,
        before: &before,
        now,
    };
    let accepted_risks: BTreeSet<String> = version
        .spec
        .desired_update
        .iter()
        .flat_map(|d| d.accept_risks.iter().cloned())
        .collect();
    // Where the cluster may go, from the update service (when one is configured).
    match updates::retrieve_updates(&ctx, &version, &status, &accepted_risks, now).await {
        Some(Ok((available, conditional))) => {
            let message = format!(
                "{} available and {} conditional updates from {}",
                available.len(),
                conditional.len(),
                version.spec.upstream.as_deref().unwrap_or_default()
            );
            status.available_updates = available;
            status.conditional_updates =
                updates::keep_transition_times(conditional, &before.conditional_updates);
            set(
                &mut conditions,
                types::RETRIEVED_UPDATES,
                true,
                reasons::UPDATES_RETRIEVED,
                message,
            );
        }
        Some(Err(message)) => {
            set(
                &mut conditions,
                types::RETRIEVED_UPDATES,
                false,
                reasons::REMOTE_FAILED,
                message,
            );
        }
        None => {
            status.available_updates.clear();
            status.conditional_updates.clear();
            set(
                &mut conditions,
                types::RETRIEVED_UPDATES,
                false,
                reasons::NO_UPSTREAM,
                "spec.upstream and spec.channel name no update service".into(),
            );
        }
    }
    // Whether a minor update could start now, kept current whether or not one is asked for.
    let running = status
        .history
        .iter()
        .find(|h| h.state == UpdateState::Completed)
        .and_then(|h| semver::Version::parse(&h.version).ok());
    let readings = preconditions::read(&ctx, running.as_ref()).await;
    let blocking = readings
        .as_ref()
        .map(|r| r.not_upgradeable.clone())
        .map_err(Clone::clone);
    if let Ok(blocking) = &blocking {
        let (ok, reason, message) = preconditions::upgradeable(blocking);
        set(&mut conditions, types::UPGRADEABLE, ok, reason, message);
    }
    // The release's operators: their health is part of the verdict on the release.
    if let Ok(readings) = &readings {
        status.operators = operators::summarize(&readings.operators, &before.operators, now);
    }
    let operator_grace = version
        .spec
        .operator_grace_seconds
        .unwrap_or(operators::DEFAULT_GRACE_SECONDS);
    let operators_verdict = operators::verdict(&status.operators, now, operator_grace);
    if let operators::Verdict::Settling { message } = &operators_verdict {
        tracing::debug!(%message, "cluster operators are settling");
    }
    // Which manifests this cluster takes: profile and capabilities.
    let inclusion = match inclusion::options(&version, &status) {
        Ok((options, shown)) => {
            status.capabilities = shown;
            options
        }
        Err(message) => {
            return report
                .refuse(
                    status,
                    conditions,
                    reasons::INVALID_CAPABILITIES,
                    message,
                    Action::await_change(),
                )
                .await;
        }
    };
    let Some(desired) = version.spec.desired_update.clone() else {
        return report
            .refuse(
                status,
                conditions,
                reasons::NO_DESIRED_UPDATE,
                "spec.desiredUpdate names no release".into(),
                Action::await_change(),
            )
            .await;
    };
    let named_image = desired.image.clone().filter(|i| !i.is_empty());
    let (image, update_risks) = match (
        named_image,
        desired.version.as_deref().filter(|v| !v.is_empty()),
    ) {
        (Some(image), _) => (image, Vec::new()),
        // The release already being applied or run: its digest, as pinned.
        (None, Some(wanted))
            if let Some(current) = status.desired.as_ref().filter(|d| d.version == wanted) =>
        {
            (current.image.clone(), Vec::new())
        }
        // A version alone is looked up in what the update service offers.
        (None, Some(wanted)) if version.spec.upstream.is_some() => {
            match updates::resolve(
                wanted,
                &status.available_updates,
                &status.conditional_updates,
                desired.force,
            ) {
                Ok(resolved) => resolved,
                Err((reason, message)) => {
                    return report
                        .refuse_for_now(status, conditions, reason, message)
                        .await;
                }
            }
        }
        _ => {
            return report.refuse(status, conditions, reasons::NO_IMAGE, "spec.desiredUpdate names no image, and no version an update service (spec.upstream, spec.channel) could resolve".into(), Action::await_change()).await;
        }
    };
    // An automatic rollback holds the failed release back until the spec changes.
    let held_back = status
        .held_back
        .clone()
        .filter(|h| Some(h.generation) == generation);
    if held_back.is_none() {
        status.held_back = None;
    }
    // A tag is pinned once: the update keeps applying the digest it first resolved to.
    let pinned = match &held_back {
        Some(held) => held.rollback_to.clone(),
        None => status
            .desired
            .as_ref()
            .filter(|d| d.requested == image)
            .map(|d| d.image.clone())
            .unwrap_or_else(|| image.clone()),
    };
    let loaded = match payloads::load(&ctx, &pinned, version.spec.plain_http, &inclusion).await {
        Ok(loaded) => loaded,
        Err((reason, message)) => {
            set(
                &mut conditions,
                types::FAILING,
                true,
                reason,
                message.clone(),
            );
            return report
                .refuse_for_now(status, conditions, reason, message)
                .await;
        }
    };
    let payload_version = loaded.payload.version().to_string();
    if let Some(wanted) = desired.version.as_deref().filter(|v| !v.is_empty())
        && held_back.is_none()
        && wanted != payload_version
    {
        let message = format!(
            "spec.desiredUpdate.version is {wanted} but payload {} is release {payload_version}",
            loaded.image
        );
        return report
            .refuse(
                status,
                conditions,
                reasons::VERSION_MISMATCH,
                message,
                Action::await_change(),
            )
            .await;
    }
    let new_update =
        status.desired.as_ref().map(|d| d.image.as_str()) != Some(loaded.image.as_str());
    let rollback_kind = if held_back.is_some() {
        Some(RollbackKind::Automatic)
    } else if rollback::is_downgrade(&status.history, loaded.payload.version()) {
        Some(RollbackKind::Manual)
    } else {
        None
    };
    if new_update
        && rollback_kind.is_none()
        && let Some(message) = gates::update_in_progress(&status, &desired, &payload_version)
    {
        return report
            .refuse_for_now(status, conditions, reasons::UPDATE_IN_PROGRESS, message)
            .await;
    }
    // Signatures are checked once, before an update starts; what was decided is recorded. A
    // rollback goes back to content this cluster applied and stored, accepted then.
    let (verified, verified_by, mut overridden) = if new_update && let Some(kind) = rollback_kind {
        let history = rollback::release_history(&status.history);
        match check_rollback(&history, loaded.payload.version(), kind, desired.force) {
            Ok(plan) => {
                let why = match (&held_back, plan.forced.is_empty()) {
                    (Some(held), _) => format!("automatic rollback: {}", held.reason),
                    (None, true) => format!(
                        "rollback from {}",
                        status
                            .history
                            .first()
                            .map(|h| h.version.as_str())
                            .unwrap_or("")
                    ),
                    (None, false) => plan.forced.clone(),
                };
                (plan.target.verified, Vec::new(), why)
            }
            Err(refusal) => {
                let hint = if matches!(refusal, RollbackRefusal::CrossesMinor { .. }) {
                    "; set spec.desiredUpdate.force: true to go back anyway (recorded in history)"
                } else {
                    ""
                };
                return report
                    .refuse(
                        status,
                        conditions,
                        reasons::ROLLBACK_REFUSED,
                        format!("rollback to {payload_version} refused: {refusal}{hint}"),
                        Action::await_change(),
                    )
                    .await;
            }
        }
    } else if new_update {
        let digest = loaded
            .image
            .rsplit_once('@')
            .map(|(_, d)| d)
            .unwrap_or_default();
        let decided =
            match verify::decide(&ctx, &version, &loaded.image, digest, desired.force).await {
                Ok(decided) => decided,
                Err(message) => {
                    return report
                        .refuse_for_now(status, conditions, reasons::VERIFICATION_ERROR, message)
                        .await;
                }
            };
        match decided {
            Acceptance::Accept {
                verified,
                verified_by,
                overridden,
                ..
            } => (verified, verified_by, overridden),
            Acceptance::Refuse { reason, message } => {
                // A signature may be pushed, or a policy written, at any time.
                return report
                    .refuse_for_now(status, conditions, reason, message)
                    .await;
            }
        }
    } else {
        let recorded = status.desired.as_ref().expect("an update in progress");
        let overridden = status
            .history
            .first()
            .map(|h| h.accepted_risks.clone())
            .unwrap_or_default();
        (recorded.verified, recorded.verified_by.clone(), overridden)
    };
    // A forward update: the readiness report and the preconditions.
    if new_update && rollback_kind.is_none() {
        match gates::forward_update(&ctx, &version, &mut status, &loaded, &desired, blocking).await
        {
            Ok(accepted) => overridden = joined(overridden, accepted),
            Err((reason, message)) => {
                return report
                    .refuse_for_now(status, conditions, reason, message)
                    .await;
            }
        }
    }
    if new_update && !update_risks.is_empty() {
        let accepted = format!(
            "Conditional update risks accepted: {}",
            update_risks.join(", ")
        );
        overridden = joined(overridden, accepted);
    }
    let trust = if verified {
        format!("verified by {}", verified_by.join(", "))
    } else if !overridden.is_empty() {
        "forced: not verified".to_string()
    } else {
        "not verified, as the trust policy allows for unsigned payloads".to_string()
    };
    set(
        &mut conditions,
        types::RELEASE_ACCEPTED,
        true,
        reasons::PAYLOAD_LOADED,
        format!(
            "payload loaded: release {payload_version}, image {}, {} manifests in {} levels ({trust})",
            loaded.image,
            loaded.plan.manifest_count(),
            loaded.plan.all_levels().count()
        ),
    );

    let levels: Vec<(String, &RunLevel)> = loaded
        .plan
        .updater
        .iter()
        .map(|l| (level_key(true, l), l))
        .chain(loaded.plan.levels.iter().map(|l| (level_key(false, l), l)))
        .collect();
    if new_update && !loaded.from_store {
        let kept = store::keep(
            &ctx.secrets(),
            &ctx.seal_key,
            &loaded.image,
            &payload_version,
            &loaded.files,
        )
        .await;
        if let Err(why) = kept {
            ctx.shell
                .events
                .publish(
                    &ctx.object_ref(&version),
                    &Notice::warning(
                        reasons::PAYLOAD_NOT_STORED,
                        format!("payload {} is not kept for rollbacks: {why}", loaded.image),
                    ),
                )
                .await;
        }
    }
    if new_update {
        let started = Started {
            image: &image,
            verified,
            verified_by: &verified_by,
            overridden: &overridden,
        };
        let pruned = start_update(&mut status, &loaded, &levels, &started, now);
        // A release no longer in history cannot be rolled back to: its stored payload goes too.
        for image in pruned {
            let still_listed = status.history.iter().any(|h| h.image == image)
                || status.desired.as_ref().is_some_and(|d| d.image == image);
            if !still_listed && let Err(why) = store::forget(&ctx.secrets(), &image).await {
                tracing::warn!(%image, %why, "the stored payload of a pruned release stays");
            }
        }
        ctx.shell
            .events
            .publish(
                &ctx.object_ref(&version),
                &Notice::normal(
                    reasons::APPLYING,
                    format!("updating to {payload_version} ({})", loaded.image),
                ),
            )
            .await;
    }
    // The plan changed under a running release (a capability enabled, another profile, or a
    // release a CVO applied): its levels are looked at afresh, without a new history entry.
    if !new_update
        && !status
            .levels
            .iter()
            .map(|l| &l.name)
            .eq(levels.iter().map(|(name, _)| name))
    {
        status.levels = record::pending_levels(&levels);
    }
    let completed = status
        .history
        .first()
        .is_some_and(|h| h.image == loaded.image && h.state == UpdateState::Completed);
    let automatic_rollback = version.spec.rollback.as_ref().is_some_and(|r| r.automatic);
    let deadline = version
        .spec
        .level_deadline_seconds
        .unwrap_or(DEFAULT_LEVEL_DEADLINE);
    let total = levels.len();
    let unmanaged = levels::unmanaged(&version);
    let estimates = estimate_levels(&loaded.plan, &[kept_timings(&status.level_durations)]);
    for (index, (name, level)) in levels.iter().enumerate() {
        let record = &mut status.levels[index];
        if record.state == LevelState::Done && !completed {
            continue;
        }
        if record.started_time.is_none() {
            record.started_time = Some(Time(now));
        }
        let started = record.started_time.as_ref().map(|t| t.0).unwrap_or(now);
        // Recorded before anything of the level is applied: from here on, no way back.
        if level.irreversible
            && !completed
            && let Some(entry) = status.history.first_mut()
            && !entry.crossed_irreversible.contains(name)
        {
            entry.crossed_irreversible.push(name.clone());
            let mut shown = status.clone();
            shown.conditions = conditions.clone();
            write(&ctx, &version, &before, &shown).await?;
        }
        let record = &mut status.levels[index];
        let waited = (now.as_second() - started.as_second()).max(0);
        match levels::apply_level(&ctx, level, &payload_version, &unmanaged).await {
            Ok(None) => {
                if record.state != LevelState::Done {
                    record.state = LevelState::Done;
                    record.completion_time = Some(Time(now));
                    record.message = String::new();
                    // Written at once: the level order is visible in status as it happens, and a
                    // restart resumes after it.
                    status.progress = None;
                    let mut shown = status.clone();
                    shown.conditions = conditions.clone();
                    write(&ctx, &version, &before, &shown).await?;
                }
            }
            Ok(Some(waiting)) => {
                let failing = waiting.failed || waited > deadline;
                record.state = if failing {
                    LevelState::Failing
                } else {
                    LevelState::Progressing
                };
                record.message = waiting.message.clone();
                let mut what = format!(
                    "level {name} ({} of {total}): waiting for {} {} for {waited} s",
                    index + 1,
                    waiting.object,
                    waiting.message
                );
                // Restoring drift is not an update: there is nothing to estimate.
                let remaining = (!completed)
                    .then(|| remaining_seconds(&estimates, index, waited as f64))
                    .flatten();
                if !completed {
                    what = format!("{what}; {}", remaining_words(remaining));
                }
                status.progress = Some(UpdateProgress {
                    level: name.clone(),
                    position: index as i64 + 1,
                    levels: total as i64,
                    component: waiting.component.clone(),
                    waiting_for: format!("{} {}", waiting.object, waiting.message),
                    since: Some(Time(started)),
                    estimated_completion_time: remaining
                        .map(|r| Time(now + SignedDuration::from_secs(r.round() as i64))),
                });
                let verb = if completed {
                    "Restoring"
                } else {
                    "Working towards"
                };
                set(
                    &mut conditions,
                    types::PROGRESSING,
                    true,
                    reasons::WAITING,
                    format!("{verb} {payload_version}: {what}"),
                );
                if failing {
                    set(
                        &mut conditions,
                        types::FAILING,
                        true,
                        reasons::LEVEL_FAILING,
                        format!(
                            "level {name} is not healthy after {waited} s (deadline {deadline} s): {} {}",
                            waiting.object, waiting.message
                        ),
                    );
                } else {
                    set(
                        &mut conditions,
                        types::FAILING,
                        false,
                        reasons::AS_EXPECTED,
                        String::new(),
                    );
                }
                if !completed {
                    set(
                        &mut conditions,
                        types::AVAILABLE,
                        false,
                        reasons::APPLYING,
                        format!("updating to {payload_version}"),
                    );
                }
                if failing && !completed && held_back.is_none() && automatic_rollback {
                    let failure = format!(
                        "{payload_version} failed at level {name}: {} {}",
                        waiting.object, waiting.message
                    );
                    match rollback::automatic_target(&status, &failure) {
                        Ok(to) => {
                            ctx.shell
                                .events
                                .publish(
                                    &ctx.object_ref(&version),
                                    &Notice::warning(
                                        reasons::ROLLING_BACK,
                                        format!("{failure}; going back to {}", to.version),
                                    ),
                                )
                                .await;
                            status.held_back = Some(HeldBackRelease {
                                image: loaded.image.clone(),
                                version: payload_version.clone(),
                                generation: generation.unwrap_or_default(),
                                reason: failure,
                                rollback_to: to.image,
                            });
                        }
                        Err(refusal) => {
                            set(
                                &mut conditions,
                                types::FAILING,
                                true,
                                reasons::LEVEL_FAILING,
                                format!(
                                    "level {name} is not healthy after {waited} s (deadline {deadline} s): {} {}; automatic rollback refused: {refusal}",
                                    waiting.object, waiting.message
                                ),
                            );
                        }
                    }
                }
                gates::judge_operators(
                    &mut conditions,
                    &operators_verdict,
                    generation,
                    now,
                    failing,
                );
                status.conditions = conditions;
                write(&ctx, &version, &before, &status).await?;
                // Woken by the level's objects changing; the poll is the safety net.
                ctx.drift
                    .follow(&ctx.applier, &loaded.plan.managed_kinds(&unmanaged))
                    .await;
                ctx.drift.wake_on_any_change(true);
                return Ok(Action::requeue(WAIT));
            }
            Err(message) => {
                record.state = LevelState::Failing;
                record.message = message.clone();
                set(
                    &mut conditions,
                    types::FAILING,
                    true,
                    reasons::APPLY_FAILED,
                    format!("level {name}: {message}"),
                );
                set(
                    &mut conditions,
                    types::PROGRESSING,
                    true,
                    reasons::APPLYING,
                    format!(
                        "Working towards {payload_version}: level {name} ({} of {total}) could not be applied",
                        index + 1
                    ),
                );
                status.conditions = conditions;
                write(&ctx, &version, &before, &status).await?;
                return Ok(Action::requeue(Duration::from_secs(15)));
            }
        }
    }
    status.progress = None;
    if let Some(entry) = status.history.first_mut()
        && entry.state == UpdateState::Partial
    {
        entry.state = UpdateState::Completed;
        entry.completion_time = Some(Time(now));
        let finished: Vec<(String, usize, i64)> = status
            .levels
            .iter()
            .filter_map(|level| {
                let started = level.started_time.as_ref()?.0;
                let done = level.completion_time.as_ref()?.0;
                let seconds = done.as_second() - started.as_second();
                Some((level.name.clone(), level.manifests.max(0) as usize, seconds))
            })
            .collect();
        keep_durations(&mut status.level_durations, &finished);
        ctx.shell
            .events
            .publish(
                &ctx.object_ref(&version),
                &Notice::normal(
                    reasons::COMPLETED,
                    format!("cluster version is {payload_version}"),
                ),
            )
            .await;
    }
    set(
        &mut conditions,
        types::AVAILABLE,
        true,
        reasons::COMPLETED,
        format!("Done applying {payload_version}"),
    );
    set(
        &mut conditions,
        types::PROGRESSING,
        false,
        reasons::COMPLETED,
        format!("Cluster version is {payload_version}"),
    );
    set(
        &mut conditions,
        types::FAILING,
        false,
        reasons::AS_EXPECTED,
        String::new(),
    );
    gates::judge_operators(&mut conditions, &operators_verdict, generation, now, false);
    status.conditions = conditions;
    write(&ctx, &version, &before, &status).await?;
    ctx.drift.wake_on_any_change(false);
    // An operator within its grace is looked at again when the grace runs out, a failing one
    // soon (ClusterOperators outside the payload are not watched).
    match operators_verdict {
        operators::Verdict::Healthy => {}
        operators::Verdict::Settling { .. } => {
            return Ok(Action::requeue(Duration::from_secs(
                operator_grace.clamp(1, RESYNC.as_secs() as i64) as u64,
            )));
        }
        operators::Verdict::Failing { .. } => return Ok(Action::requeue(RETRY_OPERATORS)),
    }
    ctx.drift
        .follow(&ctx.applier, &loaded.plan.managed_kinds(&unmanaged))
        .await;
    Ok(Action::requeue(RESYNC))
}
