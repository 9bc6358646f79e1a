use k8s_openapi::jiff::Timestamp;
use serde_json::json;

use super::{view::*, *};
use crate::synthetic;

fn subscription(namespace: &str, name: &str, spec: Value, status: Value) -> Subscription {
    serde_json::from_value(json!({
        "apiVersion": "windlass.dev/v1alpha1", "kind": "Subscription",
        "metadata": {"namespace": namespace, "name": name},
        "spec": spec, "status": status,
    }))
    .unwrap()
}

fn blueprint(namespace: &str, name: &str, csv: &str, catalog: &str, version: &str) -> Blueprint {
    serde_json::from_value(json!({
        "apiVersion": "windlass.dev/v1alpha1", "kind": "Blueprint",
        "metadata": {"namespace": namespace, "name": name},
        "spec": {
            "package": "synthetic-0", "clusterServiceVersionName": csv,
            "bundle": {"package": "synthetic-0", "clusterServiceVersionName": csv, "version": version, "catalog": catalog},
        },
        "status": {"version": version},
    }))
    .unwrap()
}

fn install(namespace: &str, csv: &str, targets: Option<Value>) -> Install {
    let mut spec = json!({"package": "synthetic-0", "catalog": "vendor"});
    if let Some(targets) = targets {
        spec["targetNamespaces"] = targets;
    }
    let version = csv.trim_start_matches("synthetic-0.v");
    Install {
        subscription: subscription(namespace, "db", spec, json!({"installedCSV": csv})),
        blueprint: Some(blueprint(namespace, "db", csv, "vendor", version)),
    }
}

fn widget() -> OwnedKind {
    OwnedKind::new("widget0s.synthetic.windlass.dev", "v1", "Widget0").unwrap()
}

fn object(namespace: &str, name: &str, status: Value) -> Object {
    Object {
        metadata: serde_json::from_value(json!({
            "namespace": namespace, "name": name,
            "creationTimestamp": "2026-01-01T00:00:00Z",
        }))
        .unwrap(),
        status: Some(status),
    }
}

fn now() -> Timestamp {
    "2026-01-03T05:00:00Z".parse().unwrap()
}

fn content() -> CatalogContent {
    synthetic::content("vendor", synthetic::catalog(1, 3))
}

#[test]
fn the_owned_crds_are_read_from_the_definition_and_bad_entries_left_out() {
    let definition = Definition::from(json!({"spec": {"customresourcedefinitions": {
        "owned": [
            {"name": "databases.acme.dev", "version": "v1", "kind": "Database"},
            {"name": "backups.acme.dev", "version": "v1beta1", "kind": "Backup"},
            {"name": "databases.acme.dev", "version": "v1", "kind": "Database"},
            {"name": "nogroup", "version": "v1", "kind": "X"},
            {"name": "a.b.c", "kind": "NoVersion"},
        ],
        "required": [{"name": "certs.other.dev", "version": "v1", "kind": "Cert"}],
    }}}));
    let kinds = owned_kinds(&definition);
    let names: Vec<_> = kinds.iter().map(|k| k.crd.as_str()).collect();
    assert_eq!(names, ["backups.acme.dev", "databases.acme.dev"]);
    assert_eq!(kinds[1].plural, "databases");
    assert_eq!(kinds[1].group, "acme.dev");
    assert!(owned_kinds(&Definition::default()).is_empty());
}

#[test]
fn installs_are_the_packages_from_this_catalog_with_their_blueprints() {
    let subs = vec![
        subscription(
            "b",
            "db",
            json!({"package": "synthetic-0"}),
            json!({"blueprint": "db-bp"}),
        ),
        subscription(
            "a",
            "db",
            json!({"package": "synthetic-0", "catalog": "vendor"}),
            json!({}),
        ),
        subscription(
            "a",
            "other",
            json!({"package": "synthetic-1", "catalog": "vendor"}),
            json!({}),
        ),
        subscription(
            "c",
            "db",
            json!({"package": "synthetic-0", "catalog": "mirror"}),
            json!({}),
        ),
        // Names no catalog, but its Blueprint resolved from another one.
        subscription("d", "db", json!({"package": "synthetic-0"}), json!({})),
    ];
    let blueprints = vec![
        blueprint("b", "db-bp", "synthetic-0.v1.1.0", "vendor", "1.1.0"),
        blueprint("b", "db", "synthetic-0.v1.0.0", "vendor", "1.0.0"),
        blueprint("d", "db", "synthetic-0.v1.0.0", "mirror", "1.0.0"),
    ];
    let found = installs(subs, &blueprints, "synthetic-0", "vendor");
    let names: Vec<_> = found.iter().map(|i| (i.namespace(), i.name())).collect();
    assert_eq!(names, [("a", "db"), ("b", "db")]);
    assert!(found[0].blueprint.is_none());
    assert_eq!(found[0].csv_name(), None);
    assert_eq!(found[1].csv_name(), Some("synthetic-0.v1.1.0"));
    assert_eq!(found[1].catalog(), Some("vendor"));
}

#[test]
fn one_csv_is_read_per_version_and_the_catalog_answers_for_csvs_not_readable() {
    let installs = vec![
        install("a", "synthetic-0.v1.2.0", None),
        install("b", "synthetic-0.v1.2.0", None),
        install("c", "synthetic-0.v1.1.0", None),
    ];
    assert_eq!(
        csvs_to_read(&installs),
        [
            ("a".to_string(), "synthetic-0.v1.2.0".to_string()),
            ("c".to_string(), "synthetic-0.v1.1.0".to_string())
        ]
    );
    let content = content();
    let package = &content.catalog.packages["synthetic-0"];
    let read = OwnedKind::new("gadgets.acme.dev", "v2", "Gadget").unwrap();
    let owned = BTreeMap::from([("synthetic-0.v1.2.0".to_string(), vec![read.clone()])]);
    assert_eq!(
        kinds_of(&installs[0], &owned, &content, package),
        std::slice::from_ref(&read)
    );
    // v1.1.0's CSV was not readable: its bundle in the catalog says what it owns.
    assert_eq!(
        kinds_of(&installs[2], &owned, &content, package),
        [widget()]
    );
    assert_eq!(
        kinds_to_list(&installs, &owned, &content, package),
        [read, widget()]
    );
}

#[test]
fn what_an_install_watches_follows_its_target_namespaces_and_else_its_install_modes() {
    let content = content();
    let package = &content.catalog.packages["synthetic-0"];
    let own = install("a", "synthetic-0.v1.2.0", Some(json!(["a", "x"])));
    assert_eq!(
        own.watched(&content, package),
        Some(vec!["a".into(), "x".into()])
    );
    let all = install("a", "synthetic-0.v1.2.0", Some(json!([""])));
    assert_eq!(all.watched(&content, package), None);
    // Unnamed: the synthetic bundles support AllNamespaces.
    let unnamed = install("a", "synthetic-0.v1.2.0", None);
    assert_eq!(unnamed.watched(&content, package), None);

    let known = vec!["mine".to_string(), "a".to_string(), String::new()];
    let (tried, left_out) = namespaces_to_try(&[own, all], &content, package, &known);
    assert_eq!(tried, ["a", "x", "mine"]);
    assert_eq!(left_out, 0);
    let many: Vec<Install> = (0..MAX_NAMESPACES + 3)
        .map(|n| install(&format!("ns-{n}"), "synthetic-0.v1.2.0", Some(json!([""]))))
        .collect();
    let (tried, left_out) = namespaces_to_try(&many, &content, package, &[]);
    assert_eq!((tried.len(), left_out), (MAX_NAMESPACES, 3));
}

#[test]
fn conditions_are_read_as_the_resource_has_them_and_anything_else_tolerated() {
    let status = json!({"conditions": [
        {"type": "Ready", "status": "True", "reason": "Running", "message": "3/3 up"},
        {"type": "Degraded", "status": false},
        {"status": "True"},
        "not an object",
    ]});
    let conditions = conditions(&status);
    assert_eq!(conditions.len(), 2);
    assert_eq!(
        conditions[0],
        InstanceCondition {
            type_: "Ready".into(),
            status: "True".into(),
            reason: "Running".into(),
            message: "3/3 up".into()
        }
    );
    assert_eq!(conditions[1].status, "false");
    assert!(super::view::conditions(&json!({"phase": "Ready"})).is_empty());
    assert!(super::view::conditions(&json!({"conditions": {"Ready": true}})).is_empty());
    assert!(super::view::conditions(&Value::Null).is_empty());
}

#[test]
fn ages_read_as_kubectl_rounds_them() {
    let then: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
    let at = |s: i64| then + k8s_openapi::jiff::SignedDuration::from_secs(s);
    assert_eq!(age(then, at(45)), "45s");
    assert_eq!(age(then, at(119)), "119s");
    assert_eq!(age(then, at(3600)), "60m");
    assert_eq!(age(then, at(5 * 3600)), "5h");
    assert_eq!(age(then, at(3 * 86400)), "3d");
    assert_eq!(age(then, at(800 * 86400)), "2y");
    assert_eq!(age(then, at(-10)), "0s", "a clock behind the server's");
}

fn gathered(installs: Vec<Install>, items: Vec<Object>, reach: Reach) -> Gathered {
    Gathered {
        subscriptions: Reach::everywhere(),
        installs,
        owned: BTreeMap::new(),
        kinds: vec![KindRead {
            kind: widget(),
            read: Ok(Objects {
                reach,
                items,
                more: 0,
                more_uncounted: false,
            }),
        }],
    }
}

#[test]
fn instances_are_listed_sorted_with_conditions_and_bounded() {
    let content = content();
    let package = &content.catalog.packages["synthetic-0"];
    let mut items: Vec<Object> = (0..MAX_PER_KIND + 5)
        .map(|n| object("b", &format!("w-{n:03}"), json!({})))
        .collect();
    items.push(object(
        "a",
        "first",
        json!({"conditions": [{"type": "Ready", "status": "False", "reason": "Pending"}]}),
    ));
    let mut gathered = gathered(
        vec![install("a", "synthetic-0.v1.2.0", None)],
        items,
        Reach::everywhere(),
    );
    if let Ok(objects) = &mut gathered.kinds[0].read {
        objects.more = 10;
    }
    let shown = Instances::build(&content, package, &gathered, now());
    assert!(shown.reclaim.is_none(), "nothing is delisted");
    assert_eq!(shown.installs[0].version.as_deref(), Some("1.2.0"));
    assert!(shown.installs[0].all_namespaces && !shown.installs[0].delisted);
    let kind = &shown.kinds[0];
    assert_eq!(kind.instances.len(), MAX_PER_KIND);
    assert_eq!(
        kind.more,
        10 + 6,
        "counted by the server, and past the bound"
    );
    assert_eq!(kind.instances[0].name, "first");
    assert_eq!(kind.instances[0].age.as_deref(), Some("2d"));
    assert_eq!(
        kind.instances[0].created.as_deref(),
        Some("2026-01-01T00:00:00Z")
    );
    assert_eq!(kind.instances[0].conditions[0].reason, "Pending");
    assert!(kind.instances[1].conditions.is_empty());
    assert!(kind.incomplete());

    let json = serde_json::to_value(&shown).unwrap();
    assert_eq!(json["kinds"][0]["crd"], "widget0s.synthetic.windlass.dev");
    assert_eq!(json["kinds"][0]["more"], 16);
    assert_eq!(json["kinds"][0]["reach"]["allNamespaces"], true);
    assert_eq!(
        json["kinds"][0]["instances"][0]["conditions"][0]["type"],
        "Ready"
    );
    assert!(json["kinds"][0]["instances"][0].get("namespace").is_some());
    assert!(json["kinds"][0].get("plural").is_none());
}

#[test]
fn what_the_api_server_refused_is_kept_with_what_it_gave() {
    let content = content();
    let package = &content.catalog.packages["synthetic-0"];
    let reach = Reach {
        all_namespaces: false,
        refusal: Some("widget0s is forbidden".into()),
        namespaces: vec!["a".into()],
        not_readable: vec!["b".into(), "c".into()],
        not_tried: 0,
    };
    let mut gathered = gathered(
        vec![install("a", "synthetic-0.v1.2.0", None)],
        vec![object("a", "mine", json!({}))],
        reach.clone(),
    );
    gathered.kinds.push(KindRead {
        kind: OwnedKind::new("gadgets.acme.dev", "v1", "Gadget").unwrap(),
        read: Err("the API server does not serve Gadget acme.dev/v1".into()),
    });
    let shown = Instances::build(&content, package, &gathered, now());
    assert_eq!(shown.kinds[0].reach, reach);
    assert!(reach.partial());
    assert_eq!(
        shown.kinds[1].problem.as_deref().unwrap(),
        "the API server does not serve Gadget acme.dev/v1"
    );
    assert!(shown.kinds[1].incomplete());
    assert!(!Reach::everywhere().partial());
}

fn delisted(versions: &[&str]) -> CatalogContent {
    let mut content = content();
    let versions: Vec<String> = versions.iter().map(|v| v.to_string()).collect();
    content.delisting = windlass_catalog::listing::Delisting::from_entries([(
        "synthetic-0",
        versions.as_slice(),
        "CVE-1",
    )])
    .0;
    content
}

#[test]
fn after_a_whole_delist_every_install_and_the_instances_it_watches_are_to_reclaim() {
    let content = delisted(&[]);
    let package = &content.catalog.packages["synthetic-0"];
    let gathered = gathered(
        vec![
            install("a", "synthetic-0.v1.2.0", Some(json!(["a"]))),
            install("b", "synthetic-0.v1.1.0", Some(json!(["b"]))),
        ],
        vec![
            object("a", "one", json!({})),
            object("b", "two", json!({})),
            object("z", "stray", json!({})),
        ],
        Reach::everywhere(),
    );
    let shown = Instances::build(&content, package, &gathered, now());
    assert!(shown.installs.iter().all(|i| i.delisted));
    let reclaim = shown.reclaim.unwrap();
    assert!(reclaim.whole && !reclaim.incomplete);
    assert_eq!(reclaim.catalog, "vendor");
    let of = |ns: &str| {
        reclaim
            .installs
            .iter()
            .find(|i| i.namespace == ns)
            .unwrap()
            .instances
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(of("a"), ["Widget0 a/one"]);
    assert_eq!(of("b"), ["Widget0 b/two"]);
    assert_eq!(reclaim.unwatched.len(), 1);
    assert_eq!(reclaim.unwatched[0].to_string(), "Widget0 z/stray");
}

#[test]
fn after_a_version_delist_only_the_installs_running_it_are_to_reclaim() {
    let content = delisted(&["1.1.0"]);
    let package = &content.catalog.packages["synthetic-0"];
    let mut gathered = gathered(
        vec![
            install("a", "synthetic-0.v1.2.0", Some(json!([""]))),
            install("b", "synthetic-0.v1.1.0", Some(json!(["b"]))),
        ],
        vec![
            object("b", "two", json!({})),
            object("z", "stray", json!({})),
        ],
        Reach::everywhere(),
    );
    gathered.subscriptions = Reach {
        refusal: Some("forbidden".into()),
        namespaces: vec!["a".into(), "b".into()],
        ..Reach::default()
    };
    let shown = Instances::build(&content, package, &gathered, now());
    let flags: Vec<_> = shown.installs.iter().map(|i| i.delisted).collect();
    assert_eq!(flags, [false, true]);
    let reclaim = shown.reclaim.unwrap();
    assert!(!reclaim.whole);
    assert_eq!(reclaim.installs.len(), 1);
    assert_eq!(reclaim.installs[0].namespace, "b");
    assert_eq!(reclaim.installs[0].version.as_deref(), Some("1.1.0"));
    assert_eq!(reclaim.installs[0].instances.len(), 1);
    assert!(reclaim.unwatched.is_empty(), "the package stays listed");
    assert!(reclaim.incomplete, "Subscriptions were not read everywhere");
}
