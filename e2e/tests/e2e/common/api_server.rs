//! Helpers of the legacy CRD tests (`legacy_crds.rs`) that ask the real API server through
//! kubectl: dry-run creates, test CRDs under a renamed group that are waited for and deleted
//! again, and what a round trip through the API server lost.

use std::io::Write;
use std::process::Stdio;

use serde_json::{Value, json};
use windlass_testkit::kubectl;

/// Runs kubectl with `object` on stdin; the JSON it prints, or its error message.
pub fn kubectl_with(args: &[&str], object: &Value) -> Result<Value, String> {
    let mut child = kubectl()
        .args(args)
        .args(["-f", "-", "-o", "json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(object.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    if output.status.success() {
        serde_json::from_slice(&output.stdout).map_err(|e| format!("kubectl printed no JSON: {e}"))
    } else {
        Err(String::from_utf8_lossy(&output.stderr)
            .trim()
            .replace('\n', " "))
    }
}

pub fn without_namespace(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("namespace");
    }
    object
}

/// Server-side dry-run create. An object that already exists passed validation (the API server
/// validates before it looks at storage), so it counts as accepted.
pub fn accepted(object: &Value, namespace: &str) -> Result<(), String> {
    match kubectl_with(
        &["create", "--dry-run=server", "-n", namespace],
        &without_namespace(object),
    ) {
        Ok(_) => Ok(()),
        Err(e) if e.contains("AlreadyExists") || e.contains("already exists") => Ok(()),
        Err(e) => Err(e),
    }
}

/// The converted CRD under a group no other test uses; webhook conversion is switched off
/// because the operator's conversion service does not run here.
pub fn renamed(crd_object: &Value, tag: &str) -> Value {
    let mut c = crd_object.clone();
    let group = format!("{}.{tag}", c["spec"]["group"].as_str().unwrap_or_default());
    let plural = c["spec"]["names"]["plural"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    c["spec"]["group"] = json!(group);
    c["metadata"] = json!({ "name": format!("{plural}.{group}") });
    if let Some(spec) = c["spec"].as_object_mut() {
        spec.remove("conversion");
    }
    c
}

/// Fields of `sent` missing or different in `got` (what the API server pruned or rewrote).
pub fn lost(sent: &Value, got: &Value, path: &str, out: &mut Vec<String>) {
    match (sent, got) {
        (Value::Object(s), Value::Object(g)) => {
            for (k, v) in s {
                let at = format!("{path}.{k}");
                match g.get(k) {
                    // A null for a non-nullable field is dropped by the API server by design.
                    None if v.is_null() => {}
                    None => out.push(format!("{at} pruned")),
                    Some(gv) => lost(v, gv, &at, out),
                }
            }
        }
        (Value::Array(s), Value::Array(g)) if s.len() == g.len() => {
            for (i, (sv, gv)) in s.iter().zip(g).enumerate() {
                lost(sv, gv, &format!("{path}[{i}]"), out);
            }
        }
        (Value::Number(s), Value::Number(g)) if s.as_f64() == g.as_f64() => {}
        (s, g) if s == g => {}
        _ => out.push(format!("{path} changed")),
    }
}

/// Polls until the CRD reports Established (60 s at most).
pub fn established(name: &str) -> Result<(), String> {
    let mut last = String::new();
    for _ in 0..120 {
        let output = kubectl()
            .args([
                "get",
                "crd",
                name,
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"Established\")].status}",
            ])
            .output()
            .map_err(|e| e.to_string())?;
        last = String::from_utf8_lossy(&output.stdout).trim().to_string()
            + &String::from_utf8_lossy(&output.stderr);
        if last == "True" {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    Err(format!("never became Established ({last})"))
}

/// Polls discovery (which refreshes kubectl's cache) until the CRD's resource is listed: an
/// Established CRD can take a moment to appear there, and kubectl trusts its cache.
pub fn discovered(crd_name: &str) -> Result<(), String> {
    let Some((plural, group)) = crd_name.split_once('.') else {
        return Err("not plural.group".into());
    };
    let want = format!("{plural}.{group}");
    for _ in 0..120 {
        let output = kubectl()
            .args([
                "api-resources",
                "--api-group",
                group,
                "-o",
                "name",
                "--cached=false",
            ])
            .output()
            .map_err(|e| e.to_string())?;
        if String::from_utf8_lossy(&output.stdout)
            .lines()
            .any(|l| l.trim() == want)
        {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    Err("never listed by discovery".into())
}

/// Deletes the test's CRDs however the test ends.
pub struct CreatedCrds(pub Vec<String>);

impl Drop for CreatedCrds {
    fn drop(&mut self) {
        for name in &self.0 {
            let _ = kubectl()
                .args(["delete", "crd", name, "--wait=false", "--ignore-not-found"])
                .output();
        }
    }
}
