use super::*;
use crate::load::read_catalog;

#[test]
fn render_then_read_gives_the_same_catalog() {
    let dir = tempfile::tempdir().unwrap();
    crate::load::tests::package_manifest(dir.path());
    crate::load::tests::bundle_layout(dir.path());
    let catalog = read_catalog(dir.path()).unwrap().catalog;
    let blobs = render(&catalog);
    for (ext, write) in [
        (
            "json",
            write_json as fn(&[Value], &mut Vec<u8>) -> std::io::Result<()>,
        ),
        ("yaml", write_yaml),
    ] {
        let mut text = Vec::new();
        write(&blobs, &mut text).unwrap();
        let file = dir.path().join(format!("catalog.{ext}"));
        std::fs::write(&file, &text).unwrap();
        let back = read(&file).unwrap();
        assert!(back.issues.is_empty(), "{:?}", back.issues);
        assert_eq!(back.catalog, catalog, "{ext}");
    }
}

#[test]
fn rendered_blobs_have_the_opm_shape() {
    let dir = tempfile::tempdir().unwrap();
    crate::load::tests::bundle_layout(dir.path());
    let blobs = render(&read_catalog(dir.path()).unwrap().catalog);
    let schemas: Vec<&str> = blobs
        .iter()
        .map(|b| b["schema"].as_str().unwrap())
        .collect();
    assert_eq!(
        schemas,
        vec![
            "olm.package",
            "olm.channel",
            "olm.channel",
            "olm.bundle",
            "olm.bundle"
        ]
    );
    assert_eq!(blobs[0]["defaultChannel"], "alpha");
    let keys: Vec<&String> = blobs[3].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        vec!["schema", "name", "package", "image", "properties"]
    );
    assert_eq!(
        blobs[2]["entries"],
        serde_json::json!([{"name": "other.v2.1.0", "replaces": "other.v2.0.0"}])
    );
    assert_eq!(
        blobs[4]["properties"],
        serde_json::json!([
            {"type": "olm.package", "value": {"packageName": "other", "version": "2.1.0"}},
            {"type": "olm.gvk", "value": {"group": "demo.example.com", "version": "v1", "kind": "Widget"}},
            {"type": "olm.package.required", "value": {"packageName": "demo", "versionRange": ">=1.0.0"}}
        ])
    );
}

#[test]
fn reads_opm_style_streams_with_deprecations_and_reports_bad_blobs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("index.yaml");
    std::fs::write(&file, "schema: olm.package\nname: p\ndefaultChannel: c\n---\nschema: olm.channel\npackage: p\nname: c\nentries:\n- name: p.v1.0.0\n---\nschema: olm.bundle\nname: p.v1.0.0\npackage: p\nimage: example.com/p:1\nproperties:\n- type: olm.package\n  value: {packageName: p, version: 1.0.0}\n---\nschema: olm.deprecations\npackage: p\nentries:\n- reference: {schema: olm.package}\n  message: gone\n---\nschema: example.other\n").unwrap();
    let loaded = read(&file).unwrap();
    let p = &loaded.catalog.packages["p"];
    assert_eq!(p.bundles["p.v1.0.0"].version, semver::Version::new(1, 0, 0));
    assert_eq!(
        p.bundles["p.v1.0.0"].image.as_deref(),
        Some("example.com/p:1")
    );
    assert_eq!(p.deprecations[0].message, "gone");
    assert_eq!(loaded.issues.len(), 1);
    assert_eq!(loaded.issues[0].kind, IssueKind::UnknownSchema);

    std::fs::write(&file, "schema: olm.channel\nname: c\n").unwrap();
    let error = read(&file).unwrap_err().to_string();
    assert!(
        error.contains("olm.channel") && error.contains("package"),
        "{error}"
    );
    std::fs::write(&file, "name: nothing\n").unwrap();
    assert!(read(&file).unwrap_err().to_string().contains("no `schema`"));
}

#[test]
fn a_catalog_image_tree_reads_back_as_the_same_catalog() {
    let dir = tempfile::tempdir().unwrap();
    crate::load::tests::package_manifest(dir.path());
    crate::load::tests::bundle_layout(dir.path());
    let catalog = read_catalog(dir.path()).unwrap().catalog;
    let tree = image_tree(&catalog).unwrap();
    assert_eq!(
        tree.files.keys().collect::<Vec<_>>(),
        vec!["configs/demo/catalog.json", "configs/other/catalog.json"]
    );
    let back = read_tree(&tree, "/configs", "image").unwrap();
    assert!(back.issues.is_empty(), "{:?}", back.issues);
    assert_eq!(back.catalog, catalog);
}
