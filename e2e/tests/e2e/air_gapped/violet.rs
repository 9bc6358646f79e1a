//! Packages as ACP's violet makes them, read as they are: the NativeStor package folder of
//! ACP's docs and a Helm chart package, their images published under the same paths in the
//! local registry, then linted, packaged and pushed with violet's own command lines.

use std::{io::Write, path::Path, process::Command};

use serde_json::{Value, json};
use windlass_oci::{RegistryClient, RegistryOptions};
use windlass_testkit::{
    catalogs::{plain_http, publish_with},
    helm,
    images::push_multi_arch,
    run_ok, unique_name, windlass_binary,
};

use super::{entries, windlass_ok, windlass_refuses};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../crates/package/tests/data/violet"
);
/// Where the fixtures say their images are; the tests publish them below a prefix of their own.
const FIXTURE_REGISTRY: &str = "harbor.demo.io";
const HELM_CONFIG: &str = "application/vnd.cncf.helm.config.v1+json";
const HELM_CONTENT: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// Runs windlass in `dir`, which must succeed; returns its stdout.
fn windlass_in(dir: &Path, args: &[&str]) -> String {
    let output = Command::new(windlass_binary())
        .current_dir(dir)
        .args(args)
        .output()
        .expect("running windlass");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "windlass {} failed:\n{stdout}{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The fixture folder `name` copied into `work`, its images moved below `source` (the only
/// change: the registry the references name). Returns the folder and its manifest.
fn folder(work: &Path, name: &str, source: &str) -> (std::path::PathBuf, String, Value) {
    let from = Path::new(FIXTURES).join(name);
    let to = work.join(name);
    std::fs::create_dir_all(&to).unwrap();
    for entry in std::fs::read_dir(&from).unwrap() {
        let entry = entry.unwrap();
        let mut bytes = std::fs::read(entry.path()).unwrap();
        if entry.file_name() == "manifest.yaml" {
            bytes = String::from_utf8(bytes)
                .unwrap()
                .replace(FIXTURE_REGISTRY, source)
                .into_bytes();
        }
        std::fs::write(to.join(entry.file_name()), bytes).unwrap();
    }
    let text = std::fs::read_to_string(to.join("manifest.yaml")).unwrap();
    let manifest: Value = serde_saphyr::from_str(&text).unwrap();
    (to, text, manifest)
}

/// The references `relatedImages` lists, plain or as `{name, image}`.
fn related(manifest: &Value) -> Vec<String> {
    manifest["spec"]["relatedImages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().or(v["image"].as_str()).unwrap().to_string())
        .collect()
}

/// `repository:tag` split.
fn split(reference: &str) -> (&str, &str) {
    reference.rsplit_once(':').unwrap()
}

async fn digest(reference: &str, options: &RegistryOptions) -> String {
    RegistryClient::new(options)
        .resolve_digest(reference)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{reference} is not in the registry"))
}

/// Given the NativeStor package folder violet makes (ACP's docs' example) with its bundle and
/// nine images in a registry, when a violet user runs their own commands on it (`lint`,
/// `package DIR`, `show --all`, `push NAME.tgz --dest-repo HOST --plain`), then each works on
/// the folder as it is: lint finds no error, the archive is NAME.tgz and carries the manifest
/// byte for byte, every image reaches the site under the digest it was published with, and a
/// `create DIR --artifact REF --platforms ...` of the same bundle writes violet's format again.
#[tokio::test(flavor = "multi_thread")]
async fn a_violet_made_operator_package_lints_builds_and_pushes_as_it_is() {
    let registry = windlass_testkit::registry();
    let options = plain_http();
    let source = format!("{}/{}", registry.addr, unique_name("violet"));
    let work = tempfile::tempdir().unwrap();
    let (dir, text, manifest) = folder(work.path(), "topolvm-operator", &source);
    let images = related(&manifest);
    for (seed, image) in images.iter().enumerate() {
        push_multi_arch(image, &["amd64"], 16 << 10, seed as u64, &options).await;
    }
    let artifact = manifest["spec"]["artifact"].as_str().unwrap().to_string();
    let (repository, tag) = split(&artifact);
    let csv_images = images.clone();
    let published = publish_with(&options, repository, "topolvm-operator", "acme-db/1.0.0", move |object| {
        if object["kind"] != "ClusterServiceVersion" {
            return;
        }
        object["metadata"]["name"] = json!("topolvm-operator.v2.3.0");
        object["spec"]["version"] = json!("2.3.0");
        object["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]
            ["containers"][0]["image"] = json!(csv_images[0]);
        object["spec"]["relatedImages"] = json!(csv_images
            .iter()
            .enumerate()
            .map(|(i, image)| json!({"name": format!("image-{i}"), "image": image}))
            .collect::<Vec<_>>());
    })
    .await;
    // The bundle is tagged as the fixture names it, not by its version.
    let client = RegistryClient::new(&options);
    let raw = client.manifest(&published, 4 << 20).await.unwrap().unwrap();
    let media_type = if raw.media_type.is_empty() {
        OCI_MANIFEST
    } else {
        &raw.media_type
    };
    client
        .push_manifest(repository, Some(tag), &raw.bytes, media_type)
        .await
        .unwrap();

    let dir_arg = dir.display().to_string();
    let lint = windlass_ok(&["package", "lint", &dir_arg, "--plain"]);
    assert!(lint.contains("0 error(s)"), "{lint}");
    assert!(
        lint.contains("warning: manifest.yaml: spec.relatedImages[0] `"),
        "{lint}"
    );

    windlass_in(
        work.path(),
        &["package", "package", "topolvm-operator", "--plain"],
    );
    let archive = work.path().join("topolvm-operator.tgz");
    let bytes = std::fs::read(&archive).unwrap();
    let carried = entries(&bytes);
    assert_eq!(carried[0].0, "manifest.yaml");
    assert_eq!(
        carried[0].2,
        text.as_bytes(),
        "the manifest is carried as violet wrote it"
    );
    assert_eq!(carried[1].0, "icon.svg");
    let archive_arg = archive.display().to_string();
    let shown = windlass_ok(&["package", "show", &archive_arg, "--all"]);
    for line in [
        "Name: NativeStor".to_string(),
        "Type: bundle".to_string(),
        "Arch: [linux/amd64]".to_string(),
        "Version: 2.3.0".to_string(),
        format!("Artifact: {artifact}"),
    ] {
        assert!(shown.lines().any(|l| l == line), "{line}:\n{shown}");
    }

    let site = format!("{}/{}", registry.addr, unique_name("site"));
    let pushed = windlass_ok(&[
        "package",
        "push",
        &archive_arg,
        "--dest-repo",
        &site,
        "--plain",
    ]);
    assert!(pushed.contains("kind: ImageMirrorSet"), "{pushed}");
    assert!(pushed.contains("kind: Catalog"), "{pushed}");
    for image in std::iter::once(&artifact).chain(&images) {
        let at_site = image.replacen(&registry.addr, &site, 1);
        assert_eq!(
            digest(&at_site, &options).await,
            digest(image, &options).await,
            "{at_site}"
        );
    }
    let again = windlass_ok(&[
        "package",
        "push",
        &archive_arg,
        "--dest-repo",
        &site,
        "--plain",
        "--skip-push",
    ]);
    assert!(again.contains("nothing pushed"), "{again}");
    let empty = format!("{}/{}", registry.addr, unique_name("empty"));
    let said = windlass_refuses(&[
        "package",
        "push",
        &archive_arg,
        "--dest-repo",
        &empty,
        "--plain",
        "--skip-push",
    ]);
    assert!(
        said.contains("is not in the registry: push without --skip-push"),
        "{said}"
    );
    let said = windlass_refuses(&[
        "package",
        "push",
        &archive_arg,
        "--dest-repo",
        &site,
        "--plain",
        "--platform-address",
        "https://acp.example",
    ]);
    assert!(
        said.contains("--platform-address registers the package with an ACP platform"),
        "{said}"
    );

    let created = work.path().join("created");
    let created_arg = created.display().to_string();
    windlass_ok(&[
        "package",
        "create",
        &created_arg,
        "--artifact",
        &artifact,
        "--platforms",
        "linux/amd64",
        "--plain",
    ]);
    let made: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(created.join("manifest.yaml")).unwrap())
            .unwrap();
    assert_eq!(made["kind"], "PackageManifest");
    assert_eq!(
        made["metadata"]["name"], "topolvm-operator",
        "named as the bundle's package"
    );
    assert_eq!(made["spec"]["type"], "bundle");
    assert_eq!(made["spec"]["arch"], json!(["linux/amd64"]));
    let listed = related(&made);
    assert!(images.iter().all(|i| listed.contains(i)), "{made:#}");
    let lint = windlass_ok(&["package", "lint", &created_arg, "--plain"]);
    assert!(lint.contains("0 error(s)"), "{lint}");
}

/// A chart archive as `helm package` makes one.
fn chart_tgz(files: &[(&str, String)]) -> Vec<u8> {
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
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gzip.write_all(&builder.into_inner().unwrap()).unwrap();
    gzip.finish().unwrap()
}

/// Pushes `chart` as `helm push` does: Chart.yaml as the config, the archive as the one layer.
async fn push_chart(reference: &str, chart_yaml: &Value, chart: &[u8], options: &RegistryOptions) {
    let (repository, tag) = split(reference);
    let client = RegistryClient::new(options);
    let config = serde_json::to_vec(chart_yaml).unwrap();
    let config_digest = client.push_blob(repository, &config).await.unwrap();
    let layer_digest = client.push_blob(repository, chart).await.unwrap();
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": HELM_CONFIG, "digest": config_digest, "size": config.len()},
        "layers": [{"mediaType": HELM_CONTENT, "digest": layer_digest, "size": chart.len()}],
    });
    client
        .push_manifest(
            repository,
            Some(tag),
            &serde_json::to_vec(&manifest).unwrap(),
            OCI_MANIFEST,
        )
        .await
        .unwrap();
}

/// Given a violet chart package (`type: chart`) whose OCI Helm chart names two images in its
/// values, when it is linted, packaged and pushed with violet's command lines, then lint checks
/// it against the chart (and names a missing image), the archive shows as a chart, and the
/// chart at the site is one helm pulls byte for byte, with the command to install it printed.
#[tokio::test(flavor = "multi_thread")]
async fn a_violet_chart_package_lints_builds_and_pushes_its_chart() {
    let registry = windlass_testkit::registry();
    let options = plain_http();
    let source = format!("{}/{}", registry.addr, unique_name("violet-chart"));
    let work = tempfile::tempdir().unwrap();
    let (dir, _, manifest) = folder(work.path(), "log-center-chart", &source);
    let images = related(&manifest);
    for (seed, image) in images.iter().enumerate() {
        push_multi_arch(
            image,
            &["amd64", "arm64"],
            8 << 10,
            40 + seed as u64,
            &options,
        )
        .await;
    }
    let chart_yaml = json!({"apiVersion": "v2", "name": "log-center", "version": "v4.1.2"});
    let values = format!(
        "global:\n  registry:\n    address: {source}\n  images:\n    collector: {{repository: acp/log-collector, tag: v4.1.2}}\nelasticsearch:\n  image: {}\n",
        images[1]
    );
    let chart = chart_tgz(&[
        (
            "log-center/Chart.yaml",
            "apiVersion: v2\nname: log-center\nversion: v4.1.2\n".into(),
        ),
        ("log-center/values.yaml", values),
    ]);
    let artifact = manifest["spec"]["artifact"].as_str().unwrap().to_string();
    push_chart(&artifact, &chart_yaml, &chart, &options).await;

    let dir_arg = dir.display().to_string();
    let lint = windlass_ok(&["package", "lint", &dir_arg, "--plain"]);
    assert!(lint.contains("0 error(s)"), "{lint}");
    let short = work.path().join("short");
    std::fs::create_dir(&short).unwrap();
    let text = std::fs::read_to_string(dir.join("manifest.yaml")).unwrap();
    let without = text.replace(&format!("  - {}\n", images[1]), "");
    std::fs::write(short.join("manifest.yaml"), without).unwrap();
    let said = windlass_refuses(&["package", "lint", &short.display().to_string(), "--plain"]);
    assert!(
        said.contains(&format!(
            "spec.relatedImages does not list {}, which is in values.yaml at elasticsearch.image",
            images[1]
        )),
        "{said}"
    );

    windlass_in(
        work.path(),
        &["package", "package", "log-center-chart", "--plain"],
    );
    let archive = work.path().join("log-center.tgz");
    let archive_arg = archive.display().to_string();
    let shown = windlass_ok(&["package", "show", &archive_arg]);
    assert!(
        shown.contains("Type: chart\nArch: [linux/amd64 linux/arm64]\nVersion: v4.1.2"),
        "{shown}"
    );

    let site = format!("{}/{}", registry.addr, unique_name("site"));
    let pushed = windlass_ok(&[
        "package",
        "push",
        &archive_arg,
        "--dest-repo",
        &site,
        "--plain",
    ]);
    let chart_at_site = split(&artifact).0.replacen(&registry.addr, &site, 1);
    let install =
        format!("helm install log-center oci://{chart_at_site} --version v4.1.2 --plain-http");
    assert!(pushed.contains(&install), "{pushed}");
    assert!(
        !pushed.contains("kind: Catalog"),
        "a chart gets no Catalog:\n{pushed}"
    );
    let pulled = work.path().join("pulled");
    std::fs::create_dir(&pulled).unwrap();
    run_ok(
        helm()
            .args([
                "pull",
                &format!("oci://{chart_at_site}"),
                "--version",
                "v4.1.2",
                "--plain-http",
                "-d",
            ])
            .arg(&pulled),
    );
    let files: Vec<_> = std::fs::read_dir(&pulled)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(
        std::fs::read(&files[0]).unwrap(),
        chart,
        "helm pulls the chart as it was pushed"
    );

    let created = work.path().join("created");
    let created_arg = created.display().to_string();
    windlass_ok(&[
        "package",
        "create",
        &created_arg,
        "--artifact",
        &artifact,
        "--platforms",
        "linux/amd64,linux/arm64",
        "--plain",
    ]);
    let made: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(created.join("manifest.yaml")).unwrap())
            .unwrap();
    assert_eq!(made["spec"]["type"], "chart");
    assert_eq!(made["metadata"]["name"], "log-center");
    assert_eq!(related(&made), images, "the images the chart's values name");
}
