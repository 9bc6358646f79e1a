//! Scenario tests of the Blueprint controller's I/O shell against a mocked API server: which
//! requests a reconcile makes, in which order, with which bodies, and what it does when one
//! of them fails. The planner's decisions are tested on their own; these test that the shell
//! carries them out in the order that keeps a controller killed between any two writes safe.

mod failures;
mod fresh_install;
mod manual_approval;
mod refused;
mod settled;
mod support;
