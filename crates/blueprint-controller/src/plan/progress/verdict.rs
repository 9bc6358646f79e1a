//! Whether the revision being applied succeeded, failed or is still running, from its CSV.

use super::{
    CsvPhase, DEFAULT_PROGRESS_DEADLINE_SECONDS, Duration, Input, ObservedCsv, RevisionRecord,
    SignedDuration, Timestamp,
};

pub(super) enum Verdict {
    Succeeded(String),
    Failed(String),
    Running {
        message: String,
        deadline: Timestamp,
    },
}

/// The CSV's status, if it speaks for this revision: it carries the revision's annotation
/// and has observed its own latest spec.
pub(super) fn reporting_csv<'i>(
    input: &'i Input<'_>,
    record: &RevisionRecord,
) -> Option<&'i ObservedCsv> {
    input.csvs.iter().find(|c| {
        c.name == record.cluster_service_version_name
            && !c.deleting
            && c.revision == Some(record.revision)
            && c.generation.is_some()
            && c.observed_generation == c.generation
    })
}

/// The deadline counts from when applying began, or from the CSV's own install start when
/// that is later (its spec changed since).
pub(super) fn judge(input: &Input<'_>, record: &RevisionRecord) -> Verdict {
    let csv = reporting_csv(input, record);
    let seconds = input
        .spec
        .progress_deadline_seconds
        .unwrap_or(DEFAULT_PROGRESS_DEADLINE_SECONDS)
        .max(1);
    let began = record.started_time.as_ref().map_or(input.now, |t| t.0);
    let clock = csv
        .and_then(|c| c.install_start)
        .map_or(began, |s| s.max(began));
    let deadline = clock
        .checked_add(SignedDuration::from_secs(seconds))
        .unwrap_or(clock);
    let name = &record.cluster_service_version_name;
    match csv.and_then(|c| c.phase) {
        Some(CsvPhase::Succeeded) => Verdict::Succeeded(describe_csv(input, record)),
        Some(CsvPhase::Failed) => {
            let c = csv.expect("a phase comes from a CSV");
            Verdict::Failed(format!("{name} Failed: {}: {}", c.reason, c.message))
        }
        _ if input.now > deadline => Verdict::Failed(format!(
            "{name} did not succeed within the progress deadline of {seconds}s ({})",
            describe_csv(input, record)
        )),
        _ => Verdict::Running {
            message: describe_csv(input, record),
            deadline,
        },
    }
}

pub(super) fn describe_csv(input: &Input<'_>, record: &RevisionRecord) -> String {
    let name = &record.cluster_service_version_name;
    match reporting_csv(input, record) {
        Some(c) => {
            let phase = c
                .phase
                .map_or("no phase yet".to_string(), |p| format!("{p:?}"));
            if c.message.is_empty() {
                format!("{name}: {phase}")
            } else {
                format!("{name}: {phase}: {}", c.message)
            }
        }
        None => format!("{name}: waiting for the ClusterServiceVersion controller"),
    }
}

pub(super) fn until(deadline: Timestamp, now: Timestamp) -> Duration {
    let seconds = deadline.duration_since(now).as_secs().max(0);
    Duration::from_secs(u64::try_from(seconds).unwrap_or(0) + 1)
}
