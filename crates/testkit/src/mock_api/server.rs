//! The mock's answers: routing a path to a resource, and each verb as the API server treats it.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{
    APPLY_PATCH, JSON_PATCH, MERGE_PATCH, Request,
    resources::{Resource, built_in, discovery_document, served_by_crd, split_api_version},
    semantics::{fields_v1, json_patch, matches_selector, merge_patch},
};

/// One answer a test scripted: the next request with this method and path fails so.
pub(super) struct Failure {
    pub(super) method: String,
    pub(super) path: String,
    pub(super) code: u16,
    pub(super) message: String,
}

pub(super) type Key = (String, String, Option<String>, String);

#[derive(Default)]
pub(super) struct State {
    pub(super) objects: BTreeMap<Key, Value>,
    pub(super) log: Vec<Request>,
    pub(super) unexpected: Vec<String>,
    pub(super) failures: Vec<Failure>,
    resource_version: u64,
    uids: u64,
}

/// What a path names.
enum Route {
    Discovery(String),
    Objects(Target),
}

struct Target {
    resource: Resource,
    namespace: Option<String>,
    name: Option<String>,
    subresource: Option<String>,
}

impl Target {
    fn key(&self) -> Key {
        (
            self.resource.group.clone(),
            self.resource.plural.clone(),
            self.namespace.clone(),
            self.name.clone().unwrap_or_default(),
        )
    }
}

/// A `Status` object as the API server sends with an error.
fn status(code: u16, message: &str, details: Value) -> Value {
    let reason = match code {
        400 => "BadRequest",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        409 if message.contains("already exists") => "AlreadyExists",
        409 => "Conflict",
        422 => "Invalid",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        _ => "Unknown",
    };
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": reason,
        "details": details, "code": code,
    })
}

fn details(target: &Target) -> Value {
    let name = target.name.clone().unwrap_or_default();
    if target.resource.group.is_empty() {
        json!({"name": name, "kind": target.resource.plural})
    } else {
        json!({"name": name, "group": target.resource.group, "kind": target.resource.plural})
    }
}

fn qualified(resource: &Resource) -> String {
    if resource.group.is_empty() {
        resource.plural.clone()
    } else {
        format!("{}.{}", resource.plural, resource.group)
    }
}

fn not_found(target: &Target) -> (u16, Value) {
    let message = format!(
        "{} \"{}\" not found",
        qualified(&target.resource),
        target.name.as_deref().unwrap_or_default()
    );
    (404, status(404, &message, details(target)))
}

fn conflict(target: &Target) -> (u16, Value) {
    let message = format!(
        "Operation cannot be fulfilled on {} \"{}\": the object has been modified; please apply \
         your changes to the latest version and try again",
        qualified(&target.resource),
        target.name.as_deref().unwrap_or_default()
    );
    (409, status(409, &message, details(target)))
}

/// Everything of an object but its metadata and status: what `metadata.generation` counts.
fn content(object: &Value) -> Value {
    let mut content = object.clone();
    if let Some(map) = content.as_object_mut() {
        map.remove("metadata");
        map.remove("status");
    }
    content
}

impl State {
    fn resources(&self) -> Vec<Resource> {
        let mut all = built_in();
        for ((group, plural, _, _), crd) in &self.objects {
            if group == "apiextensions.k8s.io" && plural == "customresourcedefinitions" {
                all.extend(served_by_crd(crd));
            }
        }
        all
    }

    pub(super) fn key_of(&self, object: &Value) -> Result<Key, String> {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let kind = object["kind"].as_str().unwrap_or_default();
        let (group, version) = split_api_version(api_version);
        let resource = self
            .resources()
            .into_iter()
            .find(|r| r.group == group && r.version == version && r.kind == kind)
            .ok_or_else(|| format!("no resource serves {api_version} {kind}"))?;
        let namespace = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .filter(|_| resource.namespaced)
            .map(str::to_string);
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .ok_or("no metadata.name")?;
        Ok((resource.group, resource.plural, namespace, name.into()))
    }

    fn route(&self, path: &str) -> Option<Route> {
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let (group, version, rest) = match segments.as_slice() {
            ["api", version, rest @ ..] => ("", *version, rest),
            ["apis", group, version, rest @ ..] => (*group, *version, rest),
            _ => return None,
        };
        let api_version = if group.is_empty() {
            version.to_string()
        } else {
            format!("{group}/{version}")
        };
        let (namespace, rest) = match rest {
            [] => return Some(Route::Discovery(api_version)),
            ["namespaces", namespace, rest @ ..] if !rest.is_empty() => {
                (Some(namespace.to_string()), rest)
            }
            rest => (None, rest),
        };
        let resource = self
            .resources()
            .into_iter()
            .find(|r| r.group == group && r.version == version && r.plural == rest[0])?;
        if namespace.is_some() && !resource.namespaced {
            return None;
        }
        Some(Route::Objects(Target {
            resource,
            namespace,
            name: rest.get(1).map(|s| s.to_string()),
            subresource: rest.get(2).map(|s| s.to_string()),
        }))
    }

    /// Answers one request and logs it.
    pub(super) fn answer(&mut self, parts: &http::request::Parts, bytes: &[u8]) -> (u16, Value) {
        let method = parts.method.as_str().to_string();
        let path = parts.uri.path().to_string();
        let query: BTreeMap<String, String> =
            form_urlencoded::parse(parts.uri.query().unwrap_or_default().as_bytes())
                .into_owned()
                .collect();
        let content_type = parts
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = serde_json::from_slice(bytes).unwrap_or(Value::Null);
        let (code, answer) = self.respond(&method, &path, &query, content_type.as_deref(), &body);
        let request = Request {
            method,
            path,
            query,
            content_type,
            body,
            code,
        };
        if answer.pointer("/details/unmodeled") == Some(&json!(true)) {
            let why = answer["message"].as_str().unwrap_or("not modelled");
            self.unexpected.push(format!("{request}: {why}"));
        }
        self.log.push(request);
        (code, answer)
    }

    fn respond(
        &mut self,
        method: &str,
        path: &str,
        query: &BTreeMap<String, String>,
        content_type: Option<&str>,
        body: &Value,
    ) -> (u16, Value) {
        if let Some(at) = self
            .failures
            .iter()
            .position(|f| f.method == method && f.path == path)
        {
            let failure = self.failures.remove(at);
            return (
                failure.code,
                status(failure.code, &failure.message, json!({})),
            );
        }
        let unknown = || {
            let message = "the server could not find the requested resource";
            (404, status(404, message, json!({"unmodeled": true})))
        };
        let Some(route) = self.route(path) else {
            return unknown();
        };
        let target = match route {
            Route::Discovery(api_version) if method == "GET" => {
                let resources = self.resources();
                if !resources.iter().any(|r| r.api_version() == api_version) {
                    return unknown();
                }
                return (200, discovery_document(&api_version, &resources));
            }
            Route::Discovery(_) => return unknown(),
            Route::Objects(target) => target,
        };
        if query.get("watch").is_some_and(|w| w == "true") {
            return unknown();
        }
        match (method, &target.name) {
            ("GET", None) => self.list(&target, query),
            ("GET", Some(_)) => match self.objects.get(&target.key()) {
                Some(object) if target.subresource.is_none() => (200, object.clone()),
                _ => not_found(&target),
            },
            ("POST", None) => self.create(&target, body),
            ("PATCH", Some(_)) => {
                let dry_run = query.contains_key("dryRun");
                match content_type {
                    Some(APPLY_PATCH) => self.apply(&target, query, body, dry_run),
                    Some(MERGE_PATCH) => {
                        let mut patch = body.clone();
                        let precondition = patch
                            .get_mut("metadata")
                            .and_then(Value::as_object_mut)
                            .and_then(|meta| meta.remove("resourceVersion"));
                        self.patch(&target, precondition, dry_run, |object| {
                            merge_patch(object, &patch);
                            Ok(())
                        })
                    }
                    Some(JSON_PATCH) => self.patch(&target, None, dry_run, |object| {
                        *object = json_patch(object, body)?;
                        Ok(())
                    }),
                    _ => (
                        415,
                        status(415, "unsupported patch type", json!({"unmodeled": true})),
                    ),
                }
            }
            ("DELETE", Some(_)) => match self.objects.remove(&target.key()) {
                Some(_) => {
                    let success = json!({
                        "kind": "Status", "apiVersion": "v1", "metadata": {},
                        "status": "Success", "details": details(&target),
                    });
                    (200, success)
                }
                None => not_found(&target),
            },
            _ => (
                405,
                status(
                    405,
                    "the server does not allow this method on the requested resource",
                    json!({"unmodeled": true}),
                ),
            ),
        }
    }

    fn list(&self, target: &Target, query: &BTreeMap<String, String>) -> (u16, Value) {
        let selector = query.get("labelSelector").map_or("", String::as_str);
        let group = target.resource.group.as_str();
        let built_in_type = group.is_empty() || group == "apps" || group.ends_with("k8s.io");
        let items: Vec<Value> = self
            .objects
            .iter()
            .filter(|((group, plural, namespace, _), _)| {
                *group == target.resource.group
                    && *plural == target.resource.plural
                    && (target.namespace.is_none() || *namespace == target.namespace)
            })
            .map(|(_, object)| object)
            .filter(|object| {
                let labels = object
                    .pointer("/metadata/labels")
                    .and_then(|l| serde_json::from_value(l.clone()).ok())
                    .unwrap_or_default();
                matches_selector(&labels, selector)
            })
            .map(|object| {
                let mut item = object.clone();
                // Lists of built-in kinds leave each item's type out, as the API server does.
                if built_in_type && let Some(map) = item.as_object_mut() {
                    map.remove("apiVersion");
                    map.remove("kind");
                }
                item
            })
            .collect();
        let list = json!({
            "apiVersion": target.resource.api_version(),
            "kind": format!("{}List", target.resource.kind),
            "metadata": {"resourceVersion": self.resource_version.to_string()},
            "items": items,
        });
        (200, list)
    }

    /// Server metadata for an object stored for the first time.
    fn admit(&mut self, mut object: Value, key: &Key) -> Value {
        self.uids += 1;
        let uid = format!("00000000-0000-4000-8000-{:012}", self.uids);
        let meta = object
            .pointer_mut("/metadata")
            .and_then(Value::as_object_mut)
            .expect("an object with metadata");
        meta.entry("uid").or_insert(json!(uid));
        meta.entry("creationTimestamp")
            .or_insert(json!("2026-01-01T00:00:00Z"));
        meta.insert("generation".into(), json!(1));
        if let Some(namespace) = &key.2 {
            meta.insert("namespace".into(), json!(namespace));
        }
        self.bump(&mut object);
        object
    }

    /// Stores `object` as written by someone the test plays (another controller, a person).
    pub(super) fn put(&mut self, object: Value, key: Key) -> Value {
        let mut object = object;
        match self.objects.get(&key).cloned() {
            None => object = self.admit(object, &key),
            Some(live) => {
                for field in ["uid", "creationTimestamp", "generation"] {
                    if let Some(value) = live["metadata"].get(field) {
                        object["metadata"][field] = value.clone();
                    }
                }
                if content(&live) != content(&object) {
                    let generation = live["metadata"]["generation"].as_i64().unwrap_or(1);
                    object["metadata"]["generation"] = json!(generation + 1);
                }
                self.bump(&mut object);
            }
        }
        self.objects.insert(key, object.clone());
        object
    }

    pub(super) fn bump(&mut self, object: &mut Value) {
        self.resource_version += 1;
        object["metadata"]["resourceVersion"] = json!(self.resource_version.to_string());
    }

    fn create(&mut self, target: &Target, body: &Value) -> (u16, Value) {
        let mut object = body.clone();
        if object.pointer("/metadata/name").is_none() {
            let prefix = object
                .pointer("/metadata/generateName")
                .and_then(Value::as_str)
                .unwrap_or("object-")
                .to_string();
            object["metadata"]["name"] = json!(format!("{prefix}{}", self.uids + 1));
        }
        let named = Target {
            resource: target.resource.clone(),
            namespace: target.namespace.clone(),
            name: object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .map(str::to_string),
            subresource: None,
        };
        let key = named.key();
        if self.objects.contains_key(&key) {
            let message = format!(
                "{} \"{}\" already exists",
                qualified(&named.resource),
                key.3
            );
            return (409, status(409, &message, details(&named)));
        }
        let stored = self.admit(object, &key);
        self.objects.insert(key, stored.clone());
        (201, stored)
    }

    /// Server-side apply: the applied fields replace what the manager applied before; the
    /// status (on the main resource) and the server's metadata stay.
    fn apply(
        &mut self,
        target: &Target,
        query: &BTreeMap<String, String>,
        body: &Value,
        dry_run: bool,
    ) -> (u16, Value) {
        let Some(manager) = query.get("fieldManager") else {
            let message = "PATCH /apply requires fieldManager";
            return (400, status(400, message, details(target)));
        };
        let existing = self.objects.get(&target.key()).cloned();
        if let Some(wanted) = body
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
        {
            let live = existing
                .as_ref()
                .and_then(|e| e.pointer("/metadata/resourceVersion"))
                .and_then(Value::as_str);
            if live != Some(wanted) {
                return conflict(target);
            }
        }
        let status_only = target.subresource.as_deref() == Some("status");
        let (mut object, applied) = match (&existing, status_only) {
            (None, true) => return not_found(target),
            (Some(live), true) => {
                let mut object = live.clone();
                object["status"] = body.get("status").cloned().unwrap_or(Value::Null);
                let applied = json!({"status": body.get("status")});
                (object, applied)
            }
            (_, false) => {
                let mut object = body.clone();
                if let Some(live) = &existing {
                    for field in [
                        "uid",
                        "creationTimestamp",
                        "generation",
                        "resourceVersion",
                        "finalizers",
                        "managedFields",
                    ] {
                        if let Some(value) = live["metadata"].get(field) {
                            object["metadata"][field] = value.clone();
                        }
                    }
                    if let Some(status) = live.get("status") {
                        object["status"] = status.clone();
                    }
                }
                (object, body.clone())
            }
        };
        let entry = json!({
            "manager": manager,
            "operation": "Apply",
            "apiVersion": body["apiVersion"],
            "fieldsType": "FieldsV1",
            "fieldsV1": fields_v1(&applied),
        });
        let mut entries: Vec<Value> = object
            .pointer("/metadata/managedFields")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let subresource = target.subresource.clone();
        entries.retain(|e| {
            !(e["manager"] == json!(manager)
                && e["operation"] == "Apply"
                && e.get("subresource").and_then(Value::as_str) == subresource.as_deref())
        });
        let mut entry = entry;
        if let Some(sub) = &subresource {
            entry["subresource"] = json!(sub);
        }
        entries.push(entry);
        object["metadata"]["managedFields"] = Value::Array(entries);
        self.commit(target, existing, &mut object, dry_run);
        (200, object)
    }

    /// A merge or JSON patch of an existing object (with the resourceVersion precondition a
    /// merge patch may carry).
    fn patch(
        &mut self,
        target: &Target,
        precondition: Option<Value>,
        dry_run: bool,
        change: impl FnOnce(&mut Value) -> Result<(), String>,
    ) -> (u16, Value) {
        let Some(existing) = self.objects.get(&target.key()).cloned() else {
            return not_found(target);
        };
        if let Some(wanted) = precondition
            && Some(&wanted) != existing.pointer("/metadata/resourceVersion")
        {
            return conflict(target);
        }
        let mut object = existing.clone();
        if let Err(why) = change(&mut object) {
            let message =
                format!("the server rejected our request due to an error in our request: {why}");
            return (422, status(422, &message, details(target)));
        }
        self.commit(target, Some(existing), &mut object, dry_run);
        (200, object)
    }

    /// Stores `object` (unless a dry run), counting a generation when its content changed and
    /// a resourceVersion when anything did.
    fn commit(
        &mut self,
        target: &Target,
        existing: Option<Value>,
        object: &mut Value,
        dry_run: bool,
    ) {
        if let Some(namespace) = &target.namespace {
            object["metadata"]["namespace"] = json!(namespace);
        }
        match &existing {
            None => {
                let admitted = self.admit(object.clone(), &target.key());
                *object = admitted;
            }
            Some(live) if *live == *object => return,
            Some(live) => {
                if content(live) != content(object) {
                    let generation = live["metadata"]["generation"].as_i64().unwrap_or(1);
                    object["metadata"]["generation"] = json!(generation + 1);
                }
                self.bump(object);
            }
        }
        if !dry_run {
            self.objects.insert(target.key(), object.clone());
        }
    }
}
