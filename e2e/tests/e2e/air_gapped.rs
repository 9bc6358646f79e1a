//! An air-gapped site: an operator packaged with every image it needs from the "internet"
//! registry, pushed into the site's own registry (which asks for credentials), and installed
//! from there through a Catalog and an ImageMirrorSet after the internet registry is stopped.
//! Both registries are Debian's docker-registry processes of this test's own; the outage is
//! the process stopped.

use std::{
    collections::BTreeMap,
    io::{Read, Write},
    path::{Path, PathBuf},
    process::{Command, Output},
    time::Duration,
};

use k8s_openapi::{
    ByteString,
    api::{apps::v1::Deployment, core::v1::Secret},
};
use kube::{
    Api,
    api::{ObjectMeta, PostParams},
};
use serde_json::{Value, json};
use windlass_api::{
    Catalog, ClusterServiceVersion, ImageMirrorSet, ImageRewrite, blueprint::BlueprintPhase,
    catalog::CatalogPhase,
};
use windlass_oci::RegistryClient;
use windlass_testkit::{
    TEST_NAMESPACE_LABEL, TestNamespace,
    catalogs::{phase as catalog_phase, publish_with},
    images::{PushedIndex, push_multi_arch},
    kubectl,
    lifecycle::{is_at, subscribe, wait_blueprint, wait_object},
    registries::RegistryProcess,
    require_manager, unique_name, windlass_binary,
};

mod violet;

const TIMEOUT: Duration = Duration::from_secs(240);
const USER: &str = "site-admin";
const ARCHITECTURES: [&str; 2] = ["amd64", "arm64"];

fn windlass(args: &[&str]) -> Output {
    Command::new(windlass_binary())
        .args(args)
        .output()
        .expect("running windlass")
}

/// Runs windlass, which must succeed; returns its stdout.
fn windlass_ok(args: &[&str]) -> String {
    let output = windlass(args);
    assert!(
        output.status.success(),
        "windlass {} failed:\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Runs windlass, which must fail; returns what it said.
fn windlass_refuses(args: &[&str]) -> String {
    let output = windlass(args);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        !output.status.success(),
        "windlass {} succeeded:\n{said}",
        args.join(" ")
    );
    said
}

/// The images of the operator, in the internet registry: the operator itself, the database
/// it deploys (handed over in RELATED_IMAGE_DB) and a metrics sidecar; each for amd64 and
/// arm64, made with windlass's own OCI code.
struct Images {
    operator: PushedIndex,
    database: PushedIndex,
    proxy: PushedIndex,
}

async fn publish_images(internet: &RegistryProcess, prefix: &str) -> Images {
    let options = internet.options();
    let base = format!("{}/{prefix}", internet.addr);
    Images {
        operator: push_multi_arch(
            &format!("{base}/db-operator:1.0.0"),
            &ARCHITECTURES,
            64 << 10,
            1,
            &options,
        )
        .await,
        database: push_multi_arch(
            &format!("{base}/db-server:16.2"),
            &ARCHITECTURES,
            96 << 10,
            2,
            &options,
        )
        .await,
        proxy: push_multi_arch(
            &format!("{base}/metrics-proxy:0.9"),
            &ARCHITECTURES,
            32 << 10,
            3,
            &options,
        )
        .await,
    }
}

/// The sample acme-db 1.0.0 bundle, its CSV naming the images by digest in the internet
/// registry: the operator and the sidecar its Deployment runs, the database in
/// RELATED_IMAGE_DB, all three in relatedImages.
async fn publish_bundle(
    internet: &RegistryProcess,
    prefix: &str,
    package: &str,
    images: &Images,
) -> String {
    let operator = images.operator.pinned();
    let database = images.database.pinned();
    let proxy = images.proxy.pinned();
    let repository = format!("{}/{prefix}/acme-db-bundle", internet.addr);
    publish_with(
        &internet.options(),
        &repository,
        package,
        "acme-db/1.0.0",
        move |object| {
            if object["kind"] != "ClusterServiceVersion" {
                return;
            }
            let pod = &mut object["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]
                ["spec"];
            pod["containers"][0]["image"] = json!(operator);
            pod["containers"][0]["env"]
                .as_array_mut()
                .unwrap()
                .push(json!({"name": "RELATED_IMAGE_DB", "value": database}));
            pod["containers"]
                .as_array_mut()
                .unwrap()
                .push(json!({"name": "metrics-proxy", "image": proxy}));
            object["spec"]["relatedImages"] = json!([
                {"name": "operator", "image": operator},
                {"name": "db", "image": database},
                {"name": "metrics-proxy", "image": proxy},
            ]);
        },
    )
    .await
}

fn skopeo_raw(reference: &str, credentials: Option<&(String, String)>) -> Vec<u8> {
    let mut command = Command::new("skopeo");
    command.args(["inspect", "--raw", "--tls-verify=false"]);
    if let Some((user, password)) = credentials {
        command.arg(format!("--creds={user}:{password}"));
    }
    let output = command
        .arg(format!("docker://{reference}"))
        .output()
        .expect("running skopeo");
    assert!(
        output.status.success(),
        "skopeo inspect {reference}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{:x}", sha2::Sha256::digest(bytes))
}

/// `(path, kind, bytes)` of every entry of a package archive.
fn entries(archive: &[u8]) -> Vec<(String, tar::EntryType, Vec<u8>)> {
    let mut tar_bytes = Vec::new();
    flate2::read::GzDecoder::new(archive)
        .read_to_end(&mut tar_bytes)
        .unwrap();
    let mut reader = tar::Archive::new(tar_bytes.as_slice());
    reader
        .entries()
        .unwrap()
        .map(|entry| {
            let mut entry = entry.unwrap();
            let path = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
            let kind = entry.header().entry_type();
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).unwrap();
            (path, kind, bytes)
        })
        .collect()
}

/// The archive with an entry named `../<name>` written in after the manifest, as an
/// attacker would (the `tar` crate's builder refuses such names, so the header is written
/// by hand).
fn with_escaping_entry(archive: &[u8], name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, (path, kind, bytes)) in entries(archive).into_iter().enumerate() {
        let mut add = |path: &str, kind: tar::EntryType, bytes: &[u8]| {
            let mut header = tar::Header::new_gnu();
            header.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
            header.set_entry_type(kind);
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            out.extend_from_slice(header.as_bytes());
            out.extend_from_slice(bytes);
            out.resize(out.len().div_ceil(512) * 512, 0);
        };
        add(&path, kind, &bytes);
        if i == 0 {
            add(&format!("../{name}"), tar::EntryType::Regular, b"owned\n");
        }
    }
    out.extend_from_slice(&[0; 1024]);
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gzip.write_all(&out).unwrap();
    gzip.finish().unwrap()
}

/// The printed ImageMirrorSet and Catalog, from `package push`'s output.
fn printed_objects(output: &str) -> (ImageMirrorSet, Catalog) {
    let start = output
        .find("\n#")
        .unwrap_or_else(|| panic!("no objects printed:\n{output}"));
    let documents: Vec<Value> = serde_saphyr::from_multiple(&output[start..])
        .unwrap_or_else(|e| panic!("the printed objects do not read as YAML: {e}\n{output}"));
    let mirrors = documents
        .iter()
        .find(|d| d["kind"] == "ImageMirrorSet")
        .cloned()
        .unwrap_or_else(|| panic!("no ImageMirrorSet printed:\n{output}"));
    let catalog = documents
        .iter()
        .find(|d| d["kind"] == "Catalog")
        .cloned()
        .unwrap_or_else(|| panic!("no Catalog printed:\n{output}"));
    (
        serde_json::from_value(mirrors).unwrap(),
        serde_json::from_value(catalog).unwrap(),
    )
}

/// Deletes what the test made outside its namespace when it ends, however it ends (Drop
/// cannot await: kubectl asks the API server).
struct Cleanup {
    catalog: String,
    mirrors: String,
    secret: (String, String),
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for (kind, name) in [
            ("catalog.windlass.dev", &self.catalog),
            ("imagemirrorset.windlass.dev", &self.mirrors),
        ] {
            let _ = kubectl()
                .args(["delete", kind, name, "--ignore-not-found", "--wait=false"])
                .output();
        }
        let (namespace, name) = &self.secret;
        let _ = kubectl()
            .args([
                "delete",
                "secret",
                name,
                "-n",
                namespace,
                "--ignore-not-found",
            ])
            .output();
    }
}

/// Given an operator whose bundle and images (multi-architecture) live only in the internet
/// registry, when it is packaged, the package pushed into the site's registry, the internet
/// registry stopped, and the printed ImageMirrorSet and Catalog applied, then the operator
/// installs from the site's registry: its Deployment runs every image from there by the same
/// digest, skopeo reads each image and platform there under the digest the internet registry
/// served, the Blueprint's revision records each rewrite, and the CSV keeps the bundle's own
/// references.
#[tokio::test(flavor = "multi_thread")]
async fn an_operator_packaged_from_the_internet_installs_from_the_site_registry_after_the_outage() {
    require_manager();
    let admin = windlass_testkit::client().await;
    let mut internet = RegistryProcess::open();
    let password = unique_name("pw");
    let site = RegistryProcess::with_credentials(USER, &password);
    let prefix = unique_name("acme");
    let package = unique_name("acme-airgap");
    let images = publish_images(&internet, &prefix).await;
    let bundle = publish_bundle(&internet, &prefix, &package, &images).await;

    // Package it: a folder filled from the bundle, linted, built twice.
    let work = tempfile::tempdir().unwrap();
    let folder = work.path().join("package");
    let folder_arg = folder.display().to_string();
    windlass_ok(&[
        "package",
        "create",
        &package,
        "--from-bundle",
        &bundle,
        "--dir",
        &folder_arg,
        "--architectures",
        "amd64,arm64",
        "--plain-http",
    ]);
    let manifest = std::fs::read_to_string(folder.join("manifest.yaml")).unwrap();
    for image in [&images.operator, &images.database, &images.proxy] {
        assert!(manifest.contains(&image.pinned()), "{manifest}");
    }
    let lint = windlass_ok(&["package", "lint", &folder_arg, "--plain-http"]);
    assert!(lint.contains("0 error(s)"), "{lint}");
    let first = work.path().join("first.tgz");
    let second = work.path().join("second.tgz");
    for output in [&first, &second] {
        windlass_ok(&[
            "package",
            "build",
            &folder_arg,
            "-o",
            &output.display().to_string(),
            "--plain-http",
        ]);
    }
    let archive = std::fs::read(&first).unwrap();
    assert_eq!(
        archive,
        std::fs::read(&second).unwrap(),
        "two builds differ"
    );
    let inspected = windlass_ok(&["package", "inspect", &first.display().to_string()]);
    assert!(inspected.contains("4 images"), "{inspected}");
    assert!(
        inspected.contains("linux/amd64, linux/arm64"),
        "{inspected}"
    );
    // The archive's images/ is an OCI image layout other tools read.
    let layout = work.path().join("layout");
    for (path, kind, bytes) in entries(&archive) {
        if kind.is_file() && path.starts_with("images/") {
            let target = layout.join(&path);
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            std::fs::write(target, bytes).unwrap();
        }
    }
    let from_layout = Command::new("skopeo")
        .args(["inspect", "--raw"])
        .arg(format!(
            "oci:{}:{}",
            layout.join("images").display(),
            images.proxy.pinned()
        ))
        .output()
        .unwrap();
    assert!(
        from_layout.status.success(),
        "skopeo reads the archive's layout: {}",
        String::from_utf8_lossy(&from_layout.stderr)
    );
    assert_eq!(sha256(&from_layout.stdout), images.proxy.digest);

    // Archives that were cut short, are larger than allowed, or reach outside are refused,
    // and a refused push leaves nothing in the site's registry.
    let damaged = |name: &str, bytes: &[u8]| -> PathBuf {
        let path = work.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    let truncated = damaged("truncated.tgz", &archive[..archive.len() * 2 / 3]);
    let escaping = damaged("escaping.tgz", &with_escaping_entry(&archive, "evil"));
    let said = windlass_refuses(&["package", "inspect", &truncated.display().to_string()]);
    assert!(said.contains("the archive is truncated"), "{said}");
    let said = windlass_refuses(&[
        "package",
        "inspect",
        &first.display().to_string(),
        "--max-archive-bytes",
        "100000",
    ]);
    assert!(said.contains("larger than 100000 bytes unpacked"), "{said}");
    let said = windlass_refuses(&["package", "inspect", &escaping.display().to_string()]);
    assert!(
        said.contains("archive entry `../evil`: `..` is not allowed in paths"),
        "{said}"
    );
    assert!(!work.path().join("evil").exists() && !Path::new("../evil").exists());
    let dst = format!("{}/site", site.addr);
    let said = windlass_refuses(&[
        "package",
        "push",
        &truncated.display().to_string(),
        "--dst-repo",
        &dst,
        "--plain-http",
        "--username",
        USER,
        "--password",
        &password,
    ]);
    assert!(
        said.contains("nothing was tagged or pushed as an image"),
        "{said}"
    );
    let site_client = RegistryClient::new(&site.options());
    let bundle_at_site = format!("{dst}/{prefix}/acme-db-bundle");
    assert_eq!(
        site_client
            .resolve_digest(&format!("{bundle_at_site}:1.0.0"))
            .await
            .unwrap(),
        None,
        "a refused archive tagged nothing"
    );

    // Into the site's registry.
    let pushed = windlass_ok(&[
        "package",
        "push",
        &first.display().to_string(),
        "--dst-repo",
        &dst,
        "--plain-http",
        "--username",
        USER,
        "--password",
        &password,
    ]);
    let (mirrors, catalog) = printed_objects(&pushed);

    // skopeo agrees: every manifest of every image, every platform, has the digest the
    // internet registry served, now in the site's registry.
    let credentials = site.credentials.clone();
    let bundle_digest = RegistryClient::new(&internet.options())
        .resolve_digest(&bundle)
        .await
        .unwrap()
        .unwrap();
    let mut checked = 0;
    for (source, digest) in [
        (
            format!("{}/{prefix}/acme-db-bundle", internet.addr),
            bundle_digest.clone(),
        ),
        (repository(&images.operator), images.operator.digest.clone()),
        (repository(&images.database), images.database.digest.clone()),
        (repository(&images.proxy), images.proxy.digest.clone()),
    ] {
        let target = source.replacen(&internet.addr, &dst, 1);
        let raw = skopeo_raw(&format!("{target}@{digest}"), credentials.as_ref());
        assert_eq!(sha256(&raw), digest, "{target}");
        assert_eq!(
            raw,
            skopeo_raw(&format!("{source}@{digest}"), None),
            "{target}"
        );
        let index: Value = serde_json::from_slice(&raw).unwrap();
        for child in index["manifests"].as_array().into_iter().flatten() {
            let child_digest = child["digest"].as_str().unwrap();
            let raw = skopeo_raw(&format!("{target}@{child_digest}"), credentials.as_ref());
            assert_eq!(sha256(&raw), child_digest, "{target}@{child_digest}");
            checked += 1;
        }
        checked += 1;
    }
    assert_eq!(
        checked,
        4 + 3 * 2,
        "the bundle, three indexes and their six images"
    );
    // Every blob of every platform is there too: skopeo copies the whole index out.
    let copied = work.path().join("copied");
    let status = Command::new("skopeo")
        .args(["copy", "--all", "--src-tls-verify=false", "--quiet"])
        .arg(format!("--src-creds={USER}:{password}"))
        .arg(format!(
            "docker://{}@{}",
            repository(&images.operator).replacen(&internet.addr, &dst, 1),
            images.operator.digest
        ))
        .arg(format!("oci:{}:operator", copied.display()))
        .status()
        .unwrap();
    assert!(
        status.success(),
        "skopeo copy --all from the site's registry"
    );

    // The outage: the internet registry stops.
    internet.stop();
    assert!(std::net::TcpStream::connect(&internet.addr).is_err());

    let manager_namespace =
        windlass_testkit::manager::namespace().expect("the manager's namespace");
    let secret_name = catalog
        .spec
        .source
        .pull_secret
        .clone()
        .expect("the printed Catalog names a pull secret");
    let _cleanup = Cleanup {
        catalog: catalog.metadata.name.clone().unwrap(),
        mirrors: mirrors.metadata.name.clone().unwrap(),
        secret: (manager_namespace.clone(), secret_name.clone()),
    };
    let config = json!({"auths": {site.addr.clone(): {"username": USER, "password": password}}});
    Api::<Secret>::namespaced(admin.clone(), &manager_namespace)
        .create(
            &PostParams::default(),
            &Secret {
                metadata: ObjectMeta {
                    name: Some(secret_name),
                    ..Default::default()
                },
                type_: Some("kubernetes.io/dockerconfigjson".into()),
                data: Some(BTreeMap::from([(
                    ".dockerconfigjson".to_string(),
                    ByteString(serde_json::to_vec(&config).unwrap()),
                )])),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    Api::<ImageMirrorSet>::all(admin.clone())
        .create(&PostParams::default(), &mirrors)
        .await
        .unwrap();
    let mut catalog = catalog;
    catalog
        .metadata
        .labels
        .get_or_insert_default()
        .insert(TEST_NAMESPACE_LABEL.into(), "true".into());
    catalog.spec.poll_interval_seconds = Some(5);
    let catalogs = Api::<Catalog>::all(admin.clone());
    let catalog_name = catalog.metadata.name.clone().unwrap();
    catalogs
        .create(&PostParams::default(), &catalog)
        .await
        .unwrap();
    wait_object(
        &catalogs,
        &catalog_name,
        "Serving from the site's registry",
        TIMEOUT,
        |c| catalog_phase(c) == Some(CatalogPhase::Serving),
    )
    .await;

    let ns = TestNamespace::create(&admin, "airgap").await;
    subscribe(
        &admin,
        &ns.name,
        "db",
        json!({"package": package, "catalog": catalog_name, "targetNamespaces": [ns.name]}),
    )
    .await;
    let blueprint = wait_blueprint(&admin, &ns.name, "db", "1.0.0 Succeeded", TIMEOUT, |b| {
        is_at(b, BlueprintPhase::Succeeded, "1.0.0")
    })
    .await;

    // The Deployment runs every image from the site's registry, by the same digest.
    let at_site = |image: &PushedIndex| image.pinned().replacen(&internet.addr, &dst, 1);
    let deployment = Api::<Deployment>::namespaced(admin.clone(), &ns.name)
        .get("acme-db-operator")
        .await
        .unwrap();
    let pod = deployment.spec.template.spec.unwrap();
    let images_run: BTreeMap<String, String> = pod
        .containers
        .iter()
        .map(|c| (c.name.clone(), c.image.clone().unwrap_or_default()))
        .collect();
    assert_eq!(images_run["operator"], at_site(&images.operator));
    assert_eq!(images_run["metrics-proxy"], at_site(&images.proxy));
    let related = pod.containers[0]
        .env
        .iter()
        .flatten()
        .find(|e| e.name == "RELATED_IMAGE_DB")
        .and_then(|e| e.value.clone());
    assert_eq!(related, Some(at_site(&images.database)));

    // The revision records what was rewritten, by which ImageMirrorSet.
    let history = &blueprint.status.as_ref().unwrap().history;
    let current = history
        .iter()
        .find(|r| r.version == "1.0.0")
        .expect("a revision of 1.0.0");
    let set = mirrors.metadata.name.clone().unwrap();
    let expected = |image: String, mirror: String| ImageRewrite {
        image,
        mirror,
        mirror_set: set.clone(),
    };
    let mut wanted = vec![
        expected(images.operator.pinned(), at_site(&images.operator)),
        expected(images.database.pinned(), at_site(&images.database)),
        expected(images.proxy.pinned(), at_site(&images.proxy)),
    ];
    wanted.sort();
    let bundle_pinned = catalog.spec.source.bundle_images[0].clone();
    let mut recorded = current.image_rewrites.clone();
    let bundle_pull = recorded.remove(0);
    assert_eq!(
        bundle_pull,
        expected(
            bundle_pinned.clone(),
            bundle_pinned.replacen(&internet.addr, &dst, 1)
        ),
        "the bundle image was pulled from the site's registry"
    );
    assert_eq!(recorded, wanted);

    // The CSV keeps the bundle's own references; its bookkeeping says what runs instead.
    let csv = Api::<ClusterServiceVersion>::namespaced(admin.clone(), &ns.name)
        .get("acme-db.v1.0.0")
        .await
        .unwrap();
    let definition = csv.spec.definition.to_value();
    let shipped = definition["spec"]["install"]["spec"]["deployments"][0]["spec"]
        ["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(shipped, images.operator.pinned());
    assert_eq!(csv.spec.image_rewrites, wanted);
}

fn repository(image: &PushedIndex) -> String {
    windlass_oci::repository_of(&image.reference).unwrap()
}
