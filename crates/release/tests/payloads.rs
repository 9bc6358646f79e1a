//! Payloads read from files: the sample releases under `e2e/releases`, a minimal fixture and
//! malformed variants of it, each refused naming its file.

use std::path::{Path, PathBuf};

use semver::Version;
use windlass_bundle::files::{FileTree, Limits};
use windlass_release::graph_build::{PublishedPayload, build_graph};
use windlass_release::{
    Action, Capabilities, InclusionOptions, LoadOptions, Payload, PayloadError,
};

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../e2e/releases")
}

fn minimal() -> FileTree {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/minimal");
    FileTree::read_dir(&dir, Limits::default()).unwrap()
}

fn load(tree: &FileTree) -> Result<Payload, windlass_release::InvalidPayload> {
    Payload::from_tree(tree, "fixture", &LoadOptions::default())
}

fn sample(name: &str) -> Payload {
    Payload::read_dir(&samples().join(name), &LoadOptions::default())
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `(level, [components])` of each level.
fn shape(levels: &[windlass_release::RunLevel]) -> Vec<(String, Vec<String>)> {
    levels
        .iter()
        .map(|l| {
            (
                l.level.clone().unwrap_or_else(|| "-".into()),
                l.components()
                    .map(|c| c.component.clone().unwrap_or_else(|| "-".into()))
                    .collect(),
            )
        })
        .collect()
}

fn s(items: &[&str]) -> Vec<String> {
    items.iter().map(|i| i.to_string()).collect()
}

#[test]
fn the_sample_releases_load_and_plan_level_by_level() {
    for name in [
        "4.1.0",
        "4.1.1",
        "4.2.0",
        "4.2.1-broken",
        "4.2.2-broken-late",
    ] {
        let payload = sample(name);
        assert!(
            payload.warnings.is_empty(),
            "{name}: {:?}",
            payload.warnings
        );
        let plan = payload.plan(&InclusionOptions::default());
        assert!(plan.excluded.is_empty(), "{name}: {:?}", plan.excluded);
        assert_eq!(
            shape(&plan.updater),
            vec![("00".into(), s(&["windlass-updater"]))],
            "{name}"
        );
    }
    let plan = sample("4.1.0").plan(&InclusionOptions::default());
    assert_eq!(
        shape(&plan.levels),
        vec![
            ("03".into(), s(&["platform-config"])),
            ("10".into(), s(&["dns", "ingress"])),
            ("30".into(), s(&["monitoring"])),
            ("50".into(), s(&["console"])),
            ("90".into(), s(&["platform-config"])),
        ]
    );
    assert!(plan.irreversible_levels().is_empty());
    let config = plan.levels[4].manifests().next().unwrap();
    assert_eq!(config.object.to_string(), "PlatformConfig cluster");
    assert_eq!(config.action, Action::CreateOnly);
    // The RBAC file holds three documents, applied in their order.
    let dns: Vec<String> = plan.levels[1].steps[0].components[0]
        .manifests
        .iter()
        .map(|m| m.object.to_string())
        .collect();
    assert_eq!(
        dns,
        s(&[
            "Namespace platform-dns",
            "ServiceAccount platform-dns/dns-operator",
            "ClusterRole platform:dns-operator",
            "ClusterRoleBinding platform:dns-operator",
            "Deployment platform-dns/dns-operator"
        ])
    );

    let minor = sample("4.2.0").plan(&InclusionOptions::default());
    assert_eq!(minor.irreversible_levels(), s(&["40"]));
    assert_eq!(minor.levels.len(), 6);

    let broken = sample("4.2.1-broken");
    let monitoring = broken
        .manifests
        .iter()
        .find(|m| m.object.kind == "Deployment" && m.object.name == "monitoring-operator")
        .unwrap();
    let template = &monitoring.body["spec"]["template"];
    assert_eq!(
        template["metadata"]["labels"]["windlass.dev/simulate"],
        "crash-loop"
    );
    assert_eq!(
        template["spec"]["containers"][0]["command"][0],
        "/windlass-broken"
    );
}

#[test]
fn capabilities_and_profiles_choose_manifests() {
    let payload = sample("4.1.0");
    let without_console = payload.plan(&InclusionOptions {
        capabilities: Some(Capabilities {
            known: Some(["Console".to_string()].into()),
            enabled: Default::default(),
        }),
        ..Default::default()
    });
    assert!(
        !shape(&without_console.levels)
            .iter()
            .any(|(l, _)| l == "50")
    );
    assert_eq!(without_console.excluded.len(), 5);
    assert!(
        without_console
            .excluded
            .iter()
            .all(|e| e.message == "disabled capabilities: Console")
    );
    let other_profile = payload.plan(&InclusionOptions {
        profile: "ibm-cloud-managed".into(),
        ..Default::default()
    });
    assert_eq!(other_profile.manifest_count(), 0);
    assert_eq!(other_profile.excluded.len(), payload.manifests.len());
}

#[test]
fn drift_is_watched_on_the_kinds_a_plan_keeps_and_not_on_overridden_objects() {
    let plan = sample("4.1.0").plan(&InclusionOptions::default());
    let kinds = plan.managed_kinds(&[]);
    let has = |kinds: &std::collections::BTreeSet<(String, String)>, api: &str, kind: &str| {
        kinds.contains(&(api.to_string(), kind.to_string()))
    };
    for (api, kind) in [
        ("v1", "Namespace"),
        ("v1", "ConfigMap"),
        ("apps/v1", "Deployment"),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        // Create-only: recreated when deleted, so its deletion is watched too.
        ("platform.windlass.dev/v1", "PlatformConfig"),
    ] {
        assert!(has(&kinds, api, kind), "{api} {kind} in {kinds:?}");
    }
    // The only ConfigMap of the payload, left unmanaged: its kind needs no watch.
    let release = windlass_release::ObjectId {
        group: String::new(),
        kind: "ConfigMap".into(),
        namespace: Some("platform-updater".into()),
        name: "release".into(),
    };
    let without = plan.managed_kinds(std::slice::from_ref(&release));
    assert!(!has(&without, "v1", "ConfigMap"), "{without:?}");
    assert_eq!(without.len(), kinds.len() - 1);
    let mut other = release.clone();
    other.namespace = Some("elsewhere".into());
    assert_eq!(plan.managed_kinds(&[other]), kinds);
}

#[test]
fn the_sample_releases_form_the_documented_graph() {
    let published: Vec<PublishedPayload> = [
        "4.1.0",
        "4.1.1",
        "4.2.0",
        "4.2.1-broken",
        "4.2.2-broken-late",
    ]
    .iter()
    .map(|name| {
        let payload = sample(name);
        PublishedPayload {
            payload: format!("releases@sha256:{name}"),
            found_as: format!("releases:{name}"),
            architecture: Some("amd64".into()),
            metadata: payload.metadata,
        }
    })
    .collect();
    let graph = build_graph(&published, "releases").unwrap();
    let edges: Vec<String> = graph
        .edges
        .iter()
        .map(|&(a, b)| format!("{} -> {}", graph.nodes[a].version, graph.nodes[b].version))
        .collect();
    assert_eq!(
        edges,
        s(&[
            "4.1.0 -> 4.1.1",
            "4.1.0 -> 4.2.0",
            "4.1.1 -> 4.2.0",
            "4.2.0 -> 4.2.1",
            "4.2.0 -> 4.2.2"
        ])
    );
    let stable_41 = graph.for_channel("stable-4.1", None).unwrap();
    assert_eq!(stable_41.nodes.len(), 2);
    let updates = graph
        .for_channel("stable-4.2", None)
        .unwrap()
        .updates_from(&Version::new(4, 1, 1))
        .unwrap();
    assert_eq!(updates.available[0].version, Version::new(4, 2, 0));
}

#[test]
fn the_minimal_fixture_orders_updater_first_and_documents_in_file_order() {
    let payload = load(&minimal()).unwrap();
    let plan = payload.plan(&InclusionOptions::default());
    assert_eq!(shape(&plan.updater), vec![("00".into(), s(&["updater"]))]);
    assert_eq!(
        shape(&plan.levels),
        vec![("10".into(), s(&["web"])), ("20".into(), s(&["config"]))]
    );
    let config: Vec<(String, Action)> = plan.levels[1]
        .manifests()
        .map(|m| (m.object.name.clone(), m.action))
        .collect();
    assert_eq!(
        config,
        vec![
            ("first".into(), Action::Apply),
            ("second".into(), Action::CreateOnly)
        ]
    );
    assert!(plan.manifest_digest.starts_with("sha256:"));
    let again = load(&minimal()).unwrap().plan(&InclusionOptions::default());
    assert_eq!(again.manifest_digest, plan.manifest_digest);
}

fn with(tree: &FileTree, path: &str, text: &str) -> FileTree {
    let mut tree = tree.clone();
    tree.files.insert(path.into(), text.as_bytes().to_vec());
    tree
}

fn without(tree: &FileTree, path: &str) -> FileTree {
    let mut tree = tree.clone();
    assert!(tree.files.remove(path).is_some(), "{path}");
    tree
}

fn edited(tree: &FileTree, path: &str, from: &str, to: &str) -> FileTree {
    let text = String::from_utf8(tree.get(path).unwrap().to_vec()).unwrap();
    assert!(text.contains(from), "{path} has no {from:?}");
    with(tree, path, &text.replace(from, to))
}

const HA: &str = "include.release.openshift.io/self-managed-high-availability: \"true\"";
const DEPLOYMENT: &str = "release-manifests/0000_10_web_01_deployment.yaml";
const DIGEST: &str = "sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a";

#[test]
fn malformed_payloads_are_refused_naming_the_file() {
    let base = minimal();
    let metadata = "release-manifests/release-metadata";
    let refs = "release-manifests/image-references";
    let table: Vec<(&str, FileTree, &str, &str)> = vec![
        ("no metadata", without(&base, metadata), metadata, "missing"),
        (
            "bad metadata",
            with(&base, metadata, "{\"kind\": \"cincinnati-metadata-v0\"}"),
            metadata,
            "version is missing",
        ),
        (
            "wrong kind",
            edited(&base, metadata, "cincinnati-metadata-v0", "v1"),
            metadata,
            "kind is \"v1\"",
        ),
        ("no image references", without(&base, refs), refs, "missing"),
        (
            "reference by tag",
            edited(&base, refs, &format!("pause@{DIGEST}"), "pause:3.10"),
            refs,
            "tag web: registry.k8s.io/pause:3.10 is not pinned by digest",
        ),
        (
            "versions disagree",
            edited(&base, refs, "name: 1.0.0", "name: 1.0.1"),
            refs,
            "metadata.name is 1.0.1",
        ),
        (
            "container by tag",
            edited(&base, DEPLOYMENT, &format!("pause@{DIGEST}"), "pause:3.10"),
            DEPLOYMENT,
            "container web runs registry.k8s.io/pause:3.10, which is not pinned by digest",
        ),
        (
            "container not listed",
            edited(
                &base,
                DEPLOYMENT,
                &format!("registry.k8s.io/pause@{DIGEST}"),
                &format!("quay.io/other/web@{DIGEST}"),
            ),
            DEPLOYMENT,
            "which release-manifests/image-references does not list",
        ),
        (
            "duplicate across files",
            with(
                &base,
                "release-manifests/0000_30_web_00_again.yaml",
                &format!(
                    "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n  annotations:\n    {HA}\n"
                ),
            ),
            "release-manifests/0000_30_web_00_again.yaml",
            "Namespace web is defined twice (also in release-manifests/0000_10_web_00_namespace.yaml)",
        ),
        (
            "duplicate in one file",
            with(
                &base,
                "release-manifests/0000_30_x_00_twice.yaml",
                "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n",
            ),
            "release-manifests/0000_30_x_00_twice.yaml",
            "Namespace x is defined twice",
        ),
        (
            "unparseable",
            with(
                &base,
                "release-manifests/0000_30_x_00_bad.yaml",
                "a: [1, 2\nb: 3\n",
            ),
            "release-manifests/0000_30_x_00_bad.yaml",
            "",
        ),
        (
            "no kind",
            with(
                &base,
                "release-manifests/0000_30_x_00_kind.yaml",
                "apiVersion: v1\nmetadata: {name: x}\n",
            ),
            "release-manifests/0000_30_x_00_kind.yaml",
            "document 0: kind is missing",
        ),
        (
            "no apiVersion",
            with(
                &base,
                "release-manifests/0000_30_x_00_api.json",
                "{\"kind\": \"Namespace\", \"metadata\": {\"name\": \"x\"}}",
            ),
            "release-manifests/0000_30_x_00_api.json",
            "apiVersion is missing",
        ),
        (
            "no name",
            with(
                &base,
                "release-manifests/0000_30_x_00_name.yaml",
                "apiVersion: v1\nkind: Namespace\n---\napiVersion: v1\nkind: Namespace\nmetadata: {}\n",
            ),
            "release-manifests/0000_30_x_00_name.yaml",
            "document 0: metadata.name is missing",
        ),
        (
            "unquoted annotation",
            with(
                &base,
                "release-manifests/0000_30_x_00_ann.yaml",
                "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n  annotations:\n    release.openshift.io/create-only: true\n",
            ),
            "release-manifests/0000_30_x_00_ann.yaml",
            "is not a string (true); quote it",
        ),
        (
            "bad delete value",
            with(
                &base,
                "release-manifests/0000_30_x_00_del.yaml",
                "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n  annotations:\n    release.openshift.io/delete: \"yes\"\n",
            ),
            "release-manifests/0000_30_x_00_del.yaml",
            "the only value is \"true\"",
        ),
        (
            "bad irreversible value",
            with(
                &base,
                "release-manifests/0000_30_x_00_irr.yaml",
                "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n  annotations:\n    release.windlass.dev/irreversible: \"maybe\"\n",
            ),
            "release-manifests/0000_30_x_00_irr.yaml",
            "must be \"true\" or \"false\"",
        ),
        (
            "mixed level widths",
            with(
                &base,
                "release-manifests/0000_5_x_00_ns.yaml",
                "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n",
            ),
            "release-manifests/0000_5_x_00_ns.yaml",
            "run level 5 has 1 digits",
        ),
        (
            "binary file",
            with(
                &base,
                "release-manifests/0000_30_x_00_bin.yaml",
                "\u{0}\u{ff}",
            ),
            "release-manifests/0000_30_x_00_bin.yaml",
            "",
        ),
        (
            "unknown template in the updater",
            with(
                &base,
                "manifests/0000_00_updater_01_t.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: t, namespace: updater}\ndata: {x: '{{ .Images.web }}'}\n",
            ),
            "manifests/0000_00_updater_01_t.yaml",
            "template {{ .Images.web }}",
        ),
    ];
    for (what, tree, file, message) in table {
        let error = match load(&tree) {
            Ok(_) => panic!("{what}: loaded"),
            Err(e) => e,
        };
        let found = error.errors.iter().find(|e| e.file() == file);
        let Some(found) = found else {
            panic!("{what}: no error names {file}: {error}");
        };
        assert!(found.to_string().contains(message), "{what}: {found}");
        assert!(
            error
                .to_string()
                .starts_with("fixture is not a valid release payload:"),
            "{error}"
        );
    }
    // Every problem is reported at once.
    let both = with(
        &without(&base, metadata),
        "release-manifests/0000_30_x_00_kind.yaml",
        "apiVersion: v1\nmetadata: {name: x}\n",
    );
    assert_eq!(load(&both).unwrap_err().errors.len(), 2);
}

#[test]
fn odd_files_are_warned_about_not_read() {
    let tree = with(
        &with(&minimal(), "release-manifests/README.md", "notes"),
        "release-manifests/extra/0000_10_web_09_x.yaml",
        "not: read",
    );
    let payload = load(&tree).unwrap();
    let warned: Vec<&str> = payload.warnings.iter().map(|w| w.file.as_str()).collect();
    assert_eq!(
        warned,
        vec![
            "release-manifests/README.md",
            "release-manifests/extra/0000_10_web_09_x.yaml"
        ]
    );
    assert!(matches!(
        load(&FileTree::default()).unwrap_err().errors[..],
        [PayloadError::NotAPayload { .. }]
    ));
}

#[test]
fn jobs_split_their_level_and_files_without_a_prefix_run_last_one_by_one() {
    let ns = |name: &str| {
        format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n  annotations:\n    {HA}\n"
        )
    };
    let job = format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  namespace: web\n  annotations:\n    {HA}\n    release.windlass.dev/irreversible: \"true\"\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: migrate\n        image: registry.k8s.io/pause@{DIGEST}\n"
    );
    let mut tree = minimal();
    for (file, text) in [
        ("release-manifests/0000_40_a_00_ns.yaml", ns("a")),
        ("release-manifests/0000_40_a_01_job.yaml", job),
        ("release-manifests/0000_40_a_02_ns.yaml", ns("a2")),
        ("release-manifests/0000_40_b_00_ns.yaml", ns("b")),
        ("release-manifests/zz-last.yaml", ns("zz")),
        ("release-manifests/00-first-by-name.yaml", ns("first")),
    ] {
        tree = with(&tree, file, &text);
    }
    let plan = load(&tree).unwrap().plan(&InclusionOptions::default());
    let level = &plan.levels[2];
    assert_eq!(level.level.as_deref(), Some("40"));
    assert!(level.irreversible);
    let steps: Vec<Vec<(String, Vec<String>)>> = level
        .steps
        .iter()
        .map(|step| {
            step.components
                .iter()
                .map(|c| {
                    (
                        c.component.clone().unwrap(),
                        c.manifests.iter().map(|m| m.object.name.clone()).collect(),
                    )
                })
                .collect()
        })
        .collect();
    assert_eq!(
        steps,
        vec![
            vec![("a".to_string(), s(&["a"]))],
            vec![("a".to_string(), s(&["migrate"]))],
            vec![("a".to_string(), s(&["a2"])), ("b".to_string(), s(&["b"]))],
        ]
    );
    let last = plan.levels.last().unwrap();
    assert_eq!(last.level, None);
    assert_eq!(last.steps.len(), 1);
    assert_eq!(last.steps[0].components.len(), 1, "one after another");
    let names: Vec<String> = last.manifests().map(|m| m.object.name.clone()).collect();
    assert_eq!(names, s(&["first", "zz"]));
    assert_eq!(plan.irreversible_levels(), s(&["40"]));
}

#[test]
fn updater_manifests_may_run_the_release_image() {
    let tree = with(
        &minimal(),
        "manifests/0000_00_updater_01_deployment.yaml",
        &format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: updater\n  namespace: updater\n  annotations:\n    {HA}\nspec:\n  template:\n    spec:\n      containers:\n      - name: updater\n        image: '{{{{.ReleaseImage}}}}'\n        args: ['--profile={{{{ .ClusterProfile }}}}']\n"
        ),
    );
    let options = LoadOptions {
        release_image: Some(format!("127.0.0.1:5000/releases@{DIGEST}")),
        ..Default::default()
    };
    let payload = Payload::from_tree(&tree, "fixture", &options).unwrap();
    let updater = payload
        .manifests
        .iter()
        .find(|m| m.object.name == "updater" && m.object.kind == "Deployment")
        .unwrap();
    let container = &updater.body["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["image"],
        format!("127.0.0.1:5000/releases@{DIGEST}")
    );
    assert_eq!(
        container["args"][0],
        "--profile=self-managed-high-availability"
    );
    // Without the payload's own reference the template stays, and is accepted.
    assert!(load(&tree).is_ok());
}

mod ordering {
    use super::*;
    use proptest::prelude::*;

    fn name() -> impl Strategy<Value = String> {
        prop_oneof![
            (0u8..100, "[a-c]{1,2}(-[a-c]{1,2})?", "[0-9a-z_]{1,6}").prop_map(
                |(level, component, rest)| format!("0000_{level:02}_{component}_{rest}.yaml")
            ),
            "[0-9a-z_-]{1,8}".prop_map(|n| format!("{n}.yaml")),
        ]
    }

    proptest! {
        /// The plan's order is a total order consistent with file names: prefixed files by name
        /// then unprefixed ones by name, documents in file order; a level is all the files of
        /// one run level and a component all its files in that level.
        #[test]
        fn plan_order_follows_file_names(names in proptest::collection::btree_set(name(), 1..25), docs in 1usize..3) {
            let mut tree = minimal();
            tree.files.retain(|k, _| !k.starts_with("release-manifests/0000_") && !k.starts_with("manifests/"));
            for (i, file) in names.iter().enumerate() {
                let text: Vec<String> = (0..docs)
                    .map(|d| format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i}-{d}\n  namespace: n\n  annotations:\n    {HA}\n"))
                    .collect();
                tree.files.insert(format!("release-manifests/{file}"), text.join("---\n").into_bytes());
            }
            let payload = match load(&tree) {
                Ok(p) => p,
                // Random levels may mix widths only by being refused; two-digit ones never do.
                Err(e) => { prop_assert!(false, "{}", e); unreachable!() }
            };
            let plan = payload.plan(&InclusionOptions::default());
            let got: Vec<(String, usize)> = plan.levels.iter().flat_map(|l| l.manifests()).map(|m| (m.file.clone(), m.document)).collect();
            let mut expected: Vec<(bool, String, usize)> = names
                .iter()
                .flat_map(|n| (0..docs).map(move |d| (!n.starts_with("0000_") || windlass_release::manifest::FileName::parse(n).run_level.is_none(), n.clone(), d)))
                .collect();
            expected.sort();
            let expected: Vec<(String, usize)> = expected.into_iter().map(|(_, n, d)| (format!("release-manifests/{n}"), d)).collect();
            prop_assert_eq!(&got, &expected);
            // Levels are distinct, and each component appears once per step.
            let mut levels: Vec<Option<String>> = plan.levels.iter().map(|l| l.level.clone()).collect();
            levels.dedup();
            prop_assert_eq!(levels.len(), plan.levels.len());
            for level in &plan.levels {
                for step in &level.steps {
                    let mut components: Vec<Option<String>> = step.components.iter().map(|c| c.component.clone()).collect();
                    let before = components.len();
                    components.sort();
                    components.dedup();
                    prop_assert_eq!(components.len(), before);
                }
            }
        }
    }
}
