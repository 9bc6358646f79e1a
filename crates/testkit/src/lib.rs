//! Test support for windlass: access to the local control plane (`make cluster`), a unique
//! namespace per test, the OCI registry, and the pinned kubectl and helm; and, for scenario
//! tests of a controller's shell that need no cluster, a mocked API server ([`mock_api`]).
//!
//! Tests never start the control plane themselves (parallel test binaries would race to do
//! it): `make test` starts it, and a test run without it fails with a message saying how to
//! start it.

mod tools;
pub use tools::{cosign_binary, oc_binary, registry_requests, windlass_binary};
pub mod catalogs;
pub mod images;
pub mod lifecycle;
pub mod manager;
pub mod mock_api;
pub mod prometheus;
pub mod registries;

use std::{
    collections::BTreeMap,
    future::Future,
    path::PathBuf,
    process::Command,
    sync::atomic::{AtomicU64, Ordering},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Api, Client, Config,
    api::{DeleteParams, ObjectMeta, PostParams},
    config::{KubeConfigOptions, Kubeconfig},
};

/// Label on every namespace a test creates, so leftovers can be found and removed.
pub const TEST_NAMESPACE_LABEL: &str = "windlass.dev/test";
/// Label on the test namespaces that play a tenant's: the trusted test policy leaves them out,
/// so only what a namespace gets without a policy (or a policy of the test's own) applies.
pub const TENANT_NAMESPACE_LABEL: &str = "windlass.dev/test-tenant";

/// The label that turns windlass's admission policies off in a test's namespace, for tests of
/// the controllers' own checks (which the policies would otherwise refuse before they run).
pub const WITHOUT_ADMISSION_POLICIES: (&str, &str) = (
    windlass_api::names::labels::ADMISSION_POLICIES,
    windlass_api::names::labels::ADMISSION_POLICIES_DISABLED,
);
/// The InstallPolicy that trusts every test namespace but the tenants' with everything, as a
/// cluster admin trusts the platform's own namespaces.
pub const TRUSTED_TEST_POLICY: &str = "windlass-e2e-trusted";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "the local control plane is not running ({0}); start it with `make cluster` (or run `make test`, which starts it)"
    )]
    NotRunning(String),
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("kubeconfig {path}: {source}")]
    Kubeconfig {
        path: PathBuf,
        source: kube::config::KubeconfigError,
    },
    #[error("building a client: {0}")]
    Client(#[from] kube::Error),
}

/// Where `make cluster` keeps its state (PKI, kubeconfig, logs, addresses).
pub fn state_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("WINDLASS_CLUSTER_DIR") {
        return PathBuf::from(dir);
    }
    std::env::temp_dir().join("windlass-cluster")
}

/// The admin kubeconfig of the local control plane.
pub fn kubeconfig_path() -> PathBuf {
    state_dir().join("admin.kubeconfig")
}

/// Values `make cluster` wrote to `cluster.env` (KUBECONFIG, WINDLASS_REGISTRY, ...).
pub fn cluster_env() -> Result<BTreeMap<String, String>, Error> {
    let path = state_dir().join("cluster.env");
    let text = std::fs::read_to_string(&path)
        .map_err(|_| Error::NotRunning(format!("{} does not exist", path.display())))?;
    Ok(text
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect())
}

/// Makes rustls use ring; kube and oci-client would otherwise disagree on a crypto provider.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

async fn admin_config() -> Result<Config, Error> {
    install_crypto_provider();
    cluster_env()?;
    let path = kubeconfig_path();
    let kubeconfig = Kubeconfig::read_from(&path).map_err(|source| Error::Kubeconfig {
        path: path.clone(),
        source,
    })?;
    Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|source| Error::Kubeconfig { path, source })
}

/// Applies [`TRUSTED_TEST_POLICY`] (server-side apply: the same object every time).
pub async fn trust_test_namespaces(client: &Client) {
    let policy = serde_json::json!({
        "apiVersion": "windlass.dev/v1alpha1",
        "kind": "InstallPolicy",
        "metadata": { "name": TRUSTED_TEST_POLICY },
        "spec": {
            "namespaceSelector": {
                "matchLabels": { TEST_NAMESPACE_LABEL: "true" },
                "matchExpressions": [{ "key": TENANT_NAMESPACE_LABEL, "operator": "DoesNotExist" }],
            },
            "trusted": true,
            "installModes": ["SingleNamespace", "MultiNamespace", "AllNamespaces"],
            "clusterScoped": [
                "CustomResourceDefinitions", "ClusterPermissions", "Webhooks", "OtherObjects",
                "CrdDeletion", "CrdAdoption",
            ],
        },
    });
    Api::<windlass_api::InstallPolicy>::all(client.clone())
        .patch(
            TRUSTED_TEST_POLICY,
            &kube::api::PatchParams::apply("windlass-e2e").force(),
            &kube::api::Patch::Apply(&policy),
        )
        .await
        .unwrap_or_else(|e| panic!("applying InstallPolicy {TRUSTED_TEST_POLICY}: {e}"));
}

/// A client acting as the user `user` (the cluster admin impersonating them): the API server
/// authorizes every request with that user's RBAC, as for a tenant with their own credentials.
pub async fn impersonating(user: &str) -> Client {
    let mut config = admin_config().await.unwrap_or_else(|e| panic!("{e}"));
    config.auth_info.impersonate = Some(user.to_string());
    config.auth_info.impersonate_groups = Some(vec!["system:authenticated".to_string()]);
    Client::try_from(config).unwrap_or_else(|e| panic!("a client as {user}: {e}"))
}

/// Waits until the API server's authorizer lets `user` `verb` `resource` (in `group`) in
/// `namespace`. RBAC bindings reach the authorizer through its informers, so a request made
/// right after creating one can still be refused.
pub async fn wait_until_authorized(
    admin: &Client,
    user: &str,
    namespace: &str,
    action: (&str, &str, &str),
) {
    wait_until_access(admin, user, namespace, action, true).await;
}

/// Waits until the API server's authorizer refuses `user` `verb` `resource` (in `group`) in
/// `namespace`: a removed binding leaves the authorizer through its informers too.
pub async fn wait_until_refused(
    admin: &Client,
    user: &str,
    namespace: &str,
    action: (&str, &str, &str),
) {
    wait_until_access(admin, user, namespace, action, false).await;
}

async fn wait_until_access(
    admin: &Client,
    user: &str,
    namespace: &str,
    (group, resource, verb): (&str, &str, &str),
    allowed: bool,
) {
    use k8s_openapi::api::authorization::v1::{
        ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
    };
    let reviews = Api::<SubjectAccessReview>::all(admin.clone());
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.to_string()),
            groups: Some(vec!["system:authenticated".to_string()]),
            resource_attributes: Some(ResourceAttributes {
                group: Some(group.to_string()),
                resource: Some(resource.to_string()),
                verb: Some(verb.to_string()),
                namespace: Some(namespace.to_string()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let expected = if allowed { "allowed" } else { "refused" };
    wait_until(
        &format!("{user} to be {expected} to {verb} {resource} in {namespace}"),
        Duration::from_secs(30),
        || async {
            reviews
                .create(&PostParams::default(), &review)
                .await
                .ok()
                .and_then(|r| r.status)
                .is_some_and(|s| s.allowed == allowed)
        },
    )
    .await;
}

/// A client for the local control plane, as cluster admin.
pub async fn try_client() -> Result<Client, Error> {
    let config = admin_config().await?;
    let client = Client::try_from(config)?;
    client
        .apiserver_version()
        .await
        .map_err(|e| Error::NotRunning(format!("the apiserver does not answer: {e}")))?;
    Ok(client)
}

/// Like [`try_client`], panicking with the how-to-start message: what a test wants.
pub async fn client() -> Client {
    match try_client().await {
        Ok(client) => client,
        Err(error) => panic!("{error}"),
    }
}

/// The local OCI registry (plain HTTP on loopback).
#[derive(Clone, Debug)]
pub struct Registry {
    /// `127.0.0.1:PORT`
    pub addr: String,
}

impl Registry {
    /// A repository reference unique to this call, for tests that must not share images.
    pub fn unique_repository(&self, prefix: &str) -> String {
        format!("{}/{}", self.addr, unique_name(prefix))
    }
}

/// The registry started by `make cluster`; panics with the how-to-start message without it.
pub fn registry() -> Registry {
    let env = cluster_env().unwrap_or_else(|e| panic!("{e}"));
    let addr = env.get("WINDLASS_REGISTRY").cloned().unwrap_or_else(|| {
        panic!(
            "{}",
            Error::NotRunning("cluster.env names no registry".into())
        )
    });
    Registry { addr }
}

/// A DNS-1123 name that no other test (in this or another process) uses.
pub fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let suffix = format!(
        "{:x}{:x}{:x}",
        std::process::id() % 0xffff,
        nanos % 0xfffff,
        n
    );
    let prefix: String = prefix
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(40)
        .collect();
    format!("{}-{suffix}", prefix.trim_matches('-'))
}

/// A ClusterRole over the sample operators' own API group (`acme.windlass.dev`). An install
/// ServiceAccount may grant an operator only what it holds itself, and `admin` does not hold
/// the custom resources of CRDs; a platform team grants those as this does.
pub const SAMPLE_OPERATOR_APIS: &str = "windlass-e2e-sample-operator-apis";

async fn sample_operator_apis_role(admin: &Client) {
    use k8s_openapi::api::rbac::v1::ClusterRole;
    use kube::api::{Patch, PatchParams};
    let role = serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": { "name": SAMPLE_OPERATOR_APIS },
        "rules": [{ "apiGroups": ["acme.windlass.dev"], "resources": ["*"], "verbs": ["*"] }],
    });
    Api::<ClusterRole>::all(admin.clone())
        .patch(
            SAMPLE_OPERATOR_APIS,
            &PatchParams::apply("windlass-e2e").force(),
            &Patch::Apply(&role),
        )
        .await
        .unwrap_or_else(|e| panic!("applying ClusterRole {SAMPLE_OPERATOR_APIS}: {e}"));
}

/// A namespace that belongs to one test and is deleted when the value is dropped.
pub struct TestNamespace {
    pub name: String,
    client: Client,
}

impl TestNamespace {
    /// A namespace the trusted test policy covers: what most tests, written as a cluster
    /// admin would use windlass, install in.
    pub async fn create(client: &Client, prefix: &str) -> TestNamespace {
        trust_test_namespaces(client).await;
        TestNamespace::with_labels(client, prefix, &[]).await
    }

    /// A trusted namespace (as [`TestNamespace::create`]) with more labels.
    pub async fn create_with_labels(
        client: &Client,
        prefix: &str,
        labels: &[(&str, &str)],
    ) -> TestNamespace {
        trust_test_namespaces(client).await;
        TestNamespace::with_labels(client, prefix, labels).await
    }

    /// A namespace no policy covers unless the test writes one: a tenant's.
    pub async fn tenant(client: &Client, prefix: &str) -> TestNamespace {
        TestNamespace::tenant_with_labels(client, prefix, &[]).await
    }

    /// A tenant's namespace with more labels (those a test's own policy selects).
    pub async fn tenant_with_labels(
        client: &Client,
        prefix: &str,
        labels: &[(&str, &str)],
    ) -> TestNamespace {
        let mut all = vec![(TENANT_NAMESPACE_LABEL, "true")];
        all.extend_from_slice(labels);
        let ns = TestNamespace::with_labels(client, prefix, &all).await;
        ns.install_service_account(client, &["admin", SAMPLE_OPERATOR_APIS])
            .await;
        ns
    }

    /// The namespace's install ServiceAccount (`windlass-installer`, what windlass acts as
    /// for installs here), bound to each ClusterRole of `roles` in the namespace, as a platform
    /// team sets it up for a tenant. Waits until the API server's authorizer knows it.
    pub async fn install_service_account(&self, admin: &Client, roles: &[&str]) {
        for role in roles {
            self.bind_install_service_account(admin, role).await;
        }
    }

    async fn bind_install_service_account(&self, admin: &Client, role: &str) {
        use k8s_openapi::api::{core::v1::ServiceAccount, rbac::v1::RoleBinding};
        if role == SAMPLE_OPERATOR_APIS {
            sample_operator_apis_role(admin).await;
        }
        let name = windlass_tenancy::DEFAULT_SERVICE_ACCOUNT;
        let account = ServiceAccount {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                ..Default::default()
            },
            ..Default::default()
        };
        let accounts = Api::<ServiceAccount>::namespaced(admin.clone(), &self.name);
        if accounts.get_opt(name).await.ok().flatten().is_none() {
            accounts
                .create(&PostParams::default(), &account)
                .await
                .unwrap_or_else(|e| panic!("creating ServiceAccount {name}: {e}"));
        }
        let binding: RoleBinding = serde_json::from_value(serde_json::json!({
            "metadata": { "name": format!("{name}-{role}") },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role },
            "subjects": [{ "kind": "ServiceAccount", "name": name, "namespace": self.name }],
        }))
        .expect("a RoleBinding");
        Api::<RoleBinding>::namespaced(admin.clone(), &self.name)
            .create(&PostParams::default(), &binding)
            .await
            .unwrap_or_else(|e| panic!("binding {role} to ServiceAccount {name}: {e}"));
        let user = format!("system:serviceaccount:{}:{name}", self.name);
        let probe = if role == SAMPLE_OPERATOR_APIS {
            ("acme.windlass.dev", "databases", "update")
        } else {
            ("", "configmaps", "get")
        };
        wait_until_authorized(admin, &user, &self.name, probe).await;
    }

    async fn with_labels(client: &Client, prefix: &str, extra: &[(&str, &str)]) -> TestNamespace {
        let name = unique_name(prefix);
        let mut labels: BTreeMap<String, String> =
            [(TEST_NAMESPACE_LABEL.to_string(), "true".to_string())].into();
        labels.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some(labels),
                ..Default::default()
            },
            ..Default::default()
        };
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .unwrap_or_else(|e| panic!("creating test namespace {name}: {e}"));
        TestNamespace {
            name,
            client: client.clone(),
        }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        if std::env::var_os("WINDLASS_KEEP_NAMESPACES").is_some() {
            eprintln!(
                "keeping namespace {} (WINDLASS_KEEP_NAMESPACES is set)",
                self.name
            );
            return;
        }
        // Drop cannot await; ask the apiserver through kubectl without waiting for finalizers.
        let _ = kubectl()
            .args([
                "delete",
                "namespace",
                &self.name,
                "--wait=false",
                "--ignore-not-found",
            ])
            .output();
    }
}

/// Deletes a namespace and waits until it is gone (for tests that check garbage collection).
pub async fn delete_namespace_and_wait(client: &Client, name: &str, timeout: Duration) {
    let api = Api::<Namespace>::all(client.clone());
    let _ = api.delete(name, &DeleteParams::default()).await;
    wait_until(
        &format!("namespace {name} to be deleted"),
        timeout,
        || async { matches!(api.get_opt(name).await, Ok(None)) },
    )
    .await;
}

fn pinned_tool(name: &str) -> Command {
    let mut command = Command::new(name);
    if let Ok(env) = cluster_env()
        && let Some(tools) = env.get("WINDLASS_TOOLS_PATH")
    {
        let path = std::env::var("PATH").unwrap_or_default();
        command.env("PATH", format!("{tools}:{path}"));
        if let Some(dir) = tools
            .split(':')
            .find(|dir| PathBuf::from(dir).join(name).exists())
        {
            command = Command::new(PathBuf::from(dir).join(name));
            command.env("PATH", format!("{tools}:{path}"));
        }
    }
    command.env("KUBECONFIG", kubeconfig_path());
    command
}

/// The pinned kubectl, pointed at the local control plane.
pub fn kubectl() -> Command {
    pinned_tool("kubectl")
}

/// The pinned helm, pointed at the local control plane.
pub fn helm() -> Command {
    pinned_tool("helm")
}

/// Runs a command and returns its stdout, panicking with stdout and stderr when it fails.
pub fn run_ok(command: &mut Command) -> String {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("running {command:?}: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        panic!(
            "{command:?} failed ({}):\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    stdout
}

/// Polls `check` until it returns true, panicking after `timeout` with `what`.
pub async fn wait_until<F, Fut>(what: &str, timeout: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if check().await {
            return;
        }
        if Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Polls `get` until it returns `Some`, panicking after `timeout` with `what` and the last
/// value `describe` produced (so a failing test shows the object it was waiting on).
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut get: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        match get().await {
            Ok(value) => return value,
            Err(last) if Instant::now() > deadline => {
                panic!("timed out after {timeout:?} waiting for {what}; last seen: {last}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

/// Panics with how to start it unless the windlass manager started by `make e2e` is running.
/// A manager that is being restarted (the pid file is there, its process is not yet) gets a
/// few seconds: tests that kill and restart it share the cluster with the others.
pub fn require_manager() {
    let pid_file = state_dir().join("pids/manager");
    let running = || {
        std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|pid| pid.trim().parse::<u32>().ok())
            .is_some_and(|pid| PathBuf::from(format!("/proc/{pid}")).exists())
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while pid_file.exists() && !running() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    if !running() {
        panic!(
            "the windlass manager is not running against the local control plane; run the tests with `make e2e`, \
             or start it with `e2e/scripts/manager-restart.sh target/debug/windlass`"
        );
    }
}

/// The manager's log, for a failing test to show.
pub fn manager_log_tail(lines: usize) -> String {
    let log = std::fs::read_to_string(state_dir().join("logs/manager.log")).unwrap_or_default();
    let all: Vec<&str> = log.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Applies a CRD as a bundle ships it (server-side, the empty `status` dropped) and waits until
/// it is Established. CRDs are the Blueprint's to apply; tests of the CSV controller use this.
pub async fn apply_crd(client: &Client, crd: &serde_json::Value) -> String {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{Patch, PatchParams};
    let mut crd = crd.clone();
    if let Some(object) = crd.as_object_mut() {
        object.remove("status");
    }
    let name = crd["metadata"]["name"]
        .as_str()
        .unwrap_or_else(|| panic!("CRD without a name: {crd}"))
        .to_string();
    let api = Api::<CustomResourceDefinition>::all(client.clone());
    api.patch(
        &name,
        &PatchParams::apply("windlass-e2e").force(),
        &Patch::Apply(&crd),
    )
    .await
    .unwrap_or_else(|e| panic!("applying CRD {name}: {e}"));
    wait_until(
        &format!("CRD {name} to be Established"),
        Duration::from_secs(60),
        || async {
            api.get(&name)
                .await
                .ok()
                .and_then(|c| c.status)
                .and_then(|s| s.conditions)
                .is_some_and(|c| {
                    c.iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                })
        },
    )
    .await;
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_names_are_valid_and_distinct() {
        let a = unique_name("My_Test.Case");
        let b = unique_name("My_Test.Case");
        assert_ne!(a, b);
        for name in [&a, &b] {
            assert!(name.len() <= 63, "{name}");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{name}"
            );
            assert!(name.starts_with("my-test-case-"), "{name}");
        }
    }
}
