//! The real OperatorHub corpus: every non-head entry of every valid channel has an `olm` upgrade
//! path that ends at the head, each hop a real edge; and every package resolves or says why not.
//!
//! Without the corpus (`../shared/corpus` beside the checkout, or `WINDLASS_CORPUS`) they skip
//! and say so; see `windlass_corpus`.

use windlass_catalog::{Catalog, load_catalog};
use windlass_resolver::{
    Policy, Request, Resolver, Subscription, UpgradeGraph,
    policy::{HopKind, Start, upgrade_path},
};

fn load() -> Option<Catalog> {
    let root = windlass_corpus::operatorhub_or_skip()?;
    Some(load_catalog(&root).unwrap_or_else(|e| panic!("loading {}: {e}", root.display())))
}

#[test]
fn every_entry_of_every_valid_channel_reaches_the_head() {
    let Some(catalog) = load() else { return };
    let (mut valid, mut invalid, mut checked) = (0, 0, 0);
    let mut failures = Vec::new();
    for package in catalog.packages.values() {
        for channel in package.channels.values() {
            let graph = UpgradeGraph::build(package, channel);
            if !graph.is_valid() {
                invalid += 1;
                continue;
            }
            valid += 1;
            let head = graph
                .head()
                .expect("a valid channel has a head")
                .name
                .clone();
            for entry in &channel.entries {
                if entry.name == head {
                    continue;
                }
                checked += 1;
                let Some(version) = package
                    .bundles
                    .get(entry.name.as_str())
                    .map(|b| b.version.clone())
                else {
                    failures.push(format!(
                        "{}/{}: {} has no bundle",
                        package.name, channel.name, entry.name
                    ));
                    continue;
                };
                let start = Start {
                    name: Some(entry.name.to_string()),
                    version,
                };
                match upgrade_path(&graph, channel, &start, None, Policy::Olm) {
                    Ok(path) => {
                        let end = path.hops.last().map(|h| h.to.as_str());
                        if end != Some(head.as_str()) {
                            failures.push(format!(
                                "{}/{}: path from {} ends at {end:?}, not {head}",
                                package.name, channel.name, entry.name
                            ));
                        }
                        for hop in &path.hops {
                            let real = matches!(hop.via, HopKind::Edge(kind)
                                if graph.successors(&hop.from).iter().any(|(n, k)| n.name == hop.to && *k == kind));
                            if !real {
                                failures.push(format!(
                                    "{}/{}: hop {} -> {} is not an edge",
                                    package.name, channel.name, hop.from, hop.to
                                ));
                            }
                        }
                    }
                    Err(e) => failures.push(format!("{}/{}: {e}", package.name, channel.name)),
                }
            }
        }
    }
    eprintln!("{valid} valid channels, {invalid} invalid, {checked} non-head entries checked");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The corpus has about 490 bundles; a loader or graph regression that empties the channels
    // must not pass as "nothing failed".
    assert!(
        valid > 80 && checked > 250,
        "only {valid} valid channels and {checked} entries checked"
    );
}

#[test]
fn every_package_resolves_or_explains_why_not() {
    let Some(catalog) = load() else { return };
    let resolver = Resolver::new(&catalog);
    let (mut resolved, mut explained) = (0, Vec::new());
    for package in catalog.packages.values() {
        if package.default_channel().is_none() {
            continue;
        }
        let request = Request {
            installed: vec![],
            subscriptions: vec![Subscription {
                package: package.name.clone(),
                channel: None,
                range: None,
                policy: Policy::Olm,
            }],
        };
        match resolver.resolve(&request) {
            Ok(plan) => {
                assert_eq!(
                    plan.steps.last().map(|s| s.package.as_str()),
                    Some(package.name.as_str())
                );
                resolved += 1;
            }
            Err(why) => {
                assert!(why.to_string().lines().count() >= 2, "{why}");
                explained.push(why.to_string());
            }
        }
    }
    eprintln!(
        "{resolved} packages resolved; {} explained:\n{}",
        explained.len(),
        explained.join("\n\n")
    );
    assert!(resolved > 70, "only {resolved} packages resolved");
    // node-healthcheck-operator needs the PoisonPillRemediation API, owned by poison-pill.
    let plan = resolver
        .resolve(&Request {
            installed: vec![],
            subscriptions: vec![Subscription {
                package: "node-healthcheck-operator".into(),
                channel: None,
                range: None,
                policy: Policy::Olm,
            }],
        })
        .expect("node-healthcheck-operator resolves");
    let packages: Vec<&str> = plan.steps.iter().map(|s| s.package.as_str()).collect();
    assert_eq!(
        packages,
        vec!["poison-pill-operator", "node-healthcheck-operator"]
    );
}
