//! The catalog commands on a catalog with one broken bundle, as a user runs them: problems on
//! stderr, the rest served with exit 0; `--strict` makes the problems fatal; `lint` reports
//! them as errors. And the repair of a core kind without `apiVersion`, as `bundle manifests`
//! shows it.

use std::path::Path;
use std::process::{Command, Output};

const WINDLASS: &str = env!("CARGO_BIN_EXE_windlass");

fn csv(name: &str, version: &str, replaces: Option<&str>) -> String {
    let replaces = replaces
        .map(|r| format!("  replaces: {r}\n"))
        .unwrap_or_default();
    format!(
        "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: {name}\nspec:\n  version: {version}\n{replaces}  installModes: [{{type: AllNamespaces, supported: true}}]\n  install:\n    strategy: deployment\n    spec:\n      deployments:\n      - name: op\n        spec: {{template: {{spec: {{containers: [{{name: m, image: example.com/op:1}}]}}}}}}\n"
    )
}

fn write(root: &Path, path: &str, text: &str) {
    let full = root.join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, text).unwrap();
}

const SERVICE_WITHOUT_API_VERSION: &str =
    "kind: Service\nmetadata:\n  name: metrics\nspec:\n  ports:\n  - port: 8443\n";
const DEPLOYMENT_WITHOUT_API_VERSION: &str = "kind: Deployment\nmetadata:\n  name: extra\n";

/// Package `good` (1.0.0 <- 1.1.0) and package `svc` (1.0.0 <- 1.1.0 <- 1.2.0) in the
/// package-manifest layout. svc 1.1.0 ships a Service without apiVersion (repairable); svc 1.2.0
/// ships a Deployment without apiVersion as its second document (not repairable).
fn catalog(root: &Path) {
    for (package, versions) in [
        ("good", &["1.0.0", "1.1.0"][..]),
        ("svc", &["1.0.0", "1.1.0", "1.2.0"]),
    ] {
        let head = versions.last().unwrap();
        write(
            root,
            &format!("{package}/{package}.package.yaml"),
            &format!(
                "packageName: {package}\ndefaultChannel: stable\nchannels:\n- {{name: stable, currentCSV: {package}.v{head}}}\n"
            ),
        );
        for (i, v) in versions.iter().enumerate() {
            let replaces = (i > 0).then(|| format!("{package}.v{}", versions[i - 1]));
            write(
                root,
                &format!("{package}/{v}/{package}.v{v}.clusterserviceversion.yaml"),
                &csv(&format!("{package}.v{v}"), v, replaces.as_deref()),
            );
        }
    }
    write(
        root,
        "svc/1.1.0/metrics.service.yaml",
        SERVICE_WITHOUT_API_VERSION,
    );
    write(
        root,
        "svc/1.2.0/extra.yaml",
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c}}\n---\n{DEPLOYMENT_WITHOUT_API_VERSION}"
        ),
    );
}

fn run(args: &[&str]) -> Output {
    Command::new(WINDLASS).args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn one_broken_bundle_is_reported_and_everything_else_served() {
    let dir = tempfile::tempdir().unwrap();
    catalog(dir.path());
    let root = dir.path().to_str().unwrap();

    let render = run(&["catalog", "render", root]);
    assert!(render.status.success(), "{}", text(&render.stderr));
    let stdout = text(&render.stdout);
    for served in ["good.v1.0.0", "good.v1.1.0", "svc.v1.0.0", "svc.v1.1.0"] {
        assert!(
            stdout.contains(&format!("\"name\": \"{served}\"")),
            "{served} missing"
        );
    }
    assert!(!stdout.contains("svc.v1.2.0\""), "{stdout}");
    let stderr = text(&render.stderr);
    let problem = stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        problem.contains("svc/1.2.0/extra.yaml (document 2): package svc, bundle svc.v1.2.0: Deployment has no apiVersion"),
        "{problem}"
    );
    assert!(stderr.contains("everything else is served"), "{stderr}");

    let strict = run(&["catalog", "render", "--strict", root]);
    assert_eq!(strict.status.code(), Some(1));
    assert!(strict.stdout.is_empty());
    assert!(
        text(&strict.stderr).contains("--strict"),
        "{}",
        text(&strict.stderr)
    );

    for args in [
        &["catalog", "resolve", root, "--package", "svc"][..],
        &[
            "catalog",
            "upgrade-path",
            root,
            "--package",
            "svc",
            "--from",
            "1.0.0",
        ],
        &["catalog", "graph", root, "--package", "svc"],
    ] {
        let lenient = run(args);
        assert!(
            lenient.status.success(),
            "{args:?}: {}",
            text(&lenient.stderr)
        );
        assert!(text(&lenient.stderr).contains("bundle svc.v1.2.0"));
        let mut strict_args = args.to_vec();
        strict_args.push("--strict");
        let strict = run(&strict_args);
        assert_eq!(strict.status.code(), Some(1), "{strict_args:?}");
        assert!(strict.stdout.is_empty(), "{strict_args:?}");
    }
    // The repaired bundle is the newest one served.
    let resolve = text(&run(&["catalog", "resolve", root, "--package", "svc"]).stdout);
    assert!(resolve.contains("svc.v1.1.0"), "{resolve}");

    let lint = run(&["catalog", "lint", root]);
    assert_eq!(lint.status.code(), Some(1));
    let lint_out = text(&lint.stdout);
    assert!(
        lint_out.contains("error[unreadable-bundle]")
            && lint_out.contains(
                "document 2: package svc, bundle svc.v1.2.0: Deployment has no apiVersion"
            ),
        "{lint_out}"
    );
    assert!(
        lint_out.contains("warning[manifest-api-version]"),
        "{lint_out}"
    );
}

#[test]
fn nothing_readable_is_a_failure_even_without_strict() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("catalog.json");
    std::fs::write(&file, "{\"schema\": \"olm.bundle\", \"name\": \"x\"}\n").unwrap();
    let render = run(&["catalog", "render", file.to_str().unwrap()]);
    assert_eq!(render.status.code(), Some(1));
    let stderr = text(&render.stderr);
    assert!(
        stderr.contains("catalog.json:1 (document 1): olm.bundle blob has no `package`"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing could be read"), "{stderr}");
}

#[test]
fn bundle_manifests_shows_the_repaired_api_version() {
    let dir = tempfile::tempdir().unwrap();
    catalog(dir.path());
    let bundle = dir.path().join("svc/1.1.0");
    let out = run(&["bundle", "manifests", bundle.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("apiVersion: v1\nkind: Service"), "{stdout}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("metrics.service.yaml: Service/metrics apiVersion: set to v1 (missing; only the core API serves Service"),
        "{stderr}"
    );

    let broken = dir.path().join("svc/1.2.0");
    let out = run(&["bundle", "manifests", broken.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr)
            .contains("extra.yaml: document 2 (bundle svc.v1.2.0): Deployment has no apiVersion"),
        "{}",
        text(&out.stderr)
    );
}
