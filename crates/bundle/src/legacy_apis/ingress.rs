//! networking.k8s.io/v1beta1 and extensions/v1beta1 Ingress -> networking.k8s.io/v1.
//!
//! A backend's `serviceName`/`servicePort` became `service.name` and `service.port.number` or
//! `.name`; `spec.backend` became `spec.defaultBackend`; `pathType` became required, and
//! v1beta1 defaulted it to ImplementationSpecific.

use serde_json::{Map, Value, json};

use super::{Subject, set_api};
use crate::crd::{ConvertError, Recorder};

pub(super) fn to_v1(
    out: &mut Map<String, Value>,
    subject: &Subject<'_>,
    rec: &mut Recorder,
) -> Result<(), ConvertError> {
    let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut) else {
        return Err(subject.refuse("spec", "missing or not a map"));
    };
    if let Some(at) = spec.keys().position(|k| k == "backend") {
        let mut backend = spec.shift_remove("backend").unwrap_or_default();
        convert_backend(&mut backend, "spec.backend", subject, rec)?;
        spec.shift_insert(at, "defaultBackend".into(), backend);
        rec.record(
            "spec.backend",
            "renamed to spec.defaultBackend",
            "the v1 field name",
        );
    }
    let rules = spec.get_mut("rules").and_then(Value::as_array_mut);
    for (i, rule) in rules.into_iter().flatten().enumerate() {
        let paths = rule
            .pointer_mut("/http/paths")
            .and_then(Value::as_array_mut);
        for (j, p) in paths.into_iter().flatten().enumerate() {
            let at = format!("spec.rules[{i}].http.paths[{j}]");
            let Some(p) = p.as_object_mut() else {
                return Err(subject.refuse(&at, "must be a map"));
            };
            if !p.contains_key("pathType") {
                p.insert("pathType".into(), json!("ImplementationSpecific"));
                rec.record(
                    &format!("{at}.pathType"),
                    "set to ImplementationSpecific",
                    "the v1beta1 default; v1 requires it",
                );
            }
            if let Some(backend) = p.get_mut("backend") {
                convert_backend(backend, &format!("{at}.backend"), subject, rec)?;
            }
        }
    }
    set_api(out, "networking.k8s.io/v1", rec);
    Ok(())
}

fn convert_backend(
    backend: &mut Value,
    path: &str,
    subject: &Subject<'_>,
    rec: &mut Recorder,
) -> Result<(), ConvertError> {
    let Some(b) = backend.as_object_mut() else {
        return Err(subject.refuse(path, "must be a map"));
    };
    if !b.contains_key("serviceName") && !b.contains_key("servicePort") {
        return Ok(());
    }
    let name = b.shift_remove("serviceName").unwrap_or(Value::Null);
    let port = match b.shift_remove("servicePort") {
        Some(Value::Number(n)) => json!({ "number": n }),
        Some(Value::String(s)) => match s.parse::<u16>() {
            // A quoted number was never a valid port name; it is the number its author meant.
            Ok(n) => json!({ "number": n }),
            Err(_) => json!({ "name": s }),
        },
        _ => {
            return Err(subject.refuse(
                &format!("{path}.servicePort"),
                "missing or neither a number nor a name",
            ));
        }
    };
    if !name.is_string() {
        return Err(subject.refuse(&format!("{path}.serviceName"), "missing or not a string"));
    }
    b.insert("service".into(), json!({ "name": name, "port": port }));
    rec.record(
        path,
        "serviceName/servicePort moved to service.name/service.port",
        "the v1 layout",
    );
    Ok(())
}
