//! The windlass Helm chart (`config/helm/windlass`): it lints and renders clean, `helm install`
//! creates the manager's ServiceAccount, RBAC, Deployment and metrics Service as configured,
//! `helm uninstall` removes them (cluster-scoped RBAC included), and the plain RBAC in
//! `config/rbac` grants exactly what the chart grants.
//!
//! The pods are simulated by kwok, so these tests check the objects, not the manager process.

use std::collections::BTreeMap;

use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{Service, ServiceAccount},
    rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding},
};
use kube::{Api, Client};
use serde_json::{Value, json};
use windlass_testkit::{TestNamespace, helm, kubectl, run_ok, unique_name};

use crate::common::helm::{
    ReleaseGuard, chart_crd_files, chart_dir, container, install_objects, objects_of, repo_root,
    run_with_stdin, wait_gone,
};

/// The chart rendered into namespace `ops` with `--set values`.
fn render_with(chart: &str, values: &str) -> String {
    run_ok(helm().args([
        "template",
        "windlass",
        chart,
        "--namespace",
        "ops",
        "--set",
        values,
    ]))
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
        "- --release-service-account=windlass-release",
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
        !defaults.contains("release-serviceaccount.yaml"),
        "the release account is a cluster admin's choice unless asked for"
    );
    assert!(
        defaults.contains("image: ghcr.io/windlass-dev/windlass:0.1.0"),
        "the tag defaults to appVersion"
    );

    let custom = render_with(
        &chart,
        "logLevel=windlass=debug\\,kube=info,logFormat=text,leaderElection=false,builtInCatalog.enabled=false,metrics.port=9090,health.port=9091,image.tag=dev",
    );
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

    // Asked for: the release account and its binding, named for the manager.
    let release = render_with(
        &chart,
        "release.serviceAccount.create=true,release.serviceAccount.name=platform-release,release.serviceAccount.clusterRole=platform-updater",
    );
    let objects = release
        .split("\n---")
        .filter(|doc| doc.contains("release-serviceaccount.yaml"))
        .collect::<Vec<_>>()
        .join("\n---");
    for expected in [
        "kind: ServiceAccount",
        "name: platform-release",
        "namespace: ops",
        "kind: ClusterRoleBinding",
        "name: platform-updater",
    ] {
        assert!(
            objects.contains(expected),
            "release account render lacks `{expected}`:\n{objects}"
        );
    }
    assert!(release.contains("- --release-service-account=platform-release"));

    // values.schema.json refuses values the manager would reject at start.
    for bad in [
        "logFormat=xml",
        "metrics.port=70000",
        "image.pullPolicy=Sometimes",
        "release.serviceAccount.name=Not_A_Name",
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
        "templates/clusterrole-custom-resources.yaml",
        "--show-only",
        "templates/role.yaml",
        "--show-only",
        "templates/clusterrole-view.yaml",
        "--show-only",
        "templates/clusterrole-package-reader.yaml",
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
            "ClusterRole/windlass-manager-custom-resources",
            "ClusterRole/windlass-package-reader",
            "ClusterRole/windlass-view",
            "ClusterRoleBinding/windlass-manager",
            "ClusterRoleBinding/windlass-manager-custom-resources",
            "ClusterRoleBinding/windlass-package-reader",
            "Role/windlass-leader-election",
            "RoleBinding/windlass-leader-election",
            "ServiceAccount/windlass",
        ]
    );
    for (key, object) in &chart {
        for field in ["rules", "aggregationRule", "roleRef", "subjects"] {
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
    // The people of a namespace read its InstallScope through Kubernetes' own roles.
    for labelled in [&chart, &plain] {
        let labels = &labelled["ClusterRole/windlass-view"]["metadata"]["labels"];
        for role in ["view", "edit", "admin"] {
            assert_eq!(
                labels[format!("rbac.authorization.k8s.io/aggregate-to-{role}")],
                "true",
                "windlass-view is aggregated into {role}"
            );
        }
    }
    // Every signed-in user reads the Package views, and only reads them.
    let reader = &chart["ClusterRoleBinding/windlass-package-reader"];
    assert_eq!(reader["subjects"][0]["name"], "system:authenticated");
    assert_eq!(
        chart["ClusterRole/windlass-package-reader"]["rules"],
        serde_json::json!([{"apiGroups": ["windlass.dev"], "resources": ["packages"], "verbs": ["get", "list", "watch"]}])
    );
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

#[tokio::test]
async fn plain_admission_policies_in_config_admission_are_the_charts() {
    let _ = windlass_testkit::client().await;
    let chart = chart_dir();
    let rendered = run_ok(helm().args([
        "template",
        "windlass",
        &chart,
        "--namespace",
        "windlass-system",
        "--show-only",
        "templates/admission-policies.yaml",
    ]));
    let from_chart = objects_of(&rendered);
    let plain = objects_of(&run_ok(kubectl().args([
        "kustomize",
        &repo_root().join("config/admission").display().to_string(),
    ])));
    assert_eq!(
        from_chart.keys().collect::<Vec<_>>(),
        plain.keys().collect::<Vec<_>>()
    );
    assert_eq!(from_chart.len(), 6, "{:?}", from_chart.keys());
    for (key, object) in &from_chart {
        assert_eq!(object["spec"], plain[key]["spec"], "{key}: spec differs");
    }
    // Another release names its own manager, and the policies can be turned off.
    let other = run_ok(helm().args([
        "template",
        "wl",
        &chart,
        "--namespace",
        "ops",
        "--show-only",
        "templates/admission-policies.yaml",
    ]));
    assert!(other.contains("'system:serviceaccount:ops:wl-windlass'"));
    assert!(!other.contains("windlass-system"));
    let off = render_with(&chart, "admissionPolicies.enabled=false");
    assert!(
        !off.contains("kind: ValidatingAdmissionPolicy"),
        "admissionPolicies.enabled=false still renders policies"
    );
    assert!(render_with(&chart, "replicas=1").contains("kind: ValidatingAdmissionPolicyBinding"));
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
        // The policies would name this release's account as the only writer of windlass's
        // objects, shutting out the manager every other test runs against.
        "--set",
        "admissionPolicies.enabled=false",
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
            "--metrics-bind-address=0.0.0.0:8080", "--health-probe-bind-address=0.0.0.0:8081", format!("--namespace={}", ns.name),
            "--release-service-account=windlass-release", "--release-api=windlass"],
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
        // No wildcard read: nodes, and custom resources of CRDs windlass did not upgrade.
        ("get", "nodes"),
        ("list", "nodes"),
        ("list", "clusterversions.config.openshift.io"),
        ("delete", "nodes"),
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

/// Given the chart, when it is rendered with its defaults, then there is no hub; when
/// `hub.enabled=true`, then the hub runs `windlass hub --auth token` under its own
/// ServiceAccount, which may create TokenReviews and nothing else (no impersonation, no
/// reads: people's own tokens do those), its pods are selected apart from the manager's, and
/// the groups in `hub.catalogReaders` may list Catalogs.
#[tokio::test]
async fn the_hub_is_off_by_default_and_when_on_holds_only_the_right_to_review_tokens() {
    // kubectl reads the YAML; it needs the apiserver only for discovery.
    let _ = windlass_testkit::client().await;
    let chart = chart_dir();
    let defaults = render_with(&chart, "logLevel=info");
    assert!(
        !defaults.contains("templates/hub.yaml"),
        "the hub is off by default:\n{defaults}"
    );

    let rendered = render_with(&chart, "hub.enabled=true,hub.port=9000");
    let hub_docs = rendered
        .split("\n---")
        .filter(|doc| doc.contains("templates/hub.yaml"))
        .collect::<Vec<_>>()
        .join("\n---");
    let objects = objects_of(&hub_docs);
    assert_eq!(
        objects.keys().collect::<Vec<_>>(),
        [
            "ClusterRole/windlass-hub-catalog-reader",
            "ClusterRole/windlass-hub-tokenreview",
            "ClusterRoleBinding/windlass-hub-catalog-reader",
            "ClusterRoleBinding/windlass-hub-tokenreview",
            "Deployment/windlass-hub",
            "Service/windlass-hub",
            "ServiceAccount/windlass-hub",
        ]
    );
    assert_eq!(
        objects["ClusterRole/windlass-hub-tokenreview"]["rules"],
        json!([{"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]}])
    );
    assert_eq!(
        objects["ClusterRoleBinding/windlass-hub-tokenreview"]["subjects"],
        json!([{"kind": "ServiceAccount", "name": "windlass-hub", "namespace": "ops"}])
    );
    assert_eq!(
        objects["ClusterRole/windlass-hub-catalog-reader"]["rules"],
        json!([{"apiGroups": ["windlass.dev"], "resources": ["catalogs"], "verbs": ["get", "list", "watch"]}])
    );
    assert_eq!(
        objects["ClusterRoleBinding/windlass-hub-catalog-reader"]["subjects"],
        json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"}])
    );
    assert!(!hub_docs.contains("impersonate"), "{hub_docs}");

    let deployment = &objects["Deployment/windlass-hub"];
    let pod = &deployment["spec"]["template"];
    assert_eq!(pod["spec"]["serviceAccountName"], "windlass-hub");
    let hub = &pod["spec"]["containers"][0];
    assert_eq!(hub["name"], "hub");
    assert_eq!(
        hub["args"],
        json!([
            "hub",
            "--auth=token",
            "--listen=0.0.0.0:9000",
            "--manager-namespace=ops",
            "--secure-cookies"
        ])
    );
    assert_eq!(hub["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(
        objects["Service/windlass-hub"]["spec"]["selector"],
        deployment["spec"]["selector"]["matchLabels"]
    );
    // No selector of the manager's picks the hub's pods, and the reverse.
    let manager = objects_of(&rendered)
        .remove("Deployment/windlass")
        .expect("the manager is rendered");
    let matches = |selector: &Value, labels: &Value| {
        selector
            .as_object()
            .unwrap()
            .iter()
            .all(|(k, v)| labels[k] == *v)
    };
    assert!(!matches(
        &manager["spec"]["selector"]["matchLabels"],
        &pod["metadata"]["labels"]
    ));
    assert!(!matches(
        &deployment["spec"]["selector"]["matchLabels"],
        &manager["spec"]["template"]["metadata"]["labels"]
    ));

    // Without catalog readers the admin grants Catalog reads themselves.
    let no_readers = render_with(&chart, "hub.enabled=true,hub.catalogReaders=null");
    assert!(!no_readers.contains("catalog-reader"));
    assert!(
        render_with(&chart, "hub.enabled=true,hub.secureCookies=false")
            .contains("- --listen=0.0.0.0:8686\n")
    );
    assert!(
        !render_with(&chart, "hub.enabled=true,hub.secureCookies=false")
            .contains("--secure-cookies")
    );

    for bad in ["hub.port=0", "hub.unknown=1", "hub.service.type=Ingress"] {
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
}

/// `release.api: openshift` runs the manager on OpenShift's API with the role it needs, the same
/// as `config/rbac/openshift_role.yaml`; `installOpenShiftCrds` adds OpenShift's own CRDs,
/// unchanged from `config/openshift`. By default neither is rendered.
#[tokio::test]
async fn the_openshift_release_api_is_an_option_with_its_role_and_openshifts_crds() {
    let _ = windlass_testkit::client().await;
    let chart = chart_dir();
    let defaults = run_ok(helm().args([
        "template",
        "windlass",
        &chart,
        "--namespace",
        "windlass-system",
    ]));
    assert!(defaults.contains("- --release-api=windlass"), "{defaults}");
    assert!(
        !defaults.contains("config.openshift.io"),
        "the default render names OpenShift's API"
    );
    let rendered = run_ok(helm().args([
        "template",
        "windlass",
        &chart,
        "--namespace",
        "windlass-system",
        "--set",
        "release.api=openshift",
        "--set",
        "release.installOpenShiftCrds=true",
    ]));
    assert!(rendered.contains("- --release-api=openshift"));
    let role = run_ok(helm().args([
        "template",
        "windlass",
        &chart,
        "--namespace",
        "windlass-system",
        "--set",
        "release.api=openshift",
        "--show-only",
        "templates/clusterrole-openshift.yaml",
    ]));
    let plain =
        std::fs::read_to_string(repo_root().join("config/rbac/openshift_role.yaml")).unwrap();
    let rules = |objects: BTreeMap<String, Value>| -> Vec<Value> {
        objects.into_values().map(|o| o["rules"].clone()).collect()
    };
    assert_eq!(rules(objects_of(&role)), rules(objects_of(&plain)));
    let crds = run_ok(helm().args([
        "template",
        "windlass",
        &chart,
        "--namespace",
        "windlass-system",
        "--set",
        "release.api=openshift",
        "--set",
        "release.installOpenShiftCrds=true",
        "--show-only",
        "templates/openshift-crds.yaml",
    ]));
    let mut from_config = BTreeMap::new();
    for file in std::fs::read_dir(repo_root().join("config/openshift/crd")).unwrap() {
        let path = file.unwrap().path();
        if path.file_name().is_some_and(|n| n != "kustomization.yaml") {
            from_config.extend(objects_of(&std::fs::read_to_string(path).unwrap()));
        }
    }
    assert_eq!(objects_of(&crds), from_config);
    assert_eq!(
        from_config.keys().collect::<Vec<_>>(),
        [
            "CustomResourceDefinition/clusteroperators.config.openshift.io",
            "CustomResourceDefinition/clusterversions.config.openshift.io"
        ]
    );
}
