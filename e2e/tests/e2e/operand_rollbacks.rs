//! Rollbacks that bring the operands back: acme-cache 2.0 rewrites every `Cache` when it
//! starts (`spec.memory` to `spec.limits.memory`, `spec.evictionPolicy` to
//! `spec.eviction.policy`), which 1.0.0 cannot read. The sample pods do nothing, so each test
//! plays the 2.0 operator itself: a task acting as the operator's ServiceAccount, writing
//! under its own field manager, as soon as the 2.0 CSV exists.

use std::time::Duration;

use k8s_openapi::{
    api::core::v1::{Event, Secret},
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, Client, ResourceExt,
    api::{DynamicObject, ListParams, Patch, PatchParams, PostParams},
    core::{ApiResource, GroupVersionKind},
};
use serde_json::{Value, json};
use windlass_api::{
    Blueprint, ClusterServiceVersion, ConditionStatus,
    blueprint::{BlueprintPhase, RevisionOutcome},
    names::{annotations, conditions, labels, operands_secret, reasons},
};
use windlass_testkit::{
    TestNamespace, impersonating,
    lifecycle::{approve, condition, is_at, phase, subscribe, wait_blueprint},
    require_manager,
};

const TIMEOUT: Duration = Duration::from_secs(180);

fn caches(client: &Client, namespace: &str, version: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("acme.windlass.dev", version, "Cache");
    Api::namespaced_with(client.clone(), namespace, &ApiResource::from_gvk(&gvk))
}

/// The 1.0 shape of three caches, created while 1.0.0 runs.
fn before() -> Vec<(&'static str, Value)> {
    vec![
        (
            "sessions",
            json!({"memory": "512Mi", "evictionPolicy": "lru", "replicas": 2}),
        ),
        ("pages", json!({"memory": "1Gi", "evictionPolicy": "lfu"})),
        ("tokens", json!({"memory": "64Mi", "evictionPolicy": "lru"})),
    ]
}

async fn create_caches(client: &Client, namespace: &str) {
    let api = caches(client, namespace, "v1");
    for (name, spec) in before() {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "acme.windlass.dev/v1",
            "kind": "Cache",
            "metadata": {"name": name},
            "spec": spec,
        }))
        .unwrap();
        api.create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("creating Cache {name}: {e}"));
    }
}

/// Plays acme-cache 2.x: once CSV `csv` exists, rewrites every Cache to the 2.0 shape as the
/// operator's ServiceAccount, then creates one more (which a rollback must keep).
async fn play_the_new_operator(admin: Client, namespace: String, csv: &'static str) {
    let csvs = Api::<ClusterServiceVersion>::namespaced(admin.clone(), &namespace);
    windlass_testkit::wait_until(&format!("{csv} to exist"), TIMEOUT, || {
        let csvs = csvs.clone();
        async move { csvs.get_opt(csv).await.ok().flatten().is_some() }
    })
    .await;
    let operator = impersonating(&format!(
        "system:serviceaccount:{namespace}:acme-cache-operator"
    ))
    .await;
    let api = caches(&operator, &namespace, "v2");
    let params = PatchParams {
        field_manager: Some("acme-cache-operator".into()),
        ..PatchParams::default()
    };
    for (name, _) in before() {
        // Its Role reaches the authorizer moments after the CSV's apply.
        windlass_testkit::wait_until(&format!("acme-cache 2 to rewrite {name}"), TIMEOUT, || {
            let (api, params) = (api.clone(), params.clone());
            async move {
                let Ok(live) = api.get(name).await else {
                    return false;
                };
                let spec = live.data["spec"].clone();
                let rewritten = json!({"spec": {
                    "memory": null,
                    "evictionPolicy": null,
                    "limits": {"memory": spec["memory"]},
                    "eviction": {"policy": spec["evictionPolicy"]},
                }});
                api.patch(name, &params, &Patch::Merge(&rewritten))
                    .await
                    .is_ok()
            }
        })
        .await;
    }
    let created: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "acme.windlass.dev/v2",
        "kind": "Cache",
        "metadata": {"name": "created-after"},
        "spec": {"limits": {"memory": "2Gi"}, "eviction": {"policy": "lfu"}},
    }))
    .unwrap();
    caches(&admin, &namespace, "v2")
        .create(&PostParams::default(), &created)
        .await
        .expect("a Cache made with the 2.0 shape");
}

/// The caches read back as the snapshot kept them, and the one made after the upgrade kept.
async fn assert_restored(client: &Client, namespace: &str) {
    let api = caches(client, namespace, "v1");
    for (name, spec) in before() {
        let live = api.get(name).await.unwrap();
        let mut expected = spec.clone();
        if expected.get("replicas").is_none() {
            // The schema's default, applied when the object was first created.
            expected["replicas"] = json!(1);
        }
        assert_eq!(
            live.data["spec"], expected,
            "Cache {name} is back as it was"
        );
    }
    let kept = api.get("created-after").await.expect("kept, never deleted");
    assert_eq!(kept.data["spec"]["limits"]["memory"], "2Gi");
}

fn operands_condition(blueprint: &Blueprint, type_: &str) -> Option<windlass_api::Condition> {
    blueprint
        .status
        .as_ref()
        .and_then(|s| condition(&s.conditions, type_).cloned())
}

async fn wait_phase_at_target(client: &Client, namespace: &str, csv: &str, want: BlueprintPhase) {
    wait_blueprint(
        client,
        namespace,
        "cache",
        &format!("{csv} {want:?}"),
        TIMEOUT,
        |b| b.spec.cluster_service_version_name == csv && phase(b) == Some(want),
    )
    .await;
}

/// Installs acme-cache 1.0.0 on `channel` under Manual approval, creates the 1.0 caches and
/// approves the upgrade the channel offers next, with the 2.x operator played for `next`.
async fn installed_then_upgrading(
    ns: &TestNamespace,
    channel: &str,
    next: &'static str,
    rollback: Value,
) -> tokio::task::JoinHandle<()> {
    let client = ns.client().clone();
    subscribe(
        &client,
        &ns.name,
        "cache",
        json!({
            "package": "acme-cache",
            "channel": channel,
            "startingCSV": "acme-cache.v1.0.0",
            "approval": "Manual",
            "targetNamespaces": [ns.name],
            "rollback": rollback,
        }),
    )
    .await;
    wait_phase_at_target(
        &client,
        &ns.name,
        "acme-cache.v1.0.0",
        BlueprintPhase::RequiresApproval,
    )
    .await;
    approve(&client, &ns.name, "cache").await;
    // Under Manual approval the next revision waits as soon as 1.0.0 Completed.
    wait_blueprint(
        &client,
        &ns.name,
        "cache",
        "1.0.0 Completed",
        TIMEOUT,
        |b| {
            b.status.as_ref().is_some_and(|s| {
                s.history
                    .iter()
                    .any(|r| r.version == "1.0.0" && r.outcome == RevisionOutcome::Completed)
            })
        },
    )
    .await;
    create_caches(&client, &ns.name).await;
    wait_phase_at_target(&client, &ns.name, next, BlueprintPhase::RequiresApproval).await;
    let operator = tokio::spawn(play_the_new_operator(client.clone(), ns.name.clone(), next));
    approve(&client, &ns.name, "cache").await;
    operator
}

/// Given acme-cache 1.0.0 with three caches on channel stable, when the upgrade to the broken
/// 2.0.1 rewrites them and then fails, then windlass rolls the operator back by itself and puts
/// the caches back as the snapshot taken before the upgrade kept them, keeps the one created
/// after it, and says so in `OperandsRestored` and an Event. The snapshot is sealed Secrets of
/// the manager-only type, next to the revision.
#[tokio::test]
async fn a_failed_upgrade_that_rewrote_its_caches_rolls_back_with_them() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "operands-auto").await;
    let client = ns.client().clone();
    let operator = installed_then_upgrading(
        &ns,
        "stable",
        "acme-cache.v2.0.1",
        json!({"automatic": true, "progressDeadlineSeconds": 20}),
    )
    .await;
    operator.await.expect("the 2.0.1 operator's rewrite");
    let rewritten = caches(&client, &ns.name, "v1")
        .get("sessions")
        .await
        .unwrap();
    assert_eq!(
        rewritten.data["spec"]["limits"]["memory"], "512Mi",
        "2.0.1 rewrote it"
    );

    let blueprint = wait_blueprint(
        &client,
        &ns.name,
        "cache",
        "RolledBack to 1.0.0",
        TIMEOUT,
        |b| {
            is_at(b, BlueprintPhase::RolledBack, "1.0.0")
                && operands_condition(b, conditions::blueprint::OPERANDS_RESTORED).is_some()
        },
    )
    .await;
    let restored =
        operands_condition(&blueprint, conditions::blueprint::OPERANDS_RESTORED).unwrap();
    println!("OperandsRestored: {}", restored.message);
    assert_eq!(
        restored.status,
        ConditionStatus::True,
        "{}",
        restored.message
    );
    assert_eq!(restored.reason, reasons::blueprint::OPERANDS_RESTORED);
    for name in ["sessions", "pages", "tokens"] {
        assert!(
            restored.message.contains(name),
            "names {name}: {}",
            restored.message
        );
    }
    assert!(
        restored
            .message
            .contains("kept 1 created after the snapshot: Cache")
            && restored.message.contains("created-after"),
        "{}",
        restored.message
    );
    assert_restored(&client, &ns.name).await;
    let status = blueprint.status.as_ref().unwrap();
    let failed = status
        .history
        .iter()
        .find(|r| r.version == "2.0.1")
        .unwrap();
    assert_eq!(failed.outcome, RevisionOutcome::RolledBack);

    // The snapshot: sealed Secrets of the type only the manager writes, next to revision 2.
    let secrets = Api::<Secret>::namespaced(client.clone(), &ns.name)
        .list(&ListParams::default().labels(&format!("{}=2", labels::OPERANDS_REVISION)))
        .await
        .unwrap();
    assert_eq!(secrets.items.len(), 1, "one chunk for three caches");
    let chunk = &secrets.items[0];
    assert_eq!(chunk.name_any(), operands_secret::name("cache", 2, 0));
    assert_eq!(chunk.type_.as_deref(), Some(operands_secret::TYPE));
    assert_eq!(
        chunk.annotations()[annotations::OPERANDS_BASE_REVISION],
        "1"
    );

    // An Event tells the restore too.
    let events = Api::<Event>::namespaced(client.clone(), &ns.name)
        .list(
            &ListParams::default()
                .fields("involvedObject.kind=Blueprint,involvedObject.name=cache"),
        )
        .await
        .unwrap();
    assert!(
        events.items.iter().any(|e| e.reason.as_deref()
            == Some(reasons::blueprint::OPERANDS_RESTORED)
            && e.message.as_deref().is_some_and(|m| m.contains("sessions"))),
        "an Event names what was restored: {:?}",
        events
            .items
            .iter()
            .map(|e| (&e.reason, &e.message))
            .collect::<Vec<_>>()
    );
}

/// Given acme-cache upgraded by hand from 1.0.0 to 2.0.0 (which rewrote the caches), then its
/// `RollbackAllowed` is a rehearsed fact: True while a rollback would apply; False, naming the
/// API, once a cluster admin stops serving the `v1` that 1.0.0 owns; a rollback then asked for
/// is refused as predicted, and once `v1` is served again the same rollback goes through and
/// puts the caches back.
#[tokio::test]
async fn a_rehearsed_rollback_predicts_both_outcomes_and_a_manual_rollback_restores_the_caches() {
    require_manager();
    let admin = windlass_testkit::client().await;
    let ns = TestNamespace::create(&admin, "operands-manual").await;
    let client = ns.client().clone();
    let operator = installed_then_upgrading(
        &ns,
        "candidate",
        "acme-cache.v2.0.0",
        json!({"automatic": true}),
    )
    .await;
    operator.await.expect("the 2.0.0 operator's rewrite");
    let allowed = |b: &Blueprint, status: ConditionStatus, reason: &str| {
        operands_condition(b, conditions::blueprint::ROLLBACK_ALLOWED)
            .is_some_and(|c| c.status == status && c.reason == reason)
    };
    let upgraded = wait_blueprint(
        &client,
        &ns.name,
        "cache",
        "2.0.0 rehearsed",
        TIMEOUT,
        |b| {
            is_at(b, BlueprintPhase::Succeeded, "2.0.0")
                && allowed(
                    b,
                    ConditionStatus::True,
                    reasons::blueprint::REHEARSAL_PASSED,
                )
        },
    )
    .await;
    let rehearsed = operands_condition(&upgraded, conditions::blueprint::ROLLBACK_ALLOWED).unwrap();
    println!("RollbackAllowed: {}", rehearsed.message);
    assert!(
        rehearsed.message.contains("would apply"),
        "{}",
        rehearsed.message
    );
    let snapshotted =
        operands_condition(&upgraded, conditions::blueprint::OPERANDS_SNAPSHOTTED).unwrap();
    assert_eq!(snapshotted.status, ConditionStatus::True);
    assert!(
        snapshotted.message.contains("kept 3 Cache"),
        "{}",
        snapshotted.message
    );

    // A cluster admin stops serving v1 (its objects are stored as v2 now).
    let crds = Api::<CustomResourceDefinition>::all(admin.clone());
    let serve_v1 = |served: bool| {
        let crds = crds.clone();
        async move {
            let live = crds.get("caches.acme.windlass.dev").await.unwrap();
            let mut versions = serde_json::to_value(&live.spec.versions).unwrap();
            for version in versions.as_array_mut().unwrap() {
                if version["name"] == "v1" {
                    version["served"] = json!(served);
                }
            }
            crds.patch(
                "caches.acme.windlass.dev",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"versions": versions}})),
            )
            .await
            .unwrap();
        }
    };
    let blueprints = Api::<Blueprint>::namespaced(client.clone(), &ns.name);
    let nudge = |n: u32| {
        let blueprints = blueprints.clone();
        async move {
            // Any change of the Blueprint reconciles it; the periodic pass would too, later.
            blueprints
                .patch(
                    "cache",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {"annotations": {"e2e.windlass.dev/nudge": n.to_string()}}})),
                )
                .await
                .unwrap();
        }
    };
    serve_v1(false).await;
    nudge(1).await;
    let predicted = wait_blueprint(
        &client,
        &ns.name,
        "cache",
        "a failing rollback predicted",
        TIMEOUT,
        |b| {
            allowed(
                b,
                ConditionStatus::False,
                reasons::blueprint::REHEARSAL_FAILED,
            )
        },
    )
    .await;
    let failing = operands_condition(&predicted, conditions::blueprint::ROLLBACK_ALLOWED).unwrap();
    println!("RollbackAllowed: {}", failing.message);
    assert!(
        failing.message.contains("caches.acme.windlass.dev v1"),
        "{}",
        failing.message
    );
    assert_eq!(
        phase(&predicted),
        Some(BlueprintPhase::Succeeded),
        "only a prediction"
    );

    // Tried for real: refused as predicted, and nothing moves.
    blueprints
        .patch(
            "cache",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"clusterServiceVersionName": "acme-cache.v1.0.0", "force": true}}),
            ),
        )
        .await
        .unwrap();
    let refused = wait_blueprint(
        &client,
        &ns.name,
        "cache",
        "the rollback refused",
        TIMEOUT,
        |b| {
            allowed(
                b,
                ConditionStatus::False,
                reasons::blueprint::OWNED_APIS_NOT_SERVED,
            )
        },
    )
    .await;
    assert!(
        is_at(&refused, BlueprintPhase::Succeeded, "2.0.0"),
        "2.0.0 still runs"
    );
    let rewritten = caches(&client, &ns.name, "v2")
        .get("sessions")
        .await
        .unwrap();
    assert_eq!(
        rewritten.data["spec"]["limits"]["memory"], "512Mi",
        "nothing restored"
    );

    // Served again: the rollback asked for goes through, operands and all.
    serve_v1(true).await;
    nudge(2).await;
    // Under Manual approval a rollback a person asks for waits with its plan too.
    wait_phase_at_target(
        &client,
        &ns.name,
        "acme-cache.v1.0.0",
        BlueprintPhase::RequiresApproval,
    )
    .await;
    // The plan to approve says what the rollback does with the caches.
    let plan = windlass_testkit::run_ok(
        std::process::Command::new(windlass_testkit::windlass_binary())
            .env("KUBECONFIG", windlass_testkit::kubeconfig_path())
            .args(["plan", "cache", "-n", &ns.name]),
    );
    assert!(
        plan.contains("Custom resources (a dry run of restoring the snapshot):")
            && plan.contains("would restore the spec of 3 custom resource(s)"),
        "{plan}"
    );
    approve(&client, &ns.name, "cache").await;
    let back = wait_blueprint(&client, &ns.name, "cache", "back at 1.0.0", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.0")
            && operands_condition(b, conditions::blueprint::OPERANDS_RESTORED).is_some()
    })
    .await;
    let restored = operands_condition(&back, conditions::blueprint::OPERANDS_RESTORED).unwrap();
    println!("OperandsRestored: {}", restored.message);
    assert_eq!(
        restored.status,
        ConditionStatus::True,
        "{}",
        restored.message
    );
    assert!(
        restored
            .message
            .starts_with("restored the spec of 3 custom resource(s)"),
        "{}",
        restored.message
    );
    assert_restored(&client, &ns.name).await;
}

fn revisions_stored(secrets: &[Secret], label: &str) -> Vec<i64> {
    let mut revisions: Vec<i64> = secrets
        .iter()
        .filter_map(|s| s.labels().get(label)?.parse().ok())
        .collect();
    revisions.sort();
    revisions.dedup();
    revisions
}

/// Given acme-db with `historyLimit: 2` taken through four revisions (1.0.0, 1.0.1, a manual
/// rollback to 1.0.0, `windlass resume` to 1.0.1), then only the newest two revision Secrets and
/// the snapshots of kept revisions remain, and a rollback from what was kept still works and
/// restores the operand edited after the upgrade.
#[tokio::test]
async fn history_past_its_limit_prunes_the_oldest_revisions_and_snapshots_and_the_kept_ones_roll_back()
 {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "history-limit").await;
    let client = ns.client().clone();
    subscribe(
        &client,
        &ns.name,
        "db",
        json!({
            "package": "acme-db",
            "channel": "stable",
            "versionRange": "<1.1.0",
            "startingCSV": "acme-db.v1.0.0",
            "targetNamespaces": [ns.name],
            "historyLimit": 2,
        }),
    )
    .await;
    let databases = {
        let gvk = GroupVersionKind::gvk("acme.windlass.dev", "v1", "Database");
        Api::<DynamicObject>::namespaced_with(
            client.clone(),
            &ns.name,
            &ApiResource::from_gvk(&gvk),
        )
    };
    let orders: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "acme.windlass.dev/v1",
        "kind": "Database",
        "metadata": {"name": "orders"},
        "spec": {"engine": "postgres", "replicas": 2, "storage": {"size": "20Gi"}},
    }))
    .unwrap();
    // The Database exists from the start (its CRD comes with 1.0.0).
    windlass_testkit::wait_until("the Database CRD to be served", TIMEOUT, || {
        let (databases, orders) = (databases.clone(), orders.clone());
        async move {
            databases
                .create(&PostParams::default(), &orders)
                .await
                .is_ok()
        }
    })
    .await;
    wait_blueprint(&client, &ns.name, "db", "1.0.1 Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.1")
    })
    .await;
    let blueprints = Api::<Blueprint>::namespaced(client.clone(), &ns.name);
    blueprints
        .patch(
            "db",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"clusterServiceVersionName": "acme-db.v1.0.0"}})),
        )
        .await
        .unwrap();
    wait_blueprint(
        &client,
        &ns.name,
        "db",
        "rolled back to 1.0.0",
        TIMEOUT,
        |b| is_at(b, BlueprintPhase::Succeeded, "1.0.0") && b.spec.revision == 3,
    )
    .await;
    windlass_testkit::run_ok(
        std::process::Command::new(windlass_testkit::windlass_binary())
            .env("KUBECONFIG", windlass_testkit::kubeconfig_path())
            .args(["resume", "db", "-n", &ns.name]),
    );
    wait_blueprint(
        &client,
        &ns.name,
        "db",
        "1.0.1 again as revision 4",
        TIMEOUT,
        |b| is_at(b, BlueprintPhase::Succeeded, "1.0.1") && b.spec.revision == 4,
    )
    .await;

    let secrets = Api::<Secret>::namespaced(client.clone(), &ns.name);
    let listed = || {
        let secrets = secrets.clone();
        async move { secrets.list(&ListParams::default()).await.unwrap().items }
    };
    windlass_testkit::wait_until("revisions 1 and 2 to be pruned", TIMEOUT, || {
        let listed = listed();
        async move { revisions_stored(&listed.await, labels::REVISION) == [3, 4] }
    })
    .await;
    let all = listed().await;
    assert_eq!(
        revisions_stored(&all, labels::OPERANDS_REVISION),
        [4],
        "revision 2's snapshot went with it; 4's (taken while 3 ran) stays"
    );
    let blueprint = blueprints.get("db").await.unwrap();
    let history: Vec<i64> = blueprint
        .status
        .as_ref()
        .unwrap()
        .history
        .iter()
        .map(|r| r.revision)
        .collect();
    assert_eq!(history, [4, 3], "the history keeps what is stored");

    // The operator of 1.0.1 changes the Database; a rollback from the kept revision 3 puts it
    // back from the kept snapshot.
    databases
        .patch(
            "orders",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 4}})),
        )
        .await
        .unwrap();
    blueprints
        .patch(
            "db",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"clusterServiceVersionName": "acme-db.v1.0.0"}})),
        )
        .await
        .unwrap();
    let back = wait_blueprint(
        &client,
        &ns.name,
        "db",
        "rolled back from revision 3",
        TIMEOUT,
        |b| {
            is_at(b, BlueprintPhase::Succeeded, "1.0.0")
                && b.spec.revision == 5
                && operands_condition(b, conditions::blueprint::OPERANDS_RESTORED).is_some()
        },
    )
    .await;
    let record = back
        .status
        .as_ref()
        .unwrap()
        .history
        .iter()
        .find(|r| r.revision == 5)
        .unwrap()
        .clone();
    assert_eq!(record.restored_from, Some(3));
    let restored = operands_condition(&back, conditions::blueprint::OPERANDS_RESTORED).unwrap();
    assert!(
        restored.message.contains("orders (/spec/replicas)"),
        "{}",
        restored.message
    );
    assert_eq!(
        databases.get("orders").await.unwrap().data["spec"]["replicas"],
        2
    );
}
