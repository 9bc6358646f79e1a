//! Who owns a field of a live object, read from its `managedFields`: the managers named
//! there own the fields their `fieldsV1` lists (`f:<field>` for a field, `k:{...}` for the
//! member of a keyed list, `{}` for a leaf they own whole).

use serde_json::{Map, Value};

use crate::diff::Segment;

/// windlass's own field manager, whose fields are not edits.
const OWN_MANAGER: &str = "windlass";

/// The managers other than windlass owning any of `paths` in `live` (status writes left out),
/// sorted.
pub(crate) fn owners(live: &Value, paths: &[Vec<Segment>]) -> Vec<String> {
    let mut owners: Vec<String> = live
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|entry| entry["manager"].as_str().is_some_and(|m| m != OWN_MANAGER))
        .filter(|entry| {
            entry
                .get("subresource")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
        })
        .filter(|entry| {
            entry
                .get("fieldsV1")
                .and_then(Value::as_object)
                .is_some_and(|fields| paths.iter().any(|path| owns(fields, path)))
        })
        .filter_map(|entry| entry["manager"].as_str().map(str::to_string))
        .collect();
    owners.sort();
    owners.dedup();
    owners
}

/// Whether the field set `fields` covers `path`: the whole path is listed, or a prefix of it
/// is listed as a leaf (owned whole).
fn owns(fields: &Map<String, Value>, path: &[Segment]) -> bool {
    let Some((first, rest)) = path.split_first() else {
        return true;
    };
    let below = match first {
        Segment::Key(key) => fields.get(&format!("f:{key}")),
        Segment::Named(name) => fields.iter().find_map(|(key, value)| {
            let member = key.strip_prefix("k:")?;
            let member: Value = serde_json::from_str(member).ok()?;
            (member["name"] == name.as_str()).then_some(value)
        }),
        Segment::Index(_) => None,
    };
    match below.and_then(Value::as_object) {
        Some(map) if map.is_empty() => true,
        Some(map) => owns(map, rest),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn live() -> Value {
        let container = |fields: Value| json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"operator\"}": fields}}}}});
        json!({
            "metadata": {"managedFields": [
                {"manager": "windlass", "operation": "Apply",
                 "fieldsV1": container(json!({".": {}, "f:image": {}, "f:name": {}}))},
                {"manager": "kubectl-scale", "operation": "Update", "subresource": "scale",
                 "fieldsV1": {"f:spec": {"f:replicas": {}}}},
                {"manager": "kubectl-edit", "operation": "Update",
                 "fieldsV1": container(json!({"f:resources": {"f:limits": {"f:cpu": {}}}}))},
                {"manager": "hpa", "operation": "Update", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
                {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status",
                 "fieldsV1": {"f:status": {}}},
            ]},
        })
    }

    fn path(parts: &[&str]) -> Vec<Segment> {
        parts
            .iter()
            .map(|p| match p.strip_prefix("name=") {
                Some(name) => Segment::Named(name.into()),
                None => Segment::Key((*p).into()),
            })
            .collect()
    }

    #[test]
    fn the_managers_owning_an_edited_field_are_named_and_windlass_is_not() {
        let cpu = path(&[
            "spec",
            "template",
            "spec",
            "containers",
            "name=operator",
            "resources",
            "limits",
            "cpu",
        ]);
        assert_eq!(owners(&live(), &[cpu]), ["kubectl-edit"]);
        // A subresource write (scale) is not the object's own content; hpa wrote the field.
        assert_eq!(owners(&live(), &[path(&["spec", "replicas"])]), ["hpa"]);
        let image = path(&[
            "spec",
            "template",
            "spec",
            "containers",
            "name=operator",
            "image",
        ]);
        assert!(
            owners(&live(), &[image]).is_empty(),
            "only windlass owns it"
        );
        assert!(owners(&json!({"metadata": {}}), &[path(&["spec"])]).is_empty());
    }

    #[test]
    fn a_leaf_owns_everything_below_it() {
        let fields = json!({"f:data": {}}).as_object().cloned().unwrap();
        assert!(owns(&fields, &path(&["data", "key"])));
        let fields = json!({"f:data": {"f:other": {}}})
            .as_object()
            .cloned()
            .unwrap();
        assert!(!owns(&fields, &path(&["data", "key"])));
    }
}
