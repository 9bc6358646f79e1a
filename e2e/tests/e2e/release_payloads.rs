//! Release payloads in the local registry, through the `windlass release` commands: the sample
//! releases of `e2e/releases` are built and pushed by `release new`, read back by `release info`
//! and `release inspect`, checked from the outside with skopeo, and served as an update graph
//! by `release graph serve`; malformed payloads are refused naming the file, and nothing is
//! pushed for them.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use windlass_testkit::run_ok;

pub(crate) fn windlass() -> Command {
    Command::new(windlass_testkit::windlass_binary())
}

pub(crate) fn releases() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("releases")
}

const SAMPLES: [(&str, &str); 5] = [
    ("4.1.0", "4.1.0"),
    ("4.1.1", "4.1.1"),
    ("4.2.0", "4.2.0"),
    ("4.2.1-broken", "4.2.1"),
    ("4.2.2-broken-late", "4.2.2"),
];

/// `windlass release new` of a sample; returns the digest it reports.
pub(crate) fn release_new(dir: &Path, version: &str, reference: &str) -> String {
    let stdout = run_ok(windlass().args([
        "release",
        "new",
        "--from-dir",
        dir.to_str().unwrap(),
        "--version",
        version,
        "--to",
        reference,
        "--plain-http",
    ]));
    let digest = stdout
        .trim()
        .rsplit_once('@')
        .map(|(_, d)| d.to_string())
        .unwrap_or_else(|| panic!("no digest in {stdout:?}"));
    assert!(
        stdout.starts_with(&format!("pushed release {version} (")),
        "{stdout}"
    );
    assert!(digest.starts_with("sha256:"), "{stdout}");
    digest
}

fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

fn skopeo(args: &[&str]) -> Output {
    Command::new("skopeo")
        .args(args)
        .output()
        .expect("skopeo is installed (apt-get install skopeo)")
}

#[test]
fn a_release_pushed_by_release_new_reads_back_the_same_through_info_inspect_and_skopeo() {
    let registry = windlass_testkit::registry();
    let repository = registry.unique_repository("e2e/releases");
    let reference = format!("{repository}:4.2.0");
    let digest = release_new(&releases().join("4.2.0"), "4.2.0", &reference);

    let info = json(&run_ok(windlass().args([
        "release",
        "info",
        &reference,
        "--plain-http",
        "-o",
        "json",
    ])));
    assert_eq!(info["name"], "4.2.0");
    assert_eq!(info["digest"], digest.as_str());
    assert_eq!(info["pullSpec"], format!("{repository}@{digest}"));
    assert_eq!(
        info["metadata"]["previous"],
        serde_json::json!(["4.1.0", "4.1.1"])
    );
    assert_eq!(info["irreversibleLevels"], serde_json::json!(["40"]));
    assert_eq!(info["architecture"], "amd64");
    assert!(
        info["created"].as_str().is_some_and(|c| c.ends_with('Z')),
        "{info}"
    );
    let written: serde_json::Value = serde_json::from_slice(
        &std::fs::read(releases().join("4.2.0/release-manifests/image-references")).unwrap(),
    )
    .unwrap();
    let names: Vec<&str> = info["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    let expected: Vec<&str> = written["spec"]["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, expected);

    let text = run_ok(windlass().args(["release", "info", &reference, "--plain-http"]));
    assert!(text.contains(&format!("Digest:    {digest}")), "{text}");
    assert!(text.contains("Upgrades: 4.1.0, 4.1.1"), "{text}");
    assert!(text.contains("level 40"), "{text}");

    // The same plan from the image as from the directory.
    let from_image = json(&run_ok(windlass().args([
        "release",
        "inspect",
        &reference,
        "--plain-http",
        "-o",
        "json",
    ])));
    let from_dir = json(&run_ok(windlass().args([
        "release",
        "inspect",
        releases().join("4.2.0").to_str().unwrap(),
        "-o",
        "json",
    ])));
    assert_eq!(from_image["plan"], from_dir["plan"]);
    assert_eq!(from_image["digest"], digest.as_str());

    // skopeo agrees on the digest and the labels, and the one layer holds exactly the two
    // payload directories.
    let inspect = skopeo(&[
        "inspect",
        "--tls-verify=false",
        &format!("docker://{reference}"),
    ]);
    assert!(
        inspect.status.success(),
        "{}",
        String::from_utf8_lossy(&inspect.stderr)
    );
    let inspect = json(&String::from_utf8_lossy(&inspect.stdout));
    assert_eq!(inspect["Digest"], digest.as_str());
    assert_eq!(inspect["Labels"]["io.openshift.release"], "4.2.0");
    let copy = tempfile_dir("skopeo-copy");
    let copied = skopeo(&[
        "copy",
        "--src-tls-verify=false",
        &format!("docker://{reference}"),
        &format!("dir:{}", copy.display()),
    ]);
    assert!(
        copied.status.success(),
        "{}",
        String::from_utf8_lossy(&copied.stderr)
    );
    let manifest = json(&std::fs::read_to_string(copy.join("manifest.json")).unwrap());
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1);
    let layer = copy.join(
        layers[0]["digest"]
            .as_str()
            .unwrap()
            .trim_start_matches("sha256:"),
    );
    let listing = run_ok(Command::new("tar").arg("tzf").arg(&layer));
    let mut in_layer: Vec<&str> = listing.lines().filter(|l| !l.ends_with('/')).collect();
    in_layer.sort();
    let mut on_disk: Vec<String> = ["manifests", "release-manifests"]
        .iter()
        .flat_map(|d| {
            std::fs::read_dir(releases().join("4.2.0").join(d))
                .unwrap()
                .map(move |e| format!("{d}/{}", e.unwrap().file_name().to_string_lossy()))
        })
        .collect();
    on_disk.sort();
    assert_eq!(in_layer, on_disk);
    let _ = std::fs::remove_dir_all(&copy);
}

fn tempfile_dir(prefix: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(windlass_testkit::unique_name(prefix));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn release_new_writes_missing_metadata_and_image_references() {
    let registry = windlass_testkit::registry();
    let reference = format!("{}:4.1.0", registry.unique_repository("e2e/releases-made"));
    let dir = tempfile_dir("release-made");
    copy_dir(&releases().join("4.1.0"), &dir);
    std::fs::remove_file(dir.join("release-manifests/release-metadata")).unwrap();
    std::fs::remove_file(dir.join("release-manifests/image-references")).unwrap();
    run_ok(windlass().args([
        "release",
        "new",
        "--from-dir",
        dir.to_str().unwrap(),
        "--version",
        "4.1.0",
        "--previous",
        "4.0.9",
        "--channel",
        "stable-4.1,fast-4.1",
        "--to",
        &reference,
        "--plain-http",
    ]));
    let info = json(&run_ok(windlass().args([
        "release",
        "info",
        &reference,
        "--plain-http",
        "-o",
        "json",
    ])));
    assert_eq!(info["metadata"]["previous"], serde_json::json!(["4.0.9"]));
    assert_eq!(
        info["metadata"]["metadata"]["io.openshift.upgrades.graph.release.channels"],
        "stable-4.1,fast-4.1"
    );
    // One tag per distinct image, named after the first container running it.
    let images: Vec<(String, String)> = info["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["name"].as_str().unwrap().into(),
                i["image"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        images.len(),
        1,
        "every 4.1.0 component runs pause 3.9: {images:?}"
    );
    assert_eq!(images[0].0, "dns-operator");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A child process that is killed when the test ends, however it ends.
pub(crate) struct Running(Child);

/// `windlass release graph serve` of `repository` on a free port: the process, the base URL
/// (`http://127.0.0.1:PORT`) and the line it printed.
pub(crate) fn serve_graph(repository: &str) -> (Running, String, String) {
    let mut child = windlass()
        .args([
            "release",
            "graph",
            "serve",
            "--repository",
            repository,
            "--listen",
            "127.0.0.1:0",
            "--plain-http",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Running(child);
    let mut first = String::new();
    BufReader::new(stdout).read_line(&mut first).unwrap();
    let base = first
        .trim()
        .rsplit_once(" on ")
        .map(|(_, url)| url.trim_end_matches("/graph").to_string())
        .unwrap_or_else(|| panic!("no address in {first:?}"));
    (server, base, first)
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn curl(url: &str) -> (u16, String) {
    let output = run_ok(Command::new("curl").args(["-s", "-w", "\n%{http_code}", url]));
    let (body, code) = output.trim_end().rsplit_once('\n').unwrap();
    (code.parse().unwrap(), body.to_string())
}

fn versions_of_edges(graph: &serde_json::Value) -> Vec<String> {
    let nodes = graph["nodes"].as_array().unwrap();
    let mut edges: Vec<String> = graph["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let v = |i: &serde_json::Value| {
                nodes[i.as_u64().unwrap() as usize]["version"]
                    .as_str()
                    .unwrap()
                    .to_string()
            };
            format!("{} -> {}", v(&e[0]), v(&e[1]))
        })
        .collect();
    edges.sort();
    edges
}

#[test]
fn graph_serve_answers_with_the_edges_of_every_payload_in_the_repository() {
    let registry = windlass_testkit::registry();
    let repository = registry.unique_repository("e2e/release-graph");
    let mut digests = std::collections::BTreeMap::new();
    for (dir, version) in SAMPLES {
        let digest = release_new(
            &releases().join(dir),
            version,
            &format!("{repository}:{version}"),
        );
        digests.insert(version.to_string(), digest);
    }
    // Another tag of one image is the same node; an image that is no payload is left out.
    run_ok(Command::new("skopeo").args([
        "copy",
        "--preserve-digests",
        "--src-tls-verify=false",
        "--dest-tls-verify=false",
        &format!("docker://{repository}:4.1.0"),
        &format!("docker://{repository}:latest"),
    ]));
    let bundle = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundles/acme-db/1.0.0");
    run_ok(windlass().args([
        "bundle",
        "push",
        bundle.to_str().unwrap(),
        &format!("{repository}:a-bundle"),
        "--plain-http",
    ]));

    let dot = run_ok(windlass().args([
        "release",
        "graph",
        "--repository",
        &repository,
        "--plain-http",
    ]));
    assert!(
        dot.contains("\"4.1.1\" -> \"4.2.0\" [style=solid];"),
        "{dot}"
    );
    let mermaid = run_ok(windlass().args([
        "release",
        "graph",
        "--repository",
        &repository,
        "--plain-http",
        "-o",
        "mermaid",
        "--channel",
        "stable-4.1",
    ]));
    assert_eq!(
        mermaid.lines().filter(|l| l.contains("-->")).count(),
        1,
        "{mermaid}"
    );

    let (server, base, first) = serve_graph(&repository);
    assert!(first.contains("(5 releases, 5 edges)"), "{first}");

    let (code, body) = curl(&format!(
        "{base}/graph?channel=stable-4.2&version=4.1.1&arch=amd64"
    ));
    assert_eq!(code, 200, "{body}");
    let graph = json(&body);
    assert_eq!(
        versions_of_edges(&graph),
        vec![
            "4.1.0 -> 4.1.1",
            "4.1.0 -> 4.2.0",
            "4.1.1 -> 4.2.0",
            "4.2.0 -> 4.2.1",
            "4.2.0 -> 4.2.2"
        ]
    );
    for node in graph["nodes"].as_array().unwrap() {
        let version = node["version"].as_str().unwrap();
        assert_eq!(
            node["payload"],
            format!("{repository}@{}", digests[version]),
            "{node}"
        );
    }
    let (_, body) = curl(&format!(
        "{base}/api/upgrades_info/v1/graph?channel=stable-4.1"
    ));
    assert_eq!(versions_of_edges(&json(&body)), vec!["4.1.0 -> 4.1.1"]);
    let (_, body) = curl(&format!("{base}/graph?channel=stable-4.2&arch=arm64"));
    assert_eq!(json(&body)["nodes"], serde_json::json!([]));
    let (code, body) = curl(&format!("{base}/graph"));
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("channel"), "{body}");
    let (code, _) = curl(&format!("{base}/graph?channel=Not%20A%20Channel"));
    assert_eq!(code, 400);
    drop(server);
}

#[test]
fn malformed_payloads_are_refused_naming_the_file_and_nothing_is_pushed() {
    let registry = windlass_testkit::registry();
    let repository = registry.unique_repository("e2e/release-refused");
    let deployment = "release-manifests/0000_10_dns_02_deployment.yaml";
    type Break = fn(&Path);
    let cases: [(&str, Break, &str, &str); 5] = [
        (
            "image by tag",
            |dir| {
                edit(
                    dir,
                    "release-manifests/0000_10_dns_02_deployment.yaml",
                    "registry.k8s.io/pause@sha256:7031c1b283388d2c2e09b57badb803c05ebed362dc88d84b480cc47f72a21097",
                    "registry.k8s.io/pause:3.9",
                )
            },
            deployment,
            "is not pinned by digest",
        ),
        (
            "image not listed",
            |dir| {
                edit(
                    dir,
                    "release-manifests/0000_10_dns_02_deployment.yaml",
                    "registry.k8s.io/pause@",
                    "quay.io/acme/dns@",
                )
            },
            deployment,
            "which release-manifests/image-references does not list",
        ),
        (
            "duplicate object",
            |dir| {
                std::fs::copy(
                    dir.join("release-manifests/0000_10_dns_00_namespace.yaml"),
                    dir.join("release-manifests/0000_30_monitoring_09_dns-namespace.yaml"),
                )
                .unwrap();
            },
            "release-manifests/0000_30_monitoring_09_dns-namespace.yaml",
            "Namespace platform-dns is defined twice",
        ),
        (
            "unparseable file",
            |dir| {
                std::fs::write(
                    dir.join("release-manifests/0000_30_monitoring_09_bad.yaml"),
                    "kind: [Namespace\n",
                )
                .unwrap()
            },
            "release-manifests/0000_30_monitoring_09_bad.yaml",
            "",
        ),
        (
            "metadata for another version",
            |dir| {
                edit(
                    dir,
                    "release-manifests/release-metadata",
                    "\"version\": \"4.1.0\"",
                    "\"version\": \"4.1.5\"",
                )
            },
            "release-manifests/release-metadata",
            "version is 4.1.5, but --version says 4.1.0",
        ),
    ];
    for (what, break_it, file, message) in cases {
        let dir = tempfile_dir("release-refused");
        copy_dir(&releases().join("4.1.0"), &dir);
        break_it(&dir);
        let tag = windlass_testkit::unique_name("refused");
        let reference = format!("{repository}:{tag}");
        let output = windlass()
            .args([
                "release",
                "new",
                "--from-dir",
                dir.to_str().unwrap(),
                "--version",
                "4.1.0",
                "--to",
                &reference,
                "--plain-http",
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{what}: pushed anyway");
        assert!(
            stderr.contains(file) && stderr.contains(message),
            "{what}: {stderr}"
        );
        let inspect = skopeo(&[
            "inspect",
            "--tls-verify=false",
            &format!("docker://{reference}"),
        ]);
        assert!(!inspect.status.success(), "{what}: something was pushed");
        let inspected = windlass()
            .args(["release", "inspect", dir.to_str().unwrap()])
            .output()
            .unwrap();
        if what != "metadata for another version" {
            assert!(!inspected.status.success(), "{what}: inspect accepted it");
            assert!(
                String::from_utf8_lossy(&inspected.stderr).contains(file),
                "{what}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

fn edit(dir: &Path, file: &str, from: &str, to: &str) {
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{file} has no {from:?}");
    std::fs::write(&path, text.replace(from, to)).unwrap();
}
