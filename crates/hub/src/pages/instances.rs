//! What a package's page shows of its installs: each Subscription the person may read, the
//! instances of the CRDs they own with their status conditions, what could not be read, and
//! after a delist what to reclaim. Everything from the cluster is escaped.

use std::fmt::Write as _;

use crate::{
    html::escape,
    instances::{
        Instances, Reach, Reclaim,
        view::{Instance, KindView},
    },
};

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Says where a list reached when it was not every namespace: the API server's refusal, the
/// namespaces read instead, and those refused too.
fn reach_note(what: &str, reach: &Reach) -> String {
    if reach.all_namespaces || (reach.refusal.is_none() && reach.namespaces.is_empty()) {
        return String::new();
    }
    let mut note = format!("{} could not be listed across namespaces", escape(what));
    if let Some(refusal) = &reach.refusal {
        let _ = write!(note, " ({})", escape(refusal));
    }
    if reach.namespaces.is_empty() {
        note.push_str("; no namespace could be read one by one either.");
    } else {
        let _ = write!(
            note,
            "; read in {} only: {}.",
            plural(reach.namespaces.len(), "namespace", "namespaces"),
            escape(&reach.namespaces.join(", "))
        );
    }
    if !reach.not_readable.is_empty() {
        let _ = write!(
            note,
            " <span class=\"not-readable\">{} not readable: {}.</span>",
            plural(reach.not_readable.len(), "namespace", "namespaces"),
            escape(&reach.not_readable.join(", "))
        );
    }
    if reach.not_tried > 0 {
        let _ = write!(
            note,
            " {} more not looked in.",
            plural(reach.not_tried, "namespace", "namespaces")
        );
    }
    format!("<p class=\"detail reach\">{note}</p>")
}

/// What to reclaim, under the delisting notice: the installs that keep running what is
/// delisted and their instances.
pub fn reclaim(body: &mut String, instances: Option<&Instances>) {
    let Some(reclaim) = instances.and_then(|i| i.reclaim.as_ref()) else {
        return;
    };
    body.push_str("<section class=\"reclaim\" id=\"reclaim\"><h2>To reclaim</h2>");
    if reclaim.installs.is_empty() {
        body.push_str("<p class=\"empty\">No install you may read runs what is delisted.</p>");
    } else {
        let _ = write!(
            body,
            "<p>Catalog {} delists {}: these installs keep running without upgrades. Migrate or delete them and their custom resources.</p><ul class=\"reclaim-installs\">",
            escape(&reclaim.catalog),
            if reclaim.whole {
                "this package"
            } else {
                "the versions they run"
            }
        );
        for install in &reclaim.installs {
            let _ = write!(
                body,
                "<li data-namespace=\"{ns}\" data-subscription=\"{name}\">Subscription <strong>{ns}/{name}</strong>{}",
                install
                    .version
                    .as_deref()
                    .map(|v| format!(" (version {})", escape(v)))
                    .unwrap_or_default(),
                ns = escape(&install.namespace),
                name = escape(&install.subscription),
            );
            refs(body, &install.instances, "no custom resources of its kinds");
            body.push_str("</li>");
        }
        body.push_str("</ul>");
    }
    if !reclaim.unwatched.is_empty() {
        body.push_str("<p>And its custom resources in namespaces no install watches:</p>");
        refs(body, &reclaim.unwatched, "");
    }
    incomplete_note(body, reclaim, instances);
    body.push_str("</section>");
}

fn incomplete_note(body: &mut String, reclaim: &Reclaim, instances: Option<&Instances>) {
    if !reclaim.incomplete {
        return;
    }
    body.push_str("<p class=\"message warning\" id=\"reclaim-incomplete\">Not everything could be listed: there may be more than shown.</p>");
    if let Some(instances) = instances {
        body.push_str(&reach_note("Subscriptions", &instances.subscriptions));
    }
}

fn refs(body: &mut String, refs: &[crate::instances::view::InstanceRef], none: &str) {
    if refs.is_empty() {
        if !none.is_empty() {
            let _ = write!(body, " <span class=\"empty\">({none})</span>");
        }
        return;
    }
    body.push_str("<ul class=\"instance-refs\">");
    for r in refs {
        let _ = write!(body, "<li>{}</li>", escape(&r.to_string()));
    }
    body.push_str("</ul>");
}

/// The Installed section: shown only where the person may read an install of the package, so
/// a page of a package installed nowhere stays as it was.
pub fn section(body: &mut String, instances: Option<&Instances>) {
    let Some(instances) = instances.filter(|i| !i.installs.is_empty()) else {
        return;
    };
    body.push_str("<section class=\"instances\" id=\"instances\"><h2>Installed</h2>");
    body.push_str(&reach_note("Subscriptions", &instances.subscriptions));
    body.push_str("<table class=\"installs\"><thead><tr><th>Subscription</th><th>Version</th><th>Watches</th><th>State</th></tr></thead><tbody>");
    for install in &instances.installs {
        let _ = write!(
            body,
            "<tr data-namespace=\"{ns}\" data-subscription=\"{name}\"><td>{ns}/{name}</td><td>{}{}</td><td>{}</td><td>{}</td></tr>",
            escape(install.version.as_deref().unwrap_or("-")),
            if install.delisted {
                " <span class=\"badge delisted\">delisted</span>"
            } else {
                ""
            },
            if install.all_namespaces {
                "every namespace".to_string()
            } else {
                escape(&install.watches.join(", "))
            },
            escape(install.state.as_deref().unwrap_or("-")),
            ns = escape(&install.namespace),
            name = escape(&install.subscription),
        );
    }
    body.push_str("</tbody></table>");
    if instances.more_installs > 0 {
        let _ = write!(
            body,
            "<p class=\"detail\">{} not listed.</p>",
            plural(instances.more_installs, "more install", "more installs")
        );
    }
    for kind in &instances.kinds {
        kind_table(body, kind);
    }
    body.push_str("</section>");
}

fn kind_table(body: &mut String, kind: &KindView) {
    let k = &kind.kind;
    let _ = write!(
        body,
        "<section class=\"kind\" data-crd=\"{}\"><h3>{} <span class=\"detail\">{}/{}</span></h3>",
        escape(&k.crd),
        escape(&k.kind),
        escape(&k.crd),
        escape(&k.version)
    );
    if let Some(problem) = &kind.problem {
        let _ = write!(
            body,
            "<p class=\"message warning\">{}</p></section>",
            escape(problem)
        );
        return;
    }
    body.push_str(&reach_note(&k.plural, &kind.reach));
    if kind.instances.is_empty() {
        let _ = write!(
            body,
            "<p class=\"empty\">No {} where you may read them.</p></section>",
            escape(&k.kind)
        );
        return;
    }
    body.push_str("<table class=\"instances\"><thead><tr><th>Namespace</th><th>Name</th><th>Age</th><th>Conditions</th></tr></thead><tbody>");
    for instance in &kind.instances {
        row(body, instance);
    }
    body.push_str("</tbody></table>");
    if kind.more > 0 || kind.more_uncounted {
        let _ = write!(
            body,
            "<p class=\"detail more\">{} not listed.</p>",
            if kind.more > 0 {
                format!(
                    "{}{}",
                    if kind.more_uncounted { "At least " } else { "" },
                    plural(kind.more as usize, "more", "more")
                )
            } else {
                "More".to_string()
            }
        );
    }
    body.push_str("</section>");
}

fn row(body: &mut String, instance: &Instance) {
    let _ = write!(
        body,
        "<tr data-namespace=\"{ns}\" data-name=\"{name}\"><td>{ns}</td><td>{name}</td><td{}>{}</td><td>",
        instance
            .created
            .as_deref()
            .map(|c| format!(" title=\"{}\"", escape(c)))
            .unwrap_or_default(),
        escape(instance.age.as_deref().unwrap_or("-")),
        ns = escape(instance.namespace.as_deref().unwrap_or("")),
        name = escape(&instance.name),
    );
    if instance.conditions.is_empty() {
        body.push_str("<span class=\"empty\">no conditions</span></td></tr>");
        return;
    }
    body.push_str("<ul class=\"conditions\">");
    for c in &instance.conditions {
        // The class comes from a fixed set, never from the resource.
        let class = match c.status.as_str() {
            "True" => "true",
            "False" => "false",
            _ => "unknown",
        };
        let _ = write!(
            body,
            "<li class=\"status-{class}\"><strong>{}</strong> {}{}{}</li>",
            escape(&c.type_),
            escape(&c.status),
            if c.reason.is_empty() {
                String::new()
            } else {
                format!(" <span class=\"reason\">{}</span>", escape(&c.reason))
            },
            if c.message.is_empty() {
                String::new()
            } else {
                format!(": <span class=\"detail\">{}</span>", escape(&c.message))
            },
        );
    }
    body.push_str("</ul></td></tr>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instances::{
        OwnedKind,
        view::{InstallView, InstanceCondition, InstanceRef, ReclaimInstall},
    };

    fn instances() -> Instances {
        let kind = OwnedKind::new("databases.acme.dev", "v1", "Database").unwrap();
        Instances {
            subscriptions: Reach::everywhere(),
            installs: vec![InstallView {
                namespace: "team-a".into(),
                subscription: "db<x>".into(),
                version: Some("1.0.0".into()),
                csv: Some("acme-db.v1.0.0".into()),
                state: Some("AtLatestKnown".into()),
                all_namespaces: false,
                watches: vec!["team-a".into()],
                delisted: true,
            }],
            more_installs: 0,
            kinds: vec![KindView {
                kind,
                problem: None,
                reach: Reach {
                    all_namespaces: false,
                    refusal: Some("databases is forbidden: User \"jane\"".into()),
                    namespaces: vec!["team-a".into()],
                    not_readable: vec!["team-b".into(), "team-c".into()],
                    not_tried: 0,
                },
                instances: vec![Instance {
                    namespace: Some("team-a".into()),
                    name: "orders".into(),
                    created: Some("2026-01-01T00:00:00Z".into()),
                    age: Some("2d".into()),
                    conditions: vec![InstanceCondition {
                        type_: "Ready".into(),
                        status: "False\" onmouseover=\"x".into(),
                        reason: "Pending".into(),
                        message: "<script>alert(1)</script>".into(),
                    }],
                }],
                more: 3,
                more_uncounted: false,
            }],
            reclaim: Some(Reclaim {
                catalog: "vendor".into(),
                whole: true,
                installs: vec![ReclaimInstall {
                    namespace: "team-a".into(),
                    subscription: "db<x>".into(),
                    version: Some("1.0.0".into()),
                    instances: vec![InstanceRef {
                        kind: "Database".into(),
                        namespace: Some("team-a".into()),
                        name: "orders".into(),
                    }],
                }],
                unwatched: vec![],
                incomplete: true,
            }),
        }
    }

    #[test]
    fn the_section_lists_installs_and_instances_escaped_and_says_what_was_refused() {
        let mut body = String::new();
        section(&mut body, Some(&instances()));
        assert!(body.contains("<tr data-namespace=\"team-a\" data-subscription=\"db&lt;x&gt;\"><td>team-a/db&lt;x&gt;</td><td>1.0.0 <span class=\"badge delisted\">delisted</span></td><td>team-a</td><td>AtLatestKnown</td></tr>"), "{body}");
        assert!(body.contains("<tr data-namespace=\"team-a\" data-name=\"orders\"><td>team-a</td><td>orders</td><td title=\"2026-01-01T00:00:00Z\">2d</td>"));
        assert!(body.contains("<li class=\"status-unknown\"><strong>Ready</strong> False&quot; onmouseover=&quot;x <span class=\"reason\">Pending</span>: <span class=\"detail\">&lt;script&gt;alert(1)&lt;/script&gt;</span></li>"), "{body}");
        assert!(!body.contains("<script"));
        assert!(body.contains("databases could not be listed across namespaces (databases is forbidden: User &quot;jane&quot;); read in 1 namespace only: team-a. <span class=\"not-readable\">2 namespaces not readable: team-b, team-c.</span>"), "{body}");
        assert!(body.contains("<p class=\"detail more\">3 more not listed.</p>"));
        assert!(!body.contains("Subscriptions could not"), "read everywhere");
    }

    #[test]
    fn nothing_is_shown_for_a_package_installed_nowhere_the_person_may_read() {
        let mut body = String::new();
        section(&mut body, None);
        reclaim(&mut body, None);
        let empty = Instances::default();
        section(&mut body, Some(&empty));
        reclaim(&mut body, Some(&empty));
        assert_eq!(body, "");
    }

    #[test]
    fn after_a_delist_the_page_says_what_to_reclaim() {
        let mut shown = instances();
        shown.subscriptions = Reach {
            refusal: Some("subscriptions is forbidden".into()),
            namespaces: vec!["team-a".into()],
            ..Reach::default()
        };
        let mut body = String::new();
        reclaim(&mut body, Some(&shown));
        assert!(body.starts_with("<section class=\"reclaim\" id=\"reclaim\"><h2>To reclaim</h2><p>Catalog vendor delists this package:"), "{body}");
        assert!(body.contains("<li data-namespace=\"team-a\" data-subscription=\"db&lt;x&gt;\">Subscription <strong>team-a/db&lt;x&gt;</strong> (version 1.0.0)<ul class=\"instance-refs\"><li>Database team-a/orders</li></ul></li>"), "{body}");
        assert!(body.contains("id=\"reclaim-incomplete\""));
        assert!(body.contains("Subscriptions could not be listed across namespaces (subscriptions is forbidden); read in 1 namespace only: team-a."));

        let none = Instances {
            reclaim: Some(Reclaim {
                catalog: "vendor".into(),
                whole: false,
                installs: vec![],
                unwatched: vec![InstanceRef {
                    kind: "Database".into(),
                    namespace: None,
                    name: "global".into(),
                }],
                incomplete: false,
            }),
            ..Instances::default()
        };
        let mut body = String::new();
        reclaim(&mut body, Some(&none));
        assert!(body.contains("No install you may read runs what is delisted."));
        assert!(body.contains("<li>Database global</li>"));
        assert!(!body.contains("reclaim-incomplete"));
    }
}
