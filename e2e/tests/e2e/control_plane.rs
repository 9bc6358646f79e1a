//! The local control plane is a real Kubernetes: these tests prove each piece windlass relies on.

use std::time::Duration;

use k8s_openapi::{
    api::{
        apps::v1::Deployment,
        core::v1::{ConfigMap, Pod, Secret},
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    apimachinery::pkg::apis::meta::v1::OwnerReference,
};
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, DynamicObject, ListParams, PostParams},
    core::{ApiResource, GroupVersionKind},
};
use serde_json::json;
use windlass_testkit::{TestNamespace, unique_name, wait_for};

const PINNED_VERSION: &str = "v1.37.2";
const TIMEOUT: Duration = Duration::from_secs(90);

/// Given the local control plane, the apiserver reports the pinned Kubernetes version.
#[tokio::test]
async fn apiserver_reports_the_pinned_version() {
    let client = windlass_testkit::client().await;
    let info = client.apiserver_version().await.unwrap();
    assert_eq!(info.git_version, PINNED_VERSION);
}

/// A CRD becomes Established and a custom resource of it round-trips through the API.
#[tokio::test]
async fn crd_becomes_established_and_a_custom_resource_round_trips() {
    let client = windlass_testkit::client().await;
    let ns = TestNamespace::create(&client, "crd").await;
    let group = format!("{}.e2e.windlass.dev", unique_name("g"));
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer"},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}}
                    }}
                }}}
            }]
        }
    }))
    .unwrap();
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let name = crd.name_any();
    wait_for("the CRD to be Established", TIMEOUT, || async {
        let crd = crds.get(&name).await.map_err(|e| e.to_string())?;
        let established = crd
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            });
        if established {
            Ok(())
        } else {
            Err(format!("{:?}", crd.status))
        }
    })
    .await;

    let gvk = GroupVersionKind::gvk(&group, "v1", "Widget");
    let widgets: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &ns.name,
        &ApiResource::from_gvk_with_plural(&gvk, "widgets"),
    );
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{group}/v1"),
        "kind": "Widget",
        "metadata": {"name": "w1"},
        "spec": {"size": 3, "labels": {"tier": "gold"}}
    }))
    .unwrap();
    // The discovery cache of a fresh CRD can lag Established by a moment.
    let created = wait_for("the Widget to be accepted", TIMEOUT, || async {
        widgets
            .create(&PostParams::default(), &widget)
            .await
            .map_err(|e| e.to_string())
    })
    .await;
    let read = widgets.get("w1").await.unwrap();
    assert_eq!(
        read.data["spec"],
        json!({"size": 3, "labels": {"tier": "gold"}})
    );
    assert_eq!(read.metadata.uid, created.metadata.uid);

    crds.delete(&name, &DeleteParams::default()).await.unwrap();
}

fn pause_deployment(name: &str, crash_loop: bool) -> Deployment {
    let mut labels = json!({"app": name});
    let mut container = json!({"name": "main", "image": "registry.k8s.io/pause:3.10"});
    if crash_loop {
        labels["windlass.dev/simulate"] = json!("crash-loop");
        container["command"] = json!(["/windlass-broken"]);
    }
    serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}}
        }
    }))
    .unwrap()
}

fn available(deployment: &Deployment) -> Option<bool> {
    deployment
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_.as_deref() == Some("Available"))
        .map(|c| c.status.as_deref() == Some("True"))
}

/// A Deployment becomes Available through the controller-manager, scheduler and kwok; one whose
/// pod carries the crash-loop marker never does, and its pod shows CrashLoopBackOff with a
/// growing restart count.
#[tokio::test]
async fn deployment_becomes_available_and_an_injected_failure_crash_loops() {
    let client = windlass_testkit::client().await;
    let ns = TestNamespace::create(&client, "deploy").await;
    let deployments = Api::<Deployment>::namespaced(client.clone(), &ns.name);
    let pods = Api::<Pod>::namespaced(client.clone(), &ns.name);
    deployments
        .create(&PostParams::default(), &pause_deployment("healthy", false))
        .await
        .unwrap();
    deployments
        .create(&PostParams::default(), &pause_deployment("broken", true))
        .await
        .unwrap();

    wait_for("deployment healthy to be Available", TIMEOUT, || async {
        let d = deployments
            .get("healthy")
            .await
            .map_err(|e| e.to_string())?;
        if available(&d) == Some(true) {
            Ok(())
        } else {
            Err(format!("{:?}", d.status))
        }
    })
    .await;

    let restarts = wait_for("the broken pod to crash-loop twice", TIMEOUT, || async {
        let list = pods
            .list(&ListParams::default().labels("app=broken"))
            .await
            .map_err(|e| e.to_string())?;
        let pod = list.items.first().ok_or("no pod yet")?;
        let status = pod.status.as_ref().ok_or("no status")?;
        let container = status
            .container_statuses
            .as_ref()
            .and_then(|c| c.first())
            .ok_or("no container status")?;
        let waiting = container
            .state
            .as_ref()
            .and_then(|s| s.waiting.as_ref())
            .and_then(|w| w.reason.clone());
        if waiting.as_deref() == Some("CrashLoopBackOff")
            && container.restart_count >= 2
            && !container.ready
        {
            Ok(container.restart_count)
        } else {
            Err(format!("{status:?}"))
        }
    })
    .await;
    assert!(restarts >= 2);
    let broken = deployments.get("broken").await.unwrap();
    assert_eq!(
        available(&broken),
        Some(false),
        "broken deployment status: {:?}",
        broken.status
    );
    assert_eq!(
        broken
            .status
            .as_ref()
            .and_then(|s| s.available_replicas)
            .unwrap_or(0),
        0
    );
}

/// Deleting an owner garbage-collects its dependents (ownerReferences work).
#[tokio::test]
async fn deleting_an_owner_garbage_collects_its_dependents() {
    let client: Client = windlass_testkit::client().await;
    let ns = TestNamespace::create(&client, "gc").await;
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), &ns.name);
    let secrets = Api::<Secret>::namespaced(client.clone(), &ns.name);
    let owner: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "owner"}})).unwrap();
    let owner = config_maps
        .create(&PostParams::default(), &owner)
        .await
        .unwrap();
    let mut dependent: Secret =
        serde_json::from_value(json!({"metadata": {"name": "dependent"}})).unwrap();
    dependent.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: owner.name_any(),
        uid: owner.uid().unwrap(),
        ..Default::default()
    }]);
    secrets
        .create(&PostParams::default(), &dependent)
        .await
        .unwrap();

    config_maps
        .delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    wait_for(
        "the dependent Secret to be garbage-collected",
        TIMEOUT,
        || async {
            match secrets.get_opt("dependent").await {
                Ok(None) => Ok(()),
                Ok(Some(s)) => Err(format!("still there: {:?}", s.metadata)),
                Err(e) => Err(e.to_string()),
            }
        },
    )
    .await;
}
