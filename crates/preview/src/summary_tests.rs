use serde_json::json;

use super::*;
use crate::model::FieldChange;
use crate::sample;

#[test]
fn the_summary_says_the_move_and_every_part_in_one_paragraph() {
    assert_eq!(
        summary(&sample::plan()),
        "upgrade 1.0.1 -> 1.1.0; objects: create 1, change 2, delete 1 (1 unchanged); \
         RBAC: gains 1 grants (1 cluster-wide), loses 0; images: 1 change; \
         CRDs: 1 of 1 created or changed, safe with warnings; \
         overwrites out-of-band edits of 1 object; \
         the API server refuses ConfigMap team-a/settings"
    );
    let mut install = sample::plan();
    install.from = None;
    install.kind = PlanKind::Install;
    install.objects.clear();
    install.rbac = Default::default();
    install.images.clear();
    install.crds.clear();
    install.drift.clear();
    assert_eq!(summary(&install), "install 1.1.0; no object changes");
}

#[test]
fn a_summary_is_bounded_on_a_character_boundary() {
    let mut plan = sample::plan();
    for object in &mut plan.objects {
        object.refused = Some("é".repeat(400));
        object.object.name = "ü".repeat(100);
    }
    let text = summary(&plan);
    assert!(text.len() <= MAX_SUMMARY, "{}", text.len());
    assert!(text.ends_with("..."));
    assert_eq!(bounded("short", 10), "short");
}

#[test]
fn shrinking_leaves_out_details_but_never_counts_actions_or_verdicts() {
    let mut plan = sample::plan();
    plan.objects[1].fields = (0..80)
        .map(|i| FieldChange {
            path: format!("data.k{i}"),
            old: Some(json!("x".repeat(2000))),
            new: None,
        })
        .collect();
    let before = summary(&plan);
    shrink(&mut plan, 1);
    assert_eq!(plan.objects[1].fields.len(), 50);
    assert_eq!(plan.objects[1].fields_left_out, 30);
    assert_eq!(
        plan.objects[1].fields[0].old,
        Some(json!("(2002 bytes not shown)"))
    );
    shrink(&mut plan, 2);
    assert_eq!(plan.objects[1].fields.len(), 10);
    shrink(&mut plan, 3);
    assert!(plan.objects.iter().all(|o| o.fields.is_empty()));
    assert_eq!(plan.objects[1].fields_left_out, 80);
    assert_eq!(
        summary(&plan),
        before,
        "the summary does not depend on details"
    );
    shrink(&mut plan, SHRINK_STEPS);
    assert_eq!(plan.count(ObjectAction::Unchanged), 0);
    assert_eq!(plan.notes.len(), 4);
    assert!(
        plan.notes[3].contains("1 unchanged objects"),
        "{:?}",
        plan.notes
    );
}
