use serde_json::Value;

use super::*;
use crate::archive::{ArchiveWriter, Contents, Discard, ReadLimits, read_archive};
use crate::layout::tests::fixtures;
use crate::layout::{ImageSet, TopImage};
use crate::lint::{Level, lint_manifest};

/// The package folder violet makes of ACP's NativeStor example.
const FOLDER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/violet/topolvm-operator"
);
const CHART_FOLDER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/violet/log-center-chart"
);

fn read(folder: &str) -> (String, PackageManifest) {
    let text = std::fs::read_to_string(format!("{folder}/manifest.yaml")).unwrap();
    let manifest = PackageManifest::parse("manifest.yaml", &text).unwrap();
    (text, manifest)
}

fn yaml_value(text: &str) -> Value {
    windlass_bundle::yaml::parse_documents("m", text)
        .unwrap()
        .documents
        .remove(0)
}

fn messages(report: &Report, level: Level) -> Vec<String> {
    report
        .findings
        .iter()
        .filter(|f| f.level == level)
        .map(|f| f.message.clone())
        .collect()
}

#[test]
fn the_acp_example_reads_into_the_model() {
    let (_, manifest) = read(FOLDER);
    assert!(manifest.is_violet());
    assert_eq!(manifest.metadata.name, "topolvm-operator");
    assert_eq!(manifest.spec.version, "2.3.0");
    assert_eq!(
        manifest.artifact(),
        (
            "harbor.demo.io/acp/topolvm-operator-bundle:v3.11.0",
            ArtifactType::Bundle
        )
    );
    assert_eq!(manifest.spec.architectures, ["amd64"]);
    assert_eq!(manifest.spec.display_name, "NativeStor");
    assert_eq!(manifest.spec.icon, "icon.svg");
    assert_eq!(manifest.spec.keywords, ["storage", "lvm"]);
    assert_eq!(
        manifest.images().len(),
        10,
        "the bundle and 9 related images"
    );
    assert_eq!(manifest.fields().architectures, "spec.arch");
    assert_eq!(manifest.related_image_field(3), "spec.relatedImages[3]");
}

#[test]
fn the_acp_example_lints_clean_but_for_its_tags() {
    let (_, manifest) = read(FOLDER);
    let icon = std::fs::metadata(format!("{FOLDER}/icon.svg"))
        .unwrap()
        .len();
    let report = lint_manifest(&manifest, Some(icon));
    assert_eq!(messages(&report, Level::Error), Vec::<String>::new());
    let warnings = messages(&report, Level::Warning);
    assert_eq!(warnings.len(), 10, "{warnings:#?}");
    assert!(
        warnings
            .iter()
            .all(|w| w.contains("is not pinned by digest"))
    );
    assert!(
        warnings[0]
            .starts_with("spec.artifact `harbor.demo.io/acp/topolvm-operator-bundle:v3.11.0`"),
        "{warnings:#?}"
    );
    assert!(
        warnings[1]
            .starts_with("spec.relatedImages[0] `harbor.demo.io/acp/topolvm-operator:v3.11.0`"),
        "{warnings:#?}"
    );
}

#[test]
fn writing_back_gives_the_file_as_it_was() {
    let extended = "\
apiVersion: app.alauda.io/v1alpha1
kind: PackageManifest
metadata:
  name: acme-db
  labels: {team: data}
spec:
  type: bundle
  artifact: quay.io/acme/db-bundle:1.0.0
  version: 1.0.0
  arch: [linux/amd64, linux/arm/v7]
  channel: stable
  info:
    displayName: Acme DB
    provider: Acme
  relatedImages:
  - quay.io/acme/db:1
  - {name: operator, image: 'quay.io/acme/op:1', digest: pinned-later}
";
    for text in [read(FOLDER).0, read(CHART_FOLDER).0, extended.to_string()] {
        let manifest = PackageManifest::parse("manifest.yaml", &text).unwrap();
        let written = manifest.to_yaml();
        assert_eq!(yaml_value(&written), yaml_value(&text), "{written}");
        assert_eq!(PackageManifest::parse("m", &written).unwrap(), manifest);
    }
    let manifest = PackageManifest::parse("m", extended).unwrap();
    assert_eq!(manifest.spec.architectures, ["amd64", "arm"]);
    assert_eq!(manifest.spec.related_images[1].name, "operator");
    assert_eq!(
        manifest.related_image_field(1),
        "spec.relatedImages[1].image"
    );
}

#[test]
fn the_two_formats_convert_into_each_other_without_loss() {
    let (_, violet) = read(FOLDER);
    let windlass = violet.to_windlass();
    assert!(!windlass.is_violet());
    let windlass = PackageManifest::parse("m", &windlass.to_yaml()).unwrap();
    assert_eq!(windlass.spec, violet.spec);
    assert_eq!(windlass.kind, crate::manifest::KIND);
    let back = PackageManifest::parse("m", &convert(&windlass).to_yaml()).unwrap();
    assert!(back.is_violet());
    assert_eq!(back.spec, violet.spec);
    assert_eq!(back.metadata, violet.metadata);
    assert_eq!(
        yaml_value(&back.to_yaml())["spec"]["arch"],
        serde_json::json!(["linux/amd64"])
    );
}

#[test]
fn a_chart_package_reads_as_a_chart() {
    let (_, manifest) = read(CHART_FOLDER);
    assert_eq!(
        manifest.artifact(),
        (
            "harbor.demo.io/acp/chart-log-center:v4.1.2",
            ArtifactType::Chart
        )
    );
    assert_eq!(manifest.spec.architectures, ["amd64", "arm64"]);
    let report = lint_manifest(&manifest, None);
    assert_eq!(messages(&report, Level::Error), Vec::<String>::new());
    assert!(
        messages(&report, Level::Warning)
            .iter()
            .any(|w| w.starts_with("spec.relatedImages[1] `harbor.demo.io/3rdparty/elasticsearch:7.17.16` is not pinned")),
        "{report:#?}"
    );
}

#[test]
fn every_problem_names_the_violet_field() {
    let (base, _) = read(FOLDER);
    let cases: [(&str, &str, &str, Level); 12] = [
        (
            "  - linux/amd64\n",
            "  - amd64\n",
            "spec.arch[0] `amd64` is not a platform images are published for (linux/amd64, linux/arm64",
            Level::Error,
        ),
        (
            "  - linux/amd64\n",
            "  - linux/amd64\n  - linux/amd64\n",
            "spec.arch[1] `linux/amd64` is listed twice",
            Level::Error,
        ),
        (
            "  arch:\n  - linux/amd64\n",
            "",
            "spec.arch is empty",
            Level::Warning,
        ),
        (
            "type: bundle",
            "type: helm",
            "spec.type `helm` must be bundle or chart",
            Level::Error,
        ),
        (
            "  type: bundle\n",
            "",
            "spec.type is missing: read as bundle",
            Level::Warning,
        ),
        (
            "  artifact: harbor.demo.io/acp/topolvm-operator-bundle:v3.11.0\n",
            "",
            "spec.artifact must not be empty",
            Level::Error,
        ),
        (
            "  - harbor.demo.io/acp/topolvm:v3.11.0\n",
            "  - ''\n",
            "spec.relatedImages[1] must not be empty",
            Level::Error,
        ),
        (
            "  - harbor.demo.io/acp/topolvm:v3.11.0\n",
            "  - {name: lvm, image: 'Harbor/X:1'}\n",
            "spec.relatedImages[1].image: `Harbor/X:1` is not an image reference",
            Level::Error,
        ),
        (
            "    displayName: NativeStor\n",
            "",
            "spec.info.displayName is empty",
            Level::Warning,
        ),
        (
            "icon: icon.svg",
            "icon: logo.svg",
            "spec.info.icon `logo.svg` does not exist beside manifest.yaml",
            Level::Error,
        ),
        (
            "  version: 2.3.0\n",
            "  version: 2.3.0\n  channel: stable\n",
            "spec.channel is not a field windlass reads; it is kept as written",
            Level::Warning,
        ),
        (
            "app.alauda.io/v1alpha1",
            "app.alauda.io/v1beta1",
            "apiVersion `app.alauda.io/v1beta1` is not app.alauda.io/v1alpha1",
            Level::Warning,
        ),
    ];
    for (from, to, expected, level) in cases {
        assert!(base.contains(from), "{from}");
        let text = base.replacen(from, to, 1);
        let manifest = PackageManifest::parse("manifest.yaml", &text).unwrap();
        // The caller looks the icon up beside the manifest; here only `icon.svg` is there.
        let icon = (manifest.spec.icon == "icon.svg").then_some(100);
        let report = lint_manifest(&manifest, icon);
        let found = report
            .findings
            .iter()
            .find(|f| f.message.starts_with(expected));
        let found = found.unwrap_or_else(|| panic!("{expected}: {:#?}", report.findings));
        assert_eq!(found.level, level, "{expected}");
        assert!(found.message.starts_with(&found.field), "{found:?}");
    }
}

#[test]
fn what_cannot_be_read_names_the_file_and_field() {
    let (base, _) = read(FOLDER);
    let olm = base.replace("app.alauda.io/v1alpha1", "packages.operators.coreos.com/v1");
    let error = PackageManifest::parse("manifest.yaml", &olm)
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with(
            "manifest.yaml: apiVersion: packages.operators.coreos.com/v1 is OLM's PackageManifest"
        ),
        "{error}"
    );
    let wrong = base.replace("  - linux/amd64\n", "    linux: amd64\n");
    let error = PackageManifest::parse("manifest.yaml", &wrong)
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("manifest.yaml: spec.arch: invalid type"),
        "{error}"
    );
    let wrong = base.replace("keywords:\n    - storage\n    - lvm", "keywords: storage");
    let error = PackageManifest::parse("manifest.yaml", &wrong)
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("manifest.yaml: spec.info.keywords: invalid type"),
        "{error}"
    );
}

/// An image set with one single-platform image per reference, as `package build` would fetch.
fn images_for(references: &[&str], arch: &str) -> (ImageSet, Vec<(String, Vec<u8>)>) {
    let mut set = ImageSet::default();
    let mut blobs: Vec<(String, Vec<u8>)> = Vec::new();
    for (i, reference) in references.iter().enumerate() {
        let image = fixtures::image(reference, arch, &[reference.as_bytes()]);
        set.images.push(TopImage {
            reference: reference.to_string(),
            descriptor: image.manifest.0.clone(),
        });
        set.add_manifest(i, &image.manifest.0, image.manifest.1.clone())
            .unwrap();
        for (descriptor, bytes) in image.blobs {
            blobs.push((descriptor.digest, bytes));
        }
    }
    (set, blobs)
}

#[test]
fn the_acp_example_builds_into_an_archive_that_reads_back_unchanged() {
    let (text, manifest) = read(FOLDER);
    let (set, blobs) = images_for(&manifest.images(), "amd64");
    let configs = blobs.iter().cloned().collect();
    let wanted = &manifest.spec.architectures;
    for index in 1..set.images.len() {
        let offered = crate::layout::platforms(&set, index, &configs);
        let missing = crate::layout::missing_architectures("x", &offered, wanted, "spec.arch");
        assert_eq!(missing, Vec::<String>::new());
    }
    let offered = crate::layout::platforms(&set, 1, &configs);
    let arm = crate::layout::missing_architectures("x", &offered, &["arm64".into()], "spec.arch");
    assert_eq!(
        arm,
        ["x offers linux/amd64, not linux/arm64, which spec.arch lists"]
    );
    let icon = std::fs::read(format!("{FOLDER}/icon.svg")).unwrap();
    let contents = Contents {
        manifest_yaml: text.clone().into_bytes(),
        icon: Some(("icon.svg".into(), icon.clone())),
        images: set,
    };
    let mut writer = ArchiveWriter::start(Vec::new(), &contents).unwrap();
    while let Some((digest, _)) = writer.next_blob().cloned() {
        let bytes = &blobs.iter().find(|(d, _)| *d == digest).unwrap().1;
        let mut blob = writer.blob(&digest).unwrap();
        blob.write(bytes).unwrap();
        blob.finish().unwrap();
    }
    let archive = writer.finish().unwrap();
    let package = read_archive(archive.as_slice(), ReadLimits::default(), &mut Discard).unwrap();
    assert_eq!(
        package.manifest_yaml,
        text.as_bytes(),
        "the manifest is carried byte for byte"
    );
    assert_eq!(package.manifest, manifest);
    assert_eq!(package.icon, Some(("icon.svg".into(), icon)));
    assert_eq!(package.images.images.len(), 10);
    assert_eq!(package.images.images[0].reference, manifest.artifact().0);
}
