//! Delisting and relisting, decided without a cluster: what `windlass catalog delist | relist`
//! and the hub's Delist and Relist buttons write into a Catalog's `spec.delisted`.
//!
//! Both server-side-apply only the entries they own, under one field manager
//! (`names::DELIST_FIELD_MANAGER`), so entries a GitOps tool (or `kubectl apply`) owns are
//! never touched: changing such an entry is refused naming its owner (the CLI's `--force`
//! takes it over; the hub never does).

use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use serde_json::{Value, json};
use windlass_api::{Catalog, DelistedPackage};
use windlass_catalog::listing::parse_version;

/// Why a delist or relist cannot be done as asked. Each names the Catalog, field or input.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DelistError {
    #[error("{text:?}: expected PACKAGE or PACKAGE@VERSION")]
    NotATarget { text: String },
    #[error("{text:?}: {version:?} is not a semantic version ({message})")]
    NotAVersion {
        text: String,
        version: String,
        message: String,
    },
    #[error(
        "the whole of package {package} is delisted: relist the package to relist all of it (then delist the versions that must stay off)"
    )]
    WholePackageDelisted { package: String },
    #[error(
        "spec.delisted[package={package}] of Catalog {catalog} is managed by {}: change it there (in Git, for a GitOps tool)",
        owners.join(", ")
    )]
    ManagedElsewhere {
        catalog: String,
        package: String,
        owners: Vec<String>,
    },
    #[error(
        "Catalog {catalog}: spec.delisted[package={package}] is still {now}, because {} also manages it; change it there",
        owners.join(", ")
    )]
    StillManaged {
        catalog: String,
        package: String,
        /// The entry as it is, as JSON.
        now: String,
        owners: Vec<String>,
    },
    #[error("Catalog {catalog} does not serve version {version} of package {package} (it has {})", has.join(", "))]
    NoSuchVersion {
        catalog: String,
        package: String,
        version: semver::Version,
        has: Vec<String>,
    },
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

impl Target {
    /// `PACKAGE` or `PACKAGE@VERSION`, as the CLI takes it.
    pub fn text(&self) -> String {
        match &self.version {
            None => self.package.clone(),
            Some(v) => format!("{}@{v}", self.package),
        }
    }
}

/// `PACKAGE` (the whole package) or `PACKAGE@VERSION` (`v1.0.1` reads as `1.0.1`).
pub fn parse_target(text: &str) -> Result<Target, DelistError> {
    let (package, version) = match text.split_once('@') {
        Some((package, version)) => (package, Some(version)),
        None => (text, None),
    };
    if package.trim().is_empty() {
        return Err(DelistError::NotATarget { text: text.into() });
    }
    let version = version
        .map(|v| {
            parse_version(v).map_err(|e| DelistError::NotAVersion {
                text: text.into(),
                version: v.into(),
                message: e.to_string(),
            })
        })
        .transpose()?;
    Ok(Target {
        package: package.trim().to_string(),
        version,
    })
}

/// Whether the target's version is one the catalog has: `offered` (listed or delisted, named
/// in the refusal) or `held_back` (failing lint, which may be delisted too). A target without
/// a version always is.
pub fn check_version(
    catalog: &str,
    target: &Target,
    offered: &[&str],
    held_back: &[&str],
) -> Result<(), DelistError> {
    let Some(version) = &target.version else {
        return Ok(());
    };
    let known = offered
        .iter()
        .chain(held_back)
        .any(|v| parse_version(v).ok().as_ref() == Some(version));
    if known {
        return Ok(());
    }
    Err(DelistError::NoSuchVersion {
        catalog: catalog.into(),
        package: target.package.clone(),
        version: version.clone(),
        has: offered.iter().map(|v| v.to_string()).collect(),
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
pub fn relist(current: Option<&DelistedPackage>, target: &Target) -> Result<Change, DelistError> {
    let Some(entry) = current else {
        return Ok(Change::Nothing(format!("{target} is not delisted")));
    };
    let Some(version) = &target.version else {
        return Ok(Change::Entry(None));
    };
    if entry.versions.is_empty() {
        return Err(DelistError::WholePackageDelisted {
            package: target.package.clone(),
        });
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

/// The server-side apply document holding exactly the entries its field manager owns.
pub fn apply_document(catalog: &str, entries: &[DelistedPackage]) -> Value {
    let mut document = json!({
        "apiVersion": "windlass.dev/v1alpha1",
        "kind": "Catalog",
        "metadata": { "name": catalog },
    });
    // Owning nothing, the manager sends no spec at all, so what it owned is removed and
    // nothing else is touched.
    if !entries.is_empty() {
        document["spec"] = json!({ "delisted": entries });
    }
    document
}

/// Which edit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Edit {
    /// Delist, with a reason for the people whose Subscriptions it stops (or the entry's
    /// reason kept).
    Delist {
        reason: Option<String>,
    },
    Relist,
}

/// What to write for an edit of one Catalog.
#[derive(Clone, Debug, PartialEq)]
pub enum Plan {
    /// Nothing changes; why.
    Nothing(String),
    /// Server-side-apply `document` as the manager; the package's entry is then `entry`.
    Apply {
        document: Value,
        entry: Option<DelistedPackage>,
        /// Other managers of the entry (taken over only with force).
        others: Vec<String>,
    },
}

fn managed_fields(catalog: &Catalog) -> &[ManagedFieldsEntry] {
    catalog
        .metadata
        .managed_fields
        .as_deref()
        .unwrap_or_default()
}

fn catalog_name(catalog: &Catalog) -> &str {
    catalog.metadata.name.as_deref().unwrap_or_default()
}

/// The edit of `catalog` (as read) that delists or relists `target`, applied as `manager`:
/// every entry `manager` owns now, with the target's changed. An entry another manager owns
/// is refused unless `force` takes it over.
pub fn plan(
    catalog: &Catalog,
    target: &Target,
    edit: &Edit,
    manager: &str,
    force: bool,
) -> Result<Plan, DelistError> {
    let name = catalog_name(catalog);
    let current = catalog
        .spec
        .delisted
        .iter()
        .find(|d| d.package == target.package);
    let change = match edit {
        Edit::Delist { reason } => delist(current, target, reason.as_deref()),
        Edit::Relist => relist(current, target)?,
    };
    let entry = match change {
        Change::Nothing(why) => return Ok(Plan::Nothing(why)),
        Change::Entry(entry) => entry,
    };
    let managed = managed_fields(catalog);
    let owned = owned_entries(managed, manager);
    let others = other_owners(managed, &target.package, manager);
    if current.is_some() && !others.is_empty() && !force {
        return Err(DelistError::ManagedElsewhere {
            catalog: name.into(),
            package: target.package.clone(),
            owners: others,
        });
    }
    let mut entries: Vec<DelistedPackage> = catalog
        .spec
        .delisted
        .iter()
        .filter(|d| owned.contains(&d.package) && d.package != target.package)
        .cloned()
        .collect();
    entries.extend(entry.clone());
    Ok(Plan::Apply {
        document: apply_document(name, &entries),
        entry,
        others,
    })
}

/// Whether the Catalog, read after the write, holds the entry the edit meant; otherwise who
/// else keeps it as it is.
pub fn check_written(
    after: &Catalog,
    package: &str,
    entry: Option<&DelistedPackage>,
    manager: &str,
) -> Result<(), DelistError> {
    let now = after.spec.delisted.iter().find(|d| d.package == package);
    if now == entry {
        return Ok(());
    }
    Err(DelistError::StillManaged {
        catalog: catalog_name(after).into(),
        package: package.into(),
        now: serde_json::to_string(&now).unwrap_or_default(),
        owners: other_owners(managed_fields(after), package, manager),
    })
}

/// The merge patch that removes the package's entry whoever manages it, written only while
/// the Catalog is as it was read (its resourceVersion), so no one else's change is lost.
/// `None` when there is no entry.
pub fn removal_patch(catalog: &Catalog, package: &str) -> Option<Value> {
    if !catalog.spec.delisted.iter().any(|d| d.package == package) {
        return None;
    }
    let remaining: Vec<&DelistedPackage> = catalog
        .spec
        .delisted
        .iter()
        .filter(|d| d.package != package)
        .collect();
    Some(json!({
        "metadata": { "resourceVersion": catalog.metadata.resource_version },
        "spec": { "delisted": remaining },
    }))
}

/// What a person is told once the edit is written.
pub fn done_message(
    catalog: &str,
    target: &Target,
    edit: &Edit,
    entry: Option<&DelistedPackage>,
) -> String {
    match edit {
        Edit::Delist { .. } => format!(
            "Catalog {catalog}: {target} delisted{}. New Subscriptions cannot install it; installed operators keep running without upgrades (their Subscriptions say Delisted).",
            entry
                .and_then(|e| e.reason.as_deref())
                .map(|r| format!(" ({r})"))
                .unwrap_or_default(),
        ),
        Edit::Relist => format!(
            "Catalog {catalog}: {target} listed again; Subscriptions can install it and upgrades resume."
        ),
    }
}

/// What a person is told when the edit changes nothing.
pub fn nothing_message(catalog: &str, why: &str) -> String {
    format!("Catalog {catalog}: {why}; nothing changed")
}

/// The API server's conflict (another manager owns a field the apply sets), for a person.
pub fn conflict_message(catalog: &str, server: &str) -> String {
    format!("Catalog {catalog}: {server}; another tool manages that entry: change it there")
}

/// The hub's Delist and Relist form, as submitted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DelistRequest {
    pub catalog: String,
    pub package: String,
    /// Empty: the whole package.
    pub version: String,
    pub reason: String,
}

impl DelistRequest {
    /// From a form body (`application/x-www-form-urlencoded`).
    pub fn parse(body: &[u8]) -> DelistRequest {
        let mut out = DelistRequest::default();
        for (key, value) in form_urlencoded::parse(body) {
            let value = value.trim().to_string();
            match key.as_ref() {
                "catalog" => out.catalog = value,
                "package" => out.package = value,
                "version" => out.version = value,
                "reason" => out.reason = value,
                _ => {}
            }
        }
        out
    }

    /// The Catalog's name and the target, or what is wrong with the form.
    pub fn target(&self) -> Result<(String, Target), crate::actions::ActionError> {
        crate::actions::check_name("catalog", &self.catalog, 253)?;
        crate::actions::check_name("package", &self.package, 253)?;
        let version = match self.version.as_str() {
            "" => None,
            text => Some(parse_version(text).map_err(|e| {
                crate::actions::ActionError::InvalidField {
                    field: "version",
                    message: format!("{text:?} is not a semantic version ({e})"),
                }
            })?),
        };
        Ok((
            self.catalog.clone(),
            Target {
                package: self.package.clone(),
                version,
            },
        ))
    }

    /// The reason to record: `None` keeps the entry's.
    pub fn reason(&self) -> Option<String> {
        (!self.reason.is_empty()).then(|| self.reason.clone())
    }
}

#[cfg(test)]
#[path = "delisting_tests.rs"]
mod tests;
