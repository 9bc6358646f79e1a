//! One module per command family; each exposes its clap arguments and a `run`.

pub mod bundle;
pub mod bundle_manifests;
pub mod bundle_ops;
pub mod bundle_registry;
pub mod catalog;
pub mod catalog_delist;
pub mod catalog_graph;
pub mod catalog_list;
pub mod catalog_problems;
pub mod catalog_render;
pub mod fleet;
pub mod hub;
pub mod lifecycle;
pub mod package;
pub mod package_build;
pub mod package_push;
pub mod plan;
pub mod release;
pub mod release_components;
pub mod release_graph;
pub mod release_registry;
pub mod status;
pub mod trust;
pub mod upgrade;
pub mod upgrade_view;
