//! Fleets, without a cluster: which member clusters each wave of a Rollout takes
//! ([`waves`]), what a member's own objects say about where it stands ([`observe`]), and the
//! next step of a rollout from its spec, its last status and what every member showed
//! ([`decide`]). The fleet controller gathers and acts; every judgement is made here.

pub mod decide;
pub mod observe;
pub mod waves;

pub use decide::{Action, Input, Step, decide};
pub use observe::{Applied, Health, Seen, View};
pub use waves::{Assignment, Member, SpecError, assign, validate};
