//! Legacy bundles on the pinned Kubernetes, judged by the real API server.
//!
//! Given the highest version of every package of the OperatorHub corpus,
//! when windlass converts its manifests (what `windlass bundle manifests` prints),
//! then the API server accepts every object in a server-side dry-run create,
//! and every custom resource of the CSV's `alm-examples` is accepted by its converted CRD under
//! strict field validation and comes back with no field lost.
//!
//! The converted CRDs are created for real under a group renamed with a unique suffix, so that
//! they never collide with CRDs other tests install, and deleted afterwards. Without the corpus
//! (`../shared/corpus` beside the checkout, or `WINDLASS_CORPUS`) the tests skip and say so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use windlass_bundle::{Bundle, crd, legacy_apis, load_bundle};
use windlass_testkit::unique_name;

use crate::common::api_server::{
    CreatedCrds, accepted, discovered, established, kubectl_with, lost, renamed, without_namespace,
};

/// Examples that are invalid even against the schema their authors shipped, and why; checked
/// by reading each shipped CRD. They are reported, not counted as conversion failures.
const INVALID_AS_SHIPPED: &[(&str, &str, &str)] = &[
    (
        "camel-k",
        "CamelCatalog #1",
        "lacks spec.artifacts, spec.loaders and spec.runtime, required by the shipped v1 schema",
    ),
    (
        "couchbase-enterprise",
        "CouchbaseBackup #8",
        "its status lacks cronjob, failed, job, pod and running, required by the shipped schema",
    ),
    (
        "couchbase-enterprise",
        "CouchbaseBackupRestore #9",
        "its status lacks failed, job, pod and running, required by the shipped schema",
    ),
    (
        "couchbase-enterprise",
        "CouchbaseReplication #7",
        "compressionType Snappy is not in the shipped enum (None, Auto)",
    ),
    (
        "infinispan",
        "Restore #3",
        "lacks spec.backup, required by the shipped schema",
    ),
    (
        "kogito-operator",
        "KogitoInfra #1",
        "lacks spec.resource.name, required by the shipped v1 schema",
    ),
    (
        "multicluster-operators-subscription",
        "Channel #0",
        "status.state is not in the shipped v1 schema (pruned as shipped too)",
    ),
    (
        "sealed-secrets-operator-helm",
        "SealedSecretController #0",
        "metadata.name SealedSecretController is not a valid object name",
    ),
    (
        "shipwright-operator",
        "BuildRun #3",
        "spec.resources is not in the shipped v1 schema (pruned as shipped too)",
    ),
    (
        "topolvm-operator",
        "LogicalVolume #1",
        "lacks spec.name, spec.nodeName and spec.size, required by the shipped v1 schema",
    ),
];

/// The highest-versioned bundle of every package folder.
fn highest_versions(root: &Path) -> Vec<(String, Bundle)> {
    let mut packages: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    packages.sort();
    let mut out = Vec::new();
    for package in packages {
        let mut versions: Vec<PathBuf> = std::fs::read_dir(&package)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        versions.sort();
        let best = versions
            .iter()
            .filter_map(|v| load_bundle(v).ok())
            .filter_map(|b| b.csv.version().ok().map(|v| (v, b)))
            .max_by(|a, b| a.0.cmp(&b.0));
        let name = package.file_name().unwrap().to_string_lossy().into_owned();
        match best {
            Some((_, bundle)) => out.push((name, bundle)),
            None => panic!("package {name}: no loadable bundle"),
        }
    }
    out
}

#[derive(Default)]
struct Tally {
    bundles_with_crds: usize,
    crds: usize,
    v1beta1: usize,
    shipped_crds_ok: usize,
    shipped_bundles_ok: usize,
    converted_crds_ok: usize,
    converted_bundles_ok: usize,
    other_objects: usize,
    other_objects_ok: usize,
    examples: usize,
    examples_ok: usize,
    examples_elsewhere: usize,
    examples_unserved: usize,
}

#[tokio::test]
async fn highest_corpus_bundles_are_accepted_after_conversion_and_their_examples_round_trip() {
    let Some(root) = windlass_corpus::operatorhub_or_skip() else {
        return;
    };
    let client = windlass_testkit::client().await;
    let ns = windlass_testkit::TestNamespace::create(&client, "legacy-crds").await;
    let tag = unique_name("e2e").replace('-', "");
    let mut t = Tally::default();
    let mut failures = Vec::new();
    let mut example_failures: BTreeMap<String, String> = BTreeMap::new();

    // WINDLASS_LEGACY_PACKAGES=a,b narrows the run to some packages when chasing one failure.
    let only: Option<Vec<String>> = std::env::var("WINDLASS_LEGACY_PACKAGES")
        .ok()
        .map(|v| v.split(',').map(str::to_string).collect());
    for (package, bundle) in highest_versions(&root) {
        if only.as_ref().is_some_and(|o| !o.contains(&package)) {
            continue;
        }
        let shipped_crds: Vec<&Value> = bundle
            .manifests
            .iter()
            .map(|m| &m.object)
            .filter(|o| crd::is_crd(o))
            .collect();
        if !shipped_crds.is_empty() {
            t.bundles_with_crds += 1;
            t.crds += shipped_crds.len();
            t.v1beta1 += shipped_crds
                .iter()
                .filter(|c| c["apiVersion"] == crd::API_V1BETA1)
                .count();
            let ok = shipped_crds
                .iter()
                .filter(|c| accepted(c, &ns.name).is_ok())
                .count();
            t.shipped_crds_ok += ok;
            t.shipped_bundles_ok += usize::from(ok == shipped_crds.len());
        }
        let converted = match legacy_apis::convert_manifests(&bundle.manifests) {
            Ok(c) => c,
            Err(e) => {
                failures.push(format!("{package}: refused: {e}"));
                continue;
            }
        };
        let mut crds_ok = 0;
        for m in &converted.objects {
            let is_crd = crd::is_crd(&m.object);
            if !is_crd {
                t.other_objects += 1;
            }
            match accepted(&m.object, &ns.name) {
                Ok(()) if is_crd => crds_ok += 1,
                Ok(()) => t.other_objects_ok += 1,
                Err(e) => failures.push(format!("{package} {}: {e}", m.file)),
            }
        }
        t.converted_crds_ok += crds_ok;
        if !shipped_crds.is_empty() && crds_ok == shipped_crds.len() {
            t.converted_bundles_ok += 1;
        }
        examples(
            &package,
            &bundle,
            &converted,
            &ns.name,
            &tag,
            &mut t,
            &mut failures,
            &mut example_failures,
        );
    }

    eprintln!(
        "bundles with CRDs: {}, CRDs: {} ({} v1beta1)",
        t.bundles_with_crds, t.crds, t.v1beta1
    );
    eprintln!(
        "as shipped: {} bundles, {} CRDs accepted",
        t.shipped_bundles_ok, t.shipped_crds_ok
    );
    eprintln!(
        "converted:  {} bundles, {} CRDs accepted",
        t.converted_bundles_ok, t.converted_crds_ok
    );
    eprintln!(
        "other manifests: {} of {} accepted",
        t.other_objects_ok, t.other_objects
    );
    eprintln!(
        "alm-examples: {} of {} accepted with no field lost ({} name a CRD outside their bundle, {} a version their CRD never had)",
        t.examples_ok, t.examples, t.examples_elsewhere, t.examples_unserved
    );
    for (example, reason) in &example_failures {
        let shipped = INVALID_AS_SHIPPED
            .iter()
            .find(|(p, k, _)| format!("{p} {k}") == *example);
        match shipped {
            Some((_, _, why)) => eprintln!("example {example}: invalid as shipped: {why}"),
            None => failures.push(format!("example {example}: {reason}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[allow(clippy::too_many_arguments)]
fn examples(
    package: &str,
    bundle: &Bundle,
    converted: &legacy_apis::ConvertedManifests,
    namespace: &str,
    tag: &str,
    t: &mut Tally,
    failures: &mut Vec<String>,
    example_failures: &mut BTreeMap<String, String>,
) {
    let csv = bundle
        .manifests
        .iter()
        .find(|m| m.object["kind"] == "ClusterServiceVersion");
    let Some(text) = csv
        .and_then(|m| m.object.pointer("/metadata/annotations/alm-examples"))
        .and_then(Value::as_str)
    else {
        return;
    };
    let Ok(list) = serde_json::from_str::<Vec<Value>>(text) else {
        failures.push(format!("{package}: alm-examples is not a JSON list"));
        return;
    };
    // (group, kind) -> converted CRD
    let crds: BTreeMap<(String, String), &Value> = converted
        .objects
        .iter()
        .map(|m| &m.object)
        .filter(|o| crd::is_crd(o))
        .map(|c| {
            (
                (
                    c["spec"]["group"].as_str().unwrap_or_default().to_string(),
                    c["spec"]["names"]["kind"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                ),
                c,
            )
        })
        .collect();
    // Every CRD the examples need exists before the first example is sent, so kubectl's
    // discovery sees them all.
    let mut created = CreatedCrds(Vec::new());
    let mut runnable = Vec::new();
    for (i, example) in list.iter().enumerate() {
        let api = example["apiVersion"].as_str().unwrap_or_default();
        let (group, version) = api.rsplit_once('/').unwrap_or(("", api));
        let kind = example["kind"].as_str().unwrap_or_default().to_string();
        let Some(crd_object) = crds.get(&(group.to_string(), kind.clone())) else {
            t.examples_elsewhere += 1;
            continue;
        };
        // Conversion never drops a version, so an unserved one is the example's own mistake.
        let served = crd_object["spec"]["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|v| v["name"] == version);
        if !served {
            t.examples_unserved += 1;
            eprintln!(
                "example {package} {kind} #{i}: invalid as shipped: {version} is not a version of its CRD"
            );
            continue;
        }
        t.examples += 1;
        let test_crd = renamed(crd_object, tag);
        let crd_name = test_crd["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if !created.0.contains(&crd_name) {
            if let Err(e) = kubectl_with(&["create"], &test_crd) {
                failures.push(format!("{package}: creating CRD {crd_name}: {e}"));
                continue;
            }
            created.0.push(crd_name.clone());
            if let Err(e) = established(&crd_name) {
                failures.push(format!("{package}: CRD {crd_name}: {e}"));
                continue;
            }
        }
        runnable.push((i, example, kind, version.to_string(), *crd_object, test_crd));
    }
    for name in &created.0 {
        if let Err(e) = discovered(name) {
            failures.push(format!("{package}: CRD {name}: {e}"));
        }
    }
    for (i, example, kind, version, crd_object, test_crd) in runnable {
        let version = version.as_str();
        let id = format!("{package} {kind} #{i}");
        let mut sent = without_namespace(example);
        sent["apiVersion"] = json!(format!(
            "{}/{version}",
            test_crd["spec"]["group"].as_str().unwrap_or_default()
        ));
        if sent.pointer("/metadata/name").is_none()
            && sent.pointer("/metadata/generateName").is_none()
        {
            sent["metadata"]["name"] = json!(format!("example-{i}"));
        }
        match kubectl_with(
            &[
                "create",
                "--dry-run=server",
                "--validate=strict",
                "-n",
                namespace,
            ],
            &sent,
        ) {
            Ok(got) => {
                // With a status subresource the API server ignores status on create, by design.
                let status_ignored = crd_object["spec"]["versions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|v| v["name"] == version && v.pointer("/subresources/status").is_some());
                let mut gone = Vec::new();
                for (k, v) in sent.as_object().into_iter().flatten() {
                    let skip = matches!(k.as_str(), "apiVersion" | "kind" | "metadata")
                        || (k == "status" && status_ignored);
                    if !skip {
                        lost(v, got.get(k).unwrap_or(&Value::Null), k, &mut gone);
                    }
                }
                if gone.is_empty() {
                    t.examples_ok += 1;
                } else {
                    example_failures.insert(id, format!("fields lost: {}", gone.join(", ")));
                }
            }
            Err(e) => {
                example_failures.insert(id, e);
            }
        }
    }
}

/// Given etcd 0.9.4, whose CRDs are all `apiextensions.k8s.io/v1beta1` with no schema,
/// when windlass converts its manifests and the ClusterServiceVersion controller installs it,
/// then its CRDs are served as v1 and its operator Deployment becomes Available.
#[tokio::test]
async fn etcd_0_9_4_with_v1beta1_crds_installs_through_the_csv_controller() {
    use k8s_openapi::api::apps::v1::Deployment;
    use kube::{Api, ResourceExt, api::PostParams};
    use windlass_api::{ClusterServiceVersion, ClusterServiceVersionSpec, CsvPhase};

    let Some(root) = windlass_corpus::operatorhub_or_skip() else {
        return;
    };
    windlass_testkit::require_manager();
    let dir = root.join("etcd/0.9.4");
    let bundle = load_bundle(&dir).unwrap_or_else(|e| panic!("loading {}: {e}", dir.display()));
    let shipped = bundle
        .manifests
        .iter()
        .filter(|m| crd::is_crd(&m.object))
        .collect::<Vec<_>>();
    assert!(
        !shipped.is_empty()
            && shipped
                .iter()
                .all(|m| m.object["apiVersion"] == crd::API_V1BETA1)
    );
    let converted = legacy_apis::convert_manifests(&bundle.manifests).expect("etcd converts");
    assert!(!converted.changes.is_empty());

    let client = windlass_testkit::client().await;
    let ns = windlass_testkit::TestNamespace::create(&client, "legacy-etcd").await;
    for m in &converted.objects {
        assert!(
            crd::is_crd(&m.object),
            "etcd 0.9.4 ships only CRDs besides its CSV"
        );
        windlass_testkit::apply_crd(&client, &m.object).await;
    }
    let definition = json!({
        "metadata": {"annotations": bundle.csv.metadata.annotations, "labels": bundle.csv.metadata.labels},
        "spec": serde_json::to_value(&bundle.csv.spec).unwrap(),
    });
    let csv = ClusterServiceVersion::new(
        bundle.csv.name(),
        ClusterServiceVersionSpec {
            definition,
            target_namespaces: vec![ns.name.clone()],
            progress_deadline_seconds: Some(60),
            // What the conversion changed travels with the CSV, as the Blueprint records it.
            conversions: converted
                .changes
                .iter()
                .map(|(file, change)| format!("{file}: {change}"))
                .collect(),
            ..Default::default()
        },
    );
    let api = Api::<ClusterServiceVersion>::namespaced(client.clone(), &ns.name);
    api.create(&PostParams::default(), &csv).await.unwrap();
    let timeout = std::time::Duration::from_secs(120);
    let outcome = tokio::time::timeout(
        timeout + std::time::Duration::from_secs(5),
        windlass_testkit::wait_for("etcd 0.9.4 to Succeed", timeout, || async {
            let csv = api.get(&csv.name_any()).await.map_err(|e| e.to_string())?;
            match csv.status.as_ref().and_then(|s| s.phase) {
                Some(CsvPhase::Succeeded) => Ok(()),
                _ => Err(format!("{:?}", csv.status)),
            }
        }),
    )
    .await;
    if outcome.is_err() {
        panic!(
            "timed out; manager log:\n{}",
            windlass_testkit::manager_log_tail(40)
        );
    }
    let deployments = Api::<Deployment>::namespaced(client.clone(), &ns.name);
    for spec in bundle.csv.deployments() {
        let deployment = deployments.get(&spec.name).await.unwrap();
        let want = spec.spec["replicas"].as_i64().unwrap_or(1) as i32;
        assert_eq!(
            deployment
                .status
                .and_then(|s| s.available_replicas)
                .unwrap_or(0),
            want,
            "{} Available",
            spec.name
        );
    }
    // The CSV says what was converted: a condition, and an Event for `kubectl describe`.
    let installed = api.get(&csv.name_any()).await.unwrap();
    let conditions = installed.status.unwrap().conditions;
    let converted_condition = conditions
        .iter()
        .find(|c| c.type_ == "LegacyAPIsConverted")
        .expect("a LegacyAPIsConverted condition");
    assert!(
        converted_condition
            .message
            .contains("CustomResourceDefinition")
            || converted_condition.message.contains("etcd"),
        "{}",
        converted_condition.message
    );
    let events = windlass_testkit::run_ok(windlass_testkit::kubectl().args([
        "get",
        "events",
        "-n",
        &ns.name,
        "--field-selector",
        "reason=LegacyAPIsConverted",
        "-o",
        "name",
    ]));
    assert!(!events.trim().is_empty(), "no LegacyAPIsConverted event");
    // The served CRD is the converted v1 one, with its unknown fields kept.
    let served = windlass_testkit::kubectl()
        .args(["get", "crd", "etcdclusters.etcd.database.coreos.com", "-o", "jsonpath={.spec.versions[0].schema.openAPIV3Schema.x-kubernetes-preserve-unknown-fields}"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&served.stdout), "true");
    api.delete(&csv.name_any(), &Default::default())
        .await
        .unwrap();
}
