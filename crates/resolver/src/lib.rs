//! Upgrade graphs and dependency resolution over the catalog model.
