//! Field-level differences between two states of one object.
//!
//! [`diff`] compares a live object with what a server-side dry-run apply returned for it: every
//! field that the apply would add, change or remove. Fields the server keeps for itself
//! (`resourceVersion`, `managedFields`, `generation`, ...) and `status` are not compared.
//!
//! [`drift`] compares what windlass applied with the live object: only the fields windlass set
//! are looked at, so defaults the server added and fields other managers own do not count. A
//! field whose live value differs was edited out of band, and re-applying overwrites it.
//! [`overwritten`] finds the edits a rollback overwrites that re-applying the running revision
//! would not: fields only the restored revision sets, now held by another field manager.
//!
//! Lists of objects that carry a `name` (containers, env, ports, volumes) are matched by name,
//! and paths say so (`containers[name=operator].image`); other lists are compared by index, or
//! whole when their length changes. `null`, `[]` and `{}` read as absent, as server-side apply
//! treats them. Numbers compare by value. Values of Secrets are never shown.

use serde_json::{Map, Value};

use crate::managed;
use crate::model::{Drift, FieldChange, ObjectRef};

/// Metadata the API server writes, which an apply neither sets nor changes on purpose.
const SERVER_METADATA: &[&str] = &[
    "resourceVersion",
    "managedFields",
    "generation",
    "uid",
    "creationTimestamp",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// What a Secret's values are shown as.
pub const HIDDEN: &str = "(hidden)";

/// One step of a path into an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Segment {
    Key(String),
    /// The member of a list of named objects with this `name`.
    Named(String),
    Index(usize),
}

/// Renders a path: `spec.template.spec.containers[name=operator].image`,
/// `metadata.labels["app.kubernetes.io/name"]`, `spec.versions[0]`.
pub(crate) fn render_path(path: &[Segment]) -> String {
    let mut out = String::new();
    for segment in path {
        match segment {
            Segment::Key(key) if is_plain(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Key(key) => {
                out.push('[');
                out.push_str(&serde_json::to_string(key).unwrap_or_default());
                out.push(']');
            }
            Segment::Named(name) => out.push_str(&format!("[name={name}]")),
            Segment::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

fn is_plain(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '$')
}

/// Every field an apply changes: `live` is the object now (`None`: it does not exist, and
/// the result is empty, the object is created), `after` what the dry-run apply returned.
pub fn diff(live: &Value, after: &Value) -> Vec<FieldChange> {
    let mut out = Vec::new();
    walk_diff(
        &mut Vec::new(),
        Some(&comparable(live)),
        Some(&comparable(after)),
        &mut out,
    );
    let out: Vec<FieldChange> = out
        .into_iter()
        .map(|(path, old, new)| FieldChange {
            path: render_path(&path),
            old,
            new,
        })
        .collect();
    if is_secret(after) || is_secret(live) {
        hide_values(out)
    } else {
        out
    }
}

/// What someone changed in `live` since windlass applied `applied`: the fields `applied` sets
/// whose live value differs, with `old` what windlass applied and `new` what is there now, and
/// the field managers that own those fields now. `None` when nothing was edited.
pub fn drift(applied: &Value, live: &Value) -> Option<Drift> {
    let mut found = Vec::new();
    let applied = comparable(applied);
    let live_fields = comparable(live);
    walk_drift(&mut Vec::new(), &applied, Some(&live_fields), &mut found);
    drift_of(live, found)
}

/// What an apply of `desired` puts back of someone else's edits: the fields `desired` sets
/// whose live value differs and that a field manager other than windlass owns now (an edit;
/// a field windlass still owns differs only because what windlass wants changed). `old` is
/// what windlass restores, `new` what it found. `None` when the apply repairs no edit.
pub fn repaired(desired: &Value, live: &Value) -> Option<Drift> {
    let mut found = Vec::new();
    walk_drift(
        &mut Vec::new(),
        &comparable(desired),
        Some(&comparable(live)),
        &mut found,
    );
    found.retain(|(path, _, _)| !managed::owners(live, std::slice::from_ref(path)).is_empty());
    drift_of(live, found)
}

/// What restoring an older revision overwrites of someone else's: the fields `restored` (the
/// object as that revision applied it) sets and `running` (as the running revision applied it,
/// `None` when it did not) does not, whose live value differs and belongs to a field manager
/// other than windlass. Re-applying the running revision leaves those fields alone, so an edit
/// of them stands until the rollback writes over it; edits of the fields it does set are
/// [`drift`]'s. `old` is what windlass applied when the restored revision ran, `new` what is
/// there now. `None` when the rollback overwrites no one's edit.
pub fn overwritten(running: Option<&Value>, restored: &Value, live: &Value) -> Option<Drift> {
    let mut found = Vec::new();
    walk_drift(
        &mut Vec::new(),
        &comparable(restored),
        Some(&comparable(live)),
        &mut found,
    );
    let running = running.map(comparable);
    found.retain(|(path, _, new)| {
        new.is_some()
            && !running.as_ref().is_some_and(|r| sets(r, path))
            && !managed::owners(live, std::slice::from_ref(path)).is_empty()
    });
    drift_of(live, found)
}

/// The fields found edited in `live` (path, what windlass applied, what is there now), with
/// their editors and Secret values hidden; `None` when there are none.
fn drift_of(
    live: &Value,
    found: Vec<(Vec<Segment>, Option<Value>, Option<Value>)>,
) -> Option<Drift> {
    if found.is_empty() {
        return None;
    }
    let paths: Vec<Vec<Segment>> = found.iter().map(|(path, _, _)| path.clone()).collect();
    let editors = managed::owners(live, &paths);
    let fields: Vec<FieldChange> = found
        .into_iter()
        .map(|(path, old, new)| FieldChange {
            path: render_path(&path),
            old,
            new,
        })
        .collect();
    Some(Drift {
        object: ObjectRef::of(live),
        fields: if is_secret(live) {
            hide_values(fields)
        } else {
            fields
        },
        editors,
    })
}

/// Whether `object` sets the field at `path` (to something other than empty).
fn sets(object: &Value, path: &[Segment]) -> bool {
    let Some((first, rest)) = path.split_first() else {
        return !is_empty(Some(object));
    };
    let below = match (first, object) {
        (Segment::Key(key), Value::Object(map)) => map.get(key),
        (Segment::Named(name), Value::Array(items)) => by_name(items, name),
        (Segment::Index(i), Value::Array(items)) => items.get(*i),
        _ => None,
    };
    below.is_some_and(|value| sets(value, rest))
}

fn is_secret(object: &Value) -> bool {
    object["kind"] == "Secret" && object["apiVersion"] == "v1"
}

/// A Secret's `data` and `stringData` values are replaced with [`HIDDEN`]: a plan is read by
/// whoever may read the namespace's Blueprints.
fn hide_values(changes: Vec<FieldChange>) -> Vec<FieldChange> {
    changes
        .into_iter()
        .map(|mut change| {
            if change.path.starts_with("data") || change.path.starts_with("stringData") {
                let hide = |v: Option<Value>| v.map(|_| Value::String(HIDDEN.into()));
                change.old = hide(change.old);
                change.new = hide(change.new);
            }
            change
        })
        .collect()
}

/// The object without what is not compared: server metadata and `status`.
fn comparable(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(map) = object.as_object_mut() {
        map.remove("status");
        if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in SERVER_METADATA {
                meta.remove(*field);
            }
        }
    }
    object
}

type Found = Vec<(Vec<Segment>, Option<Value>, Option<Value>)>;

fn is_empty(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::Array(items)) => items.is_empty(),
        Some(Value::Object(map)) => map.is_empty(),
        _ => false,
    }
}

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Object(x), Value::Object(y)) => {
            x.keys()
                .chain(y.keys())
                .all(|k| match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => same(p, q) || is_empty(Some(p)) && is_empty(Some(q)),
                    (p, q) => is_empty(p) && is_empty(q),
                })
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        _ => a == b,
    }
}

/// The names of a list of named objects, when every member is one and no name repeats.
fn names(items: &[Value]) -> Option<Vec<&str>> {
    let names: Vec<&str> = items
        .iter()
        .map(|item| item.get("name").and_then(Value::as_str))
        .collect::<Option<_>>()?;
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    (sorted.len() == names.len()).then_some(names)
}

fn by_name<'a>(items: &'a [Value], name: &str) -> Option<&'a Value> {
    items.iter().find(|i| i["name"] == name)
}

fn keys_in_order<'a>(a: &'a Map<String, Value>, b: &'a Map<String, Value>) -> Vec<&'a String> {
    let mut keys: Vec<&String> = a.keys().collect();
    keys.extend(b.keys().filter(|k| !a.contains_key(*k)));
    keys
}

fn walk_diff(path: &mut Vec<Segment>, a: Option<&Value>, b: Option<&Value>, out: &mut Found) {
    if is_empty(a) && is_empty(b) {
        return;
    }
    match (a, b) {
        (Some(x), Some(y)) if same(x, y) => {}
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            for key in keys_in_order(x, y) {
                path.push(Segment::Key(key.clone()));
                walk_diff(path, x.get(key), y.get(key), out);
                path.pop();
            }
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) => {
            if let (Some(xs), Some(ys)) = (names(x), names(y))
                && !xs.is_empty()
                && !ys.is_empty()
            {
                let mut all: Vec<&str> = xs.clone();
                all.extend(ys.iter().filter(|n| !xs.contains(n)));
                for name in all {
                    path.push(Segment::Named(name.to_string()));
                    walk_diff(path, by_name(x, name), by_name(y, name), out);
                    path.pop();
                }
            } else if x.len() == y.len() && x.iter().chain(y).any(|v| v.is_object() || v.is_array())
            {
                for (i, (p, q)) in x.iter().zip(y).enumerate() {
                    path.push(Segment::Index(i));
                    walk_diff(path, Some(p), Some(q), out);
                    path.pop();
                }
            } else {
                out.push((path.clone(), a.cloned(), b.cloned()));
            }
        }
        _ => out.push((
            path.clone(),
            a.filter(|v| !is_empty(Some(v))).cloned(),
            b.filter(|v| !is_empty(Some(v))).cloned(),
        )),
    }
}

/// Only the fields `applied` sets; `live` is `None` where the live object lacks the field.
fn walk_drift(path: &mut Vec<Segment>, applied: &Value, live: Option<&Value>, out: &mut Found) {
    if is_empty(Some(applied)) && is_empty(live) {
        return;
    }
    match (applied, live) {
        (Value::Object(want), Some(Value::Object(have))) => {
            for (key, value) in want {
                // Only labels and annotations of the metadata are an object's content.
                if path.is_empty() && key == "metadata" {
                    if let (Value::Object(meta), Some(Value::Object(live_meta))) =
                        (value, have.get(key))
                    {
                        for part in ["labels", "annotations"] {
                            if let Some(wanted) = meta.get(part) {
                                path.push(Segment::Key(key.clone()));
                                path.push(Segment::Key(part.into()));
                                walk_drift(path, wanted, live_meta.get(part), out);
                                path.truncate(path.len() - 2);
                            }
                        }
                    }
                    continue;
                }
                path.push(Segment::Key(key.clone()));
                walk_drift(path, value, have.get(key), out);
                path.pop();
            }
        }
        (Value::Array(want), Some(Value::Array(have))) => match (names(want), names(have)) {
            // Members others added (an injected sidecar) stay when windlass applies: only
            // the members windlass set are compared.
            (Some(wanted), Some(_)) if !wanted.is_empty() => {
                for (name, item) in wanted.into_iter().zip(want) {
                    path.push(Segment::Named(name.to_string()));
                    match by_name(have, name) {
                        Some(found) => walk_drift(path, item, Some(found), out),
                        None => out.push((path.clone(), Some(item.clone()), None)),
                    }
                    path.pop();
                }
            }
            _ if want.len() == have.len() => {
                for (i, (w, h)) in want.iter().zip(have).enumerate() {
                    path.push(Segment::Index(i));
                    walk_drift(path, w, Some(h), out);
                    path.pop();
                }
            }
            _ => out.push((path.clone(), Some(applied.clone()), live.cloned())),
        },
        (_, Some(found)) if same(applied, found) => {}
        _ => out.push((
            path.clone(),
            Some(applied.clone()),
            live.filter(|v| !is_empty(Some(v))).cloned(),
        )),
    }
}

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;
