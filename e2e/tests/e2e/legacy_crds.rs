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

use futures::StreamExt;
use serde_json::{Value, json};
use windlass_bundle::{Bundle, crd, legacy_apis, load_bundle};
use windlass_testkit::unique_name;

use crate::common::api_server::{ApiServer, CreatedCrds, lost, renamed, without_namespace};

/// Packages checked at once. Each sends its requests one after another or a few together, so
/// the API server sees a bounded number in flight.
const PACKAGES_AT_ONCE: usize = 8;

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

impl Tally {
    fn add(&mut self, other: &Tally) {
        self.bundles_with_crds += other.bundles_with_crds;
        self.crds += other.crds;
        self.v1beta1 += other.v1beta1;
        self.shipped_crds_ok += other.shipped_crds_ok;
        self.shipped_bundles_ok += other.shipped_bundles_ok;
        self.converted_crds_ok += other.converted_crds_ok;
        self.converted_bundles_ok += other.converted_bundles_ok;
        self.other_objects += other.other_objects;
        self.other_objects_ok += other.other_objects_ok;
        self.examples += other.examples;
        self.examples_ok += other.examples_ok;
        self.examples_elsewhere += other.examples_elsewhere;
        self.examples_unserved += other.examples_unserved;
    }
}

/// What checking one package found.
#[derive(Default)]
struct Checked {
    tally: Tally,
    failures: Vec<String>,
    /// `<package> <kind> #<index>` -> why the example failed.
    example_failures: BTreeMap<String, String>,
    /// Lines for the log, printed in package order.
    notes: Vec<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn highest_corpus_bundles_are_accepted_after_conversion_and_their_examples_round_trip() {
    let Some(root) = windlass_corpus::operatorhub_or_skip() else {
        return;
    };
    let client = windlass_testkit::client().await;
    let ns = windlass_testkit::TestNamespace::create(&client, "legacy-crds").await;
    let api = ApiServer::new(client.clone());
    let tag = unique_name("e2e").replace('-', "");
    // WINDLASS_LEGACY_PACKAGES=a,b narrows the run to some packages when chasing one failure.
    let only: Option<Vec<String>> = std::env::var("WINDLASS_LEGACY_PACKAGES")
        .ok()
        .map(|v| v.split(',').map(str::to_string).collect());
    let packages: Vec<(String, Bundle)> =
        tokio::task::spawn_blocking(move || highest_versions(&root))
            .await
            .unwrap()
            .into_iter()
            .filter(|(package, _)| only.as_ref().is_none_or(|o| o.contains(package)))
            .collect();
    // In package order, several packages in flight.
    let checked: Vec<Checked> = futures::stream::iter(&packages)
        .map(|(package, bundle)| check_package(&api, package, bundle, &ns.name, &tag))
        .buffered(PACKAGES_AT_ONCE)
        .collect()
        .await;

    let mut t = Tally::default();
    let mut failures = Vec::new();
    let mut example_failures: BTreeMap<String, String> = BTreeMap::new();
    for c in checked {
        t.add(&c.tally);
        failures.extend(c.failures);
        example_failures.extend(c.example_failures);
        for note in c.notes {
            eprintln!("{note}");
        }
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

/// One package: its CRDs as shipped and every converted object in a dry-run create, then its
/// examples against its converted CRDs.
async fn check_package(
    api: &ApiServer,
    package: &str,
    bundle: &Bundle,
    namespace: &str,
    tag: &str,
) -> Checked {
    let mut c = Checked::default();
    let shipped_crds: Vec<&Value> = bundle
        .manifests
        .iter()
        .map(|m| &m.object)
        .filter(|o| crd::is_crd(o))
        .collect();
    if !shipped_crds.is_empty() {
        c.tally.bundles_with_crds += 1;
        c.tally.crds += shipped_crds.len();
        c.tally.v1beta1 += shipped_crds
            .iter()
            .filter(|crd| crd["apiVersion"] == crd::API_V1BETA1)
            .count();
        let verdicts =
            futures::future::join_all(shipped_crds.iter().map(|o| api.accepted(o, namespace)))
                .await;
        let ok = verdicts.iter().filter(|v| v.is_ok()).count();
        c.tally.shipped_crds_ok += ok;
        c.tally.shipped_bundles_ok += usize::from(ok == shipped_crds.len());
    }
    let converted = match legacy_apis::convert_manifests(&bundle.manifests) {
        Ok(converted) => converted,
        Err(e) => {
            c.failures.push(format!("{package}: refused: {e}"));
            return c;
        }
    };
    let verdicts = futures::future::join_all(
        converted
            .objects
            .iter()
            .map(|m| api.accepted(&m.object, namespace)),
    )
    .await;
    let mut crds_ok = 0;
    for (m, verdict) in converted.objects.iter().zip(verdicts) {
        let is_crd = crd::is_crd(&m.object);
        if !is_crd {
            c.tally.other_objects += 1;
        }
        match verdict {
            Ok(()) if is_crd => crds_ok += 1,
            Ok(()) => c.tally.other_objects_ok += 1,
            Err(e) => c.failures.push(format!("{package} {}: {e}", m.file)),
        }
    }
    c.tally.converted_crds_ok += crds_ok;
    if !shipped_crds.is_empty() && crds_ok == shipped_crds.len() {
        c.tally.converted_bundles_ok += 1;
    }
    examples(api, package, bundle, &converted, namespace, tag, &mut c).await;
    c
}

async fn examples(
    api: &ApiServer,
    package: &str,
    bundle: &Bundle,
    converted: &legacy_apis::ConvertedManifests,
    namespace: &str,
    tag: &str,
    c: &mut Checked,
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
        c.failures
            .push(format!("{package}: alm-examples is not a JSON list"));
        return;
    };
    // (group, kind) -> converted CRD
    let crds: BTreeMap<(String, String), &Value> = converted
        .objects
        .iter()
        .map(|m| &m.object)
        .filter(|o| crd::is_crd(o))
        .map(|crd_object| {
            (
                (
                    crd_object["spec"]["group"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    crd_object["spec"]["names"]["kind"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                ),
                crd_object,
            )
        })
        .collect();
    // This package's test CRDs, deleted when it is done (or, should it panic, by the guard).
    let created = CreatedCrds::default();
    let created = &created;
    // Every CRD the examples need is served before the first example is sent.
    let mut test_crds: BTreeMap<String, Value> = BTreeMap::new();
    let mut runnable = Vec::new();
    for (i, example) in list.iter().enumerate() {
        let api_version = example["apiVersion"].as_str().unwrap_or_default();
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let kind = example["kind"].as_str().unwrap_or_default().to_string();
        let Some(crd_object) = crds.get(&(group.to_string(), kind.clone())) else {
            c.tally.examples_elsewhere += 1;
            continue;
        };
        // Conversion never drops a version, so an unserved one is the example's own mistake.
        let served = crd_object["spec"]["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|v| v["name"] == version);
        if !served {
            c.tally.examples_unserved += 1;
            c.notes.push(format!(
                "example {package} {kind} #{i}: invalid as shipped: {version} is not a version of its CRD"
            ));
            continue;
        }
        c.tally.examples += 1;
        let test_crd = renamed(crd_object, tag);
        let crd_name = test_crd["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        test_crds.entry(crd_name.clone()).or_insert(test_crd);
        runnable.push((i, example, kind, version.to_string(), *crd_object, crd_name));
    }
    let made = futures::future::join_all(test_crds.iter().map(|(name, crd_object)| async move {
        (name, api.create_crd(crd_object, created).await)
    }))
    .await;
    let mut unusable = Vec::new();
    for (name, result) in made {
        if let Err(e) = result {
            c.failures.push(format!("{package}: CRD {name}: {e}"));
            unusable.push(name.clone());
        }
    }
    let sends = runnable
        .into_iter()
        .filter(|(.., crd_name)| !unusable.contains(crd_name))
        .map(|(i, example, kind, version, crd_object, crd_name)| {
            let test_crd = &test_crds[&crd_name];
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
            async move {
                let result = api.dry_run_create(&sent, namespace).await;
                (i, kind, version, crd_object, sent, result)
            }
        });
    let results = futures::future::join_all(sends).await;
    for (i, kind, version, crd_object, sent, result) in results {
        let id = format!("{package} {kind} #{i}");
        match result {
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
                    c.tally.examples_ok += 1;
                } else {
                    c.example_failures
                        .insert(id, format!("fields lost: {}", gone.join(", ")));
                }
            }
            Err(e) => {
                let message = match e {
                    kube::Error::Api(status) => status.message,
                    other => other.to_string(),
                };
                c.example_failures.insert(id, message);
            }
        }
    }
    api.delete_crds(created).await;
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
    let mut csv = ClusterServiceVersion::new(
        bundle.csv.name(),
        ClusterServiceVersionSpec {
            definition: definition.into(),
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
    // Standing in for a Blueprint, the test seals what it applies.
    csv.metadata.namespace = Some(ns.name.clone());
    windlass_testkit::manager::seal_csv_for_manager(&client, &mut csv).await;
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
