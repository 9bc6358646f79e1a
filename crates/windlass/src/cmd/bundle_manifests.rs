//! `windlass bundle manifests`

use std::{path::PathBuf, process::ExitCode};

#[derive(clap::Args)]
pub struct ManifestsArgs {
    /// A bundle directory, package-manifest version folder, packed .tgz or image reference.
    pub bundle: PathBuf,
    /// Output format.
    #[arg(short = 'o', long, default_value = "yaml", value_parser = ["yaml", "json"])]
    pub output: String,
}

pub fn run(_args: ManifestsArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`windlass bundle manifests` is not available yet")
}
