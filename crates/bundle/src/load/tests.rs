use super::*;

pub(crate) const CSV: &str = r#"apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: demo-operator.v1.2.0
  annotations:
    olm.skipRange: ">=1.0.0 <1.2.0"
spec:
  version: 1.2.0
  replaces: demo-operator.v1.1.0
  displayName: Demo
  installModes:
  - {type: AllNamespaces, supported: true}
  customresourcedefinitions:
    owned:
    - {name: widgets.demo.example.com, version: v1, kind: Widget}
  install:
    strategy: deployment
    spec:
      deployments:
      - name: demo
        spec:
          template:
            spec:
              containers:
              - {name: manager, image: "example.com/demo@sha256:1111"}
  relatedImages:
  - {name: manager, image: "example.com/demo@sha256:1111"}
"#;

pub(crate) const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.demo.example.com}
spec:
  group: demo.example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object}}
"#;

const ANNOTATIONS_YAML: &str = "annotations:\n  operators.operatorframework.io.bundle.package.v1: demo\n  operators.operatorframework.io.bundle.channels.v1: stable,fast\n  operators.operatorframework.io.bundle.channel.default.v1: stable\n";

fn tree(files: &[(&str, &str)]) -> FileTree {
    FileTree {
        files: files
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .collect(),
    }
}

#[test]
fn reads_a_bundle_directory_layout() {
    let t = tree(&[
        ("manifests/demo.csv.yaml", CSV),
        ("manifests/widgets.crd.yaml", CRD),
        ("manifests/README.md", "docs"),
        ("metadata/annotations.yaml", ANNOTATIONS_YAML),
        (
            "metadata/dependencies.yaml",
            "dependencies:\n- type: olm.package\n  value: {packageName: etcd, version: '>=0.9.0'}\n",
        ),
    ]);
    let bundle = from_files(&t, "demo").unwrap();
    assert_eq!(bundle.layout, Layout::Bundle);
    assert_eq!(bundle.csv.name(), "demo-operator.v1.2.0");
    assert_eq!(bundle.csv_file, "manifests/demo.csv.yaml");
    assert_eq!(bundle.manifests.len(), 2);
    assert_eq!(bundle.package(), Some("demo"));
    assert_eq!(bundle.annotations.channels(), vec!["stable", "fast"]);
    assert_eq!(bundle.dependencies.len(), 1);
    assert_eq!(
        bundle.notes,
        vec![LoadNote::IgnoredFile("manifests/README.md".into())]
    );
    assert_eq!(
        bundle.objects_of_kind("CustomResourceDefinition").count(),
        1
    );
}

#[test]
fn reads_a_flat_package_manifest_folder() {
    let t = tree(&[
        ("demo.v1.2.0.clusterserviceversion.yaml", CSV),
        ("widgets.crd.yaml", CRD),
    ]);
    let bundle = from_files(&t, "nowhere/1.2.0").unwrap();
    assert_eq!(bundle.layout, Layout::PackageManifest);
    assert_eq!(bundle.package(), None);
    assert_eq!(bundle.manifests.len(), 2);
}

#[test]
fn a_package_manifest_folder_reads_metadata_as_metadata_and_ignores_subfolders() {
    let t = tree(&[
        ("demo.v1.2.0.clusterserviceversion.yaml", CSV),
        ("widgets.crd.yaml", CRD),
        (
            "metadata/dependencies.yaml",
            "dependencies:\n- type: olm.package\n  value: {packageName: etcd, version: '>=0.9.0'}\n",
        ),
        (
            "tests/scorecard/config.yaml",
            "kind: Configuration\napiVersion: scorecard.operatorframework.io/v1alpha3\n",
        ),
    ]);
    let bundle = from_files(&t, "nowhere/1.2.0").unwrap();
    assert_eq!(bundle.layout, Layout::PackageManifest);
    assert_eq!(
        bundle.manifests.len(),
        2,
        "{:?}",
        bundle.manifests.iter().map(|m| &m.file).collect::<Vec<_>>()
    );
    assert_eq!(bundle.dependencies.len(), 1);
}

#[test]
fn the_package_name_of_a_version_folder_comes_from_its_package_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("demo.package.yaml"), "packageName: demo\ndefaultChannel: stable\nchannels:\n- {name: stable, currentCSV: demo-operator.v1.2.0}\n").unwrap();
    std::fs::create_dir(dir.path().join("1.2.0")).unwrap();
    std::fs::write(dir.path().join("1.2.0/csv.yaml"), CSV).unwrap();
    let bundle = load_bundle(&dir.path().join("1.2.0")).unwrap();
    assert_eq!(bundle.package(), Some("demo"));
    assert_eq!(bundle.annotations.default_channel(), Some("stable"));
}

#[test]
fn reads_a_packed_archive() {
    let t = tree(&[
        ("manifests/csv.yaml", CSV),
        ("metadata/annotations.yaml", ANNOTATIONS_YAML),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("demo.tgz");
    std::fs::write(&path, crate::unpack::pack(&t).unwrap()).unwrap();
    let bundle = load_bundle(&path).unwrap();
    assert_eq!(bundle.package(), Some("demo"));
}

#[test]
fn bad_bundles_give_errors_that_name_the_file() {
    let cases: Vec<(FileTree, &str)> = vec![
        (
            tree(&[("manifests/csv.yaml", "kind: [unclosed\n")]),
            "manifests/csv.yaml:",
        ),
        (
            tree(&[("manifests/crd.yaml", CRD)]),
            "no ClusterServiceVersion",
        ),
        (
            tree(&[("manifests/a.yaml", CSV), ("manifests/b.yaml", CSV)]),
            "manifests/a.yaml, manifests/b.yaml",
        ),
        (
            tree(&[(
                "manifests/csv.yaml",
                &CSV.replace("      deployments:\n", "      deployments: 7\n      x:\n"),
            )]),
            "manifests/csv.yaml: spec.install.spec.deployments",
        ),
        (
            tree(&[
                ("manifests/csv.yaml", CSV),
                ("metadata/annotations.yaml", "annotations: [1]\n"),
            ]),
            "metadata/annotations.yaml",
        ),
        (
            tree(&[("manifests/x.yaml", "just: data\n")]),
            "manifests/x.yaml: document 1: not a Kubernetes object: it has no kind",
        ),
        (
            tree(&[
                ("manifests/csv.yaml", CSV),
                (
                    "metadata/dependencies.yaml",
                    "dependencies:\n- type: olm.gvk\n  value: {group: g}\n",
                ),
            ]),
            "dependencies[0]",
        ),
    ];
    for (t, expected) in cases {
        let error = from_files(&t, "src").unwrap_err().to_string();
        assert!(
            error.contains(expected),
            "`{error}` should contain `{expected}`"
        );
    }
}

#[test]
fn duplicate_keys_are_noted_not_fatal() {
    let dup = CSV.replace(
        "  displayName: Demo\n",
        "  displayName: Demo\n  displayName: Demo Two\n",
    );
    let bundle = from_files(&tree(&[("manifests/csv.yaml", &dup)]), "src").unwrap();
    assert_eq!(bundle.csv.spec.display_name.as_deref(), Some("Demo Two"));
    assert!(
        matches!(&bundle.notes[0], LoadNote::DuplicateKey(e) if e.file == "manifests/csv.yaml")
    );
}

#[test]
fn legacy_crds_come_out_as_v1_while_manifests_keep_them_as_written() {
    let legacy = "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.demo.example.com}\nspec:\n  group: demo.example.com\n  version: v1\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  validation: {openAPIV3Schema: {type: object}}\n";
    let bundle = from_files(
        &tree(&[("manifests/csv.yaml", CSV), ("manifests/crd.yaml", legacy)]),
        "b",
    )
    .unwrap();
    let crds = bundle.crds_v1();
    assert_eq!(crds.len(), 1);
    let converted = crds[0].1.as_ref().unwrap();
    assert_eq!(converted.object["apiVersion"], "apiextensions.k8s.io/v1");
    assert!(!converted.changes.is_empty());
    assert_eq!(
        bundle
            .objects_of_kind("CustomResourceDefinition")
            .next()
            .unwrap()
            .api_version(),
        "apiextensions.k8s.io/v1beta1"
    );
}

#[test]
fn a_core_kind_without_api_version_loads_and_is_noted() {
    let service = "kind: Service\nmetadata: {name: metrics}\nspec:\n  ports: [{port: 8443}]\n";
    let bundle = from_files(
        &tree(&[
            ("manifests/csv.yaml", CSV),
            ("manifests/svc.yaml", &format!("{CRD}---\n{service}")),
        ]),
        "b",
    )
    .unwrap();
    assert_eq!(bundle.manifests.len(), 3);
    assert_eq!(
        bundle.notes,
        vec![LoadNote::MissingApiVersion {
            file: "manifests/svc.yaml".into(),
            document: 2,
            kind: "Service".into(),
            api_version: "v1",
        }]
    );
    // Kept as written; the conversion sets the version and records it.
    let svc = bundle.objects_of_kind("Service").next().unwrap();
    assert_eq!(svc.api_version(), "");
    let converted = crate::legacy_apis::convert_manifests(&bundle.manifests).unwrap();
    assert!(
        converted
            .objects
            .iter()
            .all(|m| !m.api_version().is_empty())
    );
    assert_eq!(converted.changes.len(), 1);
}

#[test]
fn a_document_that_cannot_be_repaired_refuses_the_bundle_naming_file_document_and_csv() {
    for (doc, reason) in [
        (
            "kind: Deployment\nmetadata: {name: x}\n",
            "Deployment has no apiVersion",
        ),
        ("metadata: {name: x}\n", "it has no kind"),
        (
            "apiVersion: 1\nkind: Service\n",
            "apiVersion is not a string",
        ),
    ] {
        let err = from_files(
            &tree(&[
                ("manifests/csv.yaml", CSV),
                ("manifests/extra.yaml", &format!("{CRD}---\n{doc}")),
            ]),
            "b",
        )
        .unwrap_err();
        match &err {
            BundleError::NotAnObject {
                file,
                document,
                csv,
                reason: why,
            } => {
                assert_eq!(file, "manifests/extra.yaml");
                assert_eq!(*document, 2);
                assert_eq!(csv.as_deref(), Some("demo-operator.v1.2.0"));
                assert!(why.contains(reason), "{why}");
            }
            other => panic!("{other}"),
        }
        assert!(
            err.to_string()
                .starts_with("manifests/extra.yaml: document 2 (bundle demo-operator.v1.2.0): "),
            "{err}"
        );
    }
}
