//! Status conditions shared by every kind, and the one helper that merges them.

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `True`, `False` or `Unknown`, as Kubernetes conditions use them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

/// One observation about an object, in the shape `kubectl wait --for=condition=...` reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// CamelCase condition name, for example `Ready` or `ResolutionFailed`.
    #[serde(rename = "type")]
    pub type_: String,
    pub status: ConditionStatus,
    /// CamelCase reason a program can match on.
    pub reason: String,
    /// Explanation for a person.
    #[serde(default)]
    pub message: String,
    /// The `metadata.generation` this condition was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When `status` last changed (not when the condition was last written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

impl Condition {
    pub fn new(
        type_: &str,
        status: ConditionStatus,
        reason: &str,
        message: impl Into<String>,
    ) -> Condition {
        Condition {
            type_: type_.to_string(),
            status,
            reason: reason.to_string(),
            message: message.into(),
            observed_generation: None,
            last_transition_time: None,
        }
    }

    pub fn observed(mut self, generation: Option<i64>) -> Condition {
        self.observed_generation = generation;
        self
    }
}

/// Merges `new` into `conditions` by type. `lastTransitionTime` moves only when the status
/// changes, so a reconcile that learns nothing new produces an identical list (and no write).
/// Returns whether anything changed.
pub fn set_condition(conditions: &mut Vec<Condition>, mut new: Condition, now: Timestamp) -> bool {
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        Some(existing) => {
            new.last_transition_time = if existing.status == new.status {
                existing.last_transition_time.clone()
            } else {
                Some(Time(now))
            };
            if *existing == new {
                return false;
            }
            *existing = new;
            true
        }
        None => {
            new.last_transition_time = Some(Time(now));
            conditions.push(new);
            conditions.sort_by(|a, b| a.type_.cmp(&b.type_));
            true
        }
    }
}

/// The condition of the given type, if present.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Schema attribute for condition lists: a list-map keyed by `type`, so server-side apply merges
/// conditions by type instead of replacing the list.
pub(crate) fn conditions_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut schema = generator.subschema_for::<Vec<Condition>>();
    schema.insert("x-kubernetes-list-type".into(), "map".into());
    schema.insert(
        "x-kubernetes-list-map-keys".into(),
        serde_json::json!(["type"]),
    );
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).unwrap()
    }

    #[test]
    fn transition_time_moves_only_when_status_changes() {
        let mut conditions = Vec::new();
        assert!(set_condition(
            &mut conditions,
            Condition::new("Ready", ConditionStatus::False, "Installing", "a"),
            at(10)
        ));
        assert_eq!(conditions[0].last_transition_time, Some(Time(at(10))));

        // Same status, new message: written, transition time kept.
        assert!(set_condition(
            &mut conditions,
            Condition::new("Ready", ConditionStatus::False, "Installing", "b"),
            at(20)
        ));
        assert_eq!(conditions[0].last_transition_time, Some(Time(at(10))));
        assert_eq!(conditions[0].message, "b");

        // Nothing new: no change reported, so the caller skips the write.
        assert!(!set_condition(
            &mut conditions,
            Condition::new("Ready", ConditionStatus::False, "Installing", "b"),
            at(30)
        ));

        assert!(set_condition(
            &mut conditions,
            Condition::new("Ready", ConditionStatus::True, "Succeeded", ""),
            at(40)
        ));
        assert_eq!(conditions[0].last_transition_time, Some(Time(at(40))));
    }

    #[test]
    fn conditions_are_kept_sorted_by_type() {
        let mut conditions = Vec::new();
        set_condition(
            &mut conditions,
            Condition::new("Ready", ConditionStatus::True, "A", ""),
            at(1),
        );
        set_condition(
            &mut conditions,
            Condition::new("Progressing", ConditionStatus::True, "B", ""),
            at(1),
        );
        let types: Vec<_> = conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["Progressing", "Ready"]);
    }
}
