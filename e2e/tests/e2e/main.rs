//! The end-to-end tests: one test binary, one module per area, against the local control plane
//! (`make e2e` starts it and the manager). One binary rather than one per area because each
//! links kube and the controllers, and linking is most of an incremental build.
//!
//! Each test works in its own namespace. `make e2e` (`e2e/scripts/e2e-tests.sh`) runs the modules
//! one after another and each module's tests in parallel, as when they were separate binaries:
//! `manager_kills` restarts the shared manager, and some tests count polls or writes in a time
//! window. Run one area with `make e2e E2E_MODULES=lifecycle_rollback`, or with the cluster and
//! manager up, `cargo test -p windlass-e2e --test e2e -- lifecycle_rollback::`.

mod common;

mod admission_policies;
mod air_gapped;
mod blueprint_lifecycle;
mod catalog_listing;
mod catalog_removal;
mod catalog_sources;
mod cluster_version_drift;
mod cluster_version_graph;
mod cluster_version_kills;
mod cluster_version_operators;
mod cluster_version_preconditions;
mod cluster_version_readiness;
mod cluster_version_risks;
mod cluster_version_rollbacks;
mod cluster_versions;
mod control_plane;
mod corpus_installs;
mod crd_safety_differential;
mod crd_upgrade_classes;
mod csv_controller;
mod drift_repairs;
mod examples;
mod fleet;
mod helm_adoption;
mod helm_chart;
mod hub_api;
mod hub_browser;
mod install_identity;
mod install_scopes;
mod kubectl_plugin;
mod leader_election;
mod legacy_crds;
mod lifecycle_catalogs;
mod lifecycle_install;
mod lifecycle_rollback;
mod lifecycle_uninstall;
mod manager_image;
mod manager_kills;
mod oci_bundles;
mod olm_adoption;
mod olm_constraints;
mod openshift_api;
mod operand_rollbacks;
mod package_views;
mod plan_preview;
mod private_registry;
mod registry_and_helm;
mod release_components;
mod release_payloads;
mod signatures;
mod signed_catalogs;
mod subscription_dependencies;
mod subscription_status;
mod tenancy;
mod tenant_crds;
mod tenant_csvs;
mod tenant_escapes;
mod trust_required;
mod upgrade_readiness;
