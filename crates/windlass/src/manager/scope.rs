//! What one manager reconciles: `--controllers` (which controllers run) and
//! `--watch-namespace` (which namespace's objects they watch and reconcile).
//!
//! Uses: a manager confined to one team's namespace; the ClusterServiceVersion controller alone
//! (`--controllers clusterserviceversion`) where CSVs are applied by other means; controllers
//! split over processes; a second manager in a test namespace beside the cluster-wide one.
//! The Subscription and Blueprint controllers read the catalogs this process's Catalog
//! controller serves, so leaving `catalog` out leaves them without catalogs.
//!
//! The controllers watch their kinds cluster-wide (`Api::all`). Rather than thread a namespace
//! through each of them, the manager hands them a client that narrows their *watches*: a watch
//! of a namespaced kind's cluster-wide collection, and the paginated list a watcher starts
//! with, go to that namespace's collection instead (`/apis/windlass.dev/v1alpha1/subscriptions?watch=true`
//! becomes `.../namespaces/<ns>/subscriptions?watch=true`). So each controller only ever sees,
//! and reconciles, objects of that namespace. One-shot reads stay cluster-wide on purpose: the
//! controllers use them for decisions that must see every namespace (the Blueprint controller
//! keeps a CRD that a CSV elsewhere owns), and a namespace-scoped manager must not get those
//! wrong. Every watcher in windlass reads the way kube's watcher does (a paginated list, then
//! watches); a test below pins that down. Cluster-scoped kinds (Catalogs, CRDs) are not narrowed.

use std::{collections::HashSet, sync::Arc};

use hyper::{Request, Uri};
use kube::{
    Client, Resource,
    client::Body,
    discovery::{Discovery, Scope},
};
use windlass_api::{Blueprint, ClusterServiceVersion, Subscription};

/// A controller `windlass manager` can run; the names are those of the metrics' `controller`
/// label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Controller {
    Catalog,
    Subscription,
    Blueprint,
    #[value(name = "clusterserviceversion")]
    ClusterServiceVersion,
}

impl Controller {
    pub const ALL: [Controller; 4] = [
        Controller::Catalog,
        Controller::Subscription,
        Controller::Blueprint,
        Controller::ClusterServiceVersion,
    ];
}

/// Runs `controller` when `enabled`, else finishes at once.
pub async fn only_if(enabled: bool, controller: impl std::future::Future<Output = ()>) {
    if enabled {
        controller.await
    }
}

/// Namespaced kinds as `(group, plural)`, the core group being `""`.
type Kinds = HashSet<(String, String)>;

/// The windlass kinds, namespaced even before their CRDs are installed.
fn windlass_kinds() -> Kinds {
    [
        (Subscription::group(&()), Subscription::plural(&())),
        (Blueprint::group(&()), Blueprint::plural(&())),
        (
            ClusterServiceVersion::group(&()),
            ClusterServiceVersion::plural(&()),
        ),
    ]
    .into_iter()
    .map(|(g, p)| (g.into(), p.into()))
    .collect()
}

/// Whether a request reads the way a watcher does: a watch, or a paginated list.
fn is_watcher_read(uri: &Uri) -> bool {
    uri.query().unwrap_or_default().split('&').any(|pair| {
        matches!(
            pair.split_once('='),
            Some(("watch", "true" | "1")) | Some(("limit", _))
        )
    })
}

/// The namespaced form of a cluster-wide collection path of one of `kinds`
/// (`/apis/<group>/<version>/<plural>` or `/api/v1/<plural>`); `None` for any other path.
fn narrow_path(path: &str, namespace: &str, kinds: &Kinds) -> Option<String> {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (prefix, group, plural) = match parts[..] {
        ["apis", group, version, plural] => (format!("/apis/{group}/{version}"), group, plural),
        ["api", version, plural] => (format!("/api/{version}"), "", plural),
        _ => return None,
    };
    kinds
        .contains(&(group.to_string(), plural.to_string()))
        .then(|| format!("{prefix}/namespaces/{namespace}/{plural}"))
}

fn narrow_uri(uri: &Uri, namespace: &str, kinds: &Kinds) -> Option<Uri> {
    if !is_watcher_read(uri) {
        return None;
    }
    let path = narrow_path(uri.path(), namespace, kinds)?;
    let path_and_query = match uri.query() {
        Some(query) => format!("{path}?{query}"),
        None => path,
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(path_and_query.parse().ok()?);
    Uri::from_parts(parts).ok()
}

/// A client whose watches of namespaced kinds see `namespace` only (see the module comment).
/// Which kinds are namespaced comes from the apiserver's discovery, plus the windlass kinds.
pub async fn narrowed(client: Client, namespace: &str) -> anyhow::Result<Client> {
    let discovery = match Discovery::new(client.clone()).run_aggregated().await {
        Ok(discovery) => discovery,
        Err(_) => Discovery::new(client.clone()).run().await?,
    };
    let mut kinds = windlass_kinds();
    for group in discovery.groups() {
        for version in group.versions() {
            kinds.extend(
                group
                    .versioned_resources(version)
                    .into_iter()
                    .filter(|(_, capabilities)| capabilities.scope == Scope::Namespaced)
                    .map(|(resource, _)| (resource.group, resource.plural)),
            );
        }
    }
    Ok(narrowed_to(client, namespace, kinds))
}

fn narrowed_to(client: Client, namespace: &str, kinds: Kinds) -> Client {
    let default_namespace = client.default_namespace().to_string();
    let namespace: Arc<str> = namespace.into();
    let kinds = Arc::new(kinds);
    let service = tower::service_fn(move |mut request: Request<Body>| {
        if let Some(uri) = narrow_uri(request.uri(), &namespace, &kinds) {
            *request.uri_mut() = uri;
        }
        let client = client.clone();
        async move { client.send(request).await }
    });
    Client::new(service, default_namespace)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use futures::StreamExt;
    use kube::{
        Api,
        api::ListParams,
        runtime::{WatchStreamExt, watcher},
    };

    use super::*;

    fn kinds() -> Kinds {
        let mut kinds = windlass_kinds();
        kinds.insert(("apps".into(), "deployments".into()));
        kinds.insert(("".into(), "secrets".into()));
        kinds
    }

    fn narrow(uri: &str) -> Option<String> {
        narrow_uri(&uri.parse().unwrap(), "team-a", &kinds()).map(|u| u.to_string())
    }

    #[test]
    fn watches_and_paginated_lists_of_namespaced_kinds_are_narrowed() {
        assert_eq!(
            narrow(
                "/apis/windlass.dev/v1alpha1/clusterserviceversions?watch=true&resourceVersion=7"
            )
            .unwrap(),
            "/apis/windlass.dev/v1alpha1/namespaces/team-a/clusterserviceversions?watch=true&resourceVersion=7"
        );
        assert_eq!(
            narrow("/apis/windlass.dev/v1alpha1/subscriptions?&limit=500").unwrap(),
            "/apis/windlass.dev/v1alpha1/namespaces/team-a/subscriptions?&limit=500"
        );
        assert_eq!(
            narrow("/apis/apps/v1/deployments?labelSelector=a%3Db&watch=1").unwrap(),
            "/apis/apps/v1/namespaces/team-a/deployments?labelSelector=a%3Db&watch=1"
        );
        assert_eq!(
            narrow("/api/v1/secrets?watch=true").unwrap(),
            "/api/v1/namespaces/team-a/secrets?watch=true"
        );
    }

    #[test]
    fn one_shot_reads_and_other_paths_pass_untouched() {
        for uri in [
            // One-shot lists: decisions that must see every namespace.
            "/apis/windlass.dev/v1alpha1/clusterserviceversions",
            "/apis/windlass.dev/v1alpha1/clusterserviceversions?&labelSelector=a%3Db",
            "/apis/windlass.dev/v1alpha1/blueprints?watchful=true",
            // Cluster-scoped kinds.
            "/apis/windlass.dev/v1alpha1/catalogs?watch=true",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?limit=500",
            // Already namespaced, or one object.
            "/apis/windlass.dev/v1alpha1/namespaces/other/subscriptions?watch=true",
            "/apis/windlass.dev/v1alpha1/namespaces/other/subscriptions/db?watch=true",
            // Kinds that are not namespaced here, and discovery.
            "/apis/operators.coreos.com/v1alpha1/clusterserviceversions?watch=true",
            "/apis/windlass.dev/v1alpha1?watch=true",
        ] {
            assert_eq!(narrow(uri), None, "{uri}");
        }
    }

    /// A client over a fake apiserver that records each request and answers with an empty
    /// list (a watch then ends at once, which is fine for recording what was asked).
    fn recording_client() -> (Client, Arc<Mutex<Vec<String>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let service = tower::service_fn(move |request: Request<Body>| {
            record.lock().unwrap().push(request.uri().to_string());
            let list = br#"{"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":"1"},"items":[]}"#;
            async move {
                Ok::<_, std::convert::Infallible>(hyper::Response::new(Body::from(list.to_vec())))
            }
        });
        (Client::new(service, "default"), seen)
    }

    #[tokio::test]
    async fn kube_watchers_are_narrowed_and_one_shot_lists_are_not() {
        let (inner, seen) = recording_client();
        let client = narrowed_to(inner, "team-a", kinds());
        let csvs = Api::<ClusterServiceVersion>::all(client.clone());

        // What every windlass controller does: a watcher with the default configuration.
        let mut events = watcher(csvs.clone(), watcher::Config::default())
            .default_backoff()
            .boxed();
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        while seen.lock().unwrap().len() < 2 && tokio::time::Instant::now() < deadline {
            let _ =
                tokio::time::timeout(std::time::Duration::from_millis(200), events.next()).await;
        }
        drop(events);
        let watched = std::mem::take(&mut *seen.lock().unwrap());
        assert!(watched.len() >= 2, "{watched:?}");
        for uri in &watched {
            assert!(
                uri.starts_with(
                    "/apis/windlass.dev/v1alpha1/namespaces/team-a/clusterserviceversions?"
                ),
                "a watcher read escaped the namespace: {watched:?}"
            );
        }
        assert!(
            watched.iter().any(|u| u.contains("watch=true")),
            "{watched:?}"
        );

        // What the controllers' cluster-wide checks do.
        csvs.list(&ListParams::default()).await.unwrap();
        csvs.list(&ListParams::default().labels("a=b"))
            .await
            .unwrap();
        let listed = std::mem::take(&mut *seen.lock().unwrap());
        assert_eq!(listed.len(), 2);
        for uri in &listed {
            assert!(
                uri.starts_with("/apis/windlass.dev/v1alpha1/clusterserviceversions"),
                "a one-shot list was narrowed: {listed:?}"
            );
        }
    }

    #[test]
    fn the_controller_names_are_the_metric_labels() {
        use clap::ValueEnum;
        let names: Vec<String> = Controller::ALL
            .iter()
            .map(|c| c.to_possible_value().unwrap().get_name().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "catalog",
                "subscription",
                "blueprint",
                "clusterserviceversion"
            ]
        );
    }
}
