//! OLM v0 as it leaves a running operator, without OLM's controllers: its CRDs from the pinned
//! `github.com/operator-framework/api` module (e2e/tools/olm), and the objects its
//! catalog-operator and olm-operator would have written for one bundle: CatalogSource,
//! OperatorGroup, Subscription, InstallPlan, ClusterServiceVersion (Succeeded), the CRD, the
//! ServiceAccount, RBAC under OLM's generated names, and the Deployment with OLM's labels,
//! annotations and owner reference.

use std::{path::PathBuf, process::Command, time::Duration};

use k8s_openapi::api::{apps::v1::Deployment, core::v1::Pod};
use kube::{
    Api, Client, ResourceExt,
    api::{
        ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
    },
};
use serde_json::{Value, json};
use tokio::sync::OnceCell;
use windlass_testkit::{kubectl, run_ok, wait_until};

const MODULE: &str = "github.com/operator-framework/api";
const CRDS: &[&str] = &[
    "operators.coreos.com_catalogsources.yaml",
    "operators.coreos.com_clusterserviceversions.yaml",
    "operators.coreos.com_installplans.yaml",
    "operators.coreos.com_operatorgroups.yaml",
    "operators.coreos.com_subscriptions.yaml",
];

static INSTALLED: OnceCell<()> = OnceCell::const_new();

/// The crds/ folder of the pinned module, downloaded into Go's module cache when missing.
fn crd_dir() -> PathBuf {
    let tool_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tools/olm");
    let out = Command::new("go")
        .args(["mod", "download", "-json", MODULE])
        .current_dir(&tool_dir)
        .output()
        .expect("running go (Go is needed for OLM v0's CRDs)");
    assert!(
        out.status.success(),
        "go mod download {MODULE} in {}: {}",
        tool_dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let info: Value = serde_json::from_slice(&out.stdout).expect("go mod download -json output");
    PathBuf::from(info["Dir"].as_str().expect("Dir in go mod download -json")).join("crds")
}

/// Installs OLM v0's CRDs once per test process and waits until they are served.
pub async fn install_crds() {
    INSTALLED
        .get_or_init(|| async {
            let dir = crd_dir();
            for crd in CRDS {
                let path = dir.join(crd);
                run_ok(kubectl().args([
                    "apply",
                    "--server-side",
                    "--force-conflicts",
                    "--field-manager=windlass-e2e",
                    "-f",
                    &path.display().to_string(),
                ]));
            }
            run_ok(kubectl().args([
                "wait",
                "--for=condition=Established",
                "--timeout=60s",
                "crd/subscriptions.operators.coreos.com",
                "crd/clusterserviceversions.operators.coreos.com",
                "crd/catalogsources.operators.coreos.com",
                "crd/installplans.operators.coreos.com",
                "crd/operatorgroups.operators.coreos.com",
            ]));
        })
        .await;
}

pub fn resource(api_version: &str, kind: &str, plural: &str) -> ApiResource {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

pub fn olm(kind: &str) -> ApiResource {
    let (version, plural) = match kind {
        "OperatorGroup" => ("operators.coreos.com/v1", "operatorgroups"),
        "Subscription" => ("operators.coreos.com/v1alpha1", "subscriptions"),
        "ClusterServiceVersion" => ("operators.coreos.com/v1alpha1", "clusterserviceversions"),
        "CatalogSource" => ("operators.coreos.com/v1alpha1", "catalogsources"),
        "InstallPlan" => ("operators.coreos.com/v1alpha1", "installplans"),
        other => panic!("no OLM kind {other}"),
    };
    resource(version, kind, plural)
}

/// Creates `object` as OLM's field manager `manager` and, when given, sets its status.
async fn create(
    client: &Client,
    resource: &ApiResource,
    object: Value,
    status: Option<Value>,
) -> DynamicObject {
    let namespace = object["metadata"]["namespace"].as_str().map(str::to_string);
    let api: Api<DynamicObject> = match &namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    };
    let mut object: DynamicObject = serde_json::from_value(object).unwrap();
    object.types = Some(kube::api::TypeMeta {
        api_version: resource.api_version.clone(),
        kind: resource.kind.clone(),
    });
    let manager = if resource.group == "operators.coreos.com" {
        "catalog"
    } else {
        "olm"
    };
    let created = api
        .create(
            &PostParams {
                field_manager: Some(manager.into()),
                ..Default::default()
            },
            &object,
        )
        .await
        .unwrap_or_else(|e| panic!("creating {} {}: {e}", resource.kind, object.name_any()));
    if let Some(status) = status {
        api.patch_status(
            &created.name_any(),
            &PatchParams {
                field_manager: Some("olm".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({ "status": status })),
        )
        .await
        .unwrap_or_else(|e| panic!("status of {} {}: {e}", resource.kind, created.name_any()));
    }
    created
}

/// What OLM left for one running operator.
pub struct OlmInstall {
    pub csv: String,
    pub deployment: String,
    pub crd: String,
    /// `kind/name` of the RBAC OLM generated, owned by its CSV.
    pub generated_rbac: Vec<(String, String)>,
}

/// Writes what OLM v0 would have for `bundle_csv` and `crd` (a bundle's manifests) installed
/// from CatalogSource image `catalog_image` as package `package` in `namespace`, with
/// Manual approval, and waits until the Deployment's pods are available.
pub async fn leave_running(
    client: &Client,
    namespace: &str,
    package: &str,
    catalog_image: &str,
    bundle_csv: &Value,
    crd: &Value,
) -> OlmInstall {
    let csv_name = bundle_csv["metadata"]["name"].as_str().unwrap().to_string();
    let component = format!("operators.coreos.com/{package}.{namespace}");
    let mut crd = crd.clone();
    crd["metadata"]["labels"] = json!({ component.clone(): "" });
    let crd_resource = resource(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
    );
    create(client, &crd_resource, crd.clone(), None).await;
    let crd_name = crd["metadata"]["name"].as_str().unwrap().to_string();
    run_ok(kubectl().args([
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        &format!("crd/{crd_name}"),
    ]));

    create(
        client,
        &olm("CatalogSource"),
        json!({
            "metadata": {"name": "acme-operators", "namespace": namespace},
            "spec": {"sourceType": "grpc", "image": catalog_image, "displayName": "Acme operators",
                     "publisher": "Acme", "updateStrategy": {"registryPoll": {"interval": "10m"}}},
        }),
        Some(json!({"connectionState": {"lastObservedState": "READY"}})),
    )
    .await;
    create(
        client,
        &olm("OperatorGroup"),
        json!({
            "metadata": {"name": "acme-group", "namespace": namespace},
            "spec": {"targetNamespaces": [namespace]},
        }),
        Some(json!({"namespaces": [namespace], "lastUpdated": "2026-12-01T00:00:00Z"})),
    )
    .await;
    create(client, &olm("InstallPlan"), json!({
        "metadata": {"name": "install-4x7kq", "namespace": namespace},
        "spec": {"clusterServiceVersionNames": [csv_name], "approval": "Manual", "approved": true},
    }), Some(json!({"phase": "Complete", "catalogSources": ["acme-operators"]}))).await;
    create(client, &olm("Subscription"), json!({
        "metadata": {"name": package, "namespace": namespace},
        "spec": {"name": package, "channel": "stable", "source": "acme-operators",
                 "sourceNamespace": namespace, "installPlanApproval": "Manual", "startingCSV": csv_name},
    }), Some(json!({"installedCSV": csv_name, "currentCSV": csv_name, "state": "AtLatestKnown", "lastUpdated": "2026-12-01T00:00:00Z",
                    "installPlanRef": {"name": "install-4x7kq", "namespace": namespace}}))).await;

    let mut csv = bundle_csv.clone();
    csv["metadata"]["namespace"] = json!(namespace);
    // OLM's CSV schema requires a name on each owned CRD's resources entry, which the sample
    // bundles leave out (windlass reads it as optional); OLM stores an empty one.
    for owned in csv["spec"]["customresourcedefinitions"]["owned"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        for entry in owned["resources"].as_array_mut().into_iter().flatten() {
            if entry.get("name").is_none() {
                entry["name"] = json!("");
            }
        }
    }
    let annotations = csv["metadata"]["annotations"].as_object_mut().unwrap();
    annotations.insert("olm.operatorGroup".into(), json!("acme-group"));
    annotations.insert("olm.operatorNamespace".into(), json!(namespace));
    annotations.insert("olm.targetNamespaces".into(), json!(namespace));
    csv["metadata"]["labels"] = json!({ component.clone(): "", "olm.managed": "true" });
    let created = create(client, &olm("ClusterServiceVersion"), csv.clone(), Some(json!({
        "phase": "Succeeded", "reason": "InstallSucceeded", "message": "install strategy completed with no errors",
    }))).await;
    let owner = json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "name": csv_name, "uid": created.uid().unwrap(), "controller": false, "blockOwnerDeletion": false});
    let owner_labels = json!({"olm.owner": csv_name, "olm.owner.kind": "ClusterServiceVersion",
        "olm.owner.namespace": namespace, component.clone(): ""});

    let strategy = &csv["spec"]["install"]["spec"];
    let mut generated_rbac = Vec::new();
    for (index, permission) in strategy["permissions"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let account = permission["serviceAccountName"].as_str().unwrap();
        let sa = resource("v1", "ServiceAccount", "serviceaccounts");
        let exists = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &sa)
            .get_opt(account)
            .await
            .unwrap()
            .is_some();
        if !exists {
            create(
                client,
                &sa,
                json!({"metadata": {"name": account, "namespace": namespace,
                "labels": owner_labels, "ownerReferences": [owner]}}),
                None,
            )
            .await;
        }
        let name = format!("{csv_name}-{index}x8d7f");
        create(client, &resource("rbac.authorization.k8s.io/v1", "Role", "roles"), json!({
            "metadata": {"name": name, "namespace": namespace, "labels": owner_labels, "ownerReferences": [owner]},
            "rules": permission["rules"],
        }), None).await;
        create(client, &resource("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings"), json!({
            "metadata": {"name": name, "namespace": namespace, "labels": owner_labels, "ownerReferences": [owner]},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        }), None).await;
        generated_rbac.push(("Role".to_string(), name.clone()));
        generated_rbac.push(("RoleBinding".to_string(), name));
    }
    for (index, permission) in strategy["clusterPermissions"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let account = permission["serviceAccountName"].as_str().unwrap();
        let name = format!("{csv_name}-{namespace}-{index}c9a1");
        create(
            client,
            &resource(
                "rbac.authorization.k8s.io/v1",
                "ClusterRole",
                "clusterroles",
            ),
            json!({
                "metadata": {"name": name, "labels": owner_labels}, "rules": permission["rules"],
            }),
            None,
        )
        .await;
        create(client, &resource("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings"), json!({
            "metadata": {"name": name, "labels": owner_labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        }), None).await;
    }

    let deployment = &strategy["deployments"][0];
    let name = deployment["name"].as_str().unwrap().to_string();
    let mut spec = deployment["spec"].clone();
    let template_annotations = &mut spec["template"]["metadata"]["annotations"];
    if !template_annotations.is_object() {
        *template_annotations = json!({});
    }
    template_annotations["olm.operatorGroup"] = json!("acme-group");
    template_annotations["olm.operatorNamespace"] = json!(namespace);
    template_annotations["olm.targetNamespaces"] = json!(namespace);
    let mut labels = owner_labels.clone();
    labels["olm.deployment-spec-hash"] = json!("6c9f7d8b5");
    create(client, &resource("apps/v1", "Deployment", "deployments"), json!({
        "metadata": {"name": name, "namespace": namespace, "labels": labels, "ownerReferences": [owner]},
        "spec": spec,
    }), None).await;
    let deployments = Api::<Deployment>::namespaced(client.clone(), namespace);
    wait_until(
        "OLM's Deployment available",
        Duration::from_secs(120),
        || async {
            let d = deployments.get(&name).await.unwrap();
            let status = d.status.unwrap_or_default();
            status.available_replicas.unwrap_or(0) >= d.spec.replicas.unwrap_or(1)
                && status.observed_generation == d.metadata.generation
        },
    )
    .await;
    OlmInstall {
        csv: csv_name,
        deployment: name,
        crd: crd_name,
        generated_rbac,
    }
}

/// The operator's pods: `(name, uid)`, sorted.
pub async fn pods(client: &Client, namespace: &str, deployment: &str) -> Vec<(String, String)> {
    let d = Api::<Deployment>::namespaced(client.clone(), namespace)
        .get(deployment)
        .await
        .unwrap();
    let selector = d
        .spec
        .selector
        .match_labels
        .unwrap_or_default()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let mut pods: Vec<(String, String)> = Api::<Pod>::namespaced(client.clone(), namespace)
        .list(&ListParams::default().labels(&selector))
        .await
        .unwrap()
        .items
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(|p| (p.name_any(), p.uid().unwrap_or_default()))
        .collect();
    pods.sort();
    pods
}
