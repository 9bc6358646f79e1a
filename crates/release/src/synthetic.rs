//! Payloads made to measure, for benchmarks and tests: `levels` run levels of platform-shaped
//! components (namespace, RBAC, configuration, a Deployment and its Service, a StatefulSet in
//! every second component; CRDs in the first level), about `manifests` files in all, every image
//! pinned by digest and listed. Every workload's pod template names the release version, so
//! moving between two versions rolls every Deployment and StatefulSet out again; `broken_level`
//! makes one level's Deployment crash-loop (the simulation marker of the local control plane,
//! and a command that does not exist on a real kubelet).

use semver::Version;
use windlass_bundle::files::FileTree;

use crate::annotations::{CHANNELS_METADATA, DEFAULT_PROFILE, PROFILE_PREFIX};
use crate::metadata::{
    IMAGE_REFERENCES_FILE, ImageReference, ImageReferences, METADATA_FILE, ReleaseMetadata,
};

/// `registry.k8s.io/pause:3.10` by digest: a real image kwok never pulls and a kubelet runs.
pub const PAUSE_IMAGE: &str =
    "registry.k8s.io/pause@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a";

#[derive(Clone, Debug)]
pub struct SyntheticPayload {
    pub version: Version,
    pub previous: Vec<Version>,
    pub channels: Vec<String>,
    pub levels: usize,
    /// Total number of manifest files (each holds one object); at least 7 per level is useful.
    pub manifests: usize,
    pub components_per_level: usize,
    /// Namespaces and cluster-scoped names start with this, so two payloads can live side by side.
    pub prefix: String,
    pub image: String,
    /// The level (0-based) whose first component's Deployment never becomes available.
    pub broken_level: Option<usize>,
}

impl Default for SyntheticPayload {
    /// About 200 manifests in 10 levels, two components a level.
    fn default() -> Self {
        SyntheticPayload {
            version: Version::new(1, 0, 0),
            previous: Vec::new(),
            channels: vec!["stable".into()],
            levels: 10,
            manifests: 200,
            components_per_level: 2,
            prefix: "synthetic".into(),
            image: PAUSE_IMAGE.into(),
            broken_level: None,
        }
    }
}

fn annotations() -> serde_json::Value {
    serde_json::json!({ format!("{PROFILE_PREFIX}{DEFAULT_PROFILE}"): "true" })
}

/// The object for slot `slot` of component `index` of a level (0 namespace, 1 service account,
/// 2 cluster role, 3 binding, 4 deployment, 5 service, 6 a StatefulSet in odd components, later
/// slots configuration or CRDs).
fn object(
    spec: &SyntheticPayload,
    level: usize,
    (component, index): (&str, usize),
    slot: usize,
) -> (String, serde_json::Value) {
    let ns = format!("{}-{component}", spec.prefix);
    let meta = |name: &str, namespaced: bool| {
        let mut m = serde_json::json!({ "name": name, "annotations": annotations() });
        if namespaced {
            m["namespace"] = ns.clone().into();
        }
        m
    };
    let labels = serde_json::json!({ "app.kubernetes.io/name": component });
    match slot {
        0 => (
            "namespace".into(),
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": meta(&ns, false)}),
        ),
        1 => (
            "serviceaccount".into(),
            serde_json::json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(component, true)}),
        ),
        2 => (
            "clusterrole".into(),
            serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta(&ns, false),
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]}),
        ),
        3 => (
            "clusterrolebinding".into(),
            serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": meta(&ns, false),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ns},
            "subjects": [{"kind": "ServiceAccount", "name": component, "namespace": ns}]}),
        ),
        4 => {
            let broken = spec.broken_level == Some(level) && index == 0;
            let mut pod_labels = labels.clone();
            let mut container = serde_json::json!({"name": component, "image": spec.image,
                "env": [{"name": "RELEASE_VERSION", "value": spec.version.to_string()}]});
            if broken {
                pod_labels["windlass.dev/simulate"] = "crash-loop".into();
                container["command"] = serde_json::json!(["/windlass-broken"]);
            }
            (
                "deployment".into(),
                serde_json::json!({
                "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(component, true),
                "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                    "template": {"metadata": {"labels": pod_labels}, "spec": {
                        "serviceAccountName": component, "containers": [container]}}}}),
            )
        }
        5 => (
            "service".into(),
            serde_json::json!({
            "apiVersion": "v1", "kind": "Service", "metadata": meta(component, true),
            "spec": {"selector": labels, "ports": [{"port": 8080, "targetPort": 8080}]}}),
        ),
        6 if index % 2 == 1 => {
            let labels =
                serde_json::json!({ "app.kubernetes.io/name": format!("{component}-store") });
            (
                "statefulset".into(),
                serde_json::json!({
                "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta(&format!("{component}-store"), true),
                "spec": {"replicas": 1, "serviceName": component, "selector": {"matchLabels": labels},
                    "template": {"metadata": {"labels": labels}, "spec": {
                        "serviceAccountName": component,
                        "containers": [{"name": "store", "image": spec.image,
                            "env": [{"name": "RELEASE_VERSION", "value": spec.version.to_string()}]}]}}}}),
            )
        }
        n if level == 0 => {
            let plural = format!("{component}{n}s");
            let group = format!("{}.windlass.dev", spec.prefix);
            (
                format!("crd-{n}"),
                serde_json::json!({
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": meta(&format!("{plural}.{group}"), false),
                "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": plural, "singular": format!("{component}{n}"), "kind": format!("Synthetic{}{n}", component.replace('-', "")) },
                    "versions": [{"name": "v1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}),
            )
        }
        n => (
            format!("config-{n}"),
            serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(&format!("{component}-config-{n}"), true),
            "data": {"release": spec.version.to_string(), "slot": n.to_string()}}),
        ),
    }
}

/// The payload as files, ready for [`crate::Payload::from_tree`] or an image push.
pub fn synthetic_payload(spec: &SyntheticPayload) -> FileTree {
    let mut tree = FileTree::default();
    let components = spec.levels.max(1) * spec.components_per_level.max(1);
    let mut written = 0;
    for c in 0..components {
        let level = c / spec.components_per_level.max(1);
        let component = format!("comp{level:02}-{}", c % spec.components_per_level.max(1));
        // Spread the files evenly; every component gets at least a namespace and a Deployment.
        let share =
            (spec.manifests * (c + 1) / components - spec.manifests * c / components).max(6);
        for slot in 0..share {
            let index = c % spec.components_per_level.max(1);
            let (what, body) = object(spec, level, (&component, index), slot);
            let file = format!(
                "release-manifests/0000_{:02}_{component}_{slot:02}_{what}.yaml",
                (level + 1) * 5
            );
            tree.files.insert(
                file,
                serde_json::to_vec_pretty(&body).expect("JSON serialises"),
            );
            written += 1;
        }
    }
    debug_assert!(written >= spec.manifests);
    let mut metadata = ReleaseMetadata::new(spec.version.clone());
    metadata.previous = spec.previous.clone();
    metadata
        .metadata
        .insert(CHANNELS_METADATA.into(), spec.channels.join(","));
    tree.files.insert(METADATA_FILE.into(), metadata.to_json());
    let refs = ImageReferences {
        version: spec.version.to_string(),
        images: vec![ImageReference {
            name: "pause".into(),
            image: spec.image.clone(),
        }],
    };
    tree.files.insert(
        IMAGE_REFERENCES_FILE.into(),
        refs.to_file_text().into_bytes(),
    );
    tree
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{InclusionOptions, LoadOptions, Payload};

    #[test]
    fn the_default_is_about_200_valid_manifests_in_10_levels() {
        let tree = synthetic_payload(&SyntheticPayload::default());
        let payload = Payload::from_tree(&tree, "synthetic", &LoadOptions::default()).unwrap();
        assert!(payload.warnings.is_empty(), "{:?}", payload.warnings);
        let plan = payload.plan(&InclusionOptions::default());
        assert_eq!(plan.levels.len(), 10);
        assert_eq!(plan.manifest_count(), 200);
        assert!(plan.excluded.is_empty());
        assert!(plan.levels.iter().all(|l| l.steps[0].components.len() == 2));
        assert!(
            plan.levels[0]
                .manifests()
                .any(|m| m.object.kind == "CustomResourceDefinition")
        );
        let kinds = |kind: &str| {
            plan.levels
                .iter()
                .flat_map(|l| l.manifests())
                .filter(|m| m.object.kind == kind)
                .count()
        };
        assert_eq!((kinds("Deployment"), kinds("StatefulSet")), (20, 10));
    }

    #[test]
    fn a_broken_level_crash_loops_one_deployment_and_nothing_else() {
        let spec = SyntheticPayload {
            broken_level: Some(4),
            ..SyntheticPayload::default()
        };
        let tree = synthetic_payload(&spec);
        let payload = Payload::from_tree(&tree, "synthetic", &LoadOptions::default()).unwrap();
        let plan = payload.plan(&InclusionOptions::default());
        let broken: Vec<(usize, String)> = plan
            .levels
            .iter()
            .enumerate()
            .flat_map(|(i, l)| l.manifests().map(move |m| (i, m)))
            .filter(|(_, m)| {
                m.body["spec"]["template"]["metadata"]["labels"]["windlass.dev/simulate"]
                    == "crash-loop"
            })
            .map(|(i, m)| (i, m.object.name.clone()))
            .collect();
        assert_eq!(broken, vec![(4, "comp04-0".to_string())]);
    }
}
