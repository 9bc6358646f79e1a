//! `webhookdefinitions`: a Service in front of the operator's Deployment, a serving
//! certificate, the admission webhook configurations, and conversion webhooks patched into
//! their CRDs. Pure: the certificate is passed in.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use windlass_revisions::SealKey;

use crate::{
    certs::{ServingCert, WebhookCa},
    desired::{DesiredObject, InstallContext},
    names,
};

/// The certificates webhooks are built with: the manager's CA (what clients trust), the key
/// leaf Secrets are sealed with, and each webhook deployment's leaf.
#[derive(Clone, Copy)]
pub struct Certificates<'a> {
    pub ca: &'a WebhookCa,
    pub seal_key: &'a SealKey,
    pub leaves: &'a BTreeMap<String, ServingCert>,
}

/// Where OLM mounts webhook certificates; operator-sdk and kubebuilder operators read them here.
pub const APISERVICE_CERT_DIR: &str = "/apiserver.local.config/certificates";
pub const WEBHOOK_CERT_DIR: &str = "/tmp/k8s-webhook-server/serving-certs";

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookDefinition {
    #[serde(rename = "type")]
    pub type_: String,
    pub generate_name: String,
    pub deployment_name: String,
    #[serde(default = "default_port")]
    pub container_port: i32,
    #[serde(default)]
    pub target_port: Option<Value>,
    #[serde(default)]
    pub admission_review_versions: Vec<String>,
    #[serde(default)]
    pub side_effects: Option<String>,
    #[serde(default)]
    pub failure_policy: Option<String>,
    #[serde(default)]
    pub match_policy: Option<String>,
    #[serde(default)]
    pub object_selector: Option<Value>,
    #[serde(default)]
    pub reinvocation_policy: Option<String>,
    #[serde(default)]
    pub rules: Vec<Value>,
    #[serde(default)]
    pub timeout_seconds: Option<i32>,
    #[serde(default)]
    pub webhook_path: Option<String>,
    #[serde(default, rename = "conversionCRDs")]
    pub conversion_crds: Vec<String>,
}

fn default_port() -> i32 {
    443
}

pub const VALIDATING: &str = "ValidatingAdmissionWebhook";
pub const MUTATING: &str = "MutatingAdmissionWebhook";
pub const CONVERSION: &str = "ConversionWebhook";

#[derive(Debug, thiserror::Error)]
#[error("spec.webhookdefinitions[{index}]: {message}")]
pub struct WebhookError {
    pub index: usize,
    pub message: String,
}

/// Parses and checks the CSV's webhook definitions against its deployments.
pub fn definitions(ctx: &InstallContext<'_>) -> Result<Vec<WebhookDefinition>, WebhookError> {
    let deployments: Vec<&str> = ctx
        .definition
        .deployments()
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    ctx.definition
        .spec
        .webhookdefinitions
        .iter()
        .enumerate()
        .map(|(index, raw)| {
            let def: WebhookDefinition =
                serde_json::from_value(raw.clone()).map_err(|e| WebhookError {
                    index,
                    message: e.to_string(),
                })?;
            if ![VALIDATING, MUTATING, CONVERSION].contains(&def.type_.as_str()) {
                return Err(WebhookError {
                    index,
                    message: format!("unknown type {:?}", def.type_),
                });
            }
            if !deployments.contains(&def.deployment_name.as_str()) {
                return Err(WebhookError {
                    index,
                    message: format!(
                        "deploymentName {:?} is not a deployment of the install strategy",
                        def.deployment_name
                    ),
                });
            }
            Ok(def)
        })
        .collect()
}

/// The Service and its certificate Secret name for one webhook deployment.
pub fn service_name(deployment: &str) -> String {
    names::bounded(&[deployment, "service"], 63)
}
pub fn cert_secret_name(deployment: &str) -> String {
    names::object_name(&[deployment, "service-cert"])
}

/// Objects for every webhook: per deployment a Service and a certificate Secret, then the
/// admission webhook configurations (only with `admission`: the install's grant of
/// Webhooks).
pub fn build(
    ctx: &InstallContext<'_>,
    definitions: &[WebhookDefinition],
    certs: Certificates<'_>,
    selectors: &BTreeMap<String, Value>,
    admission: bool,
) -> Vec<DesiredObject> {
    let mut objects = Vec::new();
    let mut by_deployment: BTreeMap<&str, Vec<&WebhookDefinition>> = BTreeMap::new();
    for def in definitions {
        by_deployment
            .entry(&def.deployment_name)
            .or_default()
            .push(def);
    }
    for (deployment, defs) in &by_deployment {
        let mut ports: BTreeMap<i32, Value> = BTreeMap::new();
        for def in defs {
            let target = def.target_port.clone().unwrap_or(json!(def.container_port));
            ports.entry(def.container_port).or_insert(json!({
                "name": format!("port-{}", def.container_port),
                "port": def.container_port,
                "targetPort": target,
                "protocol": "TCP",
            }));
        }
        let selector = selectors.get(*deployment).cloned().unwrap_or(json!({}));
        let mut service = DesiredObject {
            owned: true,
            object: json!({
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": service_name(deployment), "namespace": ctx.namespace},
                "spec": {"selector": selector, "ports": ports.into_values().collect::<Vec<_>>()},
            }),
        };
        decorate(ctx, &mut service);
        objects.push(service);
        if let Some(cert) = certs.leaves.get(*deployment) {
            let secret_name = cert_secret_name(deployment);
            let annotations = cert.secret_annotations(certs.seal_key, ctx.namespace, &secret_name);
            let mut secret = DesiredObject {
                owned: true,
                object: json!({
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "type": "kubernetes.io/tls",
                    "metadata": {
                        "name": secret_name,
                        "namespace": ctx.namespace,
                        "annotations": annotations,
                    },
                    "data": cert.secret_data(certs.ca).iter().map(|(k, v)| (k.clone(), base64(v.as_bytes()))).collect::<serde_json::Map<_, _>>(),
                }),
            };
            decorate(ctx, &mut secret);
            objects.push(secret);
        }
    }
    for def in definitions
        .iter()
        .filter(|d| admission && d.type_ != CONVERSION)
    {
        if certs.leaves.contains_key(&def.deployment_name) {
            objects.push(admission_configuration(ctx, def, certs.ca));
        }
    }
    objects
}

fn decorate(ctx: &InstallContext<'_>, object: &mut DesiredObject) {
    object.object["metadata"]["labels"] = ctx.labels();
    object.object["metadata"]["ownerReferences"] = json!([ctx.owner.clone()]);
}

/// Where the API server calls a webhook, trusting the manager's CA only.
fn client_config(
    ctx: &InstallContext<'_>,
    def: &WebhookDefinition,
    ca: &WebhookCa,
    default_path: Option<&str>,
) -> Value {
    let mut service = json!({
        "namespace": ctx.namespace,
        "name": service_name(&def.deployment_name),
        "port": def.container_port,
    });
    if let Some(path) = def.webhook_path.as_deref().or(default_path) {
        service["path"] = json!(path);
    }
    json!({"service": service, "caBundle": base64(ca.bundle().as_bytes())})
}

fn admission_configuration(
    ctx: &InstallContext<'_>,
    def: &WebhookDefinition,
    ca: &WebhookCa,
) -> DesiredObject {
    let kind = if def.type_ == MUTATING {
        "MutatingWebhookConfiguration"
    } else {
        "ValidatingWebhookConfiguration"
    };
    let versions = if def.admission_review_versions.is_empty() {
        vec!["v1".to_string()]
    } else {
        def.admission_review_versions.clone()
    };
    let mut webhook = json!({
        "name": def.generate_name,
        "admissionReviewVersions": versions,
        "clientConfig": client_config(ctx, def, ca, None),
        "sideEffects": def.side_effects.clone().unwrap_or_else(|| "None".into()),
        "failurePolicy": def.failure_policy.clone().unwrap_or_else(|| "Fail".into()),
        "rules": def.rules,
    });
    for (key, value) in [
        ("matchPolicy", def.match_policy.clone().map(Value::from)),
        ("objectSelector", def.object_selector.clone()),
        ("timeoutSeconds", def.timeout_seconds.map(Value::from)),
    ] {
        if let Some(value) = value {
            webhook[key] = value;
        }
    }
    if def.type_ == MUTATING
        && let Some(policy) = &def.reinvocation_policy
    {
        webhook["reinvocationPolicy"] = json!(policy);
    }
    if !ctx.all_namespaces() {
        // A namespaced install must only intercept the namespaces it serves.
        webhook["namespaceSelector"] = json!({"matchExpressions": [{
            "key": "kubernetes.io/metadata.name", "operator": "In", "values": ctx.target_namespaces,
        }]});
    }
    let name = names::object_name(&[ctx.namespace, ctx.csv_name, &def.generate_name]);
    let mut object = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name, "labels": ctx.labels()},
        "webhooks": [webhook],
    });
    object["metadata"]["labels"] = ctx.labels();
    DesiredObject {
        object,
        owned: false,
    }
}

/// The merge patch that points a CRD's conversion at the operator's webhook.
pub fn conversion_patch(
    ctx: &InstallContext<'_>,
    def: &WebhookDefinition,
    ca: &WebhookCa,
) -> Value {
    let versions = if def.admission_review_versions.is_empty() {
        vec!["v1".to_string()]
    } else {
        def.admission_review_versions.clone()
    };
    json!({"spec": {"conversion": {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": client_config(ctx, def, ca, Some("/convert")),
            "conversionReviewVersions": versions,
        }
    }}})
}

/// Mounts the certificate Secret into every container of a webhook deployment, at the paths
/// OLM uses, so operators built for OLM find their certificates unchanged.
pub fn mount_certificates(deployment: &mut Value, deployment_name: &str) {
    let secret = cert_secret_name(deployment_name);
    let pod = &mut deployment["spec"]["template"]["spec"];
    let volumes = [
        json!({"name": "apiservice-cert", "secret": {"secretName": secret, "items": [
            {"key": "tls.crt", "path": "apiserver.crt"}, {"key": "tls.key", "path": "apiserver.key"}]}}),
        json!({"name": "webhook-cert", "secret": {"secretName": secret, "items": [
            {"key": "tls.crt", "path": "tls.crt"}, {"key": "tls.key", "path": "tls.key"}]}}),
    ];
    let mounts = [
        json!({"name": "apiservice-cert", "mountPath": APISERVICE_CERT_DIR}),
        json!({"name": "webhook-cert", "mountPath": WEBHOOK_CERT_DIR}),
    ];
    upsert_named(&mut pod["volumes"], &volumes);
    if let Some(containers) = pod["containers"].as_array_mut() {
        for container in containers {
            upsert_named(&mut container["volumeMounts"], &mounts);
        }
    }
}

fn upsert_named(list: &mut Value, items: &[Value]) {
    if !list.is_array() {
        *list = json!([]);
    }
    let list = list.as_array_mut().expect("made an array above");
    for item in items {
        match list.iter_mut().find(|e| e["name"] == item["name"]) {
            Some(existing) => *existing = item.clone(),
            None => list.push(item.clone()),
        }
    }
}

/// Base64 as the API expects for `caBundle`, through k8s-openapi's own byte-string encoding.
fn base64(bytes: &[u8]) -> Value {
    serde_json::to_value(k8s_openapi::ByteString(bytes.to_vec())).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::base64;

    #[test]
    fn ca_bundles_are_standard_base64_with_padding() {
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }
}
