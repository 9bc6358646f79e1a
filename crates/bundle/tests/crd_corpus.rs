//! Every CustomResourceDefinition in the real OperatorHub corpus (every version of every
//! package) converts to a structural v1 CRD, and converting the result again changes nothing.
//!
//! Without the corpus (`../shared/corpus` beside the checkout, or `WINDLASS_CORPUS`) it skips
//! and says so; see `windlass_corpus`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use windlass_bundle::crd::{self, check::structural_problems};

fn yaml_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable corpus").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path
                .extension()
                .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
            {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn corpus_crds(root: &Path) -> Vec<(String, Value)> {
    let mut crds = Vec::new();
    for path in yaml_files(root) {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let file = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string();
        let Ok(docs) = windlass_bundle::yaml::parse_documents(&file, &text) else {
            continue;
        };
        crds.extend(
            docs.documents
                .into_iter()
                .filter(crd::is_crd)
                .map(|d| (file.clone(), d)),
        );
    }
    crds
}

#[test]
fn every_corpus_crd_converts_to_structural_v1_and_is_a_fixed_point() {
    let Some(root) = windlass_corpus::operatorhub_or_skip() else {
        return;
    };
    let crds = corpus_crds(&root);
    assert!(
        crds.len() > 1000,
        "expected the whole corpus, found {} CRDs",
        crds.len()
    );
    let mut failures = Vec::new();
    let mut by_rule: BTreeMap<String, usize> = BTreeMap::new();
    let (mut v1beta1, mut changed) = (0, 0);
    for (file, crd) in &crds {
        if crd["apiVersion"] == crd::API_V1BETA1 {
            v1beta1 += 1;
        }
        let converted = match crd::to_v1(crd) {
            Ok(c) => c,
            Err(e) => {
                failures.push(format!("{file}: {e}"));
                continue;
            }
        };
        if !converted.changes.is_empty() {
            changed += 1;
        }
        for c in &converted.changes {
            let rule: String = c
                .what
                .split(|ch: char| ch.is_ascii_digit())
                .next()
                .unwrap_or_default()
                .to_string();
            *by_rule.entry(rule).or_default() += 1;
        }
        for (i, v) in converted.object["spec"]["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            for p in structural_problems(&v["schema"]["openAPIV3Schema"], &format!("versions[{i}]"))
            {
                failures.push(format!(
                    "{file}: not structural at {}: {}",
                    p.path, p.reason
                ));
            }
        }
        match crd::to_v1(&converted.object) {
            Ok(again) if again.object == converted.object && again.changes.is_empty() => {}
            Ok(again) => failures.push(format!(
                "{file}: second conversion changed {:?}",
                again.changes
            )),
            Err(e) => failures.push(format!("{file}: second conversion failed: {e}")),
        }
    }
    eprintln!(
        "{} CRDs, {v1beta1} v1beta1, {changed} changed; changes by kind:",
        crds.len()
    );
    for (rule, n) in &by_rule {
        eprintln!("{n:6}  {rule}");
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
