//! `windlass`: the operator lifecycle manager's CLI and manager in one binary.

use std::process::ExitCode;

use clap::Parser;

mod cmd;

#[derive(Parser)]
#[command(name = "windlass", version, about = "Operator lifecycle manager for Kubernetes")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Read, lint, package and publish single OLM bundles.
    #[command(subcommand)]
    Bundle(cmd::bundle::BundleCommand),
    /// Read, lint, render and explore catalogs of bundles.
    #[command(subcommand)]
    Catalog(cmd::catalog::CatalogCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bundle(command) => cmd::bundle::run(command),
        Command::Catalog(command) => cmd::catalog::run(command),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
