//! `x-kubernetes-validations` rules on existing objects: passing, failing, not evaluated, and
//! the Kubernetes environment (escaped names, typed formats, the extra libraries).

use serde_json::{Value, json};

use crate::crd::safety::{Verdict, Violation, ViolationKind, check, findings, single_version_crd};

fn object(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Thing",
           "metadata": {"name": "alpha-1", "namespace": "team-a"}, "spec": spec})
}

/// The live CRD has `spec` without rules, the new one adds `rule` (a rule object or a rule
/// string) on the spec node.
fn crds(spec: &Value, rule: Value) -> (Value, Value) {
    let root = |spec: &Value| json!({"type": "object", "properties": {"spec": spec}});
    let mut with_rule = spec.clone();
    let rule = if rule.is_string() {
        json!({"rule": rule})
    } else {
        rule
    };
    with_rule["x-kubernetes-validations"] = json!([rule]);
    (
        single_version_crd("things.example.com", "example.com", "Thing", root(spec)),
        single_version_crd(
            "things.example.com",
            "example.com",
            "Thing",
            root(&with_rule),
        ),
    )
}

fn spec_schema() -> Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string"},
        "replicas": {"type": "integer"},
        "ratio": {"type": "number"},
        "items": {"type": "array", "items": {"type": "integer"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "opt": {"type": "integer"},
        "size": {"type": "string"},
        "start": {"type": "string", "format": "date-time"},
        "end": {"type": "string", "format": "date-time"},
        "timeout": {"type": "string", "format": "duration"},
        "namespace": {"type": "string"},
        "x-y": {"type": "string"},
        "port": {"x-kubernetes-int-or-string": true},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
    }})
}

fn spec_value() -> Value {
    json!({
        "name": "alpha", "replicas": 3, "ratio": 1, "items": [1, 2, 3],
        "labels": {"app": "web"}, "size": "500Mi",
        "start": "2024-01-01T00:00:00Z", "end": "2024-01-02T00:00:00+01:00",
        "timeout": "90s", "namespace": "ns", "x-y": "dash", "port": "http",
        "free": {"deep": {"n": 1}},
    })
}

fn run(rule: Value) -> Vec<Violation> {
    let (live, new) = crds(&spec_schema(), rule);
    findings(&live, &new, &[object(spec_value())])
        .into_iter()
        .filter(|v| v.kind.is_about_an_object())
        .collect()
}

#[test]
fn the_kubernetes_environment() {
    // Each rule holds for the object: any finding is a difference from the API server.
    let passing = [
        "self.replicas <= 5",
        "size(self.name) < 10 && self.name.startsWith('al') && self.name.endsWith('ha')",
        "self.name.contains('lph') && self.name.matches('^[a-z]+$')",
        "self.items.all(i, i > 0) && self.items.exists(i, i == 3) && self.items.exists_one(i, i == 2)",
        "self.items.map(i, i * 2).filter(i, i > 2) == [4, 6]",
        "has(self.name) && !has(self.opt)",
        "self.?opt.orValue(7) == 7",
        "self.labels['app'] == 'web' && 'app' in self.labels",
        "self.ratio == 1.0 && type(self.ratio) == double",
        "self.name.upperAscii() == 'ALPHA' && self.name.lowerAscii() == 'alpha'",
        "self.name.split('l') == ['a', 'pha'] && self.name.substring(1, 3) == 'lp'",
        "self.name.indexOf('p') == 2 && self.name.replace('a', 'o') == 'olpho'",
        "['a', 'b'].join('-') == 'a-b' && '  x '.trim() == 'x'",
        "self.items.isSorted() && self.items.sum() == 6 && self.items.min() == 1 && self.items.max() == 3",
        "self.items.indexOf(2) == 1 && self.items.lastIndexOf(9) == -1",
        "'abc123def45'.find('[0-9]+') == '123' && 'abc123def45'.findAll('[0-9]+') == ['123', '45']",
        "isQuantity(self.size) && quantity(self.size).isLessThan(quantity('1Gi'))",
        "quantity('1.5').add(quantity('500m')).asInteger() == 2 && quantity('-1').sign() == -1",
        "quantity('1k').compareTo(quantity('1000')) == 0 && quantity('2Gi').isGreaterThan(quantity('2G'))",
        "self.start < self.end",
        "self.end - self.start == duration('23h')",
        "duration(self.timeout) == duration('1m30s') && self.timeout < duration('2m')",
        "self.__namespace__ == 'ns' && self.x__dash__y == 'dash'",
        "self.port == 'http'",
        "self.free.deep.n == 1",
        "int('12') + 1 == 13 && string(3) == '3'",
    ];
    for rule in passing {
        assert_eq!(run(json!(rule)), vec![], "{rule}");
    }
}

#[test]
fn failing_rules_name_the_object_the_field_and_the_rule() {
    let cases = [
        (
            json!("self.replicas > 5"),
            "spec",
            "failed rule: self.replicas > 5",
        ),
        (
            json!({"rule": "self.replicas > 5", "message": "needs more than 5 replicas"}),
            "spec",
            "needs more than 5 replicas",
        ),
        (
            json!({"rule": "self.replicas > 5",
                   "messageExpression": "'has ' + string(self.replicas) + ' replicas'"}),
            "spec",
            "has 3 replicas",
        ),
        (
            json!({"rule": "self.replicas > 5", "fieldPath": ".replicas"}),
            "spec.replicas",
            "failed rule: self.replicas > 5",
        ),
        (
            json!("self.opt > 0"),
            "spec",
            "No such key: opt evaluating rule: self.opt > 0",
        ),
    ];
    for (rule, path, message) in cases {
        let found = run(rule.clone());
        assert_eq!(found.len(), 1, "{rule}: {found:#?}");
        let v = &found[0];
        assert_eq!(v.kind, ViolationKind::ExistingObjectFailsRule, "{rule}");
        assert_eq!(v.verdict, Verdict::Blocks);
        assert_eq!(v.object.as_deref(), Some("team-a/alpha-1"));
        assert_eq!(v.field.as_deref(), Some(path), "{rule}");
        assert!(
            v.message.starts_with(message) && v.message.contains("(rule: self."),
            "{rule}: {}",
            v.message
        );
    }
}

#[test]
fn rules_that_cannot_be_checked_are_reported_not_crashed_on() {
    for (rule, why) in [
        ("self.replicas >", "does not compile"),
        (
            "self.name.isURL()",
            "isURL, which windlass does not implement",
        ),
        (
            "isURL(self.name)",
            "isURL, which windlass does not implement",
        ),
        (
            "ip(self.name).family() == 4",
            "ip, which windlass does not implement",
        ),
    ] {
        let found = run(json!(rule));
        assert_eq!(found.len(), 1, "{rule}: {found:#?}");
        assert_eq!(found[0].kind, ViolationKind::RuleNotEvaluated, "{rule}");
        assert_eq!(found[0].verdict, Verdict::Warns, "{rule}");
        assert!(
            found[0].message.contains(why),
            "{rule}: {}",
            found[0].message
        );
    }
}

#[test]
fn transition_rules_are_not_evaluated_on_existing_objects() {
    assert_eq!(
        run(json!("self.replicas == oldSelf.replicas + 100")),
        vec![]
    );
    // With optionalOldSelf the rule runs, oldSelf being optional.none().
    let found = run(json!({"rule": "oldSelf.hasValue() || self.replicas > 5",
                           "optionalOldSelf": true}));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].kind, ViolationKind::ExistingObjectFailsRule);
}

#[test]
fn rules_below_lists_maps_and_the_root() {
    let spec = json!({"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "integer",
                  "x-kubernetes-validations": [{"rule": "self < 3"}]}},
        "labels": {"type": "object", "additionalProperties": {"type": "string",
                   "x-kubernetes-validations": [{"rule": "self.size() < 4"}]}},
    }});
    let root = json!({"type": "object", "properties": {"spec": spec},
                      "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('b')"}]});
    let live = single_version_crd(
        "things.example.com",
        "example.com",
        "Thing",
        json!({"type": "object", "properties": {"spec": {"type": "object",
               "x-kubernetes-preserve-unknown-fields": true}}}),
    );
    let new = single_version_crd("things.example.com", "example.com", "Thing", root);
    let found = findings(
        &live,
        &new,
        &[object(
            json!({"items": [1, 5, 2, 7], "labels": {"a": "abc", "b": "abcd"}}),
        )],
    );
    let at: Vec<(ViolationKind, String)> = found
        .iter()
        .filter(|v| v.kind.is_about_an_object())
        .map(|v| (v.kind, v.field.clone().unwrap_or_default()))
        .collect();
    use ViolationKind::ExistingObjectFailsRule as Fails;
    assert_eq!(
        at,
        [
            (Fails, String::new()),
            (Fails, "spec.items[1]".to_string()),
            (Fails, "spec.items[3]".to_string()),
            (Fails, "spec.labels[b]".to_string()),
        ]
    );
}

#[test]
fn schema_errors_of_the_wrong_shape_skip_the_rules_as_the_api_server_does() {
    let (live, new) = crds(&spec_schema(), json!("self.replicas > 5"));
    let mut spec = spec_value();
    spec["replicas"] = json!("three");
    let found: Vec<Violation> = findings(&live, &new, &[object(spec)])
        .into_iter()
        .filter(|v| v.kind.is_about_an_object())
        .collect();
    let kinds: Vec<ViolationKind> = found.iter().map(|v| v.kind).collect();
    // The type error is in both schemas: ratcheted, and no rule failure reported.
    assert_eq!(kinds, [ViolationKind::InvalidExistingObject], "{found:#?}");
    assert!(found[0].ratcheted);
}

#[test]
fn a_rule_the_object_already_failed_does_not_block() {
    let (_, with_rule) = crds(&spec_schema(), json!("self.replicas > 5"));
    let found = findings(&with_rule, &with_rule, &[object(spec_value())]);
    let objects: Vec<&Violation> = found
        .iter()
        .filter(|v| v.kind.is_about_an_object())
        .collect();
    assert_eq!(objects.len(), 1, "{found:#?}");
    assert!(objects[0].ratcheted && objects[0].verdict == Verdict::Warns);
    assert_eq!(
        check(&with_rule, &with_rule, &[object(spec_value())]),
        vec![]
    );
}
