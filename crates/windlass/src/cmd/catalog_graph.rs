//! `windlass catalog upgrade-path | resolve | graph`: the resolver on the command line.

use std::{path::PathBuf, process::ExitCode};

#[derive(clap::Args)]
pub struct UpgradePathArgs {
    pub catalog: PathBuf,
    #[arg(long)]
    pub package: String,
    #[arg(long)]
    pub channel: Option<String>,
    #[arg(long)]
    pub from: String,
    #[arg(long)]
    pub to: Option<String>,
    #[arg(long, default_value = "olm", value_parser = ["olm", "semver", "any"])]
    pub policy: String,
    #[arg(short = 'o', long, default_value = "text", value_parser = ["text", "json"])]
    pub output: String,
}

#[derive(clap::Args)]
pub struct ResolveArgs {
    pub catalog: PathBuf,
    #[arg(long)]
    pub package: String,
    #[arg(long)]
    pub channel: Option<String>,
    #[arg(long)]
    pub version: Option<String>,
    #[arg(long, value_delimiter = ',')]
    pub installed: Vec<String>,
    #[arg(short = 'o', long, default_value = "text", value_parser = ["text", "json"])]
    pub output: String,
}

#[derive(clap::Args)]
pub struct GraphArgs {
    pub catalog: PathBuf,
    #[arg(long)]
    pub package: String,
    #[arg(long)]
    pub channel: Option<String>,
    #[arg(short = 'o', long, default_value = "dot", value_parser = ["dot", "mermaid"])]
    pub output: String,
}

pub fn upgrade_path(_args: UpgradePathArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`windlass catalog upgrade-path` is not available yet")
}

pub fn resolve(_args: ResolveArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`windlass catalog resolve` is not available yet")
}

pub fn graph(_args: GraphArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`windlass catalog graph` is not available yet")
}
