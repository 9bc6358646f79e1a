//! `windlass catalog list`: the cluster's Package views, as `kubectl get packages.windlass.dev`
//! shows them, filtered by catalog or package.

use std::{path::PathBuf, process::ExitCode};

use kube::{Api, ResourceExt, api::ListParams};
use windlass_api::{
    Package,
    names::{labels, package_view},
};

use super::output::{self, OutputArgs};

#[derive(clap::Args)]
pub struct ListArgs {
    /// Only the packages of this Catalog.
    #[arg(long)]
    pub catalog: Option<String>,
    /// Only this package (in every catalog that serves it).
    #[arg(long)]
    pub package: Option<String>,
    /// `wide` adds the delisted versions and the channels; `json` and `yaml` print the Package
    /// objects as a List.
    #[command(flatten)]
    pub output: OutputArgs,
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
}

pub fn list(args: ListArgs) -> anyhow::Result<ExitCode> {
    super::lifecycle::runtime()?.block_on(list_async(args))
}

/// The Package views, optionally of one catalog and one package, sorted by package then
/// catalog.
pub async fn views(
    api: &Api<Package>,
    catalog: Option<&str>,
    package: Option<&str>,
) -> anyhow::Result<Vec<Package>> {
    // The server filters by label where the names fit one; the status decides either way.
    let mut selectors = Vec::new();
    if let Some(value) = catalog.and_then(package_view::label_value) {
        selectors.push(format!("{}={value}", labels::CATALOG));
    }
    if let Some(value) = package.and_then(package_view::label_value) {
        selectors.push(format!("{}={value}", labels::PACKAGE));
    }
    let params = ListParams::default().labels(&selectors.join(","));
    let mut views: Vec<Package> = api
        .list(&params)
        .await
        .map_err(|e| anyhow::anyhow!("listing Package views (packages.windlass.dev): {e}"))?
        .items
        .into_iter()
        .filter(|p| {
            let status = p.status.clone().unwrap_or_default();
            catalog.is_none_or(|c| status.catalog == c)
                && package.is_none_or(|n| status.package == n)
        })
        .collect();
    views.sort_by_key(|p| {
        let status = p.status.clone().unwrap_or_default();
        (status.package, status.catalog)
    });
    Ok(views)
}

async fn list_async(args: ListArgs) -> anyhow::Result<ExitCode> {
    let client = crate::manager::client(args.kubeconfig.as_ref()).await?;
    let api = Api::<Package>::all(client);
    let views = views(&api, args.catalog.as_deref(), args.package.as_deref()).await?;
    let format = args.output.format;
    if let Some(text) = format.data(|| output::list(&views))? {
        print!("{text}");
    } else if views.is_empty() {
        eprintln!(
            "{}",
            nothing_found(args.catalog.as_deref(), args.package.as_deref())
        );
    } else {
        print!("{}", table(&views, format.wide()));
    }
    Ok(ExitCode::SUCCESS)
}

fn nothing_found(catalog: Option<&str>, package: Option<&str>) -> String {
    match (catalog, package) {
        (None, None) => "No packages: no Catalog serves anything yet (kubectl get wcat)".into(),
        (Some(c), None) => format!("Catalog {c} serves no packages (kubectl get wcat {c})"),
        (None, Some(p)) => format!("No catalog serves package {p}"),
        (Some(c), Some(p)) => format!("Catalog {c} does not serve package {p}"),
    }
}

/// The columns of `kubectl get packages.windlass.dev` (and, `wide`, its wide columns).
pub fn table(views: &[Package], wide: bool) -> String {
    let mut header = output::header(&[
        "PACKAGE",
        "CATALOG",
        "DEFAULT CHANNEL",
        "LATEST",
        "PROVIDER",
        "PROVIDER TYPE",
        "LISTED",
    ]);
    if wide {
        header.extend(["DELISTED".to_string(), "CHANNELS".to_string()]);
    }
    let mut rows = vec![header];
    for view in views {
        let status = view.status.clone().unwrap_or_default();
        let provider = status.provider.clone().unwrap_or_default();
        let package = Some(status.package.clone())
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| view.name_any());
        let mut row = vec![
            package,
            output::cell(Some(status.catalog.clone())),
            output::cell(status.default_channel.clone()),
            output::cell(status.latest_version.clone()),
            output::cell(provider.name.clone()),
            output::cell(Some(provider.type_.clone())),
            status.listed.to_string(),
        ];
        if wide {
            row.push(output::cell(Some(status.delisted_summary.clone())));
            row.push(output::cell(Some(status.channel_summary.clone())));
        }
        rows.push(row);
    }
    output::table(&rows)
}

#[cfg(test)]
mod tests {
    use windlass_api::{PackageStatus, package::PackageProvider};

    use super::*;

    fn view(package: &str, catalog: &str, listed: bool, delisted: &str) -> Package {
        let mut view = Package::new(&package_view::name(catalog, package), Default::default());
        view.status = Some(PackageStatus {
            package: package.into(),
            catalog: catalog.into(),
            default_channel: Some("stable".into()),
            latest_version: listed.then(|| "1.1.0".into()),
            provider: Some(PackageProvider {
                name: Some("平台".into()),
                type_: "platform".into(),
                ..Default::default()
            }),
            listed,
            delisted_summary: delisted.into(),
            channel_summary: "stable=1.1.0".into(),
            ..Default::default()
        });
        view
    }

    #[test]
    fn the_table_has_kubectls_columns_aligned_by_characters() {
        let views = [
            view("acme-db", "builtin", true, ""),
            view("old-db", "vendor", false, "all"),
        ];
        assert_eq!(
            table(&views, false),
            "\
PACKAGE   CATALOG   DEFAULT CHANNEL   LATEST   PROVIDER   PROVIDER TYPE   LISTED
acme-db   builtin   stable            1.1.0    平台         platform        true
old-db    vendor    stable            -        平台         platform        false
"
        );
        let wide = table(&views, true);
        assert!(
            wide.lines()
                .next()
                .unwrap()
                .ends_with("LISTED   DELISTED   CHANNELS"),
            "{wide}"
        );
        assert!(
            wide.lines()
                .nth(2)
                .unwrap()
                .ends_with("false    all        stable=1.1.0"),
            "{wide}"
        );
    }

    #[test]
    fn json_output_is_a_list_of_the_objects() {
        let list = output::list(&[view("acme-db", "builtin", true, "")]).unwrap();
        assert_eq!(list["kind"], "List");
        assert_eq!(list["items"][0]["kind"], "Package");
        assert_eq!(list["items"][0]["status"]["provider"]["type"], "platform");
    }

    #[test]
    fn an_empty_answer_says_what_was_looked_for() {
        assert_eq!(
            nothing_found(Some("vendor"), Some("acme-db")),
            "Catalog vendor does not serve package acme-db"
        );
    }
}
