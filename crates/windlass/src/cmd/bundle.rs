//! `windlass bundle ...`

use std::process::ExitCode;

#[derive(clap::Subcommand)]
pub enum BundleCommand {
    /// Print the objects windlass would apply for a bundle, CRDs first, converted for the
    /// pinned Kubernetes version; the list of changes goes to stderr.
    Manifests(super::bundle_manifests::ManifestsArgs),
    /// Check bundles (directories, package-manifest version folders or .tgz packs); exit 1 on errors.
    Lint(super::bundle_ops::LintArgs),
    /// Package a bundle and a manifest of its images into one .tgz (refused when lint finds errors).
    Pack(super::bundle_ops::PackArgs),
    /// Push a bundle (directory or .tgz) as an OCI bundle image.
    Push(super::bundle_registry::PushArgs),
    /// Pull a bundle image into a directory (digest-verified, safely unpacked).
    Pull(super::bundle_registry::PullArgs),
    /// Show what a bundle directory, .tgz pack or image holds.
    Inspect(super::bundle_registry::InspectArgs),
}

pub fn run(command: BundleCommand) -> anyhow::Result<ExitCode> {
    match command {
        BundleCommand::Manifests(args) => super::bundle_manifests::run(args),
        BundleCommand::Lint(args) => super::bundle_ops::lint(args),
        BundleCommand::Pack(args) => super::bundle_ops::pack(args),
        BundleCommand::Push(args) => super::bundle_registry::push(args),
        BundleCommand::Pull(args) => super::bundle_registry::pull(args),
        BundleCommand::Inspect(args) => super::bundle_registry::inspect(args),
    }
}
