//! `windlass catalog delist | relist`: edit a Catalog's `spec.delisted`, as a GitOps tool would
//! with YAML.
//!
//! The CLI server-side-applies only the entries it owns, under its own field manager
//! (`windlass-cli`, which the hub's Delist and Relist buttons share), so entries a GitOps tool
//! (or `kubectl apply`) owns are never touched: an edit of such an entry is refused naming its
//! owner, unless `--force` takes it over. What to write is decided in
//! `windlass_hub::delisting`; this module finds the Catalog, writes and reports.

use std::{path::PathBuf, process::ExitCode};

use anyhow::{Context as _, bail};
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use windlass_api::{
    Catalog, Package,
    names::{DELIST_FIELD_MANAGER, package_view},
};
use windlass_hub::delisting::{self, DelistError, Plan, Target};
// What the tests below exercise: the shared decisions, as the CLI uses them.
#[cfg(test)]
use {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry,
    serde_json::{Value, json},
    std::collections::BTreeSet,
    windlass_api::DelistedPackage,
    windlass_hub::delisting::{
        Change, apply_document, delist, other_owners, owned_entries, relist,
    },
};

#[derive(clap::Args)]
pub struct DelistArgs {
    /// `PACKAGE` (the whole package) or `PACKAGE@VERSION`.
    pub target: String,
    /// The Catalog to delist it from (needed when several serve the package).
    #[arg(long)]
    pub catalog: Option<String>,
    /// Why, for the people whose Subscriptions it stops.
    #[arg(long)]
    pub reason: Option<String>,
    /// Take the entry over from the tool that manages it (a GitOps tool will put it back on
    /// its next sync unless its source changes too).
    #[arg(long)]
    pub force: bool,
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct RelistArgs {
    /// `PACKAGE` (the whole package) or `PACKAGE@VERSION`.
    pub target: String,
    /// The Catalog to relist it in (needed when several serve the package).
    #[arg(long)]
    pub catalog: Option<String>,
    /// Remove the entry even when another tool manages it.
    #[arg(long)]
    pub force: bool,
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
}

pub fn parse_target(text: &str) -> anyhow::Result<Target> {
    Ok(delisting::parse_target(text)?)
}

pub fn run_delist(args: DelistArgs) -> anyhow::Result<ExitCode> {
    super::lifecycle::runtime()?.block_on(edit(
        args.kubeconfig.as_ref(),
        &args.target,
        args.catalog.as_deref(),
        args.force,
        Edit::Delist(args.reason.as_deref()),
    ))
}

pub fn run_relist(args: RelistArgs) -> anyhow::Result<ExitCode> {
    super::lifecycle::runtime()?.block_on(edit(
        args.kubeconfig.as_ref(),
        &args.target,
        args.catalog.as_deref(),
        args.force,
        Edit::Relist,
    ))
}

#[derive(Clone, Copy)]
enum Edit<'a> {
    Delist(Option<&'a str>),
    Relist,
}

async fn edit(
    kubeconfig: Option<&PathBuf>,
    target: &str,
    catalog: Option<&str>,
    force: bool,
    edit: Edit<'_>,
) -> anyhow::Result<ExitCode> {
    let target = parse_target(target)?;
    let client = crate::manager::client(kubeconfig).await?;
    let views = Api::<Package>::all(client.clone());
    let catalogs = Api::<Catalog>::all(client);
    let catalog = serving_catalog(&views, catalog, &target).await?;
    let object = catalogs
        .get_opt(&catalog)
        .await?
        .with_context(|| format!("Catalog {catalog} does not exist (kubectl get wcat)"))?;
    let edit = match edit {
        Edit::Delist(reason) => delisting::Edit::Delist {
            reason: reason.map(String::from),
        },
        Edit::Relist => delisting::Edit::Relist,
    };
    let plan = delisting::plan(&object, &target, &edit, DELIST_FIELD_MANAGER, force).map_err(
        |e| match e {
            DelistError::WholePackageDelisted { package } => anyhow::anyhow!(
                "the whole of package {package} is delisted: `windlass catalog relist {package}` relists all of it (then delist the versions that must stay off)"
            ),
            DelistError::ManagedElsewhere { .. } => {
                anyhow::anyhow!("{e}, or pass --force to take it over")
            }
            other => other.into(),
        },
    )?;
    let (document, entry, others) = match plan {
        Plan::Nothing(why) => {
            println!("{}", delisting::nothing_message(&catalog, &why));
            return Ok(ExitCode::SUCCESS);
        }
        Plan::Apply {
            document,
            entry,
            others,
        } => (document, entry, others),
    };
    let mut params = PatchParams::apply(DELIST_FIELD_MANAGER);
    params.force = force;
    catalogs
        .patch(&catalog, &params, &Patch::Apply(&document))
        .await
        .map_err(|e| match e {
            kube::Error::Api(s) if s.code == 409 => anyhow::anyhow!(
                "{}, or pass --force to take it over",
                delisting::conflict_message(&catalog, &s.message)
            ),
            other => anyhow::anyhow!("Catalog {catalog}: {other}"),
        })?;
    if entry.is_none() && force && !others.is_empty() {
        remove_entry(&catalogs, &catalog, &target.package).await?;
    }
    let after = catalogs.get(&catalog).await?;
    delisting::check_written(
        &after,
        &target.package,
        entry.as_ref(),
        DELIST_FIELD_MANAGER,
    )
    .map_err(|e| anyhow::anyhow!("{e}, or pass --force"))?;
    let done = delisting::done_message(&catalog, &target, &edit, entry.as_ref());
    match edit {
        delisting::Edit::Delist { .. } => println!(
            "{done} `windlass catalog relist {} --catalog {catalog}` lists it again.",
            target.text(),
        ),
        delisting::Edit::Relist => println!("{done}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// The catalog to edit: the one named (it must serve the package, and the version when one is
/// given), or the only one that serves the package.
async fn serving_catalog(
    views: &Api<Package>,
    named: Option<&str>,
    target: &Target,
) -> anyhow::Result<String> {
    let serving = super::catalog_list::views(views, named, Some(&target.package)).await?;
    let view = match (serving.as_slice(), named) {
        ([], Some(catalog)) => bail!(
            "Catalog {catalog} does not serve package {} (`windlass catalog list --catalog {catalog}` shows what it serves; Package {} does not exist)",
            target.package,
            package_view::name(catalog, &target.package)
        ),
        ([], None) => bail!(
            "no catalog serves package {} (`windlass catalog list` shows what is served)",
            target.package
        ),
        ([one], _) => one,
        (several, _) => bail!(
            "package {} is served by catalogs {}; say which with --catalog",
            target.package,
            several
                .iter()
                .filter_map(|p| p.status.as_ref().map(|s| s.catalog.clone()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let status = view.status.clone().unwrap_or_default();
    let offered: Vec<&str> = status
        .versions
        .iter()
        .chain(&status.delisted_versions)
        .map(String::as_str)
        .collect();
    let held_back: Vec<&str> = status.held_back.iter().map(String::as_str).collect();
    delisting::check_version(&status.catalog, target, &offered, &held_back)?;
    Ok(status.catalog)
}

/// Removes the package's entry whoever manages it (`relist --force`): the list without it,
/// written only if the Catalog is still as it was read (its resourceVersion), so no one else's
/// change is lost.
async fn remove_entry(catalogs: &Api<Catalog>, catalog: &str, package: &str) -> anyhow::Result<()> {
    let object = catalogs.get(catalog).await?;
    let Some(patch) = delisting::removal_patch(&object, package) else {
        return Ok(());
    };
    catalogs
        .patch(
            catalog,
            &PatchParams {
                field_manager: Some(DELIST_FIELD_MANAGER.into()),
                ..Default::default()
            },
            &Patch::Merge(&patch),
        )
        .await
        .with_context(|| {
            format!("removing spec.delisted[package={package}] of Catalog {catalog}")
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1;

    use super::*;

    fn v(text: &str) -> semver::Version {
        semver::Version::parse(text).unwrap()
    }

    fn entry(versions: &[&str], reason: Option<&str>) -> DelistedPackage {
        DelistedPackage {
            package: "acme-db".into(),
            versions: versions.iter().map(|s| s.to_string()).collect(),
            reason: reason.map(String::from),
        }
    }

    #[test]
    fn targets_are_a_package_and_maybe_a_version() {
        assert_eq!(
            parse_target("acme-db@v1.0.1").unwrap(),
            Target {
                package: "acme-db".into(),
                version: Some(v("1.0.1"))
            }
        );
        assert_eq!(parse_target("acme-db").unwrap().version, None);
        let bad = parse_target("acme-db@one").unwrap_err().to_string();
        assert!(bad.contains("\"one\" is not a semantic version"), "{bad}");
        assert!(parse_target("@1.0.0").is_err());
    }

    #[test]
    fn delisting_adds_to_or_widens_the_entry() {
        let whole = parse_target("acme-db").unwrap();
        let one = parse_target("acme-db@1.0.1").unwrap();
        let cases: Vec<(Option<DelistedPackage>, &Target, Option<&str>, Change)> = vec![
            (
                None,
                &whole,
                Some("EOL"),
                Change::Entry(Some(entry(&[], Some("EOL")))),
            ),
            (
                None,
                &one,
                None,
                Change::Entry(Some(entry(&["1.0.1"], None))),
            ),
            (
                Some(entry(&["1.0.0"], Some("CVE"))),
                &one,
                None,
                Change::Entry(Some(entry(&["1.0.0", "1.0.1"], Some("CVE")))),
            ),
            (
                Some(entry(&["1.0.0"], None)),
                &whole,
                None,
                Change::Entry(Some(entry(&[], None))),
            ),
            (
                Some(entry(&[], None)),
                &one,
                None,
                Change::Nothing("package acme-db is already delisted (all of it)".into()),
            ),
            (
                Some(entry(&["1.0.1"], Some("CVE"))),
                &one,
                None,
                Change::Nothing("version 1.0.1 of package acme-db is already delisted".into()),
            ),
            // A new reason for a version already delisted is a change.
            (
                Some(entry(&["1.0.1"], Some("CVE"))),
                &one,
                Some("CVE-2"),
                Change::Entry(Some(entry(&["1.0.1"], Some("CVE-2")))),
            ),
        ];
        for (current, target, reason, expected) in cases {
            assert_eq!(
                delist(current.as_ref(), target, reason),
                expected,
                "{current:?} {target}"
            );
        }
    }

    #[test]
    fn relisting_narrows_or_removes_the_entry() {
        let whole = parse_target("acme-db").unwrap();
        let one = parse_target("acme-db@1.0.1").unwrap();
        assert_eq!(
            relist(Some(&entry(&["1.0.0", "1.0.1"], Some("CVE"))), &one).unwrap(),
            Change::Entry(Some(entry(&["1.0.0"], Some("CVE"))))
        );
        assert_eq!(
            relist(Some(&entry(&["1.0.1"], None)), &one).unwrap(),
            Change::Entry(None)
        );
        assert_eq!(
            relist(Some(&entry(&["1.0.1"], None)), &whole).unwrap(),
            Change::Entry(None)
        );
        assert_eq!(
            relist(None, &one).unwrap(),
            Change::Nothing("version 1.0.1 of package acme-db is not delisted".into())
        );
        assert_eq!(
            relist(Some(&entry(&["1.0.0"], None)), &one).unwrap(),
            Change::Nothing("version 1.0.1 of package acme-db is not delisted".into())
        );
        let refused = relist(Some(&entry(&[], None)), &one)
            .unwrap_err()
            .to_string();
        assert!(
            refused.starts_with("the whole of package acme-db is delisted"),
            "{refused}"
        );
    }

    fn managed(manager: &str, operation: &str, packages: &[&str]) -> ManagedFieldsEntry {
        let keys: serde_json::Map<String, Value> = packages
            .iter()
            .map(|p| {
                (
                    format!("k:{{\"package\":\"{p}\"}}"),
                    json!({".": {}, "f:package": {}}),
                )
            })
            .collect();
        ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some(operation.into()),
            fields_v1: Some(FieldsV1(json!({"f:spec": {"f:delisted": keys}}))),
            ..Default::default()
        }
    }

    #[test]
    fn ownership_of_entries_is_read_from_managed_fields() {
        let fields = [
            managed("windlass-cli", "Apply", &["acme-db", "old-db"]),
            managed("argocd-controller", "Apply", &["gitops-db"]),
            managed("kubectl-edit", "Update", &["acme-db"]),
        ];
        assert_eq!(
            owned_entries(&fields, "windlass-cli"),
            BTreeSet::from(["acme-db".to_string(), "old-db".to_string()])
        );
        assert_eq!(
            other_owners(&fields, "gitops-db", "windlass-cli"),
            ["argocd-controller (Apply)"]
        );
        assert_eq!(
            other_owners(&fields, "acme-db", "windlass-cli"),
            ["kubectl-edit (Update)"]
        );
        assert!(other_owners(&fields, "old-db", "windlass-cli").is_empty());
    }

    #[test]
    fn the_cli_applies_only_its_own_entries_and_nothing_when_it_owns_none() {
        let doc = apply_document("vendor", &[entry(&["1.0.1"], Some("CVE"))]);
        assert_eq!(
            doc["spec"]["delisted"],
            json!([{"package": "acme-db", "versions": ["1.0.1"], "reason": "CVE"}])
        );
        assert!(apply_document("vendor", &[]).get("spec").is_none());
    }
}
