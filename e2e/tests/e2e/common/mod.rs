//! Helpers shared by several e2e modules; the ones every test uses live in `windlass-testkit`.

pub mod api_server;
pub mod helm;
