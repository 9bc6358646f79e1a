//! Reading an OLM v0 install for `windlass adopt olm`: OLM's objects, the live objects its
//! ClusterServiceVersion owns, and what else is there (OLM's controllers, windlass Catalogs).
//! Owned objects are read as metadata only: a take-over changes nothing else.

use anyhow::Context as _;
use kube::{
    Api, Client, ResourceExt,
    api::{ApiResource, DynamicObject, GroupVersionKind, ListParams},
    core::PartialObjectMeta,
};
use serde_json::{Value, json};
use windlass_adopt::OlmInstall;
use windlass_api::{
    Catalog,
    names::{annotations, olm_v0},
};

/// OLM v0's kinds.
pub(crate) fn olm_resource(kind: &str) -> ApiResource {
    let (version, plural) = match kind {
        "OperatorGroup" => ("v1", "operatorgroups"),
        "Subscription" => ("v1alpha1", "subscriptions"),
        "ClusterServiceVersion" => ("v1alpha1", "clusterserviceversions"),
        "CatalogSource" => ("v1alpha1", "catalogsources"),
        _ => ("v1alpha1", "installplans"),
    };
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(olm_v0::GROUP, version, kind), plural)
}

/// A core or named-group kind.
pub(crate) fn resource(api_version: &str, kind: &str, plural: &str) -> ApiResource {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

/// Kinds whose objects in the operator's namespace a CSV may own.
const NAMESPACED_OWNED: &[(&str, &str, &str)] = &[
    ("v1", "ServiceAccount", "serviceaccounts"),
    ("v1", "ConfigMap", "configmaps"),
    ("v1", "Service", "services"),
    ("v1", "Secret", "secrets"),
    ("rbac.authorization.k8s.io/v1", "Role", "roles"),
    (
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        "rolebindings",
    ),
];

/// Cluster-scoped kinds OLM labels with the CSV that made them.
const CLUSTER_OWNED: &[(&str, &str, &str)] = &[
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "clusterroles",
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
    ),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
    ),
    (
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
    ),
];

/// The OLM Subscriptions in `namespace` (every namespace when `None`), or a clear error when
/// OLM v0's API is not served.
pub(crate) async fn olm_subscriptions(
    client: &Client,
    namespace: Option<&str>,
) -> anyhow::Result<Vec<DynamicObject>> {
    let resource = olm_resource("Subscription");
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    match api.list(&ListParams::default()).await {
        Ok(list) => Ok(list.items),
        Err(kube::Error::Api(status)) if status.code == 404 => anyhow::bail!(
            "the cluster does not serve subscriptions.{}/v1alpha1: OLM v0 is not installed, \
             so there is nothing to adopt",
            olm_v0::GROUP
        ),
        Err(error) => Err(error).context("listing OLM's Subscriptions"),
    }
}

fn to_value(object: &DynamicObject, resource: &ApiResource) -> Value {
    let mut value = serde_json::to_value(object).unwrap_or_default();
    value["apiVersion"] = json!(resource.api_version);
    value["kind"] = json!(resource.kind);
    value
}

fn meta_value(object: &PartialObjectMeta<DynamicObject>, resource: &ApiResource) -> Value {
    json!({
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": serde_json::to_value(&object.metadata).unwrap_or_default(),
    })
}

async fn list_values(
    api: &Api<DynamicObject>,
    resource: &ApiResource,
) -> anyhow::Result<Vec<Value>> {
    Ok(api
        .list(&ListParams::default())
        .await
        .with_context(|| format!("listing {}", resource.plural))?
        .items
        .iter()
        .map(|o| to_value(o, resource))
        .collect())
}

/// Everything adopting `subscription` needs to know.
pub(crate) async fn read_install(
    client: &Client,
    subscription: &DynamicObject,
    all_subscriptions: &[DynamicObject],
    plain_http: bool,
) -> anyhow::Result<OlmInstall> {
    let sub_resource = olm_resource("Subscription");
    let sub = to_value(subscription, &sub_resource);
    let namespace = subscription.namespace().unwrap_or_default();
    let text = |value: &Value, pointer: &str| {
        value
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let mut install = OlmInstall {
        plain_http,
        ..OlmInstall::default()
    };
    let in_namespace = |kind: &str| {
        let resource = olm_resource(kind);
        (
            Api::<DynamicObject>::namespaced_with(client.clone(), &namespace, &resource),
            resource,
        )
    };

    let (csvs, csv_resource) = in_namespace("ClusterServiceVersion");
    let installed = text(&sub, "/status/installedCSV");
    if !installed.is_empty() {
        install.csv = csvs
            .get_opt(&installed)
            .await
            .with_context(|| format!("reading ClusterServiceVersion {namespace}/{installed}"))?
            .map(|csv| to_value(&csv, &csv_resource));
    }
    let (groups, group_resource) = in_namespace("OperatorGroup");
    install.operator_groups = list_values(&groups, &group_resource).await?;
    let (plans, plan_resource) = in_namespace("InstallPlan");
    install.install_plans = list_values(&plans, &plan_resource).await?;

    let source = text(&sub, "/spec/source");
    let source_namespace = match text(&sub, "/spec/sourceNamespace") {
        ns if ns.is_empty() => namespace.clone(),
        ns => ns,
    };
    if !source.is_empty() {
        let resource = olm_resource("CatalogSource");
        let sources =
            Api::<DynamicObject>::namespaced_with(client.clone(), &source_namespace, &resource);
        install.catalog_source = sources
            .get_opt(&source)
            .await
            .with_context(|| format!("reading CatalogSource {source_namespace}/{source}"))?
            .map(|s| to_value(&s, &resource));
    }
    let same_source = |other: &DynamicObject| {
        let other = to_value(other, &sub_resource);
        text(&other, "/spec/source") == source
            && match text(&other, "/spec/sourceNamespace") {
                ns if ns.is_empty() => other["metadata"]["namespace"] == json!(source_namespace),
                ns => ns == source_namespace,
            }
    };
    let this = subscription.uid();
    let others: Vec<&DynamicObject> = all_subscriptions
        .iter()
        .filter(|o| o.uid() != this)
        .collect();
    install.others_on_catalog_source = others.iter().filter(|o| same_source(o)).count();
    install.others_in_namespace = others
        .iter()
        .filter(|o| o.namespace().as_deref() == Some(namespace.as_str()))
        .count();

    if let Some(csv) = install.csv.clone() {
        read_owned(client, &namespace, &csv, &mut install).await?;
    }
    install.olm_controllers = olm_controllers(client).await?;
    install.catalogs = Api::<Catalog>::all(client.clone())
        .list(&ListParams::default())
        .await
        .context("listing windlass Catalogs")?
        .items
        .into_iter()
        .filter_map(|c| Some((c.name_any(), c.spec.source.image.clone()?)))
        .collect();
    install.subscription = sub;
    Ok(install)
}

async fn read_owned(
    client: &Client,
    namespace: &str,
    csv: &Value,
    install: &mut OlmInstall,
) -> anyhow::Result<()> {
    let deployments = resource("apps/v1", "Deployment", "deployments");
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &deployments);
    let names: Vec<String> = csv
        .pointer("/spec/install/spec/deployments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|d| d["name"].as_str().map(str::to_string))
        .collect();
    for name in names {
        let live = api
            .get_opt(&name)
            .await
            .with_context(|| format!("reading Deployment {namespace}/{name}"))?
            .map(|d| to_value(&d, &deployments));
        if let Some(live) = &live {
            install.owned.push(live.clone());
        }
        install.deployments.push((name, live));
    }
    for (api_version, kind, plural) in NAMESPACED_OWNED {
        let resource = resource(api_version, kind, plural);
        let api = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &resource);
        let list = api
            .list_metadata(&ListParams::default())
            .await
            .with_context(|| format!("listing {plural} in {namespace}"))?;
        install.owned.extend(
            list.items
                .iter()
                .map(|o| meta_value(o, &resource))
                .filter(|o| windlass_adopt::owned_by(o, csv)),
        );
    }
    let csv_name = csv["metadata"]["name"].as_str().unwrap_or_default();
    let selector = format!(
        "{}={csv_name},{}={namespace}",
        olm_v0::OWNER,
        olm_v0::OWNER_NAMESPACE
    );
    for (api_version, kind, plural) in CLUSTER_OWNED {
        let resource = resource(api_version, kind, plural);
        let api = Api::<DynamicObject>::all_with(client.clone(), &resource);
        let list = api
            .list_metadata(&ListParams::default().labels(&selector))
            .await
            .with_context(|| format!("listing {plural} labelled {selector}"))?;
        install
            .owned
            .extend(list.items.iter().map(|o| meta_value(o, &resource)));
    }
    let crd_resource = resource(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
    );
    let crds = Api::<DynamicObject>::all_with(client.clone(), &crd_resource);
    let owned_crds: Vec<String> = csv
        .pointer("/spec/customresourcedefinitions/owned")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect();
    for name in owned_crds {
        let live = crds
            .get_metadata_opt(&name)
            .await
            .with_context(|| format!("reading CustomResourceDefinition {name}"))?
            .map(|c| meta_value(&c, &crd_resource));
        install.crds.push((name, live));
    }
    Ok(())
}

/// OLM's controllers wherever they run, with their ready replicas.
async fn olm_controllers(client: &Client) -> anyhow::Result<Vec<(String, i64)>> {
    let resource = resource("apps/v1", "Deployment", "deployments");
    let api = Api::<DynamicObject>::all_with(client.clone(), &resource);
    let mut found = Vec::new();
    for name in olm_v0::CONTROLLERS {
        let list = api
            .list(&ListParams::default().fields(&format!("metadata.name={name}")))
            .await
            .with_context(|| format!("looking for OLM's {name} Deployment"))?;
        for deployment in list.items {
            let value = to_value(&deployment, &resource);
            let replicas = value
                .pointer("/status/readyReplicas")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                .max(
                    value
                        .pointer("/spec/replicas")
                        .and_then(Value::as_i64)
                        .unwrap_or(0),
                );
            found.push((
                format!("{}/{name}", deployment.namespace().unwrap_or_default()),
                replicas,
            ));
        }
    }
    Ok(found)
}

/// `adopted-from` of a windlass object, when it has one.
pub(crate) fn adopted_from(meta: &kube::api::ObjectMeta) -> Option<&str> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(annotations::ADOPTED_FROM))
        .map(String::as_str)
}
