//! The rules of [`super::check`] on the built-in catalog's acme-db CRDs and on small synthetic
//! ones, and the validator keyword by keyword. The other rules are tested in `tests/`.

mod cel_rules;
mod pruning;
mod schema_rules;
mod unchanged;
mod viewer;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::validate::validate;
use super::{
    ViolationKind, check, findings, served_versions, stored_versions, summary, versions_to_check,
};

const ACME_DB_1_0_0: &str =
    include_str!("../../../../../bundles/acme-db/1.0.0/databases.acme.windlass.dev.crd.yaml");
const ACME_DB_1_1_0: &str =
    include_str!("../../../../../bundles/acme-db/1.1.0/databases.acme.windlass.dev.crd.yaml");

pub(super) fn yaml(text: &str) -> Value {
    let mut docs = crate::yaml::parse_documents("test.yaml", text)
        .expect("valid YAML")
        .documents;
    assert_eq!(docs.len(), 1);
    docs.remove(0)
}

/// The CRD as the API server returns it after 1.0.0 was installed.
fn live_acme_db() -> Value {
    let mut crd = yaml(ACME_DB_1_0_0);
    crd["status"] = json!({"storedVersions": ["v1"]});
    crd
}

fn database(version: &str, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": format!("acme.windlass.dev/{version}"),
        "kind": "Database",
        "metadata": {"name": name, "namespace": "team-a", "uid": "1234", "generation": 3},
        "spec": spec,
        "status": {"phase": "Ready", "readyReplicas": 3},
    })
}

fn valid_spec() -> Value {
    json!({
        "engine": "postgres",
        "version": "16.4",
        "replicas": 3,
        "storage": {"size": "20Gi"},
        "backup": {"enabled": true, "schedule": "0 2 * * *", "retentionDays": 20},
    })
}

#[test]
fn acme_db_1_0_0_to_1_1_0_is_safe_for_a_valid_database() {
    let live = live_acme_db();
    let new = yaml(ACME_DB_1_1_0);
    let existing = [database("v1", "orders", valid_spec())];
    assert_eq!(check(&live, &new, &existing), vec![]);
    assert_eq!(versions_to_check(&live, &new), ["v1"]);
    assert_eq!(served_versions(&new), ["v1", "v1alpha1"]);
    assert_eq!(stored_versions(&live), ["v1"]);
    assert_eq!(stored_versions(&new), Vec::<String>::new());
}

#[test]
fn a_tighter_maximum_names_the_object_and_the_field() {
    let live = live_acme_db();
    let mut new = yaml(ACME_DB_1_1_0);
    new["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["backup"]
        ["properties"]["retentionDays"]["maximum"] = json!(10);
    let existing = [
        database("v1", "orders", valid_spec()),
        database("v1", "small", json!({"engine": "mysql"})),
    ];
    let violations = check(&live, &new, &existing);
    assert_eq!(violations.len(), 1, "{violations:#?}");
    let v = &violations[0];
    assert_eq!(v.kind, ViolationKind::InvalidExistingObject);
    assert_eq!(v.object.as_deref(), Some("team-a/orders"));
    assert_eq!(v.version.as_deref(), Some("v1"));
    assert_eq!(v.field.as_deref(), Some("spec.backup.retentionDays"));
    assert_eq!(
        v.to_string(),
        "databases.acme.windlass.dev: existing Database team-a/orders (v1) is invalid under the \
         new schema: spec.backup.retentionDays: must be <= 10, got 20"
    );
}

#[test]
fn every_error_of_every_object_is_reported_and_old_ones_do_not_block() {
    let live = live_acme_db();
    let new = yaml(ACME_DB_1_1_0);
    let bad = json!({
        "engine": "oracle",
        "replicas": 9,
        "storage": {"size": "lots"},
        "tls": {"enabled": "yes"},
    });
    let existing = [
        database("v1", "a", bad.clone()),
        database("v1", "b", json!({"replicas": 0})),
    ];
    let found: Vec<(String, String, bool)> = findings(&live, &new, &existing)
        .into_iter()
        .filter(|v| v.kind == ViolationKind::InvalidExistingObject)
        .map(|v| (v.object.unwrap(), v.field.unwrap(), v.ratcheted))
        .collect();
    // Only tls is new in 1.1.0: the other errors are the same under 1.0.0, so they are
    // ratcheted and only tls blocks.
    let expected = [
        ("team-a/a", "spec.engine", true),
        ("team-a/a", "spec.replicas", true),
        ("team-a/a", "spec.storage.size", true),
        ("team-a/a", "spec.tls.enabled", false),
        ("team-a/b", "spec.engine", true),
        ("team-a/b", "spec.replicas", true),
    ];
    let expected: Vec<(String, String, bool)> = expected
        .iter()
        .map(|(o, f, r)| (o.to_string(), f.to_string(), *r))
        .collect();
    assert_eq!(found, expected);
    let blocking: Vec<String> = check(&live, &new, &existing)
        .into_iter()
        .map(|v| v.field.unwrap())
        .collect();
    assert_eq!(blocking, ["spec.tls.enabled"]);
}

#[test]
fn rules_table() {
    let live = live_acme_db();
    let new = yaml(ACME_DB_1_1_0);
    let mut v1alpha1_stored = live.clone();
    v1alpha1_stored["status"]["storedVersions"] = json!(["v1beta1", "v1"]);
    let mut namespaced_to_cluster = new.clone();
    namespaced_to_cluster["spec"]["scope"] = json!("Cluster");
    let mut v1_not_served = new.clone();
    v1_not_served["spec"]["versions"][0]["served"] = json!(false);
    let mut v1beta1_kept_unserved = new.clone();
    v1beta1_kept_unserved["spec"]["versions"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "v1beta1", "served": false, "storage": false,
                     "schema": {"openAPIV3Schema": {"type": "object"}}}));
    let invalid = database("v1", "orders", json!({"replicas": 7}));
    type Case<'a> = (
        &'a str,
        &'a Value,
        &'a Value,
        Vec<Value>,
        Vec<ViolationKind>,
    );
    let cases: Vec<Case> = vec![
        (
            "same CRD: an object that is already invalid does not block",
            &live,
            &live,
            vec![invalid.clone()],
            vec![],
        ),
        (
            "an object invalid only under the new CRD blocks",
            &live,
            &new,
            vec![database(
                "v1",
                "orders",
                json!({"engine": "mysql", "tls": {"enabled": 1}}),
            )],
            vec![ViolationKind::InvalidExistingObject],
        ),
        (
            "no live CRD: creation",
            &Value::Null,
            &new,
            vec![invalid.clone()],
            vec![],
        ),
        (
            "stored version removed",
            &v1alpha1_stored,
            &new,
            vec![],
            vec![ViolationKind::StoredVersionRemoved],
        ),
        (
            "stored version kept, unserved",
            &v1alpha1_stored,
            &v1beta1_kept_unserved,
            vec![],
            vec![],
        ),
        (
            "scope changed",
            &live,
            &namespaced_to_cluster,
            vec![],
            vec![ViolationKind::ScopeChanged],
        ),
        (
            "version no longer served: its objects are not checked",
            &live,
            &v1_not_served,
            vec![invalid.clone()],
            vec![],
        ),
        (
            "version served only by the new CRD: not checked",
            &live,
            &new,
            vec![database("v1alpha1", "old", json!({}))],
            vec![],
        ),
        (
            "another group or kind: not checked",
            &live,
            &new,
            vec![
                json!({"apiVersion": "other.dev/v1", "kind": "Database", "spec": {}}),
                json!({"apiVersion": "acme.windlass.dev/v1", "kind": "Monitor", "spec": {}}),
                json!({"kind": "Database"}),
            ],
            vec![],
        ),
    ];
    for (name, live, new, existing, expected) in cases {
        let kinds: Vec<ViolationKind> = check(live, new, &existing)
            .into_iter()
            .map(|v| v.kind)
            .collect();
        assert_eq!(kinds, expected, "{name}");
    }
}

#[test]
fn rule_messages_read_well() {
    let mut live = live_acme_db();
    live["status"]["storedVersions"] = json!(["v1beta1", "v1"]);
    let mut new = yaml(ACME_DB_1_1_0);
    new["spec"]["scope"] = json!("Cluster");
    let messages: Vec<String> = check(&live, &new, &[])
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(messages.len(), 2);
    assert!(
        messages[0].starts_with(
            "databases.acme.windlass.dev: version v1beta1 is listed in status.storedVersions \
             but the new definition drops it"
        ),
        "{}",
        messages[0]
    );
    assert_eq!(
        messages[1],
        "databases.acme.windlass.dev: scope would change from Namespaced to Cluster; a CRD's \
         scope cannot change"
    );
    let all = check(&live, &new, &[]);
    assert!(summary(&all, 1).ends_with("(and 1 more)"));
}

#[test]
fn metadata_is_left_to_the_api_server_except_the_name() {
    let schema = json!({
        "type": "object",
        "required": ["metadata", "spec"],
        "properties": {
            "metadata": {"type": "object", "required": ["labels"], "properties": {
                "name": {"type": "string", "maxLength": 5},
                "namespace": {"type": "integer"},
            }},
            "spec": {"type": "object"},
        },
    });
    let mut validator = super::validate::Validator::new();
    let ok = json!({"metadata": {"name": "short", "namespace": "a"}, "spec": {}});
    assert_eq!(validator.validate_object(&schema, &ok), vec![]);
    let long = json!({"metadata": {"name": "too-long"}, "spec": {}});
    let errors = validator.validate_object(&schema, &long);
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0].to_string(),
        "metadata.name: must be at most 5 characters long, got 8"
    );
}

/// The keyword table: `tests/data/crd_safety/keywords.yaml`.
#[test]
fn keywords_table() {
    let cases = yaml(include_str!("../../../tests/data/crd_safety/keywords.yaml"));
    let cases = cases.as_array().expect("a list of cases");
    assert!(cases.len() > 50, "{} cases", cases.len());
    for case in cases {
        let name = case["name"].as_str().expect("a name");
        let errors: Vec<String> = validate(&case["schema"], &case["value"])
            .iter()
            .map(ToString::to_string)
            .collect();
        let expected = case["errors"].as_array().expect("errors");
        assert_eq!(errors.len(), expected.len(), "{name}: {errors:#?}");
        for (error, prefix) in errors.iter().zip(expected) {
            let prefix = prefix.as_str().expect("a string");
            assert!(
                error.starts_with(prefix),
                "{name}: {error:?} does not start with {prefix:?}"
            );
        }
    }
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let keys = prop::sample::select(vec![
        "type",
        "properties",
        "items",
        "required",
        "enum",
        "nullable",
        "default",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        "pattern",
        "format",
        "multipleOf",
        "additionalProperties",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "x-kubernetes-int-or-string",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "spec",
        "status",
        "metadata",
        "name",
        "apiVersion",
        "kind",
        "versions",
        "openAPIV3Schema",
        "schema",
        "served",
        "group",
        "storedVersions",
        "scope",
        "a",
    ]);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        prop::sample::select(vec![
            "object",
            "array",
            "string",
            "integer",
            "number",
            "boolean",
            "set",
            "map",
            "date-time",
            "uuid",
            "cidr",
            "v1",
            "g/v1",
            "^a+$",
            "(",
            "Namespaced",
            "Cluster",
        ])
        .prop_map(Value::from),
        ".*".prop_map(Value::from),
    ];
    leaf.prop_recursive(6, 96, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
            prop::collection::vec((keys.clone(), inner), 0..6).prop_map(|entries| {
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v))
                        .collect(),
                )
            }),
        ]
    })
}

proptest! {
    #[test]
    fn check_never_panics(live in arbitrary_json(), new in arbitrary_json(),
                          existing in prop::collection::vec(arbitrary_json(), 0..3)) {
        let _ = check(&live, &new, &existing);
    }

    #[test]
    fn check_never_panics_on_crd_shaped_input(schema in arbitrary_json(), spec in arbitrary_json(),
                                              stored in arbitrary_json()) {
        let crd = |schema: &Value| json!({
            "metadata": {"name": "things.g"},
            "spec": {"group": "g", "names": {"kind": "Thing"}, "scope": "Namespaced",
                     "versions": [{"name": "v1", "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": schema}}]},
            "status": {"storedVersions": stored},
        });
        let object = json!({"apiVersion": "g/v1", "kind": "Thing",
                            "metadata": {"name": "x", "namespace": "n"}, "spec": spec});
        let violations = check(&crd(&json!({})), &crd(&schema), &[object]);
        for v in violations {
            prop_assert!(!v.to_string().is_empty());
        }
    }
}
