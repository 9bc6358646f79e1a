//! Label selectors as Kubernetes evaluates them, for selectors windlass reads itself
//! (InstallPolicies' namespaces, Fleets' and waves' member clusters).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Whether `selector` matches `labels`: every `matchLabels` pair and every expression holds
/// (an empty selector matches everything).
pub fn label_selector_matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let labels_match = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let expressions_match = selector.match_expressions.iter().flatten().all(|e| {
        let values = e.values.as_deref().unwrap_or_default();
        let value = labels.get(&e.key);
        match e.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            // An operator Kubernetes does not know matches nothing, rather than everything.
            _ => false,
        }
    });
    labels_match && expressions_match
}
