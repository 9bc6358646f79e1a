//! `kubectl windlass ...`: the windlass binary as a kubectl plugin, run through the pinned
//! kubectl itself. Each test puts a directory first on the child's PATH holding what
//! `make install` installs: `kubectl-windlass`, a link to the binary (krew's naming), and
//! `kubectl_complete-windlass` as `windlass completion kubectl` prints it, which kubectl runs to
//! complete the plugin's words.

use std::{os::unix::fs::PermissionsExt, path::Path, process::Command};

use serde_json::Value;
use windlass_testkit::{TestNamespace, require_manager, run_ok};

/// A PATH directory with the plugin and, when `with_completion`, its completion program.
struct PluginDir {
    dir: tempfile::TempDir,
}

impl PluginDir {
    fn new(with_completion: bool) -> PluginDir {
        let dir = tempfile::tempdir().unwrap();
        let windlass = windlass_testkit::windlass_binary();
        std::os::unix::fs::symlink(&windlass, dir.path().join("kubectl-windlass")).unwrap();
        if with_completion {
            let script = run_ok(Command::new(&windlass).args(["completion", "kubectl"]));
            let path = dir.path().join("kubectl_complete-windlass");
            std::fs::write(&path, script).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        PluginDir { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The pinned kubectl (pointed at the local control plane) with this directory first on
    /// its PATH.
    fn kubectl(&self, args: &[&str]) -> Command {
        let mut command = windlass_testkit::kubectl();
        let inherited = command
            .get_envs()
            .find(|(key, _)| *key == "PATH")
            .and_then(|(_, value)| value.map(|v| v.to_os_string()))
            .or_else(|| std::env::var_os("PATH"))
            .unwrap_or_default();
        let mut path = self.path().as_os_str().to_os_string();
        path.push(":");
        path.push(inherited);
        command.env("PATH", path).args(args);
        command
    }
}

/// kubectl's completion answer for `words`: the candidates' values and the directive line.
fn completions(plugin: &PluginDir, words: &[&str]) -> (Vec<String>, String) {
    let mut args = vec!["__complete"];
    args.extend_from_slice(words);
    let out = run_ok(&mut plugin.kubectl(&args));
    let mut lines: Vec<&str> = out.lines().filter(|l| !l.is_empty()).collect();
    let directive = lines.pop().unwrap_or_default().to_string();
    let values = lines
        .iter()
        .map(|l| l.split('\t').next().unwrap_or_default().to_string())
        .collect();
    (values, directive)
}

/// Given the windlass binary linked as `kubectl-windlass` on PATH, `kubectl plugin list` finds
/// it, and `kubectl windlass` runs it with its usage and version naming `kubectl windlass`.
#[test]
fn kubectl_finds_the_plugin_and_its_usage_says_kubectl_windlass() {
    let plugin = PluginDir::new(false);
    // Other plugins on the machine may draw warnings (and a failing exit); the listing is what
    // counts.
    let listed = plugin.kubectl(&["plugin", "list"]).output().unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    let link = plugin.path().join("kubectl-windlass");
    assert!(
        listed.lines().any(|l| l.trim() == link.to_string_lossy()),
        "{listed}"
    );
    let help = run_ok(&mut plugin.kubectl(&["windlass", "--help"]));
    assert!(help.contains("Usage: kubectl windlass <COMMAND>"), "{help}");
    assert!(
        help.contains("catalog") && help.contains("completion"),
        "{help}"
    );
    let version = run_ok(&mut plugin.kubectl(&["windlass", "--version"]));
    assert!(version.starts_with("kubectl windlass "), "{version}");

    // A refusal comes back through kubectl: its exit code and words, under the plugin's name.
    let refused = |args: &[&str]| {
        let out = plugin.kubectl(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let stderr = refused(&["windlass", "catalog", "list", "-o", "name"]);
    assert!(stderr.contains("invalid value 'name'"), "{stderr}");
    let stderr = refused(&["windlass", "status"]);
    assert!(
        stderr.contains("Usage: kubectl windlass status "),
        "{stderr}"
    );
}

/// Given the built-in catalog served, `kubectl windlass catalog list` shows its packages as a
/// table; `-o json` and `-o yaml` are the same Package views as a List; `-o wide` adds the
/// delisted versions and the channels.
#[tokio::test]
async fn catalog_list_through_kubectl_as_table_json_yaml_and_wide() {
    require_manager();
    let plugin = PluginDir::new(false);
    let list = |output: &str| {
        run_ok(&mut plugin.kubectl(&[
            "windlass",
            "catalog",
            "list",
            "--catalog",
            "builtin",
            "-o",
            output,
        ]))
    };
    let table = list("table");
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| {
            l.split("   ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect()
        })
        .collect();
    assert_eq!(
        rows[0],
        [
            "PACKAGE",
            "CATALOG",
            "DEFAULT CHANNEL",
            "LATEST",
            "PROVIDER",
            "PROVIDER TYPE",
            "LISTED"
        ],
        "{table}"
    );
    assert!(
        rows.iter().any(|r| r[0] == "acme-db"),
        "the built-in catalog serves acme-db:\n{table}"
    );

    let json: Value = serde_json::from_str(&list("json")).unwrap();
    assert_eq!(json["kind"], "List");
    let items = json["items"].as_array().unwrap();
    assert_eq!(items.len(), rows.len() - 1, "one item per row:\n{table}");
    for row in &rows[1..] {
        let item = items
            .iter()
            .find(|i| i["status"]["package"] == row[0])
            .unwrap_or_else(|| panic!("{} is in the table but not the JSON", row[0]));
        assert_eq!(item["kind"], "Package");
        assert_eq!(item["status"]["catalog"], "builtin");
        assert_eq!(item["status"]["defaultChannel"], row[2], "{item}");
        assert_eq!(
            item["status"]["latestVersion"].as_str().unwrap_or("-"),
            row[3]
        );
        assert!(item["metadata"].get("managedFields").is_none(), "{item}");
    }

    let yaml = list("yaml");
    assert!(
        yaml.contains("kind: List") && yaml.contains("kind: Package"),
        "{yaml}"
    );
    assert!(yaml.contains("package: acme-db"), "{yaml}");

    let wide = list("wide");
    let header = wide.lines().next().unwrap();
    assert!(
        header.starts_with("PACKAGE") && header.ends_with("LISTED   DELISTED   CHANNELS"),
        "{wide}"
    );
    let acme = wide.lines().find(|l| l.starts_with("acme-db ")).unwrap();
    assert!(acme.contains("stable="), "the channels column: {wide}");
}

/// `kubectl windlass status` and `fleet status -o json` reach the cluster with kubectl's
/// kubeconfig; a Subscription that does not exist is an error naming it.
#[tokio::test]
async fn status_commands_through_kubectl_read_the_cluster() {
    require_manager();
    let ns = TestNamespace::create(&windlass_testkit::client().await, "kplugin").await;
    let plugin = PluginDir::new(false);
    let missing = plugin
        .kubectl(&["windlass", "status", "nothing-here", "-n", &ns.name])
        .output()
        .unwrap();
    assert!(!missing.status.success());
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        stderr.contains(&format!(
            "Subscription {}/nothing-here does not exist",
            ns.name
        )),
        "{stderr}"
    );
    let rollouts: Value = serde_json::from_str(&run_ok(
        &mut plugin.kubectl(&["windlass", "fleet", "status", "-o", "json"]),
    ))
    .unwrap();
    assert_eq!(rollouts["kind"], "List");
    assert!(rollouts["items"].is_array(), "{rollouts}");
}

/// With `kubectl_complete-windlass` on PATH, kubectl's own completion completes
/// `kubectl windlass ...`: commands, subcommands and flag values, with descriptions; without
/// it kubectl knows the plugin's name and nothing after it.
#[test]
fn kubectl_completes_the_plugins_words_through_its_completion_program() {
    let plugin = PluginDir::new(true);
    let (values, directive) = completions(&plugin, &["windl"]);
    assert!(values.contains(&"windlass".to_string()), "{values:?}");
    assert_eq!(directive, ":4");

    let (values, directive) = completions(&plugin, &["windlass", ""]);
    for command in ["catalog", "fleet", "status", "upgrade", "completion"] {
        assert!(
            values.iter().any(|v| v == command),
            "{command} in {values:?}"
        );
    }
    assert!(!values.iter().any(|v| v == "__complete"), "{values:?}");
    assert_eq!(directive, ":4");
    let described = run_ok(&mut plugin.kubectl(&["__complete", "windlass", ""]));
    assert!(
        described
            .lines()
            .any(|l| l.starts_with("catalog\t") && l.len() > "catalog\t".len()),
        "{described}"
    );

    let (mut values, _) = completions(&plugin, &["windlass", "catalog", "li"]);
    values.sort();
    assert_eq!(values, ["lint", "list"]);
    let (values, _) = completions(&plugin, &["windlass", "catalog", "list", "-o", ""]);
    assert_eq!(values, ["table", "wide", "json", "yaml"]);

    let bare = PluginDir::new(false);
    let (values, _) = completions(&bare, &["windlass", ""]);
    assert!(
        !values.iter().any(|v| v == "catalog"),
        "without the completion program kubectl cannot know the commands: {values:?}"
    );
}
