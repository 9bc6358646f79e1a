//! What `windlass adopt` prints: what OLM must let go of first, then every object and how it
//! changes hands, the differences found, and what blocks.

use std::fmt::Write as _;

use crate::olm::Adoption;

/// The adoption of one OLM Subscription, for a person.
pub fn render(adoption: &Adoption) -> String {
    let mut out = String::new();
    let (tool, what) = if adoption.origin.starts_with("helm:") {
        ("Helm", "release")
    } else {
        ("OLM", "Subscription")
    };
    let _ = writeln!(
        out,
        "{tool} {what} {}/{}: package {}, running {}",
        adoption.namespace, adoption.name, adoption.package, adoption.csv
    );
    section(
        &mut out,
        &format!("Before adopting, {tool} must let go"),
        &adoption.stop_first,
    );
    if let Some(catalog) = &adoption.catalog.create {
        let image = catalog["spec"]["source"]["image"]
            .as_str()
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  create   Catalog {} (image {image})",
            adoption.catalog.name
        );
    } else if !adoption.catalog.name.is_empty() {
        let _ = writeln!(out, "  reuse    Catalog {}", adoption.catalog.name);
    }
    if !adoption.subscription.is_null() {
        let _ = writeln!(
            out,
            "  create   Subscription {}/{} (windlass.dev; starting at {}, approval {} once adopted)",
            adoption.namespace, adoption.name, adoption.csv, adoption.approval
        );
    }
    for take in &adoption.take_over {
        let _ = writeln!(out, "  take     {}: {}", take.object, take.why);
    }
    for replaced in &adoption.replaced {
        let _ = writeln!(out, "  replace  {}: {}", replaced.object, replaced.why);
    }
    section(
        &mut out,
        "Differences between OLM's view and the cluster",
        &adoption.differences,
    );
    section(&mut out, "Cannot adopt", &adoption.blockers);
    section(
        &mut out,
        &format!("Once windlass runs it, let {tool} go (in this order)"),
        &adoption.let_go,
    );
    out
}

fn section(out: &mut String, title: &str, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(out, "{title}:");
    for line in lines {
        let _ = writeln!(out, "  - {line}");
    }
}
