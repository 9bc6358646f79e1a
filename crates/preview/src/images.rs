//! The container images an install runs: every container and init container of the pod
//! templates among its objects (Deployments, StatefulSets, DaemonSets, Jobs, Pods), and the
//! ClusterServiceVersion's `relatedImages` (what a mirror needs). The change between two
//! installs is matched by place, so a new tag of the same container reads as one change.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::model::ImageChange;

/// Images by place (`Deployment acme-db-operator, container operator`, `relatedImage
/// operator`).
pub fn images(objects: &[Value], csv_definition: Option<&Value>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for object in objects {
        let kind = object["kind"].as_str().unwrap_or_default();
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let pod = match kind {
            "Pod" => &object["spec"],
            "CronJob" => &object["spec"]["jobTemplate"]["spec"]["template"]["spec"],
            _ => &object["spec"]["template"]["spec"],
        };
        for (list, what) in [
            ("initContainers", "init container"),
            ("containers", "container"),
        ] {
            for container in pod[list].as_array().into_iter().flatten() {
                if let Some(image) = container["image"].as_str() {
                    let container = container["name"].as_str().unwrap_or_default();
                    out.insert(
                        format!("{kind} {name}, {what} {container}"),
                        image.to_string(),
                    );
                }
            }
        }
    }
    for related in csv_definition
        .and_then(|csv| csv.pointer("/spec/relatedImages"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(image) = related["image"].as_str() {
            let name = related["name"].as_str().unwrap_or(image);
            out.insert(format!("relatedImage {name}"), image.to_string());
        }
    }
    out
}

/// The images that change between two installs, by place.
pub fn delta(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> Vec<ImageChange> {
    let mut out = Vec::new();
    for (place, image) in after {
        match before.get(place) {
            Some(old) if old == image => {}
            old => out.push(ImageChange {
                place: place.clone(),
                old: old.cloned(),
                new: Some(image.clone()),
            }),
        }
    }
    for (place, image) in before.iter().filter(|(p, _)| !after.contains_key(*p)) {
        out.push(ImageChange {
            place: place.clone(),
            old: Some(image.clone()),
            new: None,
        });
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(name: &str, image: &str, init: Option<&str>) -> Value {
        let mut pod = json!({"containers": [{"name": "operator", "image": image}]});
        if let Some(init) = init {
            pod["initContainers"] = json!([{"name": "setup", "image": init}]);
        }
        json!({"kind": "Deployment", "metadata": {"name": name}, "spec": {"template": {"spec": pod}}})
    }

    #[test]
    fn images_that_change_are_matched_by_place() {
        let csv_before =
            json!({"spec": {"relatedImages": [{"name": "operator", "image": "op:1"}]}});
        let csv_after = json!({"spec": {"relatedImages": [{"name": "operator", "image": "op:2"}, {"name": "db", "image": "pg:16"}]}});
        let before = images(
            &[
                deployment("op", "op:1", Some("init:1")),
                deployment("gone", "x:1", None),
            ],
            Some(&csv_before),
        );
        let after = images(
            &[deployment("op", "op:2", Some("init:1"))],
            Some(&csv_after),
        );
        let changes = delta(&before, &after);
        let text: Vec<String> = changes
            .iter()
            .map(|c| format!("{}: {:?} -> {:?}", c.place, c.old, c.new))
            .collect();
        assert_eq!(
            text,
            [
                r#"Deployment gone, container operator: Some("x:1") -> None"#,
                r#"Deployment op, container operator: Some("op:1") -> Some("op:2")"#,
                r#"relatedImage db: None -> Some("pg:16")"#,
                r#"relatedImage operator: Some("op:1") -> Some("op:2")"#,
            ]
        );
        assert!(delta(&after, &after).is_empty());
    }
}
