//! The cluster's ImageMirrorSets as one set of checked rules, kept current by a watch and
//! handed to whoever pulls or installs (the catalog store).
//!
//! The API server refuses malformed rules when they are written; a rule that still fails
//! windlass's checks (written before the CRD checked it) is left out, logged, and reported
//! once as a Warning Event on its set, so one bad rule never disables the others.

use std::collections::BTreeSet;
use std::time::Duration;

use futures::StreamExt;
use kube::{
    Api, Client, Resource, ResourceExt,
    runtime::{WatchStreamExt, reflector, watcher},
};
use tracing::{info, warn};
use windlass_api::{
    ImageMirrorSet,
    mirror::mirror_rules,
    names::{controllers, reasons},
};
use windlass_mirror::MirrorRules;

use crate::{Events, Notice};

/// How long the manager waits for the first list of ImageMirrorSets before its controllers
/// start. Installs decide their images' mirrors once, so they should not start blind.
pub const FIRST_LIST_PATIENCE: Duration = Duration::from_secs(30);

/// Watches every ImageMirrorSet and calls `publish` with the rules whenever they change (and
/// once after the first list). Resolves when the watch ends (it never does by itself).
pub async fn watch(
    client: Client,
    publish: impl Fn(MirrorRules) + Send + Sync + 'static,
    first_list: tokio::sync::oneshot::Sender<()>,
) {
    let api = Api::<ImageMirrorSet>::all(client.clone());
    let events = Events::new(client, controllers::MIRRORS);
    let (store, writer) = reflector::store();
    let mut stream = reflector(writer, watcher(api, watcher::Config::default()))
        .default_backoff()
        .boxed();
    let mut current: Option<MirrorRules> = None;
    let mut reported: BTreeSet<String> = BTreeSet::new();
    let mut first_list = Some(first_list);
    while let Some(event) = stream.next().await {
        match event {
            // The store is complete again only once a (re)list is done.
            Ok(watcher::Event::Init | watcher::Event::InitApply(_)) => continue,
            Ok(_) => {}
            Err(error) => {
                warn!(%error, "watching ImageMirrorSets");
                continue;
            }
        }
        let mut sets: Vec<std::sync::Arc<ImageMirrorSet>> = store.state();
        sets.sort_by_key(|s| s.name_any());
        let (rules, problems) = mirror_rules(sets.iter().map(|s| s.as_ref()));
        for problem in &problems {
            let message = problem.to_string();
            if reported.insert(message.clone()) {
                warn!(%message, "mirror rule left out");
                if let Some(set) = sets.iter().find(|s| s.name_any() == problem.set) {
                    let notice = Notice::warning(
                        reasons::mirror::INVALID_RULE,
                        format!("{message}; the rule is left out, the others apply"),
                    );
                    events.publish(&set.object_ref(&()), &notice).await;
                }
            }
        }
        // Problems fixed since are reported again if they come back.
        reported.retain(|r| problems.iter().any(|p| p.to_string() == *r));
        if current.as_ref() != Some(&rules) {
            info!(sets = sets.len(), "image mirror rules changed");
            current = Some(rules.clone());
            publish(rules);
        }
        // Only once the rules are published: whoever waits for them starts with them.
        if let Some(signal) = first_list.take() {
            let _ = signal.send(());
        }
    }
}
