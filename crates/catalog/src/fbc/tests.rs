use super::*;
use crate::load::IssueKind;
use crate::load::read_catalog;

#[test]
fn render_then_read_gives_the_same_catalog() {
    let dir = tempfile::tempdir().unwrap();
    crate::load::tests::package_manifest(dir.path());
    crate::load::tests::bundle_layout(dir.path());
    let catalog = read_catalog(dir.path()).unwrap().catalog;
    let blobs = render(&catalog);
    for ext in ["json", "yaml"] {
        let mut text = Vec::new();
        match ext {
            "json" => write_json(&blobs, &mut text).unwrap(),
            _ => write_yaml(&blobs, &mut text).unwrap(),
        }
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
    let loaded = read(&file).unwrap();
    assert!(loaded.catalog.packages.is_empty());
    let issue = &loaded.issues[0];
    assert_eq!(issue.kind, IssueKind::BadBlob);
    assert!(
        issue
            .to_string()
            .contains("olm.channel blob has no `package`"),
        "{issue}"
    );
    std::fs::write(&file, "name: nothing\n").unwrap();
    assert!(
        read(&file).unwrap().issues[0]
            .to_string()
            .contains("no `schema`")
    );
}

fn bundle_blob(package: &str, version: &str) -> String {
    format!(
        r#"{{
    "schema": "olm.bundle",
    "name": "{package}.v{version}",
    "package": "{package}",
    "image": "example.com/{package}:{version}",
    "properties": [
        {{"type": "olm.package", "value": {{"packageName": "{package}", "version": "{version}"}}}},
        {{"type": "olm.csv.metadata", "value": {{"description": "about {package} {{}}"}}}}
    ]
}}
"#
    )
}

/// Three packages; `p` has three bundles, one of which is malformed as `bad` says.
fn stream_with_one_bad_bundle(bad: &str) -> String {
    let mut text = String::new();
    for package in ["a", "p", "z"] {
        text.push_str(&format!(
            "{{\"schema\": \"olm.package\", \"name\": \"{package}\", \"defaultChannel\": \"stable\"}}\n"
        ));
        text.push_str(&format!(
            "{{\"schema\": \"olm.channel\", \"package\": \"{package}\", \"name\": \"stable\", \"entries\": [{{\"name\": \"{package}.v1.0.0\"}}, {{\"name\": \"{package}.v2.0.0\", \"replaces\": \"{package}.v1.0.0\"}}]}}\n"
        ));
        text.push_str(&bundle_blob(package, "1.0.0"));
        if package == "p" {
            text.push_str(bad);
        }
        text.push_str(&bundle_blob(package, "2.0.0"));
    }
    text
}

#[test]
fn one_malformed_bundle_blob_costs_only_itself() {
    let cases = [
        // Not JSON: a comma is missing.
        (
            "{\"schema\": \"olm.bundle\", \"name\": \"p.v1.5.0\" \"package\": \"p\"}\n",
            Some("p.v1.5.0"),
            "not JSON at line 35: expected `,` or `}`",
        ),
        // JSON, but a property value of the wrong shape.
        (
            r#"{"schema": "olm.bundle", "name": "p.v1.5.0", "package": "p", "properties": [{"type": "olm.package", "value": {"packageName": "p", "version": 15}}]}"#,
            Some("p.v1.5.0"),
            "properties[0].value.version: invalid type: integer `15`",
        ),
        // No version.
        (
            r#"{"schema": "olm.bundle", "name": "p.v1.5.0", "package": "p", "properties": []}"#,
            Some("p.v1.5.0"),
            "no olm.package property",
        ),
        // Not even a map.
        ("[1, 2, 3]", None, "invalid type: sequence"),
    ];
    for (bad, bundle, what) in cases {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("catalog.json");
        std::fs::write(&file, stream_with_one_bad_bundle(bad)).unwrap();
        let loaded = read(&file).unwrap();
        let names: Vec<(&str, Vec<&str>)> = loaded
            .catalog
            .packages
            .values()
            .map(|p| {
                (
                    p.name.as_str(),
                    p.bundles.keys().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            names,
            vec![
                ("a", vec!["a.v1.0.0", "a.v2.0.0"]),
                ("p", vec!["p.v1.0.0", "p.v2.0.0"]),
                ("z", vec!["z.v1.0.0", "z.v2.0.0"]),
            ],
            "{bad}"
        );
        let [issue] = loaded.issues.as_slice() else {
            panic!("{bad}: {:?}", loaded.issues)
        };
        assert!(issue.loses_content());
        assert_eq!(issue.document, Some(8), "{bad}: {issue}");
        assert_eq!(issue.bundle.as_deref(), bundle, "{bad}: {issue}");
        if bundle.is_some() {
            assert_eq!(issue.package.as_deref(), Some("p"), "{issue}");
        }
        assert_eq!(
            issue.file,
            format!("{}:35", file.display()),
            "the line the blob starts on: {issue}"
        );
        assert!(issue.message.contains(what), "{bad}: {issue}");
    }
}

#[test]
fn a_yaml_document_that_does_not_parse_costs_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("catalog.yaml");
    let good = |v: &str| {
        format!(
            "---\nschema: olm.bundle\nname: p.v{v}\npackage: p\nproperties:\n- type: olm.package\n  value: {{packageName: p, version: {v}}}\n"
        )
    };
    let text = format!(
        "# a catalog\nschema: olm.package\nname: p\n{}---\nschema: olm.bundle\nname: p.v1.5.0\npackage: [p\n{}---\nschema: olm.bundle\nname: p.v1.6.0\npackage: p\nproperties:\n- type: olm.gvk\n  value: {{group: g, kind: K}}\n",
        good("1.0.0"),
        good("2.0.0")
    );
    std::fs::write(&file, text).unwrap();
    let loaded = read(&file).unwrap();
    let p = &loaded.catalog.packages["p"];
    assert_eq!(
        p.bundles.keys().collect::<Vec<_>>(),
        vec!["p.v1.0.0", "p.v2.0.0"]
    );
    assert_eq!(loaded.issues.len(), 2, "{:?}", loaded.issues);
    let syntax = &loaded.issues[0];
    assert_eq!(
        (syntax.document, syntax.file.clone()),
        (Some(3), format!("{}:11", file.display()))
    );
    let shape = &loaded.issues[1];
    assert_eq!(shape.document, Some(5));
    assert_eq!(shape.bundle.as_deref(), Some("p.v1.6.0"));
    assert!(
        shape.message.contains("properties[0].value") && shape.message.contains("version"),
        "{shape}"
    );
}

#[test]
fn chunked_reading_agrees_with_reading_in_memory() {
    let mut text = String::new();
    for i in 0..40 {
        text.push_str(&bundle_blob("p", &format!("1.{i}.0")));
        if i == 20 {
            // Larger than the chunk, and broken.
            text.push_str(
                &format!(
                    "{{\"schema\": \"olm.bundle\", \"name\": \"{}\" }}\n",
                    "x".repeat(300)
                )
                .replace("\" }", "\" ,}"),
            );
        }
    }
    let mut whole = Assembler::default();
    let file = whole.file("c.json".into());
    stream::read_json_bytes(text.as_bytes(), file, &mut whole);
    let (catalog, issues) = whole.finish();
    for chunk in [16, 64, 1000, 1 << 20] {
        let mut chunked = Assembler::default();
        let file = chunked.file("c.json".into());
        stream::read_json_chunked(text.as_bytes(), chunk, file, &mut chunked).unwrap();
        let (c, i) = chunked.finish();
        assert_eq!(c, catalog, "chunk {chunk}");
        assert_eq!(i, issues, "chunk {chunk}");
        let (c, i) = read_pipelined(&text, chunk, chunk / 2);
        assert_eq!(c, catalog, "pipelined, chunk {chunk}");
        assert_eq!(i, issues, "pipelined, chunk {chunk}");
    }
    assert_eq!(catalog.packages["p"].bundles.len(), 40);
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert_eq!(issues[0].document, Some(22));
}

#[test]
fn a_truncated_stream_keeps_what_came_before() {
    let mut text = bundle_blob("p", "1.0.0");
    text.push_str(&bundle_blob("p", "2.0.0")[..60]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("catalog.json");
    std::fs::write(&file, &text).unwrap();
    let loaded = read(&file).unwrap();
    assert_eq!(loaded.catalog.packages["p"].bundles.len(), 1);
    assert_eq!(loaded.issues[0].kind, IssueKind::UnreadableFile);
    assert_eq!(loaded.issues[0].document, Some(2));
}

#[test]
fn an_unreadable_file_in_a_folder_is_a_problem_and_the_rest_is_served() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.json"), bundle_blob("a", "1.0.0")).unwrap();
    std::fs::write(dir.path().join("b.yaml"), b"schema: \xff\n").unwrap();
    let loaded = read(dir.path()).unwrap();
    assert_eq!(loaded.catalog.packages["a"].bundles.len(), 1);
    assert_eq!(loaded.issues.len(), 1);
    assert_eq!(loaded.issues[0].kind, IssueKind::UnreadableFile);
    assert!(loaded.issues[0].file.ends_with("b.yaml"));
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

/// `text` read whole (decoded by two threads once it is large) and in small chunks (one
/// thread), each giving the catalog and problems.
fn read_both_ways(text: &str) -> [(crate::model::Catalog, Vec<crate::load::LoadIssue>); 2] {
    let mut whole = Assembler::default();
    let file = whole.file("c.json".into());
    stream::read_json_bytes(text.as_bytes(), file, &mut whole);
    let mut chunked = Assembler::default();
    let file = chunked.file("c.json".into());
    stream::read_json_chunked(text.as_bytes(), 4096, file, &mut chunked).unwrap();
    let chunked = chunked.finish();
    // Two threads in a pipeline, with buffers small enough that every guess is put to the
    // test: where a buffer is cut, where it is split, and what spans them.
    for (chunk, parallel_from) in [(4096, 1024), (700, 300), (50_000, 1)] {
        let pipelined = read_pipelined(text, chunk, parallel_from);
        assert_eq!(pipelined.0, chunked.0, "chunk {chunk}");
        assert_eq!(pipelined.1, chunked.1, "chunk {chunk}");
    }
    [whole.finish(), chunked]
}

fn read_pipelined(
    text: &str,
    chunk: usize,
    parallel_from: usize,
) -> (crate::model::Catalog, Vec<crate::load::LoadIssue>) {
    let mut assembler = Assembler::default();
    let file = assembler.file("c.json".into());
    super::pipeline::read_json(text.as_bytes(), chunk, parallel_from, file, &mut assembler)
        .unwrap();
    assembler.finish()
}

#[test]
fn values_read_the_same_however_they_are_laid_out_on_lines() {
    let blobs: Vec<String> = (0..30)
        .map(|i| {
            let blob: serde_json::Value =
                serde_json::from_str(&bundle_blob("p", &format!("1.{i}.0"))).unwrap();
            blob.to_string()
        })
        .collect();
    let one_per_line = blobs.join("\n");
    let layouts = [
        // All on one line, with and without space between.
        blobs.concat(),
        blobs.join(" "),
        // Nested values starting lines too, as some writers lay them out.
        blobs
            .iter()
            .map(|b| b.replace("[{", "[\n{").replace(",{", ",\n{"))
            .collect::<Vec<_>>()
            .join("\n"),
    ];
    let [(expected, no_issues), _] = read_both_ways(&one_per_line);
    assert!(no_issues.is_empty(), "{no_issues:?}");
    assert_eq!(expected.packages["p"].bundles.len(), 30);
    for text in layouts {
        for (catalog, issues) in read_both_ways(&text) {
            assert!(issues.is_empty(), "{issues:?}");
            assert_eq!(catalog, expected);
        }
    }
}

#[test]
fn a_large_stream_read_by_two_threads_agrees_with_one_thread_problems_included() {
    // Well past the size at which two threads share the work; a bad blob in each half, and
    // lines that start nested values so a split can land inside a blob.
    let mut text = String::new();
    let mut bad = 0;
    for i in 0..3000 {
        if i % 2 == 0 {
            text.push_str(&bundle_blob("p", &format!("1.{i}.0")));
        } else {
            text.push_str(
                &bundle_blob("q", &format!("2.{i}.0"))
                    .replace("[\n", "[\n{\"type\": \"x.pad\", \"value\":\n{\"n\": 1}},\n"),
            );
        }
        if i == 700 || i == 2300 {
            text.push_str(
                "{\"schema\": \"olm.bundle\", \"name\": \"p.v9.9.9\" \"package\": \"p\"}\n",
            );
            bad += 1;
        }
    }
    assert!(text.len() > 512 << 10, "{}", text.len());
    let [(whole, whole_issues), (chunked, chunked_issues)] = read_both_ways(&text);
    assert_eq!(whole, chunked);
    assert_eq!(whole_issues, chunked_issues);
    assert_eq!(whole.packages["p"].bundles.len(), 1500);
    assert_eq!(whole.packages["q"].bundles.len(), 1500);
    assert_eq!(whole_issues.len(), bad, "{whole_issues:?}");
    assert_eq!(whole_issues[0].document, Some(702));
    assert!(
        whole_issues[1].message.contains("not JSON"),
        "{}",
        whole_issues[1]
    );
}

#[test]
fn packages_finished_by_two_threads_agree_with_one_thread() {
    // Duplicate bundles in a package of each half, so each thread reports a problem.
    let mut text = String::new();
    for p in 0..40 {
        for v in 0..3 {
            text.push_str(&bundle_blob(&format!("p{p:02}"), &format!("1.{v}.0")));
        }
        if p == 3 || p == 33 {
            text.push_str(&bundle_blob(&format!("p{p:02}"), "1.1.0"));
        }
    }
    let read = |two_threads: bool| {
        let mut assembler = super::assemble::Assembler::default();
        let file = assembler.file("catalog.json".into());
        super::stream::read_json_bytes(text.as_bytes(), file, &mut assembler);
        assembler.finish_on(two_threads)
    };
    let (one, one_issues) = read(false);
    let (two, two_issues) = read(true);
    assert_eq!(one, two);
    assert_eq!(one_issues, two_issues);
    assert_eq!(one.packages.len(), 40);
    assert!(one.packages.values().all(|p| p.bundles.len() == 3));
    let duplicates: Vec<_> = one_issues
        .iter()
        .map(|i| (i.package.as_deref(), i.bundle.as_deref()))
        .collect();
    assert_eq!(
        duplicates,
        [
            (Some("p03"), Some("p03.v1.1.0")),
            (Some("p33"), Some("p33.v1.1.0"))
        ],
        "{one_issues:?}"
    );
}

#[test]
fn a_folder_of_many_files_read_by_two_threads_agrees_with_one_file_at_a_time() {
    // Enough JSON for two threads to share, in files each too small to split; a duplicate
    // across files (the first read wins), a bad blob, an unended file, YAML in between and a
    // file that is not UTF-8, so order and every problem's place are put to the test.
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for p in 0..120 {
        let mut text = String::new();
        for v in 0..12 {
            text.push_str(&bundle_blob(&format!("p{p:03}"), &format!("1.{v}.0")));
        }
        if p == 7 {
            text.push_str(
                "{\"schema\": \"olm.bundle\", \"name\": \"p007.v9\" \"package\": \"p007\"}\n",
            );
        }
        if p == 50 {
            // p049's first version again, in another file.
            text.push_str(&bundle_blob("p049", "1.0.0"));
        }
        if p == 90 {
            text.push_str("{\"schema\": \"olm.bundle\", \"name\": ");
        }
        files.push((format!("configs/p{p:03}/catalog.json"), text.into_bytes()));
        if p == 60 {
            files.push((
                "configs/p060/extra.yaml".into(),
                b"schema: olm.package\nname: yaml-only\n".to_vec(),
            ));
            files.push(("configs/p060/zz.yaml".into(), b"schema: \xff\n".to_vec()));
        }
    }
    let total: usize = files.iter().map(|(_, b)| b.len()).sum();
    assert!(total > stream::PARALLEL_FROM, "{total}");
    let tree = windlass_bundle::FileTree {
        files: files.iter().cloned().collect(),
    };
    // One file after the other, each on its own, as a reference.
    let mut one = Assembler::default();
    for (key, bytes) in &tree.files {
        let display = format!("image/{key}");
        let index = one.file(display.clone());
        if key.ends_with(".json") {
            stream::read_json_bytes(bytes, index, &mut one);
        } else {
            read_yaml_bytes(bytes, index, &display, &mut one);
        }
    }
    let (expected, expected_issues) = one.finish();
    let shared = read_tree(&tree, "configs", "image").unwrap();
    assert_eq!(shared.catalog, expected);
    assert_eq!(shared.issues, expected_issues);
    let owned = read_tree_owned(tree, "/configs/", "image").unwrap();
    assert_eq!(owned.catalog, expected);
    assert_eq!(owned.issues, expected_issues);
    // The same files in a folder on disk.
    let dir = tempfile::tempdir().unwrap();
    for (key, bytes) in &files {
        let path = dir.path().join(key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    let folder = read(&dir.path().join("configs")).unwrap();
    assert_eq!(folder.catalog, expected);
    let places = |issues: &[crate::load::LoadIssue]| {
        issues
            .iter()
            .map(|i| {
                let file = i
                    .file
                    .rsplit_once("configs/")
                    .map_or("", |(_, f)| f)
                    .to_string();
                let message = match i.message.split_once(" at ") {
                    Some((head, tail)) => {
                        let tail = tail.rsplit_once("configs/").map_or(tail, |(_, t)| t);
                        format!("{head} at {tail}")
                    }
                    None => i.message.clone(),
                };
                (file, i.document, i.kind, message)
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(places(&folder.issues), places(&expected_issues));
    assert_eq!(expected.packages.len(), 121);
    assert!(expected.packages.contains_key("yaml-only"));
    let mut concerned: Vec<_> = places(&expected_issues)
        .into_iter()
        .map(|(file, ..)| file.split(':').next().unwrap_or_default().to_string())
        .collect();
    concerned.sort();
    assert_eq!(
        concerned,
        [
            "p007/catalog.json",
            "p050/catalog.json",
            "p060/zz.yaml",
            "p090/catalog.json"
        ],
        "{expected_issues:#?}"
    );
}
