//! `windlass`: the operator lifecycle manager's CLI and manager in one binary.

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser};

mod cmd;
mod manager;

#[derive(Parser)]
#[command(
    name = "windlass",
    version,
    about = "Operator lifecycle manager for Kubernetes"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    #[command(subcommand)]
    Adopt(cmd::adopt::AdoptCommand),
    /// Read, lint, package and publish single OLM bundles.
    #[command(subcommand)]
    Bundle(cmd::bundle::BundleCommand),
    /// Read, lint, render and explore catalogs of bundles.
    #[command(subcommand)]
    Catalog(cmd::catalog::CatalogCommand),
    /// Package an operator with every image it needs for an air-gapped site, and push it there.
    #[command(subcommand)]
    Package(cmd::package::PackageCommand),
    /// Inspect, build, publish and serve release payloads (the CVO's layout).
    #[command(subcommand)]
    Release(cmd::release::ReleaseCommand),
    /// Run the windlass controllers against a cluster.
    Manager(manager::ManagerArgs),
    /// Move the platform to a release payload, or show where the update stands (`upgrade status`).
    Upgrade(cmd::upgrade::UpgradeArgs),
    /// A hub's member clusters and the rollouts over them in waves: register, status, plan,
    /// approve, rollback.
    #[command(subcommand)]
    Fleet(cmd::fleet::FleetCommand),
    /// Serve the hub page and its read API: browse catalogs, install, approve, roll back,
    /// delist and relist.
    Hub(cmd::hub::HubArgs),
    /// Roll a Subscription's operator back to the version that Succeeded before the current one.
    Rollback(cmd::lifecycle::RollbackArgs),
    /// Hand a Subscription's target back to windlass after a manual rollback.
    Resume(cmd::lifecycle::Target),
    /// Where a Subscription's install stands: phase, conditions, revisions, and the edits of
    /// what windlass manages that it put back recently.
    Status(cmd::lifecycle::Target),
    /// Show the plan a Subscription's pending revision brings: objects created, changed and
    /// deleted (field by field), permissions and images that change, CRD verdicts.
    Plan(cmd::plan::PlanArgs),
    /// Approve exactly the plan a Subscription's revision waits with (Manual approval).
    Approve(cmd::plan::ApproveArgs),
    /// Sign an image by digest, in a format cosign verifies.
    Sign(cmd::trust::SignArgs),
    /// Verify an image's signatures against keys or a trust policy (exit 0 verified, 1 refused, 2 error).
    Verify(cmd::trust::VerifyArgs),
    /// Print a shell completion script: bash, zsh, fish, or kubectl's `kubectl_complete-windlass`.
    Completion(cmd::completion::CompletionArgs),
}

fn main() -> ExitCode {
    if let Some(words) = cmd::completion::request(std::env::args_os().skip(1)) {
        return cmd::completion::complete(Cli::command(), words);
    }
    // Under the plugin's name the usage reads `kubectl windlass`.
    let matches = cmd::completion::named(Cli::command()).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let result = match cli.command {
        Command::Adopt(command) => cmd::adopt::run(command),
        Command::Bundle(command) => cmd::bundle::run(command),
        Command::Catalog(command) => cmd::catalog::run(command),
        Command::Package(command) => cmd::package::run(command),
        Command::Release(command) => cmd::release::run(command),
        Command::Manager(args) => manager::run(args),
        Command::Upgrade(args) => cmd::upgrade::run(args),
        Command::Fleet(command) => cmd::fleet::run(command),
        Command::Hub(args) => cmd::hub::run(args),
        Command::Rollback(args) => cmd::lifecycle::rollback(args),
        Command::Resume(args) => cmd::lifecycle::resume(args),
        Command::Status(args) => cmd::status::status(args),
        Command::Plan(args) => cmd::plan::plan(args),
        Command::Approve(args) => cmd::plan::approve(args),
        Command::Sign(args) => cmd::trust::sign(args),
        Command::Verify(args) => cmd::trust::verify(args),
        Command::Completion(args) => cmd::completion::completion(args, Cli::command()),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
