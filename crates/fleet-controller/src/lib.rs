//! The fleet controller: runs in the hub. For each `Rollout` it reads the Fleet's member
//! clusters (kubeconfig Secrets in the manager's namespace), asks every member what it shows of
//! the target, lets `windlass_fleet::decide` choose the next step, makes the writes it names in
//! the members (a Subscription or a ClusterVersion's desired update, an approval of a member's
//! own plan, a rollback to the member's own stored revision) and reports in the Rollout's
//! status. Members keep reconciling on their own: the hub going away changes nothing they run.
//!
//! Each `Fleet`'s status lists the members it selects.

mod members;

use std::{collections::BTreeMap, future::Future, sync::Arc, time::Duration};

use futures::StreamExt;
use k8s_openapi::{api::core::v1::Secret, jiff::Timestamp};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::ListParams,
    runtime::{controller::Action, reflector::ObjectRef, watcher},
};
use windlass_api::{
    condition::{Condition, ConditionStatus, set_condition},
    fleet::{Fleet, FleetStatus, Rollout, RolloutPhase, RolloutStatus},
    names::{conditions, controllers, labels, reasons},
    selector::label_selector_matches,
};
use windlass_fleet::{Input, Seen, decide};
use windlass_kit::{
    Metrics, ReconcileError, Scope, Shell, Stage, events::Notice, runner, status, triggers,
};

pub use members::MEMBER_TIMEOUT;

/// How often an active rollout looks at its members again.
const ACTIVE_REQUEUE: Duration = Duration::from_secs(10);
/// How often a settled one (done, halted, paused) does, to keep its view current.
const SETTLED_REQUEUE: Duration = Duration::from_secs(300);
/// Members looked at side by side.
const PARALLEL_MEMBERS: usize = 32;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("reading {what}: {source}")]
    Read {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("writing the status of {what}: {source}")]
    Write {
        what: String,
        #[source]
        source: kube::Error,
    },
}

impl ReconcileError for Error {
    fn stage(&self) -> Stage {
        match self {
            Error::Read { .. } => Stage::Read,
            Error::Write { .. } => Stage::Report,
        }
    }

    fn is_conflict(&self) -> bool {
        match self {
            Error::Read { source, .. } | Error::Write { source, .. } => {
                matches!(source, kube::Error::Api(s) if s.code == 409)
            }
        }
    }
}

pub struct Context {
    pub shell: Shell,
    /// The hub's manager namespace, where member Secrets live.
    pub namespace: String,
    clients: members::Clients,
}

/// Runs the Rollout and Fleet controllers until `shutdown` resolves.
pub async fn run(
    client: Client,
    namespace: String,
    metrics: Arc<dyn Metrics>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let ctx = Arc::new(Context {
        shell: Shell::new(
            client.clone(),
            Scope::cluster(),
            controllers::FLEET,
            metrics,
        ),
        namespace: namespace.clone(),
        clients: members::Clients::default(),
    });
    let member_secrets = || {
        (
            Api::<Secret>::namespaced(client.clone(), &namespace),
            watcher::Config::default().labels(labels::FLEET_MEMBER),
        )
    };
    let (shutdown_tx, shutdown_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = shutdown_tx.send(true);
    });
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };

    let rollouts = runner::controller_for_changes(
        Api::<Rollout>::all(client.clone()),
        watcher::Config::default(),
        triggers::besides_status,
    );
    let known = rollouts.store();
    let by_fleet = known.clone();
    let (secrets, secret_config) = member_secrets();
    let rollout_results = rollouts
        // A member joining, leaving or changing its labels or credentials: every rollout looks.
        .watches(secrets, secret_config, move |_secret: Secret| {
            known
                .state()
                .iter()
                .map(|r| ObjectRef::from_obj(&**r))
                .collect::<Vec<_>>()
        })
        .watches(
            Api::<Fleet>::all(client.clone()),
            watcher::Config::default(),
            move |fleet: Fleet| {
                let name = fleet.name_any();
                by_fleet
                    .state()
                    .iter()
                    .filter(|r| r.spec.fleet == name)
                    .map(|r| ObjectRef::from_obj(&**r))
                    .collect::<Vec<_>>()
            },
        )
        .graceful_shutdown_on(stopped(shutdown_rx.clone()))
        .run(
            |rollout, ctx: Arc<Context>| async move {
                runner::observed(
                    ctx.shell.metrics.as_ref(),
                    rollout.as_ref(),
                    reconcile(rollout.clone(), ctx.clone()),
                )
                .await
            },
            runner::error_policy,
            ctx.clone(),
        );

    let fleets = runner::controller_for_changes(
        Api::<Fleet>::all(client.clone()),
        watcher::Config::default(),
        triggers::besides_status,
    );
    let all_fleets = fleets.store();
    let (secrets, secret_config) = member_secrets();
    let fleet_results = fleets
        .watches(secrets, secret_config, move |_secret: Secret| {
            all_fleets
                .state()
                .iter()
                .map(|f| ObjectRef::from_obj(&**f))
                .collect::<Vec<_>>()
        })
        .graceful_shutdown_on(stopped(shutdown_rx))
        .run(
            |fleet, ctx: Arc<Context>| async move {
                runner::observed(
                    ctx.shell.metrics.as_ref(),
                    fleet.as_ref(),
                    reconcile_fleet(fleet.clone(), ctx.clone()),
                )
                .await
            },
            runner::error_policy,
            ctx,
        );
    futures::join!(runner::drain(rollout_results), runner::drain(fleet_results));
}

/// The member Secrets of the hub, and those `fleet` selects.
async fn fleet_members(ctx: &Context, fleet: &Fleet) -> Result<Vec<members::Registered>, Error> {
    let secrets = Api::<Secret>::namespaced(ctx.shell.client.clone(), &ctx.namespace)
        .list(&ListParams::default().labels(labels::FLEET_MEMBER))
        .await
        .map_err(|source| Error::Read {
            what: format!("member Secrets in {}", ctx.namespace),
            source,
        })?;
    let all = members::registered(&secrets.items);
    ctx.clients
        .retain(&all.iter().map(|m| m.secret.clone()).collect::<Vec<_>>());
    Ok(all
        .into_iter()
        .filter(|m| {
            fleet
                .spec
                .selector
                .as_ref()
                .is_none_or(|s| label_selector_matches(s, &m.member.labels))
        })
        .collect())
}

pub async fn reconcile_fleet(fleet: Arc<Fleet>, ctx: Arc<Context>) -> Result<Action, Error> {
    let chosen = fleet_members(&ctx, &fleet).await?;
    let mut names: Vec<String> = chosen.into_iter().map(|m| m.member.name).collect();
    names.sort();
    names.dedup();
    let mut wanted = FleetStatus {
        member_count: names.len() as i64,
        members: names,
        conditions: fleet.status.clone().unwrap_or_default().conditions,
        observed_generation: fleet.meta().generation,
    };
    let message = format!("{} member clusters selected", wanted.member_count);
    set_condition(
        &mut wanted.conditions,
        Condition::new(
            conditions::fleet::READY,
            ConditionStatus::True,
            reasons::rollout::MEMBERS_SELECTED,
            message,
        )
        .observed(wanted.observed_generation),
        Timestamp::now(),
    );
    if fleet.status.as_ref() != Some(&wanted) {
        status::apply_status(
            &Api::<Fleet>::all(ctx.shell.client.clone()),
            &fleet.name_any(),
            &wanted,
            None,
        )
        .await
        .map_err(|source| Error::Write {
            what: format!("Fleet {}", fleet.name_any()),
            source,
        })?;
    }
    Ok(Action::requeue(SETTLED_REQUEUE))
}

pub async fn reconcile(rollout: Arc<Rollout>, ctx: Arc<Context>) -> Result<Action, Error> {
    if rollout.meta().deletion_timestamp.is_some() {
        // Deleting a rollout leaves every member as it is.
        return Ok(Action::await_change());
    }
    let name = rollout.name_any();
    let api = Api::<Rollout>::all(ctx.shell.client.clone());
    let last = rollout.status.clone().unwrap_or_default();
    let fleet = Api::<Fleet>::all(ctx.shell.client.clone())
        .get_opt(&rollout.spec.fleet)
        .await
        .map_err(|source| Error::Read {
            what: format!("Fleet {}", rollout.spec.fleet),
            source,
        })?;
    let Some(fleet) = fleet else {
        let mut wanted = RolloutStatus {
            phase: Some(RolloutPhase::Invalid),
            message: format!("spec.fleet: there is no Fleet {:?}", rollout.spec.fleet),
            observed_generation: rollout.meta().generation,
            ..last.clone()
        };
        wanted.conditions = last.conditions.clone();
        write(&ctx, &api, &rollout, &last, wanted).await?;
        return Ok(Action::requeue(SETTLED_REQUEUE));
    };
    let registered = fleet_members(&ctx, &fleet).await?;
    let target = rollout.spec.target.clone();
    let valid = windlass_fleet::validate(&rollout.spec).is_ok();
    // Look at every member side by side, each bounded in time.
    let looks: Vec<(String, Option<Client>, members::Looked)> =
        futures::stream::iter(registered.clone())
            .map(|member| look_at(ctx.clone(), member, target.clone(), valid))
            .buffer_unordered(PARALLEL_MEMBERS)
            .collect()
            .await;
    let seen: BTreeMap<String, Seen> = looks
        .iter()
        .map(|(name, _, looked)| (name.clone(), looked.seen.clone()))
        .collect();
    let fleet_members: Vec<windlass_fleet::Member> =
        registered.iter().map(|m| m.member.clone()).collect();
    let step = decide(&Input {
        name: &name,
        spec: &rollout.spec,
        generation: rollout.meta().generation,
        last: &last,
        members: &fleet_members,
        seen: &seen,
        now: Timestamp::now(),
    });
    let mut wanted = step.status;
    // The writes in the members; a refused one is told in that member's line and tried again
    // on the next look.
    let reach: BTreeMap<String, (Option<Client>, Option<String>)> = looks
        .into_iter()
        .map(|(name, client, looked)| (name, (client, looked.blueprint)))
        .collect();
    let results: Vec<(String, Result<(), String>)> = futures::stream::iter(step.actions.clone())
        .map(|action| {
            let member = action_member(&action).to_string();
            let found = reach.get(&member).cloned();
            let target = target.clone();
            async move {
                let result = match found {
                    Some((Some(client), blueprint)) => {
                        members::act(&client, &target, blueprint.as_deref(), &action).await
                    }
                    _ => Err("no client for the member".to_string()),
                };
                (member, result)
            }
        })
        .buffer_unordered(PARALLEL_MEMBERS)
        .collect()
        .await;
    for (member, result) in results {
        if let Err(error) = result {
            tracing::warn!(rollout = %name, %member, %error, "a write in a member failed");
            if let Some(line) = wanted.clusters.iter_mut().find(|m| m.name == member) {
                line.message = format!("write failed (tried again): {error}");
            }
        }
    }
    let phase = wanted.phase;
    write(&ctx, &api, &rollout, &last, wanted).await?;
    Ok(if step.active && phase != Some(RolloutPhase::Halted) {
        Action::requeue(ACTIVE_REQUEUE)
    } else {
        Action::requeue(SETTLED_REQUEUE)
    })
}

fn action_member(action: &windlass_fleet::Action) -> &str {
    match action {
        windlass_fleet::Action::Apply { member, .. }
        | windlass_fleet::Action::Approve { member, .. }
        | windlass_fleet::Action::RollBack { member, .. } => member,
    }
}

/// One member's client and what it shows; an unusable Secret or a member that does not answer
/// is unreachable.
async fn look_at(
    ctx: Arc<Context>,
    member: members::Registered,
    target: windlass_api::fleet::RolloutTarget,
    valid: bool,
) -> (String, Option<Client>, members::Looked) {
    let name = member.member.name.clone();
    let unreachable = |why: String| members::Looked {
        seen: Seen::Unreachable(why),
        blueprint: None,
    };
    if !valid {
        return (
            name,
            None,
            unreachable("not looked at: the spec is invalid".into()),
        );
    }
    match ctx.clients.client(&member).await {
        Ok(client) => {
            let looked = members::look(&client, &target).await;
            (name, Some(client), looked)
        }
        Err(error) => (name, None, unreachable(error)),
    }
}

/// Writes the status when it says something new (a member seen again with nothing else
/// changed is not worth a write), with an Event on a change of phase or wave.
async fn write(
    ctx: &Context,
    api: &Api<Rollout>,
    rollout: &Rollout,
    last: &RolloutStatus,
    mut wanted: RolloutStatus,
) -> Result<(), Error> {
    let now = Timestamp::now();
    for line in &mut wanted.clusters {
        if let Some(before) = last.clusters.iter().find(|b| b.name == line.name) {
            let recent = before.last_seen_time.as_ref().is_some_and(|t| {
                now.as_second() - t.0.as_second() < SETTLED_REQUEUE.as_secs() as i64
            });
            if recent && line.last_seen_time.is_some() {
                line.last_seen_time = before.last_seen_time.clone();
            }
        }
    }
    if &wanted == last {
        return Ok(());
    }
    let name = rollout.name_any();
    status::apply_status(api, &name, &wanted, None)
        .await
        .map_err(|source| Error::Write {
            what: format!("Rollout {name}"),
            source,
        })?;
    if wanted.phase != last.phase || wanted.current_wave != last.current_wave {
        let phase = wanted.phase.map(|p| format!("{p:?}")).unwrap_or_default();
        let warning = matches!(
            wanted.phase,
            Some(RolloutPhase::Halted | RolloutPhase::Invalid)
        );
        let notice = if warning {
            Notice::warning(phase, wanted.message.clone())
        } else {
            Notice::normal(phase, wanted.message.clone())
        };
        ctx.shell
            .events
            .publish(&rollout.object_ref(&()), &notice)
            .await;
    }
    Ok(())
}
