//! A plan as a person reads it (`windlass plan`): the move and why, each object with its
//! field changes, the permissions gained and lost, images, CRD verdicts and the out-of-band
//! edits the plan overwrites.

use std::fmt::Write as _;

use serde_json::Value;

use crate::model::{CrdAction, CrdVerdict, FieldChange, ObjectAction, Plan};
use crate::rbac;
use crate::summary::bounded;

/// The longest value shown on one line.
const MAX_VALUE: usize = 160;

/// The plan as text, ending with a newline.
pub fn text(plan: &Plan) -> String {
    let mut out = String::new();
    let mv = match &plan.from {
        Some(from) if from.version != plan.to.version => {
            format!(
                "{} {} {} -> {}",
                plan.kind, plan.package, from.version, plan.to.version
            )
        }
        _ => format!("{} {} {}", plan.kind, plan.package, plan.to.version),
    };
    let _ = writeln!(
        out,
        "Plan of Blueprint {}, revision {}: {mv}",
        plan.blueprint, plan.revision
    );
    let _ = writeln!(
        out,
        "Digest: {} (computed {})",
        plan.digest, plan.computed_at
    );
    if !plan.reasons.is_empty() {
        let _ = writeln!(out, "\nWhy this version:");
        for reason in &plan.reasons {
            for line in reason.lines() {
                let _ = writeln!(out, "  {line}");
            }
        }
    }

    let _ = writeln!(
        out,
        "\nObjects (namespaced ones applied as {}, cluster-scoped ones and the \
         ClusterServiceVersion as the manager):",
        plan.identity
    );
    let mut unchanged = Vec::new();
    for object in &plan.objects {
        if object.action == ObjectAction::Unchanged && object.refused.is_none() {
            unchanged.push(object.object.to_string());
            continue;
        }
        let (mark, word) = match object.action {
            ObjectAction::Create => ('+', "create"),
            ObjectAction::Change => ('~', "change"),
            ObjectAction::Delete => ('-', "delete"),
            ObjectAction::Unchanged => ('=', "keep"),
        };
        let mut line = format!("  {mark} {word:<6} {}", object.object);
        if object.from_csv {
            line.push_str(" (made by the ClusterServiceVersion)");
        }
        if let Some(note) = &object.note {
            line.push_str(&format!(" ({note})"));
        }
        let _ = writeln!(out, "{line}");
        if let Some(refused) = &object.refused {
            let _ = writeln!(out, "      REFUSED by the API server: {refused}");
        }
        fields(&mut out, &object.fields, "      ");
        if object.fields_left_out > 0 {
            let _ = writeln!(
                out,
                "      ... and {} more field changes",
                object.fields_left_out
            );
        }
    }
    if !unchanged.is_empty() {
        let _ = writeln!(
            out,
            "  = {} unchanged: {}",
            unchanged.len(),
            unchanged.join(", ")
        );
    }
    if plan.objects.is_empty() {
        let _ = writeln!(out, "  (none)");
    }

    for (title, grants) in [
        ("Permissions the operator gains:", &plan.rbac.gained),
        ("Permissions the operator loses:", &plan.rbac.lost),
    ] {
        let _ = writeln!(out, "\n{title}");
        let lines = rbac::lines(grants);
        if lines.is_empty() {
            let _ = writeln!(out, "  (none)");
        }
        for line in lines {
            let _ = writeln!(out, "  {line}");
        }
    }

    if !plan.images.is_empty() {
        let _ = writeln!(out, "\nImages:");
        for image in &plan.images {
            let _ = writeln!(
                out,
                "  {}: {} -> {}",
                image.place,
                image.old.as_deref().unwrap_or("(none)"),
                image.new.as_deref().unwrap_or("(removed)")
            );
        }
    }

    if !plan.crds.is_empty() {
        let _ = writeln!(out, "\nCRDs:");
        for crd in &plan.crds {
            let action = match crd.action {
                CrdAction::Create => "created",
                CrdAction::Change => "changed",
                CrdAction::Unchanged => "unchanged",
                CrdAction::KeepLive => "kept at the newer live definition",
            };
            let _ = writeln!(out, "  {}: {action}, {}", crd.name, verdict(crd.verdict));
            for finding in &crd.findings {
                let ratcheted = if finding.ratcheted {
                    ", already so before"
                } else {
                    ""
                };
                let _ = writeln!(
                    out,
                    "    {} {}{ratcheted}: {}",
                    verdict(finding.verdict),
                    finding.reason,
                    finding.message
                );
            }
        }
    }

    if !plan.drift.is_empty() {
        let _ = writeln!(
            out,
            "\nEdited out of band since windlass applied them (this plan overwrites the edits):"
        );
        for drift in &plan.drift {
            let by = if drift.editors.is_empty() {
                String::new()
            } else {
                format!(" (edited by {})", drift.editors.join(", "))
            };
            let _ = writeln!(out, "  ! {}{by}", drift.object);
            for field in &drift.fields {
                let _ = writeln!(
                    out,
                    "      {}: windlass applied {}, now {}",
                    field.path,
                    value(field.old.as_ref()),
                    value(field.new.as_ref())
                );
            }
        }
    }

    if let Some(operands) = &plan.operands {
        let _ = writeln!(
            out,
            "\nCustom resources (a dry run of restoring the snapshot):\n  {operands}"
        );
    }

    if !plan.changes.is_empty() {
        let _ = writeln!(out, "\nWhat changed {}", plan.changes[0]);
        for change in &plan.changes[1..] {
            let _ = writeln!(out, "  {change}");
        }
    }

    if !plan.notes.is_empty() {
        let _ = writeln!(out, "\nNotes:");
        for note in &plan.notes {
            let _ = writeln!(out, "  {note}");
        }
    }
    out
}

fn verdict(verdict: CrdVerdict) -> &'static str {
    match verdict {
        CrdVerdict::Safe => "safe",
        CrdVerdict::Warns => "warns",
        CrdVerdict::Blocks => "BLOCKS",
    }
}

fn fields(out: &mut String, fields: &[FieldChange], indent: &str) {
    for field in fields {
        let _ = writeln!(
            out,
            "{indent}{}: {} -> {}",
            field.path,
            value(field.old.as_ref()),
            value(field.new.as_ref())
        );
    }
}

fn value(value: Option<&Value>) -> String {
    match value {
        None => "(none)".to_string(),
        Some(v) => bounded(&v.to_string(), MAX_VALUE),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample;

    #[test]
    fn a_plan_reads_as_its_parts() {
        let text = text(&sample::plan());
        let expected = [
            "Plan of Blueprint team-a/db, revision 3: upgrade acme-db 1.0.1 -> 1.1.0",
            "Digest: sha256:",
            "Why this version:\n  upgrade from 1.0.1 to 1.1.0\n  acme-db.v1.1.0 1.1.0 from channel stable",
            "namespaced ones applied as system:serviceaccount:team-a:windlass-installer",
            "  ~ change Deployment team-a/acme-db-operator (made by the ClusterServiceVersion)\n      spec.template.spec.containers[name=operator].image: \"pause:3.9\" -> \"pause:3.10\"",
            "  + create ClusterServiceVersion team-a/acme-db.v1.1.0",
            "  - delete ClusterServiceVersion team-a/acme-db.v1.0.1 (once acme-db.v1.1.0 Succeeded)",
            "  ~ change ConfigMap team-a/settings\n      REFUSED by the API server: forbidden",
            "  = 1 unchanged: ServiceAccount team-a/acme-db-operator",
            "Permissions the operator gains:\n  team-a/acme-db-operator cluster-wide: namespaces: list",
            "Permissions the operator loses:\n  (none)",
            "Images:\n  Deployment acme-db-operator, container operator: pause:3.9 -> pause:3.10",
            "CRDs:\n  databases.acme.windlass.dev: changed, warns\n    warns ServedVersionRemoved: v1beta1 is no longer served",
            "  ! Deployment team-a/acme-db-operator (edited by kubectl-scale)\n      spec.replicas: windlass applied 1, now 3",
        ];
        for part in expected {
            assert!(text.contains(part), "missing {part:?} in:\n{text}");
        }
        assert!(
            !text.contains("Custom resources"),
            "an upgrade restores none"
        );
    }

    #[test]
    fn a_rollback_plan_says_what_it_does_with_the_custom_resources() {
        let mut plan = sample::plan();
        plan.kind = crate::PlanKind::Rollback;
        plan.operands = Some("would restore the spec of 2 custom resource(s)".into());
        let text = text(&plan);
        assert!(
            text.contains("Custom resources (a dry run of restoring the snapshot):\n  would restore the spec of 2"),
            "{text}"
        );
    }
}
