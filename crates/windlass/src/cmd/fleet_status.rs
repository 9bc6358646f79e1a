//! `windlass fleet status [ROLLOUT]`: every Rollout as a table, or one rollout's waves and each
//! member cluster's state in its own words; `-o wide` adds columns, `-o json|yaml` prints the
//! Rollouts themselves.

use std::{path::PathBuf, process::ExitCode};

use kube::{Api, ResourceExt, api::ListParams};
use windlass_api::fleet::{Rollout, RolloutTarget};

use super::output::{self, Format, OutputArgs};

#[derive(clap::Args)]
pub struct StatusArgs {
    /// One rollout (default: every rollout, one line each).
    pub rollout: Option<String>,
    /// `wide` adds each rollout's target and message, or each member's previous version, plan
    /// and when it was last seen.
    #[command(flatten)]
    pub output: OutputArgs,
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
}

pub async fn status(args: StatusArgs) -> anyhow::Result<ExitCode> {
    let api: Api<Rollout> = Api::all(crate::manager::client(args.kubeconfig.as_ref()).await?);
    let format = args.output.format;
    let text = match &args.rollout {
        None => {
            let mut all = api.list(&ListParams::default()).await?.items;
            all.sort_by_key(|r| r.name_any());
            match format.data(|| output::list(&all))? {
                Some(text) => text,
                None => rollouts(&all, format.wide()),
            }
        }
        Some(name) => {
            let rollout = super::fleet::get(&api, name).await?;
            match format.data(|| output::object(&rollout))? {
                Some(text) => text,
                None => rollout_view(&rollout, format),
            }
        }
    };
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// What a rollout moves its members to, in one cell.
fn target(target: &RolloutTarget) -> String {
    if let Some(s) = &target.subscription {
        let name = s.name.clone().unwrap_or_else(|| s.spec.package.clone());
        let version = s.version.clone().unwrap_or_else(|| "latest".into());
        return format!("Subscription {}/{name} {version}", s.namespace);
    }
    if let Some(v) = &target.cluster_version {
        return format!("ClusterVersion {}", v.version);
    }
    "-".into()
}

/// One line per rollout.
fn rollouts(all: &[Rollout], wide: bool) -> String {
    if all.is_empty() {
        return "No rollouts (a Rollout names a Fleet and the waves to take its members in)\n"
            .into();
    }
    let mut header = output::header(&[
        "NAME",
        "FLEET",
        "PHASE",
        "WAVE",
        "DONE",
        "IN FLIGHT",
        "FAILED",
        "TOTAL",
    ]);
    if wide {
        header.extend(["TARGET".into(), "MESSAGE".into()]);
    }
    let mut rows = vec![header];
    for r in all {
        let s = r.status.clone().unwrap_or_default();
        let mut row = vec![
            r.name_any(),
            r.spec.fleet.clone(),
            output::cell(s.phase.map(|p| format!("{p:?}"))),
            output::cell(s.current_wave.clone()),
            s.done.to_string(),
            s.in_flight.to_string(),
            s.failed.to_string(),
            s.total.to_string(),
        ];
        if wide {
            row.push(target(&r.spec.target));
            row.push(output::cell(Some(s.message.clone())));
        }
        rows.push(row);
    }
    output::table(&rows)
}

/// One rollout: where it stands, its waves, then a line per member cluster.
fn rollout_view(rollout: &Rollout, format: Format) -> String {
    let s = rollout.status.clone().unwrap_or_default();
    let mut out = format!(
        "Rollout {} over Fleet {}: {}\n",
        rollout.name_any(),
        rollout.spec.fleet,
        s.phase
            .map(|p| format!("{p:?}"))
            .unwrap_or_else(|| "not looked at yet".into())
    );
    if !s.message.is_empty() {
        out.push_str(&format!("  {}\n", s.message));
    }
    for wave in &s.waves {
        out.push_str(&format!(
            "wave {} ({}): {}\n",
            wave.name,
            wave.state,
            wave.members.join(", ")
        ));
    }
    let mut header = output::header(&["CLUSTER", "WAVE", "STATE", "VERSION"]);
    if format.wide() {
        header.extend(["PREVIOUS".into(), "PLAN".into(), "LAST SEEN".into()]);
    }
    header.push("MESSAGE".into());
    let mut rows = vec![header];
    for m in &s.clusters {
        let mut row = vec![
            m.name.clone(),
            m.wave.clone(),
            m.state.clone(),
            output::cell(m.current.clone()),
        ];
        if format.wide() {
            row.push(output::cell(m.previous.clone()));
            row.push(output::cell(m.plan.as_ref().map(|p| {
                if p.approved {
                    format!("{} (approved)", p.digest)
                } else {
                    p.digest.clone()
                }
            })));
            row.push(output::cell(
                m.last_seen_time.as_ref().map(|t| t.0.to_string()),
            ));
        }
        row.push(m.message.clone());
        rows.push(row);
    }
    out.push_str(&output::table(&rows));
    if !s.unassigned.is_empty() {
        out.push_str(&format!("in no wave: {}\n", s.unassigned.join(", ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rollout() -> Rollout {
        serde_json::from_value(json!({
            "apiVersion": "windlass.dev/v1alpha1", "kind": "Rollout",
            "metadata": {"name": "db-1-1"},
            "spec": {"fleet": "prod",
                "target": {"subscription": {"namespace": "team-a",
                    "spec": {"package": "acme-db", "channel": "stable"}, "version": "1.1.0"}},
                "waves": [{"name": "canary"}, {"name": "rest"}]},
            "status": {"phase": "AwaitingApproval", "currentWave": "canary",
                "total": 3, "done": 0, "inFlight": 1, "failed": 0,
                "message": "wave canary waits for approval",
                "waves": [{"name": "canary", "state": "AwaitingApproval", "members": ["east"]},
                          {"name": "rest", "state": "Waiting", "members": ["west", "north"]}],
                "clusters": [
                    {"name": "east", "wave": "canary", "state": "AwaitingApproval",
                     "message": "plan shown", "previous": "acme-db.v1.0.0", "current": "1.0.0",
                     "plan": {"digest": "sha256:aa", "approved": false, "summary": "1 change"}},
                    {"name": "west", "wave": "rest", "state": "Pending", "message": ""}],
                "unassigned": ["lab"]}
        }))
        .unwrap()
    }

    #[test]
    fn the_list_has_a_line_per_rollout_and_wide_adds_target_and_message() {
        let text = rollouts(&[rollout()], false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "NAME     FLEET   PHASE              WAVE     DONE   IN FLIGHT   FAILED   TOTAL"
        );
        assert_eq!(
            lines[1],
            "db-1-1   prod    AwaitingApproval   canary   0      1           0        3"
        );
        let wide = rollouts(&[rollout()], true);
        let header = wide.lines().next().unwrap();
        assert!(
            header.contains("TOTAL   TARGET   ") && header.ends_with("MESSAGE"),
            "{wide}"
        );
        assert!(
            wide.lines().nth(1).unwrap().ends_with(
                "3       Subscription team-a/acme-db 1.1.0   wave canary waits for approval"
            ),
            "{wide}"
        );
        assert!(rollouts(&[], false).starts_with("No rollouts"));
    }

    #[test]
    fn one_rollout_shows_waves_and_members_and_wide_adds_previous_and_plan() {
        let text = rollout_view(&rollout(), Format::Table);
        for part in [
            "Rollout db-1-1 over Fleet prod: AwaitingApproval\n  wave canary waits for approval\n",
            "wave rest (Waiting): west, north\n",
            "CLUSTER   WAVE     STATE              VERSION   MESSAGE\n",
            "east      canary   AwaitingApproval   1.0.0     plan shown\n",
            "west      rest     Pending            -\n",
            "in no wave: lab\n",
        ] {
            assert!(text.contains(part), "missing {part:?} in:\n{text}");
        }
        let wide = rollout_view(&rollout(), Format::Wide);
        assert!(
            wide.contains("VERSION   PREVIOUS         PLAN        LAST SEEN   MESSAGE\n"),
            "{wide}"
        );
        assert!(
            wide.contains("1.0.0     acme-db.v1.0.0   sha256:aa   -           plan shown\n"),
            "{wide}"
        );
    }

    #[test]
    fn a_cluster_version_target_names_the_release() {
        let target: RolloutTarget =
            serde_json::from_value(json!({"clusterVersion": {"version": "4.1.1"}})).unwrap();
        assert_eq!(super::target(&target), "ClusterVersion 4.1.1");
    }
}
