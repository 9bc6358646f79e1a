//! A release update's plan as a person approves it: per run level, the objects it creates,
//! changes (with the fields, from a server-side dry run against the live object) and deletes,
//! and a digest over all of it and the payload, so an approval stands for exactly this plan
//! and a cluster that moved since needs approving again.

use serde_json::Value;
use sha2::{Digest, Sha256};
use windlass_api::clusterversion::{LevelPlan, ObjectChange, ReleasePlan};

use crate::{Action, ObjectRef};

/// What an update does to one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObjectVerdict {
    Create,
    /// The fields the apply changes.
    Change(Vec<String>),
    Delete,
    Unchanged,
}

/// The verdict for a manifest applied with `action` over `live`, where `after` is what a
/// server-side dry-run apply returned (only asked for when the object exists and is applied).
pub fn verdict(action: Action, live: Option<&Value>, after: Option<&Value>) -> ObjectVerdict {
    match (action, live) {
        (Action::Delete, Some(_)) => ObjectVerdict::Delete,
        (Action::Delete, None) => ObjectVerdict::Unchanged,
        (_, None) => ObjectVerdict::Create,
        (Action::CreateOnly, Some(_)) => ObjectVerdict::Unchanged,
        (Action::Apply, Some(live)) => {
            let fields: Vec<String> = after
                .map(|after| windlass_preview::diff::diff(live, after))
                .unwrap_or_default()
                .into_iter()
                .map(|change| change.path)
                .collect();
            if fields.is_empty() {
                ObjectVerdict::Unchanged
            } else {
                ObjectVerdict::Change(fields)
            }
        }
    }
}

/// `Kind namespace/name`, or `Kind name` for a cluster-scoped object.
pub fn describe(object: &ObjectRef) -> String {
    match &object.namespace {
        Some(ns) => format!("{} {ns}/{}", object.kind, object.name),
        None => format!("{} {}", object.kind, object.name),
    }
}

/// The plan of `image` (release `version`) from each level's verdicts, with its digest.
pub fn plan(
    version: &str,
    image: &str,
    levels: Vec<(String, Vec<(String, ObjectVerdict)>)>,
) -> ReleasePlan {
    let levels: Vec<LevelPlan> = levels
        .into_iter()
        .map(|(name, objects)| {
            let mut level = LevelPlan {
                name,
                ..LevelPlan::default()
            };
            for (object, verdict) in objects {
                match verdict {
                    ObjectVerdict::Create => level.create.push(object),
                    ObjectVerdict::Change(fields) => {
                        level.change.push(ObjectChange { object, fields })
                    }
                    ObjectVerdict::Delete => level.delete.push(object),
                    ObjectVerdict::Unchanged => level.unchanged += 1,
                }
            }
            level
        })
        .collect();
    let canonical = serde_json::to_vec(&(image, &levels)).expect("the plan serializes");
    let digest = format!("sha256:{:x}", Sha256::digest(&canonical));
    ReleasePlan {
        version: version.to_string(),
        image: image.to_string(),
        digest,
        approved: false,
        levels,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn verdicts_follow_the_action_and_the_dry_run() {
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "resourceVersion": "4"}, "data": {"a": "1"}});
        let same = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "resourceVersion": "5"}, "data": {"a": "1"}});
        let changed = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c"}, "data": {"a": "2"}});
        assert_eq!(verdict(Action::Apply, None, None), ObjectVerdict::Create);
        assert_eq!(
            verdict(Action::Apply, Some(&live), Some(&same)),
            ObjectVerdict::Unchanged
        );
        assert_eq!(
            verdict(Action::Apply, Some(&live), Some(&changed)),
            ObjectVerdict::Change(vec!["data.a".into()])
        );
        assert_eq!(
            verdict(Action::CreateOnly, Some(&live), None),
            ObjectVerdict::Unchanged
        );
        assert_eq!(
            verdict(Action::Delete, Some(&live), None),
            ObjectVerdict::Delete
        );
        assert_eq!(
            verdict(Action::Delete, None, None),
            ObjectVerdict::Unchanged
        );
    }

    #[test]
    fn the_digest_changes_with_any_change_of_the_plan() {
        let one = || {
            vec![(
                "10".to_string(),
                vec![("ConfigMap ns/c".to_string(), ObjectVerdict::Create)],
            )]
        };
        let a = plan("4.1.1", "r@sha256:a", one());
        assert_eq!(a.digest, plan("4.1.1", "r@sha256:a", one()).digest);
        assert_eq!(a.levels[0].create, ["ConfigMap ns/c"]);
        assert_ne!(a.digest, plan("4.1.1", "r@sha256:b", one()).digest);
        let changed = vec![(
            "10".to_string(),
            vec![(
                "ConfigMap ns/c".to_string(),
                ObjectVerdict::Change(vec!["data.a".into()]),
            )],
        )];
        assert_ne!(a.digest, plan("4.1.1", "r@sha256:a", changed).digest);
        assert!(a.digest.starts_with("sha256:"));
    }
}
