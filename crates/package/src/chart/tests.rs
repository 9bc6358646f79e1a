use std::io::Write;

use serde_json::json;

use super::*;
use crate::lint::{Level, lint_manifest};

const CHART_YAML: &str = "\
apiVersion: v2
name: log-center
version: v4.1.2
description: Logs of every cluster, in one place
keywords: [logging]
home: https://log-center.example
";

const VALUES_YAML: &str = "\
global:
  registry:
    address: harbor.demo.io
  images:
    collector: {repository: acp/log-collector, tag: v4.1.2, support_arm: true}
    unpinned: {repository: acp/nothing}
elasticsearch:
  image: harbor.demo.io/3rdparty/elasticsearch:7.17.16
kibana:
  image: {registry: docker.elastic.co, repository: kibana/kibana, tag: 7.17.16}
comment:
  image: not an image
";

/// A chart archive as `helm package` makes one: everything below the chart's folder.
fn chart_tgz(files: &[(&str, &str)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, text) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder
            .append_data(&mut header, path, text.as_bytes())
            .unwrap();
    }
    let tar = builder.into_inner().unwrap();
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gzip.write_all(&tar).unwrap();
    gzip.finish().unwrap()
}

fn chart() -> Chart {
    read_chart(&chart_tgz(&[
        ("log-center/Chart.yaml", CHART_YAML),
        ("log-center/values.yaml", VALUES_YAML),
        (
            "log-center/charts/sub/Chart.yaml",
            "name: sub\nversion: 9.9.9\n",
        ),
        (
            "log-center/charts/sub/values.yaml",
            "image: quay.io/sub/only:1\n",
        ),
    ]))
    .unwrap()
}

#[test]
fn a_chart_says_its_name_version_and_the_images_its_values_name() {
    let chart = chart();
    assert_eq!(
        chart.name, "log-center",
        "the top chart's, not the subchart's"
    );
    assert_eq!(chart.version, "v4.1.2");
    assert_eq!(chart.keywords, ["logging"]);
    let images: Vec<(&str, &str)> = chart
        .images
        .iter()
        .map(|u| (u.image.as_str(), u.used_by.as_str()))
        .collect();
    assert_eq!(
        images,
        [
            (
                "harbor.demo.io/acp/log-collector:v4.1.2",
                "is in values.yaml as global.images.collector"
            ),
            (
                "harbor.demo.io/3rdparty/elasticsearch:7.17.16",
                "is in values.yaml at elasticsearch.image"
            ),
            (
                "docker.elastic.co/kibana/kibana:7.17.16",
                "is in values.yaml at kibana.image"
            ),
        ]
    );
}

#[test]
fn an_unreadable_chart_names_what_is_wrong() {
    let none = read_chart(&chart_tgz(&[("log-center/values.yaml", VALUES_YAML)])).unwrap_err();
    assert_eq!(none, ChartError::Missing("Chart.yaml"));
    let unversioned = chart_tgz(&[("log-center/Chart.yaml", "apiVersion: v2\nname: x\n")]);
    assert_eq!(
        read_chart(&unversioned).unwrap_err().to_string(),
        "the chart's log-center/Chart.yaml: version must not be empty"
    );
    let broken = chart_tgz(&[("log-center/Chart.yaml", "name: [x\n")]);
    assert!(
        read_chart(&broken)
            .unwrap_err()
            .to_string()
            .starts_with("the chart's log-center/Chart.yaml: "),
    );
    assert!(matches!(
        read_chart(b"not gzip"),
        Err(ChartError::Archive(_))
    ));
}

#[test]
fn a_helm_chart_is_told_from_an_image_by_its_config() {
    let layer = json!({"mediaType": HELM_CONTENT, "digest": format!("sha256:{}", "a".repeat(64)), "size": 1234});
    let chart = json!({
        "schemaVersion": 2,
        "config": {"mediaType": HELM_CONFIG, "digest": format!("sha256:{}", "b".repeat(64)), "size": 10},
        "layers": [layer],
    });
    let found = chart_layer("r/c:1", chart.to_string().as_bytes()).unwrap();
    assert_eq!(found.size, 1234);
    let image = json!({
        "schemaVersion": 2,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": format!("sha256:{}", "b".repeat(64)), "size": 10},
        "layers": [],
    });
    let error = chart_layer("r/i:1", image.to_string().as_bytes()).unwrap_err();
    assert!(
        error.to_string().starts_with(
            "r/i:1 is not a Helm chart: its config is `application/vnd.oci.image.config.v1+json`"
        ),
        "{error}"
    );
}

#[test]
fn a_manifest_must_carry_every_image_and_the_version_of_its_chart() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/violet/log-center-chart/manifest.yaml"
    ))
    .unwrap();
    let manifest = PackageManifest::parse("manifest.yaml", &text).unwrap();
    let report = lint_against_chart(&manifest, &chart());
    let errors: Vec<&str> = report.errors().map(|f| f.message.as_str()).collect();
    assert_eq!(
        errors,
        [
            "spec.relatedImages does not list docker.elastic.co/kibana/kibana:7.17.16, which is in values.yaml at kibana.image; the package would not carry it"
        ]
    );
    let mut older = manifest.clone();
    older.spec.version = "4.1.1".into();
    let report = lint_against_chart(&older, &chart());
    assert!(
        report
            .errors()
            .any(|f| f.message
                == "spec.version 4.1.1 differs from the chart's, which is version v4.1.2"),
        "{report:#?}"
    );
}

#[test]
fn a_manifest_from_a_chart_lints_clean_in_either_format() {
    let reference = format!(
        "harbor.demo.io/acp/chart-log-center:v4.1.2@sha256:{}",
        "c".repeat(64)
    );
    let manifest = manifest_from_chart("log-center", &reference, &chart(), &["amd64".into()]);
    assert_eq!(
        manifest.artifact(),
        (reference.as_str(), crate::manifest::ArtifactType::Chart)
    );
    assert_eq!(manifest.spec.links[0].url, "https://log-center.example");
    for manifest in [manifest.clone(), crate::violet::convert(&manifest)] {
        let report = lint_manifest(&manifest, None);
        let errors: Vec<_> = report.errors().collect();
        assert!(errors.is_empty(), "{errors:#?}");
        assert!(!lint_against_chart(&manifest, &chart()).has_errors());
        assert!(report.findings.iter().all(|f| f.level == Level::Warning));
    }
    let violet = crate::violet::convert(&manifest).to_yaml();
    assert!(violet.contains("type: chart"), "{violet}");
    let windlass = manifest.to_yaml();
    assert!(!windlass.contains("bundle:"), "{windlass}");
    assert_eq!(PackageManifest::parse("m", &windlass).unwrap(), manifest);
    assert_eq!(
        PackageManifest::parse("m", &violet).unwrap().spec,
        manifest.spec
    );
}
