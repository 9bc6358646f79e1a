//! The windlass Helm chart (`config/helm/windlass`): it lints and renders clean, `helm install`
//! creates the manager's ServiceAccount, RBAC, Deployment and metrics Service as configured,
//! `helm uninstall` removes them (cluster-scoped RBAC included), and the plain RBAC in
//! `config/rbac` grants exactly what the chart grants.
//!
//! The pods are simulated by kwok, so these tests check the objects, not the manager process.

use std::{
    collections::BTreeMap,
    io::Write,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{Container, Service, ServiceAccount},
    rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding},
};
use kube::{Api, Client};
use serde_json::{Value, json};
use windlass_testkit::{TestNamespace, helm, kubectl, run_ok, unique_name, wait_for};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("e2e/ has a parent")
        .to_path_buf()
}

fn chart_dir() -> String {
    repo_root()
        .join("config/helm/windlass")
        .display()
        .to_string()
}

/// The chart's CRD files (`make crds` writes them); empty until it has run.
fn chart_crd_files() -> Vec<PathBuf> {
    let dir = repo_root().join("config/helm/windlass/crds");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// Runs a command with `input` on stdin; panics with its output when it fails.
fn run_with_stdin(command: &mut Command, input: &str) -> String {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("running {command:?}: {e}"));
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(input.as_bytes())
        .expect("writing stdin");
    let output = child.wait_with_output().expect("waiting for the command");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{command:?} failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Kubernetes YAML (one or many documents) as JSON objects keyed by `Kind/name`, read by
/// kubectl without sending anything to the apiserver.
fn objects_of(yaml: &str) -> BTreeMap<String, Value> {
    let json = run_with_stdin(
        kubectl().args(["create", "--dry-run=client", "-o", "json", "-f", "-"]),
        yaml,
    );
    // One JSON document per object, one after the other (a List only for list input).
    let mut items = Vec::new();
    for value in serde_json::Deserializer::from_str(&json).into_iter::<Value>() {
        let value = value.expect("kubectl prints JSON");
        match value["kind"].as_str() {
            Some("List") => items.extend(value["items"].as_array().cloned().unwrap_or_default()),
            _ => items.push(value),
        }
    }
    items
        .into_iter()
        .map(|item| {
            (
                format!(
                    "{}/{}",
                    item["kind"].as_str().unwrap_or(""),
                    item["metadata"]["name"].as_str().unwrap_or("")
                ),
                item,
            )
        })
        .collect()
}

fn container(deployment: &Deployment) -> Container {
    let containers = &deployment.spec.template.spec.as_ref().unwrap().containers;
    assert_eq!(
        containers.len(),
        1,
        "the manager Deployment runs one container"
    );
    containers[0].clone()
}

#[test]
fn chart_lints_clean_and_renders_the_manager_command_from_values() {
    let chart = chart_dir();
    run_ok(helm().args(["lint", "--strict", &chart]));

    let defaults = run_ok(helm().args([
        "template",
        "windlass",
        &chart,
        "--namespace",
        "windlass-system",
    ]));
    for arg in [
        "- manager",
        "- --log-level=info",
        "- --log-format=json",
        "- --leader-elect=true",
        "- --metrics-bind-address=0.0.0.0:8080",
        "- --health-probe-bind-address=0.0.0.0:8081",
        "- --namespace=windlass-system",
    ] {
        assert!(
            defaults.contains(arg),
            "default render lacks `{arg}`:\n{defaults}"
        );
    }
    assert!(
        !defaults.contains("--no-builtin-catalog"),
        "the built-in catalog is on by default"
    );
    assert!(
        defaults.contains("image: ghcr.io/windlass-dev/windlass:0.1.0"),
        "the tag defaults to appVersion"
    );

    let custom = run_ok(helm().args([
        "template",
        "windlass",
        &chart,
        "--namespace",
        "ops",
        "--set",
        "logLevel=windlass=debug\\,kube=info,logFormat=text,leaderElection=false,builtInCatalog.enabled=false,metrics.port=9090,health.port=9091,image.tag=dev",
    ]));
    for arg in [
        "- --log-level=windlass=debug,kube=info",
        "- --log-format=text",
        "- --leader-elect=false",
        "- --metrics-bind-address=0.0.0.0:9090",
        "- --health-probe-bind-address=0.0.0.0:9091",
        "- --namespace=ops",
        "- --no-builtin-catalog",
        "image: ghcr.io/windlass-dev/windlass:dev",
    ] {
        assert!(
            custom.contains(arg),
            "custom render lacks `{arg}`:\n{custom}"
        );
    }

    // values.schema.json refuses values the manager would reject at start.
    for bad in [
        "logFormat=xml",
        "metrics.port=70000",
        "image.pullPolicy=Sometimes",
        "unknownKey=1",
    ] {
        let output = helm()
            .args(["template", "windlass", &chart, "--set", bad])
            .output()
            .expect("running helm");
        assert!(!output.status.success(), "`--set {bad}` rendered");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("schema"),
            "`--set {bad}` failed for another reason: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    // Two active managers would fight over every object: the chart refuses that combination.
    let output = helm()
        .args([
            "template",
            "windlass",
            &chart,
            "--set",
            "replicas=2,leaderElection=false",
        ])
        .output()
        .expect("running helm");
    assert!(
        !output.status.success(),
        "replicas=2 without leader election rendered"
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("needs leaderElection"));
}

#[tokio::test]
async fn plain_rbac_in_config_rbac_grants_what_the_chart_grants() {
    // kubectl reads the YAML; it needs the apiserver only for discovery.
    let _ = windlass_testkit::client().await;
    let rendered = run_ok(helm().args([
        "template",
        "windlass",
        &chart_dir(),
        "--namespace",
        "windlass-system",
        "--show-only",
        "templates/serviceaccount.yaml",
        "--show-only",
        "templates/clusterrole.yaml",
        "--show-only",
        "templates/role.yaml",
    ]));
    let chart = objects_of(&rendered);
    let plain = objects_of(&run_ok(kubectl().args([
        "kustomize",
        &repo_root().join("config/rbac").display().to_string(),
    ])));

    let names: Vec<&String> = chart.keys().collect();
    assert_eq!(
        names,
        plain.keys().collect::<Vec<_>>(),
        "the chart and config/rbac define different objects"
    );
    assert_eq!(
        names,
        [
            "ClusterRole/windlass-manager",
            "ClusterRoleBinding/windlass-manager",
            "Role/windlass-leader-election",
            "RoleBinding/windlass-leader-election",
            "ServiceAccount/windlass",
        ]
    );
    for (key, object) in &chart {
        for field in ["rules", "roleRef", "subjects"] {
            assert_eq!(
                object[field], plain[key][field],
                "{key}: `{field}` differs between the chart and config/rbac"
            );
        }
        assert_eq!(
            plain[key]["metadata"]["namespace"], object["metadata"]["namespace"],
            "{key}: namespace differs"
        );
    }
    // The rule that makes installing arbitrary operators possible is there, and documented.
    let rules = chart["ClusterRole/windlass-manager"]["rules"]
        .as_array()
        .unwrap();
    assert!(rules.iter().any(|r| {
        r["resources"]
            .as_array()
            .unwrap()
            .contains(&"clusterroles".into())
            && r["verbs"].as_array().unwrap().contains(&"escalate".into())
            && r["verbs"].as_array().unwrap().contains(&"bind".into())
    }));
    assert!(rendered.contains("What this means for a cluster admin"));
}

/// What installing a sample bundle creates, shaped as the CSV controller shapes it (names
/// prefixed so they never meet a real install): ServiceAccounts, Roles and ClusterRoles with the
/// bundle's arbitrary rules and their bindings, Deployments, webhook Services, Secrets and
/// configurations. A `List` for `kubectl apply`.
fn install_objects(bundle: &windlass_bundle::Bundle, namespace: &str, prefix: &str) -> Value {
    let csv = &bundle.csv;
    let strategy = csv
        .spec
        .install
        .as_ref()
        .and_then(|i| i.spec.as_ref())
        .expect("a deployment install strategy");
    let rbac = "rbac.authorization.k8s.io/v1";
    let mut items = Vec::new();
    for (i, p) in strategy
        .permissions
        .iter()
        .chain(&strategy.cluster_permissions)
        .enumerate()
    {
        let cluster = i >= strategy.permissions.len();
        let (role, binding) = if cluster {
            ("ClusterRole", "ClusterRoleBinding")
        } else {
            ("Role", "RoleBinding")
        };
        let name = format!("{prefix}-{}-{i}", p.service_account_name);
        let meta = if cluster {
            json!({"name": name})
        } else {
            json!({"name": name, "namespace": namespace})
        };
        let subject = json!({"kind": "ServiceAccount", "name": format!("{prefix}-{}", p.service_account_name), "namespace": namespace});
        items.push(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": subject["name"], "namespace": namespace}}));
        items.push(json!({"apiVersion": rbac, "kind": role, "metadata": meta, "rules": p.rules}));
        items.push(json!({"apiVersion": rbac, "kind": binding, "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role, "name": name}, "subjects": [subject]}));
    }
    for d in &strategy.deployments {
        let name = format!("{prefix}-{}", d.name);
        items.push(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace}, "spec": d.spec}));
    }
    for (i, w) in csv.spec.webhookdefinitions.iter().enumerate() {
        let name = format!("{prefix}-webhook-{i}");
        items.push(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace},
            "spec": {"ports": [{"port": 443, "targetPort": w["containerPort"]}], "selector": {"app": name}}}));
        items.push(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace}, "data": {"ca.crt": ""}}));
        let kind = match w["type"].as_str() {
            Some("ValidatingAdmissionWebhook") => "ValidatingWebhookConfiguration",
            Some("MutatingAdmissionWebhook") => "MutatingWebhookConfiguration",
            _ => continue,
        };
        let hook = json!({"name": w["generateName"], "rules": w["rules"], "failurePolicy": w["failurePolicy"],
            "sideEffects": w["sideEffects"], "admissionReviewVersions": w["admissionReviewVersions"], "objectSelector": w["objectSelector"],
            "clientConfig": {"service": {"name": name, "namespace": namespace, "path": w["webhookPath"]}}});
        items.push(json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name}, "webhooks": [hook]}));
    }
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}

/// Uninstalls a release when dropped, so a failing test leaves no cluster-scoped RBAC behind
/// (its namespace goes with `TestNamespace`, its ClusterRole would not).
struct ReleaseGuard<'a> {
    release: &'a str,
    namespace: &'a str,
}

impl Drop for ReleaseGuard<'_> {
    fn drop(&mut self) {
        let _ = helm()
            .args([
                "uninstall",
                self.release,
                "--namespace",
                self.namespace,
                "--ignore-not-found",
            ])
            .output();
    }
}

/// Waits until `get` finds nothing (a deleted object is gone).
async fn wait_gone<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + k8s_openapi::serde::de::DeserializeOwned + std::fmt::Debug,
{
    wait_for(
        &format!("{name} to be deleted"),
        Duration::from_secs(60),
        || async {
            match api.get_opt(name).await {
                Ok(None) => Ok(()),
                Ok(Some(_)) => Err(format!("{name} still exists")),
                Err(e) => Err(e.to_string()),
            }
        },
    )
    .await
}

#[tokio::test]
async fn helm_install_creates_the_manager_objects_as_configured_and_uninstall_removes_them() {
    let client: Client = windlass_testkit::client().await;
    let ns = TestNamespace::create(&client, "helm-windlass").await;
    let release = unique_name("wl");
    let full = format!("{release}-windlass");
    let chart = chart_dir();

    let mut install = helm();
    install.args([
        "install",
        &release,
        &chart,
        "--namespace",
        &ns.name,
        "--wait",
        "--timeout",
        "120s",
    ]);
    install.args([
        "--set",
        "logLevel=debug,replicas=2,resources.limits.memory=300Mi,resources.requests.cpu=75m",
        "--set",
        "serviceAccount.annotations.example\\.com/role=manager",
    ]);
    // CRDs are cluster-wide and shared with every other test. Helm applies the chart's CRDs
    // server-side and stops on a conflict with whoever created them first, so it installs them
    // only when none exists yet; either way the chart's CRD files must be accepted by the
    // apiserver and every one of them must exist afterwards.
    let crd_files = chart_crd_files();
    let mut crd_names = Vec::new();
    for file in &crd_files {
        let text = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        for (key, object) in objects_of(&text) {
            assert!(
                key.starts_with("CustomResourceDefinition/"),
                "{}: {key} is not a CRD",
                file.display()
            );
            crd_names.push(
                object["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            );
        }
        run_ok(kubectl().args([
            "apply",
            "--server-side",
            "--force-conflicts",
            "--dry-run=server",
            "--field-manager=helm-chart-test",
            "-f",
            &file.display().to_string(),
        ]));
    }
    let existing = run_ok(kubectl().args(["get", "crd", "-o", "name"]));
    let all_exist = crd_names.iter().all(|name| {
        existing
            .lines()
            .any(|l| l == format!("customresourcedefinition.apiextensions.k8s.io/{name}"))
    });
    if crd_files.is_empty() || all_exist {
        install.arg("--skip-crds");
    }
    run_ok(&mut install);
    let _guard = ReleaseGuard {
        release: &release,
        namespace: &ns.name,
    };

    let service_accounts = Api::<ServiceAccount>::namespaced(client.clone(), &ns.name);
    let deployments = Api::<Deployment>::namespaced(client.clone(), &ns.name);
    let services = Api::<Service>::namespaced(client.clone(), &ns.name);
    let roles = Api::<Role>::namespaced(client.clone(), &ns.name);
    let role_bindings = Api::<RoleBinding>::namespaced(client.clone(), &ns.name);
    let cluster_roles = Api::<ClusterRole>::all(client.clone());
    let cluster_role_bindings = Api::<ClusterRoleBinding>::all(client.clone());

    let sa = service_accounts.get(&full).await.unwrap();
    assert_eq!(
        sa.metadata.annotations.unwrap()["example.com/role"],
        "manager"
    );

    // Cluster-scoped names carry the release name, so parallel releases do not collide.
    let cluster_role_name = format!("{full}-manager");
    let cluster_role = cluster_roles.get(&cluster_role_name).await.unwrap();
    let rules = cluster_role.rules.unwrap();
    assert!(
        !rules.is_empty(),
        "ClusterRole {cluster_role_name} grants nothing"
    );
    let binding = cluster_role_bindings.get(&cluster_role_name).await.unwrap();
    assert_eq!(binding.role_ref.name, cluster_role_name);
    let subject = &binding.subjects.unwrap()[0];
    assert_eq!(
        (subject.name.as_str(), subject.namespace.as_deref()),
        (full.as_str(), Some(ns.name.as_str()))
    );

    let role = roles.get(&format!("{full}-leader-election")).await.unwrap();
    assert!(role.rules.unwrap().iter().any(|r| {
        r.resources
            .as_ref()
            .is_some_and(|rs| rs.contains(&"leases".to_string()))
    }));
    role_bindings
        .get(&format!("{full}-leader-election"))
        .await
        .unwrap();

    let deployment = deployments.get(&full).await.unwrap();
    assert_eq!(deployment.spec.replicas, Some(2));
    let pod = serde_json::to_value(&deployment.spec.template.spec).unwrap();
    let c = serde_json::to_value(container(&deployment)).unwrap();
    let env: Vec<&Value> = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "POD_NAMESPACE")
        .collect();
    let seen = json!({
        "serviceAccountName": pod["serviceAccountName"],
        "podSecurity": [pod["securityContext"]["runAsNonRoot"], pod["securityContext"]["seccompProfile"]["type"]],
        "args": c["args"],
        "podNamespaceFrom": env.first().map(|e| &e["valueFrom"]["fieldRef"]["fieldPath"]),
        "liveness": [c["livenessProbe"]["httpGet"]["path"], c["livenessProbe"]["httpGet"]["port"]],
        "readiness": [c["readinessProbe"]["httpGet"]["path"], c["readinessProbe"]["httpGet"]["port"]],
        "ports": c["ports"].as_array().unwrap().iter().map(|p| json!([p["name"], p["containerPort"]])).collect::<Vec<_>>(),
        "resources": c["resources"],
        "tmp": c["volumeMounts"].as_array().unwrap().iter().find(|m| m["name"] == "tmp").map(|m| &m["mountPath"]),
        "security": c["securityContext"],
    });
    let expected = json!({
        "serviceAccountName": full,
        "podSecurity": [true, "RuntimeDefault"],
        "args": ["manager", "--log-level=debug", "--log-format=json", "--leader-elect=true",
            "--metrics-bind-address=0.0.0.0:8080", "--health-probe-bind-address=0.0.0.0:8081", format!("--namespace={}", ns.name)],
        "podNamespaceFrom": "metadata.namespace",
        "liveness": ["/healthz", "health"],
        "readiness": ["/readyz", "health"],
        "ports": [["metrics", 8080], ["health", 8081]],
        "resources": {"limits": {"memory": "300Mi"}, "requests": {"cpu": "75m", "memory": "64Mi"}},
        // The root filesystem is read-only; /tmp is the writable scratch space.
        "tmp": "/tmp",
        "security": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}, "privileged": false, "readOnlyRootFilesystem": true},
    });
    assert_eq!(
        seen, expected,
        "the manager Deployment is not as configured"
    );

    // The apiserver agrees: as the chart's ServiceAccount, the manager may do what running
    // windlass takes, and nothing it never needs.
    let manager = format!("system:serviceaccount:{}:{full}", ns.name);
    let can = |verb: &str, resource: &str, namespace: Option<&str>| {
        let mut command = kubectl();
        command.args(["auth", "can-i", verb, resource, "--as", &manager]);
        match namespace {
            Some(ns) => command.args(["--namespace", ns]),
            None => command.arg("--all-namespaces"),
        };
        let output = command.output().expect("running kubectl auth can-i");
        String::from_utf8_lossy(&output.stdout).trim() == "yes"
    };
    for (verb, resource) in [
        ("patch", "clusterserviceversions.windlass.dev"),
        ("create", "blueprints.windlass.dev"),
        ("list", "pods"),
        ("create", "events"),
    ] {
        assert!(
            can(verb, resource, None),
            "the manager may not {verb} {resource}"
        );
    }
    assert!(can("update", "leases.coordination.k8s.io", Some(&ns.name)));
    assert!(
        !can("update", "leases.coordination.k8s.io", Some("default")),
        "Leases only in its own namespace"
    );
    for (verb, resource) in [
        ("get", "nodes"),
        ("delete", "pods"),
        ("create", "pods/exec"),
        ("delete", "namespaces"),
    ] {
        assert!(
            !can(verb, resource, None),
            "the manager may {verb} {resource}, which it never needs"
        );
    }
    // Everything the sample bundles' installs create passes authorization and the RBAC
    // escalation checks as the manager (a server-side dry run: nothing is created). Their Roles
    // grant what the manager itself lacks (acme.windlass.dev resources, nodes), so this proves
    // `escalate` and `bind` work.
    for path in ["bundles/acme-db/1.0.0", "bundles/acme-gateway/0.1.0"] {
        let bundle = windlass_bundle::load_bundle(&repo_root().join(path))
            .unwrap_or_else(|e| panic!("loading {path}: {e}"));
        let mut documents = vec![install_objects(&bundle, &ns.name, &release)];
        documents.extend(
            bundle
                .objects_of_kind("CustomResourceDefinition")
                .map(|m| m.object.clone()),
        );
        for document in documents {
            run_with_stdin(
                kubectl().args([
                    "apply",
                    "--server-side",
                    "--force-conflicts",
                    "--field-manager=windlass",
                    "--dry-run=server",
                    "--as",
                    &manager,
                    "-f",
                    "-",
                ]),
                &document.to_string(),
            );
        }
    }

    let service = services.get(&format!("{full}-metrics")).await.unwrap();
    let service_spec = service.spec.unwrap();
    let port = &service_spec.ports.unwrap()[0];
    assert_eq!((port.name.as_deref(), port.port), (Some("metrics"), 8080));
    let selector = service_spec.selector.unwrap();
    let pod_labels = deployment.spec.template.metadata.unwrap().labels.unwrap();
    assert!(
        selector.iter().all(|(k, v)| pod_labels.get(k) == Some(v)),
        "the Service selects the manager pods"
    );

    if !crd_files.is_empty() {
        let crds = run_ok(kubectl().args(["get", "crd", "-o", "name"]));
        for crd in [
            "subscriptions.windlass.dev",
            "blueprints.windlass.dev",
            "clusterserviceversions.windlass.dev",
            "catalogs.windlass.dev",
        ] {
            assert!(
                crd_names.iter().any(|n| n == crd),
                "the chart's crds/ lacks {crd}"
            );
            assert!(
                crds.contains(crd),
                "{crd} is not in the cluster after the install:\n{crds}"
            );
        }
    }

    run_ok(helm().args([
        "uninstall",
        &release,
        "--namespace",
        &ns.name,
        "--wait",
        "--timeout",
        "120s",
    ]));
    wait_gone(&deployments, &full).await;
    wait_gone(&services, &format!("{full}-metrics")).await;
    wait_gone(&service_accounts, &full).await;
    wait_gone(&roles, &format!("{full}-leader-election")).await;
    wait_gone(&role_bindings, &format!("{full}-leader-election")).await;
    wait_gone(&cluster_roles, &cluster_role_name).await;
    wait_gone(&cluster_role_bindings, &cluster_role_name).await;
}
