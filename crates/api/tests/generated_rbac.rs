//! The RBAC YAML checked in under `config/` must be what `rbacgen` writes from its rules.

use std::path::Path;
use std::process::Command;

#[test]
fn checked_in_rbac_matches_the_rules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let output = Command::new(env!("CARGO_BIN_EXE_rbacgen"))
        .arg("--check")
        .arg(root.join("config/rbac"))
        .arg(root.join("config/helm/windlass/templates"))
        .output()
        .expect("running rbacgen");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
