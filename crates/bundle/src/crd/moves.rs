//! Field moves from `apiextensions.k8s.io/v1beta1` to `v1`, and the defaults v1beta1 applied
//! that v1 does not (`scope`, a schema per version, pruning, conversion review versions).

use serde_json::{Map, Value, json};

use super::change::{child, index};
use super::schema::{self, PRESERVE, Unrepairable};
use super::{API_V1, ConvertError, Recorder};

/// Keys of a v1beta1 spec that this module moves or drops; everything else is carried over.
const MOVED: &[&str] = &[
    "group",
    "names",
    "scope",
    "version",
    "versions",
    "validation",
    "subresources",
    "additionalPrinterColumns",
    "conversion",
    "preserveUnknownFields",
];

fn invalid(rec: &Recorder, path: &str, reason: impl Into<String>) -> ConvertError {
    ConvertError::Crd {
        crd: rec.object().to_string(),
        path: path.to_string(),
        reason: reason.into(),
    }
}

fn unrepairable(rec: &Recorder, e: Unrepairable) -> ConvertError {
    invalid(rec, &e.path, e.reason)
}

/// v1beta1 -> v1, in place.
pub(super) fn from_v1beta1(
    crd: &mut Map<String, Value>,
    rec: &mut Recorder,
) -> Result<(), ConvertError> {
    approval_for_protected_group(crd, rec);
    crd.insert("apiVersion".into(), Value::String(API_V1.into()));
    rec.record(
        "apiVersion",
        format!("set to {API_V1}"),
        "v1beta1 CRDs are no longer served",
    );
    let Some(Value::Object(spec)) = crd.get_mut("spec") else {
        return Err(invalid(rec, "spec", "missing or not a map"));
    };
    // v1beta1 kept unknown fields unless the author opted into pruning.
    let keep_unknown = spec.get("preserveUnknownFields") != Some(&Value::Bool(false));
    if spec.contains_key("preserveUnknownFields") {
        rec.record(
            "spec.preserveUnknownFields",
            "removed",
            "v1 has no such switch; unknown fields are kept through the schema",
        );
    }
    let top_schema = match spec
        .get_mut("validation")
        .and_then(|v| v.get_mut("openAPIV3Schema"))
    {
        Some(s) => {
            schema::repair(s, "spec.validation.openAPIV3Schema", keep_unknown, rec)
                .map_err(|e| unrepairable(rec, e))?;
            Some(s.clone())
        }
        None => None,
    };
    let top_sub = spec.get("subresources").cloned();
    let top_columns = spec
        .get("additionalPrinterColumns")
        .map(|c| columns_to_v1(c, "spec.additionalPrinterColumns", rec));
    let mut versions = listed_versions(spec, rec)?;
    for (i, v) in versions.iter_mut().enumerate() {
        let path = index("spec", "versions", i);
        let Some(vm) = v.as_object_mut() else {
            return Err(invalid(rec, &path, "a version must be a map"));
        };
        let own_schema = match vm
            .get_mut("schema")
            .and_then(|s| s.get_mut("openAPIV3Schema"))
        {
            Some(s) => {
                let at = child(&path, "schema.openAPIV3Schema");
                schema::repair(s, &at, keep_unknown, rec).map_err(|e| unrepairable(rec, e))?;
                Some(s.clone())
            }
            None => None,
        };
        let own_columns = vm
            .get("additionalPrinterColumns")
            .map(|c| columns_to_v1(c, &child(&path, "additionalPrinterColumns"), rec));
        let own_sub = vm.get("subresources").cloned();
        // v1 spells every version out; a per-version value wins over the top-level one.
        let mut out = Map::new();
        for (k, val) in vm.iter() {
            if !matches!(
                k.as_str(),
                "schema" | "subresources" | "additionalPrinterColumns"
            ) {
                out.insert(k.clone(), val.clone());
            }
        }
        if !out.contains_key("served") {
            out.insert("served".into(), Value::Bool(true));
            rec.record(&child(&path, "served"), "set to true", "v1 requires it");
        }
        if !out.contains_key("storage") {
            out.insert("storage".into(), Value::Bool(false));
        }
        let schema = match own_schema.or_else(|| top_schema.clone()) {
            Some(s) => s,
            None => open_schema(&path, rec),
        };
        out.insert("schema".into(), json!({ "openAPIV3Schema": schema }));
        if let Some(sub) = own_sub.or_else(|| top_sub.clone()) {
            out.insert("subresources".into(), sub);
        }
        if let Some(cols) = own_columns.or_else(|| top_columns.clone()) {
            out.insert("additionalPrinterColumns".into(), cols);
        }
        *vm = out;
    }
    one_storage_version(
        &mut versions,
        spec.get("version").and_then(Value::as_str),
        rec,
    );
    let conversion = spec
        .get("conversion")
        .map(|c| conversion_to_v1(c, "spec.conversion", rec));
    let mut out = Map::new();
    for k in ["group", "names"] {
        if let Some(v) = spec.get(k) {
            out.insert(k.into(), v.clone());
        }
    }
    out.insert("scope".into(), Value::String(scope(spec, rec)));
    out.insert("versions".into(), Value::Array(versions));
    if let Some(c) = conversion {
        out.insert("conversion".into(), c);
    }
    for (k, v) in spec.iter() {
        if !MOVED.contains(&k.as_str()) {
            out.insert(k.clone(), v.clone());
        }
    }
    *spec = out;
    Ok(())
}

/// A v1 CRD: repairs in place only what the API server would refuse, so a valid one comes back
/// byte for byte.
pub(super) fn tidy_v1(
    crd: &mut Map<String, Value>,
    rec: &mut Recorder,
) -> Result<(), ConvertError> {
    approval_for_protected_group(crd, rec);
    let Some(Value::Object(spec)) = crd.get_mut("spec") else {
        return Err(invalid(rec, "spec", "missing or not a map"));
    };
    let keep_unknown = spec.get("preserveUnknownFields") == Some(&Value::Bool(true));
    if keep_unknown {
        spec.insert("preserveUnknownFields".into(), Value::Bool(false));
        rec.record(
            "spec.preserveUnknownFields",
            "set to false",
            "v1 refuses true on new CRDs; unknown fields are kept through the schema instead",
        );
    }
    if spec
        .get("scope")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        let s = scope(spec, rec);
        spec.insert("scope".into(), Value::String(s));
    }
    let Some(Value::Array(versions)) = spec.get_mut("versions") else {
        return Err(invalid(
            rec,
            "spec.versions",
            "v1 requires a list of versions",
        ));
    };
    for (i, v) in versions.iter_mut().enumerate() {
        let path = index("spec", "versions", i);
        let Some(vm) = v.as_object_mut() else {
            return Err(invalid(rec, &path, "a version must be a map"));
        };
        match vm
            .get_mut("schema")
            .and_then(|s| s.get_mut("openAPIV3Schema"))
        {
            Some(s) => {
                let at = child(&path, "schema.openAPIV3Schema");
                schema::repair(s, &at, keep_unknown, rec).map_err(|e| unrepairable(rec, e))?;
            }
            None => {
                let open = open_schema(&path, rec);
                vm.insert("schema".into(), json!({ "openAPIV3Schema": open }));
            }
        }
        if let Some(c) = vm.get("additionalPrinterColumns") {
            let fixed = columns_to_v1(c, &child(&path, "additionalPrinterColumns"), rec);
            vm.insert("additionalPrinterColumns".into(), fixed);
        }
    }
    one_storage_version(versions, None, rec);
    if let Some(c) = spec.get("conversion") {
        let fixed = conversion_to_v1(c, "spec.conversion", rec);
        spec.insert("conversion".into(), fixed);
    }
    Ok(())
}

/// Kubernetes' own API groups need an approval annotation in v1 (v1beta1 did not ask for it).
/// A value starting with "unapproved" is the documented way for a CRD outside the Kubernetes
/// project to say it has none.
fn approval_for_protected_group(crd: &mut Map<String, Value>, rec: &mut Recorder) {
    const KEY: &str = "api-approved.kubernetes.io";
    let group = crd
        .get("spec")
        .and_then(|s| s.get("group"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let protected = ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|g| group == *g || group.ends_with(&format!(".{g}")));
    if !protected {
        return;
    }
    let Some(meta) = crd.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if annotations.is_null() {
        *annotations = Value::Object(Map::new());
    }
    let Some(annotations) = annotations.as_object_mut() else {
        return;
    };
    if annotations.contains_key(KEY) {
        return;
    }
    annotations.insert(
        KEY.into(),
        Value::String("unapproved, legacy bundle installed unchanged by windlass".into()),
    );
    rec.record(
        &format!("metadata.annotations[{KEY}]"),
        "set to unapproved",
        "v1 requires it for *.k8s.io and *.kubernetes.io groups; v1beta1 did not",
    );
}

/// `spec.versions`, or the single `spec.version` of older CRDs.
fn listed_versions(
    spec: &Map<String, Value>,
    rec: &mut Recorder,
) -> Result<Vec<Value>, ConvertError> {
    match spec.get("versions") {
        Some(Value::Array(list)) if !list.is_empty() => Ok(list.clone()),
        Some(Value::Array(_)) | None => match spec.get("version").and_then(Value::as_str) {
            Some(name) => {
                rec.record(
                    "spec.version",
                    "moved to spec.versions",
                    "v1 lists every version",
                );
                Ok(vec![
                    json!({ "name": name, "served": true, "storage": true }),
                ])
            }
            None => Err(invalid(
                rec,
                "spec.versions",
                "no version is named (neither spec.version nor spec.versions)",
            )),
        },
        Some(_) => Err(invalid(rec, "spec.versions", "must be a list")),
    }
}

/// v1beta1 defaulted a missing or empty scope to Namespaced; v1 requires it spelt out.
fn scope(spec: &Map<String, Value>, rec: &mut Recorder) -> String {
    match spec.get("scope").and_then(Value::as_str) {
        Some(s) if !s.is_empty() => s.to_string(),
        _ => {
            rec.record(
                "spec.scope",
                "set to Namespaced",
                "v1beta1 defaulted an empty scope; v1 requires one",
            );
            "Namespaced".into()
        }
    }
}

/// A version without a schema accepted any object in v1beta1; v1 requires a schema.
fn open_schema(path: &str, rec: &mut Recorder) -> Value {
    rec.record(
        &child(path, "schema"),
        "set to an open object schema",
        "v1 requires a schema; v1beta1 accepted any object",
    );
    json!({ "type": "object", PRESERVE: true })
}

/// `JSONPath` became `jsonPath`; the position of the key is kept so output stays stable.
fn columns_to_v1(columns: &Value, path: &str, rec: &mut Recorder) -> Value {
    let mut columns = columns.clone();
    let mut renamed = false;
    for col in columns
        .as_array_mut()
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
    {
        if let Some(at) = col.keys().position(|k| k == "JSONPath") {
            let v = col.shift_remove("JSONPath").unwrap_or_default();
            if !col.contains_key("jsonPath") {
                col.shift_insert(at, "jsonPath".into(), v);
            }
            renamed = true;
        }
    }
    if renamed {
        rec.record(path, "JSONPath renamed to jsonPath", "the v1 field name");
    }
    columns
}

/// Exactly one version stores objects: the one v1beta1's `spec.version` named, else the first.
fn one_storage_version(versions: &mut [Value], preferred: Option<&str>, rec: &mut Recorder) {
    let storing: Vec<usize> = (0..versions.len())
        .filter(|&i| versions[i].get("storage") == Some(&Value::Bool(true)))
        .collect();
    if storing.len() == 1 {
        return;
    }
    let named = |i: &usize| {
        versions[*i].get("name").and_then(Value::as_str) == preferred && preferred.is_some()
    };
    let pick = storing
        .iter()
        .copied()
        .find(named)
        .or_else(|| storing.first().copied())
        .or_else(|| (0..versions.len()).find(named))
        .unwrap_or(0);
    for (i, v) in versions.iter_mut().enumerate() {
        if let Some(m) = v.as_object_mut() {
            m.insert("storage".into(), Value::Bool(i == pick));
        }
    }
    rec.record(
        &index("spec", "versions", pick),
        "made the only storage version",
        "v1 requires exactly one storage version",
    );
}

/// `conversion.webhookClientConfig` and `conversionReviewVersions` moved under
/// `conversion.webhook`; v1beta1 defaulted the review versions to `[v1beta1]`.
fn conversion_to_v1(conversion: &Value, path: &str, rec: &mut Recorder) -> Value {
    let Some(c) = conversion.as_object() else {
        return conversion.clone();
    };
    let legacy =
        c.contains_key("webhookClientConfig") || c.contains_key("conversionReviewVersions");
    let webhook = c.get("strategy").and_then(Value::as_str) == Some("Webhook");
    let needs_webhook_block = webhook && !c.contains_key("webhook");
    if !legacy && !needs_webhook_block {
        return conversion.clone();
    }
    let mut out = Map::new();
    out.insert(
        "strategy".into(),
        c.get("strategy")
            .cloned()
            .unwrap_or_else(|| Value::String("None".into())),
    );
    if webhook {
        let mut hook = c
            .get("webhook")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        if let Some(cc) = c.get("webhookClientConfig") {
            hook.insert("clientConfig".into(), cc.clone());
        }
        let reviews = c
            .get("conversionReviewVersions")
            .cloned()
            .unwrap_or_else(|| json!(["v1beta1"]));
        hook.entry("conversionReviewVersions").or_insert(reviews);
        out.insert("webhook".into(), Value::Object(hook));
    }
    for (k, v) in c {
        if !matches!(
            k.as_str(),
            "strategy" | "webhook" | "webhookClientConfig" | "conversionReviewVersions"
        ) {
            out.insert(k.clone(), v.clone());
        }
    }
    rec.record(
        path,
        "webhook settings moved under conversion.webhook",
        "the v1 layout; v1beta1 defaulted conversionReviewVersions to [v1beta1]",
    );
    Value::Object(out)
}
