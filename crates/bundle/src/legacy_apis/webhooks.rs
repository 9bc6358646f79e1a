//! admissionregistration.k8s.io/v1beta1 webhook configurations -> v1.
//!
//! The fields are the same, but v1 changed four defaults (failurePolicy Ignore -> Fail,
//! matchPolicy Exact -> Equivalent, timeoutSeconds 30 -> 10, admissionReviewVersions
//! [v1beta1] -> required) and no longer accepts sideEffects Unknown or Some. Writing the
//! v1beta1 defaults out keeps the webhook behaving as its author tested it; side effects cannot
//! be guessed, so a webhook without a v1 value is refused.

use serde_json::{Map, Value, json};

use super::{Subject, set_api};
use crate::crd::{ConvertError, Recorder};

const V1: &str = "admissionregistration.k8s.io/v1";

pub(super) fn to_v1(
    out: &mut Map<String, Value>,
    subject: &Subject<'_>,
    rec: &mut Recorder,
) -> Result<(), ConvertError> {
    let hooks = match out.get_mut("webhooks") {
        None | Some(Value::Null) => None,
        Some(Value::Array(hooks)) => Some(hooks),
        Some(_) => return Err(subject.refuse("webhooks", "must be a list")),
    };
    for (i, hook) in hooks.into_iter().flatten().enumerate() {
        let path = format!("webhooks[{i}]");
        let Some(hook) = hook.as_object_mut() else {
            return Err(subject.refuse(&path, "must be a map"));
        };
        match hook.get("sideEffects").and_then(Value::as_str) {
            Some("None" | "NoneOnDryRun") => {}
            other => {
                let shown = other.unwrap_or("unset, which v1beta1 read as Unknown");
                return Err(subject.refuse(
                    &format!("{path}.sideEffects"),
                    format!("{shown}: v1 accepts only None or NoneOnDryRun, which only the webhook's author can vouch for"),
                ));
            }
        }
        let defaults = [
            ("admissionReviewVersions", json!(["v1beta1"])),
            ("failurePolicy", json!("Ignore")),
            ("matchPolicy", json!("Exact")),
            ("timeoutSeconds", json!(30)),
        ];
        for (field, value) in defaults {
            if !hook.contains_key(field) {
                rec.record(
                    &format!("{path}.{field}"),
                    format!("set to {value}"),
                    "the v1beta1 default; v1 defaults differently",
                );
                hook.insert(field.into(), value);
            }
        }
    }
    set_api(out, V1, rec);
    Ok(())
}
