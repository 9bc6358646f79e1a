//! What one manager reconciles: `--controllers` (which controllers run) and
//! `--watch-namespace` (which namespace's objects they watch and reconcile).
//!
//! Uses: a manager confined to one team's namespace; the ClusterServiceVersion controller alone
//! (`--controllers clusterserviceversion`) where CSVs are applied by other means; controllers
//! split over processes; a second manager in a test namespace beside the cluster-wide one.
//! The Subscription, Blueprint and Package controllers read the catalogs this process's Catalog
//! controller serves, so leaving `catalog` out leaves them without catalogs.
//!
//! The namespace reaches each controller as an explicit `windlass_kit::Scope`: every watch is
//! built through it, while reads that must see every namespace (a CRD that a CSV elsewhere
//! still owns) stay cluster-wide on purpose. Cluster-scoped kinds (Catalogs, CRDs) are never
//! narrowed.

use windlass_kit::Scope;

/// A controller `windlass manager` can run; the names are those of the metrics' `controller`
/// label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Controller {
    Catalog,
    Subscription,
    Blueprint,
    #[value(name = "clusterserviceversion")]
    ClusterServiceVersion,
    #[value(name = "installscope")]
    InstallScope,
    #[value(name = "clusterversion")]
    ClusterVersion,
    /// The Package views of what the catalogs serve (runs beside `catalog`).
    #[value(name = "package")]
    Package,
    /// A hub's Fleets and Rollouts (cluster-wide only).
    Fleet,
}

impl Controller {
    pub const ALL: [Controller; 8] = [
        Controller::Catalog,
        Controller::Subscription,
        Controller::Blueprint,
        Controller::ClusterServiceVersion,
        Controller::InstallScope,
        Controller::ClusterVersion,
        Controller::Package,
        Controller::Fleet,
    ];
}

/// Runs `controller` when `enabled`, else finishes at once.
pub async fn only_if(enabled: bool, controller: impl std::future::Future<Output = ()>) {
    if enabled {
        controller.await
    }
}

/// The scope the controllers reconcile: `--watch-namespace`, or every namespace.
pub fn scope(watch_namespace: Option<&str>) -> Scope {
    match watch_namespace {
        Some(namespace) => Scope::namespace(namespace),
        None => Scope::cluster(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                "clusterserviceversion",
                "installscope",
                "clusterversion",
                "package",
                "fleet"
            ]
        );
    }
}
