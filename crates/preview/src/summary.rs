//! Short forms of a plan: the one paragraph a Blueprint's status carries (objects have size
//! limits, and a status is read often), and shrinking a plan that would not fit its Secret.

use serde_json::Value;

use crate::model::{CrdAction, CrdVerdict, ObjectAction, Plan, PlanKind};

/// The longest summary a status carries, in bytes.
pub const MAX_SUMMARY: usize = 600;

/// One paragraph: the move, what happens to objects, RBAC, images, CRDs, edits overwritten,
/// and anything the API server refused.
pub fn summary(plan: &Plan) -> String {
    let mut parts = Vec::new();
    parts.push(match (&plan.from, plan.kind) {
        (Some(from), PlanKind::Reinstall) => format!("reinstall {}", from.version),
        (Some(from), kind) => format!("{kind} {} -> {}", from.version, plan.to.version),
        (None, kind) => format!("{kind} {}", plan.to.version),
    });
    let mut objects = Vec::new();
    for (action, word) in [
        (ObjectAction::Create, "create"),
        (ObjectAction::Change, "change"),
        (ObjectAction::Delete, "delete"),
    ] {
        let n = plan.count(action);
        if n > 0 {
            objects.push(format!("{word} {n}"));
        }
    }
    let unchanged = plan.count(ObjectAction::Unchanged);
    let mut objects = if objects.is_empty() {
        "no object changes".to_string()
    } else {
        format!("objects: {}", objects.join(", "))
    };
    if unchanged > 0 {
        objects.push_str(&format!(" ({unchanged} unchanged)"));
    }
    parts.push(objects);
    if !plan.rbac.is_empty() {
        let cluster = plan.rbac.gained.iter().filter(|g| g.cluster_wide()).count();
        let mut rbac = format!("RBAC: gains {} grants", plan.rbac.gained.len());
        if cluster > 0 {
            rbac.push_str(&format!(" ({cluster} cluster-wide)"));
        }
        rbac.push_str(&format!(", loses {}", plan.rbac.lost.len()));
        parts.push(rbac);
    }
    if !plan.images.is_empty() {
        parts.push(format!("images: {} change", plan.images.len()));
    }
    if !plan.crds.is_empty() {
        let changed = plan
            .crds
            .iter()
            .filter(|c| matches!(c.action, CrdAction::Create | CrdAction::Change))
            .count();
        let verdict = match plan.crd_verdict() {
            Some(CrdVerdict::Blocks) => "blocked",
            Some(CrdVerdict::Warns) => "safe with warnings",
            _ => "safe",
        };
        parts.push(format!(
            "CRDs: {changed} of {} created or changed, {verdict}",
            plan.crds.len()
        ));
    }
    if !plan.drift.is_empty() {
        parts.push(format!(
            "overwrites out-of-band edits of {} object{}",
            plan.drift.len(),
            if plan.drift.len() == 1 { "" } else { "s" }
        ));
    }
    let refused: Vec<String> = plan
        .objects
        .iter()
        .filter(|o| o.refused.is_some())
        .map(|o| o.object.to_string())
        .collect();
    if !refused.is_empty() {
        parts.push(format!("the API server refuses {}", refused.join(", ")));
    }
    bounded(&parts.join("; "), MAX_SUMMARY)
}

/// `text` cut to at most `max` bytes on a character boundary, marked when cut.
pub fn bounded(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max.saturating_sub(3);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

/// How far [`shrink`] has gone.
pub const SHRINK_STEPS: u8 = 4;

/// Makes the plan smaller, step by step (1 to [`SHRINK_STEPS`]), saying in its notes what was
/// left out: long values first, then most field changes, then every field change and the
/// unchanged objects. Counts, actions, RBAC, images and verdicts always stay.
pub fn shrink(plan: &mut Plan, step: u8) {
    let (keep_fields, max_value) = match step {
        1 => (50, 1024),
        2 => (10, 256),
        3 => (0, 0),
        _ => (0, 0),
    };
    let mut left_out = 0;
    for object in &mut plan.objects {
        if object.fields.len() > keep_fields {
            let cut = object.fields.len() - keep_fields;
            object.fields.truncate(keep_fields);
            object.fields_left_out += cut;
            left_out += cut;
        }
        for field in &mut object.fields {
            shorten(&mut field.old, max_value);
            shorten(&mut field.new, max_value);
        }
    }
    for drift in &mut plan.drift {
        for field in &mut drift.fields {
            shorten(&mut field.old, max_value.max(256));
            shorten(&mut field.new, max_value.max(256));
        }
    }
    let note = match step {
        1 => format!("values longer than {max_value} bytes are shortened"),
        2 => format!("at most {keep_fields} field changes are listed per object"),
        3 => "field-level changes are left out".to_string(),
        _ => {
            let unchanged = plan.count(ObjectAction::Unchanged);
            plan.objects.retain(|o| o.action != ObjectAction::Unchanged);
            for crd in &mut plan.crds {
                crd.findings.truncate(20);
            }
            format!("{unchanged} unchanged objects and CRD findings past 20 per CRD are left out")
        }
    };
    let mut note = format!("the whole plan did not fit its Secret: {note}");
    if left_out > 0 {
        note.push_str(&format!(" ({left_out} field changes left out)"));
    }
    plan.notes.push(note);
}

fn shorten(value: &mut Option<Value>, max: usize) {
    let Some(v) = value else {
        return;
    };
    let text = v.to_string();
    if text.len() > max {
        *value = Some(Value::String(format!("({} bytes not shown)", text.len())));
    }
}

#[cfg(test)]
#[path = "summary_tests.rs"]
mod tests;
