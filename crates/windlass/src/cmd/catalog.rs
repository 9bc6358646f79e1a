//! `windlass catalog ...`

use std::process::ExitCode;

#[derive(clap::Subcommand)]
pub enum CatalogCommand {
    /// Print catalogs (directories, file-based catalogs or bundle images) as a file-based-catalog
    /// stream in the shape `opm render` emits.
    Render(super::catalog_render::RenderArgs),
    /// Push a catalog as an OCI image holding its file-based catalog under /configs.
    Push(super::catalog_render::PushArgs),
    /// Check a catalog: every bundle, versions added twice, channels, default channels.
    Lint(super::catalog_render::LintArgs),
    /// The upgrade hops from one version to another, each a real edge.
    UpgradePath(super::catalog_graph::UpgradePathArgs),
    /// Resolve a package and its dependencies, or explain why no answer exists.
    Resolve(super::catalog_graph::ResolveArgs),
    /// Draw a package's upgrade graph as Graphviz dot or Mermaid.
    Graph(super::catalog_graph::GraphArgs),
    /// The packages the cluster's catalogs serve (the Package views): default channel, latest
    /// version, provider, and whether each is listed.
    List(super::catalog_list::ListArgs),
    /// Take a package, or one version of it, off a Catalog: new Subscriptions cannot install
    /// it, installed operators keep running without upgrades (edits the Catalog's
    /// `spec.delisted`).
    Delist(super::catalog_delist::DelistArgs),
    /// Offer a delisted package or version again (upgrades resume).
    Relist(super::catalog_delist::RelistArgs),
}

pub fn run(command: CatalogCommand) -> anyhow::Result<ExitCode> {
    match command {
        CatalogCommand::Render(args) => super::catalog_render::render(args),
        CatalogCommand::Lint(args) => super::catalog_render::lint(args),
        CatalogCommand::Push(args) => super::catalog_render::push(args),
        CatalogCommand::UpgradePath(args) => super::catalog_graph::upgrade_path(args),
        CatalogCommand::Resolve(args) => super::catalog_graph::resolve(args),
        CatalogCommand::Graph(args) => super::catalog_graph::graph(args),
        CatalogCommand::List(args) => super::catalog_list::list(args),
        CatalogCommand::Delist(args) => super::catalog_delist::run_delist(args),
        CatalogCommand::Relist(args) => super::catalog_delist::run_relist(args),
    }
}
