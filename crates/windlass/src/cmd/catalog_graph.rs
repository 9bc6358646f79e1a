//! `windlass catalog upgrade-path | resolve | graph`: the resolver on the command line.

use std::{mem::ManuallyDrop, path::PathBuf, process::ExitCode};

use anyhow::{Context, bail};
use windlass_catalog::load::{ReadOptions, read_catalog_with};
use windlass_catalog::{Catalog, Channel, Package, range::VersionRange};
use windlass_resolver::{
    Installed, Policy, Request, Resolver, Subscription, UpgradeGraph,
    policy::{HopKind, Start, Target, upgrade_path as find_path},
    render,
    semver::Version,
    solve::Action,
};

use super::catalog_problems::{StrictArgs, Verdict, report};

#[derive(clap::Args)]
pub struct UpgradePathArgs {
    /// A catalog: a directory of packages, one package directory, or a file-based catalog.
    pub catalog: PathBuf,
    #[arg(long)]
    pub package: String,
    /// Defaults to the package's default channel.
    #[arg(long)]
    pub channel: Option<String>,
    /// The installed version (or CSV name).
    #[arg(long)]
    pub from: String,
    /// A version or range to reach; without it, the path the policy leads to.
    #[arg(long)]
    pub to: Option<String>,
    #[arg(long, default_value = "olm", value_parser = ["olm", "semver", "any"])]
    pub policy: String,
    #[arg(short = 'o', long, default_value = "text", value_parser = ["text", "json"])]
    pub output: String,
    #[command(flatten)]
    pub strict: StrictArgs,
}

#[derive(clap::Args)]
pub struct ResolveArgs {
    pub catalog: PathBuf,
    #[arg(long)]
    pub package: String,
    #[arg(long)]
    pub channel: Option<String>,
    /// A version range the subscription accepts (blang or Masterminds syntax).
    #[arg(long)]
    pub version: Option<String>,
    /// Installed packages as `package=version`, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub installed: Vec<String>,
    #[arg(long, default_value = "olm", value_parser = ["olm", "semver", "any"])]
    pub policy: String,
    #[arg(short = 'o', long, default_value = "text", value_parser = ["text", "json"])]
    pub output: String,
    #[command(flatten)]
    pub strict: StrictArgs,
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
    #[command(flatten)]
    pub strict: StrictArgs,
}

/// The catalog at `path`, leniently: problems are printed on stderr, and with `--strict` (or
/// when nothing could be read) the command stops with the returned code.
fn load(
    path: &std::path::Path,
    strict: StrictArgs,
) -> anyhow::Result<Result<ManuallyDrop<Catalog>, ExitCode>> {
    let loaded = read_catalog_with(
        path,
        ReadOptions {
            keep_manifests: false,
        },
    )
    .with_context(|| format!("reading catalog {}", path.display()))?;
    Ok(match report(&loaded, strict) {
        // The command ends the process once it answered, which frees the catalog at once;
        // freeing 100,000 bundles one allocation at a time would cost more than resolving.
        Verdict::Serve => Ok(ManuallyDrop::new(loaded.catalog)),
        Verdict::Stop(code) => Err(code),
    })
}

fn package_channel<'c>(
    catalog: &'c Catalog,
    package: &str,
    channel: Option<&str>,
) -> anyhow::Result<(&'c Package, &'c Channel)> {
    let Some(pkg) = catalog.packages.get(package) else {
        let names: Vec<&str> = catalog.packages.keys().map(String::as_str).collect();
        bail!(
            "the catalog has no package {package} (packages: {})",
            names.join(", ")
        );
    };
    let channels = || pkg.channels.keys().cloned().collect::<Vec<_>>().join(", ");
    let ch = match channel {
        Some(name) => pkg.channels.get(name).with_context(|| {
            format!(
                "package {package} has no channel {name} (channels: {})",
                channels()
            )
        })?,
        None => pkg.default_channel().with_context(|| {
            format!(
                "package {package} has no default channel; pass --channel (channels: {})",
                channels()
            )
        })?,
    };
    Ok((pkg, ch))
}

fn parse_version(text: &str) -> Option<Version> {
    Version::parse(text.trim().trim_start_matches(['v', 'V'])).ok()
}

pub fn upgrade_path(args: UpgradePathArgs) -> anyhow::Result<ExitCode> {
    let catalog = match load(&args.catalog, args.strict)? {
        Ok(catalog) => catalog,
        Err(code) => return Ok(code),
    };
    let (pkg, ch) = package_channel(&catalog, &args.package, args.channel.as_deref())?;
    let policy: Policy = args.policy.parse().map_err(anyhow::Error::msg)?;
    let start = match parse_version(&args.from) {
        Some(version) => Start {
            name: None,
            version,
        },
        None => match pkg.bundles.get(&args.from) {
            Some(b) => Start {
                name: Some(b.name.clone()),
                version: b.version.clone(),
            },
            None => bail!(
                "--from {:?} is neither a version nor a bundle of {}",
                args.from,
                pkg.name
            ),
        },
    };
    let target = match args.to.as_deref() {
        None => None,
        Some(t) => Some(match parse_version(t) {
            Some(v) => Target::Version(v),
            None => match pkg.bundles.get(t) {
                Some(b) => Target::Version(b.version.clone()),
                None => {
                    Target::Range(VersionRange::parse(t).with_context(|| format!("--to {t:?}"))?)
                }
            },
        }),
    };
    let graph = UpgradeGraph::build(pkg, ch);
    let path = match find_path(&graph, ch, &start, target.as_ref(), policy) {
        Ok(p) => p,
        Err(e) => {
            if args.output == "json" {
                println!("{}", serde_json::json!({ "error": e.to_string() }));
            } else {
                eprintln!("{e}");
            }
            return Ok(ExitCode::FAILURE);
        }
    };
    if args.output == "json" {
        println!("{}", serde_json::to_string_pretty(&path)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} channel {} (policy {}), from {}:",
        path.package, path.channel, path.policy, args.from
    );
    if path.hops.is_empty() {
        println!("  nothing to do: already there");
    }
    for hop in &path.hops {
        let via = match hop.via {
            HopKind::Edge(kind) => kind.as_str(),
            HopKind::Direct => "direct move allowed by the any policy",
        };
        let to_version = hop
            .to_version
            .as_ref()
            .map_or_else(|| "?".to_string(), |v| v.to_string());
        println!(
            "  {} ({}) -> {} ({to_version})  [{via}]",
            hop.from, hop.from_version, hop.to
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn parse_installed(items: &[String]) -> anyhow::Result<Vec<Installed>> {
    items
        .iter()
        .filter(|s| !s.trim().is_empty())
        .map(|item| {
            let (package, version) = item
                .split_once('=')
                .with_context(|| format!("--installed {item:?}: expected package=version"))?;
            let version = parse_version(version)
                .with_context(|| format!("--installed {item:?}: {version:?} is not a version"))?;
            Ok(Installed {
                package: package.trim().to_string(),
                version,
                bundle: None,
            })
        })
        .collect()
}

pub fn resolve(args: ResolveArgs) -> anyhow::Result<ExitCode> {
    let catalog = match load(&args.catalog, args.strict)? {
        Ok(catalog) => catalog,
        Err(code) => return Ok(code),
    };
    let range = match args.version.as_deref() {
        Some(r) => Some(VersionRange::parse(r).with_context(|| format!("--version {r:?}"))?),
        None => None,
    };
    let request = Request {
        installed: parse_installed(&args.installed)?,
        subscriptions: vec![Subscription {
            package: args.package.clone(),
            channel: args.channel.clone(),
            range,
            policy: args.policy.parse().map_err(anyhow::Error::msg)?,
        }],
    };
    // Left for the process exit to free, like the catalog it indexes.
    let resolver = ManuallyDrop::new(Resolver::new(&catalog));
    match resolver.resolve(&request) {
        Ok(plan) => {
            if args.output == "json" {
                println!("{}", serde_json::to_string_pretty(&plan)?);
                return Ok(ExitCode::SUCCESS);
            }
            println!(
                "resolved {} bundle(s), dependencies first:",
                plan.steps.len()
            );
            for step in &plan.steps {
                let action = match &step.action {
                    Action::Install => "install".to_string(),
                    Action::Keep => "keep".to_string(),
                    Action::Upgrade { from } => format!("upgrade from {from}"),
                    Action::Downgrade { from } => format!("downgrade from {from}"),
                };
                println!(
                    "  {action:<20} {} ({} {})  for {}",
                    step.bundle,
                    step.package,
                    step.version,
                    step.required_by.join(", ")
                );
            }
            for w in &plan.warnings {
                println!("warning: {w}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(why) => {
            if args.output == "json" {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({ "unsatisfiable": why }))?
                );
            } else {
                println!("{why}");
            }
            Ok(ExitCode::FAILURE)
        }
    }
}

pub fn graph(args: GraphArgs) -> anyhow::Result<ExitCode> {
    let catalog = match load(&args.catalog, args.strict)? {
        Ok(catalog) => catalog,
        Err(code) => return Ok(code),
    };
    let (pkg, ch) = package_channel(&catalog, &args.package, args.channel.as_deref())?;
    let graph = UpgradeGraph::build(pkg, ch);
    let text = match args.output.as_str() {
        "mermaid" => render::to_mermaid(&graph),
        _ => render::to_dot(&graph),
    };
    print!("{text}");
    for p in graph.problems() {
        eprintln!("{:?}: {p}", p.severity());
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installed_lists_parse_with_or_without_v() {
        let got = parse_installed(&[
            "etcd=0.9.4".into(),
            " prometheus = v0.47.0".into(),
            "".into(),
        ])
        .unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(
            (got[0].package.as_str(), got[0].version.to_string()),
            ("etcd", "0.9.4".into())
        );
        assert_eq!(
            (got[1].package.as_str(), got[1].version.to_string()),
            ("prometheus", "0.47.0".into())
        );
        for bad in ["etcd", "etcd=latest"] {
            let err = parse_installed(&[bad.to_string()]).unwrap_err().to_string();
            assert!(err.contains(bad), "{err}");
        }
    }

    #[test]
    fn channels_default_and_missing_ones_are_named() {
        let mut b = windlass_resolver::synthetic::CatalogBuilder::new();
        b.bundle("p", "1.0.0").channels(&["alpha", "beta"]);
        b.default_channel("p", Some("beta"));
        let catalog = b.build();
        assert_eq!(package_channel(&catalog, "p", None).unwrap().1.name, "beta");
        let err = package_channel(&catalog, "p", Some("gamma"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "package p has no channel gamma (channels: alpha, beta)"
        );
        let err = package_channel(&catalog, "q", None)
            .unwrap_err()
            .to_string();
        assert_eq!(err, "the catalog has no package q (packages: p)");
    }
}
