//! Shell completion and the kubectl plugin.
//!
//! `windlass completion bash|zsh|fish` prints a completion script for that shell;
//! `windlass completion kubectl` prints `kubectl_complete-windlass`, the program kubectl (1.26
//! and later) runs to complete `kubectl windlass ...`, which asks
//! `windlass __complete WORDS...`. That answers in the protocol kubectl's Cobra uses for its
//! own completions: one candidate a line (`value<TAB>description`), then `:<directive>`.
//! `__complete` is read before the command line is parsed, outside the command tree: clap's
//! generated scripts would offer even a hidden subcommand.
//!
//! Installed as `kubectl-windlass` (krew's naming), the binary is the plugin: kubectl runs it
//! for `kubectl windlass`, and its usage and errors say `kubectl windlass`.

use std::{
    ffi::{OsStr, OsString},
    fmt::Write as _,
    path::Path,
    process::ExitCode,
};

/// The plugin's file name: kubectl runs `kubectl-windlass` for `kubectl windlass`.
pub const PLUGIN: &str = "kubectl-windlass";

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
    /// `kubectl_complete-windlass`: put it on PATH next to `kubectl-windlass` and kubectl's
    /// own completion completes `kubectl windlass ...`.
    Kubectl,
}

#[derive(clap::Args)]
pub struct CompletionArgs {
    pub shell: Shell,
}

/// Whether the binary was started under the plugin's name (a link or a copy).
pub fn invoked_as_plugin(argv0: &OsStr) -> bool {
    Path::new(argv0).file_stem() == Some(OsStr::new(PLUGIN))
}

/// The program name the command line shows: `kubectl windlass` when run as the plugin.
fn program() -> &'static str {
    match std::env::args_os().next() {
        Some(argv0) if invoked_as_plugin(&argv0) => PLUGIN,
        _ => "windlass",
    }
}

/// `cmd` named as it was started, so usage, `--help`, `--version` and errors read
/// `kubectl windlass ...` under kubectl and `windlass ...` otherwise.
pub fn named(cmd: clap::Command) -> clap::Command {
    named_as(cmd, program())
}

fn named_as(cmd: clap::Command, program: &str) -> clap::Command {
    if program == PLUGIN {
        cmd.bin_name("kubectl windlass")
            .display_name("kubectl windlass")
    } else {
        cmd
    }
}

pub fn completion(args: CompletionArgs, mut cmd: clap::Command) -> anyhow::Result<ExitCode> {
    print!("{}", script(args.shell, &mut cmd, program()));
    Ok(ExitCode::SUCCESS)
}

/// The completion script for `shell`, completing `program` (`windlass`, or `kubectl-windlass`
/// when that is the name it was run by).
pub fn script(shell: Shell, cmd: &mut clap::Command, program: &str) -> String {
    let shell = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
        // By name, not by path: kubectl found the plugin on PATH, so it is there.
        Shell::Kubectl => {
            return format!(
                "#!/bin/sh\n\
                 # kubectl (1.26 and later) runs this to complete `kubectl windlass ...`, with\n\
                 # the words after `windlass`; the last is the one being completed.\n\
                 exec {PLUGIN} __complete \"$@\"\n"
            );
        }
    };
    let mut out = Vec::new();
    clap_complete::generate(shell, cmd, program, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The words to complete when the command line (without the program) is
/// `__complete WORDS...`: those after `windlass`, the last being the one to complete (empty
/// for a new word).
pub fn request(mut args: impl Iterator<Item = OsString>) -> Option<Vec<OsString>> {
    match args.next() {
        Some(first) if first == "__complete" => Some(args.collect()),
        _ => None,
    }
}

pub fn complete(cmd: clap::Command, words: Vec<OsString>) -> ExitCode {
    print!("{}", answer(cmd, words));
    ExitCode::SUCCESS
}

/// Cobra's directives (`ShellCompDirective`), which kubectl hands to the shell.
mod directive {
    /// Nothing to offer: the shell completes file names.
    pub const FILES: u8 = 0;
    /// Do not add a space after the candidate (a directory, to go on typing into it).
    pub const NO_SPACE: u8 = 2;
    /// Only these candidates, no file names.
    pub const NO_FILES: u8 = 4;
}

/// The candidates for the last of `words` in Cobra's protocol. Paths are left to the shell
/// (no working directory is given to the engine), which knows `~`, globs and its own quoting.
pub fn answer(mut cmd: clap::Command, words: Vec<OsString>) -> String {
    let mut args = vec![OsString::from("windlass")];
    args.extend(words);
    if args.len() == 1 {
        args.push(OsString::new());
    }
    let index = args.len() - 1;
    // Flags only once a `-` is typed, as kubectl's own completion offers them.
    let flags = args[index].to_string_lossy().starts_with('-');
    // The engine errs when it cannot place the word; that is nothing to offer, not a failure.
    let candidates =
        clap_complete::engine::complete(&mut cmd, args, index, None).unwrap_or_default();
    let mut out = String::new();
    let mut directive = directive::FILES;
    for candidate in candidates.iter().filter(|c| !c.is_hide_set()) {
        let value = candidate.get_value().to_string_lossy();
        if value.starts_with('-') && !flags {
            continue;
        }
        directive |= directive::NO_FILES;
        if value.ends_with('/') {
            directive |= directive::NO_SPACE;
        }
        out.push_str(&value);
        if let Some(help) = candidate.get_help() {
            let help = help.to_string();
            if let Some(line) = help.lines().next().filter(|l| !l.is_empty()) {
                let _ = write!(out, "\t{line}");
            }
        }
        out.push('\n');
    }
    let _ = writeln!(out, ":{directive}");
    out
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    fn answer_for(words: &[&str]) -> (Vec<String>, String) {
        let text = answer(
            crate::Cli::command(),
            words.iter().map(OsString::from).collect(),
        );
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let directive = lines.pop().expect("a directive line");
        let values = lines
            .iter()
            .map(|l| l.split('\t').next().unwrap().to_string())
            .collect();
        (values, directive)
    }

    #[test]
    fn only_a_command_line_starting_with_complete_asks_for_completions() {
        let words = |args: &[&str]| request(args.iter().map(OsString::from));
        assert_eq!(
            words(&["__complete", "catalog", ""]),
            Some(vec![OsString::from("catalog"), OsString::new()])
        );
        assert_eq!(words(&["__complete"]), Some(vec![]));
        assert_eq!(words(&["catalog", "__complete"]), None);
        assert_eq!(words(&[]), None);
    }

    #[test]
    fn the_plugin_is_recognized_by_its_file_name() {
        assert!(invoked_as_plugin(OsStr::new("kubectl-windlass")));
        assert!(invoked_as_plugin(OsStr::new(
            "/home/u/.local/bin/kubectl-windlass"
        )));
        assert!(invoked_as_plugin(OsStr::new("kubectl-windlass.exe")));
        assert!(!invoked_as_plugin(OsStr::new("/usr/bin/windlass")));
        assert!(!invoked_as_plugin(OsStr::new("kubectl_complete-windlass")));
    }

    #[test]
    fn as_the_plugin_usage_and_version_say_kubectl_windlass() {
        let mut plugin = named_as(crate::Cli::command(), PLUGIN);
        assert_eq!(
            plugin.render_usage().to_string(),
            "Usage: kubectl windlass <COMMAND>"
        );
        assert!(plugin.render_version().starts_with("kubectl windlass "));
        let error = named_as(crate::Cli::command(), PLUGIN)
            .try_get_matches_from(["kubectl-windlass", "catalog", "nonsense"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("kubectl windlass catalog"), "{error}");
        let mut plain = named_as(crate::Cli::command(), "windlass");
        assert_eq!(
            plain.render_usage().to_string(),
            "Usage: windlass <COMMAND>"
        );
    }

    #[test]
    fn a_new_word_lists_the_commands_with_their_help_and_no_files() {
        let text = answer(crate::Cli::command(), vec![OsString::new()]);
        assert!(
            text.lines()
                .any(|l| l.starts_with("catalog\tRead, lint, render and explore catalogs")),
            "{text}"
        );
        let (values, directive) = answer_for(&[""]);
        for command in ["catalog", "fleet", "upgrade", "status", "completion"] {
            assert!(
                values.iter().any(|v| v == command),
                "{command} in {values:?}"
            );
        }
        assert_eq!(directive, ":4");
        assert!(!values.iter().any(|v| v.starts_with('-')), "{values:?}");
        assert_eq!(answer_for(&[]).0, values, "no words is a new word");
        assert_eq!(answer_for(&["--vers"]).0, ["--version"]);
    }

    #[test]
    fn subcommands_flags_and_their_values_are_completed() {
        assert_eq!(
            answer_for(&["catalog", "li"]),
            (vec!["lint".into(), "list".into()], ":4".into())
        );
        let (values, _) = answer_for(&["catalog", "list", "-o", ""]);
        assert_eq!(values, ["table", "wide", "json", "yaml"]);
        let (values, _) = answer_for(&["fleet", "status", "--output="]);
        assert!(values.contains(&"--output=wide".to_string()), "{values:?}");
        let (values, _) = answer_for(&["completion", ""]);
        assert_eq!(values, ["bash", "zsh", "fish", "kubectl"]);
        let (values, _) = answer_for(&["catalog", "list", "--pack"]);
        assert_eq!(values, ["--package"]);
    }

    #[test]
    fn a_path_is_left_to_the_shell() {
        let (values, directive) = answer_for(&["bundle", "lint", "bund"]);
        assert!(values.is_empty(), "{values:?}");
        assert_eq!(directive, ":0");
    }

    #[test]
    fn scripts_complete_the_program_they_are_for() {
        let mut cmd = crate::Cli::command();
        assert!(script(Shell::Bash, &mut cmd, "windlass").contains("complete -F _windlass"));
        assert!(script(Shell::Zsh, &mut cmd, "windlass").starts_with("#compdef windlass"));
        let fish = script(Shell::Fish, &mut cmd, "windlass");
        assert!(fish.contains("complete -c windlass"), "{fish}");
        assert!(fish.contains("-a \"catalog\""), "{fish}");
        assert!(!fish.contains("__complete"), "{fish}");
        let plugin = script(Shell::Kubectl, &mut cmd, PLUGIN);
        assert!(plugin.starts_with("#!/bin/sh\n"));
        assert!(plugin.ends_with("exec kubectl-windlass __complete \"$@\"\n"));
    }
}
