//! Helpers shared by several e2e modules; the ones every test uses live in `windlass-testkit`.

pub mod adoption;
pub mod api_server;
pub mod api_verdict;
pub mod corpus_cases;
pub mod crd_variants;
pub mod escapes;
pub mod helm;
pub mod hub;
pub mod hub_rbac;
pub mod isolated;
pub mod olm_v0;
