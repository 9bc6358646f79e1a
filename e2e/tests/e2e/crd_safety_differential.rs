//! windlass's CRD upgrade safety verdicts against the real API server's.
//!
//! Given the highest version of every package of the OperatorHub corpus, converted as windlass
//! applies it, and each CRD's `alm-examples` created for real as the existing objects,
//! when the CRD's schema is changed in one way per change class (a tightened maximum, an enum
//! without the sample's value, a removed field, a CEL rule, ...),
//! then windlass's verdict on each existing object (`windlass_bundle::crd::safety::findings`)
//! agrees with the API server's own: a server-side dry-run create of the object under the
//! changed schema, strict field validation on, so that pruned fields show as unknown fields.
//! A create, not an update: the API server ratchets updates of unchanged objects, which would
//! hide exactly the problems windlass looks for.
//!
//! Each CRD is created under a group renamed with a unique suffix (the "base", holding the
//! objects), and the variants are served as extra versions of a second CRD (the "host"), so no
//! CRD is updated in place and no stale schema can answer. The CRD-wide rules (scope, stored
//! and served versions) are compared with a dry-run update of the base CRD, and
//! `crd::safety::unchanged` with the base CRD as the API server returns it.
//!
//! Every agreement is counted per change class and every disagreement printed. The test fails
//! on a disagreement that is not listed in `KNOWN_DISAGREEMENTS` with its reason. The corpus
//! lives at `../shared/corpus` (see `windlass_corpus`).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use windlass_bundle::crd::safety::{self, ViolationKind};
use windlass_testkit::unique_name;

use crate::common::{api_verdict, corpus_cases, crd_variants};

use api_verdict::{ApiVerdict, collection, normalise};
use corpus_cases::{Case, as_sent, cases, corpus, renamed};

/// Disagreements that are understood, as (change class, reason). None so far.
const KNOWN_DISAGREEMENTS: &[(&str, &str)] = &[];

/// How many CRDs are worked on at once.
const PARALLEL_CRDS: usize = 8;
/// Host CRDs stay well below the API server's request size limit.
const MAX_HOST_BYTES: usize = 700_000;

#[derive(Default)]
struct Tally {
    crds: usize,
    crds_refused: Vec<String>,
    samples: usize,
    samples_invalid_as_shipped: usize,
    unchanged_agrees: usize,
    /// (class) -> (agreements, agreements on the exact fields)
    agreements: BTreeMap<String, (usize, usize)>,
    /// (class) -> objects windlass could not judge (a rule it does not implement), with the
    /// API server's verdict.
    not_judged: BTreeMap<String, Vec<String>>,
    disagreements: Vec<(String, String)>,
    variants_refused: Vec<String>,
    /// Packages not started within the time budget.
    not_reached: Vec<String>,
}

/// The CRDs the test created, deleted however the test ends (their objects go with them).
#[derive(Default)]
struct CreatedCrds(Mutex<Vec<String>>);

impl Drop for CreatedCrds {
    fn drop(&mut self) {
        let names = std::mem::take(&mut *self.0.lock().unwrap());
        for chunk in names.chunks(50) {
            let _ = windlass_testkit::kubectl()
                .args(["delete", "crd", "--wait=false", "--ignore-not-found"])
                .args(chunk)
                .output();
        }
    }
}

async fn established(api: &Api<CustomResourceDefinition>, name: &str) -> Result<Value, String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let crd = api.get(name).await.map_err(|e| e.to_string())?;
        let ready = crd
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            });
        if ready {
            return serde_json::to_value(crd).map_err(|e| e.to_string());
        }
        if Instant::now() > deadline {
            return Err(format!("CRD {name} never became Established"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn create_crd(
    client: &Client,
    crd_object: &Value,
    crds: &CreatedCrds,
) -> Result<Value, String> {
    let api = Api::<CustomResourceDefinition>::all(client.clone());
    let typed: CustomResourceDefinition =
        serde_json::from_value(crd_object.clone()).map_err(|e| format!("not a CRD: {e}"))?;
    let name = api
        .create(&PostParams::default(), &typed)
        .await
        .map_err(|e| e.to_string())?
        .name_any();
    crds.0.lock().unwrap().push(name.clone());
    established(&api, &name).await
}

/// A dry-run request that succeeds once the API server serves the new resource.
async fn served(client: &Client, url: &str, object: &Value) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match api_verdict::create(client, url, object, true, "Ignore").await {
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            _ => return Ok(()),
        }
        if Instant::now() > deadline {
            return Err(format!("{url} is never served"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Object findings of windlass, per object id: (pruned fields, invalid fields, not judged).
fn windlass_verdicts(
    live: &Value,
    new: &Value,
    existing: &[Value],
) -> BTreeMap<String, (Vec<String>, Vec<String>, bool)> {
    let mut out: BTreeMap<String, (Vec<String>, Vec<String>, bool)> = BTreeMap::new();
    for v in safety::findings(live, new, existing) {
        // Ratcheted findings count too: every sample was valid under the live schema (the API
        // server created it), so windlass finding it invalid there is a disagreement as well.
        let Some(object) = v.object.clone() else {
            continue;
        };
        let entry = out.entry(object).or_default();
        let field = normalise(v.field.as_deref().unwrap_or(""));
        match v.kind {
            ViolationKind::ExistingFieldPruned => entry.0.push(field),
            ViolationKind::InvalidExistingObject | ViolationKind::ExistingObjectFailsRule => {
                entry.1.push(field)
            }
            ViolationKind::RuleNotEvaluated => entry.2 = true,
            _ => {}
        }
    }
    out
}

fn object_id(object: &Value) -> String {
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    match object["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}

/// The base CRD with `version`'s schema replaced: what an upgrade to the variant would write.
fn with_schema(base: &Value, version: &str, schema: &Value) -> Value {
    let mut new = base.clone();
    for v in new["spec"]["versions"].as_array_mut().into_iter().flatten() {
        if v["name"] == version {
            v["schema"]["openAPIV3Schema"] = schema.clone();
        }
    }
    new
}

/// A host CRD under `group` serving the variants `members` as versions `w<k>`, the first one
/// storing.
fn host(base: &Value, group: &str, members: &[usize], variants: &[crd_variants::Variant]) -> Value {
    let plural = base["spec"]["names"]["plural"].as_str().unwrap_or_default();
    let mut host = base.clone();
    host["spec"]["group"] = json!(group);
    host["metadata"] = json!({"name": format!("{plural}.{group}")});
    host["spec"]["versions"] = Value::Array(
        members
            .iter()
            .enumerate()
            .map(|(i, k)| {
                json!({"name": format!("w{k}"), "served": true, "storage": i == 0,
                       "schema": {"openAPIV3Schema": variants[*k].schema}})
            })
            .collect(),
    );
    host
}

/// The variants in groups whose host CRD stays below the size limit.
fn host_groups(variants: &[crd_variants::Variant]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut size = 0;
    for (k, v) in variants.iter().enumerate() {
        let bytes = v.schema.to_string().len();
        match out.last_mut() {
            Some(group) if size + bytes <= MAX_HOST_BYTES => group.push(k),
            _ => {
                out.push(vec![k]);
                size = 0;
            }
        }
        size += bytes;
    }
    out
}

/// Compares both verdicts on every sample for every variant, and the CRD-wide rules.
async fn run_case(
    client: &Client,
    namespace: &str,
    tag: &str,
    index: usize,
    case: Case,
    crds: &CreatedCrds,
    tally: &Mutex<Tally>,
) {
    let label = format!(
        "{} {}",
        case.package,
        case.crd["metadata"]["name"].as_str().unwrap_or_default()
    );
    let group = format!("c{index}.{tag}");
    let base = renamed(&case.crd, &group);
    let namespaced = case.crd["spec"]["scope"] != "Cluster";
    let ns = namespaced.then_some(namespace);
    let plural = base["spec"]["names"]["plural"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let live = match create_crd(client, &base, crds).await {
        Ok(live) => live,
        Err(e) => {
            tally
                .lock()
                .unwrap()
                .crds_refused
                .push(format!("{label}: {e}"));
            return;
        }
    };
    // The API server's defaults are not a change.
    let unchanged = safety::unchanged(&live, &base);
    let url = collection(&group, &case.version, &plural, ns);
    let mut existing = Vec::new();
    for (i, sample) in case.samples.iter().enumerate() {
        let mut sent = as_sent(sample, &group, &case.version);
        if sent["metadata"]["name"].as_str().is_none_or(str::is_empty) {
            sent["metadata"]["name"] = json!(format!("sample-{i}"));
        }
        let _ = served(client, &url, &sent).await;
        match api_verdict::create(client, &url, &sent, false, "Ignore").await {
            Ok(created) => existing.push(created),
            Err(_) => tally.lock().unwrap().samples_invalid_as_shipped += 1,
        }
    }
    {
        let mut t = tally.lock().unwrap();
        t.crds += 1;
        t.samples += existing.len();
        if unchanged {
            t.unchanged_agrees += 1;
        } else {
            t.disagreements.push((
                "Unchanged".into(),
                format!("{label}: unchanged() says the CRD as served differs from the one sent"),
            ));
        }
    }
    crd_wide(client, &label, &live, tally).await;
    if existing.is_empty() {
        return;
    }
    let Some(schema) = safety_schema(&live, &case.version) else {
        return;
    };
    let variants = crd_variants::variants(&schema, &existing);
    for (h, members) in host_groups(&variants).into_iter().enumerate() {
        let mut groups = Vec::new();
        let mut members = members;
        // The API server names the versions it refuses (`spec.versions[3]`): leave those
        // variants out and try again, then each remaining variant alone.
        for attempt in 0..3 {
            let group_name = format!("h{h}r{attempt}.{group}");
            if attempt == 2 {
                for k in std::mem::take(&mut members) {
                    let alone_group = format!("a{k}.{group}");
                    match create_crd(client, &host(&base, &alone_group, &[k], &variants), crds)
                        .await
                    {
                        Ok(_) => groups.push((alone_group, vec![k])),
                        Err(e) => refused_variant(tally, &label, &variants[k], &e),
                    }
                }
                break;
            }
            match create_crd(client, &host(&base, &group_name, &members, &variants), crds).await {
                Ok(_) => {
                    groups.push((group_name, std::mem::take(&mut members)));
                    break;
                }
                Err(e) => {
                    let refused = refused_versions(&e);
                    type Indexed = Vec<(usize, usize)>;
                    let (out, kept): (Indexed, Indexed) = members
                        .iter()
                        .copied()
                        .enumerate()
                        .partition(|(i, _)| refused.contains(i));
                    let out: Vec<usize> = out.into_iter().map(|(_, k)| k).collect();
                    let kept: Vec<usize> = kept.into_iter().map(|(_, k)| k).collect();
                    for k in &out {
                        refused_variant(tally, &label, &variants[*k], &e);
                    }
                    if out.is_empty() && members.len() == 1 {
                        refused_variant(tally, &label, &variants[members[0]], &e);
                        members.clear();
                    } else if !out.is_empty() {
                        members = kept;
                    }
                    if members.is_empty() {
                        break;
                    }
                }
            }
        }
        for (host_group, members) in groups {
            for k in members {
                let variant = &variants[k];
                let version = format!("w{k}");
                let host_url = collection(&host_group, &version, &plural, ns);
                let new = with_schema(&live, &case.version, &variant.schema);
                let ours = windlass_verdicts(&live, &new, &existing);
                for object in &existing {
                    let sent = as_sent(object, &host_group, &version);
                    let _ = served(client, &host_url, &sent).await;
                    let theirs = match api_verdict::verdict(client, &host_url, &sent).await {
                        Ok(v) => v,
                        Err(e) => {
                            tally.lock().unwrap().disagreements.push((
                                variant.class.to_string(),
                                format!("{label}: the API server did not answer: {e}"),
                            ));
                            continue;
                        }
                    };
                    let id = object_id(object);
                    let (pruned, invalid, not_judged) = ours.get(&id).cloned().unwrap_or_default();
                    compare(
                        &label,
                        variant,
                        &id,
                        (pruned, invalid, not_judged),
                        &theirs,
                        tally,
                    );
                }
            }
        }
    }
}

/// The indexes of the versions an error about a CRD names (`spec.versions[3].schema...`).
fn refused_versions(error: &str) -> Vec<usize> {
    let marker = "spec.versions[";
    let mut out = Vec::new();
    let mut rest = error;
    while let Some(i) = rest.find(marker) {
        rest = &rest[i + marker.len()..];
        if let Some(end) = rest.find(']')
            && let Ok(n) = rest[..end].parse::<usize>()
            && !out.contains(&n)
        {
            out.push(n);
        }
    }
    out
}

fn refused_variant(
    tally: &Mutex<Tally>,
    label: &str,
    variant: &crd_variants::Variant,
    error: &str,
) {
    tally.lock().unwrap().variants_refused.push(format!(
        "{label} {} ({}): {error}",
        variant.class, variant.field
    ));
}

fn safety_schema(live: &Value, version: &str) -> Option<Value> {
    live["spec"]["versions"]
        .as_array()?
        .iter()
        .find(|v| v["name"] == version)
        .map(|v| v["schema"]["openAPIV3Schema"].clone())
}

fn compare(
    label: &str,
    variant: &crd_variants::Variant,
    id: &str,
    ours: (Vec<String>, Vec<String>, bool),
    theirs: &ApiVerdict,
    tally: &Mutex<Tally>,
) {
    let (pruned, invalid, not_judged) = ours;
    let pruned: std::collections::BTreeSet<String> = pruned.into_iter().collect();
    let invalid: std::collections::BTreeSet<String> = invalid.into_iter().collect();
    let mut t = tally.lock().unwrap();
    let class = variant.class.to_string();
    if not_judged {
        t.not_judged.entry(class).or_default().push(format!(
            "{label} {id}: API server {}",
            if theirs.refuses() {
                "refuses"
            } else {
                "accepts"
            }
        ));
        return;
    }
    let we_block = !pruned.is_empty() || !invalid.is_empty();
    if we_block == theirs.refuses() && pruned == theirs.pruned {
        let entry = t.agreements.entry(class).or_default();
        entry.0 += 1;
        if invalid == theirs.invalid {
            entry.1 += 1;
        }
        return;
    }
    let what = format!(
        "{label} {id} ({}): windlass prunes {pruned:?}, finds invalid {invalid:?}; the API \
         server prunes {:?}, finds invalid {:?}: {}",
        variant.field,
        theirs.pruned,
        theirs.invalid,
        theirs.messages.join(" | ")
    );
    eprintln!("disagreement {class}: {what}");
    t.disagreements.push((class, what));
}

/// Scope change, stored-version removal and served-version removal, each sent as a dry-run
/// update of the live base CRD: the API server refuses what windlass blocks.
async fn crd_wide(client: &Client, label: &str, live: &Value, tally: &Mutex<Tally>) {
    let api = Api::<CustomResourceDefinition>::all(client.clone());
    let mut scope = live.clone();
    scope["spec"]["scope"] = json!(if live["spec"]["scope"] == "Cluster" {
        "Namespaced"
    } else {
        "Cluster"
    });
    let mut stored = live.clone();
    if let Some(versions) = stored["spec"]["versions"].as_array_mut() {
        let storage = versions
            .iter()
            .position(|v| v["storage"] == true)
            .unwrap_or(0);
        let mut replacement = versions[storage].clone();
        replacement["name"] = json!("v99");
        versions.remove(storage);
        for v in versions.iter_mut() {
            v["storage"] = json!(false);
        }
        versions.push(replacement);
    }
    let mut unserved = live.clone();
    for v in unserved["spec"]["versions"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        if v["storage"] != true {
            v["served"] = json!(false);
        }
    }
    let served_changes = safety::served_versions(&unserved) != safety::served_versions(live);
    let mut checks = vec![("ScopeChanged", scope), ("StoredVersionRemoved", stored)];
    if served_changes {
        checks.push(("ServedVersionRemoved", unserved));
    }
    for (class, new) in checks {
        let blocks = safety::findings(live, &new, &[])
            .iter()
            .any(|v| v.kind.is_crd_wide() && v.blocks());
        let typed: Result<CustomResourceDefinition, _> = serde_json::from_value(new);
        let refused = match typed {
            Ok(t) => api
                .replace(
                    &t.name_any(),
                    &PostParams {
                        dry_run: true,
                        ..Default::default()
                    },
                    &t,
                )
                .await
                .err()
                .map(|e| e.to_string()),
            Err(e) => Some(e.to_string()),
        };
        let mut t = tally.lock().unwrap();
        if blocks == refused.is_some() {
            t.agreements.entry(class.to_string()).or_default().0 += 1;
            t.agreements.entry(class.to_string()).or_default().1 += 1;
        } else {
            t.disagreements.push((
                class.to_string(),
                format!(
                    "{label}: windlass {} it, the API server {}",
                    if blocks { "blocks" } else { "allows" },
                    refused.map_or("accepts it".to_string(), |e| format!("refuses it: {e}"))
                ),
            ));
        }
    }
}

#[tokio::test]
async fn windlass_crd_safety_verdicts_agree_with_the_api_server() {
    let Some(root) = corpus() else { return };
    let started = Instant::now();
    let client = windlass_testkit::client().await;
    let ns = windlass_testkit::TestNamespace::create(&client, "crd-safety").await;
    let tag = unique_name("d").replace('-', "");
    let crds = CreatedCrds::default();
    let tally = Mutex::new(Tally::default());
    // Cases not started within the budget are reported as not reached, never hidden.
    let budget = Duration::from_secs(
        std::env::var("WINDLASS_DIFFERENTIAL_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(180),
    );
    let cases = cases(&root);
    assert!(
        cases.len() >= 30,
        "expected a CRD with examples in most corpus packages, found {}",
        cases.len()
    );
    futures::stream::iter(cases.into_iter().enumerate())
        .for_each_concurrent(PARALLEL_CRDS, |(i, case)| {
            let (client, ns, tag, crds, tally, started, budget) =
                (&client, &ns.name, &tag, &crds, &tally, &started, budget);
            async move {
                if started.elapsed() > budget {
                    tally.lock().unwrap().not_reached.push(case.package);
                    return;
                }
                let label = format!("{} {}", case.package, case.version);
                let one = Instant::now();
                run_case(client, ns, tag, i, case, crds, tally).await;
                eprintln!(
                    "[{:>4.0} s] {label} compared in {:.1} s",
                    started.elapsed().as_secs_f64(),
                    one.elapsed().as_secs_f64()
                );
            }
        })
        .await;
    let t = tally.into_inner().unwrap();
    eprintln!(
        "{} CRDs with examples, {} existing objects ({} examples invalid as shipped), {:.0} s",
        t.crds,
        t.samples,
        t.samples_invalid_as_shipped,
        started.elapsed().as_secs_f64()
    );
    eprintln!(
        "unchanged(): {} CRDs as served agree with the CRD sent",
        t.unchanged_agrees
    );
    for refused in &t.crds_refused {
        eprintln!("CRD refused by the API server (not compared): {refused}");
    }
    for refused in &t.variants_refused {
        eprintln!("variant refused by the API server (not compared): {refused}");
    }
    eprintln!("{:<34} {:>8} {:>8}", "change class", "agree", "exactly");
    for (class, (agree, exact)) in &t.agreements {
        eprintln!("{class:<34} {agree:>8} {exact:>8}");
    }
    for (class, objects) in &t.not_judged {
        eprintln!(
            "{class}: windlass could not judge {} objects (a rule it does not implement)",
            objects.len()
        );
        for o in objects.iter().take(3) {
            eprintln!("  {o}");
        }
    }
    let mut unexplained = Vec::new();
    for (class, what) in &t.disagreements {
        match KNOWN_DISAGREEMENTS.iter().find(|(c, _)| c == class) {
            Some((_, why)) => eprintln!("known disagreement ({why}): {class}: {what}"),
            None => {
                eprintln!("DISAGREEMENT {class}: {what}");
                unexplained.push(format!("{class}: {what}"));
            }
        }
    }
    let agreements: usize = t.agreements.values().map(|(a, _)| a).sum();
    eprintln!(
        "{agreements} agreements, {} disagreements ({} unexplained)",
        t.disagreements.len(),
        unexplained.len()
    );
    // Enough CRDs to mean something even when a slow machine runs out of budget.
    let unchanged_agreements = t.agreements.get("Unchanged").map_or(0, |(a, _)| *a);
    assert!(
        t.crds >= 10 && unchanged_agreements >= 10,
        "too few comparisons: {} CRDs, {agreements} agreements",
        t.crds
    );
    assert!(
        unexplained.is_empty(),
        "{} disagreements:\n{}",
        unexplained.len(),
        unexplained.join("\n")
    );
}
