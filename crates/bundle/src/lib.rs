//! OLM bundle formats: everything windlass reads from or writes for a single bundle.

pub mod crd;
pub mod legacy_apis;
