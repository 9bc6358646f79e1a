//! Findings as a namespace's user sees them: objects of their namespace by name, the others only
//! counted, so nothing of another namespace leaks into a message.

use serde_json::{Value, json};

use crate::crd::safety::{
    Assessment, Verdict, Viewer, ViolationKind, assess, check, single_version_crd, summary,
    summary_for,
};

fn crd(max: i64) -> Value {
    single_version_crd(
        "things.example.com",
        "example.com",
        "Thing",
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "n": {"type": "integer", "maximum": max}}}}}),
    )
}

fn thing(namespace: Option<&str>, name: &str, n: i64) -> Value {
    let mut o = json!({"apiVersion": "example.com/v1", "kind": "Thing",
                       "metadata": {"name": name}, "spec": {"n": n}});
    if let Some(ns) = namespace {
        o["metadata"]["namespace"] = json!(ns);
    }
    o
}

fn objects() -> Vec<Value> {
    vec![
        thing(Some("team-a"), "mine", 50),
        thing(Some("team-b"), "secret-orders", 60),
        thing(Some("team-b"), "secret-payroll", 70),
        thing(Some("team-c"), "other", 80),
        thing(None, "cluster-wide", 90),
    ]
}

#[test]
fn a_tenant_sees_its_own_objects_and_counts_of_the_rest() {
    let (live, new) = (crd(100), crd(10));
    let tenant = assess(&live, &new, &objects(), Viewer::Namespace("team-a"));
    assert!(tenant.blocks());
    let named: Vec<&str> = tenant
        .findings
        .iter()
        .filter_map(|v| v.object.as_deref())
        .collect();
    assert_eq!(named, ["team-a/mine"]);
    assert_eq!(tenant.hidden.len(), 1);
    assert_eq!(tenant.hidden[0].objects, 4);
    assert_eq!(tenant.hidden[0].kind, ViolationKind::InvalidExistingObject);
    let text = tenant.summary(10);
    for secret in [
        "team-b",
        "secret",
        "team-c",
        "other",
        "cluster-wide",
        "60",
        "70",
    ] {
        assert!(!text.contains(secret), "{secret} leaks into {text:?}");
    }
    assert!(
        text.contains(
            "things.example.com: 4 objects outside your namespace (v1) are invalid under the new schema"
        ),
        "{text}"
    );
    assert!(text.contains("team-a/mine"), "{text}");
    // The schema finding itself is about the CRD, not an object: every viewer sees it.
    assert!(text.contains("maximum tightens from 100 to 10"), "{text}");
}

#[test]
fn a_cluster_admin_sees_everything_and_counts_match() {
    let (live, new) = (crd(100), crd(10));
    let admin = assess(&live, &new, &objects(), Viewer::Cluster);
    assert!(admin.hidden.is_empty());
    assert_eq!(
        admin
            .findings
            .iter()
            .filter(|v| v.kind == ViolationKind::InvalidExistingObject)
            .count(),
        5
    );
    let violations = check(&live, &new, &objects());
    assert_eq!(
        summary_for(&violations, Viewer::Cluster, 99),
        summary(&violations, 99)
    );
    let tenant = summary_for(&violations, Viewer::Namespace("team-z"), 99);
    assert_eq!(
        tenant,
        "things.example.com: 5 objects outside your namespace (v1) are invalid under the new schema"
    );
}

#[test]
fn hidden_warnings_do_not_block_and_one_object_reads_in_the_singular() {
    let (live, new) = (crd(10), crd(10));
    // Already invalid under the live schema: ratcheted, a warning.
    let a = assess(
        &live,
        &new,
        &[thing(Some("team-b"), "x", 50)],
        Viewer::Namespace("team-a"),
    );
    assert!(!a.blocks());
    assert_eq!(a.hidden.len(), 1);
    assert_eq!(a.hidden[0].verdict, Verdict::Warns);
    assert_eq!(
        a.summary(3),
        "things.example.com: 1 object outside your namespace (v1) is invalid under the new schema \
         (not blocking)"
    );
    assert_eq!(Assessment::default().summary(3), "");
}
