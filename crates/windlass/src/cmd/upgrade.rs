//! `windlass upgrade`: ask for a release of the platform (the ClusterVersion's
//! `spec.desiredUpdate`), in `oc adm upgrade`'s words (`--to`, `--to-image`, `--to-latest`,
//! `--clear`, `channel`, `recommend`), and `windlass upgrade status`: where the update stands,
//! level by level, with the pre-update readiness report.

use std::{path::PathBuf, process::ExitCode};

use anyhow::{Context as _, bail};
use k8s_openapi::jiff::Timestamp;
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use serde_json::json;
use windlass_api::{
    ClusterVersion, ClusterVersionStatus, ConditionStatus,
    clusterversion::{AvailableRelease, CLUSTER_VERSION_NAME, LevelState, UpdateState},
    condition::find,
    names::{CLI_FIELD_MANAGER, conditions::cluster_version as types},
};
use windlass_release::progress::remaining_words;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct UpgradeArgs {
    #[command(subcommand)]
    pub command: Option<UpgradeCommand>,
    /// The release payload image to move to (a tag is pinned to its digest once).
    #[arg(long)]
    pub to_image: Option<String>,
    /// The version the payload must be.
    #[arg(long)]
    pub to: Option<String>,
    /// The newest update the update service recommends (`status.availableUpdates`).
    #[arg(long, conflicts_with_all = ["to", "to_image", "clear"])]
    pub to_latest: bool,
    /// Cancel an update that was asked for but has not started.
    #[arg(long, conflicts_with_all = ["to", "to_image", "force", "accept_risks"])]
    pub clear: bool,
    /// Apply even what verification refuses (recorded in history as unverified).
    #[arg(long)]
    pub force: bool,
    /// Let these preconditions through by name (`ClusterOperatorUpgradeable-<name>`), recorded.
    #[arg(long, value_delimiter = ',')]
    pub accept_risks: Vec<String>,
    /// Pull the payload over plain HTTP (a registry on loopback).
    #[arg(long)]
    pub plain_http: bool,
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
}

#[derive(clap::Subcommand)]
pub enum UpgradeCommand {
    /// Where the update stands: levels done, the one in progress and what it waits for.
    Status {
        #[arg(long, env = "KUBECONFIG")]
        kubeconfig: Option<PathBuf>,
    },
    /// Set the channel the update service is asked about; without a name, clear it.
    Channel {
        channel: Option<String>,
        #[arg(long, env = "KUBECONFIG")]
        kubeconfig: Option<PathBuf>,
    },
    /// What the update service offers from the running release and why: recommended updates,
    /// and conditional ones with each risk and whether it applies to this cluster.
    Recommend {
        #[arg(long, env = "KUBECONFIG")]
        kubeconfig: Option<PathBuf>,
    },
}

pub fn run(args: UpgradeArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        match args.command {
            Some(UpgradeCommand::Status { kubeconfig }) => status(kubeconfig).await,
            Some(UpgradeCommand::Channel {
                channel,
                kubeconfig,
            }) => set_channel(channel, kubeconfig).await,
            Some(UpgradeCommand::Recommend { kubeconfig }) => recommend(kubeconfig).await,
            None if args.clear => clear(args.kubeconfig).await,
            None => request(args).await,
        }
    })
}

async fn api(kubeconfig: Option<&PathBuf>) -> anyhow::Result<Api<ClusterVersion>> {
    let client = crate::manager::client(kubeconfig).await?;
    Ok(Api::all(client))
}

async fn request(mut args: UpgradeArgs) -> anyhow::Result<ExitCode> {
    let versions = api(args.kubeconfig.as_ref()).await?;
    if args.to_latest {
        let current = versions.get_opt(CLUSTER_VERSION_NAME).await?;
        let latest = current
            .as_ref()
            .and_then(|v| v.status.as_ref())
            .and_then(|s| newest(&s.available_updates))
            .with_context(|| {
                "--to-latest: the update service recommends no update from the running release (`windlass upgrade recommend` shows what it offers)"
            })?;
        println!(
            "the newest recommended update is {} ({})",
            latest.version, latest.image
        );
        args.to = Some(latest.version.clone());
        args.to_image = Some(latest.image.clone());
    }
    if args.to_image.is_none() && args.to.is_none() {
        bail!(
            "name the release with --to-image REF, --to VERSION (an update service configured) or --to-latest (`windlass upgrade recommend` shows what is offered)"
        );
    }
    let mut desired = json!({ "force": args.force });
    if let Some(image) = &args.to_image {
        desired["image"] = json!(image);
    }
    if let Some(version) = &args.to {
        desired["version"] = json!(version);
    }
    if !args.accept_risks.is_empty() {
        desired["acceptRisks"] = json!(args.accept_risks);
    }
    let mut spec = json!({ "desiredUpdate": desired });
    if args.plain_http {
        spec["plainHTTP"] = json!(true);
    }
    let object = json!({
        "apiVersion": "windlass.dev/v1alpha1",
        "kind": "ClusterVersion",
        "metadata": { "name": CLUSTER_VERSION_NAME },
        "spec": spec,
    });
    versions
        .patch(
            CLUSTER_VERSION_NAME,
            &PatchParams::apply(CLI_FIELD_MANAGER).force(),
            &Patch::Apply(&object),
        )
        .await
        .context("setting the ClusterVersion's desired update")?;
    let target = args
        .to_image
        .as_deref()
        .or(args.to.as_deref())
        .unwrap_or_default();
    println!("requested update to {target}; `windlass upgrade status` shows its progress");
    Ok(ExitCode::SUCCESS)
}

/// The newest release by version.
fn newest(releases: &[AvailableRelease]) -> Option<&AvailableRelease> {
    releases.iter().max_by(|a, b| {
        match (
            semver::Version::parse(&a.version),
            semver::Version::parse(&b.version),
        ) {
            (Ok(a), Ok(b)) => a.cmp(&b),
            _ => a.version.cmp(&b.version),
        }
    })
}

/// Removes `spec.desiredUpdate` while nothing of it has started; once it has, going back is a
/// rollback, which `windlass upgrade --to-image` of the older release asks for.
async fn clear(kubeconfig: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let versions = api(kubeconfig.as_ref()).await?;
    let Some(version) = versions.get_opt(CLUSTER_VERSION_NAME).await? else {
        bail!("there is no ClusterVersion `{CLUSTER_VERSION_NAME}`: nothing to clear");
    };
    let Some(desired) = version.spec.desired_update.as_ref() else {
        println!("no update is asked for");
        return Ok(ExitCode::SUCCESS);
    };
    let status = version.status.clone().unwrap_or_default();
    let asked = desired
        .image
        .clone()
        .or(desired.version.clone())
        .unwrap_or_default();
    let started = status.desired.as_ref().is_some_and(|d| {
        desired
            .image
            .as_deref()
            .is_some_and(|i| i == d.requested || i == d.image)
            || desired.version.as_deref() == Some(d.version.as_str())
    });
    if started {
        bail!(
            "the update to {asked} has started; --clear cancels only an update that has not (to go back, ask for the release before it: `windlass upgrade --to-image REF`)"
        );
    }
    versions
        .patch(
            CLUSTER_VERSION_NAME,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"desiredUpdate": null}})),
        )
        .await
        .context("clearing spec.desiredUpdate")?;
    println!("cleared the requested update to {asked}");
    Ok(ExitCode::SUCCESS)
}

async fn set_channel(
    channel: Option<String>,
    kubeconfig: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let versions = api(kubeconfig.as_ref()).await?;
    let channel = channel.filter(|c| !c.is_empty());
    versions
        .patch(
            CLUSTER_VERSION_NAME,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"channel": channel}})),
        )
        .await
        .context("setting spec.channel")?;
    match channel {
        Some(channel) => println!("channel set to {channel}"),
        None => println!("channel cleared"),
    }
    Ok(ExitCode::SUCCESS)
}

async fn recommend(kubeconfig: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let versions = api(kubeconfig.as_ref()).await?;
    let Some(version) = versions.get_opt(CLUSTER_VERSION_NAME).await? else {
        bail!("there is no ClusterVersion `{CLUSTER_VERSION_NAME}`");
    };
    print!("{}", render_recommend(&version));
    Ok(ExitCode::SUCCESS)
}

/// What the update service offers, in `oc adm upgrade recommend`'s order: the service and
/// channel, then each update newest first with the risks that apply to this cluster.
pub fn render_recommend(version: &ClusterVersion) -> String {
    let mut out = String::new();
    let spec = &version.spec;
    let status = version.status.clone().unwrap_or_default();
    match (&spec.upstream, &spec.channel) {
        (Some(upstream), Some(channel)) => {
            out.push_str(&format!(
                "Upstream update service: {upstream}
Channel: {channel}
"
            ));
        }
        _ => {
            out.push_str("No update service: set spec.upstream and a channel (`windlass upgrade channel NAME`).
");
            return out;
        }
    }
    if let Some(c) = find(&status.conditions, types::RETRIEVED_UPDATES)
        .filter(|c| c.status != ConditionStatus::True)
    {
        out.push_str(&format!(
            "Updates could not be retrieved ({}): {}
",
            c.reason, c.message
        ));
    }
    let running = status
        .history
        .iter()
        .find(|h| h.state == UpdateState::Completed)
        .map(|h| h.version.clone())
        .unwrap_or_default();
    let mut rows: Vec<(String, String, String)> = status
        .available_updates
        .iter()
        .map(|r| {
            (
                r.version.clone(),
                r.image.clone(),
                "Recommended: no known issue applies to this cluster".to_string(),
            )
        })
        .collect();
    for update in &status.conditional_updates {
        let recommended = update
            .conditions
            .iter()
            .find(|c| c.type_ == types::RECOMMENDED);
        let mut why = match recommended {
            Some(c) if c.status == ConditionStatus::True => format!("Recommended ({})", c.reason),
            Some(c) => format!("Not recommended ({}): {}", c.reason, first_line(&c.message)),
            None => "Not evaluated yet".to_string(),
        };
        for risk in &update.risks {
            let applies = risk
                .conditions
                .iter()
                .find(|c| c.type_ == types::APPLIES)
                .map(|c| format!("{:?}", c.status))
                .unwrap_or_else(|| "Unknown".into());
            why.push_str(&format!(
                "
      risk {} (applies: {applies}): {}",
                risk.name,
                first_line(&risk.message)
            ));
            if !risk.url.is_empty() {
                why.push_str(&format!(" {}", risk.url));
            }
        }
        rows.push((
            update.release.version.clone(),
            update.release.image.clone(),
            why,
        ));
    }
    rows.sort_by(
        |a, b| match (semver::Version::parse(&b.0), semver::Version::parse(&a.0)) {
            (Ok(x), Ok(y)) => x.cmp(&y),
            _ => b.0.cmp(&a.0),
        },
    );
    if rows.is_empty() {
        out.push_str(&format!(
            "
No updates from {running} in this channel.
"
        ));
        return out;
    }
    out.push_str(&format!(
        "
Updates from {running}:
"
    ));
    for (version, image, why) in rows {
        out.push_str(&format!(
            "  {version:<10} {image}
      {why}
"
        ));
    }
    out.push_str("
`windlass upgrade --to VERSION` asks for one (`--accept-risks NAME` for a conditional update's risks).
");
    out
}

async fn status(kubeconfig: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let versions = api(kubeconfig.as_ref()).await?;
    let Some(version) = versions.get_opt(CLUSTER_VERSION_NAME).await? else {
        bail!(
            "there is no ClusterVersion `{CLUSTER_VERSION_NAME}`: `windlass upgrade --to-image REF` asks for a release"
        );
    };
    print!("{}", render(&version, Timestamp::now()));
    Ok(ExitCode::SUCCESS)
}

/// `12 s`, `3 min 5 s`, `1 h 4 min`, for how long something took or has been running.
fn took(seconds: i64) -> String {
    let seconds = seconds.max(0);
    match seconds {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min {} s", s / 60, s % 60),
        s => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

/// The update's timing: when it started and how long ago, and how long the rest should take;
/// or how long it took.
fn timing(status: &ClusterVersionStatus, now: Timestamp) -> Option<String> {
    let entry = status.history.first()?;
    let started = entry.started_time.0;
    let since = |t: Timestamp| t.as_second() - started.as_second();
    if entry.state == UpdateState::Completed {
        let done = entry.completion_time.as_ref()?.0;
        return Some(format!(
            "Completed:   {} after {}\n",
            done.strftime("%Y-%m-%d %H:%M:%S UTC"),
            took(since(done))
        ));
    }
    let mut line = format!(
        "Started:     {} ({} ago)\n",
        started.strftime("%Y-%m-%d %H:%M:%S UTC"),
        took(since(now))
    );
    let estimate = status
        .progress
        .as_ref()
        .and_then(|p| p.estimated_completion_time.as_ref())
        .map(|end| end.0);
    line.push_str(&match estimate {
        Some(end) if end > now => format!(
            "Estimate:    {} (done around {}, judging by earlier updates' levels)\n",
            remaining_words(Some((end.as_second() - now.as_second()) as f64)),
            end.strftime("%H:%M:%S UTC")
        ),
        Some(_) => "Estimate:    taking longer than earlier updates did\n".into(),
        None => format!("Estimate:    {}\n", remaining_words(None)),
    });
    Some(line)
}

/// What `windlass upgrade status` prints at `now`.
pub fn render(version: &ClusterVersion, now: Timestamp) -> String {
    let mut out = String::new();
    let Some(status) = &version.status else {
        return "no status yet: the manager has not looked at the ClusterVersion\n".into();
    };
    let condition = |type_| find(&status.conditions, type_);
    if let Some(desired) = &status.desired {
        out.push_str(&format!(
            "Release:     {} ({}, {})\n",
            desired.version,
            desired.image,
            if desired.verified {
                "verified"
            } else {
                "not verified"
            }
        ));
    }
    if let Some(timing) = timing(status, now) {
        out.push_str(&timing);
    }
    for type_ in [
        types::RELEASE_ACCEPTED,
        types::PROGRESSING,
        types::FAILING,
        types::AVAILABLE,
        types::UPGRADEABLE,
        types::RETRIEVED_UPDATES,
    ] {
        if let Some(c) = condition(type_) {
            out.push_str(&format!(
                "{:<12} {:?} ({}){}\n",
                format!("{}:", c.type_),
                c.status,
                c.reason,
                if c.message.is_empty() {
                    String::new()
                } else {
                    format!(": {}", c.message)
                }
            ));
        }
    }
    if let Some(capabilities) = &status.capabilities {
        out.push_str(&format!(
            "Capabilities: {}
",
            if capabilities.enabled_capabilities.is_empty() {
                "none enabled".to_string()
            } else {
                capabilities.enabled_capabilities.join(", ")
            }
        ));
    }
    let unmanaged: Vec<String> = version
        .spec
        .overrides
        .iter()
        .filter(|o| o.unmanaged)
        .map(|o| {
            let ns = if o.namespace.is_empty() {
                String::new()
            } else {
                format!("{}/", o.namespace)
            };
            format!("{} {ns}{}", o.kind, o.name)
        })
        .collect();
    if !unmanaged.is_empty() {
        out.push_str(&format!(
            "Unmanaged (spec.overrides): {}
",
            unmanaged.join(", ")
        ));
    }
    if let Some(readiness) = &status.readiness {
        out.push_str(&format!(
            "
Readiness of the update to {} ({}): {}
",
            readiness.version,
            readiness.image,
            if readiness.findings.is_empty() {
                "nothing blocks it".to_string()
            } else {
                format!("{} finding(s)", readiness.findings.len())
            }
        ));
        for finding in &readiness.findings {
            out.push_str(&format!(
                "  {} [{}]{}: {}
",
                finding.name,
                finding.kind,
                if finding.accepted { " (accepted)" } else { "" },
                finding.message
            ));
        }
    }
    let troubled: Vec<_> = status
        .operators
        .iter()
        .filter(|o| o.unhealthy_since.is_some())
        .collect();
    if !status.operators.is_empty() {
        out.push_str(&format!(
            "
ClusterOperators: {} ({} unhealthy)
",
            status.operators.len(),
            troubled.len()
        ));
        for operator in troubled {
            out.push_str(&format!(
                "  {:<20} Available={} Degraded={} {}\n",
                operator.name, operator.available, operator.degraded, operator.message
            ));
        }
    }
    if !status.levels.is_empty() {
        let done = status
            .levels
            .iter()
            .filter(|l| l.state == LevelState::Done)
            .count();
        out.push_str(&format!(
            "\nLevels: {done} of {} done\n",
            status.levels.len()
        ));
        out.push_str(&format!(
            "{:<14} {:<12} {:>9}  {}\n",
            "LEVEL", "STATE", "MANIFESTS", "COMPONENTS / WAITING FOR"
        ));
        for level in &status.levels {
            let duration = match (&level.started_time, &level.completion_time) {
                (Some(start), Some(end)) => {
                    format!(" in {} s", end.0.as_second() - start.0.as_second())
                }
                _ => String::new(),
            };
            let detail = if level.message.is_empty() {
                format!("{}{duration}", level.components)
            } else {
                format!("{}: {}", level.components, level.message)
            };
            out.push_str(&format!(
                "{:<14} {:<12} {:>9}  {detail}\n",
                level.name,
                format!("{:?}", level.state),
                level.manifests
            ));
        }
    }
    if let Some(progress) = &status.progress {
        out.push_str(&format!(
            "\nIn progress: level {} ({} of {}), component {}: waiting for {}\n",
            progress.level,
            progress.position,
            progress.levels,
            progress.component,
            progress.waiting_for
        ));
    }
    if !status.available_updates.is_empty() {
        out.push_str("\nAvailable updates:\n");
        for release in &status.available_updates {
            out.push_str(&format!("  {:<10} {}\n", release.version, release.image));
        }
    }
    if !status.conditional_updates.is_empty() {
        out.push_str("\nConditional updates (recommended only where their risks do not apply, or are accepted):\n");
        for update in &status.conditional_updates {
            let recommended = update
                .conditions
                .iter()
                .find(|c| c.type_ == types::RECOMMENDED)
                .map(|c| format!("Recommended={:?} ({})", c.status, c.reason))
                .unwrap_or_else(|| "not evaluated".into());
            out.push_str(&format!(
                "  {:<10} {} {recommended}\n",
                update.release.version, update.release.image
            ));
            for risk in &update.risks {
                let applies = risk.conditions.iter().find(|c| c.type_ == types::APPLIES);
                let judged = match applies {
                    Some(c) if c.status == ConditionStatus::Unknown => {
                        format!("Applies=Unknown ({}): {}", c.reason, first_line(&c.message))
                    }
                    Some(c) => format!("Applies={:?} ({})", c.status, c.reason),
                    None => "not evaluated".into(),
                };
                out.push_str(&format!("    risk {}: {judged}\n", risk.name));
                if !risk.url.is_empty() {
                    out.push_str(&format!("      {}\n", risk.url));
                }
            }
        }
    }
    if !status.history.is_empty() {
        out.push_str("\nHistory (newest first):\n");
        for entry in &status.history {
            let duration = entry
                .completion_time
                .as_ref()
                .map(|done| {
                    format!(
                        " in {}",
                        took(done.0.as_second() - entry.started_time.0.as_second())
                    )
                })
                .unwrap_or_default();
            out.push_str(&format!(
                "  {:<10} {:<9} {}{}{duration}\n",
                entry.version,
                format!("{:?}", entry.state),
                entry.image,
                if entry.verified {
                    ""
                } else {
                    " (not verified)"
                }
            ));
            if !entry.accepted_risks.is_empty() {
                out.push_str(&format!(
                    "             accepted: {}\n",
                    entry.accepted_risks
                ));
            }
        }
    }
    out
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_shows_elapsed_and_estimated_time_and_why_a_risk_is_unknown() {
        let started: Timestamp = "2026-03-01T10:00:00Z".parse().unwrap();
        let version: ClusterVersion = serde_json::from_value(serde_json::json!({
            "apiVersion": "windlass.dev/v1alpha1", "kind": "ClusterVersion",
            "metadata": {"name": "version"}, "spec": {},
            "status": {
                "desired": {"version": "4.1.1", "image": "r@sha256:b", "verified": true},
                "levels": [
                    {"name": "10", "state": "Done", "manifests": 3, "components": "dns",
                     "startedTime": "2026-03-01T10:00:00Z", "completionTime": "2026-03-01T10:00:12Z"},
                    {"name": "30", "state": "Progressing", "manifests": 4, "components": "monitoring",
                     "message": "to roll out (0/2 updated)", "startedTime": "2026-03-01T10:00:12Z"},
                ],
                "progress": {"level": "30", "position": 2, "levels": 2, "component": "monitoring",
                    "waitingFor": "Deployment platform-monitoring/monitoring-operator to roll out (0/2 updated)",
                    "estimatedCompletionTime": "2026-03-01T10:02:40Z"},
                "history": [
                    {"state": "Partial", "version": "4.1.1", "image": "r@sha256:b", "verified": true,
                     "startedTime": "2026-03-01T10:00:00Z"},
                    {"state": "Completed", "version": "4.1.0", "image": "r@sha256:a", "verified": false,
                     "startedTime": "2026-02-01T10:00:00Z", "completionTime": "2026-02-01T10:03:05Z",
                     "acceptedRisks": "force: unsigned"},
                ],
                "conditionalUpdates": [{
                    "release": {"version": "4.2.0", "image": "r@sha256:c"},
                    "risks": [{"name": "SlowIngress", "url": "https://example.invalid/slow",
                        "conditions": [{"type": "Applies", "status": "Unknown", "reason": "EvaluationFailed",
                            "message": "Could not evaluate exposure to update risk SlowIngress (connection refused)\n  more"}]}],
                    "conditions": [{"type": "Recommended", "status": "Unknown", "reason": "EvaluationFailed", "message": "m"}],
                }],
            },
        }))
        .unwrap();
        let now = started + k8s_openapi::jiff::SignedDuration::from_secs(40);
        let shown = render(&version, now);
        for expected in [
            "Started:     2026-03-01 10:00:00 UTC (40 s ago)",
            "Estimate:    about 2 min left (done around 10:02:40 UTC",
            "30             Progressing          4  monitoring: to roll out (0/2 updated)",
            "In progress: level 30 (2 of 2), component monitoring",
            "4.2.0      r@sha256:c Recommended=Unknown (EvaluationFailed)",
            "risk SlowIngress: Applies=Unknown (EvaluationFailed): Could not evaluate exposure to update risk SlowIngress (connection refused)",
            "4.1.0      Completed r@sha256:a (not verified) in 3 min 5 s",
            "accepted: force: unsigned",
        ] {
            assert!(
                shown.contains(expected),
                "missing {expected:?} in:\n{shown}"
            );
        }
        let later = started + k8s_openapi::jiff::SignedDuration::from_secs(400);
        assert!(render(&version, later).contains("taking longer than earlier updates did"));
    }

    #[test]
    fn recommend_lists_updates_newest_first_with_the_risks_that_apply() {
        let version: ClusterVersion = serde_json::from_value(serde_json::json!({
            "apiVersion": "windlass.dev/v1alpha1", "kind": "ClusterVersion",
            "metadata": {"name": "version"},
            "spec": {"upstream": "http://graph.example/api", "channel": "stable-4.2"},
            "status": {
                "history": [{"state": "Completed", "version": "4.1.0", "image": "r@sha256:a",
                             "verified": true, "startedTime": "2026-02-01T10:00:00Z"}],
                "availableUpdates": [{"version": "4.1.1", "image": "r@sha256:b"}],
                "conditionalUpdates": [{
                    "release": {"version": "4.2.0", "image": "r@sha256:c"},
                    "risks": [{"name": "SlowIngress", "message": "Ingress is slow after the update",
                        "url": "https://example.invalid/slow",
                        "conditions": [{"type": "Applies", "status": "True", "reason": "Match", "message": ""}]}],
                    "conditions": [{"type": "Recommended", "status": "False", "reason": "SlowIngress", "message": "Ingress is slow"}],
                }],
                "readiness": {"version": "4.2.0", "image": "r@sha256:c", "findings": [
                    {"name": "PodDisruptionBudget/platform-dns/dns", "kind": "DisruptionBudget",
                     "message": "allows no disruption", "accepted": false}]},
            },
        }))
        .unwrap();
        let shown = render_recommend(&version);
        let newer = shown.find("4.2.0").unwrap();
        let older = shown.find("4.1.1").unwrap();
        assert!(newer < older, "{shown}");
        assert!(shown.contains("Not recommended (SlowIngress)"), "{shown}");
        assert!(
            shown.contains("risk SlowIngress (applies: True)"),
            "{shown}"
        );
        assert!(shown.contains("Updates from 4.1.0"), "{shown}");
        let status = render(&version, Timestamp::now());
        assert!(
            status.contains(
                "PodDisruptionBudget/platform-dns/dns [DisruptionBudget]: allows no disruption"
            ),
            "{status}"
        );
        let latest = newest(&version.status.as_ref().unwrap().available_updates).unwrap();
        assert_eq!(latest.version, "4.1.1");
    }
}
