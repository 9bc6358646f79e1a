//! Know before you approve: under Manual approval every revision that would change what runs
//! waits with its plan (objects created, changed and deleted, field by field from a server-side
//! dry run as the install identity; the RBAC and images that change; the CRD verdict; out-of-band
//! edits a rollback overwrites), and the approval binds that plan's digest.

use std::{process::Command, time::Duration};

use k8s_openapi::api::{apps::v1::Deployment, core::v1::ConfigMap};
use kube::{
    Api, Client,
    api::{Patch, PatchParams},
};
use serde_json::{Value, json};
use windlass_api::{
    Blueprint, ConditionStatus,
    blueprint::{BlueprintPhase, RevisionOutcome},
    names::{conditions, reasons},
};
use windlass_preview::{CrdAction, CrdVerdict, ObjectAction, Plan, PlanKind};
use windlass_testkit::{
    TestNamespace,
    catalogs::TestCatalog,
    lifecycle::{condition, phase, subscribe, wait_blueprint},
    require_manager,
};

use crate::common::isolated::Isolated;
use crate::tenancy::{TestPolicy, self_service};

const TIMEOUT: Duration = Duration::from_secs(180);

fn windlass(args: &[&str]) -> std::process::Output {
    Command::new(windlass_testkit::windlass_binary())
        .env("KUBECONFIG", windlass_testkit::kubeconfig_path())
        .args(args)
        .output()
        .expect("running windlass")
}

/// Runs `windlass` and returns its stdout, failing the test with its stderr otherwise.
fn windlass_ok(args: &[&str]) -> String {
    let out = windlass(args);
    assert!(
        out.status.success(),
        "windlass {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn plan_of(namespace: &str, name: &str) -> Plan {
    let json = windlass_ok(&["plan", name, "-n", namespace, "-o", "json"]);
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("windlass plan -o json: {e}: {json}"))
}

/// Waiting for approval with the plan of its newest revision shown.
fn waits_with_plan(blueprint: &Blueprint) -> bool {
    let status = blueprint.status.as_ref();
    phase(blueprint) == Some(BlueprintPhase::RequiresApproval)
        && status
            .and_then(|s| s.preview.as_ref())
            .is_some_and(|p| p.revision == blueprint.spec.revision)
}

fn completed(blueprint: &Blueprint, revision: i64) -> bool {
    blueprint
        .status
        .iter()
        .flat_map(|s| &s.history)
        .any(|r| r.revision == revision && r.outcome == RevisionOutcome::Completed)
}

fn plan_approved(blueprint: &Blueprint) -> Option<(ConditionStatus, String, String)> {
    let status = blueprint.status.as_ref()?;
    condition(&status.conditions, conditions::blueprint::PLAN_APPROVED)
        .map(|c| (c.status, c.reason.clone(), c.message.clone()))
}

fn operator_container(deployment: &Deployment) -> Value {
    let value = serde_json::to_value(deployment).unwrap();
    value["spec"]["template"]["spec"]["containers"][0].clone()
}

async fn operator(client: &Client, namespace: &str) -> Deployment {
    Api::<Deployment>::namespaced(client.clone(), namespace)
        .get("acme-db-operator")
        .await
        .expect("the operator's Deployment")
}

/// The operator image of a CSV manifest (deployment and relatedImages).
fn set_image(object: &mut Value, image: &str) {
    if object["kind"] != "ClusterServiceVersion" {
        return;
    }
    let spec = &mut object["spec"];
    spec["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]["containers"][0]["image"] =
        json!(image);
    spec["relatedImages"] = json!([{"name": "operator", "image": image}]);
}

/// The CSV asks for one more cluster-wide permission.
fn reads_storage_classes(object: &mut Value) {
    if object["kind"] != "ClusterServiceVersion" {
        return;
    }
    // The catalog holds 1.0.0 and 1.1.0 only: 1.1.0 replaces 1.0.0, so each channel has one
    // head (the listing gate holds back a second one).
    object["spec"]["replaces"] = json!("acme-db.v1.0.0");
    object["spec"]["install"]["spec"]["clusterPermissions"][0]["rules"]
        .as_array_mut()
        .unwrap()
        .push(json!({"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses"], "verbs": ["get", "list", "watch"]}));
}

async fn use_images(catalog: &TestCatalog, images: &[String]) {
    catalog
        .api()
        .patch(
            &catalog.name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"source": {"bundleImages": images}}})),
        )
        .await
        .expect("changing the catalog's images");
}

/// Given a tenant's namespace running acme-db 1.0.0 (installed as its install ServiceAccount)
/// under Manual approval, when the catalog offers 1.1.0 with a new image and one more
/// cluster-wide permission, then the Blueprint waits in RequiresApproval with the upgrade's
/// plan: the Deployment's image change from a dry run as the install account, the permission
/// gained cluster-wide, the image, the CRD change with its Safe verdict; nothing runs until
/// `windlass approve` names that plan; and when 1.1.0 is then republished with other content,
/// the new revision waits again, saying the bundle was republished.
#[tokio::test]
async fn a_manual_upgrade_shows_its_plan_and_a_republished_bundle_asks_again() {
    let (admin, ns, as_tenant) = self_service("plan").await;
    let _policy = TestPolicy::create(
        &admin,
        &ns.name,
        json!({"clusterScoped": ["CustomResourceDefinitions", "ClusterPermissions"]}),
    )
    .await;
    let bundles = Isolated::new("plan");
    bundles.grant_installer(&admin, &ns.name).await;
    let old = bundles
        .publish("acme-db/1.0.0", |o| {
            set_image(o, "registry.k8s.io/pause:3.9")
        })
        .await;
    let catalog = TestCatalog::serving(&admin, "plan", std::slice::from_ref(&old)).await;
    subscribe(
        &as_tenant,
        &ns.name,
        "db",
        json!({"package": bundles.package, "catalog": catalog.name, "channel": "stable",
               "startingCSV": "acme-db.v1.0.0", "approval": "Manual", "targetNamespaces": [ns.name]}),
    )
    .await;
    wait_blueprint(
        &admin,
        &ns.name,
        "db",
        "the install waits with its plan",
        TIMEOUT,
        waits_with_plan,
    )
    .await;
    let install = plan_of(&ns.name, "db");
    assert_eq!(install.kind, PlanKind::Install);
    let approved = windlass_ok(&[
        "approve",
        "db",
        "-n",
        &ns.name,
        "--wait",
        "--timeout",
        "180",
    ]);
    assert!(
        approved.contains(&install.digest),
        "names the plan it approves: {approved}"
    );
    let blueprint = wait_blueprint(&admin, &ns.name, "db", "1.0.0 Completed", TIMEOUT, |b| {
        completed(b, 1)
    })
    .await;
    let installed = &blueprint.status.as_ref().unwrap().history[0];
    assert_eq!(
        installed.approved_plan.as_deref(),
        Some(install.digest.as_str())
    );
    assert_eq!(installed.plan.as_deref(), Some(install.digest.as_str()));

    let new = bundles
        .publish("acme-db/1.1.0", reads_storage_classes)
        .await;
    use_images(&catalog, &[old.clone(), new.clone()]).await;
    let waiting = wait_blueprint(
        &admin,
        &ns.name,
        "db",
        "the upgrade waits with its plan",
        TIMEOUT,
        |b| b.spec.cluster_service_version_name == "acme-db.v1.1.0" && waits_with_plan(b),
    )
    .await;
    let preview = waiting.status.as_ref().unwrap().preview.clone().unwrap();
    println!("status.preview: {preview:#?}");
    assert!(
        preview.summary.starts_with("upgrade 1.0.0 -> 1.1.0"),
        "{}",
        preview.summary
    );
    let (status, reason, message) = plan_approved(&waiting).expect("a PlanApproved condition");
    assert_eq!(
        (status, reason.as_str()),
        (
            ConditionStatus::False,
            reasons::blueprint::AWAITING_APPROVAL
        )
    );
    assert!(message.contains(&preview.digest), "{message}");

    let plan = plan_of(&ns.name, "db");
    assert_eq!(plan.digest, preview.digest);
    assert_eq!(plan.kind, PlanKind::Upgrade);
    let installer = format!("system:serviceaccount:{}:windlass-installer", ns.name);
    assert_eq!(plan.identity, installer);
    let deployment = plan
        .objects
        .iter()
        .find(|o| o.object.kind == "Deployment" && o.object.name == "acme-db-operator")
        .expect("the operator's Deployment is in the plan");
    assert_eq!(deployment.action, ObjectAction::Change);
    assert_eq!(deployment.by, installer, "dry-run as the install account");
    assert!(deployment.refused.is_none(), "{:?}", deployment.refused);
    let image = deployment
        .fields
        .iter()
        .find(|f| f.path == "spec.template.spec.containers[name=operator].image")
        .unwrap_or_else(|| panic!("the image change: {:#?}", deployment.fields));
    assert_eq!(image.old, Some(json!("registry.k8s.io/pause:3.9")));
    assert_eq!(image.new, Some(json!("registry.k8s.io/pause:3.10")));
    assert!(
        plan.rbac
            .gained
            .iter()
            .any(|g| g.resource == "storageclasses"
                && g.api_group == "storage.k8s.io"
                && g.verb == "list"
                && g.cluster_wide()),
        "gains storageclasses cluster-wide: {:#?}",
        plan.rbac
    );
    assert!(plan.rbac.lost.is_empty(), "{:#?}", plan.rbac.lost);
    assert!(
        plan.images
            .iter()
            .any(|i| i.old.as_deref() == Some("registry.k8s.io/pause:3.9")
                && i.new.as_deref() == Some("registry.k8s.io/pause:3.10")),
        "{:#?}",
        plan.images
    );
    let crd = plan
        .crds
        .iter()
        .find(|c| c.name == bundles.crd_name())
        .expect("the CRD");
    assert_eq!(
        (crd.action, crd.verdict),
        (CrdAction::Change, CrdVerdict::Safe),
        "{crd:#?}"
    );
    let text = windlass_ok(&["plan", "db", "-n", &ns.name]);
    println!("{text}");
    for part in [
        "upgrade",
        "Permissions the operator gains:",
        "storageclasses.storage.k8s.io: get, list, watch",
        "spec.template.spec.containers[name=operator].image: \"registry.k8s.io/pause:3.9\" -> \"registry.k8s.io/pause:3.10\"",
        "Waiting for approval",
    ] {
        assert!(text.contains(part), "`windlass plan` shows {part:?}");
    }
    // Nothing of it runs while it waits.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        operator_container(&operator(&admin, &ns.name).await)["image"],
        "registry.k8s.io/pause:3.9"
    );

    windlass_ok(&["approve", "db", "-n", &ns.name, "--plan", &plan.digest]);
    let upgraded = wait_blueprint(&admin, &ns.name, "db", "1.1.0 Completed", TIMEOUT, |b| {
        completed(b, 2)
    })
    .await;
    let record = &upgraded.status.as_ref().unwrap().history[0];
    assert_eq!(record.approved_plan.as_deref(), Some(plan.digest.as_str()));
    assert_eq!(
        operator_container(&operator(&admin, &ns.name).await)["image"],
        "registry.k8s.io/pause:3.10"
    );

    // 1.1.0 republished with other content under the same reference.
    bundles
        .publish("acme-db/1.1.0", |o| {
            reads_storage_classes(o);
            if o["kind"] == "ClusterServiceVersion" {
                o["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]["containers"][0]["env"][3]["value"] = json!("1.1.0-hotfix");
            }
        })
        .await;
    let again = wait_blueprint(
        &admin,
        &ns.name,
        "db",
        "the republished bundle waits again",
        TIMEOUT,
        |b| b.spec.revision == 3 && waits_with_plan(b),
    )
    .await;
    let status = again.status.as_ref().unwrap();
    assert!(
        status.history[0]
            .reason
            .contains("the bundle's digest changed"),
        "{}",
        status.history[0].reason
    );
    let preview = status.preview.as_ref().unwrap();
    assert!(
        preview.changes.contains("republished"),
        "says what changed: {}",
        preview.changes
    );
    assert_ne!(preview.digest, plan.digest);
    let (status, reason, _) = plan_approved(&again).unwrap();
    assert_eq!(
        (status, reason.as_str()),
        (
            ConditionStatus::False,
            reasons::blueprint::AWAITING_APPROVAL
        )
    );
    let republished = plan_of(&ns.name, "db");
    assert_eq!(republished.kind, PlanKind::Reinstall);
    let env = republished
        .objects
        .iter()
        .find(|o| o.object.kind == "Deployment")
        .map(|o| o.fields.clone())
        .unwrap_or_default();
    assert!(
        env.iter().any(|f| f.new == Some(json!("1.1.0-hotfix"))),
        "the hotfix shows as a field change: {env:#?}"
    );
    tokio::time::sleep(Duration::from_secs(5)).await;
    let container = operator_container(&operator(&admin, &ns.name).await);
    assert!(
        !container.to_string().contains("1.1.0-hotfix"),
        "not applied before approval"
    );
}

/// Given acme-db 1.0.0 installed under Manual approval, when the Subscription's operator config
/// changes, then the Blueprint records a new revision and waits with its plan (the Deployment
/// gains the env var) instead of applying it; an approval naming another plan approves nothing
/// (PlanChanged); `approved: true` approves the plan shown, and the change is applied.
#[tokio::test]
async fn a_config_change_under_manual_approval_waits_for_its_plan() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "planconfig").await;
    let client = ns.client().clone();
    subscribe(
        &client,
        &ns.name,
        "db",
        json!({"package": "acme-db", "channel": "stable", "versionRange": "1.0.0",
               "approval": "Manual", "targetNamespaces": [ns.name]}),
    )
    .await;
    wait_blueprint(
        &client,
        &ns.name,
        "db",
        "the install waits",
        TIMEOUT,
        waits_with_plan,
    )
    .await;
    windlass_testkit::lifecycle::approve(&client, &ns.name, "db").await;
    wait_blueprint(&client, &ns.name, "db", "1.0.0 Completed", TIMEOUT, |b| {
        completed(b, 1)
    })
    .await;

    Api::<windlass_api::Subscription>::namespaced(client.clone(), &ns.name)
        .patch(
            "db",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"config": {"env": [{"name": "LOG_LEVEL", "value": "debug"}]}}}),
            ),
        )
        .await
        .unwrap();
    let waiting = wait_blueprint(
        &client,
        &ns.name,
        "db",
        "the config change waits",
        TIMEOUT,
        |b| b.spec.revision == 2 && waits_with_plan(b),
    )
    .await;
    assert_eq!(
        waiting.status.as_ref().unwrap().history[0].reason,
        "reinstall 1.0.0: the install settings changed"
    );
    let plan = plan_of(&ns.name, "db");
    let deployment = plan
        .objects
        .iter()
        .find(|o| o.object.kind == "Deployment")
        .unwrap();
    assert!(
        deployment
            .fields
            .iter()
            .any(|f| f.path.contains("env[name=LOG_LEVEL]") && f.old.is_none()),
        "{:#?}",
        deployment.fields
    );
    // Watch long enough for an apply to have happened, were it going to.
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let container = operator_container(&operator(&client, &ns.name).await);
        assert!(
            !container.to_string().contains("LOG_LEVEL"),
            "applied without approval"
        );
    }

    let blueprints = Api::<Blueprint>::namespaced(client.clone(), &ns.name);
    blueprints
        .patch(
            "db",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"approvedPlan": "sha256:0000000000000000000000000000000000000000000000000000000000000000"}})),
        )
        .await
        .unwrap();
    let refused = wait_blueprint(&client, &ns.name, "db", "PlanChanged", TIMEOUT, |b| {
        plan_approved(b).is_some_and(|(_, reason, _)| reason == reasons::blueprint::PLAN_CHANGED)
    })
    .await;
    assert_eq!(phase(&refused), Some(BlueprintPhase::RequiresApproval));
    blueprints
        .patch(
            "db",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"approvedPlan": null, "approved": true}})),
        )
        .await
        .unwrap();
    let applied = wait_blueprint(
        &client,
        &ns.name,
        "db",
        "revision 2 Completed",
        TIMEOUT,
        |b| completed(b, 2),
    )
    .await;
    assert_eq!(
        applied.status.as_ref().unwrap().history[0]
            .approved_plan
            .as_deref(),
        Some(plan.digest.as_str()),
        "approved: true bound the plan shown"
    );
    let container = operator_container(&operator(&client, &ns.name).await);
    assert!(container.to_string().contains("LOG_LEVEL"), "{container}");
}

/// The settings ConfigMap a bundle of this test ships.
fn settings(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "acme-db-settings"},
           "data": data})
}

/// Given acme-db 1.0.1 running under Manual approval after 1.0.0, where 1.0.0's settings
/// ConfigMap set `log-level` and 1.0.1's no longer does, and someone has set `log-level` by
/// hand since, when a person rolls back to 1.0.0, then the rollback waits for approval and its
/// plan lists the ConfigMap's edited field (what windlass applied, what it holds now, who
/// edited it), which the rollback overwrites once approved. 1.0.1 never writes that field, so
/// the edit stands however often 1.0.1 is applied again (an edit of a field it does write is
/// put back then, and is listed only while it lasts).
#[tokio::test]
async fn a_manual_rollback_lists_the_out_of_band_edits_it_overwrites() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "plandrift").await;
    let client = ns.client().clone();
    let bundles = Isolated::new("plandrift");
    let old = bundles
        .publish_adding(
            "acme-db/1.0.0",
            |_| {},
            &[(
                "settings.configmap.yaml",
                settings(json!({"log-level": "info", "log-format": "text"})),
            )],
        )
        .await;
    let new = bundles
        .publish_adding(
            "acme-db/1.0.1",
            |_| {},
            &[(
                "settings.configmap.yaml",
                settings(json!({"log-format": "json"})),
            )],
        )
        .await;
    let catalog = TestCatalog::serving(&client, "plandrift", std::slice::from_ref(&old)).await;
    subscribe(
        &client,
        &ns.name,
        "db",
        json!({"package": bundles.package, "catalog": catalog.name, "channel": "stable",
               "approval": "Manual", "targetNamespaces": [ns.name]}),
    )
    .await;
    wait_blueprint(
        &client,
        &ns.name,
        "db",
        "the install waits",
        TIMEOUT,
        waits_with_plan,
    )
    .await;
    windlass_ok(&["approve", "db", "-n", &ns.name]);
    wait_blueprint(&client, &ns.name, "db", "1.0.0 Completed", TIMEOUT, |b| {
        completed(b, 1)
    })
    .await;
    use_images(&catalog, &[old, new]).await;
    wait_blueprint(&client, &ns.name, "db", "1.0.1 waits", TIMEOUT, |b| {
        b.spec.revision == 2 && waits_with_plan(b)
    })
    .await;
    windlass_ok(&["approve", "db", "-n", &ns.name]);
    wait_blueprint(&client, &ns.name, "db", "1.0.1 Completed", TIMEOUT, |b| {
        completed(b, 2)
    })
    .await;

    let configmaps = Api::<ConfigMap>::namespaced(client.clone(), &ns.name);
    let upgraded = configmaps.get("acme-db-settings").await.unwrap().data;
    assert_eq!(
        upgraded,
        Some([("log-format".to_string(), "json".to_string())].into()),
        "1.0.1 dropped the field 1.0.0 set"
    );
    configmaps
        .patch(
            "acme-db-settings",
            &PatchParams {
                field_manager: Some("kubectl-edit".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"data": {"log-level": "debug"}})),
        )
        .await
        .unwrap();
    let rollback = windlass_ok(&[
        "rollback",
        "db",
        "-n",
        &ns.name,
        "--wait",
        "--timeout",
        "180",
    ]);
    assert!(rollback.contains("waits for approval"), "{rollback}");
    let waiting = wait_blueprint(
        &client,
        &ns.name,
        "db",
        "the rollback waits with its plan",
        TIMEOUT,
        |b| b.spec.revision == 3 && waits_with_plan(b),
    )
    .await;
    assert_eq!(
        waiting.status.as_ref().unwrap().history[0].restored_from,
        Some(1)
    );
    let plan = plan_of(&ns.name, "db");
    assert_eq!(plan.kind, PlanKind::Rollback);
    let drift = plan
        .drift
        .iter()
        .find(|d| d.object.kind == "ConfigMap" && d.object.name == "acme-db-settings")
        .unwrap_or_else(|| panic!("the edited ConfigMap is listed: {:#?}", plan.drift));
    assert_eq!(drift.fields.len(), 1, "{drift:#?}");
    assert_eq!(drift.fields[0].path, "data.log-level");
    assert_eq!(drift.fields[0].old, Some(json!("info")));
    assert_eq!(drift.fields[0].new, Some(json!("debug")));
    assert_eq!(drift.editors, ["kubectl-edit"]);
    let text = windlass_ok(&["plan", "db", "-n", &ns.name]);
    assert!(text.contains("Edited out of band"), "{text}");
    assert_eq!(
        configmaps
            .get("acme-db-settings")
            .await
            .unwrap()
            .data
            .unwrap()["log-level"],
        "debug",
        "the edit stands until the rollback is approved"
    );

    windlass_ok(&[
        "approve",
        "db",
        "-n",
        &ns.name,
        "--wait",
        "--timeout",
        "180",
    ]);
    assert_eq!(
        configmaps
            .get("acme-db-settings")
            .await
            .unwrap()
            .data
            .unwrap()["log-level"],
        "info",
        "the rollback overwrote the edit"
    );
}
