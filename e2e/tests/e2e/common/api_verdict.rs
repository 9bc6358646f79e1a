//! What the real API server says about an object under a schema, asked with a server-side
//! dry-run create (no ratcheting, unlike an update of an unchanged object): the fields strict
//! field validation reports as unknown (what the schema would prune), then the fields the
//! validation refuses, CEL rules included.

use std::collections::BTreeSet;

use kube::Client;
use kube::api::PostParams;
use kube::core::Request;
use serde_json::Value;

/// The API server's verdict on one object.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ApiVerdict {
    /// Unknown fields, normalised (see [`normalise`]).
    pub pruned: BTreeSet<String>,
    /// Fields with validation errors, normalised; `<root>` for the object itself.
    pub invalid: BTreeSet<String>,
    /// The error messages, for the report.
    pub messages: Vec<String>,
}

impl ApiVerdict {
    pub fn refuses(&self) -> bool {
        !self.pruned.is_empty() || !self.invalid.is_empty()
    }
}

/// A field path in one notation for both sides: map keys and list indexes as `.key`, no leading
/// dot, `<root>` for the object itself.
pub fn normalise(path: &str) -> String {
    let mut out = String::new();
    for c in path.trim().trim_start_matches('.').chars() {
        match c {
            '[' => out.push('.'),
            ']' => {}
            c => out.push(c),
        }
    }
    let out = out.trim_matches('.').to_string();
    if out.is_empty() || out == "<nil>" {
        "<root>".into()
    } else {
        out
    }
}

/// The collection URL of a resource.
pub fn collection(group: &str, version: &str, plural: &str, namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) => format!("/apis/{group}/{version}/namespaces/{ns}/{plural}"),
        None => format!("/apis/{group}/{version}/{plural}"),
    }
}

/// POSTs `object` to `url` with the given field validation; the created object or the API
/// server's error.
pub async fn create(
    client: &Client,
    url: &str,
    object: &Value,
    dry_run: bool,
    field_validation: &str,
) -> Result<Value, kube::Error> {
    let params = PostParams {
        dry_run,
        field_manager: Some("windlass-e2e".into()),
    };
    let mut request = Request::new(url)
        .create(&params, object.to_string().into_bytes())
        .map_err(kube::Error::BuildRequest)?;
    let uri = format!("{}&fieldValidation={field_validation}", request.uri());
    *request.uri_mut() = uri.parse().expect("a valid URI");
    client.request::<Value>(request).await
}

/// Unknown fields named in a strict-decoding error message.
fn unknown_fields(message: &str) -> Vec<String> {
    let mut out = Vec::new();
    for marker in ["unknown field \"", "unknown field \\\""] {
        let mut rest = message;
        while let Some(i) = rest.find(marker) {
            rest = &rest[i + marker.len()..];
            let end = rest.find(['"', '\\']).unwrap_or(rest.len());
            out.push(rest[..end].to_string());
            rest = &rest[end..];
        }
    }
    out
}

/// Adds what one dry-run create said to `v`; true when strict field validation refused unknown
/// fields (validation then did not run).
fn record(v: &mut ApiVerdict, result: Result<Value, kube::Error>) -> Result<bool, String> {
    match result {
        Ok(_) => Ok(false),
        Err(kube::Error::Api(status)) if status.code == 400 || status.code == 422 => {
            let unknown = unknown_fields(&status.message);
            let strict = !unknown.is_empty();
            v.pruned.extend(unknown.iter().map(|f| normalise(f)));
            for cause in status.details.iter().flat_map(|d| d.causes.iter()) {
                if cause
                    .message
                    .starts_with("some validation rules were not checked")
                {
                    continue;
                }
                if cause.message.contains("field not declared in schema") {
                    v.pruned.insert(normalise(&cause.field));
                    continue;
                }
                if !strict {
                    v.invalid.insert(normalise(&cause.field));
                }
            }
            if v.invalid.is_empty() && v.pruned.is_empty() {
                v.invalid.insert("<root>".into());
            }
            v.messages.push(status.message.clone());
            Ok(strict)
        }
        Err(e) => Err(e.to_string()),
    }
}

/// The verdict on `object` (its apiVersion already pointing at `url`'s version).
pub async fn verdict(client: &Client, url: &str, object: &Value) -> Result<ApiVerdict, String> {
    let mut v = ApiVerdict::default();
    let strict = create(client, url, object, true, "Strict").await;
    if record(&mut v, strict)? {
        // Unknown fields stop the request before validation: ask again, letting them go.
        let lenient = create(client, url, object, true, "Ignore").await;
        record(&mut v, lenient)?;
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::{normalise, unknown_fields};

    #[test]
    fn paths_and_messages() {
        assert_eq!(normalise(".spec.list[0].a"), "spec.list.0.a");
        assert_eq!(normalise("spec.labels[app]"), "spec.labels.app");
        assert_eq!(normalise(""), "<root>");
        assert_eq!(
            unknown_fields(
                r#"strict decoding error: unknown field "spec.a", unknown field "spec.b[0].c""#
            ),
            ["spec.a", "spec.b[0].c"]
        );
    }
}
