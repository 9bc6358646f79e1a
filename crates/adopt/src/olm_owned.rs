//! What an OLM CSV owns, and how each of it changes hands: the Deployments (compared with what
//! the CSV says), the CRDs, ServiceAccounts and bundle objects taken over, what OLM generated
//! and windlass replaces, and the order in which OLM's own objects can go.

use std::collections::BTreeSet;

use serde_json::Value;
use windlass_api::names::{annotations, olm_v0};

use crate::olm::{Adoption, OlmInstall, Replaced, TakeOver};
use crate::olm_objects::{ObjectKey, adopted_from_olm, other_managers, owned_by, text};

pub(crate) fn deployments(install: &OlmInstall, csv: &Value, adoption: &mut Adoption) {
    let specs: Vec<&Value> = csv
        .pointer("/spec/install/spec/deployments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    for wanted in specs {
        let name = text(wanted, "/name");
        let live = install
            .deployments
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, live)| live.as_ref());
        let Some(live) = live else {
            adoption.blockers.push(format!(
                "Deployment {}/{name}, which {} installs, is not there: OLM's view and the \
                 cluster differ; let OLM put it back or uninstall",
                adoption.namespace, adoption.csv
            ));
            continue;
        };
        compare_deployment(wanted, live, adoption);
        let origin = adopted_from_olm(&adoption.namespace, &adoption.csv);
        adoption.take_over.push(TakeOver::new(
            live,
            &[origin],
            format!(
                "{}'s Deployment: windlass's ClusterServiceVersion applies the same spec over it",
                adoption.csv
            ),
        ));
    }
}

/// Differences between the Deployment the CSV describes and the one that runs.
fn compare_deployment(wanted: &Value, live: &Value, adoption: &mut Adoption) {
    let name = text(wanted, "/name");
    let ns = &adoption.namespace;
    let wanted_replicas = wanted
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let live_replicas = live
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    if wanted_replicas != live_replicas {
        adoption.differences.push(format!(
            "Deployment {ns}/{name} runs {live_replicas} replicas, the CSV says \
             {wanted_replicas}: windlass applies the CSV's number"
        ));
    }
    let containers = |object: &Value, pointer: &str| -> Vec<(String, String)> {
        object
            .pointer(pointer)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| (text(c, "/name").to_string(), text(c, "/image").to_string()))
            .collect()
    };
    let live_images = containers(live, "/spec/template/spec/containers");
    for (container, image) in containers(wanted, "/spec/template/spec/containers") {
        match live_images.iter().find(|(n, _)| *n == container) {
            Some((_, running)) if *running != image => adoption.differences.push(format!(
                "Deployment {ns}/{name} container {container} runs {running}, the CSV says \
                 {image}: the plan check below refuses an adoption that would change it"
            )),
            Some(_) => {}
            None => adoption.differences.push(format!(
                "Deployment {ns}/{name} has no container {container}, which the CSV has"
            )),
        }
    }
    let available = live
        .pointer("/status/availableReplicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if available < live_replicas {
        adoption.differences.push(format!(
            "Deployment {ns}/{name} has {available} of {live_replicas} replicas available"
        ));
    }
    let others = other_managers(live);
    if !others.is_empty() {
        adoption.differences.push(format!(
            "Deployment {ns}/{name} was edited since OLM applied it, by field manager {}: \
             windlass applies the CSV's fields over theirs",
            others.join(", ")
        ));
    }
}

pub(crate) fn crds(install: &OlmInstall, adoption: &mut Adoption) {
    for (name, live) in &install.crds {
        let Some(live) = live else {
            adoption.blockers.push(format!(
                "CustomResourceDefinition {name}, which {} owns, is not there",
                adoption.csv
            ));
            continue;
        };
        let origin = adopted_from_olm(&adoption.namespace, &adoption.csv);
        adoption.take_over.push(TakeOver::new(
            live,
            &[(annotations::CRD_ADOPT, adoption.package.clone()), origin],
            format!(
                "owned by {}: handed to package {} (windlass.dev/adopt), so its Blueprint \
                 applies the bundle's CRD over it",
                adoption.csv, adoption.package
            ),
        ));
    }
}

/// What the CSV owns besides its Deployments: ServiceAccounts and the bundle's own objects are
/// taken over; what OLM generated from the CSV (RBAC under OLM's names, webhook
/// configurations, their Services and certificates) windlass makes again under its names.
pub(crate) fn owned(install: &OlmInstall, csv: &Value, adoption: &mut Adoption) {
    let csv_name = text(csv, "/metadata/name").to_string();
    let deployments: BTreeSet<&str> = csv
        .pointer("/spec/install/spec/deployments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|d| text(d, "/name"))
        .collect();
    let blueprint = format!("{}/{}", adoption.namespace, adoption.name);
    for object in &install.owned {
        if !owned_by(object, csv) {
            continue;
        }
        let key = ObjectKey::of(object);
        let kind = key.kind.as_str();
        if kind == "Deployment" && deployments.contains(key.name.as_str()) {
            continue;
        }
        if kind == "ClusterServiceVersion" || kind == "OperatorCondition" {
            continue;
        }
        let origin = adopted_from_olm(&adoption.namespace, &adoption.csv);
        if kind == "ServiceAccount" {
            adoption.take_over.push(TakeOver::new(
                object,
                &[origin],
                "the operator's ServiceAccount: its pods keep running as it".into(),
            ));
            continue;
        }
        if let Some(why) = generated_by_olm(&key, &csv_name, &deployments) {
            adoption.replaced.push(Replaced { object: key, why });
            continue;
        }
        adoption.take_over.push(TakeOver::new(
            object,
            &[(annotations::ADOPT, blueprint.clone()), origin],
            format!("one of the bundle's objects: handed to Blueprint {blueprint}"),
        ));
    }
}

/// Why `key` is one OLM made from the CSV (not one the bundle ships), or `None`.
fn generated_by_olm(key: &ObjectKey, csv: &str, deployments: &BTreeSet<&str>) -> Option<String> {
    let rbac = matches!(
        key.kind.as_str(),
        "Role" | "RoleBinding" | "ClusterRole" | "ClusterRoleBinding"
    );
    if rbac && key.name.starts_with(csv) {
        return Some(format!(
            "RBAC OLM generated from {csv}'s permissions; windlass grants the same under its \
             own names"
        ));
    }
    if matches!(
        key.kind.as_str(),
        "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration"
    ) {
        return Some(format!(
            "a webhook configuration OLM generated from {csv}; windlass writes its own"
        ));
    }
    let service_of_deployment = deployments
        .iter()
        .any(|d| key.name == format!("{d}-service") || key.name == format!("{d}-service-cert"));
    if matches!(key.kind.as_str(), "Service" | "Secret") && service_of_deployment {
        return Some(format!(
            "the webhook {} OLM generated for {csv}; windlass serves its webhooks with its own",
            key.kind
        ));
    }
    None
}

pub(crate) fn let_go(install: &OlmInstall, csv: &Value, adoption: &mut Adoption) {
    let ns = adoption.namespace.clone();
    let csv_name = adoption.csv.clone();
    let plans: Vec<&str> = install
        .install_plans
        .iter()
        .filter(|p| {
            p.pointer("/spec/clusterServiceVersionNames")
                .and_then(Value::as_array)
                .is_some_and(|names| {
                    names.iter().any(|n| {
                        n.as_str() == Some(csv_name.as_str())
                            || n.as_str() == Some(text(&install.subscription, "/status/currentCSV"))
                    })
                })
        })
        .map(|p| text(p, "/metadata/name"))
        .collect();
    let steps = &mut adoption.let_go;
    if !plans.is_empty() {
        steps.push(format!(
            "kubectl delete installplans.{} -n {ns} {}",
            olm_v0::GROUP,
            plans.join(" ")
        ));
    }
    steps.push(format!(
        "kubectl delete subscriptions.{} -n {ns} {}",
        olm_v0::GROUP,
        adoption.name
    ));
    let namespaced_replaced = adoption
        .replaced
        .iter()
        .filter(|r| r.object.namespace.is_some())
        .count();
    steps.push(format!(
        "kubectl delete clusterserviceversions.{} -n {ns} {csv_name}   # takes the {namespaced_replaced} \
         replaced object(s) it still owns with it; the adopted ones no longer name it",
        olm_v0::GROUP
    ));
    let all_namespaces = adoption
        .subscription
        .pointer("/spec/targetNamespaces")
        .is_none();
    if all_namespaces || text(csv, "/metadata/annotations/olm.targetNamespaces").contains(',') {
        steps.push(format!(
            "kubectl delete clusterserviceversions.{} -A -l {}={csv_name}   # OLM's copies in the \
             namespaces it watched",
            olm_v0::GROUP,
            olm_v0::COPIED_FROM
        ));
    }
    let cluster_kinds: BTreeSet<String> = adoption
        .replaced
        .iter()
        .filter(|r| r.object.namespace.is_none())
        .map(|r| r.object.kind.to_lowercase())
        .collect();
    if !cluster_kinds.is_empty() {
        steps.push(format!(
            "kubectl delete {} -l {}={csv_name},{}={ns}   # OLM's controller would remove these; \
             it is stopped",
            cluster_kinds.into_iter().collect::<Vec<_>>().join(","),
            olm_v0::OWNER,
            olm_v0::OWNER_NAMESPACE
        ));
    }
    if install.others_in_namespace == 0 {
        for group in &install.operator_groups {
            steps.push(format!(
                "kubectl delete operatorgroups.{} -n {ns} {}",
                olm_v0::GROUP,
                text(group, "/metadata/name")
            ));
        }
    }
    if install.others_on_catalog_source == 0
        && let Some(source) = &install.catalog_source
    {
        steps.push(format!(
            "kubectl delete catalogsources.{} -n {} {}",
            olm_v0::GROUP,
            text(source, "/metadata/namespace"),
            text(source, "/metadata/name")
        ));
    }
}
