//! Adopting an OLM v0 install: from OLM's objects as they stand, what windlass writes, takes
//! over and replaces, and what OLM must let go of. Pure: the CLI reads, this decides, the CLI
//! writes in the order [`Adoption`] gives.

use serde::Serialize;

use crate::olm_owned;
use serde_json::{Map, Value, json};
use windlass_api::names::annotations;

use crate::olm_objects::{
    ObjectKey, adopted_from_olm, go_duration_seconds, take_over_patch, text, undo_patch,
};

/// One OLM v0 Subscription and what it stands on, as read from the cluster.
#[derive(Clone, Debug, Default)]
pub struct OlmInstall {
    /// The `operators.coreos.com/v1alpha1` Subscription.
    pub subscription: Value,
    /// The CSV its `status.installedCSV` names, when it exists.
    pub csv: Option<Value>,
    /// Every OperatorGroup in the Subscription's namespace.
    pub operator_groups: Vec<Value>,
    /// The CatalogSource its `spec.source` names, when it exists.
    pub catalog_source: Option<Value>,
    /// The InstallPlans in the namespace.
    pub install_plans: Vec<Value>,
    /// Live objects the CSV owns (by ownerReference, or OLM's owner labels when
    /// cluster-scoped), besides the CRDs.
    pub owned: Vec<Value>,
    /// The live CRDs the CSV says it owns, by name (`None`: missing).
    pub crds: Vec<(String, Option<Value>)>,
    /// The live Deployments the CSV's install strategy names (`None`: missing).
    pub deployments: Vec<(String, Option<Value>)>,
    /// OLM's own controllers found running: `namespace/name` and ready replicas.
    pub olm_controllers: Vec<(String, i64)>,
    /// Other OLM Subscriptions (any namespace) that use the same CatalogSource.
    pub others_on_catalog_source: usize,
    /// Other OLM Subscriptions in this namespace (they keep the OperatorGroup).
    pub others_in_namespace: usize,
    /// windlass Catalogs already there: name and image.
    pub catalogs: Vec<(String, String)>,
    /// Talk plain HTTP to the catalog image's registry.
    pub plain_http: bool,
}

/// What adopting one OLM Subscription does.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Adoption {
    /// What was adopted (`olm:NAMESPACE/CSV`, `helm:NAMESPACE/RELEASE`), written as
    /// `windlass.dev/adopted-from` on what windlass creates and takes, so a second run knows
    /// its own.
    pub origin: String,
    pub namespace: String,
    /// The OLM Subscription's name, which the windlass Subscription and Blueprint take.
    pub name: String,
    pub package: String,
    /// The CSV that runs now, which the windlass Subscription starts at.
    pub csv: String,
    /// The approval the windlass Subscription gets once it runs what OLM ran (it is created
    /// Manual, so the adopting revision waits for its plan to be checked).
    pub approval: String,
    pub catalog: CatalogPlan,
    /// The windlass Subscription to create.
    pub subscription: Value,
    /// Objects windlass takes over, each with the metadata patch that does it.
    pub take_over: Vec<TakeOver>,
    /// OLM's objects windlass makes its own copy of (under its own names); they go with OLM.
    pub replaced: Vec<Replaced>,
    /// Where OLM's view and the cluster differ, and what adoption makes of it.
    pub differences: Vec<String>,
    /// Why it cannot be adopted as it stands; adoption writes nothing while any is left.
    pub blockers: Vec<String>,
    /// What must stop before anything is adopted.
    pub stop_first: Vec<String>,
    /// What to delete, in order, once windlass runs the operator.
    pub let_go: Vec<String>,
}

/// The windlass Catalog the Subscription installs from.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogPlan {
    pub name: String,
    /// The Catalog to create; `None` when one serving the same image is there already.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create: Option<Value>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TakeOver {
    pub object: ObjectKey,
    /// A JSON merge patch of its metadata only.
    pub patch: Value,
    /// The merge patch that puts back what `patch` changed, for an adoption that stops
    /// before it is done.
    pub undo: Value,
    pub why: String,
}

impl TakeOver {
    pub(crate) fn new(live: &Value, extra: &[(&str, String)], why: String) -> TakeOver {
        TakeOver {
            object: ObjectKey::of(live),
            patch: take_over_patch(live, extra),
            undo: undo_patch(live, extra),
            why,
        }
    }

    /// Whether it hands the object to a windlass package or Blueprint (`windlass.dev/adopt`),
    /// which the Blueprint checks before it plans.
    pub fn hands_over(&self) -> bool {
        self.patch["metadata"]["annotations"][annotations::ADOPT].is_string()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Replaced {
    pub object: ObjectKey,
    pub why: String,
}

/// Plans the adoption of `install`.
pub fn plan(install: &OlmInstall) -> Adoption {
    let sub = &install.subscription;
    let namespace = text(sub, "/metadata/namespace").to_string();
    let name = text(sub, "/metadata/name").to_string();
    let package = text(sub, "/spec/name").to_string();
    let mut adoption = Adoption {
        origin: format!("olm:{namespace}/{}", text(sub, "/status/installedCSV")),
        namespace: namespace.clone(),
        name: name.clone(),
        package: package.clone(),
        csv: text(sub, "/status/installedCSV").to_string(),
        approval: match text(sub, "/spec/installPlanApproval") {
            "Manual" => "Manual".into(),
            _ => "Automatic".into(),
        },
        ..Adoption::default()
    };
    stop_olm(install, &mut adoption);
    if package.is_empty() {
        adoption.blockers.push(format!(
            "Subscription {namespace}/{name}: spec.name (the package) is empty"
        ));
    }
    if adoption.csv.is_empty() {
        adoption.blockers.push(format!(
            "Subscription {namespace}/{name}: status.installedCSV is empty, so OLM runs nothing \
             for it; subscribe with windlass instead"
        ));
        return adoption;
    }
    let Some(csv) = &install.csv else {
        adoption.blockers.push(format!(
            "ClusterServiceVersion {namespace}/{}, which status.installedCSV names, is not there",
            adoption.csv
        ));
        return adoption;
    };
    let phase = text(csv, "/status/phase");
    if phase != "Succeeded" {
        adoption.blockers.push(format!(
            "ClusterServiceVersion {namespace}/{} is {}, not Succeeded: windlass adopts an \
             operator that runs; let OLM finish or fix it first",
            adoption.csv,
            if phase.is_empty() {
                "without a phase"
            } else {
                phase
            }
        ));
    }
    pending_upgrade(install, &mut adoption);
    let targets = targets(install, csv, &mut adoption);
    adoption.catalog = catalog(install, &mut adoption);
    let config = config(sub, &mut adoption);
    adoption.subscription = subscription(&adoption, sub, targets.as_deref(), config);
    olm_owned::deployments(install, csv, &mut adoption);
    olm_owned::crds(install, &mut adoption);
    olm_owned::owned(install, csv, &mut adoption);
    olm_owned::let_go(install, csv, &mut adoption);
    adoption
}

fn stop_olm(install: &OlmInstall, adoption: &mut Adoption) {
    for (controller, replicas) in &install.olm_controllers {
        if *replicas > 0 {
            let (ns, name) = controller.split_once('/').unwrap_or(("", controller));
            adoption.blockers.push(format!(
                "OLM's {controller} runs ({replicas} replicas): it would take back what windlass \
                 adopts; stop it first: kubectl -n {ns} scale deployment {name} --replicas=0"
            ));
        }
    }
    adoption.stop_first.push(
        "OLM's controllers (olm-operator, catalog-operator) must not run: `kubectl -n <olm \
         namespace> scale deployment olm-operator catalog-operator --replicas=0`; windlass \
         checks and refuses while they do"
            .into(),
    );
}

fn pending_upgrade(install: &OlmInstall, adoption: &mut Adoption) {
    let sub = &install.subscription;
    let current = text(sub, "/status/currentCSV");
    if !current.is_empty() && current != adoption.csv {
        let plan = text(sub, "/status/installPlanRef/name");
        adoption.differences.push(format!(
            "OLM resolved {current} but runs {}{}: windlass starts at {} and offers the \
             upgrade under its own approval",
            adoption.csv,
            if plan.is_empty() {
                String::new()
            } else {
                format!(" (InstallPlan {plan} not completed)")
            },
            adoption.csv
        ));
    }
}

/// The windlass Subscription's targetNamespaces (`None`: all namespaces), from the one
/// OperatorGroup OLM installed for.
fn targets(install: &OlmInstall, csv: &Value, adoption: &mut Adoption) -> Option<Vec<String>> {
    let namespace = adoption.namespace.clone();
    let group = match install.operator_groups.as_slice() {
        [group] => group,
        [] => {
            adoption.blockers.push(format!(
                "namespace {namespace} has no OperatorGroup: OLM could not have installed {} \
                 as it stands",
                adoption.csv
            ));
            return None;
        }
        groups => {
            let names: Vec<&str> = groups.iter().map(|g| text(g, "/metadata/name")).collect();
            adoption.blockers.push(format!(
                "namespace {namespace} has {} OperatorGroups ({}); OLM installs nothing there \
                 until only one is left",
                groups.len(),
                names.join(", ")
            ));
            return None;
        }
    };
    let group_name = text(group, "/metadata/name");
    if !text(group, "/spec/serviceAccountName").is_empty() {
        adoption.differences.push(format!(
            "OperatorGroup {namespace}/{group_name} installs as ServiceAccount {}; windlass's \
             install identity comes from the namespace's InstallPolicies instead",
            text(group, "/spec/serviceAccountName")
        ));
    }
    let listed = |pointer: &str| -> Vec<String> {
        group
            .pointer(pointer)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    let mut namespaces = listed("/status/namespaces");
    if namespaces.is_empty() {
        namespaces = listed("/spec/targetNamespaces");
    }
    if group
        .pointer("/spec/selector")
        .is_some_and(|s| !s.is_null())
    {
        adoption.differences.push(format!(
            "OperatorGroup {namespace}/{group_name} selects namespaces by label; the windlass \
             Subscription lists the ones it selects now ({})",
            namespaces.join(", ")
        ));
    }
    let all = namespaces.is_empty() || namespaces.iter().all(String::is_empty);
    let mode = match namespaces.as_slice() {
        _ if all => "AllNamespaces",
        [only] if *only == namespace => "OwnNamespace",
        [_] => "SingleNamespace",
        _ => "MultiNamespace",
    };
    let supported = csv
        .pointer("/spec/installModes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|m| text(m, "/type") == mode && m["supported"] == json!(true));
    if !supported {
        adoption.blockers.push(format!(
            "OperatorGroup {namespace}/{group_name} targets {} ({mode}), which {} does not \
             support (spec.installModes)",
            if all {
                "all namespaces".into()
            } else {
                namespaces.join(", ")
            },
            adoption.csv
        ));
    }
    (!all).then_some(namespaces)
}

fn catalog(install: &OlmInstall, adoption: &mut Adoption) -> CatalogPlan {
    let sub = &install.subscription;
    let source = text(sub, "/spec/source");
    let source_ns = match text(sub, "/spec/sourceNamespace") {
        "" => adoption.namespace.as_str(),
        ns => ns,
    };
    let Some(catalog_source) = &install.catalog_source else {
        adoption.blockers.push(format!(
            "CatalogSource {source_ns}/{source}, which spec.source names, is not there: windlass \
             needs the catalog to know the channel and later versions"
        ));
        return CatalogPlan::default();
    };
    let image = text(catalog_source, "/spec/image");
    let source_type = text(catalog_source, "/spec/sourceType");
    if image.is_empty() || !matches!(source_type, "grpc" | "") {
        adoption.blockers.push(format!(
            "CatalogSource {source_ns}/{source} serves {}: windlass reads catalogs from \
             file-based-catalog images only; make a Catalog of the same content and adopt \
             again",
            if !text(catalog_source, "/spec/address").is_empty() {
                format!("from address {}", text(catalog_source, "/spec/address"))
            } else if !text(catalog_source, "/spec/configMap").is_empty() {
                format!("from ConfigMap {}", text(catalog_source, "/spec/configMap"))
            } else {
                format!("as sourceType {source_type:?} without spec.image")
            }
        ));
        return CatalogPlan::default();
    }
    if let Some((existing, _)) = install.catalogs.iter().find(|(_, i)| i == image) {
        return CatalogPlan {
            name: existing.clone(),
            create: None,
        };
    }
    let secrets: Vec<&str> = catalog_source
        .pointer("/spec/secrets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if !secrets.is_empty() {
        adoption.differences.push(format!(
            "CatalogSource {source_ns}/{source} pulls with Secrets {}; a windlass Catalog reads \
             one pull Secret from the manager's namespace: copy it there and set \
             spec.source.pullSecret",
            secrets.join(", ")
        ));
    }
    let name = catalog_name(source_ns, source);
    let mut spec = json!({
        "source": {"type": "Image", "image": image},
        "priority": catalog_source.pointer("/spec/priority").and_then(Value::as_i64).unwrap_or(0),
    });
    if install.plain_http {
        spec["source"]["plainHTTP"] = json!(true);
    }
    let interval = text(catalog_source, "/spec/updateStrategy/registryPoll/interval");
    if let Some(seconds) = go_duration_seconds(interval) {
        spec["pollIntervalSeconds"] = json!(seconds.max(1));
    } else if !interval.is_empty() {
        adoption.differences.push(format!(
            "CatalogSource {source_ns}/{source}: spec.updateStrategy.registryPoll.interval \
             {interval:?} does not read as a duration; the Catalog polls at its default"
        ));
    }
    if !text(catalog_source, "/spec/displayName").is_empty() {
        spec["displayName"] = json!(text(catalog_source, "/spec/displayName"));
    }
    if !text(catalog_source, "/spec/publisher").is_empty() {
        spec["publisher"] = json!(text(catalog_source, "/spec/publisher"));
    }
    let create = json!({
        "apiVersion": "windlass.dev/v1alpha1",
        "kind": "Catalog",
        "metadata": {
            "name": name,
            "annotations": {annotations::ADOPTED_FROM: format!("olm:{source_ns}/{source}")},
        },
        "spec": spec,
    });
    CatalogPlan {
        name,
        create: Some(create),
    }
}

/// `olm-<namespace>-<name>`, within an object name's 253 characters.
fn catalog_name(namespace: &str, name: &str) -> String {
    let mut full = format!("olm-{namespace}-{name}");
    full.truncate(253);
    full.trim_end_matches(['-', '.']).to_string()
}

/// What the windlass Subscription's `spec.config` takes of OLM's `spec.config`; fields
/// windlass has no place for block the adoption (dropping them would change the pods).
fn config(sub: &Value, adoption: &mut Adoption) -> Option<Value> {
    let config = sub.pointer("/spec/config")?.as_object()?;
    const KEPT: &[&str] = &[
        "env",
        "resources",
        "nodeSelector",
        "tolerations",
        "affinity",
        "volumes",
        "volumeMounts",
        "annotations",
    ];
    let mut kept = Map::new();
    for (key, value) in config {
        if value.is_null() {
            continue;
        }
        if KEPT.contains(&key.as_str()) {
            kept.insert(key.clone(), value.clone());
        } else {
            adoption.blockers.push(format!(
                "Subscription {}/{}: spec.config.{key} has no windlass equivalent, and leaving \
                 it out would change the operator's pods",
                adoption.namespace, adoption.name
            ));
        }
    }
    (!kept.is_empty()).then_some(Value::Object(kept))
}

fn subscription(
    adoption: &Adoption,
    sub: &Value,
    targets: Option<&[String]>,
    config: Option<Value>,
) -> Value {
    let mut spec = json!({
        "package": adoption.package,
        "startingCSV": adoption.csv,
        // The adopting revision waits for its plan to be checked; the approval OLM had comes
        // back once windlass runs what OLM ran.
        "approval": "Manual",
    });
    if !adoption.catalog.name.is_empty() {
        spec["catalog"] = json!(adoption.catalog.name);
    }
    if !text(sub, "/spec/channel").is_empty() {
        spec["channel"] = json!(text(sub, "/spec/channel"));
    }
    if let Some(targets) = targets {
        spec["targetNamespaces"] = json!(targets);
    }
    if let Some(config) = config {
        spec["config"] = config;
    }
    let (key, value) = adopted_from_olm(&adoption.namespace, &adoption.csv);
    json!({
        "apiVersion": "windlass.dev/v1alpha1",
        "kind": "Subscription",
        "metadata": {
            "name": adoption.name,
            "namespace": adoption.namespace,
            "annotations": {key: value},
        },
        "spec": spec,
    })
}

#[cfg(test)]
#[path = "olm_tests.rs"]
mod tests;
