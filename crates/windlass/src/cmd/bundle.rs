//! `windlass bundle ...`

use std::process::ExitCode;

#[derive(clap::Subcommand)]
pub enum BundleCommand {
    /// Print the objects windlass would apply for a bundle, CRDs first, converted for the
    /// pinned Kubernetes version; the list of changes goes to stderr.
    Manifests(super::bundle_manifests::ManifestsArgs),
}

pub fn run(command: BundleCommand) -> anyhow::Result<ExitCode> {
    match command {
        BundleCommand::Manifests(args) => super::bundle_manifests::run(args),
    }
}
