//! What a package's page and read API show of its installs and their instances, from what
//! the server gathered: each install with its version and what it watches, each owned kind's
//! instances (namespace, name, age, status conditions) up to [`MAX_PER_KIND`], what could not
//! be read, and, once the catalog delists what an install runs, what to reclaim.

use k8s_openapi::jiff::Timestamp;
use serde::Serialize;
use serde_json::Value;
use windlass_catalog::{
    Package,
    listing::{DelistEntry, parse_version},
};

use super::{
    Gathered, Install, KindRead, MAX_INSTALLS, MAX_PER_KIND, Object, OwnedKind, Reach, kinds_of,
};
use crate::index::CatalogContent;

/// The package's installs the person may read and the instances of the CRDs they own.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Instances {
    /// Where Subscriptions were read.
    pub subscriptions: Reach,
    /// By namespace and name, at most [`MAX_INSTALLS`].
    pub installs: Vec<InstallView>,
    #[serde(skip_serializing_if = "is_zero")]
    pub more_installs: usize,
    pub kinds: Vec<KindView>,
    /// What to migrate or delete, when the catalog delists what installs run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reclaim: Option<Reclaim>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One install.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstallView {
    pub namespace: String,
    pub subscription: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub csv: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Its operator watches every namespace.
    pub all_namespaces: bool,
    /// Else the namespaces it watches.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub watches: Vec<String>,
    /// It runs a version the catalog delists (or the package is delisted whole).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub delisted: bool,
}

/// One owned kind and its instances.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KindView {
    #[serde(flatten)]
    pub kind: OwnedKind,
    /// Why its instances could not be read at all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    pub reach: Reach,
    /// By namespace and name, at most [`MAX_PER_KIND`].
    pub instances: Vec<Instance>,
    /// How many more there are (counted by the API server, or past the bound).
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub more: u64,
    /// There are more than counted.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub more_uncounted: bool,
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

impl KindView {
    /// Not every instance is listed: some were refused, left out or not counted.
    pub fn incomplete(&self) -> bool {
        self.problem.is_some() || self.reach.partial() || self.more > 0 || self.more_uncounted
    }
}

/// One custom resource.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Instance {
    /// Absent for a cluster-scoped kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    /// RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// As kubectl shows it (`45s`, `12m`, `5h`, `3d`, `2y`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age: Option<String>,
    /// `status.conditions` as the resource has them; empty when it has none.
    pub conditions: Vec<InstanceCondition>,
}

/// One entry of a custom resource's `status.conditions`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InstanceCondition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// What an admin migrates or deletes after a delist: the installs that keep running what the
/// catalog delists, and their instances.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reclaim {
    pub catalog: String,
    /// The whole package is delisted (else some versions).
    pub whole: bool,
    pub installs: Vec<ReclaimInstall>,
    /// With the whole package delisted: instances of its kinds in namespaces no install
    /// watches.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unwatched: Vec<InstanceRef>,
    /// Some installs or instances could not be read or were left out: there may be more.
    pub incomplete: bool,
}

/// One install to reclaim.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReclaimInstall {
    pub namespace: String,
    pub subscription: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The instances of the kinds it owns in the namespaces it watches.
    pub instances: Vec<InstanceRef>,
}

/// A custom resource, named.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstanceRef {
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

impl std::fmt::Display for InstanceRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {ns}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

impl Instances {
    /// What to show of `package` (of `content`) from what was gathered, at `now`.
    pub fn build(
        content: &CatalogContent,
        package: &Package,
        gathered: &Gathered,
        now: Timestamp,
    ) -> Instances {
        let delisting = content.delisting.entry(&package.name);
        let installs: Vec<InstallView> = gathered
            .installs
            .iter()
            .take(MAX_INSTALLS)
            .map(|i| install_view(i, content, package, delisting))
            .collect();
        let kinds: Vec<KindView> = gathered.kinds.iter().map(|k| kind_view(k, now)).collect();
        let reclaim = delisting.map(|entry| reclaim(content, package, gathered, &kinds, entry));
        Instances {
            subscriptions: gathered.subscriptions.clone(),
            more_installs: gathered.installs.len().saturating_sub(MAX_INSTALLS),
            installs,
            kinds,
            reclaim,
        }
    }
}

/// The version an install runs: its Blueprint's, else the catalog's for its CSV.
fn version_of(install: &Install, package: &Package) -> Option<String> {
    install
        .blueprint
        .as_ref()
        .and_then(|b| b.status.as_ref())
        .and_then(|s| s.version.clone())
        .filter(|v| !v.is_empty())
        .or_else(|| {
            install
                .csv_name()
                .and_then(|csv| package.bundles.get(csv))
                .map(|b| b.version.to_string())
        })
}

fn delisted(entry: Option<&DelistEntry>, version: Option<&str>) -> bool {
    entry.is_some_and(|e| {
        e.whole_package()
            || version
                .and_then(|v| parse_version(v).ok())
                .is_some_and(|v| e.covers(&v))
    })
}

fn install_view(
    install: &Install,
    content: &CatalogContent,
    package: &Package,
    delisting: Option<&DelistEntry>,
) -> InstallView {
    let version = version_of(install, package);
    let watched = install.watched(content, package);
    InstallView {
        namespace: install.namespace().to_string(),
        subscription: install.name().to_string(),
        delisted: delisted(delisting, version.as_deref()),
        version,
        csv: install.csv_name().map(String::from),
        state: install
            .subscription
            .status
            .as_ref()
            .and_then(|s| s.state)
            .map(|s| format!("{s:?}")),
        all_namespaces: watched.is_none(),
        watches: watched.unwrap_or_default(),
    }
}

fn kind_view(read: &KindRead, now: Timestamp) -> KindView {
    match &read.read {
        Err(problem) => KindView {
            kind: read.kind.clone(),
            problem: Some(problem.clone()),
            reach: Reach::default(),
            instances: Vec::new(),
            more: 0,
            more_uncounted: false,
        },
        Ok(objects) => {
            let mut instances: Vec<Instance> =
                objects.items.iter().map(|o| instance(o, now)).collect();
            instances.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
            instances.dedup_by(|a, b| a.namespace == b.namespace && a.name == b.name);
            let past = instances.len().saturating_sub(MAX_PER_KIND);
            instances.truncate(MAX_PER_KIND);
            KindView {
                kind: read.kind.clone(),
                problem: None,
                reach: objects.reach.clone(),
                instances,
                more: objects.more + past as u64,
                more_uncounted: objects.more_uncounted,
            }
        }
    }
}

fn instance(object: &Object, now: Timestamp) -> Instance {
    let created = object.metadata.creation_timestamp.as_ref().map(|t| t.0);
    Instance {
        namespace: object.metadata.namespace.clone().filter(|n| !n.is_empty()),
        name: object.metadata.name.clone().unwrap_or_default(),
        created: created.map(|t| t.to_string()),
        age: created.map(|t| age(t, now)),
        conditions: object.status.as_ref().map(conditions).unwrap_or_default(),
    }
}

/// The entries of `status.conditions` that name a type; whatever else a resource keeps there
/// (or no list at all) is passed over, since no schema is promised.
pub fn conditions(status: &Value) -> Vec<InstanceCondition> {
    let text = |c: &Value, key: &str| match &c[key] {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        _ => String::new(),
    };
    status["conditions"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter(|c| c.is_object())
                .map(|c| InstanceCondition {
                    type_: text(c, "type"),
                    status: text(c, "status"),
                    reason: text(c, "reason"),
                    message: text(c, "message"),
                })
                .filter(|c| !c.type_.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// How long ago `then` was, as kubectl's AGE column rounds it.
pub fn age(then: Timestamp, now: Timestamp) -> String {
    let seconds = now.duration_since(then).as_secs().max(0);
    match seconds {
        s if s < 120 => format!("{s}s"),
        s if s < 120 * 60 => format!("{}m", s / 60),
        s if s < 48 * 3600 => format!("{}h", s / 3600),
        s if s < 730 * 86400 => format!("{}d", s / 86400),
        s => format!("{}y", s / (365 * 86400)),
    }
}

fn reference(kind: &KindView, instance: &Instance) -> InstanceRef {
    InstanceRef {
        kind: kind.kind.kind.clone(),
        namespace: instance.namespace.clone(),
        name: instance.name.clone(),
    }
}

/// Whether an install with `watched` (`None`: every namespace) manages `instance`.
fn watches(watched: Option<&[String]>, instance: &Instance) -> bool {
    match (watched, &instance.namespace) {
        (None, _) | (_, None) => true,
        (Some(list), Some(ns)) => list.iter().any(|w| w == ns),
    }
}

/// What one install manages: the kinds it owns, in the namespaces it watches (`None`: all).
struct Managed<'a> {
    install: &'a Install,
    owned: Vec<OwnedKind>,
    watched: Option<Vec<String>>,
}

impl Managed<'_> {
    fn manages(&self, kind: &KindView, instance: &Instance) -> bool {
        self.owned.iter().any(|o| o.crd == kind.kind.crd)
            && watches(self.watched.as_deref(), instance)
    }

    fn instances(&self, kinds: &[KindView]) -> Vec<InstanceRef> {
        kinds
            .iter()
            .flat_map(|k| {
                k.instances
                    .iter()
                    .filter(move |i| self.manages(k, i))
                    .map(move |i| reference(k, i))
            })
            .collect()
    }
}

fn reclaim(
    content: &CatalogContent,
    package: &Package,
    gathered: &Gathered,
    kinds: &[KindView],
    entry: &DelistEntry,
) -> Reclaim {
    let managed: Vec<Managed<'_>> = gathered
        .installs
        .iter()
        .map(|install| Managed {
            install,
            owned: kinds_of(install, &gathered.owned, content, package),
            watched: install.watched(content, package),
        })
        .collect();
    let installs: Vec<ReclaimInstall> = managed
        .iter()
        .filter_map(|m| {
            let version = version_of(m.install, package);
            delisted(Some(entry), version.as_deref()).then(|| ReclaimInstall {
                namespace: m.install.namespace().to_string(),
                subscription: m.install.name().to_string(),
                version,
                instances: m.instances(kinds),
            })
        })
        .take(MAX_INSTALLS)
        .collect();
    let unwatched = if entry.whole_package() {
        kinds
            .iter()
            .flat_map(|k| {
                k.instances
                    .iter()
                    .filter(|i| !managed.iter().any(|m| m.manages(k, i)))
                    .map(move |i| reference(k, i))
            })
            .collect()
    } else {
        Vec::new()
    };
    Reclaim {
        catalog: content.name.clone(),
        whole: entry.whole_package(),
        incomplete: gathered.subscriptions.partial()
            || gathered.installs.len() > MAX_INSTALLS
            || kinds.iter().any(KindView::incomplete),
        installs,
        unwatched,
    }
}
