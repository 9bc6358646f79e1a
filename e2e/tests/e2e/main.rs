//! The end-to-end tests: one test binary, one module per area, against the local control plane
//! (`make e2e` starts it and the manager). One binary rather than one per area because each
//! links kube and the controllers, and linking is most of an incremental build.
//!
//! Tests run in parallel (`--test-threads=4` under `make e2e`), each in its own namespace; they
//! tolerate one another, including the short manager outages `manager_kills` causes. Run one area
//! with `cargo test -p windlass-e2e -- lifecycle_rollback::`.

mod common;

mod blueprint_lifecycle;
mod catalog_sources;
mod control_plane;
mod corpus_installs;
mod csv_controller;
mod examples;
mod helm_chart;
mod leader_election;
mod legacy_crds;
mod lifecycle_catalogs;
mod lifecycle_install;
mod lifecycle_rollback;
mod lifecycle_uninstall;
mod manager_image;
mod manager_kills;
mod oci_bundles;
mod registry_and_helm;
mod subscription_dependencies;
mod subscription_status;
