//! `windlass catalog delist | relist`: edit a Catalog's `spec.delisted`, as a GitOps tool would
//! with YAML.
//!
//! The CLI server-side-applies only the entries it owns, under its own field manager
//! (`windlass-cli`), so entries a GitOps tool (or `kubectl apply`) owns are never touched: an
//! edit of such an entry is refused naming its owner, unless `--force` takes it over.

use std::{collections::BTreeSet, path::PathBuf, process::ExitCode};

use anyhow::{Context as _, bail};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::{
    Api, ResourceExt,
    api::{Patch, PatchParams},
};
use serde_json::{Value, json};
use windlass_api::{
    Catalog, DelistedPackage, Package,
    names::{CLI_FIELD_MANAGER, package_view},
};
use windlass_catalog::listing::parse_version;

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

/// `acme-db` or `acme-db@1.0.1`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub package: String,
    pub version: Option<semver::Version>,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.version {
            None => write!(f, "package {}", self.package),
            Some(v) => write!(f, "version {v} of package {}", self.package),
        }
    }
}

pub fn parse_target(text: &str) -> anyhow::Result<Target> {
    let (package, version) = match text.split_once('@') {
        Some((package, version)) => (package, Some(version)),
        None => (text, None),
    };
    if package.trim().is_empty() {
        bail!("{text:?}: expected PACKAGE or PACKAGE@VERSION");
    }
    let version = version
        .map(|v| {
            parse_version(v).with_context(|| format!("{text:?}: {v:?} is not a semantic version"))
        })
        .transpose()?;
    Ok(Target {
        package: package.trim().to_string(),
        version,
    })
}

/// The packages whose `spec.delisted` entry `manager` owns through server-side apply.
pub fn owned_entries(managed: &[ManagedFieldsEntry], manager: &str) -> BTreeSet<String> {
    managed
        .iter()
        .filter(|e| {
            e.manager.as_deref() == Some(manager) && e.operation.as_deref() == Some("Apply")
        })
        .flat_map(entry_keys)
        .collect()
}

/// The managers (other than `except`) that own any field of the entry of `package`.
pub fn other_owners(managed: &[ManagedFieldsEntry], package: &str, except: &str) -> Vec<String> {
    let mut owners: Vec<String> = managed
        .iter()
        .filter(|e| e.manager.as_deref() != Some(except))
        .filter(|e| entry_keys(e).iter().any(|p| p == package))
        .map(|e| {
            format!(
                "{} ({})",
                e.manager.as_deref().unwrap_or("unknown"),
                e.operation.as_deref().unwrap_or("?")
            )
        })
        .collect();
    owners.dedup();
    owners
}

/// The packages of the `spec.delisted` entries one managedFields entry names
/// (`f:spec` > `f:delisted` > `k:{"package":"acme-db"}`).
fn entry_keys(entry: &ManagedFieldsEntry) -> Vec<String> {
    let Some(delisted) = entry
        .fields_v1
        .as_ref()
        .and_then(|f| f.0.get("f:spec"))
        .and_then(|s| s.get("f:delisted"))
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    delisted
        .keys()
        .filter_map(|k| k.strip_prefix("k:"))
        .filter_map(|k| serde_json::from_str::<Value>(k).ok())
        .filter_map(|k| k["package"].as_str().map(String::from))
        .collect()
}

/// What a delist or relist does to `spec.delisted`.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// Nothing to do; why (already delisted, not delisted).
    Nothing(String),
    /// The entry of the package as it should be (`None`: removed).
    Entry(Option<DelistedPackage>),
}

/// The package's entry after delisting `target`, from the entry it has now.
pub fn delist(current: Option<&DelistedPackage>, target: &Target, reason: Option<&str>) -> Change {
    let reason = reason
        .map(String::from)
        .or_else(|| current.and_then(|c| c.reason.clone()));
    match (current, &target.version) {
        (Some(entry), _) if entry.versions.is_empty() => Change::Nothing(format!(
            "package {} is already delisted (all of it)",
            target.package
        )),
        (_, None) => Change::Entry(Some(DelistedPackage {
            package: target.package.clone(),
            versions: Vec::new(),
            reason,
        })),
        (current, Some(version)) => {
            let mut versions: Vec<String> = current.map(|c| c.versions.clone()).unwrap_or_default();
            let known = versions
                .iter()
                .any(|v| parse_version(v).ok().as_ref() == Some(version));
            if known && current.and_then(|c| c.reason.as_deref()) == reason.as_deref() {
                return Change::Nothing(format!("{target} is already delisted"));
            }
            if !known {
                versions.push(version.to_string());
            }
            Change::Entry(Some(DelistedPackage {
                package: target.package.clone(),
                versions,
                reason,
            }))
        }
    }
}

/// The package's entry after relisting `target`, from the entry it has now.
pub fn relist(current: Option<&DelistedPackage>, target: &Target) -> anyhow::Result<Change> {
    let Some(entry) = current else {
        return Ok(Change::Nothing(format!("{target} is not delisted")));
    };
    let Some(version) = &target.version else {
        return Ok(Change::Entry(None));
    };
    if entry.versions.is_empty() {
        bail!(
            "the whole of package {} is delisted: `windlass catalog relist {}` relists all of it (then delist the versions that must stay off)",
            target.package,
            target.package
        );
    }
    let remaining: Vec<String> = entry
        .versions
        .iter()
        .filter(|v| parse_version(v).ok().as_ref() != Some(version))
        .cloned()
        .collect();
    if remaining.len() == entry.versions.len() {
        return Ok(Change::Nothing(format!("{target} is not delisted")));
    }
    Ok(Change::Entry((!remaining.is_empty()).then(|| {
        DelistedPackage {
            versions: remaining,
            ..entry.clone()
        }
    })))
}

/// The server-side apply document holding exactly the entries the CLI owns.
pub fn apply_document(catalog: &str, entries: &[DelistedPackage]) -> Value {
    let mut document = json!({
        "apiVersion": "windlass.dev/v1alpha1",
        "kind": "Catalog",
        "metadata": { "name": catalog },
    });
    // Owning nothing, the CLI sends no spec at all, so what it owned is removed and nothing
    // else is touched.
    if !entries.is_empty() {
        document["spec"] = json!({ "delisted": entries });
    }
    document
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
    let current = object
        .spec
        .delisted
        .iter()
        .find(|d| d.package == target.package);
    let change = match edit {
        Edit::Delist(reason) => delist(current, &target, reason),
        Edit::Relist => relist(current, &target)?,
    };
    let entry = match change {
        Change::Nothing(why) => {
            println!("Catalog {catalog}: {why}; nothing changed");
            return Ok(ExitCode::SUCCESS);
        }
        Change::Entry(entry) => entry,
    };
    let managed = object.managed_fields();
    let owned = owned_entries(managed, CLI_FIELD_MANAGER);
    let others = other_owners(managed, &target.package, CLI_FIELD_MANAGER);
    if current.is_some() && !others.is_empty() && !force {
        bail!(
            "spec.delisted[package={}] of Catalog {catalog} is managed by {}: change it there (in Git, for a GitOps tool), or pass --force to take it over",
            target.package,
            others.join(", ")
        );
    }
    // Every entry the CLI owns, as it is now, with this one changed.
    let mut entries: Vec<DelistedPackage> = object
        .spec
        .delisted
        .iter()
        .filter(|d| owned.contains(&d.package) && d.package != target.package)
        .cloned()
        .collect();
    entries.extend(entry.clone());
    let mut params = PatchParams::apply(CLI_FIELD_MANAGER);
    params.force = force;
    catalogs
        .patch(
            &catalog,
            &params,
            &Patch::Apply(&apply_document(&catalog, &entries)),
        )
        .await
        .map_err(|e| match e {
            kube::Error::Api(s) if s.code == 409 => anyhow::anyhow!(
                "Catalog {catalog}: {}; another tool manages that entry: change it there, or pass --force to take it over",
                s.message
            ),
            other => anyhow::anyhow!("Catalog {catalog}: {other}"),
        })?;
    if entry.is_none() && force && !others.is_empty() {
        remove_entry(&catalogs, &catalog, &target.package).await?;
    }
    let after = catalogs.get(&catalog).await?;
    let now = after
        .spec
        .delisted
        .iter()
        .find(|d| d.package == target.package);
    if now != entry.as_ref() {
        bail!(
            "Catalog {catalog}: spec.delisted[package={}] is still {}, because {} also manages it; change it there, or pass --force",
            target.package,
            serde_json::to_string(&now).unwrap_or_default(),
            other_owners(after.managed_fields(), &target.package, CLI_FIELD_MANAGER).join(", ")
        );
    }
    match edit {
        Edit::Delist(_) => println!(
            "Catalog {catalog}: {target} delisted{}. New Subscriptions cannot install it; installed operators keep running without upgrades (their Subscriptions say Delisted). `windlass catalog relist {} --catalog {catalog}` lists it again.",
            entry
                .as_ref()
                .and_then(|e| e.reason.as_deref())
                .map(|r| format!(" ({r})"))
                .unwrap_or_default(),
            target_text(&target),
        ),
        Edit::Relist => println!(
            "Catalog {catalog}: {target} listed again; Subscriptions can install it and upgrades resume."
        ),
    }
    Ok(ExitCode::SUCCESS)
}

fn target_text(target: &Target) -> String {
    match &target.version {
        None => target.package.clone(),
        Some(v) => format!("{}@{v}", target.package),
    }
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
    if let Some(version) = &target.version {
        let known = status
            .versions
            .iter()
            .chain(&status.delisted_versions)
            .chain(&status.held_back)
            .any(|v| parse_version(v).ok().as_ref() == Some(version));
        if !known {
            bail!(
                "Catalog {} does not serve version {version} of package {} (it has {})",
                status.catalog,
                target.package,
                status
                    .versions
                    .iter()
                    .chain(&status.delisted_versions)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    Ok(status.catalog)
}

/// Removes the package's entry whoever manages it (`relist --force`): the list without it,
/// written only if the Catalog is still as it was read (its resourceVersion), so no one else's
/// change is lost.
async fn remove_entry(catalogs: &Api<Catalog>, catalog: &str, package: &str) -> anyhow::Result<()> {
    let object = catalogs.get(catalog).await?;
    if !object.spec.delisted.iter().any(|d| d.package == package) {
        return Ok(());
    }
    let remaining: Vec<&DelistedPackage> = object
        .spec
        .delisted
        .iter()
        .filter(|d| d.package != package)
        .collect();
    let patch = json!({
        "metadata": { "resourceVersion": object.resource_version() },
        "spec": { "delisted": remaining },
    });
    catalogs
        .patch(
            catalog,
            &PatchParams {
                field_manager: Some(CLI_FIELD_MANAGER.into()),
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
