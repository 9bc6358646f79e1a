//! The installs of a package and the instances of the CRDs they own, read with the person's
//! client so the API server decides what they see. Each list is tried across every namespace
//! first; where that is refused, the namespaces `windlass_hub::instances` names are read one by
//! one, and what is refused there too is reported, not hidden. A package with no install the
//! person may read costs one list of Subscriptions (one per named namespace when that is
//! refused). What to read next and what is shown is decided in `windlass_hub::instances`.

use std::collections::BTreeMap;

use futures::{StreamExt, stream};
use k8s_openapi::jiff::Timestamp;
use kube::{
    Api, Client,
    api::{DynamicObject, ListParams, ObjectList},
    core::GroupVersionKind,
    discovery::{self, Scope},
};
use windlass_api::{Blueprint, ClusterServiceVersion, Subscription, names::labels};
use windlass_catalog::Package;
use windlass_hub::{
    CatalogContent,
    instances::{
        self, Gathered, Install, Instances, KindRead, MAX_PER_KIND, Object, Objects, OwnedKind,
        Reach,
    },
};

/// How many lists are in flight at once when namespaces are read one by one.
const IN_FLIGHT: usize = 8;

/// What the page and the read API show of `package`'s installs, read as the person. `known`:
/// the namespaces the person named (their default, the page's), looked in when the
/// cluster-wide lists are refused.
pub async fn of(
    client: &Client,
    content: &CatalogContent,
    package: &Package,
    known: &[String],
) -> Instances {
    let gathered = gather(client, content, package, known).await;
    Instances::build(content, package, &gathered, Timestamp::now())
}

async fn gather(
    client: &Client,
    content: &CatalogContent,
    package: &Package,
    known: &[String],
) -> Gathered {
    let (subscriptions, reach) =
        list_everywhere_or_in(Api::<Subscription>::all(client.clone()), known, |ns| {
            Api::namespaced(client.clone(), ns)
        })
        .await;
    let subscriptions: Vec<Subscription> = subscriptions
        .into_iter()
        .filter(|s| instances::subscribes_to(s, &package.name, &content.name))
        .collect();
    if subscriptions.is_empty() {
        return Gathered {
            subscriptions: reach,
            ..Gathered::default()
        };
    }
    let blueprints = blueprints(client, &package.name, &subscriptions, reach.all_namespaces).await;
    let installs = instances::installs(subscriptions, &blueprints, &package.name, &content.name);
    let owned = owned(client, &installs).await;
    let kinds = instances::kinds_to_list(&installs, &owned, content, package);
    let (namespaces, not_tried) = instances::namespaces_to_try(&installs, content, package, known);
    let kinds = stream::iter(kinds)
        .map(|kind| read_kind(client, kind, &namespaces, not_tried))
        .buffered(IN_FLIGHT)
        .collect()
        .await;
    Gathered {
        subscriptions: reach,
        installs,
        owned,
        kinds,
    }
}

fn refusal(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => status.message.clone(),
        other => other.to_string(),
    }
}

/// Lists `across` (every namespace); where the API server refuses, lists `in_namespace` of
/// each of `namespaces` instead and says which it refused as well.
async fn list_everywhere_or_in<K, F>(
    across: Api<K>,
    namespaces: &[String],
    in_namespace: F,
) -> (Vec<K>, Reach)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    F: Fn(&str) -> Api<K>,
{
    let error = match across.list(&ListParams::default()).await {
        Ok(list) => return (list.items, Reach::everywhere()),
        Err(error) => error,
    };
    let apis: Vec<(String, Api<K>)> = namespaces
        .iter()
        .map(|ns| (ns.clone(), in_namespace(ns)))
        .collect();
    let answers: Vec<(String, Result<ObjectList<K>, kube::Error>)> = stream::iter(apis)
        .map(|(ns, api)| async move { (ns, api.list(&ListParams::default()).await) })
        .buffered(IN_FLIGHT)
        .collect()
        .await;
    let mut items = Vec::new();
    let mut reach = Reach {
        refusal: Some(refusal(&error)),
        ..Reach::default()
    };
    for (ns, answer) in answers {
        match answer {
            Ok(list) => {
                items.extend(list.items);
                reach.namespaces.push(ns);
            }
            Err(_) => reach.not_readable.push(ns),
        }
    }
    (items, reach)
}

/// The Blueprints of the package where its Subscriptions are: one label-selected list across
/// namespaces when the person may make it, else one per namespace. A Blueprint the person
/// may not read leaves its install shown with less.
async fn blueprints(
    client: &Client,
    package: &str,
    subscriptions: &[Subscription],
    across: bool,
) -> Vec<Blueprint> {
    // Label values are at most 63 characters; a longer name is matched on the spec alone.
    let params = if package.len() <= 63 {
        ListParams::default().labels(&format!("{}={package}", labels::PACKAGE))
    } else {
        ListParams::default()
    };
    let of_package = |list: ObjectList<Blueprint>| -> Vec<Blueprint> {
        list.items
            .into_iter()
            .filter(|b| b.spec.package == package)
            .collect()
    };
    if across && let Ok(list) = Api::<Blueprint>::all(client.clone()).list(&params).await {
        return of_package(list);
    }
    let mut namespaces: Vec<String> = subscriptions
        .iter()
        .filter_map(|s| s.metadata.namespace.clone())
        .collect();
    namespaces.sort();
    namespaces.dedup();
    let params = &params;
    stream::iter(namespaces)
        .map(|ns| async move {
            Api::<Blueprint>::namespaced(client.clone(), &ns)
                .list(params)
                .await
                .map(of_package)
                .unwrap_or_default()
        })
        .buffered(IN_FLIGHT)
        .concat()
        .await
}

/// What each CSV the installs run owns, read once per CSV name; a CSV the person may not read
/// is left to the catalog's copy.
async fn owned(client: &Client, installs: &[Install]) -> BTreeMap<String, Vec<OwnedKind>> {
    stream::iter(instances::csvs_to_read(installs))
        .map(|(ns, name)| async move {
            let csv = Api::<ClusterServiceVersion>::namespaced(client.clone(), &ns)
                .get(&name)
                .await;
            match csv {
                Ok(csv) => Some((name, instances::owned_kinds(&csv.spec.definition))),
                Err(error) => {
                    tracing::debug!(%error, namespace = ns, csv = name, "reading a CSV as the person");
                    None
                }
            }
        })
        .buffered(IN_FLIGHT)
        .filter_map(|x| async move { x })
        .collect()
        .await
}

/// One kind's instances, at most [`MAX_PER_KIND`] per list.
async fn read_kind(
    client: &Client,
    kind: OwnedKind,
    namespaces: &[String],
    not_tried: usize,
) -> KindRead {
    let gvk = GroupVersionKind::gvk(&kind.group, &kind.version, &kind.kind);
    let (resource, capabilities) = match discovery::pinned_kind(client, &gvk).await {
        Ok(found) => found,
        Err(error) => {
            return KindRead {
                read: Err(format!(
                    "the API server does not serve {} {}/{}: {}",
                    kind.kind,
                    kind.group,
                    kind.version,
                    refusal(&error)
                )),
                kind,
            };
        }
    };
    let params = ListParams::default().limit(MAX_PER_KIND as u32);
    let mut objects = Objects::default();
    let across = Api::<DynamicObject>::all_with(client.clone(), &resource);
    let error = match across.list(&params).await {
        Ok(list) => {
            objects.reach = Reach::everywhere();
            take(&mut objects, list);
            return KindRead {
                kind,
                read: Ok(objects),
            };
        }
        Err(error) => error,
    };
    if capabilities.scope == Scope::Cluster {
        return KindRead {
            read: Err(format!(
                "{} cannot be listed: {}",
                kind.crd,
                refusal(&error)
            )),
            kind,
        };
    }
    objects.reach.refusal = Some(refusal(&error));
    objects.reach.not_tried = not_tried;
    let resource = &resource;
    let params = &params;
    let answers: Vec<(String, Result<ObjectList<DynamicObject>, kube::Error>)> =
        stream::iter(namespaces.iter().cloned())
            .map(|ns| async move {
                let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, resource);
                let answer = api.list(params).await;
                (ns, answer)
            })
            .buffered(IN_FLIGHT)
            .collect()
            .await;
    for (ns, answer) in answers {
        match answer {
            Ok(list) => {
                objects.reach.namespaces.push(ns);
                take(&mut objects, list);
            }
            Err(_) => objects.reach.not_readable.push(ns),
        }
    }
    KindRead {
        kind,
        read: Ok(objects),
    }
}

/// Adds one page of a list to `objects`: each resource's metadata and status, and how many
/// more the API server said it holds.
fn take(objects: &mut Objects, list: ObjectList<DynamicObject>) {
    if list
        .metadata
        .continue_
        .as_deref()
        .is_some_and(|c| !c.is_empty())
    {
        match list.metadata.remaining_item_count {
            Some(n) if n > 0 => objects.more += n as u64,
            _ => objects.more_uncounted = true,
        }
    }
    objects.items.extend(list.items.into_iter().map(|mut o| {
        o.metadata.managed_fields = None;
        Object {
            status: o.data.get_mut("status").map(serde_json::Value::take),
            metadata: o.metadata,
        }
    }));
}
