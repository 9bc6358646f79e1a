//! Whether a plan would restart what it adopts. Adoption must leave every pod as it is, so the
//! plan windlass previews for the adopting revision is read for changes to a Deployment's pod
//! template, selector or replica count (each of them replaces or removes pods), and for
//! Deployments it would create beside the running ones.

use windlass_preview::{CrdChange, ObjectAction, ObjectChange};

use crate::olm::TakeOver;

/// Every change among a plan's `objects` that would restart, reschedule or add the operator's
/// pods, in words.
pub fn restarts(objects: &[ObjectChange]) -> Vec<String> {
    let mut found = Vec::new();
    for change in objects {
        if change.object.kind != "Deployment" {
            continue;
        }
        let object = format!(
            "Deployment {}/{}",
            change.object.namespace.as_deref().unwrap_or_default(),
            change.object.name
        );
        match change.action {
            ObjectAction::Create => found.push(format!(
                "{object} would be created: nothing of that name runs to adopt"
            )),
            ObjectAction::Delete => found.push(format!("{object} would be deleted")),
            ObjectAction::Unchanged => {}
            ObjectAction::Change => {
                for field in &change.fields {
                    let path = field.path.as_str();
                    let restarts = ["spec.template", "spec.selector", "spec.replicas"]
                        .iter()
                        .any(|prefix| {
                            path == *prefix
                                || path.starts_with(&format!("{prefix}."))
                                || path.starts_with(&format!("{prefix}["))
                        });
                    if restarts {
                        let show = |v: &Option<serde_json::Value>| {
                            v.as_ref().map_or("(none)".to_string(), |v| v.to_string())
                        };
                        found.push(format!(
                            "{object}: {path} would change from {} to {}",
                            show(&field.old),
                            show(&field.new)
                        ));
                    }
                }
                if change.fields_left_out > 0 {
                    found.push(format!(
                        "{object}: {} more field change(s) the plan left out for size",
                        change.fields_left_out
                    ));
                }
            }
        }
        if let Some(refused) = &change.refused {
            found.push(format!(
                "{object}: the API server refused the dry run: {refused}"
            ));
        }
    }
    found
}

/// The take-overs whose object the plan neither applies nor keeps: windlass would not manage
/// them, so taking them from their tool would leave them to nobody.
pub fn outside_plan<'a>(
    take_over: &'a [TakeOver],
    objects: &[ObjectChange],
    crds: &[CrdChange],
) -> Vec<&'a TakeOver> {
    take_over
        .iter()
        .filter(|take| {
            let key = &take.object;
            let in_objects = objects.iter().any(|change| {
                change.object.kind == key.kind
                    && change.object.name == key.name
                    && change.object.namespace == key.namespace
            });
            let in_crds = key.kind == "CustomResourceDefinition"
                && crds.iter().any(|crd| crd.name == key.name);
            !in_objects && !in_crds
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn change(value: serde_json::Value) -> ObjectChange {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn metadata_only_changes_restart_nothing_and_template_changes_do() {
        let object =
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "db", "name": "op"});
        let quiet = change(json!({
            "object": object, "action": "Change", "by": "manager", "fromCsv": true,
            "fields": [
                {"path": "metadata.labels.windlass.dev/csv", "new": "acme-db.v1.0.0"},
                {"path": "metadata.ownerReferences", "new": []},
            ],
        }));
        assert!(restarts(std::slice::from_ref(&quiet)).is_empty());
        let loud = change(json!({
            "object": object, "action": "Change", "by": "manager",
            "fields": [
                {"path": "spec.template.spec.containers[name=operator].image", "old": "a:1", "new": "a:2"},
                {"path": "spec.replicas", "old": 2, "new": 1},
                {"path": "spec.templateish", "new": 1},
            ],
        }));
        let found = restarts(&[quiet, loud]);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("Deployment db/op: spec.template.spec.containers[name=operator].image would change from \"a:1\" to \"a:2\""), "{found:?}");
        assert!(found[1].contains("spec.replicas"), "{found:?}");
    }

    #[test]
    fn take_overs_the_plan_does_not_cover_are_found() {
        let take = |kind: &str, namespace: Option<&str>, name: &str| TakeOver {
            object: crate::ObjectKey {
                api_version: "v1".into(),
                kind: kind.into(),
                namespace: namespace.map(str::to_string),
                name: name.into(),
                resource_version: String::new(),
            },
            patch: json!({}),
            undo: json!({}),
            why: String::new(),
        };
        let takes = [
            take("Deployment", Some("db"), "op"),
            take("ClusterRole", None, "chart-role"),
            take("CustomResourceDefinition", None, "dbs.acme.dev"),
            take("Deployment", Some("other"), "op"),
        ];
        let objects = [change(json!({
            "object": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "db", "name": "op"},
            "action": "Unchanged", "by": "manager",
        }))];
        let crds: Vec<CrdChange> = serde_json::from_value(json!([
            {"name": "dbs.acme.dev", "action": "Unchanged", "verdict": "Safe"}
        ]))
        .unwrap();
        let outside: Vec<String> = outside_plan(&takes, &objects, &crds)
            .iter()
            .map(|t| t.object.to_string())
            .collect();
        assert_eq!(
            outside,
            vec!["ClusterRole chart-role", "Deployment other/op"]
        );
    }

    #[test]
    fn a_deployment_created_beside_the_running_one_is_named() {
        let created = change(json!({
            "object": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "db", "name": "other"},
            "action": "Create", "by": "manager",
        }));
        let service_account = change(json!({
            "object": {"apiVersion": "v1", "kind": "ServiceAccount", "namespace": "db", "name": "sa"},
            "action": "Create", "by": "manager",
        }));
        assert_eq!(
            restarts(&[created, service_account]),
            vec!["Deployment db/other would be created: nothing of that name runs to adopt"]
        );
    }
}
