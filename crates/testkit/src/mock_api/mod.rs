//! A mocked Kubernetes API server for scenario tests of a controller's I/O shell: a
//! `kube::Client` whose requests are answered in process (through `tower-test`, as kube-rs
//! tests its own controllers), so a test can run one reconcile after another and assert the
//! exact requests the shell made, in order, with no cluster.
//!
//! The mock keeps objects and answers as the API server does, as far as a controller can tell:
//! reads and label-selected lists, server-side apply (with `managedFields` and
//! resourceVersion preconditions), merge and JSON patches, creates, deletes, discovery
//! documents for the kinds it serves (CRDs it holds included), and `Status` objects for every
//! error. It is strict: a request it does not model (an unknown resource, a watch, a `PUT`) is
//! answered as a real server would refuse it and recorded, and the test fails on it, naming the
//! request, when the mock is dropped (or at [`MockApi::assert_nothing_unexpected`]).

mod resources;
mod semantics;
mod server;

use std::{
    collections::BTreeMap,
    fmt,
    sync::{Arc, Mutex, MutexGuard},
};

use http_body_util::BodyExt;
use kube::{Client, client::Body};
use serde_json::{Value, json};

pub use resources::Resource;
use server::{Failure, State};

/// The content type kube sends server-side apply patches with.
pub const APPLY_PATCH: &str = "application/apply-patch+yaml";
/// ... JSON merge patches.
pub const MERGE_PATCH: &str = "application/merge-patch+json";
/// ... JSON patches.
pub const JSON_PATCH: &str = "application/json-patch+json";

/// One request the mock answered, as it came, with the status code it got.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub query: BTreeMap<String, String>,
    pub content_type: Option<String>,
    /// The JSON body (`null` when there was none).
    pub body: Value,
    pub code: u16,
}

impl Request {
    /// Anything but a read.
    pub fn is_write(&self) -> bool {
        self.method != "GET"
    }

    /// A server-side apply (a `PATCH` with the apply content type).
    pub fn is_apply(&self) -> bool {
        self.method == "PATCH" && self.content_type.as_deref() == Some(APPLY_PATCH)
    }

    pub fn field_manager(&self) -> Option<&str> {
        self.query.get("fieldManager").map(String::as_str)
    }

    /// A forced apply: conflicts with other managers are taken over.
    pub fn forced(&self) -> bool {
        self.query.get("force").map(String::as_str) == Some("true")
    }

    /// A dry run (nothing stored).
    pub fn dry_run(&self) -> bool {
        self.query.contains_key("dryRun")
    }
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.method, self.path)?;
        if !self.query.is_empty() {
            let query: Vec<String> = self.query.iter().map(|(k, v)| format!("{k}={v}")).collect();
            write!(f, "?{}", query.join("&"))?;
        }
        if let Some(content_type) = &self.content_type {
            write!(f, " ({content_type})")?;
        }
        write!(f, " -> {}", self.code)
    }
}

/// The mocked API server. Dropping it fails the test if it saw a request it does not model.
pub struct MockApi {
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl MockApi {
    /// A client talking to a new, empty mock. Needs a tokio runtime.
    pub fn start() -> (Client, MockApi) {
        let (service, mut handle) =
            tower_test::mock::pair::<http::Request<Body>, http::Response<Body>>();
        let state = Arc::new(Mutex::new(State::default()));
        let serving = state.clone();
        let task = tokio::spawn(async move {
            while let Some((request, respond)) = handle.next_request().await {
                let (parts, body) = request.into_parts();
                let bytes = body
                    .collect()
                    .await
                    .map(|b| b.to_bytes().to_vec())
                    .unwrap_or_default();
                let (code, answer) = lock(&serving).answer(&parts, &bytes);
                let response = http::Response::builder()
                    .status(code)
                    .header(http::header::CONTENT_TYPE, "application/json")
                    .body(Body::from(serde_json::to_vec(&answer).unwrap_or_default()))
                    .expect("a valid response");
                respond.send_response(response);
            }
        });
        (Client::new(service, "default"), MockApi { state, task })
    }

    /// Stores `object` as if someone else had written it (not logged): created, or replaced
    /// with its generation counted. Returns it as stored.
    pub fn insert(&self, object: Value) -> Value {
        let mut state = lock(&self.state);
        let key = state
            .key_of(&object)
            .unwrap_or_else(|why| panic!("mock API cannot hold {object}: {why}"));
        state.put(object, key)
    }

    /// The stored object, if there is one.
    pub fn object(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        let object = json!({
            "apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "namespace": namespace},
        });
        let state = lock(&self.state);
        let key = state.key_of(&object).ok()?;
        state.objects.get(&key).cloned()
    }

    /// Replaces an object's status as another controller would (not logged).
    pub fn set_status(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
        status: Value,
    ) {
        let object = json!({
            "apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "namespace": namespace},
        });
        let mut state = lock(&self.state);
        let key = state.key_of(&object).expect("a kind the mock serves");
        let mut stored = state
            .objects
            .get(&key)
            .cloned()
            .unwrap_or_else(|| panic!("no {kind} {name} to set the status of"));
        stored["status"] = status;
        state.bump(&mut stored);
        state.objects.insert(key, stored);
    }

    /// The next `method` request to `path` fails with `code` (answered with a `Status` saying
    /// `message`), and nothing is changed.
    pub fn fail_once(&self, method: &str, path: &str, code: u16, message: &str) {
        lock(&self.state).failures.push(Failure {
            method: method.into(),
            path: path.into(),
            code,
            message: message.into(),
        });
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        lock(&self.state).log.clone()
    }

    /// Every request since the last call, in order; the log starts afresh.
    pub fn take_requests(&self) -> Vec<Request> {
        std::mem::take(&mut lock(&self.state).log)
    }

    /// The requests the mock does not model, forgotten: for tests of the mock itself.
    pub fn take_unexpected(&self) -> Vec<String> {
        std::mem::take(&mut lock(&self.state).unexpected)
    }

    /// Fails with every request the mock does not model.
    pub fn assert_nothing_unexpected(&self) {
        let unexpected = lock(&self.state).unexpected.clone();
        assert!(
            unexpected.is_empty(),
            "the mocked API server got requests it does not model:\n{}",
            unexpected.join("\n")
        );
    }
}

impl Drop for MockApi {
    fn drop(&mut self) {
        self.task.abort();
        if !std::thread::panicking() {
            self.assert_nothing_unexpected();
        }
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::{
        Api,
        api::{DynamicObject, ListParams, Patch, PatchParams},
        core::ApiResource,
    };

    use super::*;

    #[tokio::test]
    async fn requests_it_does_not_model_are_kept_to_fail_the_test() {
        let (client, api) = MockApi::start();
        let widgets = ApiResource {
            group: "example.com".into(),
            version: "v1".into(),
            api_version: "example.com/v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
        };
        let unknown = Api::<DynamicObject>::all_with(client.clone(), &widgets);
        let refused = unknown.list(&ListParams::default()).await;
        assert!(matches!(refused, Err(kube::Error::Api(status)) if status.code == 404));
        let maps = Api::<ConfigMap>::namespaced(client, "a");
        assert!(
            maps.get_opt("absent")
                .await
                .expect("a 404 reads as none")
                .is_none()
        );
        let unexpected = api.take_unexpected();
        assert_eq!(unexpected.len(), 1, "{unexpected:?}");
        assert!(
            unexpected[0].starts_with("GET /apis/example.com/v1/widgets"),
            "{unexpected:?}"
        );
        assert_eq!(api.requests().len(), 2);
    }

    #[tokio::test]
    async fn applies_are_kept_and_guarded_by_the_resource_version() {
        let (client, api) = MockApi::start();
        let maps = Api::<ConfigMap>::namespaced(client, "a");
        let params = PatchParams::apply("tester").force();
        let applied = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "m"}, "data": {"k": "v"},
        });
        let written = maps
            .patch("m", &params, &Patch::Apply(&applied))
            .await
            .expect("an apply creates");
        let version = written
            .metadata
            .resource_version
            .clone()
            .expect("a version");
        let again = maps
            .patch("m", &params, &Patch::Apply(&applied))
            .await
            .expect("the same apply again");
        assert_eq!(
            again.metadata.resource_version,
            Some(version.clone()),
            "a no-op apply"
        );
        let managed = &again.metadata.managed_fields.expect("managed fields")[0];
        assert_eq!(managed.manager.as_deref(), Some("tester"));

        let changed = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "m"}, "data": {"k": "w"},
        });
        let moved = maps
            .patch("m", &params, &Patch::Apply(&changed))
            .await
            .expect("a change");
        assert_ne!(moved.metadata.resource_version, Some(version.clone()));

        // Guarded by the version before the change: refused, nothing stored.
        let stale = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "m", "resourceVersion": version}, "data": {"k": "x"},
        });
        let refused = maps.patch("m", &params, &Patch::Apply(&stale)).await;
        assert!(matches!(refused, Err(kube::Error::Api(status)) if status.code == 409));
        let stored = api
            .object("v1", "ConfigMap", Some("a"), "m")
            .expect("stored");
        assert_eq!(stored["data"]["k"], "w");
        let log = api.requests();
        assert!(log.iter().all(Request::is_apply));
        let codes: Vec<u16> = log.iter().map(|r| r.code).collect();
        assert_eq!(codes, [200, 200, 200, 409]);
    }

    #[tokio::test]
    async fn a_scripted_failure_answers_once_with_a_status() {
        let (client, api) = MockApi::start();
        let maps = Api::<ConfigMap>::namespaced(client, "a");
        api.fail_once(
            "GET",
            "/api/v1/namespaces/a/configmaps/m",
            503,
            "etcd is down",
        );
        let failed = maps.get_opt("m").await;
        assert!(
            matches!(failed, Err(kube::Error::Api(s)) if s.code == 503 && s.message == "etcd is down")
        );
        assert!(maps.get_opt("m").await.expect("then answered").is_none());
    }
}
