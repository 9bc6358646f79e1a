use windlass_bundle::{FileTree, from_files};

use super::*;

const CSV: &str = r#"apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: demo.v1.0.0
  annotations: {provider: Acme, provider-type: community, provider-url: "https://acme.example"}
spec:
  version: 1.0.0
  displayName: Demo
  description: A demo.
  provider: {name: Acme}
  installModes: [{type: AllNamespaces, supported: true}]
  customresourcedefinitions:
    owned: [{name: widgets.demo.example.com, version: v1, kind: Widget}]
  install:
    strategy: deployment
    spec:
      deployments:
      - name: demo
        spec: {template: {spec: {containers: [{name: m, image: "example.com/demo:1"}]}}}
  relatedImages: [{name: m, image: "example.com/demo:1"}]
"#;

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.demo.example.com}\nspec:\n  group: demo.example.com\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]\n";

fn lint(csv: &str, extra: &[(&str, &str)]) -> Report {
    let mut files = vec![("manifests/csv.yaml", csv), ("manifests/crd.yaml", CRD)];
    files.extend_from_slice(extra);
    let tree = FileTree {
        files: files
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .collect(),
    };
    lint_bundle(&from_files(&tree, "b").unwrap())
}

fn checks(report: &Report, level: Level) -> Vec<(&'static str, Option<String>)> {
    report
        .findings
        .iter()
        .filter(|f| f.level == level)
        .map(|f| (f.check, f.field.clone()))
        .collect()
}

#[test]
fn a_clean_bundle_has_only_the_provider_note() {
    let report = lint(CSV, &[]);
    assert!(
        checks(&report, Level::Error).is_empty() && checks(&report, Level::Warning).is_empty(),
        "{:#?}",
        report.findings
    );
    let info = &report.findings[0];
    assert_eq!(
        info.message,
        "shown as provider \"Acme\", type community, url https://acme.example"
    );
}

#[test]
fn each_defect_is_found_and_named() {
    let cases: Vec<(String, Level, &str, Option<&str>)> = vec![
        (
            CSV.replace(
                "  installModes: [{type: AllNamespaces, supported: true}]\n",
                "",
            ),
            Level::Error,
            "csv-required-field",
            Some("spec.installModes"),
        ),
        (
            CSV.replace("  version: 1.0.0\n", "  version: 1.0\n"),
            Level::Error,
            "version-semver",
            Some("spec.version"),
        ),
        (
            CSV.replace("  version: 1.0.0\n", ""),
            Level::Error,
            "csv-required-field",
            Some("spec.version"),
        ),
        (
            CSV.replace("name: demo.v1.0.0", "name: demo-latest"),
            Level::Warning,
            "csv-name",
            Some("metadata.name"),
        ),
        (
            CSV.replace(
                "  relatedImages: [{name: m, image: \"example.com/demo:1\"}]\n",
                "",
            ),
            Level::Warning,
            "related-images",
            Some("spec.install.spec.deployments[0]"),
        ),
        (
            CSV.replace("provider-type: community", "provider-type: gold"),
            Level::Warning,
            "provider",
            Some("metadata.annotations[provider-type]"),
        ),
        (
            CSV.replace("version: v1, kind: Widget", "version: v2, kind: Widget"),
            Level::Error,
            "owned-crd",
            Some("spec.customresourcedefinitions.owned[0]"),
        ),
        (
            CSV.replace("widgets.demo", "gadgets.demo"),
            Level::Error,
            "owned-crd",
            Some("spec.customresourcedefinitions.owned[0]"),
        ),
        (
            CSV.replace(
                "  version: 1.0.0\n",
                "  version: 1.0.0\n  replaces: demo.v1.0.0\n",
            ),
            Level::Error,
            "replaces-self",
            Some("spec.replaces"),
        ),
        (
            CSV.replace("provider-url", "olm.skipRange: '>=banana', provider-url"),
            Level::Error,
            "skip-range",
            Some("metadata.annotations[olm.skipRange]"),
        ),
        (
            CSV.replace("strategy: deployment", "strategy: helm"),
            Level::Error,
            "csv-required-field",
            Some("spec.install.strategy"),
        ),
        (
            CSV.replace(
                "  displayName: Demo\n",
                "  displayName: Demo\n  displayName: Again\n",
            ),
            Level::Warning,
            "duplicate-key",
            None,
        ),
    ];
    for (csv, level, check, field) in cases {
        let report = lint(&csv, &[]);
        let found = checks(&report, level);
        assert!(
            found.contains(&(check, field.map(String::from))),
            "{check} {field:?} not in {found:?}"
        );
        assert_eq!(
            report.has_errors(),
            level == Level::Error || !checks(&report, Level::Error).is_empty()
        );
    }
}

#[test]
fn dependencies_with_bad_ranges_are_errors() {
    let deps = "dependencies:\n- {type: olm.package, value: {packageName: etcd, version: '>=0.9.0 <1.0.0'}}\n- {type: olm.package, value: {packageName: x, version: 'not a range'}}\n";
    let report = lint(CSV, &[("metadata/dependencies.yaml", deps)]);
    assert_eq!(
        checks(&report, Level::Error),
        vec![("dependency", Some("dependencies[1]".into()))]
    );
}

#[test]
fn unusable_constraints_are_errors_naming_file_and_field() {
    let deps = "dependencies:
- type: olm.constraint
  value:
    failureMessage: needs a db
    all:
      constraints:
      - package: {packageName: db, versionRange: '>=1.0.0'}
      - cel: {rule: \"properties.exists(p, p.type == 'x' &&)\"}
- type: olm.constraint
  value: {gvk: {group: g, version: v1, kind: K}}
";
    let props = "properties:
- {type: olm.constraint, value: {failureMessage: m, package: {packageName: db, versionRange: '1.x'}, gvk: {group: g, version: v1, kind: K}}}
";
    let report = lint(
        CSV,
        &[
            ("metadata/dependencies.yaml", deps),
            ("metadata/properties.yaml", props),
        ],
    );
    assert_eq!(
        checks(&report, Level::Error),
        vec![
            (
                "constraint",
                Some("dependencies[0].value.all.constraints[1].cel.rule".into())
            ),
            ("constraint", Some("properties[0].value".into())),
        ]
    );
    let errors: Vec<&crate::lint::Finding> = report
        .findings
        .iter()
        .filter(|f| f.level == Level::Error)
        .collect();
    assert_eq!(errors[0].file, "b/metadata/dependencies.yaml");
    assert!(
        errors[0]
            .message
            .starts_with("unusable olm.constraint: the CEL rule does not compile"),
        "{}",
        errors[0].message
    );
    assert_eq!(errors[1].file, "b/metadata/properties.yaml");
    assert!(
        errors[1].message.contains("names package and gvk"),
        "{}",
        errors[1].message
    );
    // the usable one without a failureMessage only earns the warning
    assert_eq!(
        checks(&report, Level::Warning),
        vec![("dependency", Some("dependencies[1]".into()))]
    );
}

#[test]
fn crds_without_schema_are_reported() {
    let bare = CRD.replace(", schema: {openAPIV3Schema: {type: object}}", "");
    let mut files = vec![
        ("manifests/csv.yaml", CSV),
        ("manifests/crd.yaml", bare.as_str()),
    ];
    files.truncate(2);
    let tree = FileTree {
        files: files
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .collect(),
    };
    let report = lint_bundle(&from_files(&tree, "b").unwrap());
    assert_eq!(
        checks(&report, Level::Warning),
        vec![(
            "crd-schema",
            Some("spec.versions[].schema.openAPIV3Schema".into())
        )]
    );
}

#[test]
fn i18n_provider_names_show_in_english() {
    let csv = CSV
        .replace(
            "provider: Acme,",
            "provider: '{\"en\": \"Acme Corp\", \"zh\": \"x\"}',",
        )
        .replace(", provider-type: community", "");
    let tree = FileTree {
        files: [("manifests/csv.yaml".to_string(), csv.into_bytes())].into(),
    };
    let shown = provider_display(&from_files(&tree, "b").unwrap());
    assert_eq!(
        shown,
        ProviderDisplay {
            name: Some("Acme Corp".into()),
            provider_type: "custom".into(),
            url: Some("https://acme.example".into())
        }
    );
}

#[test]
fn a_repaired_api_version_is_a_warning_naming_file_and_document() {
    let report = lint(
        CSV,
        &[(
            "manifests/extra.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: Service\nmetadata: {name: b}\n",
        )],
    );
    let finding = report
        .findings
        .iter()
        .find(|f| f.check == "manifest-api-version")
        .expect("reported");
    assert_eq!(finding.level, Level::Warning);
    assert_eq!(finding.file, "b/manifests/extra.yaml");
    assert!(
        finding
            .message
            .starts_with("document 2: Service has no apiVersion; windlass applies it as v1"),
        "{}",
        finding.message
    );
}
