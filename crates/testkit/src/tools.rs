//! The outside programs and logs tests look at: the windlass binary, cosign, the local
//! registry's access log.

use std::path::PathBuf;

use crate::{cluster_env, state_dir};

/// The local registry's access-log lines for requests to `repository` (`host:port/path`) so
/// far, in order (`"GET /v2/<path>/manifests/<tag> HTTP/1.1" 200 ...`): one per request, error
/// lines left out.
pub fn registry_requests(repository: &str) -> Vec<String> {
    let path = repository
        .split_once('/')
        .map(|(_, p)| p)
        .unwrap_or(repository);
    let log = state_dir().join("logs/registry.log");
    let markers: Vec<String> = ["GET", "HEAD", "PUT", "POST", "PATCH", "DELETE"]
        .iter()
        .map(|method| format!("\"{method} /v2/{path}/"))
        .collect();
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|line| markers.iter().any(|m| line.contains(m.as_str())))
        .map(str::to_string)
        .collect()
}

/// The `windlass` binary the tests run: `WINDLASS_MANAGER_BIN`, else the debug build in the
/// target directory. Missing is a failure naming how to build it.
pub fn windlass_binary() -> PathBuf {
    let bin = std::env::var_os("WINDLASS_MANAGER_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
            target.join("debug/windlass")
        });
    assert!(
        bin.exists(),
        "{} is not built: run `cargo build -p windlass` (or set WINDLASS_MANAGER_BIN)",
        bin.display()
    );
    bin
}

/// The pinned cosign: on PATH under `make e2e`, else on the cluster's tools path. Missing is a
/// failure, not a skip.
pub fn cosign_binary() -> PathBuf {
    pinned_binary("cosign")
}

/// The pinned `oc`, found as [`cosign_binary`] finds cosign.
pub fn oc_binary() -> PathBuf {
    pinned_binary("oc")
}

fn pinned_binary(name: &str) -> PathBuf {
    let tools = cluster_env()
        .ok()
        .and_then(|env| env.get("WINDLASS_TOOLS_PATH").cloned())
        .unwrap_or_default();
    let path = std::env::var("PATH").unwrap_or_default();
    format!("{path}:{tools}")
        .split(':')
        .map(|dir| std::path::Path::new(dir).join(name))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "{name} is not built: run `e2e/scripts/build-tools.sh {name}` (`make e2e` does), \
                 then put its directory on PATH"
            )
        })
}
