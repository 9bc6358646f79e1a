//! Every class of CRD change, enforced by the Blueprint controller on the real API server:
//! given acme-db 1.0.0 installed with some Databases, when 1.0.1 changes the CRD in one way,
//! the upgrade is blocked with a `CRDUpgradeSafe=False` condition whose reason is the rule (and
//! the live CRD and version stay), or it is allowed and completes, as the table in
//! `windlass_bundle::crd::safety` says; a problem the live CRD already had does not block
//! (ratcheting), and a CEL rule that an existing object breaks blocks naming the object and
//! the rule.
//!
//! Each case runs in a namespace of its own under a package and API group of its own; all run
//! at once, against one catalog that first offers the base versions and then the changed ones.

use std::time::Duration;

use futures::future::join_all;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, Client,
    api::{DynamicObject, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use windlass_api::{
    Blueprint, ConditionStatus,
    blueprint::{BlueprintPhase, RevisionOutcome},
    names::conditions,
};
use windlass_testkit::{
    TestNamespace,
    catalogs::TestCatalog,
    lifecycle::{condition, is_at, subscribe, wait_blueprint},
    require_manager,
};

use crate::common::isolated::Isolated;

const TIMEOUT: Duration = Duration::from_secs(300);

type Tweak = fn(&mut Value);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Expect {
    /// Blocked, with this reason on `CRDUpgradeSafe`.
    Blocks(&'static str),
    /// Applied; the upgrade completes.
    Allowed,
}

struct Case {
    name: &'static str,
    /// Changes to the CRD of the installed 1.0.0.
    base: Tweak,
    /// Changes to the CRD of 1.0.1.
    variant: Tweak,
    /// Changes to the ClusterServiceVersion of 1.0.1, which must stay consistent with its CRD
    /// (a catalog does not offer a bundle whose CSV owns a version its CRD lacks).
    variant_csv: Tweak,
    /// The `spec`s of the Databases that exist before the upgrade.
    objects: &'static [&'static str],
    /// A cluster admin's edit of the live CRD after the objects exist.
    live_edit: Option<Tweak>,
    expect: Expect,
}

fn none(_: &mut Value) {}

/// The `spec` properties of version `version`'s schema.
fn spec_of<'a>(crd: &'a mut Value, version: &str) -> &'a mut Value {
    let versions = crd["spec"]["versions"].as_array_mut().unwrap();
    let v = versions
        .iter_mut()
        .find(|v| v["name"] == version)
        .unwrap_or_else(|| panic!("no version {version}"));
    &mut v["schema"]["openAPIV3Schema"]["properties"]["spec"]
}

fn props(crd: &mut Value) -> &mut Value {
    &mut spec_of(crd, "v1")["properties"]
}

/// A second served version, `v1beta1`, with v1's schema (optionally with an extra field).
fn add_v1beta1(crd: &mut Value, extra_field: bool) {
    let mut beta = crd["spec"]["versions"][0].clone();
    beta["name"] = json!("v1beta1");
    beta["storage"] = json!(false);
    if extra_field {
        beta["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["legacy"] =
            json!({"type": "string"});
    }
    crd["spec"]["versions"].as_array_mut().unwrap().push(beta);
}

fn rule(crd: &mut Value, rule: &str, message: &str) {
    spec_of(crd, "v1")["x-kubernetes-validations"] = json!([{"rule": rule, "message": message}]);
}

const ONE: &[&str] = &[r#"{"engine": "postgres", "replicas": 1, "storage": {"size": "1Gi"}}"#];
const THREE: &[&str] = &[
    r#"{"engine": "postgres", "replicas": 3, "storage": {"size": "1Gi"}, "backup": {"schedule": "0 1 * * *"}}"#,
];

fn cases() -> Vec<Case> {
    use Expect::{Allowed, Blocks};
    let case = |name, variant: Tweak, expect| Case {
        name,
        base: none,
        variant,
        variant_csv: none,
        objects: ONE,
        live_edit: None,
        expect,
    };
    vec![
        case(
            "ScopeChanged",
            |c| c["spec"]["scope"] = json!("Cluster"),
            Blocks("ScopeChanged"),
        ),
        Case {
            variant_csv: |csv| {
                csv["spec"]["customresourcedefinitions"]["owned"][0]["version"] = json!("v2")
            },
            ..case(
                "StoredVersionRemoved",
                |c| c["spec"]["versions"][0]["name"] = json!("v2"),
                Blocks("StoredVersionRemoved"),
            )
        },
        Case {
            objects: THREE,
            ..case(
                "FieldRemoved",
                |c| {
                    props(c)["backup"]["properties"]
                        .as_object_mut()
                        .unwrap()
                        .remove("schedule");
                },
                Blocks("FieldRemoved"),
            )
        },
        case(
            "TypeChanged",
            |c| props(c)["storage"]["properties"]["storageClassName"]["type"] = json!("integer"),
            Blocks("TypeChanged"),
        ),
        case(
            "RequiredFieldAdded",
            |c| spec_of(c, "v1")["required"] = json!(["engine", "version"]),
            Blocks("RequiredFieldAdded"),
        ),
        case(
            "DefaultChanged",
            |c| props(c)["replicas"]["default"] = json!(2),
            Blocks("DefaultChanged"),
        ),
        case(
            "DefaultAdded",
            |c| props(c)["backup"]["properties"]["retentionDays"]["default"] = json!(7),
            Blocks("DefaultAdded"),
        ),
        case(
            "DefaultRemoved",
            |c| {
                props(c)["replicas"]
                    .as_object_mut()
                    .unwrap()
                    .remove("default");
            },
            Blocks("DefaultRemoved"),
        ),
        case(
            "EnumValuesRemoved",
            |c| props(c)["engine"]["enum"] = json!(["postgres"]),
            Blocks("EnumValuesRemoved"),
        ),
        case(
            "EnumAdded",
            |c| {
                props(c)["storage"]["properties"]["storageClassName"]["enum"] =
                    json!(["fast", "standard"])
            },
            Blocks("EnumAdded"),
        ),
        case(
            "MaximumTightened",
            |c| props(c)["replicas"]["maximum"] = json!(4),
            Blocks("MaximumTightened"),
        ),
        case(
            "MinimumTightened",
            |c| props(c)["backup"]["properties"]["retentionDays"]["minimum"] = json!(2),
            Blocks("MinimumTightened"),
        ),
        case(
            "MaxLengthTightened",
            |c| props(c)["storage"]["properties"]["storageClassName"]["maxLength"] = json!(63),
            Blocks("MaxLengthTightened"),
        ),
        case(
            "PatternChanged",
            |c| props(c)["version"]["pattern"] = json!(r"^[0-9]+(\.[0-9]+)?$"),
            Blocks("PatternChanged"),
        ),
        case(
            "FormatChanged",
            |c| props(c)["backup"]["properties"]["schedule"]["format"] = json!("date-time"),
            Blocks("FormatChanged"),
        ),
        Case {
            base: |c| props(c)["storage"]["x-kubernetes-preserve-unknown-fields"] = json!(true),
            ..case(
                "UnknownFieldsNoLongerPreserved",
                none,
                Blocks("UnknownFieldsNoLongerPreserved"),
            )
        },
        Case {
            objects: THREE,
            ..case(
                "an existing object breaks a new CEL rule",
                |c| rule(c, "self.replicas <= 2", "at most 2 replicas"),
                Blocks("ExistingObjectFailsRule"),
            )
        },
        case(
            "a new served version loses a field between versions",
            |c| add_v1beta1(c, true),
            Blocks("FieldRemoved"),
        ),
        // Allowed: loosening, additions, warnings.
        case(
            "a raised maximum",
            |c| props(c)["replicas"]["maximum"] = json!(10),
            Allowed,
        ),
        case(
            "enum values added",
            |c| props(c)["engine"]["enum"] = json!(["postgres", "mysql", "mariadb"]),
            Allowed,
        ),
        case(
            "a pattern removed",
            |c| {
                props(c)["version"]
                    .as_object_mut()
                    .unwrap()
                    .remove("pattern");
            },
            Allowed,
        ),
        case(
            "an optional field added",
            |c| {
                props(c)["tls"] =
                    json!({"type": "object", "properties": {"enabled": {"type": "boolean"}}})
            },
            Allowed,
        ),
        Case {
            objects: THREE,
            ..case(
                "a CEL rule every object keeps (ValidationRulesChanged warns)",
                |c| rule(c, "self.replicas <= 5", "at most 5 replicas"),
                Allowed,
            )
        },
        Case {
            base: |c| add_v1beta1(c, false),
            ..case(
                "a served version no longer served (ServedVersionRemoved warns)",
                |c| {
                    add_v1beta1(c, false);
                    c["spec"]["versions"][1]["served"] = json!(false);
                },
                Allowed,
            )
        },
        // Ratcheting: what the live CRD already has does not block.
        Case {
            base: |c| add_v1beta1(c, true),
            ..case(
                "ratcheted: the served-version pair already lost the field",
                |c| {
                    add_v1beta1(c, true);
                    props(c)["replicas"]["maximum"] = json!(10);
                },
                Allowed,
            )
        },
        Case {
            objects: THREE,
            live_edit: Some(|c| rule(c, "self.replicas <= 2", "at most 2 replicas")),
            ..case(
                "ratcheted: the object already breaks the rule on the live CRD",
                |c| {
                    rule(c, "self.replicas <= 2", "at most 2 replicas");
                    props(c)["replicas"]["maximum"] = json!(10);
                },
                Allowed,
            )
        },
    ]
}

/// The tweaks applied to the CRD and the ClusterServiceVersion.
fn on_crd_and_csv(object: &mut Value, crd: Tweak, csv: Tweak) {
    if object["kind"] == "CustomResourceDefinition" {
        crd(object);
    }
    if object["kind"] == "ClusterServiceVersion" {
        csv(object);
    }
}

struct Running {
    case: Case,
    ns: TestNamespace,
    bundles: Isolated,
    base: String,
    variant: String,
}

async fn prepare(client: &Client, case: Case) -> Running {
    let ns = TestNamespace::create(client, "crdclass").await;
    let bundles = Isolated::new("crdclass");
    let (base_tweak, variant_tweak, variant_csv) = (case.base, case.variant, case.variant_csv);
    // Every case's bundles share one catalog: each gets CSV names of its own, since a catalog
    // offers a CSV name once.
    let package = bundles.package.clone();
    let own_names = move |o: &mut Value| {
        let text = serde_json::to_string(o)
            .unwrap()
            .replace("acme-db.v1.0.", &format!("{package}.v1.0."));
        *o = serde_json::from_str(&text).unwrap();
    };
    let base = bundles
        .publish("acme-db/1.0.0", |o| {
            own_names(o);
            on_crd_and_csv(o, base_tweak, none)
        })
        .await;
    let variant = bundles
        .publish("acme-db/1.0.1", |o| {
            own_names(o);
            on_crd_and_csv(o, variant_tweak, variant_csv)
        })
        .await;
    Running {
        case,
        ns,
        bundles,
        base,
        variant,
    }
}

async fn install(client: &Client, run: &Running, catalog: &str) {
    subscribe(
        client,
        &run.ns.name,
        "db",
        json!({"package": run.bundles.package, "catalog": catalog, "channel": "stable",
               "startingCSV": format!("{}.v1.0.0", run.bundles.package),
               "targetNamespaces": [run.ns.name]}),
    )
    .await;
    wait_blueprint(
        client,
        &run.ns.name,
        "db",
        "1.0.0 Succeeded",
        TIMEOUT,
        |b| is_at(b, BlueprintPhase::Succeeded, "1.0.0"),
    )
    .await;
    let databases = run.bundles.databases(client, &run.ns.name, "v1");
    for (i, spec) in run.case.objects.iter().enumerate() {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": format!("{}/v1", run.bundles.group), "kind": "Database",
            "metadata": {"name": format!("db{i}")},
            "spec": serde_json::from_str::<Value>(spec).unwrap(),
        }))
        .unwrap();
        // A CRD just established can still answer 404 for a moment while the API server
        // starts serving it (many cases create theirs at once).
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            match databases.create(&PostParams::default(), &object).await {
                Ok(_) => break,
                Err(kube::Error::Api(e))
                    if e.code == 404 && std::time::Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => panic!("{}: creating a Database: {e}", run.case.name),
            }
        }
    }
    if let Some(edit) = run.case.live_edit {
        let crds = Api::<CustomResourceDefinition>::all(client.clone());
        let mut live =
            serde_json::to_value(crds.get(&run.bundles.crd_name()).await.unwrap()).unwrap();
        edit(&mut live);
        let versions = live["spec"]["versions"].clone();
        crds.patch(
            &run.bundles.crd_name(),
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"versions": versions}})),
        )
        .await
        .unwrap_or_else(|e| panic!("{}: editing the live CRD: {e}", run.case.name));
    }
}

fn safe_condition(blueprint: &Blueprint) -> Option<(ConditionStatus, String, String)> {
    let status = blueprint.status.as_ref()?;
    condition(&status.conditions, conditions::blueprint::CRD_UPGRADE_SAFE)
        .map(|c| (c.status, c.reason.clone(), c.message.clone()))
}

/// What happened to the upgrade: blocked with a reason (`Some`), or completed; and the
/// condition's message.
/// The `UpgradeReady` findings holding the upgrade, by the names its condition gives.
fn findings_held(blueprint: &Blueprint) -> Vec<String> {
    let Some(ready) = blueprint
        .status
        .as_ref()
        .and_then(|s| condition(&s.conditions, conditions::blueprint::UPGRADE_READY))
        .filter(|c| c.status == ConditionStatus::False)
    else {
        return Vec::new();
    };
    ready
        .message
        .split("(accept as \"")
        .skip(1)
        .filter_map(|rest| rest.split_once('"').map(|(name, _)| name.to_string()))
        .collect()
}

async fn verdict(client: &Client, run: &Running) -> (Option<String>, String) {
    let settled = |b: &Blueprint| {
        let blocked = safe_condition(b).is_some_and(|(s, _, _)| s == ConditionStatus::False);
        let done = b
            .status
            .iter()
            .flat_map(|s| &s.history)
            .any(|r| r.version == "1.0.1" && r.outcome == RevisionOutcome::Completed);
        blocked || done
    };
    let mut blueprint = wait_blueprint(
        client,
        &run.ns.name,
        "db",
        "a verdict on 1.0.1",
        TIMEOUT,
        |b| settled(b) || !findings_held(b).is_empty(),
    )
    .await;
    // CRD safety let it through, and UpgradeReady holds it for what it would break (a served
    // version dropped): a person accepts that, as the verdict under test is CRD safety's.
    let held = findings_held(&blueprint);
    if !settled(&blueprint) && !held.is_empty() {
        println!(
            "{}: accepting the UpgradeReady findings {held:?}",
            run.ns.name
        );
        Api::<Blueprint>::namespaced(client.clone(), &run.ns.name)
            .patch(
                "db",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"acceptedFindings": held}})),
            )
            .await
            .unwrap();
        blueprint = wait_blueprint(
            client,
            &run.ns.name,
            "db",
            "a verdict on 1.0.1",
            TIMEOUT,
            settled,
        )
        .await;
    }
    match safe_condition(&blueprint) {
        Some((ConditionStatus::False, reason, message)) => (Some(reason), message),
        other => (None, format!("{other:?}")),
    }
}

impl Expect {
    fn matches(self, blocked: Option<&str>) -> bool {
        match (self, blocked) {
            (Expect::Blocks(want), Some(got)) => want == got,
            (Expect::Allowed, None) => true,
            _ => false,
        }
    }
}

/// Given each class of CRD change (the table of `windlass_bundle::crd::safety`), when acme-db
/// 1.0.1 brings it over 1.0.0 with Databases in place, then the Blueprint blocks or allows the
/// upgrade as the table says, ratcheting included; a blocked upgrade leaves 1.0.0 and its CRD
/// in place, and a CEL rule an existing object breaks is named with the object.
#[tokio::test]
async fn each_crd_change_class_is_blocked_or_allowed_as_the_table_says() {
    require_manager();
    let client = windlass_testkit::client().await;
    let runs: Vec<Running> = join_all(cases().into_iter().map(|case| prepare(&client, case))).await;
    let bases: Vec<String> = runs.iter().map(|r| r.base.clone()).collect();
    let catalog = TestCatalog::serving(&client, "crdclass", &bases).await;
    join_all(runs.iter().map(|run| install(&client, run, &catalog.name))).await;

    let all: Vec<String> = runs
        .iter()
        .flat_map(|r| [r.base.clone(), r.variant.clone()])
        .collect();
    catalog
        .api()
        .patch(
            &catalog.name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"source": {"bundleImages": all}}})),
        )
        .await
        .unwrap();
    let verdicts = join_all(runs.iter().map(|run| verdict(&client, run))).await;

    let mut wrong = Vec::new();
    for (run, (got, message)) in runs.iter().zip(&verdicts) {
        println!("{:<75} {:?}: {message}", run.case.name, got);
        if !run.case.expect.matches(got.as_deref()) {
            wrong.push(format!(
                "{}: expected {:?}, got {got:?} ({message})",
                run.case.name, run.case.expect
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} cases disagree:\n{}",
        wrong.len(),
        runs.len(),
        wrong.join("\n")
    );

    for (run, (got, message)) in runs.iter().zip(&verdicts) {
        let blueprint = Api::<Blueprint>::namespaced(client.clone(), &run.ns.name)
            .get("db")
            .await
            .unwrap();
        let version = blueprint.status.as_ref().and_then(|s| s.version.clone());
        match got {
            Some(_) => {
                assert_eq!(
                    version.as_deref(),
                    Some("1.0.0"),
                    "{}: 1.0.0 keeps running",
                    run.case.name
                );
                let live = Api::<CustomResourceDefinition>::all(client.clone())
                    .get(&run.bundles.crd_name())
                    .await
                    .unwrap();
                let annotations = live.metadata.annotations.unwrap_or_default();
                assert_eq!(
                    annotations
                        .get(windlass_api::names::annotations::CRD_VERSION)
                        .map(String::as_str),
                    Some("1.0.0"),
                    "{}: the live CRD is still 1.0.0's",
                    run.case.name
                );
                if run.case.name.contains("CEL rule") {
                    assert!(
                        message.contains(&format!("{}/db0", run.ns.name))
                            && message.contains("self.replicas <= 2"),
                        "names the object and the rule: {message}"
                    );
                }
            }
            None => {
                let (status, _, _) = safe_condition(&blueprint).expect("CRDUpgradeSafe");
                assert_eq!(status, ConditionStatus::True, "{}", run.case.name);
            }
        }
    }
}
