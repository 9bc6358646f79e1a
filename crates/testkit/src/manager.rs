//! Observing the manager that `make e2e` runs: its process, its writes and its memory.

use std::path::PathBuf;

use crate::state_dir;

/// The manager's pid, from the pid file `manager-restart.sh` writes.
pub fn pid() -> Option<u32> {
    std::fs::read_to_string(state_dir().join("pids/manager"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The apiserver's audit log (the policy records every write).
pub fn audit_log() -> PathBuf {
    state_dir().join("logs/audit.log")
}

/// How many write requests the manager has made so far, counted in the audit log by its user
/// agent (`windlass-manager/<version>`).
pub fn writes() -> usize {
    let text = std::fs::read_to_string(audit_log()).unwrap_or_default();
    text.lines()
        .filter(|line| {
            line.contains("\"userAgent\":\"windlass-manager/")
                && line.contains("\"stage\":\"ResponseComplete\"")
        })
        .count()
}

/// A memory figure of the manager in KiB from `/proc/<pid>/status`: `VmRSS` (now) or `VmHWM`
/// (peak since start).
pub fn memory_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid()?)).ok()?;
    status
        .lines()
        .find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The namespace the running manager was given (`--namespace`), read from its command line.
pub fn namespace() -> Option<String> {
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", pid()?)).ok()?;
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    args.iter()
        .position(|a| a == "--namespace")
        .and_then(|i| args.get(i + 1).cloned())
}
